//! kubecred's Azure sources beside Azure's own library (PyPI azure-identity, and the msal it
//! sends managed identity requests through), for the same settings and environment, against the
//! same stand-ins on 127.0.0.1 (`tests/support/azure_reference.py serve`: the instance metadata
//! service, App Service's and Azure Arc's `IDENTITY_ENDPOINT`, Cloud Shell's `MSI_ENDPOINT`, the
//! Azure Pipelines OIDC endpoint) or a stand-in `az`/`azd` first on PATH that records how it was
//! run. Each test records what the reference sends, then what kubecred sends, and compares them
//! field by field; the only differences allowed are named (msal's tracing headers).

use crate::support::{Need, have, repo_root};
use kubecred::clouds::azure::{AKS_SCOPE, cli, managed_identity, pipelines};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn python() -> PathBuf {
    repo_root().join("target/azure-venv/bin/python")
}

fn script() -> PathBuf {
    repo_root().join("tests/support/azure_reference.py")
}

/// The stand-in endpoints, killed when the test ends.
struct StandIn {
    child: Child,
    dir: tempfile::TempDir,
    base: String,
}

impl StandIn {
    fn start() -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(python())
            .arg(script())
            .arg("serve")
            .arg(dir.path())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let port_file = dir.path().join("port");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !port_file.exists() {
            assert!(Instant::now() < deadline, "the stand-in did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let port = std::fs::read_to_string(&port_file).unwrap();
        StandIn {
            child,
            base: format!("http://127.0.0.1:{}", port.trim()),
            dir,
        }
    }

    /// The requests since the last call, each reduced to what the protocol says: method, path,
    /// query pairs, the headers named, the body.
    fn take(&self) -> Vec<Value> {
        let file = self.dir.path().join("requests.jsonl");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        std::fs::write(&file, "").unwrap();
        text.lines()
            .map(|line| {
                let mut entry: Value = serde_json::from_str(line).unwrap();
                let headers = entry["headers"].as_object().unwrap().clone();
                // Transport and tracing headers differ by client and say nothing of the
                // protocol: msal adds x-client-sku, x-client-ver and x-ms-client-request-id.
                let kept: serde_json::Map<String, Value> = headers
                    .into_iter()
                    .filter(|(name, _)| {
                        ![
                            "host",
                            "user-agent",
                            "accept",
                            "accept-encoding",
                            "connection",
                            "content-length",
                            "x-client-sku",
                            "x-client-ver",
                            "x-ms-client-request-id",
                        ]
                        .contains(&name.as_str())
                    })
                    .collect();
                entry["headers"] = Value::Object(kept);
                entry
            })
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the reference with `args` in an environment of exactly `vars` (and PATH, for `az`).
fn reference(args: &[&str], vars: &[(&str, &str)]) -> Value {
    let output = Command::new(python())
        .arg(script())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "azure_reference.py {args:?}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    move |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

fn http() -> kubecred::config::HttpSettings {
    kubecred::config::HttpSettings {
        tls: kubecred::config::TlsSettings {
            extra_ca_pems: Vec::new(),
            insecure_skip_verify: false,
        },
        timeout: Duration::from_secs(10),
        proxy: kubecred::config::ProxyEnvironment::default(),
        request_headers: Vec::new(),
    }
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[test]
fn managed_identity_requests_are_azure_identitys_in_every_environment() {
    if !have(Need::AzureReference) {
        return;
    }
    let stand_in = StandIn::start();
    let base = stand_in.base.clone();
    let key_dir = stand_in.dir.path().display().to_string();
    std::fs::write(stand_in.dir.path().join("arc.key"), "arc-secret").unwrap();
    let imds = [("AZURE_POD_IDENTITY_AUTHORITY_HOST", base.clone())];
    let app_service = [
        ("IDENTITY_ENDPOINT", format!("{base}/appservice/token")),
        ("IDENTITY_HEADER", "identity-header-secret".to_string()),
    ];
    let arc = [
        ("IDENTITY_ENDPOINT", format!("{base}/arc/token")),
        ("IMDS_ENDPOINT", "http://127.0.0.1:9".to_string()),
        ("AZURE_ARC_KEY_DIR", key_dir.clone()),
    ];
    let cloud_shell = [("MSI_ENDPOINT", format!("{base}/cloudshell/token"))];
    // (name, the environment, kubecred's identity, azure_reference.py's identity argument)
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, String)],
        managed_identity::Identity,
        Option<&'a str>,
    );
    let cases: Vec<Case> = vec![
        ("IMDS, system-assigned", &imds, managed_identity::Identity::System, None),
        (
            "IMDS, by client ID",
            &imds,
            managed_identity::Identity::ClientId("c-1".into()),
            Some("client_id=c-1"),
        ),
        (
            "IMDS, by resource ID",
            &imds,
            managed_identity::Identity::ResourceId("/subscriptions/s/resourcegroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/u".into()),
            Some("resource_id=/subscriptions/s/resourcegroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/u"),
        ),
        ("App Service", &app_service, managed_identity::Identity::System, None),
        (
            "App Service, by resource ID",
            &app_service,
            managed_identity::Identity::ResourceId("/r/u".into()),
            Some("resource_id=/r/u"),
        ),
        ("Azure Arc", &arc, managed_identity::Identity::System, None),
        (
            "Azure Arc, by client ID",
            &arc,
            managed_identity::Identity::ClientId("c-2".into()),
            Some("client_id=c-2"),
        ),
        ("Cloud Shell", &cloud_shell, managed_identity::Identity::System, None),
    ];
    for (name, vars, identity, reference_identity) in cases {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let mut args = vec!["managed-identity"];
        args.extend(reference_identity);
        args.push(AKS_SCOPE);
        let theirs = reference(&args, &vars);
        assert!(theirs.get("token").is_some(), "{name}: {theirs}");
        let sent_by_them = stand_in.take();

        let settings = managed_identity::ManagedIdentitySettings {
            scope: AKS_SCOPE.into(),
            identity,
        };
        let agent = managed_identity::ArcAgent {
            key_dir: Some(PathBuf::from(&key_dir)),
            program: None,
        };
        let ours =
            managed_identity::token_with_arc(&settings, &lookup(&vars), &http(), now(), &agent)
                .unwrap_or_else(|err| panic!("{name}: {err:#}"));
        let sent_by_us = stand_in.take();
        assert_eq!(sent_by_us, sent_by_them, "{name}: the requests");
        assert!(!sent_by_us.is_empty(), "{name}");
        assert_eq!(
            ours.token.expose(),
            theirs["token"].as_str().unwrap(),
            "{name}"
        );
        // The same expiry: msal reads expires_in against its own clock, kubecred expires_on
        // (expires_in where there is none); the stand-in's agree, a second or two apart.
        let theirs_expiry = theirs["expires_on"].as_i64().unwrap();
        assert!(
            (ours.expires_at.timestamp() - theirs_expiry).abs() <= 5,
            "{name}: {} against {theirs_expiry}",
            ours.expires_at.timestamp()
        );
        assert_eq!(
            ours.who.as_deref(),
            Some("object mi-object (application mi-app)"),
            "{name}"
        );
    }
}

#[test]
fn the_pipelines_oidc_request_is_azure_identitys() {
    if !have(Need::AzureReference) {
        return;
    }
    let stand_in = StandIn::start();
    let vars = [
        (
            "SYSTEM_OIDCREQUESTURI",
            format!("{}/pipelines/oidc", stand_in.base),
        ),
        ("SYSTEM_ACCESSTOKEN", "system-access-token".to_string()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let theirs = reference(&["pipelines-oidc", "sc-1"], &vars);
    let sent_by_them = stand_in.take();
    let settings = pipelines::PipelinesSettings {
        service_connection_id: "sc-1".into(),
    };
    let ours = pipelines::oidc_token(&settings, &lookup(&vars), &http()).unwrap();
    let sent_by_us = stand_in.take();
    assert_eq!(sent_by_us, sent_by_them);
    assert_eq!(sent_by_us.len(), 1);
    assert_eq!(ours.expose(), theirs["oidc_token"].as_str().unwrap());
}

/// A stand-in CLI first on PATH that records its arguments, directory, colour variable and
/// whether stdin had anything, and answers `answer`.
fn stand_in_cli(dir: &Path, name: &str, answer: &str) {
    use std::os::unix::fs::PermissionsExt;
    let record = dir.join(format!("{name}.record"));
    let answer_file = dir.join(format!("{name}.answer"));
    std::fs::write(&answer_file, answer).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n{{ printf 'arg=%s\\n' \"$@\"; echo \"cwd=$(pwd)\"; echo \"AZURE_CORE_NO_COLOR=$AZURE_CORE_NO_COLOR\"; echo \"NO_COLOR=$NO_COLOR\"; if read line; then echo stdin=data; else echo stdin=eof; fi; }} >> {}\ncat {}\n",
            record.display(),
            answer_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn take_record(dir: &Path, name: &str) -> String {
    let file = dir.join(format!("{name}.record"));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    std::fs::write(&file, "").unwrap();
    text
}

#[test]
fn the_azure_clis_are_run_as_azure_identity_runs_them() {
    if !have(Need::AzureReference) {
        return;
    }
    let bin = tempfile::tempdir().unwrap();
    let expires = chrono::Utc::now().timestamp() + 3600;
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJ1cG4iOiJhbGljZUBjb250b3NvLmNvbSIsIm9pZCI6Im8tMSJ9.c2ln";
    stand_in_cli(
        bin.path(),
        "az",
        &format!(
            r#"{{"accessToken":"{token}","expiresOn":"2030-01-01 00:00:00.000000","expires_on":{expires},"subscription":"s","tenant":"t","tokenType":"Bearer"}}"#
        ),
    );
    let azd_expiry = chrono::DateTime::from_timestamp(expires, 0).unwrap();
    stand_in_cli(
        bin.path(),
        "azd",
        &format!(
            r#"{{"token":"{token}","expiresOn":"{}"}}"#,
            azd_expiry.format("%Y-%m-%dT%H:%M:%SZ")
        ),
    );
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    // UTC: azure-identity reads azd's UTC time as local time.
    let vars = [("PATH", path.as_str()), ("TZ", "UTC")];
    for tenant in [None, Some("contoso.onmicrosoft.com")] {
        let mut args = vec!["azure-cli", AKS_SCOPE];
        args.extend(tenant);
        let theirs = reference(&args, &vars);
        let run_by_them = take_record(bin.path(), "az");
        let settings = cli::AzureCliSettings {
            scope: AKS_SCOPE.into(),
            tenant_id: tenant.map(String::from),
            subscription: None,
            timeout: Duration::from_secs(30),
        };
        let ours = cli::azure_cli_token(&settings, &lookup(&vars), now()).unwrap();
        let run_by_us = take_record(bin.path(), "az");
        // The colour variable is the CLI's own: azure-identity sets AZURE_CORE_NO_COLOR.
        assert_eq!(run_by_us, run_by_them, "az, tenant {tenant:?}");
        let bin_dir = std::fs::canonicalize("/bin").unwrap();
        assert!(run_by_us.contains("stdin=eof"), "{run_by_us}");
        assert!(
            run_by_us.contains(&format!("cwd={}\n", bin_dir.display())),
            "{run_by_us}"
        );
        assert_eq!(ours.token.expose(), theirs["token"].as_str().unwrap());
        assert_eq!(
            ours.expires_at.timestamp(),
            theirs["expires_on"].as_i64().unwrap()
        );

        let mut args = vec!["azure-developer-cli", AKS_SCOPE];
        args.extend(tenant);
        let theirs = reference(&args, &vars);
        let run_by_them = take_record(bin.path(), "azd");
        let settings = cli::DeveloperCliSettings {
            scope: AKS_SCOPE.into(),
            tenant_id: tenant.map(String::from),
            timeout: Duration::from_secs(30),
        };
        let ours = cli::developer_cli_token(&settings, &lookup(&vars), now()).unwrap();
        let run_by_us = take_record(bin.path(), "azd");
        assert_eq!(run_by_us, run_by_them, "azd, tenant {tenant:?}");
        assert_eq!(
            ours.expires_at.timestamp(),
            theirs["expires_on"].as_i64().unwrap()
        );
    }
}

#[test]
fn the_certificate_assertion_is_msals_and_azure_identity_verifies_ours() {
    if !have(Need::AzureReference) {
        return;
    }
    let file = repo_root().join("src/clouds/azure/testdata/cert_aes.pfx");
    let file_arg = file.display().to_string();
    let audience = "https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token";
    let theirs = reference(&["assertion", &file_arg, "pw", "client-1", audience], &[]);
    let theirs = theirs["assertion"].as_str().unwrap();
    let segment = |token: &str, index: usize| -> Value {
        use base64::Engine;
        let part = token.split('.').nth(index).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .unwrap(),
        )
        .unwrap()
    };
    let certificate = kubecred::clouds::azure::certificate::ClientCertificate::from_file(
        &file,
        Some(&kubecred::secret::Secret::new("pw")),
    )
    .unwrap();
    let ours = certificate
        .assertion("client-1", audience, chrono::Utc::now())
        .unwrap();
    let (their_header, our_header) = (segment(theirs, 0), segment(ours.expose(), 0));
    for field in ["alg", "typ"] {
        assert_eq!(our_header[field], their_header[field], "header {field}");
    }
    // The same certificate; MSAL for Python keeps the PEM's line breaks inside its x5c entry,
    // RFC 7515 has none.
    let their_x5c: Vec<String> = their_header["x5c"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().split_whitespace().collect())
        .collect();
    let our_x5c: Vec<&str> = our_header["x5c"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(our_x5c, their_x5c);
    // The same thumbprint; MSAL for Python pads its base64url (`…Fw=`), RFC 7515 and MSAL.NET
    // do not: Entra takes both.
    assert_eq!(
        our_header["x5t#S256"].as_str().unwrap(),
        their_header["x5t#S256"]
            .as_str()
            .unwrap()
            .trim_end_matches('=')
    );
    assert_eq!(their_header["alg"], "PS256");
    let (their_claims, our_claims) = (segment(theirs, 1), segment(ours.expose(), 1));
    for field in ["aud", "iss", "sub"] {
        assert_eq!(our_claims[field], their_claims[field], "claim {field}");
    }
    for field in ["jti", "exp", "iat"] {
        assert!(
            their_claims.get(field).is_some() && our_claims.get(field).is_some(),
            "{field}"
        );
    }
    // PyJWT checks our signature with the certificate's public key, as Entra would.
    let mut verify = Command::new(python())
        .arg(script())
        .args(["verify", &file_arg, "pw", audience])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    verify
        .stdin
        .take()
        .unwrap()
        .write_all(ours.expose().as_bytes())
        .unwrap();
    let output = verify.wait_with_output().unwrap();
    let verified: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(verified["claims"]["sub"], "client-1");
}
