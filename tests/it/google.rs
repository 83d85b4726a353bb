//! kubecred's Google module beside Google's own library: for the same credential file and
//! environment, google-auth (PyPI, `google.auth.default(scopes)` and a refresh) and
//! `kubecred::clouds::google::token` talk to one stand-in of Google's endpoints on loopback
//! (tests/support/google/reference.py), which records every request; the requests that carry
//! the credential are compared field by field (method, path and query, form or JSON fields, the
//! headers that matter). Where the two differ on purpose, the test says so and checks both.
//! Then kubectl end to end through `--grant-type google`, against an API stand-in that asks the
//! Google stand-in whose tokens they are, as GKE asks Google.

use crate::support::{
    KubeconfigSpec, Need, RunExt, TestEnv, Testbed, V1, cache_token_files, expire_cached_tokens,
    have, repo_root, run_all_at_once,
};
use kubecred::clouds::CloudToken;
use kubecred::clouds::google::{Context, DEFAULT_SCOPES, GoogleSettings, Source, token};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn python() -> PathBuf {
    repo_root().join("target/google-venv/bin/python")
}

fn script() -> PathBuf {
    repo_root().join("tests/support/google/reference.py")
}

/// The stand-in server and a world for both clients: a temporary home, files, variables.
struct World {
    dir: tempfile::TempDir,
    child: Child,
    base: String,
    log: PathBuf,
    vars: HashMap<String, String>,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl World {
    fn start() -> World {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let port_file = dir.path().join("port");
        let child = Command::new(python())
            .arg(script())
            .arg("serve")
            .arg(&log)
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the stand-in did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        let mut vars = HashMap::new();
        vars.insert(
            "HOME".to_string(),
            dir.path().join("home").display().to_string(),
        );
        // The system's tools (an executable credential source's script uses them), and no gcloud.
        vars.insert(
            "PATH".to_string(),
            format!("{}:/usr/bin:/bin", dir.path().join("bin").display()),
        );
        // Neither client may probe the real link-local metadata address.
        vars.insert("NO_GCE_CHECK".to_string(), "true".to_string());
        World {
            base: format!("http://127.0.0.1:{}", port.trim()),
            dir,
            child,
            log,
            vars,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn set(&mut self, name: &str, value: impl Into<String>) {
        self.vars.insert(name.to_string(), value.into());
    }

    /// The requests received since the last call.
    fn take(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        std::fs::write(&self.log, "").unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// google-auth's token for these variables, and the requests it sent.
    fn reference(&self) -> (String, Vec<Value>) {
        self.take();
        let mut command = Command::new(python());
        // google-auth keeps nothing between runs; the output file's cached token is not used.
        command
            .arg(script())
            .arg("adc")
            .args(DEFAULT_SCOPES)
            .env_clear();
        command.envs(&self.vars);
        command.env(
            "REFERENCE_GOOGLE_OAUTH2_TOKEN_ENDPOINT",
            format!("{}/token", self.base),
        );
        command.env(
            "REFERENCE_GOOGLE_IAM_ENDPOINT",
            format!(
                "{}/v1/projects/-/serviceAccounts/{{}}:generateAccessToken",
                self.base
            ),
        );
        // google.auth.default() otherwise asks Cloud Resource Manager for a workforce pool's
        // project (with the token just obtained); kubecred needs no project.
        command.env("GOOGLE_CLOUD_PROJECT", "reference-project");
        // The venv's python finds its own libraries; PATH stays the world's.
        let output = command.stdin(Stdio::null()).output().unwrap();
        assert!(
            output.status.success(),
            "google-auth failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
        (token, self.take())
    }

    /// kubecred's token for the same variables, and the requests it sent.
    fn kubecred(&self) -> (String, Vec<Value>) {
        let (issued, requests) = self.kubecred_with(&GoogleSettings::default());
        (issued.token.expose().to_string(), requests)
    }

    /// kubecred's token for `settings` and these variables, and the requests it sent.
    fn kubecred_with(&self, settings: &GoogleSettings) -> (CloudToken, Vec<Value>) {
        self.take();
        let vars = self.vars.clone();
        let command_env: Vec<(String, String)> = vars.clone().into_iter().collect();
        let env = move |name: &str| vars.get(name).cloned();
        let home = self.path("home");
        let http = kubecred::config::HttpSettings {
            tls: Default::default(),
            timeout: Duration::from_secs(10),
            proxy: Default::default(),
            request_headers: vec![],
        };
        let cx = Context {
            env: &env,
            home: Some(&home),
            now: chrono::Utc::now(),
            http: &http,
            retry_window: Duration::ZERO,
            command_env: Some(&command_env),
        };
        let issued = token(settings, &cx).unwrap();
        (issued, self.take())
    }

    /// A command with exactly the world's variables.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env_clear().envs(&self.vars).stdin(Stdio::null());
        command
    }

    /// gke-gcloud-auth-plugin's ExecCredential for `args`, and the requests made meanwhile.
    fn plugin(&self, args: &[&str]) -> (Value, Vec<Value>) {
        self.take();
        let output = self
            .command("gke-gcloud-auth-plugin")
            .args(args)
            .env("KUBECONFIG", self.path("kubeconfig"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "gke-gcloud-auth-plugin failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        (serde_json::from_slice(&output.stdout).unwrap(), self.take())
    }

    /// gcloud logged in offline, in a configuration directory of the test's own: a service account
    /// activated from a key whose token endpoint is the stand-in (gcloud's `auth/token_host`).
    fn gcloud_logged_in(&mut self) {
        let key = self.service_account_key();
        self.set("CLOUDSDK_CONFIG", self.path("gcloud").display().to_string());
        self.set("CLOUDSDK_CORE_DISABLE_PROMPTS", "1");
        self.set("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1");
        self.set("CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "1");
        let token_host = format!("{}/token", self.base);
        let key_arg = format!("--key-file={}", key.display());
        for args in [
            vec!["auth", "activate-service-account", key_arg.as_str()],
            vec!["config", "set", "auth/token_host", token_host.as_str()],
        ] {
            let output = self.command("gcloud").args(&args).output().unwrap();
            assert!(
                output.status.success(),
                "gcloud {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        self.take();
    }

    /// A service account key file whose token_uri is the stand-in.
    fn service_account_key(&self) -> PathBuf {
        let key =
            std::fs::read_to_string(repo_root().join("tests/support/google/test-key.pem")).unwrap();
        self.write(
            "sa.json",
            &serde_json::json!({
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "kid-1",
                "private_key": key,
                "client_email": "deployer@p.iam.gserviceaccount.com",
                "client_id": "123",
                "token_uri": format!("{}/token", self.base),
            })
            .to_string(),
        )
    }
}

/// A request as compared: method, path with query, the headers that matter, the form fields
/// or the JSON body.
#[derive(Debug, PartialEq)]
struct Seen {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    form: BTreeMap<String, String>,
    json: Option<Value>,
}

fn seen(request: &Value) -> Seen {
    let headers = ["content-type", "authorization", "metadata-flavor"]
        .iter()
        .filter_map(|name| {
            request["headers"][name]
                .as_str()
                .map(|value| (name.to_string(), value.to_string()))
        })
        .collect();
    let body = request["body"].as_str().unwrap_or("");
    let (form, json) = match request["headers"]["content-type"].as_str() {
        Some(kind) if kind.starts_with("application/x-www-form-urlencoded") => (
            url::form_urlencoded::parse(body.as_bytes())
                .into_owned()
                .collect(),
            None,
        ),
        _ => (BTreeMap::new(), serde_json::from_str(body).ok()),
    };
    Seen {
        method: request["method"].as_str().unwrap().to_string(),
        path: request["path"].as_str().unwrap().to_string(),
        headers,
        form,
        json,
    }
}

fn on(requests: &[Value], path_start: &str) -> Vec<Seen> {
    requests
        .iter()
        .filter(|request| request["path"].as_str().unwrap().starts_with(path_start))
        .map(seen)
        .collect()
}

/// The header and claims of a JWT, unverified (the test compares what was signed).
fn jwt_parts(jwt: &str) -> (Value, Value) {
    use base64::Engine;
    let decode = |part: &str| -> Value {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    let mut parts = jwt.split('.');
    (decode(parts.next().unwrap()), decode(parts.next().unwrap()))
}

fn user_file(base: &str) -> Value {
    serde_json::json!({
        "type": "authorized_user",
        "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "csecret",
        "refresh_token": "1//refresh",
        "token_uri": format!("{base}/token"),
        "universe_domain": "googleapis.com",
        "account": "",
    })
}

#[test]
fn google_authorized_user_sends_what_google_auth_sends() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let file = world.write("adc.json", &user_file(&world.base).to_string());
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (theirs, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!((theirs.as_str(), ours.as_str()), ("ya29.user", "ya29.user"));
    let (theirs, ours) = (on(&their_requests, "/token"), on(&our_requests, "/token"));
    assert_eq!(theirs.len(), 1);
    assert_eq!(ours, theirs);
    assert_eq!(ours[0].form["grant_type"], "refresh_token");
}

#[test]
fn google_service_account_signs_what_google_auth_signs() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let key =
        std::fs::read_to_string(repo_root().join("tests/support/google/test-key.pem")).unwrap();
    let file = world.write(
        "sa.json",
        &serde_json::json!({
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "kid-1",
            "private_key": key,
            "client_email": "deployer@p.iam.gserviceaccount.com",
            "client_id": "123",
            "token_uri": format!("{}/token", world.base),
        })
        .to_string(),
    );
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (_, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!(ours, "ya29.user");
    let (mut theirs, mut ours) = (on(&their_requests, "/token"), on(&our_requests, "/token"));
    assert_eq!((theirs.len(), ours.len()), (1, 1));
    let their_assertion = theirs[0].form.remove("assertion").unwrap();
    let our_assertion = ours[0].form.remove("assertion").unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(
        ours[0].form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    let (their_header, their_claims) = jwt_parts(&their_assertion);
    let (our_header, our_claims) = jwt_parts(&our_assertion);
    assert_eq!(our_header, their_header);
    for claim in ["iss", "scope", "aud"] {
        assert_eq!(our_claims[claim], their_claims[claim], "{claim}");
    }
    let lifetime =
        |claims: &Value| claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(
        (lifetime(&our_claims), lifetime(&their_claims)),
        (3600, 3600)
    );
}

/// A workforce external account whose subject token is in `source`.
fn workforce_file(world: &World, source: Value, impersonate: bool) -> PathBuf {
    let mut file = serde_json::json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "token_url": format!("{}/v1/token", world.base),
        "workforce_pool_user_project": "billing-project",
        "credential_source": source,
    });
    if impersonate {
        file["service_account_impersonation_url"] = Value::String(format!(
            "{}/v1/projects/-/serviceAccounts/gke@p.iam.gserviceaccount.com:generateAccessToken",
            world.base
        ));
    }
    world.write("external.json", &file.to_string())
}

/// google-auth percent-encodes `options`' JSON (with a space after each colon) before
/// form-encoding it; Google's Go library and kubecred form-encode compact JSON once. STS reads
/// both: compared as the JSON they carry.
fn decoded_options(mut seen: Vec<Seen>) -> Vec<Seen> {
    for request in &mut seen {
        if let Some(options) = request.form.get_mut("options") {
            let text = if options.starts_with('%') {
                percent_encoding::percent_decode_str(options)
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            } else {
                options.clone()
            };
            *options = serde_json::from_str::<Value>(&text).unwrap().to_string();
        }
    }
    seen
}

#[test]
fn google_external_account_file_source_exchanges_what_google_auth_exchanges() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    // No trailing newline: google-auth sends a text file as it is, kubecred (like Google's Go
    // library) trims it.
    let subject = world.write("subject.jwt", "eyJ.subject.token");
    let file = workforce_file(&world, serde_json::json!({ "file": subject }), false);
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (theirs, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!((theirs.as_str(), ours.as_str()), ("ya29.sts", "ya29.sts"));
    let theirs = decoded_options(on(&their_requests, "/v1/token"));
    let ours = decoded_options(on(&our_requests, "/v1/token"));
    assert_eq!(ours, theirs);
    assert_eq!(
        ours[0].form["options"],
        r#"{"userProject":"billing-project"}"#
    );
    assert_eq!(ours[0].form["subject_token"], "eyJ.subject.token");
}

#[test]
fn google_external_account_url_source_with_impersonation_sends_what_google_auth_sends() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let source = serde_json::json!({
        "url": format!("{}/subject", world.base),
        "headers": { "Metadata": "True" },
        "format": { "type": "json", "subject_token_field_name": "id_token" },
    });
    let file = workforce_file(&world, source, true);
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (theirs, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!(
        (theirs.as_str(), ours.as_str()),
        ("ya29.impersonated", "ya29.impersonated")
    );
    let fetch = |requests: &[Value]| {
        requests
            .iter()
            .filter(|request| request["path"] == "/subject")
            .map(|request| {
                (
                    request["method"].clone(),
                    request["headers"]["metadata"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(fetch(&our_requests), fetch(&their_requests));
    assert_eq!(fetch(&our_requests).len(), 1);
    assert_eq!(
        decoded_options(on(&our_requests, "/v1/token")),
        decoded_options(on(&their_requests, "/v1/token"))
    );
    assert_eq!(
        on(&our_requests, "/v1/token")[0].form["scope"],
        "https://www.googleapis.com/auth/iam"
    );
    let generate = "/v1/projects/-/serviceAccounts/";
    let mut theirs = on(&their_requests, generate);
    let ours = on(&our_requests, generate);
    // google-auth sends `"delegates": null`; kubecred, as Google's Go library, leaves it out.
    let their_json = theirs[0].json.as_mut().unwrap().as_object_mut().unwrap();
    assert_eq!(their_json.remove("delegates"), Some(Value::Null));
    assert_eq!(ours, theirs);
    assert_eq!(ours[0].headers["authorization"], "Bearer ya29.sts");
}

#[cfg(unix)]
#[test]
fn google_external_account_executable_source_runs_as_google_auth_runs_it() {
    use std::os::unix::fs::PermissionsExt;
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let seen = world.path("executable-saw");
    let exe = world.write(
        "token.sh",
        &format!(
            "#!/bin/sh\necho \"$GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE|$GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE|$GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE|$*\" >> {}\n\
             echo \"{{\\\"version\\\":1,\\\"success\\\":true,\\\"token_type\\\":\\\"urn:ietf:params:oauth:token-type:id_token\\\",\\\"id_token\\\":\\\"eyJ.exe\\\",\\\"expiration_time\\\":$(( $(date +%s) + 600 ))}}\"\n",
            seen.display()
        ),
    );
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = serde_json::json!({ "executable": { "command": format!("{} --flag", exe.display()), "timeout_millis": 5000 } });
    let file = workforce_file(&world, source, false);
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    world.set("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1");
    let (_, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!(ours, "ya29.sts");
    assert_eq!(
        decoded_options(on(&our_requests, "/v1/token")),
        decoded_options(on(&their_requests, "/v1/token"))
    );
    let runs = std::fs::read_to_string(&seen).unwrap();
    let runs: Vec<&str> = runs.lines().collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0], runs[1]);
    assert_eq!(
        runs[0],
        "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp|urn:ietf:params:oauth:token-type:id_token|0|--flag"
    );
}

#[test]
fn google_impersonated_service_account_sends_what_google_auth_sends() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let file = world.write(
        "impersonated.json",
        &serde_json::json!({
            "type": "impersonated_service_account",
            "service_account_impersonation_url": format!(
                "{}/v1/projects/-/serviceAccounts/target@p.iam.gserviceaccount.com:generateAccessToken",
                world.base
            ),
            "delegates": ["projects/-/serviceAccounts/middle@p.iam.gserviceaccount.com"],
            "source_credentials": user_file(&world.base),
        })
        .to_string(),
    );
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (theirs, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!(
        (theirs.as_str(), ours.as_str()),
        ("ya29.impersonated", "ya29.impersonated")
    );
    assert_eq!(on(&our_requests, "/token"), on(&their_requests, "/token"));
    let generate = "/v1/projects/-/serviceAccounts/";
    let ours = on(&our_requests, generate);
    assert_eq!(ours, on(&their_requests, generate));
    assert_eq!(ours[0].headers["authorization"], "Bearer ya29.user");
}

#[test]
fn google_metadata_server_is_asked_for_what_google_auth_asks() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let mut world = World::start();
    let host = world.base.trim_start_matches("http://").to_string();
    world.vars.remove("NO_GCE_CHECK");
    world.set("GCE_METADATA_HOST", host.clone());
    // google-auth probes GCE_METADATA_IP (not the host) before it believes in a metadata server.
    world.set("GCE_METADATA_IP", host);
    let (theirs, their_requests) = world.reference();
    let (ours, our_requests) = world.kubecred();
    assert_eq!((theirs.as_str(), ours.as_str()), ("ya29.gce", "ya29.gce"));
    let token_path = "/computeMetadata/v1/instance/service-accounts/default/token";
    let ours = on(&our_requests, token_path);
    assert_eq!(ours, on(&their_requests, token_path));
    assert_eq!(ours[0].headers["metadata-flavor"], "Google");
    assert_eq!(
        ours[0].path,
        format!(
            "{token_path}?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform%2Chttps%3A%2F%2Fwww.googleapis.com%2Fauth%2Fuserinfo.email"
        )
    );
}

// ---- beside gke-gcloud-auth-plugin (Go, on Google's Go library) and the real gcloud ----

#[test]
fn google_gcloud_source_gives_what_gke_gcloud_auth_plugin_gives() {
    if !have(Need::GoogleAuth) || !have(Need::Gcloud) {
        return;
    }
    let mut world = World::start();
    world.gcloud_logged_in();
    let (credential, _) = world.plugin(&[]);
    let settings = GoogleSettings {
        source: Source::Gcloud,
        ..GoogleSettings::default()
    };
    let (ours, _) = world.kubecred_with(&settings);
    assert_eq!(credential["status"]["token"], "ya29.user");
    assert_eq!(ours.token.expose(), "ya29.user");
    let theirs = chrono::DateTime::parse_from_rfc3339(
        credential["status"]["expirationTimestamp"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ours.expires_at, theirs);
    assert_eq!(
        ours.who.as_deref(),
        Some("deployer@p.iam.gserviceaccount.com")
    );
}

#[test]
fn google_adc_sends_what_gke_gcloud_auth_plugins_go_library_sends() {
    if !have(Need::GoogleAuth) || !have(Need::Gcloud) {
        return;
    }
    // A user's refresh token: Google's Go library, too, honours the file's token_uri.
    let mut world = World::start();
    let file = world.write("adc.json", &user_file(&world.base).to_string());
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (credential, go_requests) = world.plugin(&["--use_application_default_credentials"]);
    let (ours, our_requests) = world.kubecred();
    assert_eq!(credential["status"]["token"], "ya29.user");
    assert_eq!(ours, "ya29.user");
    let theirs = on(&go_requests, "/token");
    assert_eq!(theirs.len(), 1);
    assert_eq!(on(&our_requests, "/token"), theirs);

    // A service account's key: the same grant, the JWT signed for the file's token_uri.
    let file = world.service_account_key();
    world.set("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    let (_, go_requests) = world.plugin(&["--use_application_default_credentials"]);
    let (_, our_requests) = world.kubecred();
    let (mut theirs, mut ours) = (on(&go_requests, "/token"), on(&our_requests, "/token"));
    let their_assertion = theirs[0].form.remove("assertion").unwrap();
    let our_assertion = ours[0].form.remove("assertion").unwrap();
    // Go's client sets no Content-Type charset either; compare the rest as sent.
    assert_eq!(ours, theirs);
    let (their_header, their_claims) = jwt_parts(&their_assertion);
    let (our_header, our_claims) = jwt_parts(&our_assertion);
    assert_eq!(our_header, their_header);
    for claim in ["iss", "scope", "aud"] {
        assert_eq!(our_claims[claim], their_claims[claim], "{claim}");
    }
    assert_eq!(our_claims["aud"], format!("{}/token", world.base));
}

// ---- End to end: kubectl through `kubecred get-token --grant-type google` ----------------------
//
// The test bed's API stand-in authenticates bearer tokens as GKE does, by asking Google whose
// token it is (webhook token authentication: the stand-in's /review, which knows the tokens its
// /e2e/token issued). kubecred takes a service account key whose token_uri is that endpoint.

/// A service account key file for `email` whose token_uri is the stand-in's end-to-end endpoint.
fn e2e_key(world: &World, email: &str) -> PathBuf {
    let key =
        std::fs::read_to_string(repo_root().join("tests/support/google/test-key.pem")).unwrap();
    world.write(
        "e2e-sa.json",
        &serde_json::json!({
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "kid-1",
            "private_key": key,
            "client_email": email,
            "client_id": "123",
            "token_uri": format!("{}/e2e/token", world.base),
        })
        .to_string(),
    )
}

/// The requests for new tokens the stand-in has received since `world.take()` was last called.
fn token_requests(world: &World) -> usize {
    world
        .take()
        .iter()
        .filter(|request| request["path"] == "/e2e/token")
        .count()
}

/// The bed, a test environment and a kubeconfig whose user runs `--grant-type google` with
/// `key`, against an API stand-in that asks the Google stand-in whose tokens they are.
fn gke(world: &World, key: &std::path::Path) -> (Testbed, TestEnv, PathBuf) {
    let bed =
        Testbed::start_with(serde_json::json!({"apiWebhook": format!("{}/review", world.base)}));
    let env = TestEnv::new();
    let spec = KubeconfigSpec::new(
        V1,
        vec![
            "get-token".into(),
            "--grant-type=google".into(),
            format!("--google-credentials={}", key.display()),
        ],
    );
    let kubeconfig = env.kubeconfig(&bed, spec);
    (bed, env, kubeconfig)
}

const WHOAMI: [&str; 4] = [
    "auth",
    "whoami",
    "-o",
    "jsonpath={.status.userInfo.username}",
];

#[test]
fn kubectl_reaches_a_gke_stand_in_with_a_service_accounts_token_once_then_from_the_cache() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let world = World::start();
    let email = "ci-deployer@p.iam.gserviceaccount.com";
    let key = e2e_key(&world, email);
    let (_bed, env, kubeconfig) = gke(&world, &key);
    world.take();
    let run = env.kubectl(&kubeconfig, &WHOAMI).run().success();
    assert_eq!(run.stdout(), email);
    assert_eq!(token_requests(&world), 1);
    // The next kubectl is answered from the cache: Google is not asked again.
    let run = env.kubectl(&kubeconfig, &WHOAMI).run().success();
    assert_eq!(run.stdout(), email);
    assert_eq!(token_requests(&world), 0);
    // status names the account the cluster sees, and the grant.
    let status = crate::sessions::kubecred_plain(&env, &["status", "--output=json"])
        .run()
        .success()
        .stdout();
    let status: Value = serde_json::from_str(&status).unwrap();
    let entry = &status["entries"][0];
    assert_eq!(entry["subject"], email, "{status}");
    assert_eq!(entry["grant"], "google", "{status}");
}

#[test]
fn parallel_kubectls_with_an_expired_google_token_ask_google_once() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let world = World::start();
    let key = e2e_key(&world, "ci@p.iam.gserviceaccount.com");
    let (_bed, env, kubeconfig) = gke(&world, &key);
    env.kubectl(&kubeconfig, &WHOAMI).run().success();
    assert_eq!(expire_cached_tokens(&env.cache_dir()), 1);
    world.take();
    let answers = run_all_at_once((0..8).map(|_| env.kubectl(&kubeconfig, &WHOAMI)));
    assert!(
        answers.iter().all(|a| a == "ci@p.iam.gserviceaccount.com"),
        "{answers:?}"
    );
    assert_eq!(token_requests(&world), 1);
}

#[test]
fn a_google_credential_file_of_an_unknown_kind_is_one_line_and_nothing_is_cached() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let world = World::start();
    let file = world.write("odd.json", r#"{"type": "gdch_service_account"}"#);
    let env = TestEnv::new();
    let run = env
        .kubecred(&[
            "get-token",
            "--grant-type=google",
            &format!("--google-credentials={}", file.display()),
        ])
        .run()
        .failure(1);
    assert_eq!(
        run.only_kubecred_line(),
        format!(
            "kubecred: error: the Google credential file {} (--google-credentials) has type \"gdch_service_account\", which kubecred does not read (it reads authorized_user, service_account, external_account and impersonated_service_account); use a credential of one of those kinds, e.g. `gcloud auth application-default login`",
            file.display()
        )
    );
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

/// GKE through workforce identity federation from the one kubecred login that also serves an
/// OIDC cluster: one browser login, the login's ID token exchanged at the STS stand-in for the
/// pool principal's token, which the GKE stand-in (by webhook) takes as that principal; the OIDC
/// cluster's token is derived from the same login, with no second browser.
#[test]
fn one_kubecred_login_serves_a_gke_cluster_by_workforce_federation_and_an_oidc_cluster() {
    if !have(Need::GoogleAuth) || !have(Need::Browser) {
        return;
    }
    let world = World::start();
    let oidc_cluster = "https://oidc-cluster.example";
    let bed = Testbed::start_with(serde_json::json!({
        "apiWebhook": format!("{}/review", world.base),
        "audienceApis": [oidc_cluster],
    }));
    let env = TestEnv::new();
    let browser_log = env.dir.path().join("browser.log");
    let login = |extra: &[String]| {
        let mut args = vec![
            "get-token".to_string(),
            format!("--issuer-url={}", bed.issuer),
            format!("--client-id={}", crate::support::PUBLIC_CLIENT),
            "--listen-address=127.0.0.1:0".into(),
            format!("--browser-command={}", crate::support::browser_command()),
            // What the one login asks for on behalf of the OIDC cluster (RFC 8707).
            format!("--login-resource={oidc_cluster}"),
        ];
        args.extend(extra.iter().cloned());
        args
    };
    let gke = login(&[
        "--grant-type=google".into(),
        "--google-workforce-provider=//iam.googleapis.com/locations/global/workforcePools/kubecred-pool/providers/testbed".into(),
        format!("--google-sts-url={}/e2e/sts", world.base),
    ]);
    let mut spec = KubeconfigSpec::new(V1, gke);
    spec.env = vec![(
        "TESTBED_BROWSER_LOG".into(),
        browser_log.display().to_string(),
    )];
    let kubeconfig = env.kubeconfig(&bed, spec);
    let run = env.kubectl(&kubeconfig, &WHOAMI).run().success();
    let principal = run.stdout();
    assert!(
        principal.starts_with(
            "principal://iam.googleapis.com/locations/global/workforcePools/kubecred-pool/subject/"
        ),
        "{principal}"
    );
    assert_eq!(crate::support::browser_launches(&browser_log), 1);
    let exchange = world
        .take()
        .into_iter()
        .find(|request| request["path"] == "/e2e/sts")
        .expect("an STS exchange");
    let form: HashMap<String, String> =
        url::form_urlencoded::parse(exchange["body"].as_str().unwrap().as_bytes())
            .into_owned()
            .collect();
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(
        form["audience"],
        "//iam.googleapis.com/locations/global/workforcePools/kubecred-pool/providers/testbed"
    );
    // The OIDC cluster's token is derived from the same login: no second browser.
    let oidc = login(&[
        "--shared-login".into(),
        format!("--resource={oidc_cluster}"),
    ]);
    let token = env
        .kubecred_owned(&oidc)
        .env("TESTBED_BROWSER_LOG", &browser_log)
        .run()
        .success()
        .token();
    assert_eq!(
        bed.api_status(&bed.audience_api_url(oidc_cluster), &token),
        200
    );
    assert_eq!(crate::support::browser_launches(&browser_log), 1);
}

/// `setup --grant-type google` writes the kubeconfig docs/gke.md shows, kubectl reaches the GKE
/// stand-in through it, and `whoami` names the account the cluster sees.
#[test]
fn setup_writes_a_gke_user_that_kubectl_runs_and_whoami_names_its_account() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let world = World::start();
    let email = "setup@p.iam.gserviceaccount.com";
    let key = e2e_key(&world, email);
    let bed =
        Testbed::start_with(serde_json::json!({"apiWebhook": format!("{}/review", world.base)}));
    let env = TestEnv::new();
    let written = env.dir.path().join("written.yaml");
    let credentials = format!("--google-credentials={}", key.display());
    let run = env
        .kubecred(&[
            "setup",
            "--grant-type=google",
            &credentials,
            "--write-kubeconfig",
            &format!("--kubeconfig={}", written.display()),
            &format!("--server={}", bed.api_server),
            &format!("--cluster-certificate-authority={}", bed.ca_file.display()),
        ])
        .run()
        .success()
        .stderr_contains(&format!("kubecred: the cluster sees this token as {email}"));
    let stdout = run.stdout();
    assert!(stdout.contains("interactiveMode: Never"), "{stdout}");
    assert!(stdout.contains("--grant-type=google"), "{stdout}");
    let whoami = env.kubectl(&written, &WHOAMI).run().success();
    assert_eq!(whoami.stdout(), email);
    let report = env
        .kubecred(&["whoami", "--grant-type=google", &credentials])
        .run()
        .success()
        .stdout();
    assert!(
        report.ends_with(&format!(
            "The cluster sees the token kubectl gets as: {email}\n"
        )),
        "{report}"
    );
}

/// A gke-gcloud-auth-plugin user as gcloud writes it (Application Default Credentials from the
/// stanza's env) reaches the GKE stand-in as the same account before and after
/// `convert-kubeconfig`: the real plugin first, then kubecred.
#[test]
fn a_gke_gcloud_auth_plugin_user_converts_to_the_same_account() {
    if !have(Need::GoogleAuth) || !have(Need::Gcloud) {
        return;
    }
    let world = World::start();
    let email = "convert@p.iam.gserviceaccount.com";
    let key = e2e_key(&world, email);
    let bed =
        Testbed::start_with(serde_json::json!({"apiWebhook": format!("{}/review", world.base)}));
    let env = TestEnv::new();
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::support::kubecred_bin(), bin.join("kubecred")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubeconfig = env.dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gke\n  cluster:\n    server: {api}\n    certificate-authority-data: {ca}\ncontexts:\n- name: gke\n  context: {{cluster: gke, user: gke}}\ncurrent-context: gke\nusers:\n- name: gke\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: gke-gcloud-auth-plugin\n      args: [--use_application_default_credentials]\n      env:\n      - name: GOOGLE_APPLICATION_CREDENTIALS\n        value: {key}\n      installHint: Install gke-gcloud-auth-plugin\n      provideClusterInfo: true\n      interactiveMode: IfAvailable\n",
            api = bed.api_server,
            ca = bed.ca_data,
            key = key.display(),
        ),
    )
    .unwrap();
    let through_the_plugin = env
        .kubectl(&kubeconfig, &WHOAMI)
        .env("PATH", &path)
        .run()
        .success()
        .stdout();
    assert_eq!(through_the_plugin, email);
    env.client(&crate::support::kubecred_bin())
        .args(["convert-kubeconfig"])
        .env("KUBECONFIG", &kubeconfig)
        .env("PATH", &path)
        .run()
        .success()
        .stdout_contains(
            "converted \"gke\" (gke-gcloud-auth-plugin (application default credentials))",
        );
    let converted = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(converted.contains("--grant-type=google"), "{converted}");
    let through_kubecred = env
        .kubectl(&kubeconfig, &WHOAMI)
        .env("PATH", &path)
        .run()
        .success()
        .stdout();
    assert_eq!(through_kubecred, email);
}

/// No Google credentials anywhere (no file, no metadata server, no gcloud): the one line says what
/// to run, exit 4, nothing cached; with the cached token still valid, the outage of Google's
/// endpoint hands it out (stale-if-error) and kubectl goes on.
#[test]
fn without_google_credentials_one_line_and_an_outage_serves_the_valid_token() {
    if !have(Need::GoogleAuth) {
        return;
    }
    let env = TestEnv::new();
    let home = env.home();
    let run = env
        .kubecred(&["get-token", "--grant-type=google"])
        .env("PATH", "/nonexistent")
        .env("NO_GCE_CHECK", "true")
        .run()
        .failure(4);
    assert_eq!(
        run.only_kubecred_line(),
        format!(
            "kubecred: error: no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, no {}/.config/gcloud/application_default_credentials.json, no metadata server answered, and gcloud is not on PATH; run `gcloud auth application-default login`, or name a credential file with --google-credentials",
            home.display()
        )
    );
    assert!(cache_token_files(&env.cache_dir()).is_empty());

    // A valid cached token, then Google's endpoint gone: the token serves until it runs out.
    let world = World::start();
    // The key outlives the stand-in (whose directory goes with it).
    let key = env.dir.path().join("sa.json");
    std::fs::copy(e2e_key(&world, "ci@p.iam.gserviceaccount.com"), &key).unwrap();
    let args = [
        "get-token".to_string(),
        "--grant-type=google".into(),
        format!("--google-credentials={}", key.display()),
    ];
    let first = env.kubecred_owned(&args).run().success().token();
    drop(world);
    // --min-validity longer than the token has left makes this run a miss.
    let again = env
        .kubecred_owned(&[args.to_vec(), vec!["--min-validity=3599s".into()]].concat())
        .run()
        .success();
    assert_eq!(again.token(), first);
    assert!(
        again
            .stderr()
            .contains("; using the cached token, valid until "),
        "{}",
        again.stderr()
    );
}
