//! The provider's discovery document (OpenID Connect Discovery 1.0): fetched from
//! `<issuer>/.well-known/openid-configuration`, checked against the configured issuer (it must
//! name exactly that issuer; endpoints must be https unless on loopback), and cached on disk for
//! [`DISCOVERY_TTL`].

use super::{fresh, read_cache, write_cache};
use crate::config::is_loopback_host;
use crate::error::{Exit, fail};
use crate::http;
use crate::http::Client;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::path::Path;
use url::Url;

/// How long a fetched discovery document is used without asking the provider again.
pub const DISCOVERY_TTL: Duration = Duration::hours(24);

/// What the discovery cache file holds. The document is kept as sent, so that a newer kubecred
/// that reads more fields finds them.
#[derive(Serialize, Deserialize)]
struct CachedDiscovery {
    issuer: String,
    fetched_at: DateTime<Utc>,
    document: Value,
}

/// The metadata of `issuer`: from the cache file at `cache_path` when it is fresh and still
/// valid, otherwise fetched (and then cached). `shown` is the issuer as the user wrote it, for
/// messages (`Url` adds a `/` to a bare host).
pub(super) fn discover(
    http: &Client,
    issuer: &Url,
    shown: &str,
    cache_path: &Path,
    now: DateTime<Utc>,
) -> anyhow::Result<ProviderMetadata> {
    let cached = read_cache::<CachedDiscovery>(cache_path)
        .filter(|c| c.issuer == issuer.as_str() && fresh(c.fetched_at, now, DISCOVERY_TTL))
        .and_then(|c| ProviderMetadata::validate(&c.document, issuer, shown).ok());
    if let Some(metadata) = cached {
        crate::debug!(1, "using the cached discovery document of {shown}");
        return Ok(metadata);
    }
    let url = well_known_url(issuer);
    crate::debug!(1, "fetching {url}");
    let document: Value = http::get_json(http, &url, "the OpenID discovery document")?;
    let metadata = ProviderMetadata::validate(&document, issuer, shown)?;
    write_cache(
        cache_path,
        &CachedDiscovery {
            issuer: issuer.to_string(),
            fetched_at: now,
            document,
        },
    );
    Ok(metadata)
}

/// The parts of the provider's discovery document kubecred uses, validated: `issuer` is the
/// provider's own spelling (tokens must carry exactly it), endpoints are https unless on loopback.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<Url>,
    pub token_endpoint: Url,
    pub device_authorization_endpoint: Option<Url>,
    /// RFC 7009 token revocation (`kubecred logout`); RFC 8414 names it in discovery.
    pub revocation_endpoint: Option<Url>,
    /// The client authentication methods the revocation endpoint takes (RFC 8414), if listed:
    /// without `none`, a public client cannot revoke there.
    pub revocation_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub jwks_uri: Url,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the provider puts `iss` on every authorization response, so one without it is
    /// refused. Anything but `true` counts as no.
    pub authorization_response_iss_parameter_supported: bool,
}

impl ProviderMetadata {
    /// Whether PKCE with S256 should work: `code_challenge_methods_supported` is absent (or not a
    /// list of strings, which counts as absent), or it contains exactly `"S256"`. Providers that
    /// do not publish the list often support PKCE anyway, so an absent list counts as yes; a list
    /// without S256 (an empty one included) counts as no.
    pub fn supports_pkce_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_none_or(|methods| methods.iter().any(|m| m == "S256"))
    }

    /// The methods discovery lists for the revocation endpoint when `none` is not among them:
    /// the provider announces that a public client cannot revoke there (glewlwyd lists none at
    /// all). `None` when the list has `none`, or is absent: RFC 8414's default for an absent
    /// list, `client_secret_basic`, is not what the providers that leave it out do.
    pub fn revocation_refuses_public_clients(&self) -> Option<&[String]> {
        self.revocation_endpoint_auth_methods_supported
            .as_deref()
            .filter(|methods| !methods.iter().any(|m| m == "none"))
    }
}

/// The discovery document as sent: unknown fields ignored, optional lists of the wrong type
/// treated as absent (some providers publish odd values there, and they are only hints).
#[derive(Deserialize)]
struct RawMetadata {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    device_authorization_endpoint: Option<String>,
    revocation_endpoint: Option<String>,
    jwks_uri: Option<String>,
    #[serde(default, deserialize_with = "lenient_list")]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient_list")]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient_list")]
    revocation_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Value,
}

fn lenient_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

impl ProviderMetadata {
    /// Checks a discovery document against the configured issuer (also `setup`'s check);
    /// `shown` is that issuer as the user wrote it, which the messages name.
    pub fn validate(
        document: &Value,
        configured: &Url,
        shown: &str,
    ) -> anyhow::Result<ProviderMetadata> {
        let problem = |reason: String| {
            fail(
                Exit::Provider,
                format!("the OpenID discovery document of {shown} {reason}"),
            )
        };
        let raw: RawMetadata = serde_json::from_value(document.clone())
            .map_err(|err| problem(format!("is malformed ({err}); check --issuer-url")))?;

        let issuer = raw
            .issuer
            .ok_or_else(|| problem("has no issuer; check --issuer-url".into()))?;
        // Entra ID's multi-tenant endpoints (common, organizations, consumers) publish a template
        // for an issuer: every tenant's tokens carry their own, and an API server trusts one.
        if issuer.contains("{tenantid}") {
            return Err(problem(format!(
                "names the template issuer {issuer} (Entra ID's multi-tenant endpoint); use your tenant's own issuer, \
                 https://login.microsoftonline.com/<tenant ID>/v2.0, as the API server does"
            )));
        }
        if !same_issuer(&issuer, configured) {
            return Err(problem(format!(
                "names the issuer {issuer}; set --issuer-url to exactly that (tokens carry it in iss)"
            )));
        }

        let endpoint = |name: &str, value: Option<String>| -> anyhow::Result<Option<Url>> {
            let Some(value) = value else { return Ok(None) };
            let url = Url::parse(&value)
                .map_err(|err| problem(format!("has an invalid {name} {value:?} ({err})")))?;
            match url.scheme() {
                "https" => Ok(Some(url)),
                "http" if is_loopback_host(&url) => Ok(Some(url)),
                _ => Err(problem(format!(
                    "has {name} {}, which is not https; kubecred sends credentials only over https (plain http only on loopback)",
                    crate::text::display_url(&url)
                ))),
            }
        };
        let required = |name: &str, value: Option<String>| -> anyhow::Result<Url> {
            endpoint(name, value)?.ok_or_else(|| {
                problem(format!(
                    "has no {name}; is {shown} an OpenID Connect provider?"
                ))
            })
        };

        Ok(ProviderMetadata {
            authorization_endpoint: endpoint("authorization_endpoint", raw.authorization_endpoint)?,
            token_endpoint: required("token_endpoint", raw.token_endpoint)?,
            device_authorization_endpoint: endpoint(
                "device_authorization_endpoint",
                raw.device_authorization_endpoint,
            )?,
            revocation_endpoint: endpoint("revocation_endpoint", raw.revocation_endpoint)?,
            revocation_endpoint_auth_methods_supported: raw
                .revocation_endpoint_auth_methods_supported,
            jwks_uri: required("jwks_uri", raw.jwks_uri)?,
            code_challenge_methods_supported: raw.code_challenge_methods_supported,
            token_endpoint_auth_methods_supported: raw.token_endpoint_auth_methods_supported,
            authorization_response_iss_parameter_supported: raw
                .authorization_response_iss_parameter_supported
                == Value::Bool(true),
            issuer,
        })
    }
}

/// The OpenID spec wants the issuer to match exactly, but `https://x` against `https://x/` is a
/// common configuration slip (and `Url` adds the slash to a bare host): accept exactly that one.
fn same_issuer(document_issuer: &str, configured: &Url) -> bool {
    let configured = configured.as_str();
    document_issuer == configured
        || document_issuer.strip_suffix('/') == Some(configured)
        || configured.strip_suffix('/') == Some(document_issuer)
}

/// `<issuer>/.well-known/openid-configuration`.
pub fn well_known_url(issuer: &Url) -> Url {
    let mut url = issuer.clone();
    let path = format!(
        "{}/.well-known/openid-configuration",
        issuer.path().trim_end_matches('/')
    );
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    url
}
