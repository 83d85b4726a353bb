//! The requests to Google's endpoints, each as google-auth sends it: the OAuth 2.0 token
//! endpoint (a refresh token's grant, a service account's JWT bearer grant), STS's token
//! exchange (RFC 8693 with Google's `options`), and the IAM Credentials API's
//! `generateAccessToken`. Every answer is read to a cap and every refusal worded in one line
//! that names the endpoint and Google's own error, never a token.

use super::Net;
use crate::error::{Exit, fail, outage};
use crate::http::{Outgoing, Recipient, Replay};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Deserialize;
use url::Url;

pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A token answer is a few KB.
const MAX_ANSWER: u64 = 256 * 1024;

/// An access token and when it expires.
pub struct Issued {
    pub token: Secret,
    pub expires_at: DateTime<Utc>,
    /// The ID token of a refresh answer (Google sends one when the grant had `openid` or
    /// `userinfo.email`): read, unverified, only for the account's email.
    pub id_token: Option<Secret>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    expires_in: Option<serde_json::Value>,
    id_token: Option<String>,
}

/// What failed, for messages: "the token request for the application default credentials in FILE".
pub struct Request<'a> {
    pub url: &'a Url,
    pub what: &'a str,
}

/// A form POST; a 2xx answer's body, or one line naming `what`, the status and the OAuth error.
fn post(
    net: &Net,
    request: &Request,
    headers: HeaderMap,
    body: Vec<u8>,
    replay: Replay,
) -> anyhow::Result<Answered> {
    let http = net.google()?;
    let shown = crate::text::display_url(request.url);
    crate::debug!(1, "{} at {shown}", request.what);
    let answer = http
        .send(&Outgoing {
            method: reqwest::Method::POST,
            url: request.url,
            headers,
            body,
            what: &format!("{} at {shown}", request.what),
            body_cap: MAX_ANSWER,
            replay,
            recipient: Recipient::Other,
        })
        .map_err(|failure| outage(format!("{} at {shown}: {failure}", request.what)))?;
    Ok(Answered {
        status: answer.status,
        headers: answer.headers,
        body: answer.body,
        attempts: answer.attempts,
    })
}

pub struct Answered {
    pub status: reqwest::StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub attempts: u32,
}

impl Answered {
    /// Google's error of an OAuth answer (`invalid_grant (Token has been expired or revoked.)`)
    /// or of an API answer (`PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken'
    /// denied …`), brief and printable.
    pub fn google_error(&self) -> Option<String> {
        if let Some(oauth) = crate::http::oauth_error_fields(&self.body) {
            return Some(oauth);
        }
        let json: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        let error = json.get("error")?;
        let status = error.get("status").and_then(|v| v.as_str());
        let message = error.get("message").and_then(|v| v.as_str());
        let text = match (status, message) {
            (Some(status), Some(message)) => format!("{status}: {message}"),
            (Some(text), None) | (None, Some(text)) => text.to_string(),
            (None, None) => return None,
        };
        Some(
            crate::text::printable_brief(text.trim(), 300)
                .trim()
                .to_string(),
        )
    }

    /// The OAuth `error` code alone (`invalid_grant`).
    pub fn oauth_error_code(&self) -> Option<String> {
        let json: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        json.get("error")?.as_str().map(str::to_string)
    }

    /// One line for a non-2xx answer: `what at URL answered HTTP 400 …: error (description)`,
    /// followed by `next`; a 5xx or 429 is an outage.
    pub fn refusal(&self, request: &Request, next: &str) -> anyhow::Error {
        let shown = crate::text::display_url(request.url);
        let mut message = format!(
            "{} at {shown} answered {}{}",
            request.what,
            crate::http::describe_status(self.status, &self.headers),
            crate::http::after_attempts(self.attempts)
        );
        if let Some(error) = self.google_error() {
            message.push_str(&format!(": {error}"));
        }
        if self.status.is_server_error() || self.status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            message.push_str("; Google is failing or overloaded, try again later");
            return outage(message);
        }
        message.push_str("; ");
        message.push_str(next);
        fail(Exit::Provider, message)
    }
}

fn form_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    headers
}

fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}

/// Reads a token endpoint's (or STS's) 2xx answer: `access_token`, `expires_in` (seconds, a
/// number or a string), `id_token`.
fn issued(answered: &Answered, request: &Request, now: DateTime<Utc>) -> anyhow::Result<Issued> {
    let shown = crate::text::display_url(request.url);
    let unusable = |why: &str| {
        outage(format!(
            "{} at {shown} answered HTTP {} with {why}; check the endpoint the credentials name",
            request.what, answered.status
        ))
    };
    let answer: TokenAnswer =
        serde_json::from_slice(&answered.body).map_err(|_| unusable("no JSON token answer"))?;
    let token = answer
        .access_token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| unusable("no access_token"))?;
    let seconds = match answer.expires_in {
        Some(serde_json::Value::Number(number)) => number.as_f64(),
        Some(serde_json::Value::String(text)) => text.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
    .ok_or_else(|| unusable("no usable expires_in"))?;
    Ok(Issued {
        token: Secret::new(token),
        expires_at: now + chrono::Duration::milliseconds((seconds * 1000.0) as i64),
        id_token: answer.id_token.map(Secret::new),
    })
}

/// The refresh grant of an `authorized_user` credential, as google-auth sends it: the client's
/// ID and secret in the form, no scope (a user's grant keeps the scopes it was given).
pub fn refresh_grant(
    net: &Net,
    request: &Request,
    client_id: &str,
    client_secret: &Secret,
    refresh_token: &Secret,
    next_on_refusal: &dyn Fn(Option<&str>) -> (Exit, String),
) -> anyhow::Result<Issued> {
    let now = net.cx.now;
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("client_id", client_id),
        ("client_secret", client_secret.expose()),
        ("refresh_token", refresh_token.expose()),
    ]);
    // A refresh token can be sent again after a lost answer: Google does not rotate it.
    let answered = post(net, request, form_headers(), body, Replay::Safe)?;
    if !answered.status.is_success() {
        return Err(refused(&answered, request, next_on_refusal));
    }
    issued(&answered, request, now)
}

/// The JWT bearer grant (RFC 7523) of a `service_account` credential: an assertion signed with
/// its key, `aud` the token URI.
pub fn jwt_bearer_grant(
    net: &Net,
    request: &Request,
    assertion: &Secret,
    next_on_refusal: &dyn Fn(Option<&str>) -> (Exit, String),
) -> anyhow::Result<Issued> {
    let now = net.cx.now;
    let body = form(&[
        ("grant_type", JWT_BEARER_GRANT),
        ("assertion", assertion.expose()),
    ]);
    let answered = post(net, request, form_headers(), body, Replay::Safe)?;
    if !answered.status.is_success() {
        return Err(refused(&answered, request, next_on_refusal));
    }
    issued(&answered, request, now)
}

/// A refusal (4xx) worded by the caller, who knows what to do about its OAuth error code; a
/// 5xx or 429 an outage.
fn refused(
    answered: &Answered,
    request: &Request,
    next_on_refusal: &dyn Fn(Option<&str>) -> (Exit, String),
) -> anyhow::Error {
    if answered.status.is_server_error()
        || answered.status == reqwest::StatusCode::TOO_MANY_REQUESTS
    {
        return answered.refusal(request, "");
    }
    let (exit, next) = next_on_refusal(answered.oauth_error_code().as_deref());
    let error = answered.refusal(request, &next);
    let message = crate::error::one_line(&error);
    fail(exit, message)
}

/// Client authentication at STS (an `external_account`'s `client_id` and `client_secret`):
/// HTTP Basic, as google-auth and Google's Go library send it.
pub struct StsClient<'a> {
    pub id: &'a str,
    pub secret: Option<&'a Secret>,
}

/// An RFC 8693 token exchange at Google's STS.
pub struct StsExchange<'a> {
    pub sts_url: &'a Url,
    pub audience: &'a str,
    pub subject_token: &'a Secret,
    pub subject_token_type: &'a str,
    pub scopes: &'a [String],
    /// A workforce pool's user project (`options.userProject`), sent only without client
    /// authentication, as google-auth does (with a client, the client's project is billed).
    pub user_project: Option<&'a str>,
    pub client: Option<StsClient<'a>>,
    pub what: &'a str,
}

/// The exchange google-auth's `external_account` makes: `grant_type` token-exchange,
/// `audience`, `scope` (space-separated), `requested_token_type` access_token,
/// `subject_token`, `subject_token_type`, and `options` ({"userProject": …}) for a workforce
/// pool's user project. `options` is the JSON form-encoded once, as Google's Go library sends it
/// (google-auth percent-encodes the JSON before form-encoding it; STS reads both).
pub fn sts_exchange(net: &Net, exchange: &StsExchange) -> anyhow::Result<Issued> {
    let now = net.cx.now;
    let scope = exchange.scopes.join(" ");
    let options = exchange
        .user_project
        .filter(|_| exchange.client.is_none())
        .map(|project| serde_json::json!({ "userProject": project }).to_string());
    let mut pairs = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("audience", exchange.audience),
        ("scope", scope.as_str()),
        ("requested_token_type", ACCESS_TOKEN_TYPE),
        ("subject_token", exchange.subject_token.expose()),
        ("subject_token_type", exchange.subject_token_type),
    ];
    if scope.is_empty() {
        pairs.retain(|(name, _)| *name != "scope");
    }
    if let Some(options) = &options {
        pairs.push(("options", options));
    }
    let mut headers = form_headers();
    if let Some(client) = &exchange.client {
        let encode =
            |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let pair = format!(
            "{}:{}",
            encode(client.id),
            encode(client.secret.map(Secret::expose).unwrap_or(""))
        );
        let mut value = HeaderValue::from_str(&format!(
            "Basic {}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pair)
        ))
        .map_err(|_| {
            fail(
                Exit::Input,
                "the external account's client_id cannot be sent in a header",
            )
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    let request = Request {
        url: exchange.sts_url,
        what: exchange.what,
    };
    // A subject token can be exchanged again after a lost answer.
    let answered = post(net, &request, headers, form(&pairs), Replay::Safe)?;
    if !answered.status.is_success() {
        return Err(answered.refusal(
            &request,
            &format!(
                "check that the pool provider {} trusts this token (its issuer, audience and attribute conditions)",
                exchange.audience
            ),
        ));
    }
    issued(&answered, &request, now)
}

/// The IAM Credentials API's `generateAccessToken` for the service account `url` names, with
/// `source` as the caller's bearer token: `{"scope": [...], "lifetime": "3600s"}` (and
/// `delegates` when there are any), as google-auth sends it.
pub fn generate_access_token(
    net: &Net,
    url: &Url,
    source: &Secret,
    scopes: &[String],
    delegates: &[String],
    lifetime_seconds: u64,
    what: &str,
) -> anyhow::Result<Issued> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Generated {
        access_token: Option<String>,
        expire_time: Option<String>,
    }
    let mut body = serde_json::json!({
        "scope": scopes,
        "lifetime": format!("{lifetime_seconds}s"),
    });
    if !delegates.is_empty() {
        body["delegates"] = serde_json::json!(delegates);
    }
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut bearer =
        HeaderValue::from_str(&format!("Bearer {}", source.expose())).map_err(|_| {
            outage(format!(
                "{what}: the source token cannot be sent in a header"
            ))
        })?;
    bearer.set_sensitive(true);
    headers.insert(AUTHORIZATION, bearer);
    let request = Request { url, what };
    let answered = post(
        net,
        &request,
        headers,
        body.to_string().into_bytes(),
        Replay::Safe,
    )?;
    if !answered.status.is_success() {
        return Err(answered.refusal(
            &request,
            "the source identity needs the Service Account Token Creator role (iam.serviceAccounts.getAccessToken) on that service account",
        ));
    }
    let shown = crate::text::display_url(url);
    let unusable = |why: &str| {
        outage(format!(
            "{what} at {shown} answered HTTP {} with {why}; check service_account_impersonation_url",
            answered.status
        ))
    };
    let generated: Generated =
        serde_json::from_slice(&answered.body).map_err(|_| unusable("no JSON answer"))?;
    let token = generated
        .access_token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| unusable("no accessToken"))?;
    let expires_at = generated
        .expire_time
        .as_deref()
        .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .map(|time| time.with_timezone(&Utc))
        .ok_or_else(|| unusable("no usable expireTime"))?;
    Ok(Issued {
        token: Secret::new(token),
        expires_at,
        id_token: None,
    })
}

/// The service account an impersonation URL names:
/// `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/EMAIL:generateAccessToken`.
pub fn impersonated_email(url: &str) -> Option<String> {
    let start = url.rfind('/')?;
    let end = url.find(":generateAccessToken")?;
    (start < end).then(|| url[start + 1..end].to_string())
}
