//! The wait with real sources: a listener on loopback that tests send GET requests to, and
//! paste sources fed from a `Cursor` or a silent pipe.

use super::*;
use crate::error::exit_code_of;
use crate::login::callback::AuthorizationResponse;
use crate::login::listener::tests::{
    default_redirect, get, ip_redirect, ipv6_available, localhost_v4,
};
use std::io::{self, Cursor, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream};
use std::thread;

const STATE: &str = "expected-state-1234";

fn start(
    listener: CallbackListener,
    timeout: Duration,
    paste: Option<PasteSource>,
) -> thread::JoinHandle<anyhow::Result<AuthorizationResponse>> {
    let deadline = Instant::now() + timeout;
    thread::spawn(move || for_code(listener, paste, STATE, deadline))
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

fn source(text: &str) -> PasteSource {
    PasteSource::from_reader(Cursor::new(text.to_string()))
}

// The browser's callback to the listener, and lines pasted while it waits.

#[test]
fn forged_callback_is_refused_then_the_real_one_returns_the_code() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);

    let (status, page) = get(address, "/callback?code=evil&state=forged");
    assert!(status.contains("400"), "{status}");
    assert!(page.contains("refused"), "{page}");
    let (status, _) = get(address, "/callback?code=evil");
    assert!(status.contains("400"), "{status}");

    let (status, page) = get(address, &format!("/callback?code=the%2Fcode&state={STATE}"));
    assert!(status.contains("200"), "{status}");
    assert!(page.contains("Logged in. You may close this tab and return to your terminal."));
    assert!(page.contains("Content-Security-Policy: default-src 'none'"));

    let response = waiting.join().unwrap().unwrap();
    assert_eq!(response.code.expose(), "the/code");
}

#[test]
fn provider_error_ends_the_wait_and_is_shown_escaped() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);

    let (_, page) = get(
        address,
        &format!(
            "/callback?error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E&state={STATE}"
        ),
    );
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(!page.contains("<script>"), "{page}");

    let err = waiting.join().unwrap().unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    let message = err.to_string();
    assert!(
        message.starts_with(
            "the identity provider refused the login: access_denied (<script>alert(1)</script>); "
        ),
        "{message}"
    );
    assert!(message.contains("kubecred login"), "{message}");
}

#[test]
fn provider_error_with_a_wrong_state_is_refused_and_the_wait_goes_on() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);

    let (status, _) = get(address, "/callback?error=access_denied&state=forged");
    assert!(status.contains("400"), "{status}");
    let (status, _) = get(address, "/callback?error=access_denied");
    assert!(status.contains("400"), "{status}");
    get(address, &format!("/callback?code=real&state={STATE}"));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "real");
}

#[test]
fn other_paths_and_methods_get_404_and_do_not_end_the_wait() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);

    let (status, _) = get(address, "/favicon.ico");
    assert!(status.contains("404"), "{status}");
    let (status, _) = get(address, &format!("/other?code=x&state={STATE}"));
    assert!(status.contains("404"), "{status}");
    let mut post = TcpStream::connect(address).unwrap();
    write!(
        post,
        "POST /callback?code=x&state={STATE} HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    post.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");

    get(address, &format!("/callback?code=real&state={STATE}"));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "real");
}

#[test]
fn a_silent_connection_does_not_delay_the_callback() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);

    let _idle = TcpStream::connect(address).unwrap();
    let mut partial = TcpStream::connect(address).unwrap();
    partial.write_all(b"GET /callback?code=half").unwrap();
    let started = Instant::now();
    get(address, &format!("/callback?code=real&state={STATE}"));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "real");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn the_wait_ends_at_the_deadline_and_the_sockets_close() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let redirect = listener.redirect_uri().to_string();
    let started = Instant::now();
    let err = for_code(
        listener,
        None,
        STATE,
        Instant::now() + Duration::from_millis(300),
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(exit_code_of(&err), Exit::Login);
    // Nothing came to the callback: the message says where the browser never came back to,
    // and what a provider that refused the redirect URI looks like.
    assert_eq!(
        err.to_string(),
        format!(
            "no login completed within 1s (--auth-timeout): the browser never came back to {redirect}; \
             if its tab shows the provider's error about the redirect URI, register that address for the client \
             (or pass --redirect-url with one that is), else run `kubecred login` to try again, pass a longer \
             --auth-timeout, or use --grant-type device-code if the browser cannot reach this machine"
        )
    );
    assert_eq!(
        TcpStream::connect(address).unwrap_err().kind(),
        io::ErrorKind::ConnectionRefused
    );
}

#[test]
fn a_browser_that_came_back_without_this_logins_callback_times_out_without_the_redirect_hint() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_millis(800), None);
    get(address, "/callback?code=evil&state=forged");
    let err = waiting.join().unwrap().unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("no login completed within 1s (--auth-timeout); run `kubecred login`"),
        "{message}"
    );
    assert!(!message.contains("never came back"), "{message}");
}

#[test]
fn the_sockets_close_once_the_code_arrived() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let waiting = start(listener, Duration::from_secs(10), None);
    get(address, &format!("/callback?code=real&state={STATE}"));
    waiting.join().unwrap().unwrap();
    assert!(TcpStream::connect(address).is_err());
}

#[test]
fn a_localhost_redirect_is_served_on_both_families() {
    let listener = CallbackListener::bind(&[localhost_v4()], &default_redirect()).unwrap();
    let addresses = listener.local_addresses();
    let port = addresses[0].port();
    if !ipv6_available() {
        crate::log::notice(format_args!(
            "skipped the [::1] part: IPv6 loopback unavailable"
        ));
        assert_eq!(addresses.len(), 1);
        return;
    }
    assert_eq!(addresses.len(), 2, "{addresses:?}");
    assert!(addresses.iter().all(|address| address.port() == port));
    let waiting = start(listener, Duration::from_secs(10), None);
    let via_v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port);
    let (status, _) = get(via_v6, "/favicon.ico");
    assert!(status.contains("404"), "{status}");
    get(via_v6, &format!("/callback?code=over-v6&state={STATE}"));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "over-v6");
}

#[test]
fn a_pasted_redirect_url_or_bare_code_completes_the_wait() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let pasted = format!(
        "\nhttp://localhost:8000/callback?code=wrong&state=forged\nhttp://localhost:8000/callback?code=pasted%2B1&state={STATE}\n"
    );
    let paste = PasteSource::from_reader(Cursor::new(pasted));
    let waiting = start(listener, Duration::from_secs(10), Some(paste));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "pasted+1");

    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let paste = PasteSource::from_reader(Cursor::new("  bare-code-42  \n"));
    let waiting = start(listener, Duration::from_secs(10), Some(paste));
    assert_eq!(
        waiting.join().unwrap().unwrap().code.expose(),
        "bare-code-42"
    );
}

#[test]
fn a_pasted_url_without_state_is_refused_and_closed_stdin_leaves_the_browser() {
    let listener = CallbackListener::bind(&[localhost_v4()], &ip_redirect()).unwrap();
    let address = listener.local_addresses()[0];
    let paste = PasteSource::from_reader(Cursor::new("http://localhost/callback?code=nostate\n"));
    let waiting = start(listener, Duration::from_secs(10), Some(paste));
    thread::sleep(Duration::from_millis(200));
    get(address, &format!("/callback?code=browser&state={STATE}"));
    assert_eq!(waiting.join().unwrap().unwrap().code.expose(), "browser");
}

// --grant-type authcode-keyboard: pasted lines only, asked for one by one.

#[test]
fn a_bare_code_is_the_code() {
    let response = read_code(source("  4/0AbC-d_e.f~g  \n"), STATE, soon()).unwrap();
    assert_eq!(response.code.expose(), "4/0AbC-d_e.f~g");
}

#[test]
fn a_full_redirect_url_gives_its_code() {
    let url = format!("http://localhost:8000/callback?state={STATE}&code=c%3D1\n");
    assert_eq!(
        read_code(source(&url), STATE, soon())
            .unwrap()
            .code
            .expose(),
        "c=1"
    );
    // authcode-keyboard: a URL without state is fine, its code is used.
    let url = "https://idp.example/oob?code=shown\n";
    assert_eq!(
        read_code(source(url), STATE, soon()).unwrap().code.expose(),
        "shown"
    );
}

#[test]
fn a_forged_url_is_refused_and_asked_for_again() {
    let text = format!(
        "\nhttp://localhost/callback?code=evil&state=other\nnot a code\nhttp://localhost/callback?code=good&state={STATE}\n"
    );
    assert_eq!(
        read_code(source(&text), STATE, soon())
            .unwrap()
            .code
            .expose(),
        "good"
    );
}

#[test]
fn a_pasted_provider_error_ends_the_login() {
    let text = format!("http://localhost/callback?error=access_denied&state={STATE}\n");
    let err = read_code(source(&text), STATE, soon()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(
        err.to_string()
            .contains("refused the login: access_denied;"),
        "{err}"
    );
}

#[test]
fn end_of_input_and_deadline_end_the_wait() {
    let err = read_code(source(""), STATE, soon()).unwrap_err();
    assert!(err.to_string().starts_with("stdin closed before"), "{err}");

    let (reader, _writer) = io::pipe().unwrap();
    let silent = PasteSource::from_reader(io::BufReader::new(reader));
    let started = Instant::now();
    let err = read_code(silent, STATE, Instant::now() + Duration::from_millis(200)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(
        err.to_string()
            .starts_with("no login code was pasted within 1s"),
        "{err}"
    );
}

#[test]
fn no_source_is_refused() {
    let err = read_code(None, STATE, soon()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(
        err.to_string().contains("not an interactive terminal"),
        "{err}"
    );
}
