//! The two binaries: `kubecred` (what kubectl runs) answers cache hits and links none of the code
//! only a miss or another command needs; it hands every other run to `kubecred-full` beside it,
//! with its arguments, terminal and exit code, and says once what it had to say. Alone, it
//! still answers hits, and fails anything else with one clear line.

use crate::support::*;
use std::process::Command;

/// Texts that only code the front must not link carries: the clap parser, the HTTP and TLS
/// stack, the keyring clients, the logins, and the tools (setup, whoami, CEL, YAML, the
/// completion and man page generators).
const FULL_ONLY_TEXTS: [&str; 12] = [
    "unexpected argument",                          // clap's parser
    "builder error",                                // reqwest
    "received corrupt message",                     // rustls
    "org.freedesktop.secrets",                      // keyring (Secret Service)
    "urn:ietf:params:oauth:grant-type:device_code", // grants (the device flow)
    "kube-apiserver sees you as",                   // commands/setup
    "no current-context is set",                    // kubeconfig reading (whoami)
    "No such key",                                  // cel
    "found character that cannot start any token",  // serde_norway
    "complete -F",                                  // clap_complete (bash)
    ".SH \"",                                       // clap_mangen
    "org.freedesktop.DBus",                         // zbus
];

/// The binary's bytes contain `text`.
fn contains(binary: &[u8], text: &str) -> bool {
    binary
        .windows(text.len())
        .any(|window| window == text.as_bytes())
}

#[test]
fn the_front_links_none_of_the_code_a_miss_needs() {
    let front = std::fs::read(kubecred_bin()).unwrap();
    let full = std::fs::read(kubecred_full_bin()).unwrap();
    for text in FULL_ONLY_TEXTS {
        // Each marker is real: kubecred-full has it...
        assert!(
            contains(&full, text),
            "kubecred-full lacks {text:?}: pick another marker"
        );
        // ...and the binary every kubectl command starts does not: a front that names such code
        // (a cache built with `TokenCache::new`, a clap parse) links it and slows every hit.
        assert!(
            !contains(&front, text),
            "kubecred links code only kubecred-full needs ({text:?}); see src/front.rs"
        );
    }
}

#[test]
fn other_commands_are_handed_over_with_arguments_and_exit_code() {
    let env = TestEnv::new();
    env.client(&kubecred_bin())
        .args(["completion", "zsh"])
        .run()
        .success()
        .stdout_contains("#compdef kubecred");
    // A failing command: kubecred-full's exit code and its one error line come back.
    let kubeconfig = env.dir.path().join("empty-kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    env.client(&kubecred_bin())
        .args(["whoami", "--kubeconfig"])
        .arg(&kubeconfig)
        .run()
        .failure(1)
        .stderr_contains("no current-context is set");
    // Help and usage errors come from kubecred-full's parser (clap, which the front does not
    // link), under the name the user ran, with kubecred-full's exit code for them.
    env.client(&kubecred_bin())
        .args(["setup", "--help"])
        .run()
        .success()
        .stdout_contains("Usage: kubecred setup");
    env.client(&kubecred_bin())
        .args(["whoami", "--no-such-flag"])
        .run()
        .failure(2)
        .stderr_contains("unexpected argument '--no-such-flag'")
        .stderr_contains("(see kubecred --help)");
}

/// A cache entry filled through both binaries, and the provider gone: only a hit can succeed.
fn filled_cache(env: &TestEnv) -> (Vec<String>, String) {
    let bed = Testbed::start();
    let mut args = env.cc_args(&bed);
    let token = env.kubecred_owned(&args).run().success().token();
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    args.push("--cache-storage=disk".into());
    (args, token)
}

#[test]
fn kubecred_alone_answers_hits_and_says_to_install_kubecred_full_for_the_rest() {
    let env = TestEnv::new();
    let (args, token) = filled_cache(&env);
    let alone = env.dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let kubecred = alone.join("kubecred");
    std::fs::copy(kubecred_bin(), &kubecred).unwrap();
    let entry = cache_token_files(&env.cache_dir()).remove(0);
    let before = std::fs::read(&entry).unwrap();
    let modified = std::fs::metadata(&entry).unwrap().modified().unwrap();

    // The hit is the front's alone.
    let hit = env.client(&kubecred).args(&args).run().success();
    assert_eq!(hit.token(), token);
    // Anything else needs kubecred-full: one line saying so, nothing on stdout.
    let mut forced = args.clone();
    forced.push("--force-refresh".into());
    for run in [
        env.client(&kubecred).arg("man").run(),
        env.client(&kubecred).args(&forced).run(),
    ] {
        run.failure(1)
            .stderr_contains(" runs kubecred-full, which could not be started: ")
            .stderr_contains("install kubecred-full in the same directory as kubecred");
    }
    assert_eq!(std::fs::read(&entry).unwrap(), before, "the entry changed");
    let now_modified = std::fs::metadata(&entry).unwrap().modified().unwrap();
    assert_eq!(now_modified, modified, "the entry was stamped");
}

#[test]
fn a_copy_of_kubecred_in_kubecred_full_s_place_fails_instead_of_looping() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("two-fronts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(kubecred_bin(), dir.join("kubecred")).unwrap();
    std::fs::copy(kubecred_bin(), dir.join("kubecred-full")).unwrap();
    // Bounded: a front exec'ing a front would never end.
    let mut two_fronts = env.client(&dir.join("kubecred"));
    run_bounded(two_fronts.arg("man"), std::time::Duration::from_secs(20))
        .failure(1)
        .stderr_contains("kubecred-full is a copy of kubecred, not kubecred-full");
}

#[test]
fn what_the_front_would_say_is_said_once_by_kubecred_full() {
    let env = TestEnv::new();
    let bed = Testbed::start();
    let args = env.cc_args(&bed);
    // Every run as a client's: the front's hit judges and stamps the entry for 401 recovery.
    let run = |args: &[String]| {
        env.kubecred_owned(args)
            .env("KUBERNETES_EXEC_INFO", exec_info(V1, false))
            .run()
            .success()
    };
    let token = run(&args).token();
    // -v: kubecred-full's hit says so, once (the front holds back and hands over).
    let verbose = run(&with_flag(&args, "-v"));
    assert_eq!(verbose.token(), token);
    let hits = verbose.stderr().matches("cache hit").count();
    assert_eq!(hits, 1, "{}", verbose.stderr());
    // A notice from the settings (a kubelogin flag kubecred ignores) on a hit: said once, and
    // the front stamps nothing before handing over. An old token (past the 401 rule's minimum
    // age) makes that visible: a stamp by the front would look to kubecred-full like this
    // parent's re-run after a 401, and cost a refresh.
    let entry = cache_token_files(&env.cache_dir()).remove(0);
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    doc["obtained_at"] = (chrono::Utc::now() - chrono::Duration::minutes(5))
        .to_rfc3339()
        .into();
    std::fs::write(&entry, doc.to_string()).unwrap();
    let ignored = with_flag(&args, "--tls-renegotiation=never");
    let forced = with_flag(&ignored, "--force-refresh");
    for (run_args, requests) in [(&ignored, 1), (&forced, 2)] {
        let notice = run(run_args);
        notice.credential();
        let notices = notice
            .stderr()
            .matches("ignoring kubelogin's --tls-renegotiation")
            .count();
        assert_eq!(notices, 1, "{run_args:?}: {}", notice.stderr());
        assert_eq!(bed.total_token_requests(), requests, "{run_args:?}");
    }
}

#[test]
fn kubecred_full_runs_every_command_itself() {
    let env = TestEnv::new();
    let bed = Testbed::start();
    let mut args = env.cc_args(&bed);
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    args.push("--cache-storage=disk".into());
    let first = env.client(&kubecred_full_bin()).args(&args).run().success();
    // Its entry is the front's: the same key, the same document, answered from the cache.
    let hit = env.kubecred_owned(&args).run().success();
    assert_eq!(hit.stdout(), first.stdout());
    assert_eq!(bed.total_token_requests(), 1);
    // It is the same command line: `--version` names the product and its commit.
    let version = Command::new(kubecred_full_bin())
        .arg("--version")
        .output()
        .unwrap()
        .stdout;
    let version = String::from_utf8_lossy(&version);
    assert!(
        version.starts_with("kubecred 0.") && version.contains("(commit "),
        "{version}"
    );
}

#[test]
fn kubecred_full_names_the_program_the_front_was_run_as() {
    // Where the hand-over cannot keep argv[0] (Windows starts a child), the front's marker
    // carries it: help then names `kubectl kubecred` for the kubectl plugin, as it would have.
    let env = TestEnv::new();
    env.client(&kubecred_full_bin())
        .arg("--help")
        .env("KUBECRED_HANDED_OVER_ARGV0", "/somewhere/kubectl-kubecred")
        .run()
        .success()
        .stdout_contains("Usage: kubectl kubecred");
}
