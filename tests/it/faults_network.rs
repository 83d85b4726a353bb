//! The fault suite, network side: a provider that is down, slow, trickling, overloaded (429,
//! 503), refusing for good (`invalid_grant`), or answering garbage (malformed JSON, an HTML page,
//! an empty or a huge body). Each failure must be one line on stderr with the right exit code,
//! nothing on stdout, and the cache entry — refresh token included — left as it was; each
//! transient fault that clears must be retried into a success.
//!
//! The faults come from a small provider of our own on loopback ([`FaultyProvider`]): a real
//! OpenID discovery document and a token endpoint answering client credentials and refresh
//! requests, whose next answers a test scripts. (The Node test provider cannot be made to
//! trickle a body or send a gigabyte; a proxy in front of it would have to terminate its TLS.)

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PROVIDER_EXIT: i32 = 3;

/// One scripted answer of the token endpoint.
#[derive(Clone)]
enum Fault {
    /// This status, headers and body.
    Answer(u16, Vec<(&'static str, String)>, String),
    /// Headers at once, then the body one byte every half second.
    Trickle,
    /// A chunked body of 1 GiB (no Content-Length to refuse it by).
    Huge,
}

#[derive(Default)]
struct Script {
    /// Answers for the next token requests, in order; then successes.
    next: Vec<Fault>,
    /// `grant_type` (and for refreshes the refresh token) of each token request.
    requests: Vec<String>,
    issued: u32,
}

/// A loopback OpenID Provider whose token endpoint misbehaves on demand.
struct FaultyProvider {
    issuer: String,
    script: Arc<Mutex<Script>>,
    /// Set to close the listening socket: the provider is then unreachable (refused).
    down: Arc<AtomicBool>,
}

impl FaultyProvider {
    fn start() -> FaultyProvider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let provider = FaultyProvider {
            issuer,
            script: Arc::new(Mutex::new(Script::default())),
            down: Arc::new(AtomicBool::new(false)),
        };
        provider.serve_on(listener);
        provider
    }

    fn serve_on(&self, listener: TcpListener) {
        listener.set_nonblocking(true).unwrap();
        let (script, down, base) = (
            Arc::clone(&self.script),
            Arc::clone(&self.down),
            self.issuer.clone(),
        );
        std::thread::spawn(move || {
            while !down.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (script, base) = (Arc::clone(&script), base.clone());
                        std::thread::spawn(move || serve(stream, &base, &script));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
            // The listener drops here: connections are refused from now on.
        });
    }

    /// Closes the port: nothing listens there any more.
    fn stop(&self) {
        self.down.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
    }

    /// Listens on the same port again (std sets SO_REUSEADDR).
    fn restart(&mut self) {
        let address = self.issuer.trim_start_matches("http://").to_string();
        self.down = Arc::new(AtomicBool::new(false));
        self.serve_on(TcpListener::bind(address).unwrap());
    }

    /// The next token requests get these answers, in order.
    fn then(&self, faults: Vec<Fault>) {
        self.script.lock().unwrap().next = faults;
    }

    fn token_requests(&self) -> Vec<String> {
        self.script.lock().unwrap().requests.clone()
    }

    fn args(&self) -> Vec<String> {
        vec![
            "get-token".into(),
            format!("--issuer-url={}", self.issuer),
            "--client-id=ci-bot".into(),
            "--client-secret=faulty-provider-secret".into(),
            "--grant-type=client-credentials".into(),
            "--http-timeout=2s".into(),
        ]
    }
}

fn serve(mut stream: TcpStream, base: &str, script: &Mutex<Script>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let fault = match path {
        "/.well-known/openid-configuration" => Fault::Answer(
            200,
            vec![("Content-Type", "application/json".into())],
            json!({
                "issuer": base,
                "token_endpoint": format!("{base}/token"),
                "jwks_uri": format!("{base}/jwks"),
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            })
            .to_string(),
        ),
        "/token" => {
            let form: Vec<(String, String)> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let field = |name: &str| {
                form.iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.clone())
                    .unwrap_or_default()
            };
            let mut script = script.lock().unwrap();
            let grant = field("grant_type");
            let record = match grant.as_str() {
                "refresh_token" => format!("refresh_token {}", field("refresh_token")),
                _ => grant,
            };
            script.requests.push(record);
            if script.next.is_empty() {
                script.issued += 1;
                let n = script.issued;
                Fault::Answer(
                    200,
                    vec![("Content-Type", "application/json".into())],
                    json!({
                        "access_token": format!("access-{n}"),
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "refresh_token": format!("refresh-{n}"),
                    })
                    .to_string(),
                )
            } else {
                script.next.remove(0)
            }
        }
        _ => Fault::Answer(404, vec![], String::new()),
    };
    let _ = answer(&mut stream, fault);
}

fn answer(stream: &mut TcpStream, fault: Fault) -> std::io::Result<()> {
    match fault {
        Fault::Answer(status, headers, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            stream.write_all(format!("{head}\r\n{body}").as_bytes())
        }
        Fault::Trickle => {
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\nConnection: close\r\n\r\n")?;
            for byte in format!("{{\"access_token\":\"{}\"}}", "t".repeat(180)).bytes() {
                stream.write_all(&[byte])?;
                std::thread::sleep(Duration::from_millis(500));
            }
            Ok(())
        }
        Fault::Huge => {
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")?;
            let chunk = format!("100000\r\n{}\r\n", " ".repeat(0x100000));
            for _ in 0..1024 {
                stream.write_all(chunk.as_bytes())?; // Fails once kubecred hangs up.
            }
            stream.write_all(b"0\r\n\r\n")
        }
    }
}

fn json_answer(status: u16, body: Value) -> Fault {
    Fault::Answer(
        status,
        vec![("Content-Type", "application/json".into())],
        body.to_string(),
    )
}

/// Gets a first token (cached with its refresh token `refresh-1`), then marks it expired, so
/// that the next run must go to the provider.
fn cached_and_expired(provider: &FaultyProvider, env: &TestEnv) -> Vec<Vec<u8>> {
    let run = env.kubecred_owned(&provider.args()).run().success();
    assert_eq!(run.token(), "access-1");
    expire_cached_tokens(&env.cache_dir());
    entry_bytes(&env.cache_dir())
}

/// A failed run: exit code, one error line containing `needle`, empty stdout, the entry as it
/// was; then, with the provider healthy again, the kept refresh token still works.
#[track_caller]
fn fails_and_keeps_the_entry(
    provider: &FaultyProvider,
    env: &TestEnv,
    entry: &[Vec<u8>],
    needle: &str,
) -> Run {
    let run = env
        .kubecred_owned(&provider.args())
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains(needle)
        .never_shows(&["faulty-provider-secret", "refresh-1"]);
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    provider.then(vec![]);
    let next = env.kubecred_owned(&provider.args()).run().success();
    assert!(next.token().starts_with("access-"));
    assert_eq!(
        provider.token_requests().last().map(String::as_str),
        Some("refresh_token refresh-1"),
        "the kept refresh token was used"
    );
    run
}

#[test]
fn an_unreachable_provider_still_serves_a_valid_cached_token_and_fails_cleanly_on_an_expired_one() {
    let mut provider = FaultyProvider::start();
    let env = TestEnv::new();
    let first = env.kubecred_owned(&provider.args()).run().success().token();
    provider.stop();
    let mut args = provider.args();
    args.push("-v".into());
    let cached = env.kubecred_owned(&args).run().success();
    assert_eq!(
        cached.token(),
        first,
        "a valid cached token needs no provider"
    );

    // Asked for more life than it has (but still valid), nothing listening: stale-if-error.
    let stale = env
        .kubecred_owned(&with_flag(&provider.args(), "--min-validity=2h"))
        .run()
        .success()
        .stderr_contains("connection refused")
        .stderr_contains("using the cached token, valid until ");
    assert_eq!(stale.token(), first);

    // Expired, and nothing listening: a few retries (each one -v line), then one clean line.
    expire_cached_tokens(&env.cache_dir());
    let entry = entry_bytes(&env.cache_dir());
    let run = env
        .kubecred_owned(&args)
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains("connection refused")
        .stderr_contains("(after 4 attempts)");
    let retries = run
        .stderr()
        .lines()
        .filter(|line| line.contains("; retry "))
        .count();
    assert_eq!(retries, 3, "{}", run.stderr());
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");

    // Back up: the kept refresh token works.
    provider.restart();
    provider.then(vec![]);
    env.kubecred_owned(&provider.args()).run().success();
    assert_eq!(
        provider.token_requests(),
        ["client_credentials", "refresh_token refresh-1"]
    );
}

#[test]
fn a_trickling_token_response_fails_at_the_http_timeout() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    let entry = cached_and_expired(&provider, &env);
    // A refresh spends a one-time credential: a timeout after sending is not retried.
    provider.then(vec![Fault::Trickle]);
    let started = std::time::Instant::now();
    fails_and_keeps_the_entry(&provider, &env, &entry, "timed out");
    // The trickle would take 100 s; only "far less" is asserted, never a precise time.
    assert!(started.elapsed() < Duration::from_secs(60));
    // The timed-out refresh was not resent: the provider may have spent its refresh token.
    assert_eq!(
        provider.token_requests(),
        [
            "client_credentials",
            "refresh_token refresh-1",
            "refresh_token refresh-1"
        ]
    );
}

#[test]
fn a_429_with_retry_after_is_waited_for_and_retried() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    cached_and_expired(&provider, &env);
    provider.then(vec![Fault::Answer(
        429,
        vec![("Retry-After", "1".into())],
        String::new(),
    )]);
    let mut args = provider.args();
    args.push("-v".into());
    let run = env.kubecred_owned(&args).run().success();
    assert_eq!(run.token(), "access-2");
    assert_eq!(
        provider.token_requests(),
        [
            "client_credentials",
            "refresh_token refresh-1",
            "refresh_token refresh-1"
        ]
    );
    let stderr = run.stderr();
    let retry_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("retry 1 of"))
        .collect();
    assert_eq!(retry_lines.len(), 1, "{}", run.stderr());
    assert!(retry_lines[0].contains("HTTP 429"), "{}", retry_lines[0]);
}

#[test]
fn an_injected_503_is_retried_into_a_success() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    cached_and_expired(&provider, &env);
    provider.then(vec![Fault::Answer(
        503,
        vec![("Content-Type", "text/html".into())],
        "<html>maintenance</html>".into(),
    )]);
    let run = env.kubecred_owned(&provider.args()).run().success();
    assert_eq!(run.token(), "access-2");
    assert_eq!(provider.token_requests().len(), 3);
}

#[test]
fn a_503_that_lasts_fails_naming_the_status_and_the_number_of_attempts() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    let entry = cached_and_expired(&provider, &env);
    let unavailable = Fault::Answer(503, vec![], String::new());
    provider.then(vec![unavailable; 4]);
    let run = fails_and_keeps_the_entry(
        &provider,
        &env,
        &entry,
        "answered HTTP 503 Service Unavailable (after 4 attempts)",
    );
    assert!(run.stderr().contains("try again later"), "{}", run.stderr());
    // The first token, four refreshes answered 503, and the successful one after.
    assert_eq!(provider.token_requests().len(), 6);
}

#[test]
fn a_tls_failure_is_not_retried() {
    // A server that answers the TLS handshake with plain HTTP: the next try would get the same,
    // so the one line comes at once, without "after N attempts".
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("https://{}", listener.local_addr().unwrap());
    let connections = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&connections);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            *counted.lock().unwrap() += 1;
            let mut buf = [0; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let env = TestEnv::new();
    let run = env
        .kubecred_owned(&[
            "get-token".into(),
            format!("--issuer-url={issuer}"),
            "--client-id=ci-bot".into(),
            "--grant-type=client-credentials".into(),
        ])
        .env("KUBECRED_CLIENT_SECRET", "faulty-provider-secret")
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains("the server's TLS certificate was rejected");
    assert!(!run.stderr().contains("attempts"), "{}", run.stderr());
    assert_eq!(*connections.lock().unwrap(), 1);
}

#[test]
fn permanent_refusals_are_never_retried() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    let entry = cached_and_expired(&provider, &env);
    // invalid_client on the refresh: one request, and a clean failure.
    provider.then(vec![json_answer(
        401,
        json!({"error": "invalid_client", "error_description": "bad \u{1b}[31msecret\u{7}"}),
    )]);
    let run = fails_and_keeps_the_entry(&provider, &env, &entry, "invalid_client");
    assert!(
        !run.stderr().contains(['\u{1b}', '\u{7}']),
        "control characters from the provider reach the terminal: {:?}",
        run.stderr()
    );
    let requests = provider.token_requests();
    assert_eq!(
        requests[1..],
        ["refresh_token refresh-1", "refresh_token refresh-1"],
        "one refused refresh, then the successful one"
    );

    // invalid_grant: the refresh token is dead, the entry dropped; client credentials then
    // fail with invalid_request. Each is sent once.
    expire_cached_tokens(&env.cache_dir());
    let before = provider.token_requests().len();
    provider.then(vec![
        json_answer(400, json!({"error": "invalid_grant"})),
        json_answer(400, json!({"error": "invalid_request"})),
    ]);
    env.kubecred_owned(&provider.args())
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains("invalid_request");
    let requests = provider.token_requests();
    assert_eq!(
        requests[before..],
        ["refresh_token refresh-2", "client_credentials"]
    );
}

#[test]
fn garbage_answers_are_clean_failures_naming_the_status() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    let entry = cached_and_expired(&provider, &env);
    let cases: Vec<(Fault, &str)> = vec![
        (
            Fault::Answer(
                200,
                vec![("Content-Type", "application/json".into())],
                "{\"access_token\": ".into(),
            ),
            "HTTP 200 OK",
        ),
        (
            Fault::Answer(
                200,
                vec![("Content-Type", "text/html".into())],
                "<html><body>Sign in</body></html>".into(),
            ),
            "text/html",
        ),
        (
            Fault::Answer(
                404,
                vec![("Content-Type", "text/html".into())],
                "<html>not found</html>".into(),
            ),
            "HTTP 404 Not Found",
        ),
        (
            Fault::Answer(
                302,
                vec![("Location", "https://elsewhere.example/login?x=1".into())],
                String::new(),
            ),
            "a redirect to https://elsewhere.example/login",
        ),
        (
            Fault::Answer(
                200,
                vec![("Content-Type", "application/json".into())],
                String::new(),
            ),
            "HTTP 200 OK",
        ),
        (Fault::Huge, "limit of 1 MiB"),
    ];
    for (fault, needle) in cases {
        provider.then(vec![fault]);
        let run = env
            .kubecred_owned(&provider.args())
            .run()
            .failure(PROVIDER_EXIT)
            .stderr_contains(needle);
        assert!(
            !run.stderr().contains("<html"),
            "bodies are not echoed\n{}",
            run.stderr()
        );
        assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    }
    // The entry and its refresh token survived all of it.
    provider.then(vec![]);
    env.kubecred_owned(&provider.args()).run().success();
    assert_eq!(
        provider.token_requests().last().map(String::as_str),
        Some("refresh_token refresh-1")
    );
}

#[test]
fn a_500_is_not_resent_with_a_one_time_refresh_token() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    let entry = cached_and_expired(&provider, &env);
    // The provider may have rotated the refresh token before failing: resending it could look
    // like reuse. One request, a clean failure naming the status, the entry kept.
    provider.then(vec![Fault::Answer(500, vec![], String::new())]);
    fails_and_keeps_the_entry(&provider, &env, &entry, "HTTP 500");
    assert_eq!(provider.token_requests().len(), 3);
}

/// RFC 6749 §6: a refresh answer may leave out `refresh_token`, and the client keeps using the
/// one it has. Many providers (Google, Entra for some clients) do exactly that.
#[test]
fn a_refresh_answer_without_a_refresh_token_keeps_the_old_one() {
    let provider = FaultyProvider::start();
    let env = TestEnv::new();
    env.kubecred_owned(&provider.args()).run().success();
    expire_cached_tokens(&env.cache_dir());
    provider.then(vec![Fault::Answer(
        200,
        vec![("Content-Type", "application/json".into())],
        json!({"access_token": "access-renewed", "token_type": "Bearer", "expires_in": 3600})
            .to_string(),
    )]);
    let renewed = env.kubecred_owned(&provider.args()).run().success().token();
    assert_eq!(renewed, "access-renewed");
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&provider.args()).run().success();
    assert_eq!(
        provider.token_requests(),
        [
            "client_credentials",
            "refresh_token refresh-1",
            "refresh_token refresh-1"
        ],
        "the second refresh must present the refresh token the first answer did not replace"
    );
}
