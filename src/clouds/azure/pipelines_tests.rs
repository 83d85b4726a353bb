//! The OIDC request azure-identity sends, against the unit tests' loopback server, and its
//! failures.

use super::*;
use crate::error::{exit_code_of, one_line};
use crate::http::test_server::{Answer, TestServer};

const JWT: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzYyJ9.c2ln";

fn http() -> HttpSettings {
    HttpSettings {
        tls: crate::config::TlsSettings {
            extra_ca_pems: Vec::new(),
            insecure_skip_verify: false,
        },
        timeout: std::time::Duration::from_secs(5),
        proxy: crate::config::ProxyEnvironment {
            variables: Vec::new(),
            system_settings: false,
        },
        request_headers: Vec::new(),
    }
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    move |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

fn settings() -> PipelinesSettings {
    PipelinesSettings {
        service_connection_id: "sc-1".into(),
    }
}

#[test]
fn the_oidc_token_is_asked_for_as_azure_identity_asks() {
    let server = TestServer::start();
    server.answer(
        "/org/_apis/distributedtask/hubs/build/plans/p/jobs/j/oidctoken",
        Answer::json(format!(r#"{{"oidcToken":"{JWT}"}}"#)),
    );
    let env = env_of(&[
        (
            SYSTEM_OIDCREQUESTURI,
            &format!(
                "{}/org/_apis/distributedtask/hubs/build/plans/p/jobs/j/oidctoken/",
                server.base
            ),
        ),
        (SYSTEM_ACCESSTOKEN, "job-token"),
    ]);
    let token = oidc_token(&settings(), &env, &http()).unwrap();
    assert_eq!(token.expose(), JWT);
    let sent = server.requests().pop().unwrap();
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.target,
        "/org/_apis/distributedtask/hubs/build/plans/p/jobs/j/oidctoken?api-version=7.1&serviceConnectionId=sc-1"
    );
    assert_eq!(sent.header("authorization"), Some("Bearer job-token"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-tfs-fedauthredirect"), Some("Suppress"));
    assert_eq!(sent.body, "");
}

#[test]
fn a_missing_variable_or_a_refusal_is_one_line() {
    let err = oidc_token(&settings(), &env_of(&[]), &http()).unwrap_err();
    assert_eq!(
        one_line(&err),
        "SYSTEM_OIDCREQUESTURI is not set: the azurepipelines source runs only in an Azure Pipelines job"
    );
    assert_eq!(exit_code_of(&err), Exit::Input);
    let err = oidc_token(
        &settings(),
        &env_of(&[(SYSTEM_OIDCREQUESTURI, "https://dev.azure.com/x")]),
        &http(),
    )
    .unwrap_err();
    assert_eq!(
        one_line(&err),
        "SYSTEM_ACCESSTOKEN is not set; map it into the step's environment (env: SYSTEM_ACCESSTOKEN: $(System.AccessToken))"
    );
    let err = oidc_token(
        &settings(),
        &env_of(&[
            (SYSTEM_OIDCREQUESTURI, "http://dev.azure.com/x"),
            (SYSTEM_ACCESSTOKEN, "t"),
        ]),
        &http(),
    )
    .unwrap_err();
    assert_eq!(
        one_line(&err),
        "SYSTEM_OIDCREQUESTURI must be https (plain http only on loopback)"
    );

    let server = TestServer::start();
    server.answer("/oidc", Answer::with(401, "no"));
    let env = env_of(&[
        (SYSTEM_OIDCREQUESTURI, &format!("{}/oidc", server.base)),
        (SYSTEM_ACCESSTOKEN, "job-token"),
    ]);
    let err = oidc_token(&settings(), &env, &http()).unwrap_err();
    assert_eq!(
        one_line(&err),
        format!(
            "the Azure Pipelines OIDC endpoint {}/oidc answered HTTP 401 Unauthorized; check the service connection ID and that the pipeline may use it (and that SYSTEM_ACCESSTOKEN is this job's)",
            server.base
        )
    );
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(!one_line(&err).contains("job-token"));
    server.answer("/oidc", Answer::json(r#"{"oidcToken":"not-a-jwt"}"#));
    let err = oidc_token(&settings(), &env, &http()).unwrap_err();
    assert!(one_line(&err).ends_with("is not {\"oidcToken\": \"<jwt>\"}"));
    assert!(!one_line(&err).contains("not-a-jwt"));
}
