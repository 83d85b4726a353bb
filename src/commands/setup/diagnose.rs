//! `setup`'s checks before it logs in, one line each on stderr (`ok`, `warn`), stopping at the
//! first that would make the login fail, with its cause and its fix: the provider unreachable
//! (DNS, refused, timeout — `http::NetworkFailure` tells them apart), its TLS certificate not
//! trusted (with the CA flags), no discovery document at the issuer URL or one naming another
//! issuer (`oidc::ProviderMetadata` vets it as every run does), the endpoints and grants the
//! chosen flow needs (PKCE S256, the device flow, client credentials, refresh tokens and
//! `offline_access`), and this machine's clock against the provider's `Date` header.

use crate::clock::Clock;
use crate::config::{Config, Grant};
use crate::error::{Exit, fail};
use crate::http::{self, NetworkFailure};
use crate::oidc::{self, ProviderMetadata};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

/// Beyond this much difference from the provider's clock a warning is shown; beyond
/// `oidc::CLOCK_LEEWAY` the setup stops (the tokens' iat/nbf/exp checks would fail).
const SKEW_WARNING: chrono::Duration = chrono::Duration::seconds(10);

/// What a check found. `Fail` stops setup with the cause and the fix on the error line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Ok(String),
    Warn(String),
    Fail(String),
}

/// What the checks learned, for the advice after the login.
pub struct Diagnosis {
    pub offline_access_listed: bool,
}

/// Runs the checks in order, printing each; the first failure is returned as the error.
pub fn run(config: &Config, clock: &dyn Clock) -> anyhow::Result<Diagnosis> {
    crate::log::stderr(format_args!(
        "kubecred: checking {} before logging in\n",
        config.issuer_as_given
    ));
    let url = oidc::well_known_url(&config.issuer);
    let shown = crate::text::display_url(&url);
    let answer = fetch_discovery(config, &url, &shown)?;
    if let Some(date) = date_header(&answer) {
        report(clock_skew(clock.now(), date))?;
    }
    let document = discovery_document(&answer, &shown)?;
    let metadata = ProviderMetadata::validate(&document, &config.issuer, &config.issuer_as_given)?;
    report(Finding::Ok(format!(
        "discovery: {shown} names the issuer {}",
        metadata.issuer
    )))?;
    let extras: DiscoveryExtras = serde_json::from_value(document).unwrap_or_default();
    for finding in flow_findings(config, &metadata, &extras) {
        report(finding)?;
    }
    Ok(Diagnosis {
        offline_access_listed: extras.lists_scope("offline_access"),
    })
}

/// Prints a finding's line; a failure is the error instead, which says it.
fn report(finding: Finding) -> anyhow::Result<()> {
    match finding {
        Finding::Ok(text) => crate::log::stderr(format_args!("  ok    {text}\n")),
        Finding::Warn(text) => crate::log::stderr(format_args!("  warn  {text}\n")),
        Finding::Fail(text) => return Err(fail(Exit::Provider, text)),
    }
    Ok(())
}

/// The provider's answer at the discovery URL (`url`, `shown` as the user may see it), whatever
/// its status; a provider that could not be reached is the error, with its cause and fix.
fn fetch_discovery(config: &Config, url: &url::Url, shown: &str) -> anyhow::Result<http::Answer> {
    let client = http::client(&config.http, config.http.timeout)?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let outgoing = http::Outgoing {
        method: reqwest::Method::GET,
        url,
        headers,
        body: Vec::new(),
        what: &format!("fetching the discovery document from {shown}"),
        body_cap: http::MAX_JSON_BODY,
        replay: http::Replay::Safe,
        recipient: http::Recipient::Provider,
    };
    client.send(&outgoing).map_err(|failure| match failure {
        http::RequestFailure::Network {
            failure, through, ..
        } => {
            let mut message = unreachable(shown, &failure);
            if let Some(proxy) = through {
                message.push_str(&format!(" (through {proxy})"));
            }
            fail(Exit::Provider, message)
        }
        other => fail(Exit::Provider, format!("fetching {shown}: {other}")),
    })
}

/// The time the provider's answer says it was sent (its `Date` header), to check our clock by.
fn date_header(answer: &http::Answer) -> Option<DateTime<Utc>> {
    let date = answer.headers.get(reqwest::header::DATE)?.to_str().ok()?;
    Some(DateTime::parse_from_rfc2822(date).ok()?.with_timezone(&Utc))
}

/// The discovery document in the provider's answer: none at this URL (404), a refusal or
/// something other than JSON is the error, saying what to set.
fn discovery_document(answer: &http::Answer, shown: &str) -> anyhow::Result<Value> {
    if answer.status == reqwest::StatusCode::NOT_FOUND {
        return Err(fail(
            Exit::Provider,
            format!(
                "{shown} answered HTTP 404: there is no OpenID discovery document at this issuer URL; \
                 set --issuer-url to the provider's issuer, exactly as its tokens carry it in iss \
                 (Keycloak: https://HOST/realms/REALM, Entra ID: https://login.microsoftonline.com/TENANT/v2.0, \
                 Dex: its config's issuer)"
            ),
        ));
    }
    http::check_status(answer, &format!("the OpenID discovery document at {shown}"))?;
    serde_json::from_slice(&answer.body).map_err(|_| {
        fail(
            Exit::Provider,
            format!(
                "the OpenID discovery document at {shown} is not JSON ({}); check the issuer URL",
                http::describe_status(answer.status, &answer.headers)
            ),
        )
    })
}

/// The cause and the fix for a provider that could not be reached, by the failure's type.
fn unreachable(shown: &str, failure: &NetworkFailure) -> String {
    let cause = failure.explain();
    match failure {
        NetworkFailure::UntrustedCertificate
        | NetworkFailure::CertificateOutOfDate
        | NetworkFailure::CertificateForAnotherName { .. }
        | NetworkFailure::Tls { .. } => format!(
            "fetching {shown}: {cause} (TLS trust: --certificate-authority=FILE takes a PEM bundle, \
             --certificate-authority-data=BASE64 the same in base64; kube-apiserver needs the CA too)"
        ),
        _ => format!("fetching {shown}: {cause}"),
    }
}

/// This machine's clock against the provider's `Date` (whole seconds, so a second of slack).
pub fn clock_skew(now: DateTime<Utc>, provider: DateTime<Utc>) -> Finding {
    let skew = now - provider;
    let size = crate::duration::display_elapsed(skew.abs().to_std().unwrap_or_default());
    let direction = if skew > chrono::Duration::zero() {
        "ahead of"
    } else {
        "behind"
    };
    if skew.abs() > oidc::CLOCK_LEEWAY {
        Finding::Fail(format!(
            "this machine's clock is {size} {direction} the provider's (its Date header): tokens \
             would look expired or not yet valid; synchronise the clock (NTP, e.g. timedatectl set-ntp true)"
        ))
    } else if skew.abs() > SKEW_WARNING + chrono::Duration::seconds(1) {
        Finding::Warn(format!(
            "this machine's clock is {size} {direction} the provider's; within the {}s kubecred \
             tolerates, but synchronise it (NTP) before it grows",
            oidc::CLOCK_LEEWAY.num_seconds()
        ))
    } else {
        Finding::Ok("clock: in step with the provider's Date header".into())
    }
}

/// The discovery fields only setup looks at (hints: absent lists mean "not published").
#[derive(Debug, Default, Deserialize)]
pub struct DiscoveryExtras {
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub response_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

impl DiscoveryExtras {
    /// Whether the provider publishes this grant type; `None` when it publishes no list (the
    /// OpenID default is authorization_code and implicit).
    fn lists_grant(&self, grant: &str) -> Option<bool> {
        self.grant_types_supported
            .as_ref()
            .map(|list| list.iter().any(|g| g == grant))
    }

    /// `ok` when discovery lists `grant` or no grants at all, else the hint that it leaves out
    /// `what`.
    fn grant_finding(&self, grant: &str, ok: &str, what: &str) -> Finding {
        if self.lists_grant(grant) == Some(false) {
            unlisted(what)
        } else {
            Finding::Ok(ok.into())
        }
    }

    fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|list| list.iter().any(|s| s == scope))
    }
}

/// A grant or response type discovery does not list: a hint, not a verdict. RFC 8414 makes
/// `grant_types_supported` optional and informational, and providers leave out grants they
/// serve (client credentials, password, refresh); `setup` tries the flow below, and a refusal
/// then names what the provider answered.
fn unlisted(what: &str) -> Finding {
    Finding::Warn(format!(
        "discovery does not list {what}; the list is informational and often incomplete, so setup tries it"
    ))
}

/// What the chosen grant needs from the provider. Only a missing endpoint stops `setup` (without
/// it there is nothing to try); what discovery lists is a hint. A person's login is followed by
/// what renewing it needs (refresh tokens); a grant that needs nobody is simply run again.
pub fn flow_findings(
    config: &Config,
    metadata: &ProviderMetadata,
    extras: &DiscoveryExtras,
) -> Vec<Finding> {
    let mut findings = match config.grant {
        // A cloud's own credentials: no provider to diagnose (setup takes them apart).
        Grant::Google => Vec::new(),
        Grant::Authcode | Grant::AuthcodeKeyboard => {
            if metadata.authorization_endpoint.is_none() {
                return vec![Finding::Fail(
                    "discovery names no authorization_endpoint, so the provider offers no browser login; \
                     use --grant-type=device-code, or client-credentials for a service"
                        .into(),
                )];
            }
            vec![code_flow_finding(extras), pkce_finding(config, metadata)]
        }
        Grant::DeviceCode => {
            if metadata.device_authorization_endpoint.is_none() {
                return vec![Finding::Fail(
                    "discovery names no device_authorization_endpoint: the provider does not offer the device flow here; \
                     enable it for the client, or use --grant-type=authcode"
                        .into(),
                )];
            }
            vec![extras.grant_finding(
                "urn:ietf:params:oauth:grant-type:device_code",
                "device flow: device authorization endpoint listed",
                "the device_code grant (urn:ietf:params:oauth:grant-type:device_code)",
            )]
        }
        Grant::Password => vec![extras.grant_finding(
            "password",
            "the password grant: grant listed",
            "the password grant (password)",
        )],
        Grant::FederatedToken => {
            return vec![Finding::Ok(
                "federated-token: the CI token is the credential, no request to this provider"
                    .into(),
            )];
        }
        Grant::TokenExchange => {
            return vec![extras.grant_finding(
                "urn:ietf:params:oauth:grant-type:token-exchange",
                "token exchange: grant listed",
                "token exchange (urn:ietf:params:oauth:grant-type:token-exchange)",
            )];
        }
        Grant::ClientCredentials => {
            return vec![extras.grant_finding(
                "client_credentials",
                "client credentials: grant listed",
                "the client_credentials grant",
            )];
        }
    };
    findings.push(refresh_finding(config, extras));
    findings
}

/// The browser login's code flow: listed, or a hint that discovery leaves it out.
fn code_flow_finding(extras: &DiscoveryExtras) -> Finding {
    let code_response = extras
        .response_types_supported
        .as_ref()
        .is_none_or(|list| list.iter().any(|r| r.split(' ').eq(["code"])));
    if code_response && extras.lists_grant("authorization_code") != Some(false) {
        Finding::Ok("browser login: authorization endpoint and code flow listed".into())
    } else {
        unlisted("the authorization code flow (response type code, grant authorization_code)")
    }
}

fn pkce_finding(config: &Config, metadata: &ProviderMetadata) -> Finding {
    let listed = metadata.code_challenge_methods_supported.as_ref();
    match (config.login.pkce, metadata.supports_pkce_s256()) {
        (Some(false), _) => Finding::Warn(
            "PKCE is off (--pkce=false): a public client's code can then be replayed if intercepted; turn it on unless the provider refuses it"
                .into(),
        ),
        (Some(true), false) => Finding::Fail(format!(
            "--pkce asks for PKCE S256, but the provider lists code_challenge_methods_supported {:?}; enable S256 at the provider, or drop --pkce",
            listed.cloned().unwrap_or_default()
        )),
        (None, false) => Finding::Warn(format!(
            "the provider lists code_challenge_methods_supported {:?} without S256, so kubecred logs in without PKCE; enable S256 at the provider",
            listed.cloned().unwrap_or_default()
        )),
        (_, true) if listed.is_none() => Finding::Ok(
            "PKCE: the provider does not list its methods; kubecred sends S256".into(),
        ),
        (_, true) => Finding::Ok("PKCE: S256 listed".into()),
    }
}

fn refresh_finding(config: &Config, extras: &DiscoveryExtras) -> Finding {
    if extras.lists_grant("refresh_token") == Some(false) {
        return Finding::Warn(
            "discovery does not list the refresh_token grant: every token expiry means a new login"
                .into(),
        );
    }
    let asks_offline = config.scopes.iter().any(|s| s == "offline_access");
    if extras.lists_scope("offline_access") && !asks_offline {
        return Finding::Warn(
            "the provider lists the offline_access scope and many issue refresh tokens only with it; add --scope=offline_access if the login below brings no refresh token"
                .into(),
        );
    }
    Finding::Ok("refresh tokens: the refresh_token grant is available".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::test_config;
    use url::Url;

    fn metadata(authorization: bool, device: bool, pkce: Option<&[&str]>) -> ProviderMetadata {
        let url = |path: &str| Url::parse(&format!("https://idp.example/{path}")).unwrap();
        ProviderMetadata {
            issuer: "https://idp.example".into(),
            authorization_endpoint: authorization.then(|| url("auth")),
            token_endpoint: url("token"),
            device_authorization_endpoint: device.then(|| url("device")),
            jwks_uri: url("jwks"),
            code_challenge_methods_supported: pkce
                .map(|list| list.iter().map(|m| m.to_string()).collect()),
            token_endpoint_auth_methods_supported: None,
            revocation_endpoint: None,
            revocation_endpoint_auth_methods_supported: None,
            authorization_response_iss_parameter_supported: false,
        }
    }

    fn extras(json: serde_json::Value) -> DiscoveryExtras {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn clock_skew_warns_then_stops_beyond_the_leeway() {
        let provider = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let at = |secs: i64| provider + chrono::Duration::seconds(secs);
        assert!(matches!(clock_skew(at(1), provider), Finding::Ok(_)));
        assert!(matches!(clock_skew(at(-8), provider), Finding::Ok(_)));
        let Finding::Warn(text) = clock_skew(at(30), provider) else {
            panic!()
        };
        assert!(text.contains("30s ahead of"), "{text}");
        let Finding::Fail(text) = clock_skew(at(-300), provider) else {
            panic!()
        };
        assert!(text.contains("5m behind") && text.contains("NTP"), "{text}");
    }

    #[test]
    fn each_flow_names_what_it_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config("https://idp.example", dir.path());
        let none = extras(serde_json::json!({}));

        // Browser login without an authorization endpoint.
        let findings = flow_findings(&config, &metadata(false, false, None), &none);
        assert!(
            matches!(&findings[0], Finding::Fail(t) if t.contains("no authorization_endpoint"))
        );

        // PKCE: absent list is fine, a list without S256 warns, and fails when --pkce insists.
        let findings = flow_findings(&config, &metadata(true, false, None), &none);
        assert!(findings.contains(&Finding::Ok(
            "PKCE: the provider does not list its methods; kubecred sends S256".into()
        )));
        let plain_only = metadata(true, false, Some(&["plain"]));
        let findings = flow_findings(&config, &plain_only, &none);
        assert!(
            findings
                .iter()
                .any(|f| matches!(f, Finding::Warn(t) if t.contains("without S256")))
        );
        config.login.pkce = Some(true);
        let findings = flow_findings(&config, &plain_only, &none);
        assert!(
            findings
                .iter()
                .any(|f| matches!(f, Finding::Fail(t) if t.contains("enable S256")))
        );
        config.login.pkce = None;

        // Refresh tokens: offline_access listed but not asked for; the grant not listed.
        let offline = extras(serde_json::json!({"scopes_supported": ["openid", "offline_access"]}));
        let findings = flow_findings(&config, &metadata(true, false, Some(&["S256"])), &offline);
        assert!(
            findings
                .iter()
                .any(|f| matches!(f, Finding::Warn(t) if t.contains("--scope=offline_access")))
        );
        let no_refresh =
            extras(serde_json::json!({"grant_types_supported": ["authorization_code"]}));
        let findings = flow_findings(
            &config,
            &metadata(true, false, Some(&["S256"])),
            &no_refresh,
        );
        assert!(
            findings
                .iter()
                .any(|f| matches!(f, Finding::Warn(t) if t.contains("every token expiry")))
        );

        // The device flow needs its endpoint.
        config.grant = Grant::DeviceCode;
        let findings = flow_findings(&config, &metadata(true, false, None), &none);
        assert!(
            matches!(&findings[0], Finding::Fail(t) if t.contains("device_authorization_endpoint"))
        );
        assert!(matches!(
            flow_findings(&config, &metadata(true, true, None), &none)[0],
            Finding::Ok(_)
        ));

        // A grant discovery leaves out is a hint, never a stop: setup tries it.
        config.grant = Grant::ClientCredentials;
        let findings = flow_findings(&config, &metadata(true, false, None), &no_refresh);
        assert!(
            matches!(&findings[..], [Finding::Warn(t)] if t.contains("the client_credentials grant") && t.contains("setup tries it")),
            "{findings:?}"
        );
        config.grant = Grant::DeviceCode;
        let findings = flow_findings(&config, &metadata(true, true, None), &no_refresh);
        assert!(matches!(&findings[0], Finding::Warn(t) if t.contains("device_code")));
        config.grant = Grant::Authcode;
        let findings = flow_findings(&config, &metadata(true, false, None), &no_refresh);
        assert!(
            !findings.iter().any(|f| matches!(f, Finding::Fail(_))),
            "{findings:?}"
        );
    }
}
