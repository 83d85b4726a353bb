//! Each credential kind against a loopback stand-in: what is sent (method, path, form or JSON
//! fields, headers), what comes back, and the one line of each failure. The requests google-auth
//! sends for the same files are compared in tests/it/google.rs.

use super::*;
use crate::error::{Exit, exit_code_of, is_transient, one_line};
use crate::http::test_server::{Answer, Received, TestServer};
use chrono::TimeZone;
use std::collections::HashMap;
use std::path::PathBuf;
use url::Url;

const KEY: &str = include_str!("../../../tests/support/google/test-key.pem");
const PUBLIC_KEY: &str = include_str!("../../../tests/support/google/test-key.pub.pem");

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap()
}

/// A test's world: a home, a PATH, variables, and the HTTP settings.
struct World {
    dir: tempfile::TempDir,
    vars: HashMap<String, String>,
    http: HttpSettings,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::http::tests::test_config("https://idp.example", dir.path());
        let mut vars = HashMap::new();
        // No probe of the real link-local metadata address from a test, and no real gcloud.
        vars.insert("NO_GCE_CHECK".into(), "true".into());
        vars.insert("PATH".into(), dir.path().join("bin").display().to_string());
        World {
            dir,
            vars,
            http: config.http,
        }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn set(&mut self, name: &str, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// An executable script in the world's PATH (or elsewhere under it).
    #[cfg(unix)]
    fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.write(name, &format!("#!/bin/sh\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The commands' environment: the world's variables, and the system's tools.
    fn command_env(&self) -> Vec<(String, String)> {
        let mut vars: Vec<(String, String)> = self.vars.clone().into_iter().collect();
        for var in &mut vars {
            if var.0 == "PATH" {
                var.1 = format!("{}:/usr/bin:/bin", var.1);
            }
        }
        vars
    }

    fn run(&self, settings: &GoogleSettings) -> anyhow::Result<CloudToken> {
        let vars = self.vars.clone();
        let env = move |name: &str| vars.get(name).cloned();
        let home = self.home();
        let cx = Context {
            env: &env,
            home: Some(&home),
            now: now(),
            http: &self.http,
            retry_window: Duration::ZERO,
            command_env: Some(&self.command_env()),
        };
        token(settings, &cx)
    }

    fn exchange(&self, settings: &WorkforceSettings, id_token: &str) -> anyhow::Result<CloudToken> {
        let vars = self.vars.clone();
        let env = move |name: &str| vars.get(name).cloned();
        let cx = Context {
            env: &env,
            home: None,
            now: now(),
            http: &self.http,
            retry_window: Duration::ZERO,
            command_env: None,
        };
        exchange_workforce_id_token(settings, &Secret::new(id_token), &cx)
    }
}

fn form(received: &Received) -> Vec<(String, String)> {
    url::form_urlencoded::parse(received.body.as_bytes())
        .into_owned()
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn token_answer(token: &str, expires_in: u64) -> Answer {
    Answer::json(format!(
        r#"{{"access_token":"{token}","expires_in":{expires_in},"token_type":"Bearer"}}"#
    ))
}

fn adc_settings() -> GoogleSettings {
    GoogleSettings::default()
}

fn scopes_text() -> String {
    DEFAULT_SCOPES.join(" ")
}

fn user_file(server: &TestServer, account: &str) -> String {
    format!(
        r#"{{"type":"authorized_user","client_id":"cid.apps.googleusercontent.com","client_secret":"csecret","refresh_token":"1//refresh","account":"{account}","token_uri":"{}/token","universe_domain":"googleapis.com"}}"#,
        server.base
    )
}

#[test]
fn an_authorized_user_file_is_refreshed_at_its_token_uri_as_google_auth_does() {
    let server = TestServer::start();
    server.answer("/token", token_answer("ya29.user", 3599));
    let mut world = World::new();
    let file = world.write("adc.json", &user_file(&server, "dev@example.com"));
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());

    let token = world.run(&adc_settings()).unwrap();
    assert_eq!(token.token.expose(), "ya29.user");
    assert_eq!(token.expires_at, now() + chrono::Duration::seconds(3599));
    assert_eq!(token.who.as_deref(), Some("dev@example.com"));

    let sent = server.received("/token");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, "POST");
    assert_eq!(
        sent[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(
        form(&sent[0]),
        pairs(&[
            ("grant_type", "refresh_token"),
            ("client_id", "cid.apps.googleusercontent.com"),
            ("client_secret", "csecret"),
            ("refresh_token", "1//refresh"),
        ])
    );
}

#[test]
fn gclouds_adc_file_is_found_under_cloudsdk_config_or_the_home_and_names_the_account_from_the_id_token()
 {
    use base64::Engine;
    let server = TestServer::start();
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(r#"{"email":"person@example.com","sub":"1"}"#);
    server.answer(
        "/token",
        Answer::json(format!(
            r#"{{"access_token":"ya29.home","expires_in":"3600","id_token":"eyJhbGciOiJSUzI1NiJ9.{claims}.c2ln"}}"#
        )),
    );
    let world = World::new();
    world.write(
        "home/.config/gcloud/application_default_credentials.json",
        &user_file(&server, ""),
    );
    let token = world.run(&adc_settings()).unwrap();
    assert_eq!(token.token.expose(), "ya29.home");
    assert_eq!(token.who.as_deref(), Some("person@example.com"));

    // CLOUDSDK_CONFIG moves gcloud's directory: the home's file is no longer looked at.
    let mut world = world;
    let elsewhere = world.dir.path().join("elsewhere");
    world.set("CLOUDSDK_CONFIG", elsewhere.display().to_string());
    let err = world.run(&adc_settings()).unwrap_err();
    assert_eq!(
        one_line(&err),
        format!(
            "no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, no {}, no metadata server answered, and gcloud is not on PATH; run `gcloud auth application-default login`, or name a credential file with --google-credentials",
            elsewhere
                .join("application_default_credentials.json")
                .display()
        )
    );
    assert_eq!(exit_code_of(&err), Exit::Login);
}

#[test]
fn a_refused_refresh_token_says_to_log_in_with_gcloud_again() {
    let server = TestServer::start();
    server.answer(
        "/token",
        Answer::with(
            400,
            r#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#,
        ),
    );
    let mut world = World::new();
    let file = world.write("adc.json", &user_file(&server, ""));
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let err = world.run(&adc_settings()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(!is_transient(&err));
    assert_eq!(
        one_line(&err),
        format!(
            "the refresh of the Google user credentials in {} (GOOGLE_APPLICATION_CREDENTIALS) at {}/token answered HTTP 400 Bad Request: invalid_grant (Token has been expired or revoked.); the login has expired or was revoked: run `gcloud auth application-default login` again",
            file.display(),
            server.base
        )
    );
    assert!(!one_line(&err).contains("1//refresh"));
}

#[test]
fn a_service_account_key_signs_a_jwt_bearer_assertion_for_its_token_uri() {
    let server = TestServer::start();
    server.answer("/oauth2/token", token_answer("ya29.sa", 3600));
    let world = World::new();
    let file = world.write(
        "sa.json",
        &serde_json::json!({
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "kid-1",
            "private_key": KEY,
            "client_email": "deployer@p.iam.gserviceaccount.com",
            "client_id": "123",
            "token_uri": format!("{}/oauth2/token", server.base),
        })
        .to_string(),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file),
        scopes: vec!["https://www.googleapis.com/auth/cloud-platform".into()],
        ..GoogleSettings::default()
    };
    let token = world.run(&settings).unwrap();
    assert_eq!(token.token.expose(), "ya29.sa");
    assert_eq!(
        token.who.as_deref(),
        Some("deployer@p.iam.gserviceaccount.com")
    );

    let sent = server.received("/oauth2/token");
    let fields = form(&sent[0]);
    assert_eq!(
        fields[0],
        ("grant_type".into(), endpoints::JWT_BEARER_GRANT.into())
    );
    assert_eq!(fields[1].0, "assertion");
    assert_eq!(fields.len(), 2);
    let assertion = &fields[1].1;
    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some("kid-1"));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.validate_exp = false;
    validation.set_audience(&[format!("{}/oauth2/token", server.base)]);
    let claims = jsonwebtoken::decode::<serde_json::Value>(
        assertion,
        &jsonwebtoken::DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).unwrap(),
        &validation,
    )
    .unwrap()
    .claims;
    assert_eq!(
        claims,
        serde_json::json!({
            "iss": "deployer@p.iam.gserviceaccount.com",
            "scope": "https://www.googleapis.com/auth/cloud-platform",
            "aud": format!("{}/oauth2/token", server.base),
            "iat": now().timestamp(),
            "exp": now().timestamp() + 3600,
        })
    );
}

fn workforce_file(server: &TestServer, source: serde_json::Value) -> String {
    serde_json::json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "token_url": format!("{}/v1/token", server.base),
        "workforce_pool_user_project": "billing-project",
        "credential_source": source,
    })
    .to_string()
}

#[test]
fn a_workforce_external_account_exchanges_its_file_token_at_its_token_url_with_the_user_project() {
    let server = TestServer::start();
    server.answer(
        "/v1/token",
        Answer::json(
            r#"{"access_token":"ya29.sts","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}"#,
        ),
    );
    let world = World::new();
    let subject = world.write("subject.jwt", "eyJ.subject.token\n");
    let file = world.write(
        "wf.json",
        &workforce_file(&server, serde_json::json!({ "file": subject })),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file),
        ..GoogleSettings::default()
    };
    let token = world.run(&settings).unwrap();
    assert_eq!(token.token.expose(), "ya29.sts");
    assert_eq!(token.who, None);
    let sent = server.received("/v1/token");
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(
        form(&sent[0]),
        pairs(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange"
            ),
            (
                "audience",
                "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp"
            ),
            ("scope", &scopes_text()),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token"
            ),
            ("subject_token", "eyJ.subject.token"),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token"
            ),
            ("options", r#"{"userProject":"billing-project"}"#),
        ])
    );
}

#[test]
fn a_url_sourced_external_account_with_a_client_and_impersonation_makes_three_requests() {
    let server = TestServer::start();
    server.answer(
        "/subject",
        Answer::json(r#"{"access_token":"eyJ.from.url"}"#),
    );
    server.answer("/v1/token", token_answer("ya29.federated", 3600));
    let impersonate =
        "/v1/projects/-/serviceAccounts/gke@p.iam.gserviceaccount.com:generateAccessToken";
    server.answer(
        impersonate,
        Answer::json(r#"{"accessToken":"ya29.impersonated","expireTime":"2026-11-28T12:30:00Z"}"#),
    );
    let world = World::new();
    let file = world.write(
        "wl.json",
        &serde_json::json!({
            "type": "external_account",
            "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/gh",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/v1/token", server.base),
            "client_id": "client",
            "client_secret": "secret",
            "workforce_pool_user_project": "ignored-for-a-workload-pool",
            "service_account_impersonation_url": format!("{}{impersonate}", server.base),
            "service_account_impersonation": { "token_lifetime_seconds": 1800 },
            "credential_source": {
                "url": format!("{}/subject", server.base),
                "headers": { "Authorization": "Bearer ci-secret" },
                "format": { "type": "json", "subject_token_field_name": "access_token" },
            },
        })
        .to_string(),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file),
        ..GoogleSettings::default()
    };
    let token = world.run(&settings).unwrap();
    assert_eq!(token.token.expose(), "ya29.impersonated");
    assert_eq!(
        token.expires_at,
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 30, 0).unwrap()
    );
    assert_eq!(token.who.as_deref(), Some("gke@p.iam.gserviceaccount.com"));

    let fetched = server.received("/subject");
    assert_eq!(fetched[0].method, "GET");
    assert_eq!(fetched[0].header("authorization"), Some("Bearer ci-secret"));
    let exchanged = server.received("/v1/token");
    assert_eq!(
        exchanged[0].header("authorization"),
        Some("Basic Y2xpZW50OnNlY3JldA==")
    );
    let fields = form(&exchanged[0]);
    assert!(fields.contains(&("subject_token".into(), "eyJ.from.url".into())));
    assert!(!fields.iter().any(|(name, _)| name == "options"));
    let generated = server.received(impersonate);
    assert_eq!(generated[0].method, "POST");
    assert_eq!(
        generated[0].header("authorization"),
        Some("Bearer ya29.federated")
    );
    assert_eq!(
        generated[0].header("content-type"),
        Some("application/json")
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&generated[0].body).unwrap(),
        serde_json::json!({ "scope": DEFAULT_SCOPES, "lifetime": "1800s" })
    );
}

#[cfg(unix)]
#[test]
fn an_executable_sourced_external_account_runs_only_when_allowed_and_gets_googles_variables() {
    let server = TestServer::start();
    server.answer("/v1/token", token_answer("ya29.exe", 3600));
    let mut world = World::new();
    let seen = world.dir.path().join("seen");
    let script = world.script(
        "exe/token.sh",
        &format!(
            "echo \"$GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE|$GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE|$GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE|$1\" > {}\n\
             echo '{{\"version\":1,\"success\":true,\"token_type\":\"urn:ietf:params:oauth:token-type:id_token\",\"id_token\":\"eyJ.exe\",\"expiration_time\":{}}}'",
            seen.display(),
            now().timestamp() + 600
        ),
    );
    let file = world.write(
        "exe.json",
        &workforce_file(
            &server,
            serde_json::json!({ "executable": { "command": format!("{} --flag", script.display()), "timeout_millis": 5000 } }),
        ),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file.clone()),
        ..GoogleSettings::default()
    };
    let err = world.run(&settings).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert_eq!(
        one_line(&err),
        format!(
            "the external account {} (--google-credentials) runs an executable for its subject token, which Google's libraries do only when GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1; set it (the kubeconfig stanza's env) if you trust that file",
            file.display()
        )
    );
    assert_eq!(server.hits("/v1/token"), 0);

    world.set("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1");
    let token = world.run(&settings).unwrap();
    assert_eq!(token.token.expose(), "ya29.exe");
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp|urn:ietf:params:oauth:token-type:id_token|0|--flag"
    );
    assert!(
        form(&server.received("/v1/token")[0])
            .contains(&("subject_token".into(), "eyJ.exe".into()))
    );
}

#[test]
fn an_impersonated_service_account_file_trades_the_users_token_at_the_iam_credentials_api() {
    let server = TestServer::start();
    server.answer("/token", token_answer("ya29.source", 3600));
    let path =
        "/v1/projects/-/serviceAccounts/target@p.iam.gserviceaccount.com:generateAccessToken";
    server.answer(
        path,
        Answer::json(r#"{"accessToken":"ya29.target","expireTime":"2026-11-28T13:00:00Z"}"#),
    );
    let world = World::new();
    let file = world.write(
        "imp.json",
        &serde_json::json!({
            "type": "impersonated_service_account",
            "service_account_impersonation_url": format!("{}{path}", server.base),
            "delegates": ["projects/-/serviceAccounts/middle@p.iam.gserviceaccount.com"],
            "source_credentials": serde_json::from_str::<serde_json::Value>(&user_file(&server, "")).unwrap(),
        })
        .to_string(),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file),
        ..GoogleSettings::default()
    };
    let token = world.run(&settings).unwrap();
    assert_eq!(token.token.expose(), "ya29.target");
    assert_eq!(
        token.who.as_deref(),
        Some("target@p.iam.gserviceaccount.com")
    );
    let generated = server.received(path);
    assert_eq!(
        generated[0].header("authorization"),
        Some("Bearer ya29.source")
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&generated[0].body).unwrap(),
        serde_json::json!({
            "scope": DEFAULT_SCOPES,
            "lifetime": "3600s",
            "delegates": ["projects/-/serviceAccounts/middle@p.iam.gserviceaccount.com"],
        })
    );
}

#[test]
fn a_credential_file_of_an_unknown_kind_or_unreadable_or_missing_is_an_input_error() {
    let mut world = World::new();
    let file = world.write("gdch.json", r#"{"type":"gdch_service_account"}"#);
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let err = world.run(&adc_settings()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert_eq!(
        one_line(&err),
        format!(
            "the Google credential file {} (GOOGLE_APPLICATION_CREDENTIALS) has type \"gdch_service_account\", which kubecred does not read (it reads authorized_user, service_account, external_account and impersonated_service_account); use a credential of one of those kinds, e.g. `gcloud auth application-default login`",
            file.display()
        )
    );

    let missing = world.dir.path().join("nowhere.json");
    world.set(
        "GOOGLE_APPLICATION_CREDENTIALS",
        missing.display().to_string(),
    );
    let err = world.run(&adc_settings()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert_eq!(
        one_line(&err),
        format!(
            "cannot read the Google credential file {} (GOOGLE_APPLICATION_CREDENTIALS): No such file or directory (os error 2); check the path",
            missing.display()
        )
    );

    let garbage = world.write("garbage.json", "not json");
    world.set(
        "GOOGLE_APPLICATION_CREDENTIALS",
        garbage.display().to_string(),
    );
    let err = world.run(&adc_settings()).unwrap_err();
    assert_eq!(
        one_line(&err),
        format!(
            "the Google credential file {} (GOOGLE_APPLICATION_CREDENTIALS) is not a JSON credential file (line 1, column 2); check the path, or create it again (`gcloud auth application-default login`)",
            garbage.display()
        )
    );
}

#[test]
fn the_metadata_server_named_by_gce_metadata_host_gives_the_token_and_the_email() {
    let server = TestServer::start();
    let token_path = "/computeMetadata/v1/instance/service-accounts/default/token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform%2Chttps%3A%2F%2Fwww.googleapis.com%2Fauth%2Fuserinfo.email";
    server.answer(
        token_path,
        Answer::json(r#"{"access_token":"ya29.gce","expires_in":3000,"token_type":"Bearer"}"#)
            .header("Metadata-Flavor", "Google"),
    );
    server.answer(
        "/computeMetadata/v1/instance/service-accounts/default/email",
        Answer::with(200, "node@p.iam.gserviceaccount.com").header("Metadata-Flavor", "Google"),
    );
    let mut world = World::new();
    world.set(
        "GCE_METADATA_HOST",
        server.base.trim_start_matches("http://"),
    );
    let token = world.run(&adc_settings()).unwrap();
    assert_eq!(token.token.expose(), "ya29.gce");
    assert_eq!(token.expires_at, now() + chrono::Duration::seconds(3000));
    assert_eq!(token.who.as_deref(), Some("node@p.iam.gserviceaccount.com"));
    let sent = server.received(token_path);
    assert_eq!(sent[0].method, "GET");
    assert_eq!(sent[0].header("metadata-flavor"), Some("Google"));
}

#[test]
fn a_metadata_server_that_does_not_answer_is_an_outage_within_its_bound() {
    // A port that accepts nothing: bound and closed at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut world = World::new();
    world.set("GCE_METADATA_HOST", format!("127.0.0.1:{port}"));
    let started = std::time::Instant::now();
    let err = world.run(&adc_settings()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(is_transient(&err));
    let line = one_line(&err);
    let prefix = format!(
        "asking the metadata server at 127.0.0.1:{port} (GCE_METADATA_HOST) for the token: "
    );
    assert!(line.starts_with(&prefix), "{line}");
    assert!(
        line.ends_with("; check GCE_METADATA_HOST, or that this machine has a metadata server"),
        "{line}"
    );
}

#[cfg(unix)]
#[test]
fn gcloud_config_helper_gives_its_token_and_account_as_gke_gcloud_auth_plugin_reads_them() {
    let mut world = World::new();
    let args = world.dir.path().join("args");
    world.script(
        "bin/gcloud",
        &format!(
            "echo \"$@\" > {}\ncat <<'EOF'\n{{\"configuration\":{{\"active_configuration\":\"default\",\"properties\":{{\"core\":{{\"account\":\"me@example.com\",\"project\":\"p\"}}}}}},\"credential\":{{\"access_token\":\"ya29.gcloud\",\"token_expiry\":\"2026-11-28T12:59:00Z\"}},\"sentinels\":{{\"config_sentinel\":\"/x\"}}}}\nEOF",
            args.display()
        ),
    );
    // With no ADC file and no metadata server, the chain ends at gcloud.
    let token = world.run(&adc_settings()).unwrap();
    assert_eq!(token.token.expose(), "ya29.gcloud");
    assert_eq!(
        token.expires_at,
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 59, 0).unwrap()
    );
    assert_eq!(token.who.as_deref(), Some("me@example.com"));
    assert_eq!(
        std::fs::read_to_string(&args).unwrap().trim(),
        "config config-helper --format=json"
    );

    // gcloud's own credentials, whatever ADC holds, with the plugin's flags.
    let server = TestServer::start();
    let file = world.write("adc.json", &user_file(&server, "other@example.com"));
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let settings = GoogleSettings {
        source: Source::Gcloud,
        gcloud: GcloudArgs {
            account: Some("me@example.com".into()),
            project: Some("p".into()),
            impersonate_service_account: Some("sa@p.iam.gserviceaccount.com".into()),
        },
        ..GoogleSettings::default()
    };
    let token = world.run(&settings).unwrap();
    assert_eq!(token.who.as_deref(), Some("sa@p.iam.gserviceaccount.com"));
    assert_eq!(server.hits("/token"), 0);
    assert_eq!(
        std::fs::read_to_string(&args).unwrap().trim(),
        "config config-helper --format=json --project=p --account=me@example.com --impersonate-service-account=sa@p.iam.gserviceaccount.com"
    );
}

#[cfg(unix)]
#[test]
fn gclouds_refusal_is_one_line_that_says_to_log_in() {
    let world = World::new();
    world.script(
        "bin/gcloud",
        "echo 'WARNING: something' >&2\necho 'ERROR: (gcloud.config.config-helper) There was a problem refreshing your current auth tokens: Reauthentication failed. cannot prompt during non-interactive execution.' >&2\nexit 1",
    );
    let settings = GoogleSettings {
        source: Source::Gcloud,
        ..GoogleSettings::default()
    };
    let err = world.run(&settings).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert_eq!(
        one_line(&err),
        "`gcloud config config-helper --format=json` failed: ERROR: (gcloud.config.config-helper) There was a problem refreshing your current auth tokens: Reauthentication failed. cannot prompt during non-interactive execution.; run `gcloud auth login`"
    );
}

#[test]
fn a_login_id_token_is_exchanged_at_sts_with_the_fields_of_a_workforce_external_account() {
    let server = TestServer::start();
    server.answer("/v1/token", token_answer("ya29.workforce", 3600));
    let world = World::new();
    let settings = WorkforceSettings {
        provider: "//iam.googleapis.com/locations/global/workforcePools/pool/providers/kubecred"
            .into(),
        user_project: Some("quota-project".into()),
        sts_url: Url::parse(&format!("{}/v1/token", server.base)).unwrap(),
        scopes: vec![],
    };
    let token = world.exchange(&settings, "eyJ.login.id").unwrap();
    assert_eq!(token.token.expose(), "ya29.workforce");
    assert_eq!(token.expires_at, now() + chrono::Duration::seconds(3600));
    assert_eq!(
        form(&server.received("/v1/token")[0]),
        pairs(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange"
            ),
            (
                "audience",
                "//iam.googleapis.com/locations/global/workforcePools/pool/providers/kubecred"
            ),
            ("scope", &scopes_text()),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token"
            ),
            ("subject_token", "eyJ.login.id"),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token"
            ),
            ("options", r#"{"userProject":"quota-project"}"#),
        ])
    );
}

#[test]
fn a_refused_exchange_names_the_provider_and_googles_error_but_never_the_token() {
    let server = TestServer::start();
    server.answer(
        "/v1/token",
        Answer::with(
            400,
            r#"{"error":"invalid_grant","error_description":"The audience in ID Token [kubectl] does not match the expected audience."}"#,
        ),
    );
    let world = World::new();
    let settings = WorkforceSettings {
        provider: "//iam.googleapis.com/locations/global/workforcePools/pool/providers/kubecred"
            .into(),
        user_project: None,
        sts_url: Url::parse(&format!("{}/v1/token", server.base)).unwrap(),
        scopes: vec![],
    };
    let err = world.exchange(&settings, "eyJ.secret.login").unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(!is_transient(&err));
    assert_eq!(
        one_line(&err),
        format!(
            "the workforce pool exchange of kubecred's login at {}/v1/token answered HTTP 400 Bad Request: invalid_grant (The audience in ID Token [kubectl] does not match the expected audience.); check that the pool provider //iam.googleapis.com/locations/global/workforcePools/pool/providers/kubecred trusts this token (its issuer, audience and attribute conditions)",
            server.base
        )
    );
    assert!(
        !form(&server.received("/v1/token")[0])
            .iter()
            .any(|(name, _)| name == "options")
    );
}

#[test]
fn workforce_audiences_are_told_from_workload_ones() {
    use super::credential_file::is_workforce_pool;
    assert!(is_workforce_pool(
        "//iam.googleapis.com/locations/global/workforcePools/p/providers/x"
    ));
    assert!(!is_workforce_pool(
        "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x"
    ));
    assert!(!is_workforce_pool(
        "//iam.googleapis.com/locations//workforcePools/p"
    ));
}

#[test]
fn an_impersonation_url_names_its_service_account() {
    assert_eq!(
        endpoints::impersonated_email(
            "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken"
        )
        .as_deref(),
        Some("a@b.iam.gserviceaccount.com")
    );
    assert_eq!(endpoints::impersonated_email("https://example.com/x"), None);
}

#[test]
fn the_gcloud_source_without_gcloud_says_what_to_install() {
    let settings = GoogleSettings {
        source: Source::Gcloud,
        ..GoogleSettings::default()
    };
    let err = World::new().run(&settings).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert_eq!(
        one_line(&err),
        "gcloud is not on PATH, and these settings take gcloud's own credentials (as gke-gcloud-auth-plugin does); install the Google Cloud CLI, or use application default credentials (`gcloud auth application-default login`, or --google-credentials)"
    );
}

#[test]
fn a_refused_impersonation_names_the_role_it_needs_and_an_overloaded_sts_is_an_outage() {
    let server = TestServer::start();
    let path = "/v1/projects/-/serviceAccounts/gke@p.iam.gserviceaccount.com:generateAccessToken";
    server.answer("/v1/token", token_answer("ya29.federated", 3600));
    server.answer(
        path,
        Answer::with(
            403,
            r#"{"error":{"code":403,"message":"Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).","status":"PERMISSION_DENIED"}}"#,
        ),
    );
    let world = World::new();
    let subject = world.write("subject.jwt", "eyJ.subject");
    let file = world.write(
        "wl.json",
        &serde_json::json!({
            "type": "external_account",
            "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/v1/token", server.base),
            "service_account_impersonation_url": format!("{}{path}", server.base),
            "credential_source": { "file": subject },
        })
        .to_string(),
    );
    let settings = GoogleSettings {
        credentials_file: Some(file.clone()),
        ..GoogleSettings::default()
    };
    let err = world.run(&settings).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(!is_transient(&err));
    assert_eq!(
        one_line(&err),
        format!(
            "the impersonation of gke@p.iam.gserviceaccount.com by the external account {} (--google-credentials) at {}{path} answered HTTP 403 Forbidden: PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).; the source identity needs the Service Account Token Creator role (iam.serviceAccounts.getAccessToken) on that service account",
            file.display(),
            server.base
        )
    );
    assert!(!one_line(&err).contains("ya29.federated"));

    server.answer("/v1/token", Answer::with(503, "<html>down</html>"));
    let err = world.run(&settings).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(is_transient(&err));
    assert_eq!(
        one_line(&err),
        format!(
            "the token exchange of the external account {} (--google-credentials) at {}/v1/token answered HTTP 503 Service Unavailable; Google is failing or overloaded, try again later",
            file.display(),
            server.base
        )
    );
}
