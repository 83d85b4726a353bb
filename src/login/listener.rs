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
//!
//! The same serving machinery answers the device flow's page ([`serve_one_page`], for
//! `device_page.rs`): one page at one secret path on 127.0.0.1, served on a thread of its own
//! until the login ends ([`Serving::serve_until`]).
//!
//! The parts: this file binds and serves; `addresses.rs` picks the addresses (the first free one,
//! both loopback families for `localhost`) and words a failure to bind; `page.rs` reads one
//! request head, routes it and writes the page; `tls.rs` reads the https callback's certificate.

mod addresses;
mod page;
mod tls;

pub(crate) use page::http_answer;
#[cfg(any(test, fuzzing))]
pub(crate) use page::{Route, route};
pub use tls::tls_config;

use crate::config::RedirectUri;
use crate::debug;
use crate::error::{Exit, fail};
use crate::login::callback::{ExpectedResponse, Verdict};
use addresses::{bind_address, no_address_left};
use page::{answer, read_request_head};
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

/// How long one turn of [`Serving::next_callback`] serves before the wait looks at its other
/// sources (a pasted line). Connections are served the moment they arrive, whatever this is.
const WAIT_SLICE: Duration = Duration::from_millis(50);
/// A connection gets this long, in total, to send its request head and read the answer.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at the same time, so a local program opening connections in a loop cannot
/// hold file descriptors without bound. When they are all taken, the one that has waited longest
/// without sending its request is closed to make room (see `admit`): idle junk must never lock
/// out the real browser, whose request arrives the moment it connects.
const MAX_CONNECTIONS_IN_FLIGHT: usize = 16;

/// Listening sockets for one login, and the redirect URI that points at them.
pub struct CallbackListener {
    sockets: Vec<TcpListener>,
    redirect: RedirectUri,
    /// Serves every connection over TLS when set.
    tls: Option<TlsAcceptor>,
    /// For `kubecred login --remote-bootstrap`: the code goes on to another machine, and the
    /// page says where to look for the line to paste there.
    relaying: bool,
}

impl std::fmt::Debug for CallbackListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackListener")
            .field("sockets", &self.sockets)
            .field("redirect", &self.redirect)
            .field("tls", &self.tls.is_some())
            .field("relaying", &self.relaying)
            .finish()
    }
}

impl CallbackListener {
    /// Listens on the first usable address of `addresses` (loopback, validated by the config;
    /// port 0 = any free port). `redirect` is the resolved redirect URI (the user's
    /// `--redirect-url`, or the default), sent as written: where it names no port, the bound
    /// port goes in its place; where it names one, it is kept (the config listens there, or
    /// where `--listen-address` says: a port forward's other end). When its host is an IP, that
    /// IP is the one listened on (with each address's port), since the browser will go nowhere
    /// else; when it is `localhost` (the default), the same port on the other loopback family is
    /// listened on as well.
    pub fn bind(addresses: &[SocketAddr], redirect: &RedirectUri) -> anyhow::Result<Self> {
        let pinned_ip = match redirect.url().host() {
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
                    let redirect = match redirect.written_port() {
                        Some(_) => redirect.clone(),
                        None => redirect.with_port(port),
                    };
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
                        relaying: false,
                    });
                }
                Err(problem) => problems.push((address, problem)),
            }
        }
        match redirect.written_port() {
            // The provider sends the browser to the port the redirect URI names, and nowhere
            // else: another port would not do, so say which setting holds it.
            Some(port) if problems.iter().all(|(address, _)| address.port() == port) => Err(fail(
                Exit::Login,
                format!(
                    "cannot listen for the login callback on port {port}, which the redirect URI {redirect} names ({}); close the program that holds it, or leave the port out of --redirect-url so that a free one goes in (the provider must accept any port on a loopback redirect URI, RFC 8252 §7.3)",
                    crate::error::one_line(&no_address_left(&problems))
                ),
            )),
            _ => Err(no_address_left(&problems)),
        }
    }

    /// Serves every connection over TLS with `config` (see [`tls_config`]).
    pub fn with_tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(TlsAcceptor::from(config));
        self
    }

    /// Serves the login of another machine (a relayed login) whose redirect URI is `remote`:
    /// this listener's redirect URI becomes `remote` with the bound port (`remote` itself, as
    /// written — `:08000` too — where that port is its own), and the success page sends the
    /// person back to the terminal for the line to paste there.
    pub fn relaying(mut self, remote: &RedirectUri) -> Self {
        if let Some(port) = self.redirect.written_port() {
            self.redirect = remote.with_port(port);
        }
        self.relaying = true;
        self
    }

    /// The redirect URI to send to the provider, as it is to be sent: the configured one, with
    /// the bound port where it names none.
    pub fn redirect_uri(&self) -> &RedirectUri {
        &self.redirect
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
        let site = Site::Login {
            expected: expected.into(),
            callback_path: self.redirect.url().path().to_string(),
            relaying: self.relaying,
        };
        Serving::start(self.sockets, self.tls, site)
    }
}

/// A listening socket on 127.0.0.1 (a free port) for [`serve_one_page`]: bound first, so that
/// the page's address is known before anything is served.
pub(crate) fn bind_page_socket() -> anyhow::Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)).map_err(|err| {
        fail(
            Exit::Login,
            format!("cannot listen on 127.0.0.1 for the login page: {err}"),
        )
    })
}

/// Serves `answer` (a whole HTTP answer, [`http_answer`]) to a GET of `path` with the Host
/// header of `socket`'s address, and "not found" to anything else, on `socket` (from
/// [`bind_page_socket`]); with the same bounds as the callback listener.
pub(crate) fn serve_one_page(
    socket: TcpListener,
    path: String,
    answer: Vec<u8>,
) -> io::Result<Serving> {
    let host = socket.local_addr()?.to_string();
    Serving::start(vec![socket], None, Site::OnePage { path, host, answer })
}

/// What the listener serves.
pub(super) enum Site {
    /// The login's redirect: each callback judged against `expected` and handed over.
    Login {
        expected: ExpectedResponse,
        callback_path: String,
        /// See [`CallbackListener::relaying`].
        relaying: bool,
    },
    /// One page at one path (the device flow's page), asked for by this host name (the
    /// socket's address: a page reached under another name, DNS rebinding, is not served);
    /// nothing handed over.
    OnePage {
        path: String,
        host: String,
        answer: Vec<u8>,
    },
}

/// A listener that answers the browser. Dropping it closes the sockets and every connection at
/// once, so a late browser gets "connection refused" rather than a hanging tab.
///
/// Why tasks on tokio (already reqwest's runtime) rather than a thread per connection: a
/// connection is accepted and answered the moment it arrives, not at the next turn of a polling
/// loop, and a browser's idle pre-connections cost a few hundred bytes each instead of a thread.
pub struct Serving {
    served: Served,
    /// Declared last, so dropped last: the sockets and tasks of `served` go first.
    runtime: tokio::runtime::Runtime,
}

/// The sockets and the connections being served, which the runtime drives.
struct Served {
    listeners: Vec<tokio::net::TcpListener>,
    /// Each connection's task; it yields the verdict of a callback, `None` for anything else.
    connections: JoinSet<Option<Verdict>>,
    /// Connections that have not sent their request head yet, oldest first: the ones closed to
    /// make room (see [`MAX_CONNECTIONS_IN_FLIGHT`]).
    idle: VecDeque<(u64, AbortHandle)>,
    next_id: u64,
    page: Arc<PageContext>,
}

/// What every connection's task needs to answer its request.
struct PageContext {
    site: Site,
    /// Connections that have sent their head since the last turn: no longer idle.
    heads_read: Mutex<Vec<u64>>,
    /// The https callback's TLS, when set.
    tls: Option<TlsAcceptor>,
}

impl Serving {
    /// Serves `site` on `sockets`, each connection on a task of its own, on a current-thread
    /// runtime that runs while the caller is in [`Serving::next_callback`] or
    /// [`Serving::serve_until`].
    fn start(sockets: Vec<TcpListener>, tls: Option<TlsAcceptor>, site: Site) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listeners = {
            let _inside = runtime.enter();
            sockets
                .into_iter()
                .map(|socket| {
                    socket.set_nonblocking(true)?;
                    tokio::net::TcpListener::from_std(socket)
                })
                .collect::<io::Result<Vec<_>>>()?
        };
        Ok(Serving {
            served: Served {
                listeners,
                connections: JoinSet::new(),
                idle: VecDeque::new(),
                next_id: 0,
                page: Arc::new(PageContext {
                    site,
                    heads_read: Mutex::new(Vec::new()),
                    tls,
                }),
            },
            runtime,
        })
    }

    /// Serves connections until a callback's page has been answered (its verdict is returned)
    /// or [`WAIT_SLICE`] has passed (`None`), whichever is first, and never past `until`: the
    /// caller looks at its other sources (a pasted line) between turns. Every callback to the
    /// redirect path is handed over, with the verdict that chose its page; refusing the ones
    /// that are not this login's is the caller's part.
    pub(crate) fn next_callback(&mut self, until: Instant) -> Option<Verdict> {
        let wait = WAIT_SLICE.min(until.saturating_duration_since(Instant::now()));
        let Serving { served, runtime } = self;
        runtime.block_on(async {
            let next = std::future::poll_fn(|cx| served.poll(cx));
            tokio::time::timeout(wait, next).await.ok()
        })
    }

    /// Serves connections until `until` or until `stop` is sent or dropped, whichever is
    /// first: the device flow's page, on a thread of its own (nothing is handed over).
    pub(crate) fn serve_until(&mut self, until: Instant, mut stop: oneshot::Receiver<()>) {
        let Serving { served, runtime } = self;
        runtime.block_on(async {
            let end = tokio::time::sleep_until(until.into());
            let mut end = std::pin::pin!(end);
            std::future::poll_fn(|cx| {
                if end.as_mut().poll(cx).is_ready()
                    || std::pin::Pin::new(&mut stop).poll(cx).is_ready()
                {
                    return Poll::Ready(());
                }
                // A page served is no verdict: this only returns for a callback.
                let _ = served.poll(cx);
                Poll::Pending
            })
            .await;
        });
    }
}

impl Served {
    /// Accepts every connection waiting, starts serving each, and collects the tasks that
    /// ended: ready with the first callback's verdict.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Verdict> {
        let Served {
            listeners,
            connections,
            idle,
            next_id,
            page,
        } = self;
        for listener in listeners.iter() {
            while let Poll::Ready(accepted) = listener.poll_accept(cx) {
                match accepted {
                    Ok((stream, _peer)) => {
                        admit(stream, connections, idle, next_id, page);
                    }
                    Err(err) => {
                        // A connection reset before we took it, or no descriptor for a
                        // moment: not a reason to end the login.
                        debug!(1, "accepting a login listener connection failed: {err}");
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
/// The list's lock; a task that panicked while holding it left a list that is still usable.
fn lock(list: &Mutex<Vec<u64>>) -> std::sync::MutexGuard<'_, Vec<u64>> {
    list.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
pub(crate) mod tests;
