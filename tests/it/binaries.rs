//! The two binaries: `kubecred` (what kubectl runs) holds none of the code only `setup`,
//! `whoami`, `completion` and `man` need, and hands those commands to `kubecred-tools` beside
//! it with their arguments, terminal and exit code; either one alone fails with one clear line.

use crate::support::*;
use std::process::Command;

/// Texts that only tools-only code carries: ours (setup, whoami, the tools dispatch) and its
/// dependencies' (CEL, YAML, the completion and man page generators).
const TOOLS_ONLY_TEXTS: [&str; 7] = [
    "kube-apiserver sees you as",                  // commands/setup
    "no current-context is set",                   // kubeconfig reading (whoami)
    "runs setup, whoami, completion and man",      // commands::run_tools
    "No such key",                                 // cel
    "found character that cannot start any token", // serde_norway
    "complete -F",                                 // clap_complete (bash)
    ".SH \"",                                      // clap_mangen
];

/// The binary's bytes contain `text`.
fn contains(binary: &[u8], text: &str) -> bool {
    binary
        .windows(text.len())
        .any(|window| window == text.as_bytes())
}

#[test]
fn kubecred_links_none_of_the_tools_code() {
    let kubecred = std::fs::read(kubecred_bin()).unwrap();
    let tools = std::fs::read(kubecred_tools_bin()).unwrap();
    for text in TOOLS_ONLY_TEXTS {
        // Each marker is real: the tools binary has it...
        assert!(
            contains(&tools, text),
            "kubecred-tools lacks {text:?}: pick another marker"
        );
        // ...and the binary every kubectl command starts does not: a get-token path naming
        // tools-only code (or commands::run calling it) would link it and slow every cache hit.
        assert!(
            !contains(&kubecred, text),
            "kubecred links tools-only code ({text:?}); keep it behind commands::run_tools"
        );
    }
}

#[test]
fn tools_commands_are_handed_over_with_arguments_and_exit_code() {
    let env = TestEnv::new();
    env.client(&kubecred_bin())
        .args(["completion", "zsh"])
        .run()
        .success()
        .stdout_contains("#compdef kubecred");
    // A failing tools command: kubecred-tools' exit code and its one error line come back.
    let kubeconfig = env.dir.path().join("empty-kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    env.client(&kubecred_bin())
        .args(["whoami", "--kubeconfig"])
        .arg(&kubeconfig)
        .run()
        .failure(1)
        .stderr_contains("no current-context is set");
    // Help and usage errors come from kubecred's own parser, under kubecred's name.
    env.client(&kubecred_bin())
        .args(["setup", "--help"])
        .run()
        .success()
        .stdout_contains("Usage: kubecred setup");
}

#[test]
fn kubecred_alone_says_to_install_kubecred_tools_and_still_works() {
    let env = TestEnv::new();
    let alone = env.dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let kubecred = alone.join("kubecred");
    std::fs::copy(kubecred_bin(), &kubecred).unwrap();
    env.client(&kubecred)
        .arg("man")
        .run()
        .failure(1)
        .stderr_contains("kubecred man runs ")
        .stderr_contains("install kubecred-tools in the same directory as kubecred");
    // What kubectl and a person run every day does not need it.
    let cache_dir = format!("--cache-dir={}", env.cache_dir().display());
    env.client(&kubecred)
        .args(["status", &cache_dir])
        .run()
        .success()
        .stdout_contains("no cached logins");
}

#[test]
fn kubecred_tools_refuses_kubectls_commands() {
    let env = TestEnv::new();
    env.client(&kubecred_tools_bin())
        .args([
            "get-token",
            "--issuer-url=https://idp.example",
            "--client-id=x",
        ])
        .run()
        .failure(2)
        .stderr_contains("run `kubecred get-token` instead");
    // It is the same command line: `--version` names the product and its commit.
    let version = Command::new(kubecred_tools_bin())
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
