//! The one function every request to the provider goes through ([`Client::send`]): bounded as a
//! whole, its body capped, transient failures retried.
//!
//! Why not reqwest's blocking client as it is: its `timeout` bounds connecting and the response
//! headers, but reading the body applies the timeout to each read separately, so a server that
//! sends its headers and then a byte every half second holds kubecred (and the entry's lock, and
//! every kubectl waiting on it) for as long as it likes. Here each attempt — connect, TLS,
//! headers and the whole body — runs under one `tokio::time::timeout` on a small runtime of our
//! own, and the body is read chunk by chunk and abandoned at its cap, so a runaway body never
//! gets buffered. oauth2's grants use the same path through [`OAuthCall`], its `SyncHttpClient`.

use super::errors::NetworkFailure;
use super::proxy::{Proxies, ProxyKind, Route, probe};
use super::retry::{self, MAX_RETRIES, MAX_RETRY_AFTER, MIN_ATTEMPT_TIME, Replay};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use url::Url;

/// The HTTP client for the provider: reqwest's async client on a current-thread runtime, the
/// per-attempt timeout, the instant after which no retry is started, the proxies, and the
/// headers every request to the provider carries.
pub struct Client {
    pub(super) inner: reqwest::Client,
    pub(super) runtime: tokio::runtime::Runtime,
    pub(super) timeout: Duration,
    pub(super) retry_deadline: Instant,
    /// Shared with the connector, which asks it for each connection's proxy.
    pub(super) proxies: Arc<Proxies>,
    /// `--request-header`: on every request to the provider, and on no other.
    pub(super) provider_headers: HeaderMap,
    /// For asking an https:// proxy why a tunnel failed (`proxy/probe.rs`).
    pub(super) tls: Arc<rustls::ClientConfig>,
}

impl fmt::Debug for Client {
    // The headers' values may be API keys: only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .field("proxies", &self.proxies)
            .field(
                "provider_headers",
                &self.provider_headers.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Whom a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipient {
    /// The identity provider: discovery, keys, token, device authorization, revocation. These
    /// carry the `--request-header`s.
    Provider,
    /// Anyone else (the GitHub Actions ID-token endpoint): never the provider's headers.
    Other,
}

/// A request to send.
pub struct Outgoing<'a> {
    pub method: Method,
    pub url: &'a Url,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// What the request is, for `-v` lines: "the token request to https://idp/token".
    pub what: &'a str,
    /// The largest body accepted; reading stops there.
    pub body_cap: u64,
    pub replay: Replay,
    pub recipient: Recipient,
}

/// An answer with its whole body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// How many tries it took: more than 1 when transient answers (a 503, a 429) or failures
    /// came first. A message about an answer that is still a failure says so ([`after_attempts`]).
    pub attempts: u32,
}

/// A request that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestFailure {
    /// No answer (after `attempts` tries). `through` names the proxy the request went
    /// through, when the failure does not already name it.
    Network {
        failure: NetworkFailure,
        attempts: u32,
        through: Option<String>,
    },
    /// The body was larger than the cap.
    TooLarge { cap: u64 },
}

impl fmt::Display for RequestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestFailure::Network {
                failure,
                attempts,
                through,
            } => {
                f.write_str(&failure.explain())?;
                if let Some(proxy) = through {
                    write!(f, " (through {proxy})")?;
                }
                f.write_str(&after_attempts(*attempts))
            }
            RequestFailure::TooLarge { cap } => write!(
                f,
                "the answer is larger than kubecred's limit of {} ({cap} bytes); check the URL",
                human_size(*cap)
            ),
        }
    }
}

impl std::error::Error for RequestFailure {}

/// " (after 4 attempts)" when a request was tried more than once, else nothing: every message
/// about a failure that was retried ends with it (docs/networks.md, "When the provider is slow").
pub fn after_attempts(attempts: u32) -> String {
    if attempts > 1 {
        format!(" (after {attempts} attempts)")
    } else {
        String::new()
    }
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// One attempt's outcome.
enum Attempt {
    Answered(Answer),
    Failed {
        failure: NetworkFailure,
        /// The connection was never made, so the server cannot have seen the request.
        before_sending: bool,
    },
    TooLarge,
}

impl Client {
    /// Sends the request, retrying transient failures (see `retry.rs`). Any HTTP answer is
    /// `Ok`, also a 503 after the last retry: the caller words it with its status.
    pub fn send(&self, request: &Outgoing) -> Result<Answer, RequestFailure> {
        let route = self.proxies.route(request.url);
        if self.proxies.any() {
            crate::debug!(1, "{} goes {}", request.what, route.describe());
        }
        let through = match route {
            Route::Through(proxy) => Some(proxy.named()),
            _ => None,
        };
        let finish = |outcome, attempts| finish(outcome, attempts, request.body_cap, &through);
        let mut seed = retry::jitter_seed();
        let mut retries = 0;
        let mut bound = self.timeout;
        loop {
            let outcome = self.attempt(request, bound, route);
            let (reason, server_delay) = match &outcome {
                Attempt::Answered(answer)
                    if retry::status_is_transient(answer.status, request.replay) =>
                {
                    let asked = answer
                        .headers
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|value| value.to_str().ok())
                        .and_then(|value| retry::parse_retry_after(value, SystemTime::now()));
                    (format!(" answered HTTP {}", answer.status), asked)
                }
                Attempt::Failed {
                    failure,
                    before_sending,
                } if (*before_sending || request.replay == Replay::Safe)
                    && failure.may_pass_later() =>
                {
                    (
                        format!(": {}", crate::text::printable(&failure.explain())),
                        None,
                    )
                }
                _ => return finish(outcome, retries + 1),
            };
            if retries == MAX_RETRIES {
                return finish(outcome, retries + 1);
            }
            retries += 1;
            seed = seed.rotate_left(17) ^ u64::from(retries);
            let delay = match server_delay {
                Some(asked) if asked > MAX_RETRY_AFTER => {
                    crate::debug!(
                        1,
                        "{}{reason} and asks to wait {}s, longer than kubecred waits ({}s): not retrying",
                        request.what,
                        asked.as_secs(),
                        MAX_RETRY_AFTER.as_secs()
                    );
                    return finish(outcome, retries);
                }
                Some(asked) => asked,
                None => retry::backoff(retries, seed),
            };
            let start_at = Instant::now() + delay;
            let left = self.retry_deadline.saturating_duration_since(start_at);
            if left < MIN_ATTEMPT_TIME {
                crate::debug!(
                    1,
                    "{}{reason}; no time left to retry within the lock timeout",
                    request.what
                );
                return finish(outcome, retries);
            }
            crate::debug!(
                1,
                "{}{reason}; retry {retries} of {MAX_RETRIES} in {:.1}s",
                request.what,
                delay.as_secs_f64()
            );
            std::thread::sleep(delay);
            bound = self.timeout.min(left);
        }
    }

    /// One try, bounded as a whole by `bound`: connect, TLS, headers and the body.
    fn attempt(&self, request: &Outgoing, bound: Duration, route: Route<'_>) -> Attempt {
        let builder = self
            .inner
            .request(request.method.clone(), request.url.clone())
            .headers(self.headers_for(request))
            .body(request.body.clone());
        let cap = request.body_cap;
        let url = request.url;
        let tls = &self.tls;
        let work = async move {
            let response = match send(builder, route, url, tls).await {
                Ok(response) => response,
                Err(failed) => return failed,
            };
            if let Some(refused) = refused_by_the_proxy(route, url, response.status()) {
                return refused;
            }
            read_capped(response, cap).await
        };
        self.runtime.block_on(async move {
            tokio::time::timeout(bound, work)
                .await
                .unwrap_or(Attempt::Failed {
                    failure: NetworkFailure::Timeout,
                    before_sending: false,
                })
        })
    }

    /// The request's headers, and for the provider the `--request-header`s beside them.
    fn headers_for(&self, request: &Outgoing) -> HeaderMap {
        let mut headers = request.headers.clone();
        if request.recipient == Recipient::Provider {
            for (name, value) in &self.provider_headers {
                // A header the request sets itself (Authorization of client_secret_basic,
                // Content-Type, Accept) is the protocol's: the user's does not replace it.
                if !request.headers.contains_key(name) {
                    headers.append(name.clone(), value.clone());
                }
            }
        }
        headers
    }

    /// This client as oauth2's `SyncHttpClient`, for one grant's requests.
    pub fn oauth(&self, what: &'static str, replay: Replay) -> OAuthCall<'_> {
        OAuthCall {
            http: self,
            what,
            replay,
            last_answer: RefCell::new(None),
            last_failure: RefCell::new(None),
            successful_answer: std::convert::identity,
        }
    }
}

fn finish(
    outcome: Attempt,
    attempts: u32,
    cap: u64,
    through: &Option<String>,
) -> Result<Answer, RequestFailure> {
    match outcome {
        Attempt::Answered(answer) => Ok(Answer { attempts, ..answer }),
        Attempt::Failed { failure, .. } => Err(RequestFailure::Network {
            // A proxy's own failure names it already.
            through: match failure {
                NetworkFailure::Proxy { .. } => None,
                _ => through.clone(),
            },
            failure,
            attempts,
        }),
        Attempt::TooLarge => Err(RequestFailure::TooLarge { cap }),
    }
}

/// Sends the request and waits for the answer's head. A connection through a proxy that
/// failed is explained by asking the proxy ([`ask_the_proxy`]): a refused login or tunnel.
async fn send(
    builder: reqwest::RequestBuilder,
    route: Route<'_>,
    url: &Url,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<reqwest::Response, Attempt> {
    let err = match builder.send().await {
        Ok(response) => return Ok(response),
        Err(err) => err,
    };
    let mut failure = NetworkFailure::of(&err);
    if let Route::Through(proxy) = route
        && err.is_connect()
        && failure != NetworkFailure::Timeout
        && let Some(problem) = ask_the_proxy(proxy, url, tls).await
    {
        failure = problem;
    }
    Err(Attempt::Failed {
        before_sending: err.is_connect(),
        failure,
    })
}

/// A proxy that forwards a plain-http request (not a tunnel) answers 407 itself: its refusal,
/// not the provider's answer.
fn refused_by_the_proxy(route: Route<'_>, url: &Url, status: StatusCode) -> Option<Attempt> {
    let Route::Through(proxy) = route else {
        return None;
    };
    if status != StatusCode::PROXY_AUTHENTICATION_REQUIRED
        || url.scheme() != "http"
        || proxy.kind.is_socks()
    {
        return None;
    }
    Some(Attempt::Failed {
        before_sending: true,
        failure: proxy_failure(
            proxy,
            url,
            probe::ProxyProblem::AuthenticationRequired {
                status: 407,
                credentials_given: proxy.credentials.is_some(),
            },
        ),
    })
}

/// The answer, its body read to `cap` and abandoned there (`TooLarge`, also when the length
/// it announces is over it).
async fn read_capped(mut response: reqwest::Response, cap: u64) -> Attempt {
    if response.content_length().is_some_and(|length| length > cap) {
        return Attempt::TooLarge;
    }
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if (body.len() + chunk.len()) as u64 > cap {
                    return Attempt::TooLarge;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(err) => {
                return Attempt::Failed {
                    before_sending: false,
                    failure: NetworkFailure::of(&err),
                };
            }
        }
    }
    Attempt::Answered(Answer {
        status,
        headers,
        body,
        attempts: 1,
    })
}

/// Why the tunnel to `url` through `proxy` failed, from the proxy itself; `None` when it opens
/// (the failure lies beyond it: the provider's TLS, say).
async fn ask_the_proxy(
    proxy: &super::proxy::Proxy,
    url: &Url,
    tls: &Arc<rustls::ClientConfig>,
) -> Option<NetworkFailure> {
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    // A plain-http request is forwarded, not tunnelled: only reaching the proxy is asked.
    let reach_only =
        url.scheme() == "http" && matches!(proxy.kind, ProxyKind::Http | ProxyKind::Https);
    let problem = if reach_only {
        probe::reach(proxy).await
    } else {
        probe::diagnose(proxy, host, port, tls).await
    }?;
    Some(proxy_failure(proxy, url, problem))
}

fn proxy_failure(
    proxy: &super::proxy::Proxy,
    url: &Url,
    problem: probe::ProxyProblem,
) -> NetworkFailure {
    NetworkFailure::Proxy {
        proxy: proxy.named(),
        origin: proxy.origin.to_string(),
        target: format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        ),
        problem,
    }
}

/// Token, device authorization and revocation answers are a few KB (an ID token with many
/// groups perhaps 20 KB); a megabyte is far beyond any real one.
pub const MAX_TOKEN_BODY: u64 = 1024 * 1024;

/// The status line of the last answer oauth2 got through an [`OAuthCall`], to word its errors.
#[derive(Debug, Clone)]
pub struct AnswerSummary {
    pub status: StatusCode,
    /// "HTTP 503 Service Unavailable (after 4 attempts)": `describe_status` (which adds
    /// `(a redirect to https://…)` for a 3xx) and how many tries it took when more than one.
    pub described: String,
    pub content_type: Option<String>,
    pub attempts: u32,
}

/// kubecred's client as oauth2's `SyncHttpClient`: every grant's requests are bounded, capped
/// and retried like the rest. Remembers the last answer's status, because oauth2 reports an
/// unparsable answer (an HTML error page, a 503) without it.
pub struct OAuthCall<'a> {
    http: &'a Client,
    what: &'static str,
    replay: Replay,
    last_answer: RefCell<Option<AnswerSummary>>,
    last_failure: RefCell<Option<RequestFailure>>,
    /// What a successful answer's body goes through before oauth2 reads it (the caller's
    /// knowledge of providers' quirks; the transport knows none).
    successful_answer: fn(Vec<u8>) -> Vec<u8>,
}

impl OAuthCall<'_> {
    /// Has every successful answer's body rewritten by `rewrite` before oauth2 parses it.
    pub fn rewriting_successful_answers(mut self, rewrite: fn(Vec<u8>) -> Vec<u8>) -> Self {
        self.successful_answer = rewrite;
        self
    }

    pub fn last_answer(&self) -> Option<AnswerSummary> {
        self.last_answer.borrow().clone()
    }

    /// The last request's failure, if the last request failed. oauth2's device polling swallows
    /// failures (it backs off and polls again), so this is the only trace of why it got nowhere.
    pub fn last_failure(&self) -> Option<RequestFailure> {
        self.last_failure.borrow().clone()
    }
}

impl oauth2::SyncHttpClient for OAuthCall<'_> {
    type Error = RequestFailure;

    fn call(&self, request: oauth2::HttpRequest) -> Result<oauth2::HttpResponse, RequestFailure> {
        let (parts, body) = request.into_parts();
        let url = Url::parse(&parts.uri.to_string()).map_err(|err| RequestFailure::Network {
            failure: NetworkFailure::Other {
                detail: format!("invalid request URL: {err}"),
            },
            attempts: 1,
            through: None,
        })?;
        let what = format!("{} to {}", self.what, crate::text::display_url(&url));
        let sent = self.http.send(&Outgoing {
            method: parts.method,
            url: &url,
            headers: parts.headers,
            body,
            what: &what,
            body_cap: MAX_TOKEN_BODY,
            replay: self.replay,
            recipient: Recipient::Provider,
        });
        *self.last_failure.borrow_mut() = sent.as_ref().err().cloned();
        let answer = sent?;
        *self.last_answer.borrow_mut() = Some(AnswerSummary {
            status: answer.status,
            described: format!(
                "{}{}",
                super::describe_status(answer.status, &answer.headers),
                after_attempts(answer.attempts)
            ),
            content_type: answer
                .headers
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .map(|value| crate::text::printable_brief(value, 80).into_owned()),
            attempts: answer.attempts,
        });
        let body = if answer.status.is_success() {
            (self.successful_answer)(answer.body)
        } else {
            answer.body
        };
        let mut response = oauth2::HttpResponse::new(body);
        *response.status_mut() = answer.status;
        *response.headers_mut() = answer.headers;
        Ok(response)
    }
}
