//! A managed identity's token, from the endpoint the host offers, chosen from the environment as
//! azure-identity's `ManagedIdentityCredential` chooses it (and MSAL, which sends its requests):
//!
//! | environment | source | request |
//! |---|---|---|
//! | `IDENTITY_ENDPOINT` + `IDENTITY_HEADER` | App Service, Functions, Container Apps, Automation | GET `api-version=2019-08-01`, `X-IDENTITY-HEADER`, `Metadata: true`; a resource ID as `mi_res_id` |
//! | `IDENTITY_ENDPOINT` + `IMDS_ENDPOINT`, or Arc's agent installed | Azure Arc | GET `api-version=2020-06-01`, `Metadata: true`; answered 401 with `WWW-Authenticate: Basic realm=<file>`, whose `.key` in the agent's token directory is read and sent as `Authorization: Basic <key>` |
//! | `MSI_ENDPOINT` alone | Cloud Shell | POST form `resource=…`, `Metadata: true`; no user-assigned identity |
//! | otherwise | the instance metadata service (VMs, VM scale sets, AKS nodes, pod identity) | GET `{AZURE_POD_IDENTITY_AUTHORITY_HOST or http://169.254.169.254}/metadata/identity/oauth2/token`, `api-version=2018-02-01`, `Metadata: true`; a resource ID as `msi_res_id` |
//!
//! A user-assigned identity is named by `--client-id` (`client_id`) or `--identity-resource-id`.
//! Service Fabric (`IDENTITY_SERVER_THUMBPRINT`: its endpoint's certificate is trusted by
//! thumbprint) and Azure Machine Learning (`MSI_SECRET`) are refused with their reason.
//! azure-identity would also turn to workload identity when `AZURE_FEDERATED_TOKEN_FILE` is set;
//! here that is `--grant-type client-credentials --client-assertion-file`, as today.

use super::{check_not_expired, check_scope, resource_of, who};
use crate::clouds::CloudToken;
use crate::config::HttpSettings;
use crate::error::{Exit, fail, outage};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::path::{Path, PathBuf};

/// The instance metadata service's address (link-local, plain HTTP by design).
pub const IMDS_AUTHORITY: &str = "http://169.254.169.254";
const IMDS_TOKEN_PATH: &str = "/metadata/identity/oauth2/token";
/// Azure Arc's agent's local endpoint, when its variables are not set but the agent is installed.
const ARC_DEFAULT_ENDPOINT: &str = "http://localhost:40342/metadata/identity/oauth2/token";
/// A token answer is a few KB.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// Arc's key file is at most this large (MSAL checks the size before reading).
const MAX_ARC_KEY_BYTES: u64 = 4096;

/// Which identity of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The host's system-assigned identity.
    System,
    /// A user-assigned identity by its client ID (`--client-id`).
    ClientId(String),
    /// A user-assigned identity by its Azure resource ID (`--identity-resource-id`).
    ResourceId(String),
}

/// `--grant-type managed-identity`.
#[derive(Debug, Clone)]
pub struct ManagedIdentitySettings {
    pub scope: String,
    pub identity: Identity,
}

/// Where Azure Arc's agent keeps what this host's processes read: its token directory, whose
/// `.key` files answer its challenge, and its program, whose presence says this is an Arc host.
#[derive(Debug, Clone)]
pub struct ArcAgent {
    pub key_dir: Option<PathBuf>,
    pub program: Option<PathBuf>,
}

impl ArcAgent {
    /// The agent's places on this OS (MSAL's: Linux and Windows only).
    pub fn of_this_host(env: &dyn Fn(&str) -> Option<String>) -> ArcAgent {
        if cfg!(target_os = "linux") {
            ArcAgent {
                key_dir: Some("/var/opt/azcmagent/tokens".into()),
                program: Some("/opt/azcmagent/bin/himds".into()),
            }
        } else if cfg!(windows) {
            ArcAgent {
                key_dir: env("ProgramData").map(|data| {
                    Path::new(&data)
                        .join("AzureConnectedMachineAgent")
                        .join("Tokens")
                }),
                program: env("ProgramFiles").map(|files| {
                    Path::new(&files)
                        .join("AzureConnectedMachineAgent")
                        .join("himds.exe")
                }),
            }
        } else {
            ArcAgent {
                key_dir: None,
                program: None,
            }
        }
    }
}

/// The source the environment names, with what its request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    AppService { endpoint: String, header: Secret },
    Arc { endpoint: String },
    CloudShell { endpoint: String },
    Imds { authority: String },
}

impl Source {
    /// What it is, in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Source::AppService { .. } => {
                "App Service's managed identity endpoint (IDENTITY_ENDPOINT)"
            }
            Source::Arc { .. } => "Azure Arc's managed identity endpoint",
            Source::CloudShell { .. } => "Cloud Shell's managed identity endpoint (MSI_ENDPOINT)",
            Source::Imds { .. } => "the instance metadata service",
        }
    }
}

/// The source, as azure-identity and MSAL pick it from the environment (an empty variable counts
/// as unset, as there).
pub fn source(env: &dyn Fn(&str) -> Option<String>, arc: &ArcAgent) -> anyhow::Result<Source> {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(endpoint) = var("IDENTITY_ENDPOINT") {
        if let Some(header) = var("IDENTITY_HEADER") {
            if var("IDENTITY_SERVER_THUMBPRINT").is_some() {
                return Err(fail(
                    Exit::Input,
                    "this is Service Fabric's managed identity (IDENTITY_SERVER_THUMBPRINT is set), whose endpoint is trusted by its certificate's thumbprint, which kubecred does not do; use a workload identity or a service principal here",
                ));
            }
            return Ok(Source::AppService {
                endpoint,
                header: Secret::new(header),
            });
        }
        if var("IMDS_ENDPOINT").is_some() {
            return Ok(Source::Arc { endpoint });
        }
    }
    if let Some(endpoint) = var("MSI_ENDPOINT") {
        if var("MSI_SECRET").is_some() {
            return Err(fail(
                Exit::Input,
                "this is Azure Machine Learning's managed identity (MSI_ENDPOINT and MSI_SECRET are set), which kubecred does not speak; use a workload identity or a service principal here",
            ));
        }
        return Ok(Source::CloudShell { endpoint });
    }
    if arc.program.as_deref().is_some_and(Path::exists) {
        return Ok(Source::Arc {
            endpoint: ARC_DEFAULT_ENDPOINT.into(),
        });
    }
    let authority = var("AZURE_POD_IDENTITY_AUTHORITY_HOST").unwrap_or(IMDS_AUTHORITY.into());
    Ok(Source::Imds { authority })
}

/// The token for `settings` from the source this host's environment names.
pub fn token(
    settings: &ManagedIdentitySettings,
    env: &dyn Fn(&str) -> Option<String>,
    http: &HttpSettings,
    now: DateTime<Utc>,
) -> anyhow::Result<CloudToken> {
    token_with_arc(settings, env, http, now, &ArcAgent::of_this_host(env))
}

/// [`token`] with Arc's agent's places given (tests put them in a directory of their own).
pub fn token_with_arc(
    settings: &ManagedIdentitySettings,
    env: &dyn Fn(&str) -> Option<String>,
    http: &HttpSettings,
    now: DateTime<Utc>,
    arc: &ArcAgent,
) -> anyhow::Result<CloudToken> {
    check_scope(&settings.scope)?;
    let source = source(env, arc)?;
    if matches!(source, Source::CloudShell { .. }) && settings.identity != Identity::System {
        return Err(fail(
            Exit::Input,
            "Cloud Shell's managed identity is the signed-in user's: it takes no --client-id or --identity-resource-id; drop them",
        ));
    }
    let request = request(&source, settings)?;
    let client = crate::http::client(http, http.timeout)?;
    let mut answer = send(&client, &request, &source)?;
    if let Source::Arc { .. } = source
        && answer.status == reqwest::StatusCode::UNAUTHORIZED
    {
        let key = arc_key(&answer.headers, arc)?;
        let mut again = request.clone();
        let mut value =
            HeaderValue::from_str(&format!("Basic {}", key.expose())).map_err(|_| {
                fail(
                    Exit::Provider,
                    "Azure Arc's key file holds characters a header cannot carry; check the agent",
                )
            })?;
        value.set_sensitive(true);
        again.headers.insert(reqwest::header::AUTHORIZATION, value);
        answer = send(&client, &again, &source)?;
    }
    let answered = parse_answer(&answer, &source, settings, now)?;
    if let Source::Arc { .. } = source {
        arc_confirms_the_identity(&answer.body, &settings.identity)?;
    }
    check_not_expired(answered.expires_at, now, source.name())?;
    Ok(answered)
}

/// One request, before it is sent: for tests to compare with what azure-identity sends.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: reqwest::Method,
    pub url: url::Url,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// The request `source` takes for `settings` (the first one, for Arc).
pub fn request(source: &Source, settings: &ManagedIdentitySettings) -> anyhow::Result<Request> {
    let resource = resource_of(&settings.scope);
    let parse = |raw: &str, what: &str| {
        url::Url::parse(raw).map_err(|_| {
            fail(
                Exit::Input,
                format!(
                    "{what} {:?} is not a URL; check the variable",
                    crate::text::printable_brief(raw, 100)
                ),
            )
        })
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        HeaderName::from_static("metadata"),
        HeaderValue::from_static("true"),
    );
    // How each source names a user-assigned identity by resource ID (MSAL's mappings).
    let (mut url, resource_id_param, api_version) = match source {
        Source::Imds { authority } => (
            parse(
                &format!("{}{IMDS_TOKEN_PATH}", authority.trim_end_matches('/')),
                "AZURE_POD_IDENTITY_AUTHORITY_HOST",
            )?,
            "msi_res_id",
            "2018-02-01",
        ),
        Source::AppService { endpoint, header } => {
            let mut value = HeaderValue::from_str(header.expose()).map_err(|_| {
                fail(
                    Exit::Input,
                    "IDENTITY_HEADER holds characters a header cannot carry",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-identity-header"), value);
            (
                parse(endpoint, "IDENTITY_ENDPOINT")?,
                "mi_res_id",
                "2019-08-01",
            )
        }
        Source::Arc { endpoint } => (
            parse(endpoint, "IDENTITY_ENDPOINT")?,
            "msi_res_id",
            "2020-06-01",
        ),
        Source::CloudShell { endpoint } => {
            headers.insert(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
            let body = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("resource", resource)
                .finish();
            return Ok(Request {
                method: reqwest::Method::POST,
                url: parse(endpoint, "MSI_ENDPOINT")?,
                headers,
                body: body.into_bytes(),
            });
        }
    };
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("api-version", api_version);
        query.append_pair("resource", resource);
        match &settings.identity {
            Identity::System => {}
            Identity::ClientId(id) => {
                query.append_pair("client_id", id);
            }
            Identity::ResourceId(id) => {
                query.append_pair(resource_id_param, id);
            }
        }
    }
    Ok(Request {
        method: reqwest::Method::GET,
        url,
        headers,
        body: Vec::new(),
    })
}

fn send(
    client: &crate::http::Client,
    request: &Request,
    source: &Source,
) -> anyhow::Result<crate::http::Answer> {
    let shown = crate::text::display_url(&request.url);
    let doing = format!("requesting a managed identity token from {}", source.name());
    client
        .send(&crate::http::Outgoing {
            method: request.method.clone(),
            url: &request.url,
            headers: request.headers.clone(),
            body: request.body.clone(),
            what: &doing,
            body_cap: MAX_ANSWER_BYTES,
            // Asking again for a managed identity's token spends nothing.
            replay: crate::http::Replay::Safe,
            recipient: crate::http::Recipient::Other,
        })
        .map_err(|failure| {
            let hint = match source {
                Source::Imds { .. } => "; kubecred is not on an Azure VM, scale set or AKS node with a managed identity, or the pod cannot reach 169.254.169.254 (set AZURE_POD_IDENTITY_AUTHORITY_HOST where pod identity serves it)",
                _ => "; check the endpoint variable the host set",
            };
            outage(format!("{doing} at {shown}: {failure}{hint}"))
        })
}

#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: Option<Secret>,
    /// Epoch seconds, a number or a string of one (App Service and IMDS send strings).
    expires_on: Option<serde_json::Value>,
    expires_in: Option<serde_json::Value>,
}

fn number(value: &Option<serde_json::Value>) -> Option<i64> {
    match value {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
}

fn parse_answer(
    answer: &crate::http::Answer,
    source: &Source,
    settings: &ManagedIdentitySettings,
    now: DateTime<Utc>,
) -> anyhow::Result<CloudToken> {
    let name = source.name();
    let status = answer.status;
    if !status.is_success() {
        let mut message = format!(
            "{name} answered {}{}",
            crate::http::describe_status(status, &answer.headers),
            crate::http::after_attempts(answer.attempts)
        );
        if let Some(error) = error_fields(&answer.body) {
            message.push_str(&format!(": {error}"));
        }
        // IMDS answers 400 for an identity the host does not have (none assigned, or not the
        // one named): the settings, not an outage.
        if status == reqwest::StatusCode::BAD_REQUEST || status == reqwest::StatusCode::NOT_FOUND {
            let named = match &settings.identity {
                Identity::System => "system-assigned identity".to_string(),
                Identity::ClientId(id) => format!("identity with client ID {id}"),
                Identity::ResourceId(id) => format!("identity {id}"),
            };
            message.push_str(&format!(
                "; no {named} is assigned to this host: assign it, or name an assigned one with --client-id or --identity-resource-id"
            ));
            return Err(fail(Exit::Provider, message));
        }
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            message.push_str("; the endpoint is failing or busy, try again later");
            return Err(outage(message));
        }
        message.push_str("; check the host's managed identity settings");
        return Err(fail(Exit::Provider, message));
    }
    let parsed: TokenAnswer = serde_json::from_slice(&answer.body).map_err(|_| {
        outage(format!(
            "{name}'s answer is not a token answer (JSON with access_token); check the endpoint"
        ))
    })?;
    let token = parsed
        .access_token
        .filter(|token| !token.expose().trim().is_empty())
        .ok_or_else(|| {
            fail(
                Exit::Provider,
                format!("{name}'s answer has no access_token"),
            )
        })?;
    let expires_at = number(&parsed.expires_on)
        .and_then(|epoch| DateTime::from_timestamp(epoch, 0))
        .or_else(|| number(&parsed.expires_in).map(|secs| now + chrono::Duration::seconds(secs)))
        .ok_or_else(|| {
            fail(
                Exit::Provider,
                format!("{name}'s answer has no expiry (expires_on, expires_in)"),
            )
        })?;
    Ok(CloudToken {
        who: who(token.expose()),
        token,
        expires_at,
    })
}

/// `error (error_description)` of an error answer, or App Service's `statusCode, message`.
fn error_fields(body: &[u8]) -> Option<String> {
    if let Some(oauth) = crate::http::oauth_error_fields(body) {
        return Some(oauth);
    }
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = json
        .get("message")
        .or_else(|| json.get("Message"))?
        .as_str()?;
    Some(crate::text::printable_brief(message.trim(), 300).into_owned())
}

/// The key Arc's challenge names (`WWW-Authenticate: Basic realm=<path>`), read from the agent's
/// own token directory: the file's name is taken from the challenge, the directory never (MSAL's
/// rule), it must end in `.key` and hold at most 4 KiB.
fn arc_key(headers: &HeaderMap, arc: &ArcAgent) -> anyhow::Result<Secret> {
    let bad = |what: &str| {
        fail(
            Exit::Provider,
            format!("Azure Arc's challenge {what}; check the Connected Machine agent"),
        )
    };
    let challenge = headers
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| bad("has no WWW-Authenticate header"))?;
    let parts: Vec<&str> = challenge.split('=').collect();
    if parts.len() != 2 || !parts[0].trim().eq_ignore_ascii_case("basic realm") {
        return Err(bad("is not `Basic realm=<file>`"));
    }
    let named = Path::new(parts[1].trim());
    let stem = named
        .file_stem()
        .filter(|stem| !stem.is_empty())
        .ok_or_else(|| bad("names no file"))?;
    let dir = arc.key_dir.as_deref().ok_or_else(|| {
        fail(
            Exit::Input,
            "Azure Arc's managed identity is supported on Linux and Windows only",
        )
    })?;
    let mut name = stem.to_os_string();
    name.push(".key");
    let file = dir.join(name);
    let unreadable = |err: String| {
        fail(
            Exit::Input,
            format!(
                "cannot read Azure Arc's key file {}: {err}; kubecred must run as a user in the agent's himds group (or as an administrator)",
                file.display()
            ),
        )
    };
    let size = std::fs::metadata(&file)
        .map_err(|err| unreadable(err.to_string()))?
        .len();
    if size > MAX_ARC_KEY_BYTES {
        return Err(bad(&format!(
            "names {}, which is larger than {MAX_ARC_KEY_BYTES} bytes",
            file.display()
        )));
    }
    let key = std::fs::read_to_string(&file).map_err(|err| unreadable(err.to_string()))?;
    Ok(Secret::new(key))
}

/// A user-assigned identity must be the one Arc answered for: an agent that does not support
/// user-assigned identities answers with the system-assigned one (MSAL fails closed too).
fn arc_confirms_the_identity(body: &[u8], identity: &Identity) -> anyhow::Result<()> {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(str::to_string);
    let (asked, echoed) = match identity {
        Identity::System => return Ok(()),
        Identity::ClientId(id) => (id, field("client_id")),
        Identity::ResourceId(id) => (id, field("msi_res_id").or_else(|| field("mi_res_id"))),
    };
    if echoed.is_some_and(|echoed| echoed.eq_ignore_ascii_case(asked)) {
        return Ok(());
    }
    Err(fail(
        Exit::Provider,
        format!(
            "Azure Arc did not confirm that its token is for {asked} (an agent without user-assigned identities answers for the machine's own); update the Connected Machine agent, or use the system-assigned identity"
        ),
    ))
}

#[cfg(test)]
#[path = "managed_identity_tests.rs"]
mod tests;
