//! The client-go contract at the process boundary: KUBERNETES_EXEC_INFO in, one ExecCredential
//! out, and failures that are one line on stderr with nothing on stdout.

use crate::support::*;

#[test]
fn malformed_exec_info_fails_with_one_line_and_no_stdout() {
    let env = TestEnv::new();
    env.kubecred(&[
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=x",
    ])
    .env("KUBERNETES_EXEC_INFO", "{not json")
    .run()
    .failure(1)
    .stderr_contains("KUBERNETES_EXEC_INFO is not valid ExecCredential JSON");
}

#[test]
fn unknown_api_version_fails_with_one_line() {
    let env = TestEnv::new();
    env.kubecred(&[
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=x",
    ])
    .env(
        "KUBERNETES_EXEC_INFO",
        r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v2","spec":{}}"#,
    )
    .run()
    .failure(1)
    .stderr_contains(
        "KUBERNETES_EXEC_INFO has apiVersion \"client.authentication.k8s.io/v2\", which kubecred does not speak",
    );
}

#[test]
fn missing_settings_say_what_to_do() {
    let env = TestEnv::new();
    env.kubecred(&["get-token", "--client-id=x"])
        .run()
        .failure(1)
        .stderr_contains("no issuer URL: pass --issuer-url");
    env.kubecred(&["get-token", "--issuer-url=https://idp.example"])
        .run()
        .failure(1)
        .stderr_contains("no client ID: pass --client-id");
    env.kubecred(&[
        "get-token",
        "--issuer-url=http://idp.example",
        "--client-id=x",
    ])
    .run()
    .failure(1)
    .stderr_contains("issuer URL http://idp.example must use https");
}

#[test]
fn usage_errors_are_one_line_exit_2() {
    let env = TestEnv::new();
    env.kubecred(&["get-token", "--no-such-flag"])
        .run()
        .failure(2)
        .stderr_contains("--no-such-flag");
    env.kubecred(&[
        "get-token",
        "--min-validity=soon",
        "--issuer-url=https://i",
        "--client-id=x",
    ])
    .run()
    .failure(1)
    .stderr_contains("--min-validity");
}

#[test]
fn api_version_is_echoed_and_absent_means_v1beta1() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    for (exec_info, expected) in [
        (Some(exec_info(V1, false)), V1),
        (Some(exec_info(V1BETA1, false)), V1BETA1),
        (None, V1BETA1),
    ] {
        let mut cmd = env.kubecred_owned(&args);
        if let Some(info) = &exec_info {
            cmd.env("KUBERNETES_EXEC_INFO", info);
        }
        let run = cmd.run().success();
        let doc = run.credential();
        assert_eq!(doc["apiVersion"], expected);
        let expiry = doc["status"]["expirationTimestamp"].as_str().unwrap();
        assert!(expiry.ends_with('Z') && expiry.len() == 20, "{expiry}");
        // Never later than the token's real expiry.
        let exp = jwt_claims(doc["status"]["token"].as_str().unwrap())["exp"]
            .as_i64()
            .unwrap();
        let printed = chrono::DateTime::parse_from_rfc3339(expiry)
            .unwrap()
            .timestamp();
        // Earlier than the token's real expiry by the documented 30 s margin, and not in the past.
        // (`expires_in` counts from when the request left, so the real expiry may be a second
        // before `exp`.)
        assert!(
            (exp - 32..=exp - 30).contains(&printed),
            "printed {printed}, exp {exp}"
        );
        assert!(printed >= chrono::Utc::now().timestamp() - 5, "{printed}");
    }
}

#[test]
fn cluster_config_absent_null_or_object_is_accepted() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let with_cluster = |config: &str| {
        format!(
            r#"{{"kind":"ExecCredential","apiVersion":"{V1}","spec":{{"interactive":false,"cluster":{{"server":"{}","certificate-authority":"/nonexistent.pem","future-field":{{"x":1}}{config}}}}}}}"#,
            bed.api_server
        )
    };
    let args = env.cc_args(&bed);
    for config in ["", r#","config":null"#, r#","config":{"unrelated":true}"#] {
        env.kubecred_owned(&args)
            .env("KUBERNETES_EXEC_INFO", with_cluster(config))
            .run()
            .success();
    }
    // The extension alone can carry the issuer and client ID.
    let extension = format!(
        r#","config":{{"issuerURL":"{}","clientID":"{CC_CLIENT}","grantType":"client-credentials","resource":"{RESOURCE}"}}"#,
        bed.issuer
    );
    env.kubecred(&["get-token", &format!("--client-secret={CC_SECRET}")])
        .env("KUBERNETES_EXEC_INFO", with_cluster(&extension))
        .run()
        .success();
    // A key of the wrong type names the key.
    env.kubecred(&["get-token", &format!("--client-secret={CC_SECRET}")])
        .env(
            "KUBERNETES_EXEC_INFO",
            with_cluster(r#","config":{"issuerURL":42}"#),
        )
        .run()
        .failure(1)
        .stderr_contains("issuerURL must be a string");
}
