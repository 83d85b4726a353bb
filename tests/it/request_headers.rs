//! `--request-header` as the provider sees it: the test bed records the headers of every request
//! it receives (`GET /__testbed/requests`). A whole device-flow login, approved in headless
//! Chromium, then a logout: discovery, the device authorization, the token polls, the JWKS
//! fetch and the revocation all carry the headers, and `-vv` shows none of their values. The
//! GitHub Actions ID-token endpoint (someone else's) never gets them.

use crate::support::*;
use serde_json::Value;

const V1: &str = "client.authentication.k8s.io/v1";
const API_KEY: &str = "gateway-api-key-7f3a";

fn header_flags() -> Vec<String> {
    vec![
        format!("--request-header=X-Api-Key={API_KEY}"),
        "--request-header=Origin=http://localhost".into(),
    ]
}

/// The requests kubecred sent (its User-Agent): the browser's are the browser's.
fn from_kubecred(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|request| {
            request["headers"]["user-agent"]
                .as_str()
                .is_some_and(|agent| agent.starts_with("kubecred/"))
        })
        .collect()
}

fn carries_the_headers(request: &Value) -> bool {
    request["headers"]["x-api-key"] == API_KEY && request["headers"]["origin"] == "http://localhost"
}

#[test]
fn every_request_to_the_provider_carries_the_headers_and_no_log_shows_them() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut settings = vec![
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={PUBLIC_CLIENT}"),
        "--grant-type=device-code".into(),
    ];
    settings.extend(header_flags());
    let mut login = vec!["get-token".to_string()];
    login.extend(settings.iter().cloned());
    login.push(format!("--browser-command={}", browser_command()));
    login.push("-vv".into());
    let run = env
        .kubecred_owned(&login)
        .env("KUBERNETES_EXEC_INFO", exec_info(V1, false))
        .run()
        .success()
        .never_shows(&[API_KEY]);
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");

    let mut logout = vec!["logout".to_string()];
    logout.extend(settings.iter().cloned());
    logout.push("-vv".into());
    env.kubecred_owned(&logout)
        .run()
        .success()
        .never_shows(&[API_KEY]);

    let requests = bed.requests();
    let ours = from_kubecred(&requests);
    for path in [
        "/.well-known/openid-configuration",
        "/device/auth",
        "/token",
        "/jwks",
        "/token/revocation",
    ] {
        assert!(
            ours.iter().any(|request| request["path"] == path),
            "no request to {path}: {requests:#?}"
        );
    }
    let without: Vec<_> = ours
        .iter()
        .filter(|request| !carries_the_headers(request))
        .collect();
    assert!(without.is_empty(), "without the headers: {without:#?}");
}

#[test]
fn the_github_actions_endpoint_never_gets_the_providers_headers() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = vec![
        "get-token".to_string(),
        format!("--issuer-url={}", bed.issuer),
        "--grant-type=token-exchange".into(),
        "--client-id=ci-exchange".into(),
        "--subject-token-source=github-actions".into(),
        "--subject-token-audience=testbed-exchange".into(),
    ];
    // Only the API key: oidc-provider checks an Origin against the client's redirect URIs
    // (CORS), and this client has none.
    args.push(format!("--request-header=X-Api-Key={API_KEY}"));
    env.kubecred_owned(&args)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/ci/actions?api-version=2.0", bed.admin),
        )
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "testbed-actions-request-token",
        )
        .run()
        .success();
    let requests = bed.requests();
    let actions: Vec<_> = requests
        .iter()
        .filter(|request| request["path"] == "/__testbed/ci/actions")
        .collect();
    assert_eq!(actions.len(), 1, "{requests:#?}");
    assert!(
        actions[0]["headers"].get("x-api-key").is_none(),
        "{actions:#?}"
    );
    // The provider's token endpoint got it.
    assert!(
        requests.iter().any(
            |request| request["path"] == "/token" && request["headers"]["x-api-key"] == API_KEY
        ),
        "{requests:#?}"
    );
}
