//! The one HTTP client kubecred talks to identity providers with, and the wording of its errors.
//!
//! The client trusts the `--certificate-authority` bundles plus the system's root certificates
//! (`trust.rs` loads the system roots only when a handshake needs them), never follows
//! redirects, bounds every request as a whole (connect, headers and body) by `--http-timeout`,
//! caps every body, and retries transient failures (`request.rs`, the one function every request
//! goes through, oauth2's grants included; `retry.rs`, the policy). Each request goes direct or
//! through the proxy `proxy.rs` picks for it (the environment as curl reads it, or the system
//! settings), and a request to the provider carries the `--request-header`s. It is built only
//! off the cache-hit path: a cached token never needs it. Network failures become one line that
//! says what went wrong and what to try next (`errors.rs`, which tells failures apart by type;
//! `dns.rs` gives name resolution a type; `proxy/probe.rs` asks a proxy why it failed).

mod dns;
mod errors;
mod proxy;
mod request;
mod retry;
mod trust;

pub use errors::{NetworkFailure, describe};
pub use request::{
    Answer, AnswerSummary, Client, OAuthCall, Outgoing, Recipient, RequestFailure, after_attempts,
};
pub use retry::Replay;

use crate::config::{HttpSettings, RequestHeader};
use crate::error::{Exit, fail, outage};
use anyhow::Context;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use url::Url;

pub const USER_AGENT: &str = concat!("kubecred/", env!("CARGO_PKG_VERSION"));

/// Connecting takes at most this long (or `--http-timeout` if shorter): a host that does not
/// answer a SYN within 10 s is down, and waiting the full request timeout only delays the error.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Discovery documents and key sets are a few KB; refuse to buffer a runaway body.
pub const MAX_JSON_BODY: u64 = 4 * 1024 * 1024;

/// Builds the client for every request to the identity provider. No retry is started later than
/// `retry_window` from now: the caller passes what is left of the lock timeout, so that kubectl
/// processes waiting on the entry's lock never give up while this one is still retrying.
pub fn client(settings: &HttpSettings, retry_window: Duration) -> anyhow::Result<Client> {
    // First: a proxy setting that cannot work fails here, before any request.
    let proxies = Arc::new(proxy::Proxies::read(&settings.proxy)?);
    let provider_headers = header_map(&settings.request_headers)?;
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .user_agent(USER_AGENT)
        // Token requests must not follow redirects: a redirect could carry the code, the refresh
        // token or the client secret to another host (SSRF, credential leak). Discovery and key
        // fetches do not need them either; `get_json` explains a 3xx instead.
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(std::sync::Arc::new(dns::SystemResolver))
        .connect_timeout(settings.timeout.min(MAX_CONNECT_TIMEOUT))
        // No idle connections kept for reuse. Our runtime runs only while a request is under
        // way, so a pooled connection that the server closed in between (Node closes idle ones
        // after 5 s; a login takes longer) goes unnoticed and the next request fails on it with
        // "connection closed before message completed" — and a token request that spends a code
        // must not be resent. A run makes one to three requests: a fresh connection each is cheap.
        .pool_max_idle_per_host(0);

    if settings.tls.insecure_skip_verify {
        warn_insecure_once();
    }
    let tls = Arc::new(trust::client_config(&settings.tls)?);
    builder = builder.use_preconfigured_tls((*tls).clone());
    // reqwest would read the proxy variables itself, its own way: the route of every request is
    // `proxy.rs`'s decision, which the connector asks for.
    builder = builder.no_proxy();
    if proxies.any() {
        let routes = Arc::clone(&proxies);
        builder = builder.proxy(reqwest::Proxy::custom(move |url| routes.proxy_url_for(url)));
    }

    let setup_failed = |detail: String| {
        fail(
            Exit::Input,
            format!("cannot set up the HTTPS client: {detail}"),
        )
    };
    // One thread: kubecred makes one request at a time, and the DNS resolver has its own.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| setup_failed(describe(&err)))?;
    let inner = {
        let _entered = runtime.enter();
        builder
            .build()
            .map_err(|err| setup_failed(describe(&err)))?
    };
    Ok(Client {
        inner,
        runtime,
        timeout: settings.timeout,
        retry_deadline: Instant::now() + retry_window,
        proxies,
        provider_headers,
        tls,
    })
}

/// `--request-header`s as a header map, their values marked sensitive (reqwest and its logs then
/// never show them). `config` has already checked names and values.
fn header_map(headers: &[RequestHeader]) -> anyhow::Result<HeaderMap> {
    let mut map = HeaderMap::new();
    for header in headers {
        let invalid = || {
            fail(
                Exit::Input,
                format!("--request-header {}: not a valid HTTP header", header.name),
            )
        };
        let name = reqwest::header::HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| invalid())?;
        let mut value =
            reqwest::header::HeaderValue::from_str(header.value.expose()).map_err(|_| invalid())?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

fn warn_insecure_once() {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        crate::log::notice(
            "WARNING: --insecure-skip-tls-verify is set: the identity provider's TLS certificate is NOT verified, \
             so anyone on the network path can steal your credentials. Use --certificate-authority instead.",
        );
    }
}

/// GETs a JSON document of at most [`MAX_JSON_BODY`] bytes. `what` names it in errors ("the
/// discovery document"). No answer, a non-2xx answer, a redirect, an oversized or malformed body
/// are `Exit::Provider` errors that name the URL; no answer, a 5xx or 429 and a body that is not
/// the JSON expected are outages (`error::outage`).
pub fn get_json<T: DeserializeOwned>(http: &Client, url: &Url, what: &str) -> anyhow::Result<T> {
    let shown = crate::text::display_url(url);
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let answer = http
        .send(&Outgoing {
            method: reqwest::Method::GET,
            url,
            headers,
            body: Vec::new(),
            what: &format!("fetching {what} from {shown}"),
            body_cap: MAX_JSON_BODY,
            replay: Replay::Safe,
            recipient: Recipient::Provider,
        })
        .map_err(|failure| outage(format!("fetching {what} from {shown}: {failure}")))?;
    check_status(&answer, &format!("{what} at {shown}"))?;
    serde_json::from_slice(&answer.body)
        .with_context(|| {
            format!(
                "{what} at {shown} is not the JSON kubecred expects ({}); check the URL",
                describe_status(answer.status, &answer.headers)
            )
        })
        .map_err(|err| outage(crate::error::one_line(&err)))
}

/// "HTTP 302 Found (a redirect to https://other/path)": the status, and for a redirect where
/// it pointed (without query or credentials). For every message about an answer: an outage
/// (a 503 page) must not look like a misconfiguration.
pub fn describe_status(status: StatusCode, headers: &HeaderMap) -> String {
    let mut text = format!("HTTP {status}");
    if status.is_redirection() {
        let location = headers
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(|value| match Url::parse(value) {
                Ok(url) => crate::text::display_url(&url),
                Err(_) => value.split(['?', '#']).next().unwrap_or("").to_string(),
            });
        if let Some(location) = location {
            text.push_str(&format!(
                " (a redirect to {})",
                crate::text::printable_brief(&location, 200)
            ));
        }
    }
    text
}

/// What to try after a non-2xx answer that is not an OAuth error: where the fault likely is.
pub fn status_hint(status: StatusCode) -> &'static str {
    if status.is_redirection() {
        "kubecred does not follow redirects: use the final URL (for discovery: the issuer URL exactly as the provider spells it)"
    } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        "the provider is failing or overloaded; try again later"
    } else if status == StatusCode::NOT_FOUND {
        "check the URL"
    } else {
        "check the URL and kubecred's settings"
    }
}

/// Passes 2xx answers; turns anything else into one line naming the status, the OAuth error
/// fields when the body has them, and, for a redirect, where it pointed.
pub fn check_status(answer: &request::Answer, what: &str) -> anyhow::Result<()> {
    let status = answer.status;
    if status.is_success() {
        return Ok(());
    }
    let mut message = format!(
        "{what} answered {}{}",
        describe_status(status, &answer.headers),
        after_attempts(answer.attempts)
    );
    // OAuth 2.0 error responses (RFC 6749 §5.2) say what went wrong; other bodies (HTML error
    // pages) are left out: they are long and may echo request data.
    if !status.is_redirection()
        && let Some(error) = oauth_error_fields(&answer.body)
    {
        message.push_str(&format!(": {error}"));
    }
    message.push_str("; ");
    message.push_str(status_hint(status));
    // A provider that is down or overloaded says nothing about our settings.
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        Err(outage(message))
    } else {
        Err(fail(Exit::Provider, message))
    }
}

/// `error (error_description)` of an OAuth error body, made printable and brief.
pub fn oauth_error_fields(body: &[u8]) -> Option<String> {
    let json = serde_json::from_slice::<serde_json::Value>(body).ok()?;
    let field = |name: &str| {
        json.get(name).and_then(|v| v.as_str()).map(|text| {
            crate::text::printable_brief(text.trim(), 300)
                .trim()
                .to_string()
        })
    };
    let error = field("error")?;
    Some(match field("error_description") {
        Some(description) => format!("{error} ({description})"),
        None => error,
    })
}

#[cfg(test)]
pub(crate) mod test_server;

#[cfg(test)]
pub(crate) mod tests;
