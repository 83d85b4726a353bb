//! The real kubectl runs kubecred from a kubeconfig exec stanza against the HTTPS API stand-in,
//! which verifies the bearer JWT as kube-apiserver's OIDC authenticator does.

use crate::support::*;
use serde_json::json;

pub(crate) fn whoami(env: &TestEnv, kubeconfig: &std::path::Path) -> String {
    let run = env
        .kubectl(kubeconfig, &["auth", "whoami", "-o", "json"])
        .run()
        .success();
    let review: serde_json::Value = serde_json::from_str(&run.stdout()).unwrap();
    review["status"]["userInfo"]["username"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn kubectl_with_v1_and_v1beta1() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    for api_version in [V1, V1BETA1] {
        let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(api_version, env.cc_args(&bed)));
        env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
            .run()
            .success()
            .stdout_contains("v1.32.4-testbed");
        assert_eq!(whoami(&env, &kubeconfig), CC_CLIENT);
    }
    // Both kubeconfigs share one cache entry: one token request in all.
    assert_eq!(bed.token_requests("client_credentials"), 1);
}

#[test]
fn kubectl_with_provide_cluster_info_and_the_cluster_extension() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, cc_extension_spec(&bed, V1));
    assert_eq!(whoami(&env, &kubeconfig), CC_CLIENT);

    // Without provideClusterInfo the extension is not seen: kubectl shows our error line.
    let mut spec = KubeconfigSpec::new(V1, vec!["get-token".into()]);
    spec.cluster_extension = Some(json!({"issuerURL": bed.issuer, "clientID": CC_CLIENT}));
    let kubeconfig = env.kubeconfig(&bed, spec);
    env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
        .run()
        .stderr_contains("no issuer URL");
}

#[test]
fn the_api_stand_in_rejects_a_token_for_another_audience() {
    // A real check that can fail: the stand-in verifies aud, so a token for another resource is
    // refused and kubectl reports Unauthorized.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = env.cc_args(&bed);
    args.retain(|a| !a.starts_with("--resource"));
    args.push("--resource=https://somewhere-else.testbed".into());
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args));
    let run = env
        .kubectl(&kubeconfig, &["get", "--raw", "/version"])
        .run();
    assert!(!run.output.status.success());
    run.stderr_contains("Unauthorized");
}

/// The token cached in `env`'s one cache entry, with its entry made to look obtained a while ago
/// (a token just obtained is never refreshed on a re-run: see acquire/hand_out.rs).
fn cached_access_token_aged(env: &TestEnv) -> String {
    let entry = cache_token_files(&env.cache_dir()).remove(0);
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    let token = doc["access_token"].as_str().unwrap().to_string();
    doc["obtained_at"] = (chrono::Utc::now() - chrono::Duration::minutes(5))
        .to_rfc3339()
        .into();
    std::fs::write(&entry, doc.to_string()).unwrap();
    token
}

#[test]
fn kubectl_recovers_from_a_rejected_token_without_force_refresh() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, env.cc_args(&bed)));
    let version = |env: &TestEnv| {
        env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
            .run()
    };
    version(&env).success();
    assert_eq!(bed.token_requests("client_credentials"), 1);

    // The API server stops accepting the cached token, which has not expired (revoked, keys
    // rotated): client-go re-runs kubecred after the 401, and kubecred refreshes once.
    let rejected = cached_access_token_aged(&env);
    bed.configure(json!({ "apiRejectedTokens": [rejected] }));
    let _ = version(&env); // the request that met the 401 may fail; the next command must not
    assert_eq!(
        bed.token_requests("client_credentials"),
        2,
        "one new token after the 401"
    );
    version(&env).success().stdout_contains("v1.32.4-testbed");
    assert_eq!(
        bed.token_requests("client_credentials"),
        2,
        "then cache hits"
    );

    // A server that rejects the new token too: kubectl fails, and kubecred does not loop.
    let also_rejected = cache_token_files(&env.cache_dir()).remove(0);
    let also_rejected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(also_rejected).unwrap()).unwrap();
    bed.configure(json!({ "apiRejectedTokens": [rejected, also_rejected["access_token"]] }));
    for _ in 0..2 {
        let run = version(&env);
        assert!(!run.output.status.success());
    }
    assert_eq!(
        bed.token_requests("client_credentials"),
        2,
        "a token just obtained is not refreshed again"
    );
}
