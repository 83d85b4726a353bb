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
//! stalled: each connection is served on its own short-lived thread, so a browser's idle
//! pre-connection (Chrome opens some) or a stuck client never delays the real callback.

use crate::debug;
use crate::error::{fail, Exit};
use crate::login::callback::{classify, ExpectedResponse, StateRule, Verdict};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;

/// How often the accept loop looks at the sockets; it bounds the added latency of a callback.
const ACCEPT_POLL: Duration = Duration::from_millis(50);
/// A request head (request line and headers) larger than this is not a browser's callback.
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// A connection gets this long, in total, to send its request head and read the answer.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at the same time, so a local program opening connections in a loop cannot
/// make kubecred start threads without bound. When they are all taken, the one that has waited
/// longest without sending its request is closed to make room (see `make_room`): idle junk must
/// never lock out the real browser, whose request arrives the moment it connects.
const MAX_CONNECTIONS_IN_FLIGHT: usize = 16;
/// With port 0 and a `localhost` redirect, the free port picked on one family may be taken on
/// the other: pick again this many times before giving up on that address.
const ANY_PORT_ATTEMPTS: usize = 5;

/// Listening sockets for one login, and the redirect URI that points at them.
#[derive(Debug)]
pub struct CallbackListener {
    sockets: Vec<TcpListener>,
    redirect: Url,
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
                    return Ok(CallbackListener { sockets, redirect });
                }
                Err(problem) => problems.push((address, problem)),
            }
        }
        Err(no_address_left(&problems))
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

    /// Starts answering connections, for the login whose `state` is `expected.state`. Each
    /// connection is served on its own thread; callbacks to the redirect path are handed over
    /// through `Serving::next_callback`.
    pub fn serve(self, expected: impl Into<ExpectedResponse>) -> io::Result<Serving> {
        for socket in &self.sockets {
            // Non-blocking accept lets the waiting loop watch every socket, the paste and the
            // deadline, and lets the sockets close the moment the wait returns.
            socket.set_nonblocking(true)?;
        }
        let (verdicts_tx, verdicts) = mpsc::channel::<Verdict>();
        let server = ConnectionServer {
            expected: Arc::new(expected.into()),
            callback_path: Arc::from(self.redirect.path()),
            in_flight: Arc::new(AtomicUsize::new(0)),
            idle: Arc::new(Mutex::new(Vec::new())),
            next_id: AtomicUsize::new(0),
            verdicts: verdicts_tx,
        };
        Ok(Serving {
            sockets: self.sockets,
            server,
            verdicts,
        })
    }
}

/// A listener that answers the browser. Dropping it closes the sockets, so a late browser gets
/// "connection refused" rather than a hanging tab.
pub struct Serving {
    sockets: Vec<TcpListener>,
    server: ConnectionServer,
    verdicts: mpsc::Receiver<Verdict>,
}

impl Serving {
    /// Accepts the connections waiting, then waits until `until`, but at most [`ACCEPT_POLL`],
    /// for a callback that a connection has answered: the caller looks at its other sources
    /// in between. Every callback to the redirect path is handed over, with the verdict that
    /// chose its page; refusing the ones that are not this login's is the caller's part.
    pub(crate) fn next_callback(&self, until: Instant) -> Option<Verdict> {
        for socket in &self.sockets {
            self.server.accept_pending(socket);
        }
        let left = until.saturating_duration_since(Instant::now());
        match self.verdicts.recv_timeout(ACCEPT_POLL.min(left)) {
            Ok(verdict) => Some(verdict),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("Serving holds a sender"),
        }
    }
}

/// Accepts connections and serves each on its own thread, which hands the callback's
/// [`Verdict`] over to [`Serving::next_callback`] after answering the browser.
struct ConnectionServer {
    expected: Arc<ExpectedResponse>,
    callback_path: Arc<str>,
    in_flight: Arc<AtomicUsize>,
    /// Connections that have not sent their request head yet, oldest first: the ones that may
    /// be closed to make room.
    idle: Arc<Mutex<Vec<IdleConnection>>>,
    next_id: AtomicUsize,
    verdicts: mpsc::Sender<Verdict>,
}

/// A connection still waiting for its request head, and a handle to close it by.
struct IdleConnection {
    id: usize,
    stream: TcpStream,
}

impl ConnectionServer {
    /// Accepts every connection waiting on `socket`, without blocking.
    fn accept_pending(&self, socket: &TcpListener) {
        loop {
            match socket.accept() {
                Ok((stream, _peer)) => self.serve_in_background(stream),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    // E.g. a connection reset before we accepted it, or out of file descriptors
                    // for a moment: not a reason to end the login.
                    debug!(1, "accepting a login callback connection failed: {err}");
                    return;
                }
            }
        }
    }

    fn serve_in_background(&self, stream: TcpStream) {
        if self.in_flight.load(Ordering::SeqCst) >= MAX_CONNECTIONS_IN_FLIGHT && !self.make_room() {
            debug!(
                1,
                "too many login callback connections at once, all of them busy; closing the new one"
            );
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Ok(handle) = stream.try_clone() {
            lock(&self.idle).push(IdleConnection { id, stream: handle });
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let slot = InFlight(Arc::clone(&self.in_flight));
        let expected = Arc::clone(&self.expected);
        let path = Arc::clone(&self.callback_path);
        let verdicts = self.verdicts.clone();
        let idle = Arc::clone(&self.idle);
        std::thread::spawn(move || {
            let _slot = slot;
            let head_read = || lock(&idle).retain(|connection| connection.id != id);
            if let Some(verdict) = serve_connection(stream, &path, &expected, head_read) {
                // A send error only means the wait has already returned.
                let _ = verdicts.send(verdict);
            }
        });
    }

    /// Closes the connection that has waited longest without sending its request, if any; its
    /// thread's read then fails at once and gives the slot back. `false`: every connection in
    /// flight has sent its request and is being answered.
    fn make_room(&self) -> bool {
        let mut idle = lock(&self.idle);
        if idle.is_empty() {
            return false;
        }
        let oldest = idle.remove(0);
        debug!(
            2,
            "too many login callback connections at once; closing the longest idle one"
        );
        let _ = oldest.stream.shutdown(Shutdown::Both);
        true
    }
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

/// The list's lock; a thread that panicked while holding it left a list that is still usable.
fn lock(idle: &Mutex<Vec<IdleConnection>>) -> std::sync::MutexGuard<'_, Vec<IdleConnection>> {
    idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Gives back a connection slot when its thread ends, however it ends.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads one request, answers it, and says what it was (`None`: not a callback at all).
/// `head_read` runs once the request head is in (or reading it failed): from then on the
/// connection is no longer idle.
fn serve_connection(
    mut stream: TcpStream,
    callback_path: &str,
    expected: &ExpectedResponse,
    head_read: impl FnOnce(),
) -> Option<Verdict> {
    // Accepted sockets inherit O_NONBLOCK from the listener on macOS and the BSDs.
    stream.set_nonblocking(false).ok()?;
    stream.set_write_timeout(Some(CONNECTION_TIMEOUT)).ok()?;
    let head = read_request_head(&mut stream, Instant::now() + CONNECTION_TIMEOUT);
    head_read();
    let head = match head {
        Ok(head) => head,
        Err(err) => {
            debug!(2, "ignored a login callback connection: {err}");
            return None;
        }
    };
    let verdict = match route(&head, callback_path, expected) {
        Route::BadRequest => {
            respond(
                &mut stream,
                "400 Bad Request",
                "Bad request",
                "This is kubecred's login listener.",
            );
            return None;
        }
        Route::NotTheCallback => {
            // Favicons and the like: not a callback, no notice.
            respond(
                &mut stream,
                "404 Not Found",
                "Not found",
                "This is kubecred's login listener.",
            );
            return None;
        }
        Route::Callback(verdict) => verdict,
    };
    match &verdict {
        Verdict::Code(_) => respond(
            &mut stream,
            "200 OK",
            "Logged in",
            "Logged in. You may close this tab and return to your terminal.",
        ),
        Verdict::Refused(_) => respond(
            &mut stream,
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
            respond(
                &mut stream,
                "200 OK",
                "Login failed",
                &format!(
                    "The identity provider refused the login: {}{detail}. Return to your terminal for what to do next.",
                    html_escape(error)
                ),
            )
        }
        Verdict::Incomplete => respond(
            &mut stream,
            "400 Bad Request",
            "Login callback incomplete",
            "This callback carries neither a code nor an error. Return to your terminal.",
        ),
        Verdict::WrongIssuer(_) => respond(
            &mut stream,
            "400 Bad Request",
            "Login response refused",
            "kubecred refused this login response: it does not name the identity provider the login went to. Return to your terminal.",
        ),
    }
    Some(verdict)
}

/// Reads up to the blank line that ends the request head, within `deadline` and
/// [`MAX_REQUEST_HEAD`] bytes. A GET has no body, so this is the whole request.
fn read_request_head(stream: &mut TcpStream, deadline: Instant) -> io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "request not sent in time",
            ));
        }
        // Per read, the time left overall: a client trickling bytes cannot extend its time.
        stream.set_read_timeout(Some(left))?;
        let read = stream.read(&mut chunk)?;
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

/// Writes a complete small HTML answer and closes our side. `body` must already be escaped.
fn respond(stream: &mut TcpStream, status: &str, title: &str, body: &str) {
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>{body}</p></body></html>\n"
    );
    // The page loads nothing, and with the code in its URL it must not be cached or leak it in
    // a Referer; the CSP makes any markup that slipped through the escaping inert.
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    if let Err(err) = stream
        .write_all(answer.as_bytes())
        .and_then(|()| stream.flush())
    {
        debug!(2, "could not answer a login callback connection: {err}");
    }
    // A FIN after the page, rather than a reset that could make the browser drop it.
    let _ = stream.shutdown(Shutdown::Write);
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
