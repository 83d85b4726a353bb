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
use super::retry::{self, Replay, MAX_RETRIES, MAX_RETRY_AFTER, MIN_ATTEMPT_TIME};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use std::cell::RefCell;
use std::fmt;
use std::time::{Duration, Instant, SystemTime};
use url::Url;

/// The HTTP client for the provider: reqwest's async client on a current-thread runtime, the
/// per-attempt timeout, and the instant after which no retry is started.
#[derive(Debug)]
pub struct Client {
    pub(super) inner: reqwest::Client,
    pub(super) runtime: tokio::runtime::Runtime,
    pub(super) timeout: Duration,
    pub(super) retry_deadline: Instant,
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
}

/// An answer with its whole body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A request that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestFailure {
    /// No answer (after `attempts` tries).
    Network {
        failure: NetworkFailure,
        attempts: u32,
    },
    /// The body was larger than the cap.
    TooLarge { cap: u64 },
}

impl fmt::Display for RequestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestFailure::Network { failure, attempts } => {
                f.write_str(&failure.explain())?;
                if *attempts > 1 {
                    write!(f, " (after {attempts} attempts)")?;
                }
                Ok(())
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
        let mut seed = retry::jitter_seed();
        let mut retries = 0;
        let mut bound = self.timeout;
        loop {
            let outcome = self.attempt(request, bound);
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
                } if *before_sending || request.replay == Replay::Safe => (
                    format!(": {}", crate::text::printable(&failure.explain())),
                    None,
                ),
                _ => return finish(outcome, retries + 1, request.body_cap),
            };
            if retries == MAX_RETRIES {
                return finish(outcome, retries + 1, request.body_cap);
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
                    return finish(outcome, retries, request.body_cap);
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
                return finish(outcome, retries, request.body_cap);
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
    fn attempt(&self, request: &Outgoing, bound: Duration) -> Attempt {
        let builder = self
            .inner
            .request(request.method.clone(), request.url.clone())
            .headers(request.headers.clone())
            .body(request.body.clone());
        let cap = request.body_cap;
        let work = async move {
            let mut response = match builder.send().await {
                Ok(response) => response,
                Err(err) => {
                    return Attempt::Failed {
                        before_sending: err.is_connect(),
                        failure: NetworkFailure::of(&err),
                    }
                }
            };
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
                        }
                    }
                }
            }
            Attempt::Answered(Answer {
                status,
                headers,
                body,
            })
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

fn finish(outcome: Attempt, attempts: u32, cap: u64) -> Result<Answer, RequestFailure> {
    match outcome {
        Attempt::Answered(answer) => Ok(answer),
        Attempt::Failed { failure, .. } => Err(RequestFailure::Network { failure, attempts }),
        Attempt::TooLarge => Err(RequestFailure::TooLarge { cap }),
    }
}

/// Token, device authorization and revocation answers are a few KB (an ID token with many
/// groups perhaps 20 KB); a megabyte is far beyond any real one.
pub const MAX_TOKEN_BODY: u64 = 1024 * 1024;

/// The status line of the last answer oauth2 got through an [`OAuthCall`], to word its errors.
#[derive(Debug, Clone)]
pub struct AnswerSummary {
    pub status: StatusCode,
    /// `(a redirect to https://…)` for a 3xx, from `describe_status`.
    pub described: String,
    pub content_type: Option<String>,
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
        });
        *self.last_failure.borrow_mut() = sent.as_ref().err().cloned();
        let answer = sent?;
        *self.last_answer.borrow_mut() = Some(AnswerSummary {
            status: answer.status,
            described: super::describe_status(answer.status, &answer.headers),
            content_type: answer
                .headers
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .map(|value| crate::text::printable_brief(value, 80).into_owned()),
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
