//! Application Default Credentials files: where google-auth looks for one (`--google-credentials`,
//! then `GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's `application_default_credentials.json`
//! under `CLOUDSDK_CONFIG`, `~/.config/gcloud` or Windows' `%APPDATA%\gcloud`), what kind it is
//! (its `type`), and the token each kind gets, at the endpoints the file names.

use super::IAM_SCOPE;
use super::endpoints::{self, Request, StsClient, StsExchange};
use super::{CloudToken, Context, DEFAULT_STS_URL, DEFAULT_TOKEN_URI, Net};
use crate::error::{Exit, fail};
use crate::secret::Secret;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use url::Url;

/// A credential file is a few KB; a larger one is the wrong file.
const MAX_FILE: u64 = 1024 * 1024;

/// The kinds kubecred reads, for the message about one it does not.
const KINDS: &str =
    "authorized_user, service_account, external_account and impersonated_service_account";

/// What gcloud names its ADC file.
const ADC_FILE: &str = "application_default_credentials.json";

/// A credential file found, and who named it (for messages).
pub struct Found {
    pub path: PathBuf,
    pub named_by: NamedBy,
}

#[derive(Clone, Copy)]
pub enum NamedBy {
    Flag,
    Variable,
    Gcloud,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match self.named_by {
            NamedBy::Flag => write!(f, "{path} (--google-credentials)"),
            NamedBy::Variable => write!(f, "{path} (GOOGLE_APPLICATION_CREDENTIALS)"),
            NamedBy::Gcloud => write!(f, "{path} (gcloud's application default credentials)"),
        }
    }
}

/// gcloud's configuration directory, as google-auth finds it: `CLOUDSDK_CONFIG`, else
/// `%APPDATA%\gcloud` on Windows, else `~/.config/gcloud`.
pub fn gcloud_config_dir(cx: &Context) -> Option<PathBuf> {
    if let Some(dir) = cx.var("CLOUDSDK_CONFIG") {
        return Some(PathBuf::from(dir));
    }
    if cfg!(windows) {
        return Some(match cx.var("APPDATA") {
            Some(appdata) => Path::new(&appdata).join("gcloud"),
            // google-auth's last resort: `C:\gcloud`.
            None => PathBuf::from(format!(
                "{}\\gcloud",
                cx.var("SystemDrive").unwrap_or_else(|| "C:".into())
            )),
        });
    }
    cx.home.map(|home| home.join(".config").join("gcloud"))
}

/// The credential file ADC uses, if any. A file named by the flag or the variable must exist (as
/// in google-auth, which does not go on to other sources then); gcloud's is used when present.
pub fn find(flag: Option<&Path>, cx: &Context) -> anyhow::Result<Option<Found>> {
    if let Some(path) = flag {
        return Ok(Some(Found {
            path: path.to_path_buf(),
            named_by: NamedBy::Flag,
        }));
    }
    if let Some(path) = cx.var("GOOGLE_APPLICATION_CREDENTIALS") {
        return Ok(Some(Found {
            path: PathBuf::from(path),
            named_by: NamedBy::Variable,
        }));
    }
    let Some(dir) = gcloud_config_dir(cx) else {
        return Ok(None);
    };
    let path = dir.join(ADC_FILE);
    Ok(path.is_file().then_some(Found {
        path,
        named_by: NamedBy::Gcloud,
    }))
}

/// The error when no source had credentials.
pub fn nothing_found(cx: &Context) -> anyhow::Error {
    let adc = gcloud_config_dir(cx)
        .map(|dir| format!("no {}", dir.join(ADC_FILE).display()))
        .unwrap_or_else(|| "no home directory for gcloud's application default credentials".into());
    crate::error::transient(
        Exit::Login,
        format!(
            "no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, {adc}, no metadata server answered, and gcloud is not on PATH; run `gcloud auth application-default login`, or name a credential file with --google-credentials"
        ),
    )
}

/// The fields of every kind kubecred reads (serde ignores the others).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct CredentialFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    // authorized_user
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    account: Option<String>,
    // service_account
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    // external_account
    pub(super) audience: Option<String>,
    pub(super) subject_token_type: Option<String>,
    token_url: Option<String>,
    pub(super) credential_source: Option<serde_json::Value>,
    pub(super) service_account_impersonation_url: Option<String>,
    service_account_impersonation: Option<ImpersonationOptions>,
    workforce_pool_user_project: Option<String>,
    // impersonated_service_account
    source_credentials: Option<Box<CredentialFile>>,
    delegates: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ImpersonationOptions {
    token_lifetime_seconds: Option<u64>,
}

/// Reads and parses the file, and gets its kind's token.
pub fn token(found: &Found, scopes: &[String], net: &Net) -> anyhow::Result<CloudToken> {
    let file = read(found)?;
    token_of(&file, found, scopes, net)
}

fn read(found: &Found) -> anyhow::Result<CredentialFile> {
    use std::io::Read;
    let unreadable = |err: std::io::Error| {
        fail(
            Exit::Input,
            format!("cannot read the Google credential file {found}: {err}; check the path"),
        )
    };
    let mut text = Vec::new();
    std::fs::File::open(&found.path)
        .map_err(unreadable)?
        .take(MAX_FILE + 1)
        .read_to_end(&mut text)
        .map_err(unreadable)?;
    if text.len() as u64 > MAX_FILE {
        return Err(fail(
            Exit::Input,
            format!(
                "the Google credential file {found} is larger than 1 MiB: it is not a credential file; check the path"
            ),
        ));
    }
    serde_json::from_slice(&text).map_err(|err| {
        fail(
            Exit::Input,
            format!(
                "the Google credential file {found} is not a JSON credential file (line {}, column {}); check the path, or create it again (`gcloud auth application-default login`)",
                err.line(),
                err.column()
            ),
        )
    })
}

fn missing(found: &Found, kind: &str, field: &str) -> anyhow::Error {
    fail(
        Exit::Input,
        format!(
            "the Google credential file {found} of type {kind} has no \"{field}\"; create it again (for a user: `gcloud auth application-default login`)"
        ),
    )
}

fn url_field(found: &Found, field: &str, value: &str) -> anyhow::Result<Url> {
    Url::parse(value).map_err(|err| {
        fail(
            Exit::Input,
            format!("the Google credential file {found} has a \"{field}\" that is not a URL ({err}); check the file"),
        )
    })
}

fn token_of(
    file: &CredentialFile,
    found: &Found,
    scopes: &[String],
    net: &Net,
) -> anyhow::Result<CloudToken> {
    match file.kind.as_deref() {
        Some("authorized_user") => authorized_user(file, found, net),
        Some("service_account") => service_account(file, found, scopes, net),
        Some("external_account") => external_account(file, found, scopes, net),
        Some("impersonated_service_account") => impersonated(file, found, scopes, net),
        Some(other) => Err(fail(
            Exit::Input,
            format!(
                "the Google credential file {found} has type \"{}\", which kubecred does not read (it reads {KINDS}); use a credential of one of those kinds, e.g. `gcloud auth application-default login`",
                crate::text::printable_brief(other, 60)
            ),
        )),
        None => Err(fail(
            Exit::Input,
            format!(
                "the Google credential file {found} has no \"type\": it is not a Google credential file (kubecred reads {KINDS}); check the path"
            ),
        )),
    }
}

/// A user's refresh token (`gcloud auth application-default login`), refreshed at `token_uri`.
fn authorized_user(file: &CredentialFile, found: &Found, net: &Net) -> anyhow::Result<CloudToken> {
    let kind = "authorized_user";
    let client_id = file
        .client_id
        .as_deref()
        .ok_or_else(|| missing(found, kind, "client_id"))?;
    let client_secret = Secret::new(
        file.client_secret
            .clone()
            .ok_or_else(|| missing(found, kind, "client_secret"))?,
    );
    let refresh_token = Secret::new(
        file.refresh_token
            .clone()
            .ok_or_else(|| missing(found, kind, "refresh_token"))?,
    );
    let url = url_field(
        found,
        "token_uri",
        file.token_uri.as_deref().unwrap_or(DEFAULT_TOKEN_URI),
    )?;
    let what = format!("the refresh of the Google user credentials in {found}");
    let issued = endpoints::refresh_grant(
        net,
        &Request {
            url: &url,
            what: &what,
        },
        client_id,
        &client_secret,
        &refresh_token,
        &|error| {
            match error {
            // Expired (unused for six months, a password change, a session-length policy) or
            // revoked: only a new login helps, and gcloud is the one that makes it.
            Some("invalid_grant") => (
                Exit::Login,
                "the login has expired or was revoked: run `gcloud auth application-default login` again".into(),
            ),
            Some("invalid_client" | "unauthorized_client") => (
                Exit::Provider,
                "the file's OAuth client is not accepted: create the file again with `gcloud auth application-default login`".into(),
            ),
            _ => (
                Exit::Provider,
                "run `gcloud auth application-default login` again, or check the file's token_uri".into(),
            ),
        }
        },
    )?;
    let who = file
        .account
        .clone()
        .filter(|account| !account.is_empty())
        .or_else(|| issued.id_token.as_ref().and_then(email_of));
    Ok(CloudToken {
        token: issued.token,
        expires_at: issued.expires_at,
        who,
    })
}

/// The `email` claim of an ID token Google issued with the access token, read without
/// verifying it: it only names the account for `status` and `whoami`, it authorizes nothing.
fn email_of(id_token: &Secret) -> Option<String> {
    use base64::Engine;
    let payload = id_token.expose().split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("email")?.as_str().map(str::to_string)
}

/// A service account key: a JWT signed with its private key, exchanged at `token_uri` (RFC 7523),
/// as google-auth and Google's Go library do for ADC.
fn service_account(
    file: &CredentialFile,
    found: &Found,
    scopes: &[String],
    net: &Net,
) -> anyhow::Result<CloudToken> {
    let kind = "service_account";
    let email = file
        .client_email
        .as_deref()
        .ok_or_else(|| missing(found, kind, "client_email"))?;
    let key = file
        .private_key
        .as_deref()
        .ok_or_else(|| missing(found, kind, "private_key"))?;
    let token_uri = file.token_uri.as_deref().unwrap_or(DEFAULT_TOKEN_URI);
    let url = url_field(found, "token_uri", token_uri)?;
    let assertion = sign_assertion(email, key, file.private_key_id.as_deref(), token_uri, scopes, net.cx.now)
        .map_err(|why| {
            fail(
                Exit::Input,
                format!("the private_key of the Google service account {email} in {found} cannot sign ({why}); create a new key for the service account"),
            )
        })?;
    let what = format!("the token request of the Google service account {email} ({found})");
    let issued = endpoints::jwt_bearer_grant(
        net,
        &Request {
            url: &url,
            what: &what,
        },
        &assertion,
        &|error| {
            match error {
            Some("invalid_grant") => (
                Exit::Provider,
                "the key may have been deleted or disabled, or this machine's clock is off: check the clock, or create a new key for the service account".into(),
            ),
            _ => (Exit::Provider, "check the file's token_uri and the service account".into()),
        }
        },
    )?;
    Ok(CloudToken {
        token: issued.token,
        expires_at: issued.expires_at,
        who: Some(email.to_string()),
    })
}

/// The assertion google-auth signs: RS256, `kid` the key's ID; `iss` the service account,
/// `scope` the scopes, `aud` the token URI, issued now, valid one hour.
pub(super) fn sign_assertion(
    email: &str,
    pem: &str,
    key_id: Option<&str>,
    audience: &str,
    scopes: &[String],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Secret, String> {
    #[derive(serde::Serialize)]
    struct Claims<'a> {
        iss: &'a str,
        scope: String,
        aud: &'a str,
        iat: i64,
        exp: i64,
    }
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes())
        .map_err(|_| "not an RSA private key in PEM".to_string())?;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = key_id.map(str::to_string);
    let iat = now.timestamp();
    let claims = Claims {
        iss: email,
        scope: scopes.join(" "),
        aud: audience,
        iat,
        exp: iat + 3600,
    };
    jsonwebtoken::encode(&header, &claims, &key)
        .map(Secret::new)
        .map_err(|err| err.to_string())
}

/// Workload or workforce identity federation: a subject token from the file's
/// `credential_source` exchanged at STS (`token_url`), then, when the file names one, the
/// service account it impersonates (`service_account_impersonation_url`).
fn external_account(
    file: &CredentialFile,
    found: &Found,
    scopes: &[String],
    net: &Net,
) -> anyhow::Result<CloudToken> {
    let kind = "external_account";
    let audience = file
        .audience
        .as_deref()
        .ok_or_else(|| missing(found, kind, "audience"))?;
    let subject_token_type = file
        .subject_token_type
        .as_deref()
        .ok_or_else(|| missing(found, kind, "subject_token_type"))?;
    let sts_url = url_field(
        found,
        "token_url",
        file.token_url.as_deref().unwrap_or(DEFAULT_STS_URL),
    )?;
    let impersonation = match &file.service_account_impersonation_url {
        Some(url) => Some((
            url_field(found, "service_account_impersonation_url", url)?,
            url.as_str(),
        )),
        None => None,
    };
    let subject = super::subject_token::read(file, found, net)?;
    let client_secret = client_secret_of(file);
    let client = file.client_id.as_deref().map(|id| StsClient {
        id,
        secret: client_secret.as_ref(),
    });
    let workforce = is_workforce_pool(audience);
    // With impersonation, STS's token only calls the IAM Credentials API: google-auth asks for
    // that API's scope, and the impersonated token gets the scopes asked for.
    let iam_scope = [IAM_SCOPE.to_string()];
    let sts_scopes = if impersonation.is_some() {
        &iam_scope[..]
    } else {
        scopes
    };
    let what = format!("the token exchange of the external account {found}");
    let exchanged = endpoints::sts_exchange(
        net,
        &StsExchange {
            sts_url: &sts_url,
            audience,
            subject_token: &subject,
            subject_token_type,
            scopes: sts_scopes,
            user_project: file
                .workforce_pool_user_project
                .as_deref()
                .filter(|_| workforce),
            client,
            what: &what,
        },
    )?;
    let Some((url, text)) = impersonation else {
        return Ok(CloudToken {
            token: exchanged.token,
            expires_at: exchanged.expires_at,
            who: None,
        });
    };
    let email = endpoints::impersonated_email(text);
    let lifetime = file
        .service_account_impersonation
        .as_ref()
        .and_then(|options| options.token_lifetime_seconds)
        .unwrap_or(3600);
    let what = format!(
        "the impersonation of {} by the external account {found}",
        email.as_deref().unwrap_or("the service account")
    );
    let issued = endpoints::generate_access_token(
        net,
        &url,
        &exchanged.token,
        scopes,
        &[],
        lifetime,
        &what,
    )?;
    Ok(CloudToken {
        token: issued.token,
        expires_at: issued.expires_at,
        who: email,
    })
}

fn client_secret_of(file: &CredentialFile) -> Option<Secret> {
    file.client_secret.clone().map(Secret::new)
}

/// A workforce pool's audience, as google-auth tells it:
/// `//iam.googleapis.com/locations/LOCATION/workforcePools/…`.
pub(super) fn is_workforce_pool(audience: &str) -> bool {
    audience
        .strip_prefix("//iam.googleapis.com/locations/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(location, rest)| !location.is_empty() && rest.starts_with("workforcePools/"))
}

/// A service account impersonated with a source credential's token (`gcloud auth
/// application-default login --impersonate-service-account`): the source (a user's refresh
/// token or a service account key) gets a `cloud-platform` token, which the IAM Credentials API
/// trades for the target's.
fn impersonated(
    file: &CredentialFile,
    found: &Found,
    scopes: &[String],
    net: &Net,
) -> anyhow::Result<CloudToken> {
    let kind = "impersonated_service_account";
    let text = file
        .service_account_impersonation_url
        .as_deref()
        .ok_or_else(|| missing(found, kind, "service_account_impersonation_url"))?;
    let url = url_field(found, "service_account_impersonation_url", text)?;
    let email = endpoints::impersonated_email(text).ok_or_else(|| {
        fail(
            Exit::Input,
            format!("the Google credential file {found} has a service_account_impersonation_url that names no service account (…/serviceAccounts/EMAIL:generateAccessToken); check the file"),
        )
    })?;
    let source = file
        .source_credentials
        .as_deref()
        .ok_or_else(|| missing(found, kind, "source_credentials"))?;
    let source_token = match source.kind.as_deref() {
        Some("authorized_user") => authorized_user(source, found, net)?,
        Some("service_account") => service_account(source, found, &[IAM_SCOPE.to_string()], net)?,
        other => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the Google credential file {found} impersonates with source credentials of type \"{}\", which kubecred does not read (it reads authorized_user and service_account there, as google-auth); create it again with `gcloud auth application-default login --impersonate-service-account`",
                    crate::text::printable_brief(other.unwrap_or(""), 60)
                ),
            ));
        }
    };
    let what = format!("the impersonation of {email} ({found})");
    let issued = endpoints::generate_access_token(
        net,
        &url,
        &source_token.token,
        scopes,
        file.delegates.as_deref().unwrap_or_default(),
        3600,
        &what,
    )?;
    Ok(CloudToken {
        token: issued.token,
        expires_at: issued.expires_at,
        who: Some(email),
    })
}
