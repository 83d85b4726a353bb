//! Which source the environment names, the request each one sends (against the unit tests'
//! loopback server), the answers read and the failures worded.

use super::*;
use crate::error::{exit_code_of, is_transient, one_line};
use crate::http::test_server::{Answer, TestServer};

const NOW: i64 = 1_800_000_000;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(NOW, 0).unwrap()
}

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

fn no_arc() -> ArcAgent {
    ArcAgent {
        key_dir: None,
        program: None,
    }
}

fn settings(identity: Identity) -> ManagedIdentitySettings {
    ManagedIdentitySettings {
        scope: super::super::AKS_SCOPE.into(),
        identity,
    }
}

#[test]
fn the_environment_picks_the_source_as_azure_identity_does() {
    let pick = |vars: &[(&str, &str)]| source(&env_of(vars), &no_arc());
    assert_eq!(
        pick(&[]).unwrap(),
        Source::Imds {
            authority: IMDS_AUTHORITY.into()
        }
    );
    assert_eq!(
        pick(&[("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://10.0.0.1:2579/")]).unwrap(),
        Source::Imds {
            authority: "http://10.0.0.1:2579/".into()
        }
    );
    assert_eq!(
        pick(&[("IDENTITY_ENDPOINT", "http://e"), ("IDENTITY_HEADER", "h")]).unwrap(),
        Source::AppService {
            endpoint: "http://e".into(),
            header: Secret::new("h")
        }
    );
    assert_eq!(
        pick(&[
            ("IDENTITY_ENDPOINT", "http://e"),
            ("IMDS_ENDPOINT", "http://i")
        ])
        .unwrap(),
        Source::Arc {
            endpoint: "http://e".into()
        }
    );
    assert_eq!(
        pick(&[("MSI_ENDPOINT", "http://c")]).unwrap(),
        Source::CloudShell {
            endpoint: "http://c".into()
        }
    );
    // IDENTITY_ENDPOINT alone names nothing: IMDS, as there.
    assert!(matches!(
        pick(&[("IDENTITY_ENDPOINT", "http://e")]).unwrap(),
        Source::Imds { .. }
    ));
    let err = pick(&[
        ("IDENTITY_ENDPOINT", "https://e"),
        ("IDENTITY_HEADER", "h"),
        ("IDENTITY_SERVER_THUMBPRINT", "ab"),
    ])
    .unwrap_err();
    assert!(one_line(&err).starts_with("this is Service Fabric's managed identity"));
    assert_eq!(exit_code_of(&err), Exit::Input);
    let err = pick(&[("MSI_ENDPOINT", "http://m"), ("MSI_SECRET", "s")]).unwrap_err();
    assert!(one_line(&err).starts_with("this is Azure Machine Learning's managed identity"));
    // Arc's agent installed, its variables unset: Arc's local endpoint.
    let dir = tempfile::tempdir().unwrap();
    let himds = dir.path().join("himds");
    std::fs::write(&himds, "").unwrap();
    let arc = ArcAgent {
        key_dir: None,
        program: Some(himds),
    };
    assert_eq!(
        source(&env_of(&[]), &arc).unwrap(),
        Source::Arc {
            endpoint: "http://localhost:40342/metadata/identity/oauth2/token".into()
        }
    );
}

#[test]
fn imds_is_asked_with_msals_parameters_and_its_answer_read() {
    let server = TestServer::start();
    server.answer(
        "/metadata/identity/oauth2/token",
        Answer::json(format!(
            r#"{{"access_token":"tok","expires_in":"3599","expires_on":"{}","resource":"r","token_type":"Bearer"}}"#,
            NOW + 3599
        )),
    );
    let env = env_of(&[(
        "AZURE_POD_IDENTITY_AUTHORITY_HOST",
        &format!("{}/", server.base),
    )]);
    for (identity, query) in [
        (
            Identity::System,
            "api-version=2018-02-01&resource=6dae42f8-4368-4678-94ff-3960e28e3630",
        ),
        (
            Identity::ClientId("c-1".into()),
            "api-version=2018-02-01&resource=6dae42f8-4368-4678-94ff-3960e28e3630&client_id=c-1",
        ),
        (
            Identity::ResourceId("/subscriptions/s/rg/x".into()),
            "api-version=2018-02-01&resource=6dae42f8-4368-4678-94ff-3960e28e3630&msi_res_id=%2Fsubscriptions%2Fs%2Frg%2Fx",
        ),
    ] {
        let got = token_with_arc(&settings(identity), &env, &http(), now(), &no_arc()).unwrap();
        assert_eq!(got.token.expose(), "tok");
        assert_eq!(got.expires_at.timestamp(), NOW + 3599);
        let sent = server.requests().pop().unwrap();
        assert_eq!(sent.method, "GET");
        assert_eq!(
            sent.target,
            format!("/metadata/identity/oauth2/token?{query}")
        );
        assert_eq!(sent.header("metadata"), Some("true"));
    }
}

#[test]
fn app_service_gets_its_header_and_api_version() {
    let server = TestServer::start();
    server.answer(
        "/msi/token",
        Answer::json(format!(
            r#"{{"access_token":"tok","expires_on":"{}"}}"#,
            NOW + 600
        )),
    );
    let env = env_of(&[
        ("IDENTITY_ENDPOINT", &format!("{}/msi/token", server.base)),
        ("IDENTITY_HEADER", "header-secret"),
    ]);
    let got = token_with_arc(
        &settings(Identity::ResourceId("/r/id".into())),
        &env,
        &http(),
        now(),
        &no_arc(),
    )
    .unwrap();
    assert_eq!(got.expires_at.timestamp(), NOW + 600);
    let sent = server.requests().pop().unwrap();
    assert_eq!(
        sent.target,
        "/msi/token?api-version=2019-08-01&resource=6dae42f8-4368-4678-94ff-3960e28e3630&mi_res_id=%2Fr%2Fid"
    );
    assert_eq!(sent.header("x-identity-header"), Some("header-secret"));
    assert_eq!(sent.header("metadata"), Some("true"));
}

#[test]
fn cloud_shell_is_a_form_post_and_takes_no_user_assigned_identity() {
    let server = TestServer::start();
    server.answer(
        "/oauth2/token",
        Answer::json(format!(
            r#"{{"access_token":"tok","expires_on":{}}}"#,
            NOW + 60
        )),
    );
    let env = env_of(&[("MSI_ENDPOINT", &format!("{}/oauth2/token", server.base))]);
    token_with_arc(&settings(Identity::System), &env, &http(), now(), &no_arc()).unwrap();
    let sent = server.requests().pop().unwrap();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.target, "/oauth2/token");
    assert_eq!(sent.body, "resource=6dae42f8-4368-4678-94ff-3960e28e3630");
    assert_eq!(sent.header("metadata"), Some("true"));
    let err = token_with_arc(
        &settings(Identity::ClientId("c".into())),
        &env,
        &http(),
        now(),
        &no_arc(),
    )
    .unwrap_err();
    assert_eq!(
        one_line(&err),
        "Cloud Shell's managed identity is the signed-in user's: it takes no --client-id or --identity-resource-id; drop them"
    );
}

#[test]
fn arc_answers_its_challenge_with_the_key_file_of_its_own_directory() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.key"), "the-key").unwrap();
    server.answer_in_turn(
        "/metadata/identity/oauth2/token",
        vec![
            // The challenge names a file elsewhere: only its name counts.
            Answer::with(401, "").header("WWW-Authenticate", "Basic realm=/elsewhere/secret.key"),
            Answer::json(r#"{"access_token":"tok","expires_in":"3600","client_id":"C-1"}"#),
        ],
    );
    let env = env_of(&[
        (
            "IDENTITY_ENDPOINT",
            &format!("{}/metadata/identity/oauth2/token", server.base),
        ),
        ("IMDS_ENDPOINT", "http://localhost:40342"),
    ]);
    let arc = ArcAgent {
        key_dir: Some(dir.path().to_path_buf()),
        program: None,
    };
    let got = token_with_arc(
        &settings(Identity::ClientId("c-1".into())),
        &env,
        &http(),
        now(),
        &arc,
    )
    .unwrap();
    assert_eq!(got.expires_at.timestamp(), NOW + 3600);
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    for request in &sent {
        assert_eq!(
            request.target,
            "/metadata/identity/oauth2/token?api-version=2020-06-01&resource=6dae42f8-4368-4678-94ff-3960e28e3630&client_id=c-1"
        );
        assert_eq!(request.header("metadata"), Some("true"));
    }
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(sent[1].header("authorization"), Some("Basic the-key"));

    // An agent that answers for another identity is refused (MSAL fails closed).
    server.answer_in_turn(
        "/metadata/identity/oauth2/token",
        vec![
            Answer::with(401, "").header("WWW-Authenticate", "Basic realm=/x/secret.key"),
            Answer::json(r#"{"access_token":"tok","expires_in":"3600"}"#),
        ],
    );
    let err = token_with_arc(
        &settings(Identity::ClientId("c-1".into())),
        &env,
        &http(),
        now(),
        &arc,
    )
    .unwrap_err();
    assert!(
        one_line(&err).starts_with("Azure Arc did not confirm that its token is for c-1"),
        "{}",
        one_line(&err)
    );
    // A key file larger than 4 KiB is refused before it is read.
    std::fs::write(dir.path().join("big.key"), "k".repeat(4097)).unwrap();
    server.answer(
        "/metadata/identity/oauth2/token",
        Answer::with(401, "").header("WWW-Authenticate", "Basic realm=/x/big.key"),
    );
    let err = token_with_arc(&settings(Identity::System), &env, &http(), now(), &arc).unwrap_err();
    assert!(one_line(&err).contains("which is larger than 4096 bytes"));
}

#[test]
fn failures_say_what_the_host_lacks() {
    let server = TestServer::start();
    let env = env_of(&[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &server.base)]);
    server.answer(
        "/metadata/identity/oauth2/token",
        Answer::with(
            400,
            r#"{"error":"invalid_request","error_description":"Identity not found"}"#,
        ),
    );
    let err = token_with_arc(
        &settings(Identity::ClientId("c-9".into())),
        &env,
        &http(),
        now(),
        &no_arc(),
    )
    .unwrap_err();
    assert_eq!(
        one_line(&err),
        "the instance metadata service answered HTTP 400 Bad Request: invalid_request (Identity not found); no identity with client ID c-9 is assigned to this host: assign it, or name an assigned one with --client-id or --identity-resource-id"
    );
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(!is_transient(&err));
    server.answer(
        "/metadata/identity/oauth2/token",
        Answer::json(r#"{"token_type":"Bearer"}"#),
    );
    let err =
        token_with_arc(&settings(Identity::System), &env, &http(), now(), &no_arc()).unwrap_err();
    assert_eq!(
        one_line(&err),
        "the instance metadata service's answer has no access_token"
    );
    // Nobody listening: an outage, with where to look.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let env = env_of(&[(
        "AZURE_POD_IDENTITY_AUTHORITY_HOST",
        &format!("http://{address}"),
    )]);
    let err =
        token_with_arc(&settings(Identity::System), &env, &http(), now(), &no_arc()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(is_transient(&err));
    assert!(
        one_line(&err)
            .ends_with("(set AZURE_POD_IDENTITY_AUTHORITY_HOST where pod identity serves it)"),
        "{}",
        one_line(&err)
    );
}
