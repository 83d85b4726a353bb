//! Local faults: what another user, a crash, a broken pipe or a damaged cache can do to a run,
//! and that nothing is lost or leaked when they happen. Each test damages one thing, runs the
//! real binary against the test bed, and checks the credential, the exit code, the one stderr
//! line and what is left on disk.

use crate::support::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Logs in with client credentials once; returns the args and the entry's path.
fn cached_cc(env: &TestEnv, bed: &Testbed) -> (Vec<String>, PathBuf) {
    let args = env.cc_args(bed);
    env.kubecred_owned(&args).run().success();
    let entry = cache_token_files(&env.cache_dir()).remove(0);
    (args, entry)
}

fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o777
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes `path` belong to `nobody` (65534); false (after one line) where that needs root.
fn give_to_nobody(path: &Path) -> bool {
    if !is_root() {
        skipped("making a file of another user needs root (CI runs as root)");
        return false;
    }
    std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
    true
}

#[test]
fn a_corrupt_or_truncated_entry_is_a_miss_and_is_replaced() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let whole = fs::read(&entry).unwrap();
    for (damage, bytes) in [
        ("truncated", whole[..whole.len() / 2].to_vec()),
        ("corrupt", b"\x00\xffnot json at all".to_vec()),
        ("empty", Vec::new()),
    ] {
        fs::write(&entry, &bytes).unwrap();
        let before = bed.token_requests("client_credentials");
        env.kubecred_owned(&args).run().success().credential();
        assert_eq!(
            bed.token_requests("client_credentials"),
            before + 1,
            "{damage}: a new token"
        );
        let replaced: serde_json::Value = serde_json::from_slice(&fs::read(&entry).unwrap())
            .unwrap_or_else(|err| panic!("{damage}: the entry was not replaced: {err}"));
        assert_eq!(replaced["v"], 2, "{damage}");
    }
}

#[test]
fn a_fifo_at_the_entry_does_not_hang_the_hit_and_is_replaced() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    fs::remove_file(&entry).unwrap();
    let status = Command::new("mkfifo").arg(&entry).status().unwrap();
    assert!(status.success());
    // Without O_NONBLOCK the open waits for a writer that never comes.
    run_bounded(&mut env.kubecred_owned(&args), Duration::from_secs(30))
        .success()
        .credential();
    assert!(fs::symlink_metadata(&entry).unwrap().is_file());
    // And the new entry serves the next run.
    let before = bed.total_token_requests();
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.total_token_requests(), before);
}

#[test]
fn a_symlinked_entry_is_not_followed_nor_written_through() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    // A valid entry elsewhere, with a token kubecred did not obtain: served through a link, it
    // would be a planted credential.
    let planted = env.dir.path().join("planted.json");
    let text = fs::read_to_string(&entry).unwrap();
    let token = serde_json::from_str::<serde_json::Value>(&text).unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let planted_text = text.replace(&token, "planted-token");
    fs::write(&planted, &planted_text).unwrap();
    fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink(&planted, &entry).unwrap();

    let run = env.kubecred_owned(&args).run().success();
    assert_ne!(run.token(), "planted-token");
    assert_eq!(bed.token_requests("client_credentials"), 2);
    assert_eq!(fs::read_to_string(&planted).unwrap(), planted_text);
    assert!(
        fs::symlink_metadata(&entry).unwrap().is_file(),
        "the link was replaced"
    );
}

#[test]
fn loose_permissions_are_tightened_and_the_entry_kept() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let root = env.cache_dir();
    let tokens = entry.parent().unwrap().to_path_buf();
    for (path, mode) in [(&root, 0o777), (&tokens, 0o777), (&entry, 0o666)] {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    // The hit: the entry is ours, so it is used, and tightened on the open descriptor; so are
    // the directories it was read through.
    let first = env.kubecred_owned(&args).run().success().token();
    assert_eq!(bed.token_requests("client_credentials"), 1, "a cache hit");
    assert_eq!(mode_of(&entry), 0o600);
    assert_eq!(mode_of(&root), 0o700);
    assert_eq!(mode_of(&tokens), 0o700);
    // A write tightens every directory from the cache root down.
    for path in [&root, &tokens] {
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let second = env
        .kubecred_owned(&with_flag(&args, "--force-refresh"))
        .run()
        .success()
        .token();
    assert_ne!(first, "");
    assert_ne!(second, "");
    assert_eq!(mode_of(&root), 0o700);
    assert_eq!(mode_of(&tokens), 0o700);
    assert_eq!(mode_of(&root.join("locks")), 0o700);
}

#[test]
fn another_users_entry_or_cache_dir_is_refused_and_left_alone() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    if !give_to_nobody(&entry) {
        return;
    }
    let content = fs::read(&entry).unwrap();
    let run = env.kubecred_owned(&args).run().failure(5);
    assert_eq!(
        run.stderr(),
        format!(
            "kubecred: error: refusing the token cache file {}: it belongs to uid 65534, not to this user (uid 0); someone else may have planted it — delete it, and use a --cache-dir only you can write to\n",
            entry.display()
        )
    );
    assert_eq!(fs::read(&entry).unwrap(), content, "left as it was");
    assert_eq!(
        bed.total_token_requests(),
        1,
        "no token from a refused cache"
    );

    // A cache root of another user: refused before anything talks to the provider.
    std::os::unix::fs::lchown(&entry, Some(0), Some(0)).unwrap();
    give_to_nobody(&env.cache_dir());
    env.kubecred_owned(&with_flag(&args, "--force-refresh"))
        .run()
        .failure(5)
        .stderr_contains("refusing the cache directory");
    assert_eq!(bed.total_token_requests(), 1);
}

#[test]
fn another_users_directory_below_the_cache_dir_is_refused_on_a_hit_and_before_a_login() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let tokens = entry.parent().unwrap();
    if !give_to_nobody(tokens) {
        return;
    }
    let refusal = format!(
        "kubecred: error: refusing the cache directory: the directory {} belongs to uid 65534, not to this user (uid 0), and kubecred keeps tokens only in directories of their own user; pass a --cache-dir of your own\n",
        tokens.display()
    );
    // The hit: the entry is ours, but whoever owns its directory could have put it there.
    let run = env.kubecred_owned(&args).run().failure(5);
    assert_eq!(run.stderr(), refusal);
    // A renewal: refused before the provider is asked, not a token handed out uncached.
    let run = env
        .kubecred_owned(&with_flag(&args, "--force-refresh"))
        .run()
        .failure(5);
    assert_eq!(run.stderr(), refusal);
    assert_eq!(bed.total_token_requests(), 1);
    // Without an entry there, the same before the first login.
    fs::remove_file(&entry).unwrap();
    let run = env.kubecred_owned(&args).run().failure(5);
    assert_eq!(run.stderr(), refusal);
    assert_eq!(bed.total_token_requests(), 1);
}

#[test]
fn a_planted_discovery_document_is_never_used() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, _) = cached_cc(&env, &bed);
    let oidc = env.cache_dir().join("oidc");
    let discovery = fs::read_dir(&oidc)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.to_string_lossy().ends_with(".jwks.json"))
        .unwrap();
    // Another user's document naming their own token endpoint (which would get the secret).
    let mut document: serde_json::Value =
        serde_json::from_slice(&fs::read(&discovery).unwrap()).unwrap();
    assert!(
        document["document"]["token_endpoint"].is_string(),
        "{document}"
    );
    document["document"]["token_endpoint"] = "http://127.0.0.1:9/steal".into();
    fs::write(&discovery, document.to_string()).unwrap();
    if !give_to_nobody(&discovery) {
        return;
    }
    let discoveries = bed.stats()["discovery"].as_u64().unwrap();
    env.kubecred_owned(&with_flag(&args, "--force-refresh"))
        .run()
        .success()
        .stderr_contains("ignoring the cached provider document")
        .never_shows(&[CC_SECRET]);
    assert_eq!(
        bed.stats()["discovery"].as_u64().unwrap(),
        discoveries + 1,
        "fetched from the provider instead"
    );
    assert_eq!(bed.token_requests("client_credentials"), 2);
}

#[test]
fn an_unusable_cache_dir_still_prints_the_token_with_one_warning() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // A cache directory under a regular file cannot be created, not even by root.
    let blocker = env.dir.path().join("a-file");
    fs::write(&blocker, b"").unwrap();
    let (mut args, secret) = env.cc_args_secret_in_env(&bed);
    args.push(format!("--cache-dir={}", blocker.join("cache").display()));
    let run = env
        .kubecred_owned(&args)
        .env("KUBECRED_CLIENT_SECRET", secret)
        .run()
        .success();
    run.credential();
    let line = run.only_kubecred_line();
    assert!(line.contains("cannot use the cache directory"), "{line}");
    assert!(line.contains("not cached"), "{line}");
}

#[test]
fn a_login_is_never_lost_to_a_cache_that_cannot_keep_it() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // The lock can be taken, the entry cannot be written: a regular file where `tokens/` goes.
    fs::create_dir_all(env.cache_dir()).unwrap();
    fs::write(env.cache_dir().join("tokens"), b"").unwrap();
    let (args, secret) = env.cc_args_secret_in_env(&bed);
    for storage in ["disk", "auto"] {
        let mut args = args.clone();
        args.push(format!("--cache-storage={storage}"));
        let before = bed.token_requests("client_credentials");
        let run = env
            .kubecred_owned(&args)
            .env("KUBECRED_CLIENT_SECRET", &secret)
            .run()
            .success();
        run.credential();
        let line = run.only_kubecred_line();
        assert!(
            line.starts_with(
                "kubecred: warning: the new token is handed out but not cached: cannot write the token cache file "
            ),
            "{storage}: {line}"
        );
        assert!(line.contains("pass --cache-dir"), "{line}");
        assert!(!run.stderr().contains(&run.token()), "no token on stderr");
        assert_eq!(
            bed.token_requests("client_credentials"),
            before + 1,
            "{storage}"
        );
    }
    // Nothing was kept: the next run asks the provider again, and still succeeds.
    let mut again = args.clone();
    again.push("--cache-storage=disk".into());
    env.kubecred_owned(&again)
        .env("KUBECRED_CLIENT_SECRET", &secret)
        .run()
        .success()
        .credential();
    assert_eq!(bed.token_requests("client_credentials"), 3);
    assert_eq!(fs::read(env.cache_dir().join("tokens")).unwrap(), b"");
}

#[test]
fn leftovers_of_a_killed_writer_go_with_the_next_write_and_with_logout() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let name = entry.file_name().unwrap().to_string_lossy().into_owned();
    // What a writer killed between its write and its rename leaves: a full entry, refresh
    // token included, under a temporary name.
    let leftover = entry.with_file_name(format!(".{name}.4242.0.123456.tmp"));
    let plant = || {
        fs::write(
            &leftover,
            br#"{"refresh":{"in":"entry","refresh_token":"live-rt"}}"#,
        )
        .unwrap()
    };
    plant();
    env.kubecred_owned(&with_flag(&args, "--force-refresh"))
        .run()
        .success();
    assert!(!leftover.exists(), "removed by the next write");

    plant();
    let mut logout = args.clone();
    logout[0] = "logout".into();
    env.kubecred_owned(&logout).run().success();
    assert!(
        !entry.exists() && !leftover.exists(),
        "logout leaves no copy"
    );
}

#[test]
fn a_killed_lock_holder_neither_tears_the_entry_nor_keeps_the_lock() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let before = fs::read(&entry).unwrap();
    bed.configure(serde_json::json!({"tokenDelayMs": 20_000}));
    let mut holder = env
        .kubecred_owned(&with_flag(&args, "--force-refresh"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed while it holds the lock and waits for the provider.
    let started = Instant::now();
    while bed.token_requests("client_credentials") < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no token request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    assert_eq!(fs::read(&entry).unwrap(), before, "the entry is as it was");
    bed.configure(serde_json::json!({"tokenDelayMs": 0}));
    // The OS released the lock with the process: the next forced run does not wait it out.
    run_bounded(
        env.kubecred_owned(&with_flag(&args, "--force-refresh"))
            .arg("--lock-timeout=5s"),
        Duration::from_secs(30),
    )
    .success();
    let temp_files = fs::read_dir(entry.parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count();
    assert_eq!(temp_files, 0);
}

#[test]
fn an_entry_obtained_a_little_in_the_future_is_still_a_hit() {
    // The clock stepped back a minute (NTP) since the token was saved.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, entry) = cached_cc(&env, &bed);
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&entry).unwrap()).unwrap();
    let ahead = chrono::Utc::now() + chrono::Duration::seconds(60);
    doc["obtained_at"] = ahead.to_rfc3339().into();
    fs::write(&entry, doc.to_string()).unwrap();
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.total_token_requests(), 1, "served from the cache");
}

/// A pipe whose reading end is closed: every write to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_stderr_never_costs_the_credential_nor_aborts() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let (args, _) = cached_cc(&env, &bed);
    // A hit at -vv writes debug lines to the closed stderr.
    let output = env
        .kubecred_owned(&with_flag(&args, "-vv"))
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{:?}", output.status);
    let run = Run {
        command: "get-token -vv 2>closed-pipe".into(),
        output,
    };
    run.credential();

    // A miss at -vv (a forced refresh): the token is obtained, saved and printed.
    let output = env
        .kubecred_owned(&with_flag(&with_flag(&args, "-vv"), "--force-refresh"))
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{:?}", output.status);

    // An error: the documented exit code (3, provider unreachable), not a signal.
    let mut failing = env.cc_args(&bed);
    failing[1] = "--issuer-url=https://127.0.0.1:9".into();
    let output = env
        .kubecred_owned(&with_flag(&failing, "-v"))
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{:?}", output.status);
    assert!(output.stdout.is_empty());
}

#[test]
fn bad_input_from_the_environment_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args)
        .env(
            "KUBERNETES_EXEC_INFO",
            std::ffi::OsStr::from_bytes(b"{\"apiVersion\":\"\xff\"}"),
        )
        .run()
        .failure(1)
        .stderr_contains("KUBERNETES_EXEC_INFO is not valid UTF-8");

    let without_secret: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--client-secret"))
        .cloned()
        .collect();
    env.kubecred_owned(&with_flag(&without_secret, "--client-secret="))
        .run()
        .failure(1)
        .stderr_contains("client secret");
    env.kubecred_owned(&without_secret)
        .env("KUBECRED_CLIENT_SECRET", "")
        .run()
        .failure(1)
        .stderr_contains("client secret");
    assert_eq!(bed.total_token_requests(), 0);
}

#[test]
fn an_empty_access_token_is_a_provider_error_and_never_cached() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    bed.configure(serde_json::json!({"tokenResponsePatch": {"access_token": ""}}));
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args)
        .run()
        .failure(3)
        .stderr_contains("empty access_token");
    assert!(
        cache_token_files(&env.cache_dir()).is_empty(),
        "nothing cached"
    );
}

#[test]
fn a_quick_second_run_from_the_same_parent_never_costs_a_valid_credential() {
    // Two runs from this test process with KUBERNETES_EXEC_INFO look like client-go's re-run
    // after a 401: the second tries one refresh. With the provider gone, the cached token is
    // still handed out, and the third run does not try again.
    let env = TestEnv::new();
    let (args, entry) = {
        let bed = Testbed::start();
        cached_cc(&env, &bed)
    };
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&entry).unwrap()).unwrap();
    doc["obtained_at"] = (chrono::Utc::now() - chrono::Duration::minutes(5))
        .to_rfc3339()
        .into();
    fs::write(&entry, doc.to_string()).unwrap();
    let cached = doc["access_token"].as_str().unwrap().to_string();
    for run in 0..3 {
        let token = env
            .kubecred_owned(&with_flag(&args, "-v"))
            .env("KUBERNETES_EXEC_INFO", exec_info(V1, false))
            .run()
            .success()
            .token();
        assert_eq!(token, cached, "run {run}");
    }
}
