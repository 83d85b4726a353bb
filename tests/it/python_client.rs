//! The second real client: the official Python client (PyPI `kubernetes`, installed by
//! scripts/python-deps.sh into target/python-venv, on first use) runs kubecred itself from the kubeconfig exec stanza
//! and checks the ExecCredential strictly (apiVersion, kind and status present, apiVersion equal
//! to the kubeconfig's). With `provideClusterInfo` it sends the raw kubeconfig cluster map in
//! KUBERNETES_EXEC_INFO (`extensions` list included, plus `config`), which kubecred must parse
//! leniently. `tests/support/python_client.py` calls `/version` and a SelfSubjectReview against
//! the HTTPS API stand-in, which verifies the bearer JWT.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn venv_python() -> PathBuf {
    repo_root().join("target/python-venv/bin/python")
}

/// `python tests/support/python_client.py KUBECONFIG` in the clients' clean environment.
fn python_client(env: &TestEnv, kubeconfig: &Path) -> Command {
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = env.client(&venv_python());
    // The client writes certificate-authority-data to a temp file: keep it in the test's dir.
    cmd.env("TMPDIR", &tmp)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(repo_root().join("tests/support/python_client.py"))
        .arg(kubeconfig);
    cmd
}

/// Runs the Python client and returns its `{"gitVersion", "username"}` line.
#[track_caller]
fn python_whoami(env: &TestEnv, kubeconfig: &Path) -> Value {
    client_answer(&python_client(env, kubeconfig).run().success())
}

#[test]
fn python_client_with_v1_client_credentials() {
    if !have(Need::PythonClient) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, env.cc_args(&bed)));
    let answer = python_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(answer["gitVersion"], "v1.32.4-testbed", "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);

    // A second process: served from kubecred's cache, no new token request.
    let answer = python_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);
}

#[test]
fn python_client_with_v1beta1_provide_cluster_info_and_the_cluster_extension() {
    if !have(Need::PythonClient) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, cc_extension_spec(&bed, V1BETA1));
    let answer = python_whoami(&env, &kubeconfig);
    assert_eq!(answer["username"], CC_CLIENT, "{answer}");
    assert_eq!(answer["gitVersion"], "v1.32.4-testbed", "{answer}");
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);
}
