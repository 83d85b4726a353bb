//! The device page over real HTTP on loopback: what it shows, to whom (its path and Host only),
//! until when; and the browser sent to the provider's complete link instead.

use super::*;
use std::io::{Read, Write};
use std::net::TcpStream;

const URI: &str = "https://idp.example/device";
const CODE: &str = "WDJB-MJHT";

/// A GET of `path` at `address` with this Host header: the status line and the body.
fn get(address: &str, path: &str, host: &str) -> std::io::Result<(String, String)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    Ok((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

/// The page's address split into `host:port` and path.
fn split(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let at = rest.find('/').unwrap();
    (rest[..at].to_string(), rest[at..].to_string())
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(120)
}

#[test]
fn without_a_complete_uri_a_local_page_shows_the_code_its_qr_and_the_link() {
    let page = show_in_browser(
        URI,
        CODE,
        None,
        soon(),
        &BrowserChoice::Skip,
        &crate::presence::callers::ci(),
    )
    .unwrap();
    assert!(!page.opened(), "--skip-open-browser starts nothing");
    let url = page.url().unwrap().to_string();
    let (address, path) = split(&url);
    assert!(address.starts_with("127.0.0.1:"), "{url}");
    // 16 random bytes, base64url: 22 characters after /device/.
    assert_eq!(path.len(), "/device/".len() + 22, "{path}");
    let (status, body) = get(&address, &path, &address).unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        body.contains(&format!("<code id=\"user-code\">{CODE}</code>")),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "<a id=\"verification-uri\" href=\"{URI}\">{URI}</a>"
        )),
        "{body}"
    );
    assert!(
        body.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{body}"
    );
    assert!(!body.contains("<?xml"), "{body}");
    assert!(body.contains("The code expires in 1 minute") || body.contains("2 minutes"));
    // Served again (a reload), until the guard goes.
    assert_eq!(get(&address, &path, &address).unwrap().0, "HTTP/1.1 200 OK");
    drop(page);
    assert!(
        get(&address, &path, &address).is_err(),
        "the page ends with its guard"
    );
}

#[test]
fn another_path_or_host_gets_nothing() {
    let page = show_in_browser(
        URI,
        CODE,
        None,
        soon(),
        &BrowserChoice::Skip,
        &crate::presence::callers::ci(),
    )
    .unwrap();
    let (address, path) = split(page.url().unwrap());
    for (path, host) in [
        ("/device/", address.as_str()),
        ("/", address.as_str()),
        (&path[..path.len() - 1], address.as_str()),
        (path.as_str(), "attacker.example"),
        (path.as_str(), "localhost"),
    ] {
        let (status, body) = get(&address, path, host).unwrap();
        assert_eq!(status, "HTTP/1.1 404 Not Found", "{path} {host}");
        assert!(!body.contains(CODE), "{body}");
    }
}

#[test]
fn the_page_ends_at_the_deadline() {
    let deadline = Instant::now() + Duration::from_millis(300);
    let page = show_in_browser(
        URI,
        CODE,
        None,
        deadline,
        &BrowserChoice::Skip,
        &crate::presence::callers::ci(),
    )
    .unwrap();
    let (address, path) = split(page.url().unwrap());
    std::thread::sleep(Duration::from_millis(600));
    assert!(get(&address, &path, &address).is_err());
    drop(page);
}

#[test]
fn with_a_complete_uri_the_browser_goes_there_and_nothing_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let opened = dir.path().join("opened");
    let record = BrowserChoice::Command(vec![
        "sh".into(),
        "-c".into(),
        format!("printf '%s\\n' \"$0\" > '{}'", opened.display()),
    ]);
    let complete = format!("{URI}?user_code={CODE}");
    let page = show_in_browser(
        URI,
        CODE,
        Some(&complete),
        soon(),
        &record,
        &crate::presence::callers::ci(),
    )
    .unwrap();
    assert!(page.opened());
    assert_eq!(page.url(), None);
    let started = Instant::now();
    while !opened.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap(),
        format!("{complete}\n")
    );
}

#[test]
fn the_providers_text_is_escaped_and_only_a_web_address_is_a_link() {
    let html = page_html(
        "javascript:alert(1)",
        "<script>x</script>",
        Duration::from_secs(300),
    );
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"), "{html}");
    assert!(!html.contains("href=\"javascript:"), "{html}");
    assert!(
        html.contains("<span id=\"verification-uri\">javascript:alert(1)</span>"),
        "{html}"
    );
    assert!(html.contains("The code expires in 5 minutes."), "{html}");
}
