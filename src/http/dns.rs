//! Host-name resolution for the HTTP client, with a failure type of our own.
//!
//! reqwest's default resolver runs the system's `getaddrinfo` on a worker thread, and reports a
//! failure as hyper-util's private `ConnectError("dns error")` around an untyped `io::Error`:
//! nothing a caller can match on. This resolver does the same lookup (std's `ToSocketAddrs`, on
//! a thread of its own, so that the HTTP runtime and its timeouts keep running) and wraps a
//! failure in [`DnsError`], which `errors.rs` recognises by type.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// The host name could not be resolved.
#[derive(Debug)]
pub struct DnsError {
    host: String,
    source: std::io::Error,
}

impl DnsError {
    pub fn new(host: impl Into<String>, source: std::io::Error) -> DnsError {
        DnsError {
            host: host.into(),
            source,
        }
    }
}

impl fmt::Display for DnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot resolve {}", self.host)
    }
}

impl StdError for DnsError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.source)
    }
}

/// The system resolver, failing with [`DnsError`].
#[derive(Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let slot = Arc::new(Mutex::new(Lookup::default()));
        let worker_slot = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("kubecred-dns".into())
            .spawn(move || {
                // Port 0: reqwest puts the URL's port on the addresses it gets back.
                let result = (host.as_str(), 0)
                    .to_socket_addrs()
                    .map(|addrs| addrs.collect::<Vec<SocketAddr>>())
                    .map_err(|err| DnsError::new(host, err));
                let mut lookup = worker_slot.lock().unwrap_or_else(|p| p.into_inner());
                lookup.result = Some(result);
                if let Some(waker) = lookup.waker.take() {
                    waker.wake();
                }
            });
        if let Err(err) = spawned {
            let host = name.as_str().to_string();
            return Box::pin(std::future::ready(Err(
                Box::new(DnsError::new(host, err)) as Box<dyn StdError + Send + Sync>
            )));
        }
        Box::pin(PendingLookup(slot))
    }
}

#[derive(Default)]
struct Lookup {
    result: Option<Result<Vec<SocketAddr>, DnsError>>,
    waker: Option<Waker>,
}

/// Completes when the lookup thread has stored its result.
struct PendingLookup(Arc<Mutex<Lookup>>);

impl Future for PendingLookup {
    type Output = Result<Addrs, Box<dyn StdError + Send + Sync>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut lookup = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match lookup.result.take() {
            Some(Ok(addrs)) => Poll::Ready(Ok(Box::new(addrs.into_iter()) as Addrs)),
            Some(Err(err)) => Poll::Ready(Err(Box::new(err))),
            None => {
                lookup.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
