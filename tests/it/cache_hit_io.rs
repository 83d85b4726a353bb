//! The cache hit does the I/O it must and nothing more: under `strace`, a `get-token` answered
//! from the cache opens only the dynamic loader's files and its one cache entry, opens no
//! socket and makes no keyring call — also in `auto` storage with a session bus in reach. This
//! is what keeps the hit as cheap as reading the file (ARCHITECTURE.md's invariants); a change
//! that adds a lock file, a discovery read, a keyring probe or a network call fails here.
//!
//! The one file call besides the loader's and the entry's open is `utimensat(fd, NULL, …)`
//! (`futimens`) on the entry's already-open descriptor: the 401-recovery hand-out stamp
//! (`acquire/hand_out.rs`), which names no path. It is what lets a client's re-run after a 401 be
//! told from an ordinary run without a second file; the test checks it stays on the descriptor.
//!
//! Besides it, the hit `stat`s the two directories its entry was read through, the cache dir and
//! its `tokens/`: each must be this user's (another user's is refused, as ssh refuses a `~/.ssh`
//! others can write; `private_file::check_private_dirs`), which no check on the entry's own
//! descriptor can tell. Two `statx` calls, nothing opened; the test holds them to exactly that.

use crate::support::*;
use std::path::Path;

/// The system calls of one run (`strace -f`), as text.
fn traced(env: &TestEnv, args: &[String], bus: &Path) -> String {
    let log = env.dir.path().join("strace.log");
    let mut command = std::process::Command::new("strace");
    command
        .args(["-f", "-qq", "-o"])
        .arg(&log)
        .args(["-e", "trace=%file,%network,%ipc,keyctl,add_key,request_key"])
        .arg(kubecred_bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}", bus.display()),
        )
        .env("KUBERNETES_EXEC_INFO", exec_info(V1, false));
    let run = command.run().success();
    run.credential();
    std::fs::read_to_string(log).unwrap()
}

/// The path a traced `open`/`openat`/`stat`-family call names (`""` for an `fstat`-like call on
/// a descriptor).
fn path_of(line: &str) -> Option<&str> {
    let start = line.find('"')? + 1;
    let end = start + line[start..].find('"')?;
    Some(&line[start..end])
}

#[test]
fn a_cache_hit_opens_its_entry_and_nothing_else() {
    if !have(Need::Strace) {
        return;
    }
    let env = TestEnv::new();
    let mut args = {
        let bed = Testbed::start();
        let args = env.cc_args(&bed);
        env.kubecred_owned(&args).run().success();
        args
        // The provider stops here: anything but a cache hit would now fail.
    };
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    let entry = cache_token_files(&env.cache_dir()).remove(0);
    // A bus the hit could reach if it wanted to (nothing listens: a connect would show).
    let bus = env.dir.path().join("bus");

    for storage in ["--cache-storage=auto", "--cache-storage=disk"] {
        let mut run_args = args.clone();
        run_args.push(storage.into());
        let trace = traced(&env, &run_args, &bus);
        assert_only_the_entry_was_touched(&trace, &entry, storage);
    }
}

/// A shared login's hit (`--shared-login`) is as cheap as any other: it reads the cluster's
/// derived entry alone, never the login's (which holds the refresh token), and computes the
/// key it is named by from the settings, with no other file.
#[test]
fn a_shared_login_s_hit_opens_the_cluster_s_derived_entry_alone() {
    if !have(Need::Strace) || !have(Need::Browser) {
        return;
    }
    let env = TestEnv::new();
    let cluster = |resource: &str, bed: &Testbed| {
        let mut args = authcode_args(bed);
        args.extend([
            "--shared-login".to_string(),
            "--login-resource=https://a.example,https://b.example".into(),
            format!("--resource={resource}"),
            format!("--cache-dir={}", env.cache_dir().display()),
        ]);
        args
    };
    let b = {
        let bed = Testbed::start();
        for resource in ["https://a.example", "https://b.example"] {
            env.kubecred_owned(&cluster(resource, &bed)).run().success();
        }
        cluster("https://b.example", &bed)
        // The provider stops here: anything but a cache hit would now fail.
    };
    // b's derived entry: the one whose record names its login and b's audience.
    let entries = cache_token_files(&env.cache_dir());
    assert_eq!(entries.len(), 3, "the login's, a's and b's: {entries:?}");
    let about = |path: &Path| -> serde_json::Value {
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(path).unwrap()).unwrap()["about"]
            .clone()
    };
    let entry = entries
        .iter()
        .find(|path| {
            let about = about(path);
            about["derived_from"].is_string() && about["audience"] == "https://b.example"
        })
        .expect("b's derived entry")
        .clone();
    let bus = env.dir.path().join("bus");
    for storage in ["--cache-storage=auto", "--cache-storage=disk"] {
        let trace = traced(&env, &with_flag(&b, storage), &bus);
        assert_only_the_entry_was_touched(&trace, &entry, storage);
    }
}

/// The trace of one hit (`storage` names it in failures) opened `entry` and nothing else but the
/// loader's files: no socket, no keyring call, the hand-out stamp on the open descriptor, and
/// the entry's two directories checked by path.
#[track_caller]
fn assert_only_the_entry_was_touched(trace: &str, entry: &Path, storage: &str) {
    let mut opened = Vec::new();
    let mut stamps = 0;
    let mut checked_dirs = Vec::new();
    // Start-up that is not kubecred's: the dynamic loader of a glibc build, and std's
    // main-thread stack guard there (glibc's pthread_getattr_np reads /proc/self/maps). The
    // static musl build users download opens neither.
    let loader = |path: &str| {
        path.starts_with("/etc/ld.so.")
            || path == "/proc/self/maps"
            || ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"]
                .iter()
                .any(|dir| path.starts_with(dir))
    };
    for line in trace.lines() {
        let call = line
            .split_whitespace()
            .nth(1)
            .and_then(|call| call.split('(').next())
            .unwrap_or("");
        assert!(
            !matches!(
                call,
                "socket" | "connect" | "keyctl" | "add_key" | "request_key" | "sendto"
            ),
            "{storage}: the cache hit made a {call} call:\n{trace}"
        );
        if matches!(call, "statx" | "newfstatat" | "stat")
            && let Some(path) = path_of(line).filter(|path| !path.is_empty() && !loader(path))
        {
            checked_dirs.push(path.to_string());
            continue;
        }
        if call == "utimensat" {
            assert!(
                line.contains("utimensat(3, NULL") || line.contains(", NULL,"),
                "{storage}: the hand-out stamp must use the open descriptor, not a path: {line}"
            );
            stamps += 1;
            continue;
        }
        if let Some(path) = path_of(line) {
            opened.push(path.to_string());
        }
    }
    let others: Vec<&String> = opened
        .iter()
        .filter(|path| !path.is_empty() && !loader(path))
        .filter(|path| Path::new(path.as_str()) != entry)
        .filter(|path| !path.ends_with("/kubecred")) // execve of the binary itself
        .collect();
    assert!(
        others.is_empty(),
        "{storage}: the cache hit touched {others:?} besides its entry:\n{trace}"
    );
    assert!(
        opened.iter().any(|path| Path::new(path) == entry),
        "{storage}: the entry was not read:\n{trace}"
    );
    // The directories of the entry, each checked once, top down, by path (no open).
    let tokens = entry.parent().unwrap();
    let expected_dirs = [tokens.parent().unwrap(), tokens].map(|dir| dir.display().to_string());
    assert_eq!(
        checked_dirs, expected_dirs,
        "{storage}: the hit checks its cache dir and tokens/, nothing else by path:\n{trace}"
    );
    // A client's run (KUBERNETES_EXEC_INFO set, strace the parent) is stamped, once.
    assert_eq!(stamps, 1, "{storage}: one hand-out stamp:\n{trace}");
}
