//! Tests of the HTTP client: trust, redirects, status wording, whole-request timeouts, body caps and retries.

use super::request::MAX_TOKEN_BODY;
use super::test_server::{Answer, TestServer};
use super::*;
use crate::cli::{Cli, Command};
use crate::config::{Config, Environment};
use crate::error::{exit_code_of, one_line};
use crate::exec_credential::ExecInfo;
use clap::Parser;
use std::path::Path;

/// A resolved config for tests, with the given issuer and cache directory.
pub fn test_config(issuer: &str, cache_dir: &Path) -> Config {
    let argv = [
        "kubecred".to_string(),
        "get-token".to_string(),
        format!("--issuer-url={issuer}"),
        "--client-id=kubectl".to_string(),
        format!("--cache-dir={}", cache_dir.display()),
    ];
    let args = match Cli::try_parse_from(argv).unwrap().command {
        Command::GetToken(args) => args,
        _ => unreachable!(),
    };
    Config::resolve(&args, &Environment::default(), ExecInfo::absent()).unwrap()
}

fn message(err: &anyhow::Error) -> String {
    one_line(err)
}

#[test]
fn a_garbage_ca_bundle_is_a_clear_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config("https://idp.example", dir.path());
    config.http.tls.extra_ca_pems = vec![b"this is not a certificate".to_vec()];
    let err = client(&config.http, Duration::ZERO).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    let text = message(&err);
    assert!(
        text.contains("bundle #1") && text.contains("no PEM certificate"),
        "{text}"
    );

    // A BEGIN CERTIFICATE block with broken contents.
    config.http.tls.extra_ca_pems =
        vec![b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_vec()];
    let text = message(&client(&config.http, Duration::ZERO).unwrap_err());
    assert!(text.contains("is not valid PEM"), "{text}");
}

#[test]
fn a_valid_ca_bundle_with_several_certificates_is_accepted() {
    // Two copies of one self-signed certificate (generated once with openssl).
    let pem = format!("{TEST_CA_PEM}{TEST_CA_PEM}");
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config("https://idp.example", dir.path());
    config.http.tls.extra_ca_pems = vec![pem.into_bytes()];
    assert_eq!(
        trust::parse_ca_bundle(&config.http.tls.extra_ca_pems[0], 1)
            .unwrap()
            .len(),
        2
    );
    client(&config.http, Duration::ZERO).unwrap();
}

#[test]
fn redirects_are_not_followed() {
    let server = TestServer::start();
    server.answer(
        "/start",
        Answer::with(302, "").header(
            "Location",
            &format!("{}/elsewhere?code=secret", server.base),
        ),
    );
    server.answer("/elsewhere", Answer::json("{}"));
    let dir = tempfile::tempdir().unwrap();
    let http = client(&test_config(&server.base, dir.path()).http, Duration::ZERO).unwrap();
    let url = Url::parse(&format!("{}/start", server.base)).unwrap();
    let err = get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err();
    let text = message(&err);
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(
        text.contains("HTTP 302") && text.contains("does not follow redirects"),
        "{text}"
    );
    assert!(
        text.contains("/elsewhere") && !text.contains("secret"),
        "{text}"
    );
    assert_eq!(server.hits("/elsewhere"), 0);
}

#[test]
fn http_errors_carry_the_oauth_error_fields() {
    let server = TestServer::start();
    server.answer(
        "/token",
        Answer::with(
            400,
            r#"{"error":"invalid_grant","error_description":"refresh token\nexpired"}"#,
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let http = client(&test_config(&server.base, dir.path()).http, Duration::ZERO).unwrap();
    let url = Url::parse(&format!("{}/token", server.base)).unwrap();
    let text = message(&get_json::<serde_json::Value>(&http, &url, "the thing").unwrap_err());
    assert!(
        text.contains("HTTP 400 Bad Request: invalid_grant (refresh token expired)"),
        "{text}"
    );
}

#[test]
fn connection_refused_and_timeouts_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config("https://idp.example", dir.path());
    config.http.timeout = Duration::from_millis(500);
    let http = client(&config.http, Duration::ZERO).unwrap();

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/x", closed.local_addr().unwrap())).unwrap();
    drop(closed);
    let err = get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err();
    let text = message(&err);
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(text.contains("connection refused"), "{text}");
    assert!(!text.contains('\n'));

    // Accepts the connection, never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/x", silent.local_addr().unwrap())).unwrap();
    let text = message(&get_json::<serde_json::Value>(&http, &url, "the document").unwrap_err());
    assert!(
        text.contains("timed out") && text.contains("--http-timeout"),
        "{text}"
    );
}

/// A self-signed certificate (CN=kubecred test CA), only parsed, never used to connect.
const TEST_CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBizCCATGgAwIBAgIUWudEa+jTiwNXmpU6I0Gvk4V9i1swCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQa3ViZWNyZWQgdGVzdCBDQTAeFw0yNjExMjEyMTQ4MDJaFw0z
NjExMTgyMTQ4MDJaMBsxGTAXBgNVBAMMEGt1YmVjcmVkIHRlc3QgQ0EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASZKTy9DaTZNisC4TqyYQ7CQoA9jCQ5XOP2hPyS
puJRvAxRh8+OWvkccTKted405/20BWlTf+m12sMQAyiBRbjKo1MwUTAdBgNVHQ4E
FgQUDpWjH5Rlp7WPJV3N+LgW8q65fnQwHwYDVR0jBBgwFoAUDpWjH5Rlp7WPJV3N
+LgW8q65fnQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAH8yM1
IjBL6xoGSxwRbap/QH/71kVDnplwXk8nGn3stwIhAII++gPodvnkZRQi+8O93Wge
Ga8bJ5XGFSUt0/jtdKfh
-----END CERTIFICATE-----
";

/// A client whose requests give up after `timeout`, with `retry_window` for retries.
fn quick_client(timeout: Duration, retry_window: Duration) -> Client {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config("https://idp.example", dir.path());
    config.http.timeout = timeout;
    client(&config.http, retry_window).unwrap()
}

fn url_of(server: &TestServer, path: &str) -> Url {
    Url::parse(&format!("{}{path}", server.base)).unwrap()
}

fn post(http: &Client, url: &Url, replay: Replay) -> Result<request::Answer, RequestFailure> {
    http.send(&Outgoing {
        method: reqwest::Method::POST,
        url,
        headers: HeaderMap::new(),
        body: b"grant_type=refresh_token&refresh_token=secret".to_vec(),
        what: "the test request",
        body_cap: MAX_TOKEN_BODY,
        replay,
        recipient: Recipient::Provider,
    })
}

#[test]
fn a_trickling_body_is_cut_off_at_the_timeout_as_a_whole() {
    // Headers at once, then one byte every 0.3 s: each read is quick, the whole never ends in
    // time. reqwest's blocking client applies its timeout per read and would wait ~30 s here.
    let server = TestServer::start();
    let mut answer = Answer::json(format!("{{\"padding\":\"{}\"}}", "x".repeat(100)));
    answer.trickle = Some(Duration::from_millis(300));
    server.answer("/slow", answer);
    let http = quick_client(Duration::from_secs(1), Duration::ZERO);
    let started = Instant::now();
    let err = get_json::<serde_json::Value>(&http, &url_of(&server, "/slow"), "the document")
        .unwrap_err();
    let waited = started.elapsed();
    let text = message(&err);
    assert!(
        text.contains("timed out") && text.contains("--http-timeout"),
        "{text}"
    );
    // Generous: only "not 30 s" matters, never a precise timing.
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
}

#[test]
fn a_huge_body_is_refused_at_the_cap_without_buffering_it() {
    let server = TestServer::start();
    // Content-Length announces it: refused before reading.
    let mut announced = Answer::json("");
    announced.huge = Some(1 << 30);
    server.answer("/huge", announced);
    let http = quick_client(Duration::from_secs(10), Duration::ZERO);
    let err = post(&http, &url_of(&server, "/huge"), Replay::Safe).unwrap_err();
    assert_eq!(
        err,
        RequestFailure::TooLarge {
            cap: MAX_TOKEN_BODY
        }
    );
    assert!(err.to_string().contains("limit of 1 MiB"), "{err}");

    // No Content-Length (a chunked body): reading stops at the cap.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0; 4096];
        let _ = stream.read(&mut buf);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let chunk = format!("10000\r\n{}\r\n", "y".repeat(0x10000));
        for _ in 0..(1 << 14) {
            if stream.write_all(chunk.as_bytes()).is_err() {
                return; // kubecred hung up at the cap.
            }
        }
    });
    let url = Url::parse(&format!("http://{address}/chunked")).unwrap();
    let err = post(&http, &url, Replay::Safe).unwrap_err();
    assert_eq!(
        err,
        RequestFailure::TooLarge {
            cap: MAX_TOKEN_BODY
        }
    );
}

#[test]
fn a_503_then_success_is_retried() {
    let server = TestServer::start();
    server.answer_in_turn(
        "/token",
        vec![Answer::with(503, "<html>down</html>"), Answer::json("{}")],
    );
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let answer = post(&http, &url_of(&server, "/token"), Replay::OnlyIfUnprocessed).unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(server.hits("/token"), 2);
}

#[test]
fn an_answer_that_stays_unavailable_names_the_number_of_attempts() {
    // docs/networks.md: "the final error names the HTTP status or the network failure and the number of
    // attempts" — an answer as much as a failure.
    let server = TestServer::start();
    server.answer("/doc", Answer::with(503, "<html>down</html>"));
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let text = message(
        &get_json::<serde_json::Value>(&http, &url_of(&server, "/doc"), "the document")
            .unwrap_err(),
    );
    assert!(
        text.contains("answered HTTP 503 Service Unavailable (after 4 attempts); "),
        "{text}"
    );
    assert_eq!(server.hits("/doc"), 4);
    // Answered at the first try: nothing to count.
    server.answer("/gone", Answer::with(404, ""));
    let text = message(
        &get_json::<serde_json::Value>(&http, &url_of(&server, "/gone"), "the document")
            .unwrap_err(),
    );
    assert!(!text.contains("attempt"), "{text}");
    // oauth2's calls word the last answer with the same count.
    let call = http.oauth("the test request", Replay::OnlyIfUnprocessed);
    let request = oauth2::http::Request::builder()
        .method("POST")
        .uri(url_of(&server, "/doc").as_str())
        .body(Vec::new())
        .unwrap();
    use oauth2::SyncHttpClient;
    call.call(request).unwrap();
    let last = call.last_answer().unwrap();
    assert_eq!(
        (last.described.as_str(), last.attempts),
        ("HTTP 503 Service Unavailable (after 4 attempts)", 4)
    );
}

#[test]
fn a_429_waits_for_its_retry_after_and_a_long_one_is_not_waited_for() {
    let server = TestServer::start();
    server.answer_in_turn(
        "/token",
        vec![
            Answer::with(429, "").header("Retry-After", "1"),
            Answer::json("{}"),
        ],
    );
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let started = Instant::now();
    let answer = post(&http, &url_of(&server, "/token"), Replay::OnlyIfUnprocessed).unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.hits("/token"), 2);

    // Asking for an hour: one request, the 429 handed back to be worded.
    server.answer("/busy", Answer::with(429, "").header("Retry-After", "3600"));
    let answer = post(&http, &url_of(&server, "/busy"), Replay::Safe).unwrap();
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(server.hits("/busy"), 1);
}

#[test]
fn permanent_answers_are_never_retried() {
    let server = TestServer::start();
    for (path, status) in [
        ("/grant", 400),
        ("/client", 401),
        ("/gone", 404),
        ("/ni", 501),
    ] {
        server.answer(path, Answer::with(status, r#"{"error":"invalid_grant"}"#));
        let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
        let answer = post(&http, &url_of(&server, path), Replay::Safe).unwrap();
        assert_eq!(answer.status.as_u16(), status);
        assert_eq!(server.hits(path), 1, "{path}");
    }
}

#[test]
fn one_time_requests_are_not_resent_when_the_server_may_have_processed_them() {
    let server = TestServer::start();
    server.answer_in_turn("/token", vec![Answer::with(500, ""), Answer::json("{}")]);
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let answer = post(&http, &url_of(&server, "/token"), Replay::OnlyIfUnprocessed).unwrap();
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(server.hits("/token"), 1);
    // The same answer to a request that may be repeated: retried.
    let answer = post(&http, &url_of(&server, "/token"), Replay::Safe).unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(server.hits("/token"), 2);

    // A timeout after sending: the refresh token may be spent; not resent.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/token", silent.local_addr().unwrap())).unwrap();
    let quick = quick_client(Duration::from_millis(300), Duration::from_secs(60));
    let err = post(&quick, &url, Replay::OnlyIfUnprocessed).unwrap_err();
    assert_eq!(
        err,
        RequestFailure::Network {
            failure: NetworkFailure::Timeout,
            attempts: 1,
            through: None,
        }
    );
}

/// A loopback server that reads each connection's request, writes `reply` (raw bytes, perhaps
/// nothing) and closes it; `scheme://address/token`, and how many connections it took.
fn raw_server(
    scheme: &str,
    reply: &'static [u8],
) -> (Url, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!(
        "{scheme}://{}/token",
        listener.local_addr().unwrap()
    ))
    .unwrap();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&connections);
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(reply);
        }
    });
    (url, connections)
}

#[test]
fn a_connection_closed_before_the_answer_is_a_dropped_connection() {
    let (url, _) = raw_server("http", b"");
    let http = quick_client(Duration::from_secs(5), Duration::ZERO);
    let err = post(&http, &url, Replay::Safe).unwrap_err();
    let RequestFailure::Network { failure, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(failure, NetworkFailure::Dropped { .. }),
        "{failure:?}"
    );
    assert!(
        err.to_string()
            .ends_with("; a proxy or firewall may be in the way"),
        "{err}"
    );
}

#[test]
fn a_name_that_does_not_resolve_and_a_refused_certificate_are_not_retried() {
    // The same answer a second later: retrying only delays the error (docs/networks.md, "When the
    // provider is slow, down or overloaded").
    for permanent in [
        NetworkFailure::Dns,
        NetworkFailure::UntrustedCertificate,
        NetworkFailure::CertificateForAnotherName {
            detail: String::new(),
        },
        NetworkFailure::CertificateOutOfDate,
        NetworkFailure::Tls {
            detail: String::new(),
        },
    ] {
        assert!(!permanent.may_pass_later(), "{permanent:?}");
    }
    for transient in [
        NetworkFailure::Timeout,
        NetworkFailure::Refused,
        NetworkFailure::Dropped {
            detail: String::new(),
        },
    ] {
        assert!(transient.may_pass_later(), "{transient:?}");
    }

    // End to end: a server that answers a TLS handshake with plain HTTP is asked once.
    let (url, connections) = raw_server(
        "https",
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    );
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let err = post(&http, &url, Replay::Safe).unwrap_err();
    assert!(
        matches!(
            &err,
            RequestFailure::Network {
                failure: NetworkFailure::Tls { .. },
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains("attempts"), "{err}");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn refused_connections_are_retried_a_bounded_number_of_times_within_the_window() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/x", closed.local_addr().unwrap())).unwrap();
    drop(closed);
    let http = quick_client(Duration::from_secs(5), Duration::from_secs(60));
    let err = post(&http, &url, Replay::OnlyIfUnprocessed).unwrap_err();
    assert_eq!(
        err,
        RequestFailure::Network {
            failure: NetworkFailure::Refused,
            attempts: retry::MAX_RETRIES + 1,
            through: None,
        }
    );
    assert!(err.to_string().ends_with("(after 4 attempts)"), "{err}");
    // No window left (the lock timeout is spent): no retry.
    let http = quick_client(Duration::from_secs(5), Duration::ZERO);
    let err = post(&http, &url, Replay::Safe).unwrap_err();
    assert!(
        matches!(err, RequestFailure::Network { attempts: 1, .. }),
        "{err:?}"
    );
}

#[test]
fn outages_and_html_pages_are_worded_with_their_status() {
    let server = TestServer::start();
    server.answer(
        "/doc",
        Answer::with(503, "<html>\x1b[2Jmaintenance</html>").header("Content-Type", "text/html"),
    );
    server.answer(
        "/html",
        Answer::with(200, "<html>login</html>").header("Content-Type", "text/html"),
    );
    server.answer(
        "/oauth-error",
        Answer::with(400, "{\"error\":\"bad\\u001b[31m\\u0007\"}"),
    );
    let http = quick_client(Duration::from_secs(5), Duration::ZERO);
    let text = message(
        &get_json::<serde_json::Value>(&http, &url_of(&server, "/doc"), "the document")
            .unwrap_err(),
    );
    assert!(
        text.contains("HTTP 503 Service Unavailable") && text.contains("try again later"),
        "{text}"
    );
    assert!(
        !text.contains("maintenance"),
        "bodies are not echoed: {text}"
    );
    let text = message(
        &get_json::<serde_json::Value>(&http, &url_of(&server, "/html"), "the document")
            .unwrap_err(),
    );
    assert!(
        text.contains("HTTP 200 OK") && text.contains("not the JSON"),
        "{text}"
    );
    let text = message(
        &get_json::<serde_json::Value>(&http, &url_of(&server, "/oauth-error"), "the document")
            .unwrap_err(),
    );
    assert!(!text.contains(['\x1b', '\x07']), "{text:?}");
    assert!(text.contains("bad"), "{text}");
}

#[test]
fn a_connection_the_server_closed_while_idle_is_never_reused() {
    // Answers with keep-alive, then closes the connection while the client is idle (as Node
    // does after 5 s, during a login); the next request must go out on a fresh connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/token", listener.local_addr().unwrap())).unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
            std::thread::sleep(Duration::from_millis(100));
            drop(stream);
        }
    });
    let http = quick_client(Duration::from_secs(5), Duration::ZERO);
    post(&http, &url, Replay::OnlyIfUnprocessed).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let second = post(&http, &url, Replay::OnlyIfUnprocessed);
    assert!(second.is_ok(), "{second:?}");
}
