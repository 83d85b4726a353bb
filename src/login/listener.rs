//! One-shot HTTP listener on loopback for the authorization-code redirect (RFC 8252 §7.3).
//!
//! [`CallbackListener::bind`] picks the first free address of those configured, so parallel
//! kubecred runs (other clusters, other scripts) move on to the next one instead of fighting over
//! a port. When the redirect URI says `localhost`, it listens on 127.0.0.1 *and* [::1] at the same
//! port, because browsers may resolve `localhost` to either. [`CallbackListener::serve`] answers
//! each request, a callback with the page its verdict calls for (`callback.rs` says what a
//! callback means), and hands the callbacks over to the wait (`wait.rs`), which decides when the
//! login is over. The sockets close when the [`Serving`] listener is dropped, so a late browser
//! gets "connection refused" rather than a hanging tab.
//!
//! There is no HTTP server crate here on purpose: the listener answers a handful of GET requests
//! from the user's own browser on loopback, once. A small hand-rolled reader with a bounded request
//! size and a per-connection deadline is easier to audit than a server framework, and cannot be
//! stalled: each connection is served on a task of its own (tokio, reqwest's runtime, on this
//! thread while the wait is in [`Serving::next_callback`]), accepted the moment it arrives, so a
//! browser's idle pre-connection (Chrome opens some) or a stuck client never delays the real
//! callback.
//!
//! With `--local-server-cert`/`--local-server-key` ([`tls_config`], [`CallbackListener::with_tls`])
//! each connection is a TLS one (rustls through tokio-rustls, within the same per-connection
//! deadline): for providers that accept only https redirect URIs. The certificate is the user's,
//! one their browser trusts for `localhost`; kubecred makes none.

use crate::config::CallbackTls;
use crate::debug;
use crate::error::{Exit, fail};
use crate::login::callback::{ExpectedResponse, StateRule, Verdict, classify};
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::{AbortHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use url::Url;

/// How long one turn of [`Serving::next_callback`] serves before the wait looks at its other
/// sources (a pasted line). Connections are served the moment they arrive, whatever this is.
const WAIT_SLICE: Duration = Duration::from_millis(50);
/// A request head (request line and headers) larger than this is not a browser's callback.
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// A connection gets this long, in total, to send its request head and read the answer.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at the same time, so a local program opening connections in a loop cannot
/// hold file descriptors without bound. When they are all taken, the one that has waited longest
/// without sending its request is closed to make room (see `admit`): idle junk must never lock
/// out the real browser, whose request arrives the moment it connects.
const MAX_CONNECTIONS_IN_FLIGHT: usize = 16;
/// With port 0 and a `localhost` redirect, the free port picked on one family may be taken on
/// the other: pick again this many times before giving up on that address.
const ANY_PORT_ATTEMPTS: usize = 5;

/// Listening sockets for one login, and the redirect URI that points at them.
pub struct CallbackListener {
    sockets: Vec<TcpListener>,
    redirect: Url,
    /// Serves every connection over TLS when set.
    tls: Option<TlsAcceptor>,
}

impl std::fmt::Debug for CallbackListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackListener")
            .field("sockets", &self.sockets)
            .field("redirect", &self.redirect)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// The TLS configuration of an https callback, from `--local-server-cert` (a PEM certificate,
/// with its chain) and `--local-server-key` (its PEM private key). Read when a login starts.
pub fn tls_config(files: &CallbackTls) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|err| {
            fail(
                Exit::Input,
                format!("reading {flag} {}: {err}", path.display()),
            )
        })
    };
    let cert_pem = read("--local-server-cert", &files.cert)?;
    let key_pem = read("--local-server-key", &files.key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|chain| !chain.is_empty())
        .ok_or_else(|| {
            fail(
                Exit::Input,
                format!(
                    "--local-server-cert {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    files.cert.display()
                ),
            )
        })?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        fail(
            Exit::Input,
            format!(
                "--local-server-key {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1: -----BEGIN PRIVATE KEY-----)",
                files.key.display()
            ),
        )
    })?;
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|err| {
                fail(
                    Exit::Input,
                    format!(
                        "--local-server-cert {} and --local-server-key {} cannot serve TLS ({err}); give a certificate and the private key that belongs to it",
                        files.cert.display(),
                        files.key.display()
                    ),
                )
            })?;
    // The listener speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Why one configured address could not be used.
enum BindProblem {
    /// Someone else listens there (or on its twin in the other family, named here).
    InUse {
        twin: Option<SocketAddr>,
    },
    Other(io::Error),
}

impl CallbackListener {
    /// Listens on the first usable address of `addresses` (loopback, validated by the config;
    /// port 0 = any free port). `redirect_url` is the resolved redirect URI (the user's
    /// `--redirect-url`, or the default); its port is replaced by the bound one. When its host is an IP, that IP is the one listened on (with
    /// each address's port), since the browser will go nowhere else; when it is `localhost`
    /// (the default), the same port on the other loopback family is listened on as well.
    pub fn bind(addresses: &[SocketAddr], redirect_url: &Url) -> anyhow::Result<Self> {
        let mut redirect = redirect_url.clone();
        let pinned_ip = match redirect.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if addresses.is_empty() {
            return Err(fail(
                Exit::Input,
                "no address to listen on for the login callback; pass --listen-address 127.0.0.1:0",
            ));
        }

        let mut problems = Vec::new();
        for &configured in addresses {
            let address = match pinned_ip {
                Some(ip) => SocketAddr::new(ip, configured.port()),
                None => configured,
            };
            if problems.iter().any(|(tried, _)| *tried == address) {
                continue; // Two configured addresses pinned to the same one.
            }
            match bind_address(address, pinned_ip.is_none()) {
                Ok(sockets) => {
                    let port = sockets[0].local_addr()?.port();
                    redirect.set_port(Some(port)).map_err(|()| {
                        fail(
                            Exit::Input,
                            format!("the redirect URL {redirect} cannot carry a port"),
                        )
                    })?;
                    for socket in &sockets {
                        debug!(
                            1,
                            "listening for the login callback on {}",
                            socket.local_addr()?
                        );
                    }
                    return Ok(CallbackListener {
                        sockets,
                        redirect,
                        tls: None,
                    });
                }
                Err(problem) => problems.push((address, problem)),
            }
        }
        Err(no_address_left(&problems))
    }

    /// Serves every connection over TLS with `config` (see [`tls_config`]).
    pub fn with_tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(TlsAcceptor::from(config));
        self
    }

    /// The redirect URI to send to the provider: the configured one with the bound port.
    pub fn redirect_uri(&self) -> String {
        self.redirect.to_string()
    }

    /// The addresses actually listened on (one, or two for a `localhost` redirect).
    #[cfg(test)]
    pub fn local_addresses(&self) -> Vec<SocketAddr> {
        self.sockets
            .iter()
            .filter_map(|socket| socket.local_addr().ok())
            .collect()
    }

    /// Starts answering connections, for the login whose `state` is `expected.state`: each on
    /// a task of its own, on a current-thread runtime that runs while the wait is in
    /// [`Serving::next_callback`]. Callbacks to the redirect path are handed over there.
    pub fn serve(self, expected: impl Into<ExpectedResponse>) -> io::Result<Serving> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listeners = {
            let _inside = runtime.enter();
            self.sockets
                .into_iter()
                .map(|socket| {
                    socket.set_nonblocking(true)?;
                    tokio::net::TcpListener::from_std(socket)
                })
                .collect::<io::Result<Vec<_>>>()?
        };
        Ok(Serving {
            listeners,
            connections: JoinSet::new(),
            idle: VecDeque::new(),
            next_id: 0,
            page: Arc::new(PageContext {
                expected: expected.into(),
                callback_path: self.redirect.path().to_string(),
                heads_read: Mutex::new(Vec::new()),
                tls: self.tls,
            }),
            runtime,
        })
    }
}

/// A listener that answers the browser. Dropping it closes the sockets and every connection at
/// once, so a late browser gets "connection refused" rather than a hanging tab.
///
/// Why tasks on tokio (already reqwest's runtime) rather than a thread per connection: a
/// connection is accepted and answered the moment it arrives, not at the next turn of a polling
/// loop, and a browser's idle pre-connections cost a few hundred bytes each instead of a thread.
pub struct Serving {
    listeners: Vec<tokio::net::TcpListener>,
    /// Each connection's task; it yields the verdict of a callback, `None` for anything else.
    connections: JoinSet<Option<Verdict>>,
    /// Connections that have not sent their request head yet, oldest first: the ones closed to
    /// make room (see [`MAX_CONNECTIONS_IN_FLIGHT`]).
    idle: VecDeque<(u64, AbortHandle)>,
    next_id: u64,
    page: Arc<PageContext>,
    /// Declared last, so dropped last: the sockets and tasks above go first.
    runtime: tokio::runtime::Runtime,
}

/// What every connection's task needs to answer its request.
struct PageContext {
    expected: ExpectedResponse,
    callback_path: String,
    /// Connections that have sent their head since the last turn: no longer idle.
    heads_read: Mutex<Vec<u64>>,
    /// The https callback's TLS, when set.
    tls: Option<TlsAcceptor>,
}

impl Serving {
    /// Serves connections until a callback's page has been answered (its verdict is returned)
    /// or [`WAIT_SLICE`] has passed (`None`), whichever is first, and never past `until`: the
    /// caller looks at its other sources (a pasted line) between turns. Every callback to the
    /// redirect path is handed over, with the verdict that chose its page; refusing the ones
    /// that are not this login's is the caller's part.
    pub(crate) fn next_callback(&mut self, until: Instant) -> Option<Verdict> {
        let wait = WAIT_SLICE.min(until.saturating_duration_since(Instant::now()));
        let Serving {
            listeners,
            connections,
            idle,
            next_id,
            page,
            runtime,
        } = self;
        runtime.block_on(async {
            let next = std::future::poll_fn(|cx| {
                for listener in listeners.iter() {
                    while let Poll::Ready(accepted) = listener.poll_accept(cx) {
                        match accepted {
                            Ok((stream, _peer)) => {
                                admit(stream, connections, idle, next_id, page);
                            }
                            Err(err) => {
                                // A connection reset before we took it, or no descriptor for a
                                // moment: not a reason to end the login.
                                debug!(1, "accepting a login callback connection failed: {err}");
                                break;
                            }
                        }
                    }
                }
                while let Poll::Ready(Some(done)) = connections.poll_join_next(cx) {
                    // A task closed to make room ends cancelled; a panic is only logged.
                    if let Ok(Some(verdict)) = done {
                        return Poll::Ready(verdict);
                    }
                }
                Poll::Pending
            });
            tokio::time::timeout(wait, next).await.ok()
        })
    }
}

/// Starts the task that serves `stream`, closing the longest-idle connection first when
/// [`MAX_CONNECTIONS_IN_FLIGHT`] are open; when none is idle (all are being answered), the new
/// one is closed instead.
fn admit(
    stream: tokio::net::TcpStream,
    connections: &mut JoinSet<Option<Verdict>>,
    idle: &mut VecDeque<(u64, AbortHandle)>,
    next_id: &mut u64,
    page: &Arc<PageContext>,
) {
    let read: Vec<u64> = std::mem::take(&mut *lock(&page.heads_read));
    idle.retain(|(id, task)| !read.contains(id) && !task.is_finished());
    if connections.len() >= MAX_CONNECTIONS_IN_FLIGHT {
        match idle.pop_front() {
            Some((_, oldest)) => {
                debug!(
                    2,
                    "too many login callback connections at once; closing the longest idle one"
                );
                oldest.abort();
            }
            None => {
                debug!(
                    1,
                    "too many login callback connections at once, all of them busy; closing the new one"
                );
                return;
            }
        }
    }
    *next_id += 1;
    let id = *next_id;
    let page = Arc::clone(page);
    let task = connections.spawn(async move {
        let deadline = tokio::time::Instant::now() + CONNECTION_TIMEOUT;
        match page.tls.clone() {
            None => serve_connection(stream, &page, id, deadline).await,
            Some(acceptor) => {
                match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                    Ok(Ok(tls_stream)) => serve_connection(tls_stream, &page, id, deadline).await,
                    Ok(Err(err)) => {
                        lock(&page.heads_read).push(id);
                        debug!(
                            1,
                            "ignored a login callback connection: the TLS handshake failed ({err}); does the browser trust --local-server-cert?"
                        );
                        None
                    }
                    Err(_) => {
                        lock(&page.heads_read).push(id);
                        debug!(2, "ignored a login callback connection: no TLS handshake in time");
                        None
                    }
                }
            }
        }
    });
    idle.push_back((id, task));
}

/// Reads one request from `stream` and answers it, all before `deadline`; the verdict of a
/// callback, `None` for anything else.
async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    page: &PageContext,
    id: u64,
    deadline: tokio::time::Instant,
) -> Option<Verdict> {
    let head = tokio::time::timeout_at(deadline, read_request_head(&mut stream)).await;
    lock(&page.heads_read).push(id);
    let head = match head {
        Ok(Ok(head)) => head,
        Ok(Err(err)) => {
            debug!(2, "ignored a login callback connection: {err}");
            return None;
        }
        Err(_) => {
            debug!(
                2,
                "ignored a login callback connection: request not sent in time"
            );
            return None;
        }
    };
    let (page_answer, verdict) = answer(&head, page);
    let sent = tokio::time::timeout_at(deadline, async {
        stream.write_all(&page_answer).await?;
        // A FIN after the page (and TLS's close_notify), rather than a reset that could make the
        // browser drop it.
        stream.shutdown().await
    })
    .await;
    if !matches!(sent, Ok(Ok(()))) {
        debug!(2, "could not answer a login callback connection");
    }
    verdict
}

/// Binds `address` and, for a `localhost` redirect, the same port on the other family.
fn bind_address(address: SocketAddr, with_twin: bool) -> Result<Vec<TcpListener>, BindProblem> {
    let attempts = if with_twin && address.port() == 0 {
        ANY_PORT_ATTEMPTS
    } else {
        1
    };
    let mut busy_twin = None;
    for _ in 0..attempts {
        let primary = TcpListener::bind(address).map_err(|err| match err.kind() {
            io::ErrorKind::AddrInUse => BindProblem::InUse { twin: None },
            _ => BindProblem::Other(err),
        })?;
        if !with_twin {
            return Ok(vec![primary]);
        }
        let port = primary.local_addr().map_err(BindProblem::Other)?.port();
        let twin = SocketAddr::new(other_loopback_family(address.ip()), port);
        // Binding [::1] needs no IPV6_V6ONLY: that option only matters for the wildcard `::`,
        // and a socket bound to ::1 never receives IPv4 traffic.
        match TcpListener::bind(twin) {
            Ok(twin_socket) => return Ok(vec![primary, twin_socket]),
            Err(err) if err.kind() == io::ErrorKind::AddrInUse => {
                // Someone else would receive the callback of a browser that resolves localhost
                // to the twin family: this port is not ours to use.
                debug!(
                    1,
                    "{twin} is in use, so {address} is not usable for a localhost redirect"
                );
                busy_twin = Some(twin);
            }
            Err(err) => {
                // Typically IPv6 disabled (EADDRNOTAVAIL, EAFNOSUPPORT). Nobody can listen there,
                // and browsers fall back to the family that answers.
                debug!(
                    1,
                    "not listening on {twin} as well ({err}); {address} alone serves localhost"
                );
                return Ok(vec![primary]);
            }
        }
    }
    Err(BindProblem::InUse { twin: busy_twin })
}

fn other_loopback_family(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// The error when every configured address failed, naming each of them.
fn no_address_left(problems: &[(SocketAddr, BindProblem)]) -> anyhow::Error {
    let any_port = match problems.first() {
        Some((address, _)) => SocketAddr::new(address.ip(), 0),
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
    };
    let all_in_use = problems
        .iter()
        .all(|(_, problem)| matches!(problem, BindProblem::InUse { .. }));
    if all_in_use {
        let names: Vec<String> = problems
            .iter()
            .map(|(address, problem)| match problem {
                BindProblem::InUse { twin: Some(twin) } => {
                    format!("{address} (with {twin}, for localhost)")
                }
                _ => address.to_string(),
            })
            .collect();
        let verb = if names.len() == 1 { "is" } else { "are all" };
        return fail(
            Exit::Login,
            format!(
                "cannot listen for the login callback: {} {verb} in use; close the other program or pass --listen-address {any_port}",
                names.join(", ")
            ),
        );
    }
    let reasons: Vec<String> = problems
        .iter()
        .map(|(address, problem)| match problem {
            BindProblem::InUse { .. } => format!("{address}: in use"),
            BindProblem::Other(err) => format!("{address}: {err}"),
        })
        .collect();
    fail(
        Exit::Login,
        format!(
            "cannot listen for the login callback ({}); pass a --listen-address this machine allows, e.g. {any_port}",
            reasons.join("; ")
        ),
    )
}

/// The list's lock; a task that panicked while holding it left a list that is still usable.
fn lock(list: &Mutex<Vec<u64>>) -> std::sync::MutexGuard<'_, Vec<u64>> {
    list.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The whole HTTP answer to a request head, and the verdict to hand over (`None`: not a
/// callback at all, such as a favicon).
fn answer(head: &str, page: &PageContext) -> (Vec<u8>, Option<Verdict>) {
    let verdict = match route(head, &page.callback_path, &page.expected) {
        Route::BadRequest => {
            let html = html_page(
                "400 Bad Request",
                "Bad request",
                "This is kubecred's login listener.",
            );
            return (html, None);
        }
        Route::NotTheCallback => {
            // Favicons and the like: not a callback, no notice.
            let html = html_page(
                "404 Not Found",
                "Not found",
                "This is kubecred's login listener.",
            );
            return (html, None);
        }
        Route::Callback(verdict) => verdict,
    };
    let html = match &verdict {
        Verdict::Code(_) => html_page(
            "200 OK",
            "Logged in",
            "Logged in. You may close this tab and return to your terminal.",
        ),
        Verdict::Refused(_) => html_page(
            "400 Bad Request",
            "Login callback refused",
            "kubecred refused this callback: it does not carry the state of the login in progress \
             (it may belong to another login, or be a forgery). Return to your terminal.",
        ),
        Verdict::Denied { error, description } => {
            let detail = description
                .as_deref()
                .map(|text| format!(" ({})", html_escape(text)))
                .unwrap_or_default();
            html_page(
                "200 OK",
                "Login failed",
                &format!(
                    "The identity provider refused the login: {}{detail}. Return to your terminal for what to do next.",
                    html_escape(error)
                ),
            )
        }
        Verdict::Incomplete => html_page(
            "400 Bad Request",
            "Login callback incomplete",
            "This callback carries neither a code nor an error. Return to your terminal.",
        ),
        Verdict::WrongIssuer(_) => html_page(
            "400 Bad Request",
            "Login response refused",
            "kubecred refused this login response: it does not name the identity provider the login went to. Return to your terminal.",
        ),
    };
    (html, Some(verdict))
}

/// Reads up to the blank line that ends the request head, at most [`MAX_REQUEST_HEAD`] bytes.
/// A GET has no body, so this is the whole request. The caller bounds the time.
async fn read_request_head<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before a full request",
            ));
        }
        head.extend_from_slice(&chunk[..read]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(String::from_utf8_lossy(&head).into_owned());
        }
        if head.len() > MAX_REQUEST_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
}

/// What a request to the listener is.
pub(crate) enum Route {
    /// Not an HTTP/1 request line with an origin-form target.
    BadRequest,
    /// Another method or path (a favicon, say).
    NotTheCallback,
    /// A GET of the redirect path: what its query amounts to.
    Callback(Verdict),
}

/// Judges a request head (no I/O: the fuzz targets call it too).
pub(crate) fn route(head: &str, callback_path: &str, expected: &ExpectedResponse) -> Route {
    let Some((method, target)) = parse_request_line(head) else {
        return Route::BadRequest;
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != callback_path {
        return Route::NotTheCallback;
    }
    Route::Callback(classify(
        url::form_urlencoded::parse(query.as_bytes()),
        expected,
        StateRule::Required,
    ))
}

/// `GET /callback?code=... HTTP/1.1` → ("GET", "/callback?code=..."); origin-form targets only.
fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let mut parts = head.lines().next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return None;
    }
    Some((method, target))
}

/// A complete small HTML answer. `body` must already be escaped.
fn html_page(status: &str, title: &str, body: &str) -> Vec<u8> {
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>{body}</p></body></html>\n"
    );
    // The page loads nothing, and with the code in its URL it must not be cached or leak it in
    // a Referer; the CSP makes any markup that slipped through the escaping inert.
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n{page}",
        page.len()
    )
    .into_bytes()
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn html_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
pub(crate) mod tests;
