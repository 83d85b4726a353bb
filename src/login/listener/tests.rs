//! The listener on its own: binding, the pages it answers, what it hands over. The wait for a
//! code through a real listener is tested in `wait/tests.rs`, which uses the helpers here.

use super::page::parse_request_line;
use super::*;
use crate::config::CallbackTls;
use crate::error::exit_code_of;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::mpsc;

const STATE: &str = "expected-state-1234";

pub(crate) fn localhost_v4() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

pub(crate) fn ip_redirect() -> RedirectUri {
    RedirectUri::parse("http://127.0.0.1/callback").unwrap()
}

/// The redirect URI kubecred uses when the user gives none (`http://localhost/callback`).
pub(crate) fn default_redirect() -> RedirectUri {
    RedirectUri::parse(crate::config::DEFAULT_REDIRECT_URL).unwrap()
}

pub(crate) fn ipv6_available() -> bool {
    TcpListener::bind("[::1]:0").is_ok()
}

/// Sends one GET and returns (status line, whole answer).
pub(crate) fn get(address: SocketAddr, target: &str) -> (String, String) {
    get_on(TcpStream::connect(address).unwrap(), target)
}

/// One GET on a connection (plain or TLS): (status line, whole answer).
fn get_on(mut stream: impl Read + Write, target: &str) -> (String, String) {
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
        listener.redirect_uri().as_str(),
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
fn the_redirect_uri_is_sent_as_written_with_the_bound_port_where_it_names_none() {
    // A port written in it stays, wherever the listener is (the config listens there unless
    // --listen-address says otherwise: a port forward's other end).
    let user = RedirectUri::parse("http://127.0.0.1:9999/oidc/done").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &user).unwrap();
    assert_eq!(
        listener.redirect_uri().as_str(),
        "http://127.0.0.1:9999/oidc/done"
    );

    let listener = CallbackListener::bind(&[localhost_v4()], &default_redirect()).unwrap();
    let port = listener.local_addresses()[0].port();
    assert_eq!(
        listener.redirect_uri().as_str(),
        format!("http://localhost:{port}/callback")
    );
    // kubelogin's and MSAL's: no path, and none is added.
    let bare = RedirectUri::parse("http://localhost").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &bare).unwrap();
    let port = listener.local_addresses()[0].port();
    assert_eq!(
        listener.redirect_uri().as_str(),
        format!("http://localhost:{port}")
    );
}

#[test]
fn a_taken_port_the_redirect_uri_names_fails_at_once_naming_it() {
    let other_program = TcpListener::bind(localhost_v4()).unwrap();
    let port = other_program.local_addr().unwrap().port();
    let named = RedirectUri::parse(&format!("http://127.0.0.1:{port}/cb")).unwrap();
    let at_port = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let err = CallbackListener::bind(&[at_port], &named).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(
        err.to_string().starts_with(&format!(
            "cannot listen for the login callback on port {port}, which the redirect URI http://127.0.0.1:{port}/cb names ("
        )),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("leave the port out of --redirect-url"),
        "{err}"
    );
}

#[test]
fn an_ip_redirect_pins_the_address_it_names() {
    // The configured addresses are 127.0.0.1; the redirect says [::1]: listen there.
    if !ipv6_available() {
        crate::log::notice(format_args!("skipped: IPv6 loopback unavailable"));
        return;
    }
    let user = RedirectUri::parse("http://[::1]/callback").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &user).unwrap();
    let addresses = listener.local_addresses();
    assert_eq!(addresses.len(), 1);
    assert_eq!(addresses[0].ip(), IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_eq!(
        listener.redirect_uri().as_str(),
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
            if let Some(verdict) = serving.next_callback(deadline)
                && sender.send(verdict).is_err()
            {
                return;
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
        Verdict::Code(response) => assert_eq!(response.code.expose(), "real"),
        other => panic!("expected the code, got {other:?}"),
    }
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
        Verdict::Code(response) => assert_eq!(response.code.expose(), "real"),
        other => panic!("expected the code, got {other:?}"),
    }
    drop(idle);
}

/// A self-signed certificate for localhost, 127.0.0.1 and ::1 (valid until 2126) and its key,
/// made once with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes
/// -days 36500 -addext subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1`.
const CALLBACK_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBxDCCAWqgAwIBAgIUfjryrl57KpCah13EQKlyFqphQ3kwCgYIKoZIzj0EAwIw
ITEfMB0GA1UEAwwWa3ViZWNyZWQgdGVzdCBjYWxsYmFjazAgFw0yNjExMjUxNDQw
MjhaGA8yMTI2MTEwMTE0NDAyOFowITEfMB0GA1UEAwwWa3ViZWNyZWQgdGVzdCBj
YWxsYmFjazBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABC+cJiUloxUy9KXNJIWK
Ch1RSFHUN3LMf0wDVoQkc9QLUvurh1BiZYUmIaoSOz0j4a2SSEFeiQDnzy9XB2Kl
pL+jfjB8MB0GA1UdDgQWBBThkeUxTuAojl026eKomuq9czSkVTAfBgNVHSMEGDAW
gBThkeUxTuAojl026eKomuq9czSkVTAsBgNVHREEJTAjgglsb2NhbGhvc3SHBH8A
AAGHEAAAAAAAAAAAAAAAAAAAAAEwDAYDVR0TAQH/BAIwADAKBggqhkjOPQQDAgNI
ADBFAiEAwci84ozXngG7dxvD1HAW90KS8vBrsShN2++f7a+rqH8CIE/UiiYGt/dJ
XaNSVUpZsDXTKmu3AfxTSKLsH8XVP0o0
-----END CERTIFICATE-----
";
const CALLBACK_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoLQoodq6mr3ERloi
FXM6uluGz2rVNx0DYMHeY9Wd75ahRANCAAQvnCYlJaMVMvSlzSSFigodUUhR1Ddy
zH9MA1aEJHPUC1L7q4dQYmWFJiGqEjs9I+GtkkhBXokA588vVwdipaS/
-----END PRIVATE KEY-----
";
/// Another P-256 key: not the certificate's.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjcwzKVvZ0HWXhURr
M2FwZ5ojC+DAgces0QwfBfacg4OhRANCAARwUjQ0B4907tViNnQPbxRsZhkPnoVc
ioZonpYNLZlE/5FDR5j6NmLIsa8aFnqS3yvTqsq3jS8hBTi1hHhIxweV
-----END PRIVATE KEY-----
";

fn callback_tls(dir: &std::path::Path, cert: &str, key: &str) -> CallbackTls {
    let files = CallbackTls {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, cert).unwrap();
    std::fs::write(&files.key, key).unwrap();
    files
}

/// One GET over TLS, trusting only [`CALLBACK_CERT`]: (status line, whole answer).
fn tls_get(address: SocketAddr, target: &str) -> (String, String) {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(CALLBACK_CERT.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    get_on(
        rustls::StreamOwned::new(connection, TcpStream::connect(address).unwrap()),
        target,
    )
}

#[test]
fn an_https_callback_is_served_over_tls_and_plain_http_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = tls_config(&callback_tls(dir.path(), CALLBACK_CERT, CALLBACK_KEY)).unwrap();
    let redirect = RedirectUri::parse("https://localhost/callback").unwrap();
    let listener = CallbackListener::bind(&[localhost_v4()], &redirect)
        .unwrap()
        .with_tls(config);
    let address = listener.local_addresses()[0];
    assert_eq!(
        listener.redirect_uri().as_str(),
        format!("https://localhost:{}/callback", address.port())
    );
    let verdicts = hand_overs(listener.serve(STATE).unwrap());
    // A plain-http request is no TLS handshake: no page, no verdict.
    let mut plain = TcpStream::connect(address).unwrap();
    // The listener may close it before the request is written (it is no TLS handshake): a
    // failed write is as good an answer as an empty one.
    let _ = write!(
        plain,
        "GET /callback?code=plain&state={STATE} HTTP/1.1\r\n\r\n"
    );
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("Logged in"));

    let (status, answer) = tls_get(address, &format!("/callback?code=real&state={STATE}"));
    assert!(status.contains("200"), "{status}");
    assert!(answer.contains("Logged in"), "{answer}");
    match verdicts.recv_timeout(Duration::from_secs(5)).unwrap() {
        Verdict::Code(response) => assert_eq!(response.code.expose(), "real"),
        other => panic!("expected the code, got {other:?}"),
    }
}

#[test]
fn an_unusable_certificate_or_key_is_an_input_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for (cert, key, expected) in [
        (
            "not a certificate",
            CALLBACK_KEY,
            "holds no PEM certificate",
        ),
        (CALLBACK_CERT, "not a key", "holds no PEM private key"),
        (CALLBACK_CERT, OTHER_KEY, "cannot serve TLS"),
    ] {
        let err = tls_config(&callback_tls(dir.path(), cert, key)).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        let message = err.to_string();
        assert!(message.contains(expected), "{message}");
        assert!(
            message.contains(&dir.path().display().to_string()),
            "{message}"
        );
    }
    let missing = CallbackTls {
        cert: dir.path().join("missing.pem"),
        key: dir.path().join("key.pem"),
    };
    let message = tls_config(&missing).unwrap_err().to_string();
    assert!(
        message.starts_with("reading --local-server-cert"),
        "{message}"
    );
}
