//! kubecred's EKS source beside the AWS CLI and botocore (PyPI, pinned in scripts/aws-deps.sh),
//! offline: for the same credentials, environment and second (the AWS CLI's clock pinned by
//! tests/support/aws_reference.py), `aws eks get-token` and kubecred make the same token, byte for
//! byte; against an STS stand-in on loopback (tests/support/aws_sts.py) that recomputes every
//! signature with botocore, the AssumeRole and AssumeRoleWithWebIdentity requests kubecred sends are
//! the ones botocore sends, and STS accepts kubecred's token as EKS forwards it. The module is
//! called as a library (phase 2 wires it into get-token).

use crate::support::{Need, have, repo_root};
use chrono::{DateTime, Utc};
use kubecred::clouds::aws::{self, EksSettings, Network};
use kubecred::config::{HttpSettings, ProxyEnvironment, TlsSettings};
use kubecred::secret::Secret;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const AT: &str = "2026-11-28T15:32:38Z";

fn at() -> DateTime<Utc> {
    AT.parse().unwrap()
}

fn python() -> std::path::PathBuf {
    repo_root().join("target/aws-venv/bin/python")
}

fn network() -> Network {
    Network {
        http: HttpSettings {
            tls: TlsSettings::default(),
            timeout: Duration::from_secs(10),
            proxy: ProxyEnvironment::default(),
            request_headers: Vec::new(),
        },
        retry_window: Duration::ZERO,
        process_timeout: Duration::from_secs(10),
    }
}

/// A home directory and an environment both programs run in (nothing of this process's but PATH).
struct Setup {
    home: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

impl Setup {
    fn new(vars: &[(&str, &str)]) -> Setup {
        let home = tempfile::tempdir().unwrap();
        let mut env: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // Neither program may ask an instance metadata service that is not there.
        env.insert("AWS_EC2_METADATA_DISABLED".into(), "true".into());
        Setup { home, env }
    }

    fn file(&self, relative: &str, text: &str) {
        let path = self.home.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `aws eks get-token ARGS` at [`AT`]: the ExecCredential it printed.
    fn aws_cli(&self, args: &[&str]) -> Value {
        let output = Command::new(python())
            .arg(repo_root().join("tests/support/aws_reference.py"))
            .arg("get-token")
            .arg(AT)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", self.home.path())
            .envs(&self.env)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "aws eks get-token {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name: &str| {
            if name == "HOME" {
                return Some(self.home.path().display().to_string());
            }
            self.env.get(name).cloned()
        }
    }

    fn kubecred(&self, settings: &EksSettings) -> anyhow::Result<kubecred::clouds::CloudToken> {
        aws::eks_token(
            settings,
            &self.lookup(),
            Some(self.home.path()),
            at(),
            &network(),
        )
    }
}

fn cluster(name: &str) -> EksSettings {
    EksSettings {
        cluster: name.into(),
        ..EksSettings::default()
    }
}

/// Both tokens for one case, and both expiries, which must be equal.
fn same_token(setup: &Setup, cli_args: &[&str], settings: &EksSettings) -> String {
    let cli = setup.aws_cli(cli_args);
    let ours = setup
        .kubecred(settings)
        .unwrap_or_else(|err| panic!("{cli_args:?}: {err:#}"));
    assert_eq!(
        ours.token.expose(),
        cli["status"]["token"].as_str().unwrap(),
        "{cli_args:?} in {:?}",
        setup.env
    );
    assert_eq!(
        ours.expires_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        cli["status"]["expirationTimestamp"].as_str().unwrap(),
        "{cli_args:?}"
    );
    ours.token.expose().to_string()
}

const KEYS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
    (
        "AWS_SECRET_ACCESS_KEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
];

#[test]
fn the_token_is_the_aws_clis_byte_for_byte() {
    if !have(Need::AwsReference) {
        return;
    }
    let with_keys = |extra: &[(&'static str, &'static str)]| {
        let mut vars = KEYS.to_vec();
        vars.extend_from_slice(extra);
        Setup::new(&vars)
    };
    let name = "prod-eu 1/é";
    let args = ["--cluster-name", name];
    for extra in [
        &[][..],
        &[("AWS_DEFAULT_REGION", "us-east-1")],
        &[
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_SESSION_TOKEN", "Fwo/dGVz+dA=="),
        ],
        &[("AWS_DEFAULT_REGION", "cn-north-1")],
        &[("AWS_DEFAULT_REGION", "us-gov-west-1")],
        &[
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_STS_REGIONAL_ENDPOINTS", "legacy"),
        ],
        &[
            ("AWS_DEFAULT_REGION", "ap-east-1"),
            ("AWS_STS_REGIONAL_ENDPOINTS", "legacy"),
        ],
        &[
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            (
                "AWS_ENDPOINT_URL_STS",
                "https://sts.internal.example:8443/base",
            ),
        ],
        &[
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
        ],
    ] {
        same_token(&with_keys(extra), &args, &cluster(name));
    }
    // --region and --aws-region.
    let setup = with_keys(&[("AWS_DEFAULT_REGION", "eu-west-1")]);
    same_token(
        &setup,
        &["--cluster-name", "c", "--region", "eu-central-1"],
        &EksSettings {
            region: Some("eu-central-1".into()),
            ..cluster("c")
        },
    );
    // EKS on Outposts: --cluster-id is the identifier signed, as --eks-cluster.
    same_token(
        &setup,
        &["--cluster-id", "9f8e7d6c-1234"],
        &cluster("9f8e7d6c-1234"),
    );
}

#[test]
fn profiles_are_chosen_and_read_as_the_aws_cli_reads_them() {
    if !have(Need::AwsReference) {
        return;
    }
    let setup = Setup::new(&KEYS);
    setup.file(
        ".aws/config",
        "[default]\nregion = eu-west-1\n[profile dev]\nregion = eu-north-1\nsts_regional_endpoints = legacy\n[profile ops]\nregion = ap-southeast-2\n",
    );
    setup.file(
        ".aws/credentials",
        "[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = dev-secret\n[ops]\naws_access_key_id = AKIDOPS\naws_secret_access_key = ops-secret\naws_session_token = ops-token\n",
    );
    // The environment's keys, the default profile's region.
    same_token(&setup, &["--cluster-name", "c"], &cluster("c"));
    // --profile (the AWS CLI) and --aws-profile: the profile's keys over the environment's.
    let token = same_token(
        &setup,
        &["--cluster-name", "c", "--profile", "dev"],
        &EksSettings {
            profile: Some("dev".into()),
            ..cluster("c")
        },
    );
    assert!(
        decoded(&token).contains("AKIDDEV%2F20261128%2Fus-east-1"),
        "{}",
        decoded(&token)
    );
    // AWS_PROFILE: the profile's region, and (as botocore) the environment's keys still win.
    let mut named = Setup::new(&KEYS);
    named.env.insert("AWS_PROFILE".into(), "ops".into());
    std::fs::create_dir_all(named.home.path().join(".aws")).unwrap();
    for file in ["config", "credentials"] {
        std::fs::copy(
            setup.home.path().join(".aws").join(file),
            named.home.path().join(".aws").join(file),
        )
        .unwrap();
    }
    let token = same_token(&named, &["--cluster-name", "c"], &cluster("c"));
    assert!(decoded(&token).contains("AKIDEXAMPLE%2F20261128%2Fap-southeast-2"));
    named.env.remove("AWS_ACCESS_KEY_ID");
    named.env.remove("AWS_SECRET_ACCESS_KEY");
    same_token(&named, &["--cluster-name", "c"], &cluster("c"));
}

fn decoded(token: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.strip_prefix("k8s-aws-v1.").unwrap())
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

/// The STS stand-in, stopped when dropped.
struct Sts {
    child: Child,
    url: String,
}

impl Sts {
    fn start(config: Value) -> Sts {
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/support/aws_sts.py"))
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started: Value = serde_json::from_str(&line).unwrap();
        Sts {
            child,
            url: started["url"].as_str().unwrap().to_string(),
        }
    }

    /// The requests so far, with `action` in their body.
    fn requests(&self, action: &str) -> Vec<Value> {
        let all: Vec<Value> = reqwest::blocking::get(format!("{}/requests", self.url))
            .unwrap()
            .json()
            .unwrap();
        all.into_iter()
            .filter(|r| {
                r["body"]
                    .as_str()
                    .unwrap_or("")
                    .contains(&format!("Action={action}&"))
            })
            .collect()
    }

    /// How many requests it has seen.
    fn count(&self) -> usize {
        reqwest::blocking::get(format!("{}/requests", self.url))
            .unwrap()
            .json::<Vec<Value>>()
            .unwrap()
            .len()
    }
}

impl Drop for Sts {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A form body's pairs, sorted.
fn form(request: &Value) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(request["body"].as_str().unwrap().as_bytes())
            .into_owned()
            .collect();
    pairs.sort();
    pairs
}

/// The names a request's SigV4 `Authorization` signs.
fn signed_headers(request: &Value) -> String {
    let authorization = request["headers"]["authorization"].as_str().unwrap();
    authorization
        .split("SignedHeaders=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string()
}

fn sts_setup(sts: &Sts) -> Setup {
    let mut vars = KEYS.to_vec();
    vars.push(("AWS_DEFAULT_REGION", "eu-west-1"));
    let mut setup = Setup::new(&vars);
    setup
        .env
        .insert("AWS_ENDPOINT_URL_STS".into(), format!("{}/", sts.url));
    setup
}

const ROLE: &str = "arn:aws:iam::123456789012:role/eks-admin";

#[test]
fn the_role_is_assumed_as_the_aws_cli_assumes_it_and_sts_accepts_the_token() {
    if !have(Need::AwsReference) {
        return;
    }
    let sts = Sts::start(json!({"keys": {"AKIDEXAMPLE": {
        "secret": KEYS[1].1, "arn": "arn:aws:iam::123456789012:user/dev"}}}));
    let setup = sts_setup(&sts);
    let settings = EksSettings {
        role_arn: Some(ROLE.into()),
        ..cluster("prod")
    };
    let token = same_token(
        &setup,
        &["--cluster-name", "prod", "--role-arn", ROLE],
        &settings,
    );
    let requests = sts.requests("AssumeRole");
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let (cli, ours) = (&requests[0], &requests[1]);
    assert_eq!(
        ours["body"],
        "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Feks-admin&RoleSessionName=EKSGetTokenAuth"
    );
    for field in ["method", "path", "body"] {
        assert_eq!(ours[field], cli[field], "{field}");
    }
    assert_eq!(signed_headers(ours), signed_headers(cli));
    assert_eq!(
        ours["headers"]["content-type"],
        cli["headers"]["content-type"]
    );
    assert_eq!(
        ours["headers"]["authorization"],
        cli["headers"]["authorization"]
    );
    assert_eq!(cli["verified"], true, "botocore checks its own signature");
    assert_eq!(
        ours["verified"], true,
        "botocore checks kubecred's signature"
    );

    // STS answers the token's GetCallerIdentity, as EKS asks it, with the role session.
    let arn = aws::caller_identity(&Secret::new(token), "prod", &network()).unwrap();
    assert_eq!(
        arn,
        "arn:aws:sts::123456789012:assumed-role/eks-admin/EKSGetTokenAuth"
    );
    // The header is signed: another cluster's name is refused.
    let err = aws::caller_identity(
        &setup.kubecred(&settings).unwrap().token,
        "other",
        &network(),
    )
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("SignatureDoesNotMatch"),
        "{err:#}"
    );
}

#[test]
fn a_refused_role_is_one_line_with_stss_answer() {
    if !have(Need::AwsReference) {
        return;
    }
    let forbidden = "arn:aws:iam::123456789012:role/forbidden";
    let sts = Sts::start(json!({
        "keys": {"AKIDEXAMPLE": {"secret": KEYS[1].1, "arn": "arn:aws:iam::123456789012:user/dev"}},
        "refuse": [forbidden]}));
    let setup = sts_setup(&sts);
    let Err(err) = setup.kubecred(&EksSettings {
        role_arn: Some(forbidden.into()),
        ..cluster("prod")
    }) else {
        panic!("a token for a refused role");
    };
    assert_eq!(
        kubecred_line(&err),
        format!(
            "STS refused to assume the role {forbidden} with the AWS credentials from the environment (AWS_ACCESS_KEY_ID) (AccessDenied: Not authorized to perform sts:AssumeRole on {forbidden}); check that the role's trust policy lets them assume it"
        )
    );
    assert_eq!(sts.requests("AssumeRole")[0]["verified"], true);
}

/// The one line kubecred would print for an error (its chain joined as `process` joins it).
fn kubecred_line(err: &anyhow::Error) -> String {
    format!("{err:#}")
}

#[test]
fn a_web_identity_is_traded_as_botocore_trades_it() {
    if !have(Need::AwsReference) {
        return;
    }
    let sts = Sts::start(json!({}));
    let mut setup = Setup::new(&[("AWS_DEFAULT_REGION", "eu-west-1")]);
    setup.file(
        "token",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDphcHAifQ.sig",
    );
    let file = setup.home.path().join("token").display().to_string();
    for (name, value) in [
        ("AWS_ENDPOINT_URL_STS", format!("{}/", sts.url)),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", file.clone()),
        ("AWS_ROLE_ARN", ROLE.to_string()),
        ("AWS_ROLE_SESSION_NAME", "ci-job-42".to_string()),
    ] {
        setup.env.insert(name.into(), value);
    }
    // The AWS CLI's chain (IRSA, CI) and kubecred's: one request each, the same.
    same_token(&setup, &["--cluster-name", "prod"], &cluster("prod"));
    let requests = sts.requests("AssumeRoleWithWebIdentity");
    assert_eq!(requests.len(), 2, "{requests:#?}");
    // The same parameters; botocore's web identity provider happens to put RoleSessionName first.
    assert_eq!(form(&requests[1]), form(&requests[0]));
    assert_eq!(requests[1]["path"], requests[0]["path"]);
    assert_eq!(
        requests[1]["headers"]["content-type"],
        requests[0]["headers"]["content-type"]
    );
    assert!(requests[1]["headers"].get("authorization").is_none());

    // A kubecred login's ID token: kubecred's request beside botocore's own call.
    let before = sts.count();
    let output = Command::new(python())
        .arg(repo_root().join("tests/support/aws_reference.py"))
        .args([
            "assume-role-with-web-identity",
            ROLE,
            "ana@example.com",
            &file,
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", setup.home.path())
        .envs(&setup.env)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let botocores: Value = serde_json::from_slice(&output.stdout).unwrap();
    let id_token = Secret::new(std::fs::read_to_string(&file).unwrap().trim());
    let role = aws::assume_role_with_web_identity(
        &EksSettings {
            role_arn: Some(ROLE.into()),
            role_session_name: Some("ana@example.com".into()),
            ..cluster("prod")
        },
        &id_token,
        &setup.lookup(),
        Some(setup.home.path()),
        &network(),
    )
    .unwrap();
    let requests = sts.requests("AssumeRoleWithWebIdentity");
    assert_eq!((before, requests.len()), (2, 4));
    assert_eq!(requests[3]["body"], requests[2]["body"]);
    assert_eq!(
        role.access_key_id,
        botocores["AccessKeyId"].as_str().unwrap()
    );
    assert_eq!(
        role.session_token.expose(),
        botocores["SessionToken"].as_str().unwrap()
    );
    assert_eq!(
        role.assumed_role_arn.as_deref(),
        Some("arn:aws:sts::123456789012:assumed-role/eks-admin/ana@example.com")
    );
    // The role's credentials sign a token STS accepts, without another request.
    let token = aws::eks_token_with(
        &role,
        &cluster("prod"),
        &setup.lookup(),
        Some(setup.home.path()),
        at(),
    )
    .unwrap();
    assert_eq!(
        aws::caller_identity(&token.token, "prod", &network()).unwrap(),
        "arn:aws:sts::123456789012:assumed-role/eks-admin/ana@example.com"
    );
    assert_eq!(sts.requests("AssumeRoleWithWebIdentity").len(), 4);
}
