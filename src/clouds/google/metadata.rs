//! The metadata server of Google's compute (GCE, GKE's Workload Identity, Cloud Run): the
//! attached service account's token, `GET /computeMetadata/v1/instance/service-accounts/default/token?scopes=…`
//! with `Metadata-Flavor: Google`, and its email for `status`. `GCE_METADATA_HOST` names the
//! server (then it is used without a probe, as Google's Go library does); otherwise one bounded
//! probe of 169.254.169.254 tells whether there is one: 3 s where the machine's DMI says Google,
//! 0.5 s elsewhere (a metadata server on the link answers in milliseconds, and a laptop must
//! not wait long to learn it has none). `NO_GCE_CHECK=true` (google-auth's) skips it.

use super::{CloudToken, Net};
use crate::error::{Exit, fail, outage};
use crate::http::{Outgoing, Recipient, Replay};
use crate::secret::Secret;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use std::time::Duration;
use url::Url;

const DEFAULT_HOST: &str = "169.254.169.254";
const FLAVOR: &str = "Metadata-Flavor";
/// A metadata answer is small.
const MAX_ANSWER: u64 = 64 * 1024;
/// Each request to a metadata server named by `GCE_METADATA_HOST`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const PROBE_ON_GOOGLE: Duration = Duration::from_secs(3);
const PROBE_ELSEWHERE: Duration = Duration::from_millis(500);

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    expires_in: Option<i64>,
}

/// The metadata server's token, or `None` when there is no metadata server.
pub fn token(scopes: &[String], net: &Net) -> anyhow::Result<Option<CloudToken>> {
    let cx = net.cx;
    let (host, named) = match cx.var("GCE_METADATA_HOST") {
        Some(host) => (host, true),
        None => (DEFAULT_HOST.to_string(), false),
    };
    let root = Url::parse(&format!("http://{host}/")).map_err(|err| {
        fail(
            Exit::Input,
            format!("GCE_METADATA_HOST={host} is not a host[:port] ({err}); fix or unset it"),
        )
    })?;
    let shown = if named {
        format!("the metadata server at {host} (GCE_METADATA_HOST)")
    } else {
        format!("the metadata server at {host}")
    };
    if !named {
        if cx.var("NO_GCE_CHECK").as_deref() == Some("true") {
            return Ok(None);
        }
        let limit = if dmi_says_google() {
            PROBE_ON_GOOGLE
        } else {
            PROBE_ELSEWHERE
        };
        if !probe(&root, limit, net)? {
            crate::debug!(
                1,
                "no metadata server answered at {host} within {} ms",
                limit.as_millis()
            );
            return Ok(None);
        }
    }
    let mut url = root
        .join("computeMetadata/v1/instance/service-accounts/default/token")
        .expect("a fixed path");
    url.query_pairs_mut()
        .append_pair("scopes", &scopes.join(","));
    let answer = get(&url, net, &shown, "the token")?;
    let parsed: TokenAnswer = serde_json::from_slice(&answer).map_err(|_| {
        outage(format!(
            "{shown} answered something that is not a token; check GCE_METADATA_HOST"
        ))
    })?;
    let (Some(token), Some(seconds)) = (
        parsed.access_token.filter(|t| !t.is_empty()),
        parsed.expires_in,
    ) else {
        return Err(outage(format!(
            "{shown} answered no access_token and expires_in; check GCE_METADATA_HOST"
        )));
    };
    let email_url = root
        .join("computeMetadata/v1/instance/service-accounts/default/email")
        .expect("a fixed path");
    // The email only names the identity for `status`: a failure to read it fails nothing.
    let who = get(&email_url, net, &shown, "the service account's email")
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty() && text.len() < 256);
    Ok(Some(CloudToken {
        token: Secret::new(token),
        expires_at: cx.now + chrono::Duration::seconds(seconds),
        who,
    }))
}

fn flavor_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(FLAVOR, HeaderValue::from_static("Google"));
    headers
}

/// One GET with `Metadata-Flavor: Google`; the answer must carry the same header back.
fn get(url: &Url, net: &Net, shown: &str, what: &str) -> anyhow::Result<Vec<u8>> {
    let http = net.metadata(REQUEST_TIMEOUT)?;
    let answer = http
        .send(&Outgoing {
            method: reqwest::Method::GET,
            url,
            headers: flavor_headers(),
            body: Vec::new(),
            what: &format!("asking {shown} for {what}"),
            body_cap: MAX_ANSWER,
            replay: Replay::Safe,
            recipient: Recipient::Other,
        })
        .map_err(|failure| {
            outage(format!(
                "asking {shown} for {what}: {failure}; check GCE_METADATA_HOST, or that this machine has a metadata server"
            ))
        })?;
    if !answer.status.is_success() {
        let mut message = format!(
            "{shown} answered {} when asked for {what}",
            crate::http::describe_status(answer.status, &answer.headers)
        );
        if answer.status == reqwest::StatusCode::NOT_FOUND {
            message.push_str("; this machine has no service account attached: attach one, or use application default credentials (`gcloud auth application-default login`)");
            return Err(fail(Exit::Provider, message));
        }
        message.push_str("; try again later");
        return Err(outage(message));
    }
    Ok(answer.body)
}

/// Whether a metadata server answers `GET /` with `Metadata-Flavor: Google` within `limit`
/// (one attempt, no retry).
fn probe(root: &Url, limit: Duration, net: &Net) -> anyhow::Result<bool> {
    let mut settings = net.cx.http.clone();
    settings.proxy = crate::config::ProxyEnvironment::default();
    settings.timeout = limit;
    let http = crate::http::client(&settings, Duration::ZERO)?;
    let answer = http.send(&Outgoing {
        method: reqwest::Method::GET,
        url: root,
        headers: flavor_headers(),
        body: Vec::new(),
        what: "probing for a metadata server",
        body_cap: MAX_ANSWER,
        replay: Replay::Safe,
        recipient: Recipient::Other,
    });
    Ok(answer.is_ok_and(|answer| {
        answer.status.is_success()
            && answer
                .headers
                .get(FLAVOR)
                .is_some_and(|value| value.as_bytes() == b"Google")
    }))
}

/// Linux's DMI product name says Google Compute Engine (Google's libraries read the same file).
fn dmi_says_google() -> bool {
    cfg!(target_os = "linux")
        && std::fs::read_to_string("/sys/class/dmi/id/product_name")
            .is_ok_and(|name| name.trim_start().starts_with("Google"))
}
