//! Unit tests of the AWS source's flows, with a loopback double (`http::test_server`) for STS,
//! the SSO portal, container credentials and the instance metadata service, a home directory of
//! their own, and an environment that is a map: nothing here reads the process's.

use super::*;
use crate::config::{HttpSettings, ProxyEnvironment, TlsSettings};
use crate::error::{exit_code_of, is_transient, one_line};
use crate::http::test_server::{Answer, TestServer};
use std::collections::HashMap;
use std::time::Duration;

const NOW: &str = "2026-11-28T15:32:38Z";

fn now() -> DateTime<Utc> {
    NOW.parse().unwrap()
}

fn network() -> Network {
    Network {
        http: HttpSettings {
            tls: TlsSettings::default(),
            timeout: Duration::from_secs(5),
            proxy: ProxyEnvironment::default(),
            request_headers: Vec::new(),
        },
        retry_window: Duration::ZERO,
        process_timeout: Duration::from_secs(10),
    }
}

/// A home directory, an environment, and the double every endpoint of the environment points at.
struct Setup {
    home: tempfile::TempDir,
    env: HashMap<String, String>,
    server: TestServer,
}

impl Setup {
    fn new() -> Setup {
        let server = TestServer::start();
        let mut env = HashMap::new();
        env.insert(
            "AWS_ENDPOINT_URL_STS".into(),
            format!("{}/sts", server.base),
        );
        env.insert(
            "AWS_ENDPOINT_URL_SSO".into(),
            format!("{}/sso", server.base),
        );
        env.insert(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT".into(),
            format!("{}/imds", server.base),
        );
        env.insert("AWS_REGION".into(), "eu-west-1".into());
        Setup {
            home: tempfile::tempdir().unwrap(),
            env,
            server,
        }
    }

    fn set(&mut self, name: &str, value: &str) -> &mut Setup {
        self.env.insert(name.into(), value.into());
        self
    }

    fn file(&self, relative: &str, text: &str) -> &Setup {
        let path = self.home.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name: &str| self.env.get(name).cloned()
    }

    fn token(&self, settings: &EksSettings) -> anyhow::Result<CloudToken> {
        eks_token(
            settings,
            &self.lookup(),
            Some(self.home.path()),
            now(),
            &network(),
        )
    }

    /// The presigned URL of the token made with `settings`.
    fn url(&self, settings: &EksSettings) -> String {
        let token = self.token(settings).unwrap_or_else(|err| panic!("{err:#}"));
        presigned_url_of(&token.token).unwrap()
    }

    fn error(&self, settings: &EksSettings) -> (String, Exit, bool) {
        let err = match self.token(settings) {
            Ok(_) => panic!("a token"),
            Err(err) => err,
        };
        (one_line(&err), exit_code_of(&err), is_transient(&err))
    }
}

fn cluster() -> EksSettings {
    EksSettings {
        cluster: "prod".into(),
        ..EksSettings::default()
    }
}

fn credential_of(url: &str) -> String {
    let start = url.find("X-Amz-Credential=").unwrap() + "X-Amz-Credential=".len();
    url[start..].split("%2F").next().unwrap().to_string()
}

fn sts_answer(action: &str, key: &str, arn: &str) -> Answer {
    Answer::with(
        200,
        format!(
            "<{action}Response><{action}Result><AssumedRoleUser><Arn>{arn}</Arn></AssumedRoleUser><Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken><Expiration>2026-11-28T16:32:38Z</Expiration></Credentials></{action}Result></{action}Response>"
        ),
    )
    .header("Content-Type", "text/xml")
}

#[test]
fn keys_from_the_environment_sign_without_a_request_for_14_minutes() {
    let mut setup = Setup::new();
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_SESSION_TOKEN", "session");
    let token = setup.token(&cluster()).unwrap();
    let url = presigned_url_of(&token.token).unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:")
            && url.contains("/sts?Action=GetCallerIdentity&Version=2011-06-15&"),
        "{url}"
    );
    assert_eq!(credential_of(&url), "AKIDENV");
    assert!(
        url.contains("&X-Amz-Security-Token=session&X-Amz-Signature="),
        "{url}"
    );
    assert_eq!(token.expires_at, now() + chrono::TimeDelta::minutes(14));
    assert_eq!(token.who, None);
    assert_eq!(setup.server.hits("/sts"), 0);
}

#[test]
fn aws_profile_names_the_profile_and_the_flag_also_skips_the_environments_keys() {
    let mut setup = Setup::new();
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s");
    setup.file(
        ".aws/credentials",
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s\n[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = s\n",
    );
    // The environment's keys win over AWS_PROFILE, as in botocore…
    setup.set("AWS_PROFILE", "dev");
    assert_eq!(credential_of(&setup.url(&cluster())), "AKIDENV");
    // …but not over --aws-profile (the AWS CLI's --profile).
    let flagged = EksSettings {
        profile: Some("dev".into()),
        ..cluster()
    };
    assert_eq!(credential_of(&setup.url(&flagged)), "AKIDDEV");
    setup.env.remove("AWS_ACCESS_KEY_ID");
    setup.env.remove("AWS_SECRET_ACCESS_KEY");
    assert_eq!(credential_of(&setup.url(&cluster())), "AKIDDEV");
}

#[test]
fn an_unknown_profile_is_named_with_both_files() {
    let mut setup = Setup::new();
    let files = format!(
        "{} or {}",
        setup.home.path().join(".aws/config").display(),
        setup.home.path().join(".aws/credentials").display()
    );
    let expected = (
        format!(
            "the AWS profile \"nope\" is not in {files}; check --aws-profile or AWS_PROFILE, or add the profile (aws configure --profile nope)"
        ),
        Exit::Input,
        false,
    );
    let flagged = EksSettings {
        profile: Some("nope".into()),
        ..cluster()
    };
    assert_eq!(setup.error(&flagged), expected);
    setup.set("AWS_PROFILE", "nope");
    assert_eq!(setup.error(&cluster()), expected);
    // Also where the environment's keys would sign: the AWS CLI refuses it too.
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s");
    assert_eq!(setup.error(&cluster()), expected);
}

#[test]
fn without_credentials_the_error_says_where_it_looked_and_what_to_run() {
    let mut setup = Setup::new();
    // The instance metadata service does not answer: off EC2.
    setup.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9");
    let files = format!(
        "{} or {}",
        setup.home.path().join(".aws/config").display(),
        setup.home.path().join(".aws/credentials").display()
    );
    assert_eq!(
        setup.error(&cluster()),
        (
            format!(
                "no AWS credentials found (not in the environment, nor for the profile \"default\" in {files}, nor from a container or instance role); configure them (aws configure, or aws sso login)"
            ),
            Exit::Login,
            true
        )
    );
}

#[test]
fn expired_keys_in_the_environment_are_a_login_needed() {
    let mut setup = Setup::new();
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_CREDENTIAL_EXPIRATION", "2026-11-28T15:00:00Z");
    assert_eq!(
        setup.error(&cluster()),
        (
            "the AWS credentials from the environment (AWS_ACCESS_KEY_ID) expired at 2026-11-28 15:00:00 UTC; renew them and set them again".into(),
            Exit::Login,
            true
        )
    );
}

#[test]
fn a_profiles_role_is_assumed_with_its_source_profiles_keys() {
    let mut setup = Setup::new();
    setup.set("AWS_PROFILE", "dev");
    setup.file(
        ".aws/config",
        "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\nsource_profile = base\n[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = s\n",
    );
    setup.server.answer(
        "/sts",
        sts_answer(
            "AssumeRole",
            "ASIAROLE",
            "arn:aws:sts::1:assumed-role/dev/x",
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "ASIAROLE");
    assert_eq!(setup.server.hits("/sts"), 1);
}

#[test]
fn aws_role_arn_is_assumed_first_and_its_session_is_who_the_cluster_sees() {
    let mut setup = Setup::new();
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s");
    setup.server.answer(
        "/sts",
        sts_answer(
            "AssumeRole",
            "ASIAROLE",
            "arn:aws:sts::1:assumed-role/eks/EKSGetTokenAuth",
        ),
    );
    let settings = EksSettings {
        role_arn: Some("arn:aws:iam::1:role/eks".into()),
        ..cluster()
    };
    let token = setup.token(&settings).unwrap();
    assert_eq!(
        token.who.as_deref(),
        Some("arn:aws:sts::1:assumed-role/eks/EKSGetTokenAuth")
    );
    assert_eq!(
        credential_of(&presigned_url_of(&token.token).unwrap()),
        "ASIAROLE"
    );
    // The role's credentials, kept, sign again without a request.
    let role = role_credentials(
        &settings,
        &setup.lookup(),
        Some(setup.home.path()),
        now(),
        &network(),
    )
    .unwrap();
    assert_eq!(setup.server.hits("/sts"), 2);
    let again = eks_token_with(
        &role,
        &settings,
        &setup.lookup(),
        Some(setup.home.path()),
        now(),
    )
    .unwrap();
    assert_eq!(again.token, token.token);
    assert_eq!(setup.server.hits("/sts"), 2);
}

#[test]
fn a_refused_role_is_said_with_stss_code_and_message() {
    let mut setup = Setup::new();
    setup
        .set("AWS_ACCESS_KEY_ID", "AKIDENV")
        .set("AWS_SECRET_ACCESS_KEY", "s");
    setup.server.answer(
        "/sts",
        Answer::with(
            403,
            "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User: arn:aws:iam::1:user/u is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::1:role/eks</Message></Error></ErrorResponse>",
        ),
    );
    let settings = EksSettings {
        role_arn: Some("arn:aws:iam::1:role/eks".into()),
        ..cluster()
    };
    assert_eq!(
        setup.error(&settings),
        (
            "STS refused to assume the role arn:aws:iam::1:role/eks with the AWS credentials from the environment (AWS_ACCESS_KEY_ID) (AccessDenied: User: arn:aws:iam::1:user/u is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::1:role/eks); check that the role's trust policy lets them assume it".into(),
            Exit::Provider,
            false
        )
    );
}

#[test]
fn a_web_identity_token_file_is_traded_for_the_roles_credentials() {
    let mut setup = Setup::new();
    setup.file("token", "header.payload.signature\n");
    let file = setup.home.path().join("token").display().to_string();
    setup
        .set("AWS_WEB_IDENTITY_TOKEN_FILE", &file)
        .set("AWS_ROLE_ARN", "arn:aws:iam::1:role/irsa");
    setup.server.answer(
        "/sts",
        sts_answer(
            "AssumeRoleWithWebIdentity",
            "ASIAIRSA",
            "arn:aws:sts::1:assumed-role/irsa/x",
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "ASIAIRSA");
}

const SSO_CONFIG: &str = "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Admin\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n";
/// Where `aws sso login` keeps the session "corp"'s token: its SHA-1 names the file.
fn sso_cache_file() -> String {
    use sha1::Digest;
    let name: String = sha1::Sha1::digest(b"corp")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(".aws/sso/cache/{name}.json")
}

#[test]
fn an_sso_profile_trades_the_aws_sso_login_token_at_the_portal() {
    let mut setup = Setup::new();
    setup.set("AWS_PROFILE", "dev");
    setup.file(".aws/config", SSO_CONFIG);
    setup.file(
        &sso_cache_file(),
        r#"{"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1", "accessToken": "sso-access", "expiresAt": "2026-11-28T20:00:00Z"}"#,
    );
    let path = "/sso/federation/credentials?role_name=Admin&account_id=111122223333";
    setup.server.answer(
        path,
        Answer::json(
            r#"{"roleCredentials": {"accessKeyId": "ASIASSO", "secretAccessKey": "s", "sessionToken": "t", "expiration": 1795891958000}}"#,
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "ASIASSO");
    assert_eq!(setup.server.hits(path), 1);
}

#[test]
fn an_sso_session_that_expired_or_never_logged_in_asks_for_aws_sso_login() {
    let mut setup = Setup::new();
    setup.set("AWS_PROFILE", "dev");
    setup.file(".aws/config", SSO_CONFIG);
    assert_eq!(
        setup.error(&cluster()),
        (
            "the AWS profile \"dev\" signs in with SSO (https://corp.awsapps.com/start), and no SSO session is logged in; run aws sso login --profile dev".into(),
            Exit::Login,
            true
        )
    );
    setup.file(
        &sso_cache_file(),
        r#"{"accessToken": "sso-access", "expiresAt": "2026-11-28T15:00:00Z"}"#,
    );
    assert_eq!(
        setup.error(&cluster()),
        (
            "the SSO session of the AWS profile \"dev\" (https://corp.awsapps.com/start) has expired; run aws sso login --profile dev".into(),
            Exit::Login,
            true
        )
    );
}

#[cfg(unix)]
#[test]
fn a_credential_process_is_run_and_its_failure_said() {
    let mut setup = Setup::new();
    setup.set("AWS_PROFILE", "dev");
    setup.file(
        "helper.sh",
        "#!/bin/sh\n[ \"$1\" = ok ] || { echo 'login expired' >&2; exit 2; }\necho '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\", \"SecretAccessKey\": \"s\", \"Expiration\": \"2026-11-28T16:00:00Z\"}'\n",
    );
    let helper = setup.home.path().join("helper.sh");
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    setup.file(
        ".aws/config",
        &format!(
            "[profile dev]\ncredential_process = {} ok\n",
            helper.display()
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "AKIDPROC");
    setup.file(
        ".aws/config",
        &format!(
            "[profile dev]\ncredential_process = {} no\n",
            helper.display()
        ),
    );
    assert_eq!(
        setup.error(&cluster()),
        (
            format!(
                "the credential_process of the AWS profile \"dev\" ({} no) failed (exit status: 2: login expired); run it yourself to see why",
                helper.display()
            ),
            Exit::Login,
            true
        )
    );
}

#[test]
fn container_credentials_are_asked_with_their_authorization() {
    let mut setup = Setup::new();
    let url = format!("{}/container/creds", setup.server.base);
    setup
        .set("AWS_CONTAINER_CREDENTIALS_FULL_URI", &url)
        .set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-token");
    setup.server.answer(
        "/container/creds",
        Answer::json(
            r#"{"AccessKeyId": "ASIACONT", "SecretAccessKey": "s", "Token": "t", "Expiration": "2026-11-28T16:00:00Z"}"#,
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "ASIACONT");
    setup.set(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "http://10.0.0.1/creds",
    );
    assert_eq!(
        setup.error(&cluster()).0,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI is http://10.0.0.1/creds, which the AWS SDKs do not ask for credentials: it must be https, or http on a loopback address or the ECS or EKS Pod Identity agent's"
    );
}

#[test]
fn an_instance_role_comes_from_imdsv2() {
    let setup = Setup::new();
    setup
        .server
        .answer("/imds/latest/api/token", Answer::with(200, "imds-token"));
    setup.server.answer(
        "/imds/latest/meta-data/iam/security-credentials/",
        Answer::with(200, "node-role\n"),
    );
    setup.server.answer(
        "/imds/latest/meta-data/iam/security-credentials/node-role",
        Answer::json(
            r#"{"Code": "Success", "AccessKeyId": "ASIAIMDS", "SecretAccessKey": "s", "Token": "t", "Expiration": "2026-11-28T16:00:00Z"}"#,
        ),
    );
    assert_eq!(credential_of(&setup.url(&cluster())), "ASIAIMDS");
    assert_eq!(setup.server.hits("/imds/latest/api/token"), 1);
}

#[test]
fn a_login_session_name_names_the_person() {
    let token = |claims: &str| {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims);
        Secret::new(format!("eyJhbGciOiJSUzI1NiJ9.{payload}.sig"))
    };
    assert_eq!(
        web_identity_session_name(&token(r#"{"sub": "x", "email": "ana@example.com"}"#)),
        "ana@example.com"
    );
    assert_eq!(
        web_identity_session_name(&token(r#"{"sub": "CgNhbmE SEgRsZGFw/x"}"#)),
        "CgNhbmE-SEgRsZGFw-x"
    );
    assert_eq!(web_identity_session_name(&token("{}")), "kubecred");
    assert_eq!(
        web_identity_session_name(&Secret::new("opaque")),
        "kubecred"
    );
}

#[test]
fn a_missing_cluster_is_an_input_error() {
    let setup = Setup::new();
    assert_eq!(
        setup.error(&EksSettings::default()),
        (
            "--grant-type aws needs the cluster's name; give --eks-cluster".into(),
            Exit::Input,
            false
        )
    );
}
