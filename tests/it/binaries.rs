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
    // Help and usage errors come from kubecred-full's parser, under the name the user ran.
    env.client(&kubecred_bin())
        .args(["setup", "--help"])
        .run()
        .success()
        .stdout_contains("Usage: kubecred setup");
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
}

#[test]
fn what_the_front_would_say_is_said_once_by_kubecred_full() {
    let env = TestEnv::new();
    let bed = Testbed::start();
    let args = env.cc_args(&bed);
    let token = env.kubecred_owned(&args).run().success().token();
    // -v: kubecred-full's hit says so, once (the front holds back and hands over).
    let mut verbose = args.clone();
    verbose.push("-v".into());
    let run = env.kubecred_owned(&verbose).run().success();
    assert_eq!(run.token(), token);
    assert_eq!(
        run.stderr().matches("cache hit").count(),
        1,
        "{}",
        run.stderr()
    );
    // A notice from the settings (a kubelogin flag kubecred ignores), on a hit and on a run the
    // front hands over: once each.
    let mut ignored = args.clone();
    ignored.push("--tls-renegotiation=never".into());
    let mut forced = ignored.clone();
    forced.push("--force-refresh".into());
    for run_args in [ignored, forced] {
        let run = env.kubecred_owned(&run_args).run().success();
        run.credential();
        let notices = run
            .stderr()
            .matches("ignoring kubelogin's --tls-renegotiation")
            .count();
        assert_eq!(notices, 1, "{run_args:?}: {}", run.stderr());
    }
    assert_eq!(bed.total_token_requests(), 2, "one grant, one forced grant");
}

#[test]
fn kubecred_full_runs_every_command_itself() {
    let env = TestEnv::new();
    let bed = Testbed::start();
    let mut args = env.cc_args(&bed);
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    args.push("--cache-storage=disk".into());
    let first = env.client(&kubecred_full_bin()).args(&args).run().success();
    // Its entry is the front's: the same key, the same document.
    let hit = env.kubecred_owned(&args).run().success();
    assert_eq!(hit.token(), first.token());
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
