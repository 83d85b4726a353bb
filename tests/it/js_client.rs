//! The third real client: the official JavaScript client (npm `@kubernetes/client-node` 1.x,
//! installed with the test bed) runs kubecred itself from the kubeconfig exec stanza. It sets no
//! `KUBERNETES_EXEC_INFO` (kubecred answers v1beta1 and must not wait on the stdin pipe it gets),
//! merges the stanza's `env` into its own, and keeps the credential in memory until its
//! `expirationTimestamp`. `tests/support/js_client.mjs` calls `/version` and a SelfSubjectReview
//! against the HTTPS API stand-in, which verifies the bearer JWT.

use crate::support::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `node tests/support/js_client.mjs KUBECONFIG` in the clients' clean environment.
fn js_client(env: &TestEnv, kubeconfig: &Path) -> Command {
    let mut cmd = env.client(Path::new("node"));
    cmd.arg(repo_root().join("tests/support/js_client.mjs"))
        .arg(kubeconfig);
    cmd
}

/// Runs the JavaScript client and returns its `{"gitVersion", "username"}` line.
#[track_caller]
fn js_whoami(env: &TestEnv, kubeconfig: &Path) -> Value {
    client_answer(&js_client(env, kubeconfig).run().success())
}

/// Client credentials with the secret in the exec stanza's `env`, as a CI job would pass it.
fn cc_spec_with_secret_in_env(
    bed: &Testbed,
    api_version: &'static str,
    secret: &str,
) -> KubeconfigSpec {
    let args = vec![
        "get-token".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={CC_CLIENT}"),
        "--grant-type=client-credentials".into(),
        format!("--resource={RESOURCE}"),
    ];
    let mut spec = KubeconfigSpec::new(api_version, args);
    spec.env = vec![("KUBECRED_CLIENT_SECRET".into(), secret.into())];
    spec
}

#[test]
fn js_client_with_v1_and_v1beta1_stanzas_and_the_secret_in_the_stanza_env() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    for api_version in [V1, V1BETA1] {
        let kubeconfig = env.kubeconfig(
            &bed,
            cc_spec_with_secret_in_env(&bed, api_version, CC_SECRET),
        );
        let answer = js_whoami(&env, &kubeconfig);
        assert_eq!(answer["username"], CC_CLIENT, "{answer}");
        assert_eq!(answer["gitVersion"], "v1.32.4-testbed", "{answer}");
    }
    // Two client processes, two API calls each: one token request, the rest from kubecred's
    // cache (the cache key does not depend on the stanza's apiVersion).
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);
    assert_eq!(bed.stats()["api"]["last_user"], CC_CLIENT);
}

#[test]
fn js_client_shows_kubecreds_error_line_when_the_provider_refuses() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let wrong = "not-the-cc-secret";
    let kubeconfig = env.kubeconfig(&bed, cc_spec_with_secret_in_env(&bed, V1, wrong));
    // The client rejects with the plugin's stderr as its error message: kubecred's one line
    // reaches the JS user (js_client.mjs prefixes it with the error's name).
    let run = js_client(&env, &kubeconfig)
        .run()
        .stderr_contains("Error: kubecred: error: ")
        .stderr_contains("refused the client credentials token request: invalid_client")
        .never_shows(&[wrong, CC_SECRET]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.stderr());
    assert_eq!(run.stdout(), "");
    assert_eq!(
        run.stderr().matches("kubecred: error:").count(),
        1,
        "{}",
        run.stderr()
    );
    assert_eq!(
        bed.stats()["api"]["requests"],
        0,
        "no request without a token"
    );
}
