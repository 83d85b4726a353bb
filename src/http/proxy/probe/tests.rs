//! The probe against scripted proxies on loopback: what each answer becomes, and what the probe
//! sends (the CONNECT line and its credentials, the SOCKS5 greeting and login).

use super::*;
use crate::config::ProxyEnvironment;
use crate::http::proxy::{Proxies, Route};
use crate::secret::Secret;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use url::Url;

/// A proxy that reads what the probe sends and answers each step with the next of `answers`;
/// what it read comes back on the channel.
fn scripted_proxy(answers: Vec<Vec<u8>>) -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut seen = Vec::new();
        for answer in answers {
            let mut chunk = [0u8; 1024];
            let read = stream.read(&mut chunk).unwrap_or(0);
            seen.extend_from_slice(&chunk[..read]);
            let _ = stream.write_all(&answer);
        }
        let _ = sender.send(seen);
    });
    (port, received)
}

fn proxy(url: &str) -> Proxy {
    let proxies = Proxies::read(&ProxyEnvironment {
        variables: vec![("HTTPS_PROXY", Secret::new(url))],
        system_settings: false,
    })
    .unwrap();
    match proxies.route(&Url::parse("https://idp.example/").unwrap()) {
        Route::Through(proxy) => proxy.clone(),
        other => panic!("{other:?}"),
    }
}

fn diagnosed(proxy: &Proxy) -> Option<ProxyProblem> {
    let tls = Arc::new(
        crate::http::trust::client_config(&crate::config::TlsSettings::default()).unwrap(),
    );
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(diagnose(proxy, "idp.example", 443, &tls))
}

#[test]
fn an_http_proxys_answer_to_connect() {
    let (port, seen) = scripted_proxy(vec![
        b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n".to_vec(),
    ]);
    let with_password = proxy(&format!("http://alice:hunter2@127.0.0.1:{port}"));
    assert_eq!(
        diagnosed(&with_password),
        Some(ProxyProblem::AuthenticationRequired {
            status: 407,
            credentials_given: true
        })
    );
    let request = String::from_utf8(seen.recv().unwrap()).unwrap();
    assert!(
        request.starts_with("CONNECT idp.example:443 HTTP/1.1\r\n"),
        "{request}"
    );
    // alice:hunter2
    assert!(
        request.contains("Proxy-Authorization: Basic YWxpY2U6aHVudGVyMg==\r\n"),
        "{request}"
    );

    // tinyproxy's answer to credentials it refuses.
    let (port, _) = scripted_proxy(vec![b"HTTP/1.0 401 Unauthorized\r\n\r\n".to_vec()]);
    assert_eq!(
        diagnosed(&proxy(&format!("http://alice:wrong@127.0.0.1:{port}"))),
        Some(ProxyProblem::AuthenticationRequired {
            status: 401,
            credentials_given: true
        })
    );
    let (port, _) = scripted_proxy(vec![b"HTTP/1.1 403 Forbidden\r\n\r\n".to_vec()]);
    assert_eq!(
        diagnosed(&proxy(&format!("127.0.0.1:{port}"))),
        Some(ProxyProblem::Answered { status: 403 })
    );
    let (port, _) = scripted_proxy(vec![
        b"HTTP/1.0 200 Connection established\r\n\r\n".to_vec(),
    ]);
    assert_eq!(diagnosed(&proxy(&format!("http://127.0.0.1:{port}"))), None);
    let (port, _) = scripted_proxy(vec![b"SSH-2.0-OpenSSH_9.2\r\n\r\n".to_vec()]);
    assert_eq!(
        diagnosed(&proxy(&format!("http://127.0.0.1:{port}"))),
        Some(ProxyProblem::NotThisKindOfProxy)
    );
}

#[test]
fn a_proxy_that_is_not_there() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    assert_eq!(
        diagnosed(&proxy(&format!("http://127.0.0.1:{port}"))),
        Some(ProxyProblem::Refused)
    );
    assert_eq!(
        diagnosed(&proxy("socks5h://proxy.invalid:1080")),
        Some(ProxyProblem::DoesNotResolve)
    );
}

#[test]
fn a_socks5_proxys_answers() {
    // Wants a login, none offered.
    let (port, seen) = scripted_proxy(vec![vec![5, 0xff]]);
    assert_eq!(
        diagnosed(&proxy(&format!("socks5h://127.0.0.1:{port}"))),
        Some(ProxyProblem::SocksNeedsCredentials)
    );
    assert_eq!(seen.recv().unwrap(), [5, 1, 0]);

    // Refuses the password.
    let (port, seen) = scripted_proxy(vec![vec![5, 2], vec![1, 1]]);
    assert_eq!(
        diagnosed(&proxy(&format!("socks5h://bob:wrong@127.0.0.1:{port}"))),
        Some(ProxyProblem::SocksRefusedCredentials)
    );
    let mut expected = vec![5, 2, 0, 2, 1, 3];
    expected.extend_from_slice(b"bob");
    expected.push(5);
    expected.extend_from_slice(b"wrong");
    assert_eq!(seen.recv().unwrap(), expected);

    // Takes the login, cannot reach the destination (named, not resolved here: socks5h).
    let (port, seen) = scripted_proxy(vec![
        vec![5, 2],
        vec![1, 0],
        vec![5, 4, 0, 1, 0, 0, 0, 0, 0, 0],
    ]);
    assert_eq!(
        diagnosed(&proxy(&format!("socks5h://bob:right@127.0.0.1:{port}"))),
        Some(ProxyProblem::SocksCouldNotConnect { reply: 4 })
    );
    let sent = seen.recv().unwrap();
    let mut connect = vec![5, 1, 0, 3, 11];
    connect.extend_from_slice(b"idp.example");
    connect.extend_from_slice(&443u16.to_be_bytes());
    assert!(sent.ends_with(&connect), "{sent:?}");

    // Opens the tunnel: nothing to say.
    let (port, _) = scripted_proxy(vec![vec![5, 0], vec![5, 0, 0, 1, 0, 0, 0, 0, 0, 0]]);
    assert_eq!(
        diagnosed(&proxy(&format!("socks5h://127.0.0.1:{port}"))),
        None
    );

    // An HTTP proxy behind a socks5h:// URL.
    let (port, _) = scripted_proxy(vec![b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec()]);
    assert_eq!(
        diagnosed(&proxy(&format!("socks5h://127.0.0.1:{port}"))),
        Some(ProxyProblem::NotThisKindOfProxy)
    );
}

#[test]
fn which_problems_may_pass_on_a_retry() {
    assert!(ProxyProblem::Refused.may_pass_later());
    assert!(ProxyProblem::Answered { status: 502 }.may_pass_later());
    assert!(!ProxyProblem::Answered { status: 403 }.may_pass_later());
    assert!(
        !ProxyProblem::AuthenticationRequired {
            status: 407,
            credentials_given: true
        }
        .may_pass_later()
    );
    assert!(!ProxyProblem::SocksRefusedCredentials.may_pass_later());
}
