//! The one HTTP client kubecred talks to identity providers with, and the wording of its errors.
//!
//! The client trusts the `--certificate-authority` bundles plus the system's root certificates
//! (`trust.rs` loads the system roots only when a handshake needs them), never follows
//! redirects, and bounds every request by `--http-timeout`. It is built only off the cache-hit
//! path: a cached token never needs it. Network failures become one line that says what went wrong and what to try next
//! (`errors.rs`, which tells failures apart by type; `dns.rs` gives name resolution a type).

mod dns;
mod errors;
mod trust;

pub use errors::{describe, NetworkFailure};

use crate::config::HttpSettings;
use crate::error::{fail, Exit};
use anyhow::Context;
use reqwest::blocking::{Client, Response};
use serde::de::DeserializeOwned;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use url::Url;

pub const USER_AGENT: &str = concat!("kubecred/", env!("CARGO_PKG_VERSION"));

/// Connecting takes at most this long (or `--http-timeout` if shorter): a host that does not
/// answer a SYN within 10 s is down, and waiting the full request timeout only delays the error.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Discovery documents and key sets are a few KB; refuse to buffer a runaway body.
const MAX_JSON_BODY: u64 = 4 * 1024 * 1024;

/// Builds the client for every request to the identity provider.
pub fn client(settings: &HttpSettings) -> anyhow::Result<Client> {
    let mut builder = Client::builder()
        .use_rustls_tls()
        .user_agent(USER_AGENT)
        // Token requests must not follow redirects: a redirect could carry the code, the refresh
        // token or the client secret to another host (SSRF, credential leak). Discovery and key
        // fetches do not need them either; `get_json` explains a 3xx instead.
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(std::sync::Arc::new(dns::SystemResolver))
        .connect_timeout(settings.timeout.min(MAX_CONNECT_TIMEOUT))
        .timeout(settings.timeout);

    if settings.tls.insecure_skip_verify {
        warn_insecure_once();
    }
    builder = builder.use_preconfigured_tls(trust::client_config(&settings.tls)?);

    builder.build().map_err(|err| {
        fail(
            Exit::Input,
            format!("cannot set up the HTTPS client: {}", describe(&err)),
        )
    })
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

/// A failed request as one `Exit::Provider` line: "<doing>: <reason>; <hint>".
/// `doing` should name the URL, e.g. "fetching the discovery document from https://idp/...".
pub fn request_failed(doing: &str, err: &reqwest::Error) -> anyhow::Error {
    fail(Exit::Provider, format!("{doing}: {}", describe(err)))
}

/// A URL fit for an error message: without credentials, query or fragment.
pub fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// GETs a JSON document. `what` names it in errors ("the discovery document"). A non-2xx answer,
/// a redirect, an oversized or malformed body are `Exit::Provider` errors that name the URL.
pub fn get_json<T: DeserializeOwned>(http: &Client, url: &Url, what: &str) -> anyhow::Result<T> {
    let shown = display_url(url);
    let response = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .map_err(|err| request_failed(&format!("fetching {what} from {shown}"), &err))?;
    let response = check_status(response, &format!("{what} at {shown}"))?;
    read_json(response, what, &shown)
}

/// Reads a checked (2xx) response as JSON, bounded like [`get_json`]; `shown` is its URL for
/// messages ([`display_url`]).
pub fn read_json<T: DeserializeOwned>(
    response: Response,
    what: &str,
    shown: &str,
) -> anyhow::Result<T> {
    let body = read_limited(response, MAX_JSON_BODY)
        .map_err(|reason| {
            fail(
                Exit::Provider,
                format!("reading {what} from {shown}: {reason}"),
            )
        })?
        .ok_or_else(|| {
            fail(
                Exit::Provider,
                format!("{what} at {shown} is larger than {MAX_JSON_BODY} bytes; check the URL"),
            )
        })?;
    serde_json::from_slice(&body)
        .with_context(|| format!("{what} at {shown} is not the JSON kubecred expects"))
        .map_err(|err| fail(Exit::Provider, crate::error::one_line(&err)))
}

/// Passes 2xx answers through; turns anything else into one line naming the status, the OAuth
/// error fields when the body has them, and, for a redirect, where it pointed.
pub fn check_status(response: Response, what: &str) -> anyhow::Result<Response> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let mut message = format!("{what} answered HTTP {status}");
    if status == reqwest::StatusCode::NOT_FOUND {
        message.push_str(" (check the URL)");
    }
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(|value| match Url::parse(value) {
                Ok(url) => display_url(&url),
                Err(_) => value.split(['?', '#']).next().unwrap_or("").to_string(),
            });
        if let Some(location) = location {
            message.push_str(&format!(" (a redirect to {location})"));
        }
        message.push_str("; kubecred does not follow redirects: use the final URL (for discovery: the issuer URL exactly as the provider spells it)");
        return Err(fail(Exit::Provider, message));
    }
    // OAuth 2.0 error responses (RFC 6749 §5.2) say what went wrong; other bodies (HTML error
    // pages) are left out: they are long and may echo request data.
    if let Ok(Some(body)) = read_limited(response, 64 * 1024) {
        if let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) {
            let field = |name: &str| {
                json.get(name).and_then(|v| v.as_str()).map(|text| {
                    crate::text::printable_brief(text.trim(), 300)
                        .trim()
                        .to_string()
                })
            };
            if let Some(error) = field("error") {
                message.push_str(&format!(": {error}"));
                if let Some(description) = field("error_description") {
                    message.push_str(&format!(" ({description})"));
                }
            }
        }
    }
    Err(fail(Exit::Provider, message))
}

/// Reads at most `limit` bytes; `None` when the body is larger. A read error is described.
fn read_limited(response: Response, limit: u64) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    let mut reader = response.take(limit + 1);
    if let Err(err) = reader.read_to_end(&mut body) {
        // The blocking reader wraps reqwest's error in an io::Error; describe the reqwest error
        // so that its kind (a timeout) is seen.
        let inner = err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<reqwest::Error>());
        return Err(match inner {
            Some(reqwest_err) => describe(reqwest_err),
            None => describe(&err),
        });
    }
    Ok((body.len() as u64 <= limit).then_some(body))
}

#[cfg(test)]
pub(crate) mod test_server;

#[cfg(test)]
pub(crate) mod tests {
    use super::test_server::{Answer, TestServer};
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::{Config, Environment};
    use crate::error::{exit_code_of, one_line};
    use crate::exec_credential::ExecInfo;
    use clap::Parser;
    use std::path::Path;

    /// A resolved config for tests, with the given issuer and cache directory.
    pub fn test_config(issuer: &str, cache_dir: &Path) -> Config {
        let argv = [
            "kubecred".to_string(),
            "get-token".to_string(),
            format!("--issuer-url={issuer}"),
            "--client-id=kubectl".to_string(),
            format!("--cache-dir={}", cache_dir.display()),
        ];
        let args = match Cli::try_parse_from(argv).unwrap().command {
            Command::GetToken(args) => args,
            _ => unreachable!(),
        };
        Config::resolve(&args, &Environment::default(), ExecInfo::absent()).unwrap()
    }

    fn message(err: &anyhow::Error) -> String {
        one_line(err)
    }

    #[test]
    fn a_garbage_ca_bundle_is_a_clear_input_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config("https://idp.example", dir.path());
        config.http.tls.extra_ca_pems = vec![b"this is not a certificate".to_vec()];
        let err = client(&config.http).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        let text = message(&err);
        assert!(
            text.contains("bundle #1") && text.contains("no PEM certificate"),
            "{text}"
        );

        // A BEGIN CERTIFICATE block with broken contents.
        config.http.tls.extra_ca_pems =
            vec![b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_vec()];
        let text = message(&client(&config.http).unwrap_err());
        assert!(text.contains("is not valid PEM"), "{text}");
    }

    #[test]
    fn a_valid_ca_bundle_with_several_certificates_is_accepted() {
        // Two copies of one self-signed certificate (generated once with openssl).
        let pem = format!("{TEST_CA_PEM}{TEST_CA_PEM}");
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config("https://idp.example", dir.path());
        config.http.tls.extra_ca_pems = vec![pem.into_bytes()];
        assert_eq!(
            trust::parse_ca_bundle(&config.http.tls.extra_ca_pems[0], 1)
                .unwrap()
                .len(),
            2
        );
        client(&config.http).unwrap();
    }

    #[test]
    fn redirects_are_not_followed() {
        let server = TestServer::start();
        server.answer(
            "/start",
            Answer {
                status: 302,
                headers: vec![(
                    "Location".into(),
                    format!("{}/elsewhere?code=secret", server.base),
                )],
                body: String::new(),
            },
        );
        server.answer("/elsewhere", Answer::json("{}"));
        let dir = tempfile::tempdir().unwrap();
        let http = client(&test_config(&server.base, dir.path()).http).unwrap();
        let url = Url::parse(&format!("{}/start", server.base)).unwrap();
        let err = get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err();
        let text = message(&err);
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(
            text.contains("HTTP 302") && text.contains("does not follow redirects"),
            "{text}"
        );
        assert!(
            text.contains("/elsewhere") && !text.contains("secret"),
            "{text}"
        );
        assert_eq!(server.hits("/elsewhere"), 0);
    }

    #[test]
    fn http_errors_carry_the_oauth_error_fields() {
        let server = TestServer::start();
        server.answer(
            "/token",
            Answer {
                status: 400,
                headers: vec![],
                body: r#"{"error":"invalid_grant","error_description":"refresh token\nexpired"}"#
                    .into(),
            },
        );
        let dir = tempfile::tempdir().unwrap();
        let http = client(&test_config(&server.base, dir.path()).http).unwrap();
        let url = Url::parse(&format!("{}/token", server.base)).unwrap();
        let text = message(&get_json::<serde_json::Value>(&http, &url, "the thing").unwrap_err());
        assert!(
            text.contains("HTTP 400 Bad Request: invalid_grant (refresh token expired)"),
            "{text}"
        );
    }

    #[test]
    fn connection_refused_and_timeouts_are_one_clear_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config("https://idp.example", dir.path());
        config.http.timeout = Duration::from_millis(500);
        let http = client(&config.http).unwrap();

        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/x", closed.local_addr().unwrap())).unwrap();
        drop(closed);
        let err = get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err();
        let text = message(&err);
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(text.contains("connection refused"), "{text}");
        assert!(!text.contains('\n'));

        // Accepts the connection, never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/x", silent.local_addr().unwrap())).unwrap();
        let text =
            message(&get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err());
        assert!(
            text.contains("timed out") && text.contains("--http-timeout"),
            "{text}"
        );
        // As oauth2 hands it over: boxed.
        let raw = http.get(url).send().unwrap_err();
        assert!(describe(&Box::new(raw)).starts_with("timed out"));
    }

    #[test]
    fn urls_in_messages_lose_their_query_and_credentials() {
        let url = Url::parse("https://user:pw@idp.example/cb?code=abc#frag").unwrap();
        assert_eq!(display_url(&url), "https://idp.example/cb");
    }

    /// A self-signed certificate (CN=kubecred test CA), only parsed, never used to connect.
    const TEST_CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBizCCATGgAwIBAgIUWudEa+jTiwNXmpU6I0Gvk4V9i1swCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQa3ViZWNyZWQgdGVzdCBDQTAeFw0yNjExMjEyMTQ4MDJaFw0z
NjExMTgyMTQ4MDJaMBsxGTAXBgNVBAMMEGt1YmVjcmVkIHRlc3QgQ0EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASZKTy9DaTZNisC4TqyYQ7CQoA9jCQ5XOP2hPyS
puJRvAxRh8+OWvkccTKted405/20BWlTf+m12sMQAyiBRbjKo1MwUTAdBgNVHQ4E
FgQUDpWjH5Rlp7WPJV3N+LgW8q65fnQwHwYDVR0jBBgwFoAUDpWjH5Rlp7WPJV3N
+LgW8q65fnQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAH8yM1
IjBL6xoGSxwRbap/QH/71kVDnplwXk8nGn3stwIhAII++gPodvnkZRQi+8O93Wge
Ga8bJ5XGFSUt0/jtdKfh
-----END CERTIFICATE-----
";
}
