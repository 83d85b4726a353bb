//! The listener on its own: binding, the pages it answers, what it hands over. The wait for a
//! code through a real listener is tested in `wait/tests.rs`, which uses the helpers here.

use super::*;
use crate::error::exit_code_of;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;

const STATE: &str = "expected-state-1234";

pub(crate) fn localhost_v4() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

pub(crate) fn ip_redirect() -> Url {
    Url::parse("http://127.0.0.1/callback").unwrap()
}

/// The redirect URI kubecred uses when the user gives none (`http://localhost/callback`).
pub(crate) fn default_redirect() -> Url {
    Url::parse(crate::config::DEFAULT_REDIRECT_URL).unwrap()
}

pub(crate) fn ipv6_available() -> bool {
    TcpListener::bind("[::1]:0").is_ok()
}

/// Sends one GET and returns (status line, whole answer).
pub(crate) fn get(address: SocketAddr, target: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.lines().next().unwrap_or_default().to_string();
    (status, answer)
}

#[test]
fn a_busy_address_moves_on_to_the_next() {
    let other_program = TcpListener::bind(localhost_v4()).unwrap();
    let busy = other_program.local_addr().unwrap();
    let listener = CallbackListener::bind(&[busy, localhost_v4()], &ip_redirect()).unwrap();
    let bound = listener.local_addresses()[0];
    assert_ne!(bound.port(), busy.port());
    assert_eq!(
        listener.redirect_uri(),
        format!("http://127.0.0.1:{}/callback", bound.port())
    );
}

#[test]
fn all_addresses_busy_names_each_of_them() {
    let first = TcpListener::bind(localhost_v4()).unwrap();
    let second = TcpListener::bind(localhost_v4()).unwrap();
    let (a, b) = (first.local_addr().unwrap(), second.local_addr().unwrap());
    let err = CallbackListener::bind(&[a, b], &ip_redirect()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert_eq!(
        err.to_string(),
        format!(
            "cannot listen for the login callback: {a}, {b} are all in use; \
             close the other program or pass --listen-address 127.0.0.1:0"
        )
    );
}

#[test]
fn redirect_uri_keeps_the_users_path_and_takes_the_bound_port() {
    let user = Url::parse("http://127.0.0.1:9999/oidc/done").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &user).unwrap();
    let port = listener.local_addresses()[0].port();
    assert_eq!(
        listener.redirect_uri(),
        format!("http://127.0.0.1:{port}/oidc/done")
    );

    let listener = CallbackListener::bind(&[localhost_v4()], &default_redirect()).unwrap();
    let port = listener.local_addresses()[0].port();
    assert_eq!(
        listener.redirect_uri(),
        format!("http://localhost:{port}/callback")
    );
}

#[test]
fn an_ip_redirect_pins_the_address_it_names() {
    // The configured addresses are 127.0.0.1; the redirect says [::1]: listen there.
    if !ipv6_available() {
        crate::log::notice(format_args!("skipped: IPv6 loopback unavailable"));
        return;
    }
    let user = Url::parse("http://[::1]/callback").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &user).unwrap();
    let addresses = listener.local_addresses();
    assert_eq!(addresses.len(), 1);
    assert_eq!(addresses[0].ip(), IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_eq!(
        listener.redirect_uri(),
        format!("http://[::1]:{}/callback", addresses[0].port())
    );
}

#[test]
fn a_busy_twin_port_makes_the_address_busy_for_localhost() {
    if !ipv6_available() {
        crate::log::notice(format_args!("skipped: IPv6 loopback unavailable"));
        return;
    }
    let other_program = TcpListener::bind("[::1]:0").unwrap();
    let port = other_program.local_addr().unwrap().port();
    let same_port_v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    if TcpListener::bind(same_port_v4).is_err() {
        crate::log::notice(format_args!(
            "skipped: 127.0.0.1:{port} happens to be taken"
        ));
        return;
    }
    let listener =
        CallbackListener::bind(&[same_port_v4, localhost_v4()], &default_redirect()).unwrap();
    assert_ne!(listener.local_addresses()[0].port(), port);

    let err = CallbackListener::bind(&[same_port_v4], &default_redirect()).unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "127.0.0.1:{port} (with [::1]:{port}, for localhost) is in use"
        )),
        "{err}"
    );
}

/// Runs `serving` on a thread of its own for 10 s at most, passing on what it hands over.
fn hand_overs(mut serving: Serving) -> mpsc::Receiver<Verdict> {
    let (sender, verdicts) = mpsc::channel();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(verdict) = serving.next_callback(deadline) {
                if sender.send(verdict).is_err() {
                    return;
                }
            }
        }
    });
    verdicts
}

#[test]
fn only_callbacks_are_handed_over_each_with_the_verdict_of_its_page() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let verdicts = hand_overs(listener.serve(STATE).unwrap());
    let next = || verdicts.recv_timeout(Duration::from_secs(5)).unwrap();

    let (status, _) = get(address, &format!("/favicon.ico?code=x&state={STATE}"));
    assert!(status.contains("404"), "{status}");
    // Nothing was handed over for it: the next verdict is the next callback's.
    let (status, _) = get(address, "/callback?code=evil&state=forged");
    assert!(status.contains("400"), "{status}");
    let verdict = next();
    assert!(matches!(verdict, Verdict::Refused(_)), "{verdict:?}");

    let (status, _) = get(address, &format!("/callback?code=real&state={STATE}"));
    assert!(status.contains("200"), "{status}");
    match next() {
        Verdict::Code(code) => assert_eq!(code.expose(), "real"),
        other => panic!("expected the code, got {other:?}"),
    }
}

#[test]
fn html_is_escaped() {
    assert_eq!(
        html_escape(r#"<a href="x">'&'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
}

#[test]
fn request_lines_are_parsed_strictly() {
    assert_eq!(
        parse_request_line("GET /callback?code=1 HTTP/1.1\r\nHost: x\r\n\r\n"),
        Some(("GET", "/callback?code=1"))
    );
    assert_eq!(
        parse_request_line("GET http://evil/callback HTTP/1.1\r\n\r\n"),
        None
    );
    assert_eq!(parse_request_line("GET /a b HTTP/1.1\r\n\r\n"), None);
    assert_eq!(parse_request_line("garbage\r\n\r\n"), None);
}

#[test]
fn the_real_callback_gets_through_while_many_idle_connections_wait() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let verdicts = hand_overs(listener.serve(STATE).unwrap());
    // Three times the connection limit, connected and silent: each would hold a slot for its
    // whole read time (5 s).
    let idle: Vec<TcpStream> = (0..3 * MAX_CONNECTIONS_IN_FLIGHT)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    // Let the accept loop take them all in.
    std::thread::sleep(WAIT_SLICE * 4);
    let (status, _) = get(address, &format!("/callback?code=real&state={STATE}"));
    assert!(status.contains("200"), "{status}");
    match verdicts.recv_timeout(Duration::from_secs(5)).unwrap() {
        Verdict::Code(code) => assert_eq!(code.expose(), "real"),
        other => panic!("expected the code, got {other:?}"),
    }
    drop(idle);
}
