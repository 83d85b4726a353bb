//! Why a connection through a proxy failed, asked of the proxy itself.
//!
//! reqwest (hyper-util underneath) reports a failed tunnel with error types it keeps private and
//! messages such as "tunnel error: unsuccessful" or "SOCKS error: failed to create underlying
//! connection": not the 407, not the SOCKS reply, not even whether the proxy answered at all.
//! So when a connection through a proxy fails, kubecred connects to the proxy once more and
//! opens the tunnel the same way — the CONNECT request, or the SOCKS5 greeting, login and
//! connect request — up to the first step that fails, and that step is the error. The request
//! itself is not sent again: only the tunnel is opened, then closed. Nothing here guesses from
//! the text of a dependency's message.

use super::{Proxy, ProxyKind};
use base64::Engine;
use std::io;
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the proxy did when asked to open the tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyProblem {
    /// The proxy's host name does not resolve.
    DoesNotResolve,
    /// Nothing listens at the proxy's address.
    Refused,
    /// No answer to the connection, or no route to the proxy.
    Unreachable,
    /// The TLS handshake with an https:// proxy failed (the sentence of `errors.rs`).
    Tls { explained: String },
    /// `407 Proxy Authentication Required`; or `401 Unauthorized`, which some proxies
    /// (tinyproxy) answer to a CONNECT whose credentials they refuse.
    AuthenticationRequired {
        status: u16,
        credentials_given: bool,
    },
    /// Another answer than 2xx to CONNECT: a refusal (403) or a target it cannot reach (502).
    Answered { status: u16 },
    /// A SOCKS5 proxy that wants a user name and password, and got none.
    SocksNeedsCredentials,
    /// A SOCKS5 proxy that refused the user name and password.
    SocksRefusedCredentials,
    /// A SOCKS5 proxy that accepts none of the login methods offered (no login, or a password).
    SocksNoAcceptableMethod,
    /// The SOCKS5 proxy could not connect to the destination (its reply code).
    SocksCouldNotConnect { reply: u8 },
    /// It answered something that is not this kind of proxy's protocol.
    NotThisKindOfProxy,
}

impl ProxyProblem {
    /// Whether the same request could get through later: a proxy that is down may come back,
    /// a refused password or a refused destination will not change, and a proxy's host name
    /// that does not resolve is no more retried than the provider's (`NetworkFailure`).
    pub fn may_pass_later(&self) -> bool {
        match self {
            ProxyProblem::Refused
            | ProxyProblem::Unreachable
            | ProxyProblem::SocksCouldNotConnect { .. } => true,
            ProxyProblem::Answered { status } => matches!(status, 408 | 429 | 500..=599),
            _ => false,
        }
    }
}

/// Opens the tunnel to `host:port` through `proxy` once, and says what went wrong; `None` when
/// it opens (the failure was past the tunnel), or when this kind of proxy is not asked.
pub async fn diagnose(
    proxy: &Proxy,
    host: &str,
    port: u16,
    tls: &Arc<rustls::ClientConfig>,
) -> Option<ProxyProblem> {
    let stream = match connect(proxy).await {
        Ok(stream) => stream,
        Err(problem) => return Some(problem),
    };
    match proxy.kind {
        ProxyKind::Http => connect_request(stream, proxy, host, port).await,
        ProxyKind::Https => {
            let name = rustls::pki_types::ServerName::try_from(
                proxy
                    .host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
            )
            .ok()?;
            match tokio_rustls::TlsConnector::from(Arc::clone(tls))
                .connect(name, stream)
                .await
            {
                Ok(tls_stream) => connect_request(tls_stream, proxy, host, port).await,
                Err(err) => Some(ProxyProblem::Tls {
                    explained: crate::http::describe(&err),
                }),
            }
        }
        ProxyKind::Socks5 | ProxyKind::Socks5h => socks5(stream, proxy, host, port).await,
        // Reaching it is all that is asked of a SOCKS4 proxy.
        ProxyKind::Socks4 | ProxyKind::Socks4a => None,
    }
}

/// Connects to the proxy and closes the connection: what went wrong, if anything.
pub async fn reach(proxy: &Proxy) -> Option<ProxyProblem> {
    connect(proxy).await.err()
}

async fn connect(proxy: &Proxy) -> Result<TcpStream, ProxyProblem> {
    let host = proxy.host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<_> = tokio::net::lookup_host((host, proxy.port))
        .await
        .map_err(|_| ProxyProblem::DoesNotResolve)?
        .collect();
    let mut problem = ProxyProblem::DoesNotResolve;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
                problem = ProxyProblem::Refused;
            }
            Err(_) => {
                if problem != ProxyProblem::Refused {
                    problem = ProxyProblem::Unreachable;
                }
            }
        }
    }
    Err(problem)
}

/// `CONNECT host:port`, and the status of the proxy's answer.
async fn connect_request<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Option<ProxyProblem> {
    let mut request = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
    if let Some((user, password)) = &proxy.credentials {
        let pair = format!("{user}:{}", password.expose());
        request.push_str(&format!(
            "Proxy-Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 || head.len() > 16 * 1024 {
            break;
        }
        head.extend_from_slice(&chunk[..read]);
    }
    let status = parse_status_line(&head);
    let _ = stream.shutdown().await;
    match status {
        None => Some(ProxyProblem::NotThisKindOfProxy),
        Some(200..=299) => None,
        Some(status @ (401 | 407)) => Some(ProxyProblem::AuthenticationRequired {
            status,
            credentials_given: proxy.credentials.is_some(),
        }),
        Some(status) => Some(ProxyProblem::Answered { status }),
    }
}

/// The status of `HTTP/1.x NNN reason`.
fn parse_status_line(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    if !words.next()?.starts_with("HTTP/1.") {
        return None;
    }
    words.next()?.parse().ok()
}

/// RFC 1928's greeting, RFC 1929's user name and password, and the connect request.
async fn socks5(
    mut stream: TcpStream,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Option<ProxyProblem> {
    if let ControlFlow::Break(verdict) = socks5_log_in(&mut stream, proxy).await {
        return verdict;
    }
    let request = socks5_connect_request(proxy, host, port).await?;
    stream.write_all(&request).await.ok()?;
    let mut reply = [0u8; 2];
    if stream.read_exact(&mut reply).await.is_err() || reply[0] != 5 {
        return Some(ProxyProblem::NotThisKindOfProxy);
    }
    let _ = stream.shutdown().await;
    (reply[1] != 0).then_some(ProxyProblem::SocksCouldNotConnect { reply: reply[1] })
}

/// The greeting (the login methods offered: none, and a password where there is one) and the
/// login the proxy picks. `Break` with the problem, or with `None` where the proxy stopped
/// answering (nothing more can be told).
async fn socks5_log_in(stream: &mut TcpStream, proxy: &Proxy) -> ControlFlow<Option<ProxyProblem>> {
    const NO_LOGIN: u8 = 0x00;
    const PASSWORD: u8 = 0x02;
    const NONE_ACCEPTABLE: u8 = 0xff;
    let greeting: &[u8] = if proxy.credentials.is_some() {
        &[5, 2, NO_LOGIN, PASSWORD]
    } else {
        &[5, 1, NO_LOGIN]
    };
    if stream.write_all(greeting).await.is_err() {
        return ControlFlow::Break(None);
    }
    let mut choice = [0u8; 2];
    if stream.read_exact(&mut choice).await.is_err() || choice[0] != 5 {
        return ControlFlow::Break(Some(ProxyProblem::NotThisKindOfProxy));
    }
    match (choice[1], &proxy.credentials) {
        (NO_LOGIN, _) => ControlFlow::Continue(()),
        (PASSWORD, Some((user, password))) => {
            socks5_password(stream, user.as_bytes(), password.expose().as_bytes()).await
        }
        (PASSWORD | NONE_ACCEPTABLE, None) => {
            ControlFlow::Break(Some(ProxyProblem::SocksNeedsCredentials))
        }
        _ => ControlFlow::Break(Some(ProxyProblem::SocksNoAcceptableMethod)),
    }
}

/// RFC 1929: the user name and password, and the proxy's verdict on them.
async fn socks5_password(
    stream: &mut TcpStream,
    user: &[u8],
    password: &[u8],
) -> ControlFlow<Option<ProxyProblem>> {
    let (Ok(user_len), Ok(password_len)) = (u8::try_from(user.len()), u8::try_from(password.len()))
    else {
        return ControlFlow::Break(Some(ProxyProblem::SocksRefusedCredentials));
    };
    let mut login = vec![1, user_len];
    login.extend_from_slice(user);
    login.push(password_len);
    login.extend_from_slice(password);
    let mut verdict = [0u8; 2];
    if stream.write_all(&login).await.is_err() || stream.read_exact(&mut verdict).await.is_err() {
        return ControlFlow::Break(None);
    }
    if verdict[1] != 0 {
        return ControlFlow::Break(Some(ProxyProblem::SocksRefusedCredentials));
    }
    ControlFlow::Continue(())
}

/// The connect request for `host:port`: an IP address as one; a name resolved here for
/// `socks5`, sent as the name for `socks5h` (the proxy resolves it). `None` where it cannot be
/// made: a name too long, or one that does not resolve here (the destination's problem, which
/// the request's own error already says).
async fn socks5_connect_request(proxy: &Proxy, host: &str, port: u16) -> Option<Vec<u8>> {
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let mut request = vec![5, 1, 0];
    let address: Option<IpAddr> = match bare_host.parse() {
        Ok(ip) => Some(ip),
        Err(_) if proxy.kind == ProxyKind::Socks5 => Some(
            tokio::net::lookup_host((bare_host, port))
                .await
                .ok()?
                .next()?
                .ip(),
        ),
        Err(_) => None,
    };
    match address {
        Some(IpAddr::V4(ip)) => {
            request.push(1);
            request.extend_from_slice(&ip.octets());
        }
        Some(IpAddr::V6(ip)) => {
            request.push(4);
            request.extend_from_slice(&ip.octets());
        }
        None => {
            request.push(3);
            request.push(u8::try_from(bare_host.len()).ok()?);
            request.extend_from_slice(bare_host.as_bytes());
        }
    }
    request.extend_from_slice(&port.to_be_bytes());
    Some(request)
}

/// RFC 1928's reply codes, for the message.
pub fn socks_reply_meaning(reply: u8) -> &'static str {
    match reply {
        1 => "general SOCKS server failure",
        2 => "connection not allowed by its rules",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused by the destination",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "an unknown reply",
    }
}

#[cfg(test)]
mod tests;
