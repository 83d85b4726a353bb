//! The fourth real client: kube-rs (crate `kube` with its client-go-compatible exec auth), as
//! `examples/kube-client` uses it, runs kubecred from the kubeconfig exec stanza and calls
//! `/version` and a SelfSubjectReview against the HTTPS API stand-in. The example is its own
//! crate (kube-rs brings tokio, hyper and k8s-openapi, which kubecred does not need), built into
//! target/kube-client by scripts/kube-client.sh on first use.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn kube_client_bin() -> PathBuf {
    repo_root().join("target/kube-client/debug/kube-client")
}

/// The example with the kubeconfig as its argument, in the clients' clean environment.
fn kube_client(env: &TestEnv, kubeconfig: &Path) -> Command {
    let mut cmd = env.client(&kube_client_bin());
    cmd.arg(kubeconfig);
    cmd
}

#[track_caller]
fn kube_rs_whoami(env: &TestEnv, kubeconfig: &Path) -> Value {
    client_answer(&kube_client(env, kubeconfig).run().success())
}

#[test]
fn kube_rs_client_with_v1_client_credentials() {
    if !have(Need::KubeRsClient) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, env.cc_args(&bed)));
    let answer = kube_rs_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(answer["gitVersion"], "v1.32.4-testbed", "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);

    // A second process: served from kubecred's cache.
    let answer = kube_rs_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);
}

#[test]
fn kube_rs_client_with_v1beta1_provide_cluster_info_and_the_cluster_extension() {
    if !have(Need::KubeRsClient) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, cc_extension_spec(&bed, V1BETA1));
    let answer = kube_rs_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);
}

#[test]
fn kube_rs_client_shows_kubecreds_error_line_when_the_provider_refuses() {
    if !have(Need::KubeRsClient) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    // The secret in a file: kube-rs's error repeats the plugin's command line and environment,
    // so a secret given there would show (README: secrets belong in files).
    let wrong = "not-the-cc-secret";
    let secret_file = env.dir.path().join("client-secret");
    std::fs::write(&secret_file, wrong).unwrap();
    let mut args = env.cc_args(&bed);
    args.retain(|a| !a.starts_with("--client-secret"));
    args.push(format!("--client-secret-file={}", secret_file.display()));
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args));
    let run = kube_client(&env, &kubeconfig).run();
    assert_ne!(run.output.status.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.stdout(), "");
    // kube-rs passes the plugin's stderr on in its error: the user sees what kubecred said.
    run.stderr_contains("kubecred: error:")
        .stderr_contains("refused the client credentials token request: invalid_client")
        .never_shows(&[wrong, CC_SECRET]);
    assert_eq!(
        bed.stats()["api"]["requests"],
        0,
        "no request without a token"
    );
}
