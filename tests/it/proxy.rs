//! Behind a proxy, with real ones: Debian's tinyproxy (HTTP CONNECT, with and without a
//! password) and microsocks (SOCKS5), each started by the test on loopback with its log in the
//! test's directory, in front of the test bed's provider on https. Covered: a grant through each
//! kind of proxy (the proxy's own log shows the tunnel), `socks5h://` leaving the name to the
//! proxy, `NO_PROXY` sending the provider direct, a wrong or missing password (one line naming
//! the proxy and its answer, never the password, not retried), a proxy that is down named as
//! such, and a setting that cannot work failing before any request — while a cache hit, which
//! needs no network, still answers.

use crate::support::*;
use serde_json::json;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROVIDER_EXIT: i32 = 3;
const INPUT_EXIT: i32 = 1;

/// A port nothing listens on right now (the OS picks it; the socket is closed again).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A proxy server process of ours; killed when dropped.
pub(crate) struct ProxyServer {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl ProxyServer {
    /// Starts `command` (its stderr to the log) and waits until it listens on `port`.
    fn start(mut command: Command, port: u16, log: PathBuf) -> ProxyServer {
        let log_file = std::fs::File::create(&log).unwrap();
        let shown = format!("{command:?}");
        let child = command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|err| panic!("starting {shown}: {err}"));
        let mut server = ProxyServer { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{shown} exited with {status}: {}", server.log());
            }
            assert!(
                Instant::now() < deadline,
                "{shown} does not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Debian's tinyproxy in the foreground, on loopback, logging every CONNECT; with
    /// `BasicAuth` when a user and password are given.
    fn tinyproxy(env: &TestEnv, basic_auth: Option<(&str, &str)>) -> ProxyServer {
        let extra = basic_auth
            .map(|(user, password)| format!("BasicAuth {user} {password}\n"))
            .unwrap_or_default();
        ProxyServer::tinyproxy_with(env, &extra)
    }

    /// tinyproxy with these lines added to its configuration (`ConnectPort 443`, …).
    pub(crate) fn tinyproxy_with(env: &TestEnv, extra_config: &str) -> ProxyServer {
        let port = free_port();
        let config = env.dir.path().join(format!("tinyproxy-{port}.conf"));
        let mut text =
            format!("Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\nLogLevel Connect\n");
        text.push_str(extra_config);
        std::fs::write(&config, text).unwrap();
        let mut command = Command::new("tinyproxy");
        command.arg("-d").arg("-c").arg(&config);
        let log = env.dir.path().join(format!("tinyproxy-{port}.log"));
        ProxyServer::start(command, port, log)
    }

    /// microsocks (SOCKS5) on loopback, with `-u`/`-P` when a user and password are given.
    pub(crate) fn microsocks(env: &TestEnv, credentials: Option<(&str, &str)>) -> ProxyServer {
        let port = free_port();
        let mut command = Command::new("microsocks");
        command.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        if let Some((user, password)) = credentials {
            command.args(["-u", user, "-P", password]);
        }
        let log = env.dir.path().join(format!("microsocks-{port}.log"));
        ProxyServer::start(command, port, log)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log's lines that contain `needle`.
    fn log_lines_with(&self, needle: &str) -> Vec<String> {
        self.log()
            .lines()
            .filter(|line| line.contains(needle))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test bed's provider on https (a CONNECT tunnel, not a forwarded request), optionally
/// named `localhost` in its issuer.
fn https_bed(host: &str) -> Testbed {
    Testbed::start_with(json!({"idpTls": true, "idpHost": host}))
}

/// `host:port` of the bed's issuer.
fn issuer_authority(bed: &Testbed) -> String {
    let url = url::Url::parse(&bed.issuer).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
}

/// Client credentials against `bed`, trusting its CA, with `-v`.
fn grant(env: &TestEnv, bed: &Testbed) -> Command {
    let mut args = env.cc_args(bed);
    args.push(format!("--certificate-authority={}", bed.ca_file.display()));
    args.push("-v".into());
    env.kubecred_owned(&args)
}

/// `-v` tells of no retry.
#[track_caller]
fn not_retried(run: &Run) {
    assert!(!run.stderr().contains("retry"), "{}", run.stderr());
}

#[test]
fn a_grant_through_an_http_proxy_shows_in_its_log() {
    if !have(Need::ProxyServers) {
        return;
    }
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    let proxy = ProxyServer::tinyproxy(&env, None);
    let shown = format!("http://127.0.0.1:{}", proxy.port);
    let run = grant(&env, &bed)
        .env("HTTPS_PROXY", format!("127.0.0.1:{}", proxy.port))
        .run()
        .success();
    let through = format!("goes through the proxy {shown} (from HTTPS_PROXY)");
    // Discovery and the token request, both through it.
    assert_eq!(
        run.stderr().matches(&through).count(),
        2,
        "{}",
        run.stderr()
    );
    assert!(!run.token().is_empty());
    let tunnels = proxy.log_lines_with(&format!("CONNECT {}", issuer_authority(&bed)));
    assert_eq!(tunnels.len(), 2, "{}", proxy.log());
}

#[test]
fn a_proxy_with_a_password_and_wrong_or_missing_ones() {
    if !have(Need::ProxyServers) {
        return;
    }
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    let proxy = ProxyServer::tinyproxy(&env, Some(("alice", "proxy-pass-1")));
    let at = |credentials: &str| format!("http://{credentials}127.0.0.1:{}", proxy.port);

    grant(&env, &bed)
        .env("HTTPS_PROXY", at("alice:proxy-pass-1@"))
        .run()
        .success()
        .never_shows(&["proxy-pass-1"])
        .stderr_contains(&format!(
            "through the proxy http://127.0.0.1:{} (from HTTPS_PROXY)",
            proxy.port
        ));
    assert_eq!(bed.token_requests("client_credentials"), 1);

    // A password the proxy refuses (tinyproxy answers 401 to it; other proxies 407): one line,
    // the proxy named, its answer, the variable, never the password; no retry, no request reached
    // the provider. The proxy saw the request's CONNECT and the one kubecred sent to ask it why.
    let before = proxy.log_lines_with("): CONNECT ").len();
    let env = TestEnv::new();
    let run = grant(&env, &bed)
        .env("HTTPS_PROXY", at("alice:wrong-pass-2@"))
        .run()
        .failure(PROVIDER_EXIT)
        .never_shows(&["wrong-pass-2"])
        .stderr_contains(&format!(
            "kubecred: error: fetching the OpenID discovery document from {}/.well-known/openid-configuration: the proxy http://127.0.0.1:{} (from HTTPS_PROXY) answered 401 Unauthorized: it refused the user name and password; check them in HTTPS_PROXY\n",
            bed.issuer, proxy.port
        ));
    not_retried(&run);
    assert_eq!(
        proxy.log_lines_with("): CONNECT ").len(),
        before + 2,
        "{}",
        proxy.log()
    );
    assert_eq!(bed.token_requests("client_credentials"), 1);

    // No password at all: the 407, and where to put one.
    let env = TestEnv::new();
    let run = grant(&env, &bed)
        .env("https_proxy", at(""))
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains(&format!(
            "the proxy http://127.0.0.1:{} (from https_proxy) answered 407 Proxy Authentication Required: it wants a user name and password; give them in https_proxy as http://USER:PASSWORD@HOST:PORT",
            proxy.port
        ));
    not_retried(&run);
}

#[test]
fn socks5h_leaves_the_name_to_the_proxy_and_a_refused_password_is_one_line() {
    if !have(Need::ProxyServers) {
        return;
    }
    let env = TestEnv::new();
    let bed = https_bed("localhost");
    let proxy = ProxyServer::microsocks(&env, Some(("bob", "socks-pass-3")));
    let url = |credentials: &str, scheme: &str| {
        format!("{scheme}://{credentials}127.0.0.1:{}", proxy.port)
    };
    let run = grant(&env, &bed)
        .env("ALL_PROXY", url("bob:socks-pass-3@", "socks5h"))
        .run()
        .success()
        .never_shows(&["socks-pass-3"]);
    run.stderr_contains(&format!(
        "goes through the SOCKS proxy socks5h://127.0.0.1:{} (from ALL_PROXY)",
        proxy.port
    ));
    // The proxy connected to the name: it resolved it, not kubecred.
    let port = url::Url::parse(&bed.issuer).unwrap().port().unwrap();
    assert_eq!(
        proxy
            .log_lines_with(&format!("connected to localhost:{port}"))
            .len(),
        2,
        "{}",
        proxy.log()
    );

    // A password it refuses: one line, no retry.
    let env = TestEnv::new();
    let run = grant(&env, &bed)
        .env("ALL_PROXY", url("bob:wrong-pass-4@", "socks5h"))
        .run()
        .failure(PROVIDER_EXIT)
        .never_shows(&["wrong-pass-4"])
        .stderr_contains(&format!(
            "the SOCKS proxy socks5h://127.0.0.1:{} (from ALL_PROXY) refused the user name and password; check them in ALL_PROXY",
            proxy.port
        ));
    not_retried(&run);
}

#[test]
fn socks5_without_a_password_to_an_issuer_given_by_address() {
    if !have(Need::ProxyServers) {
        return;
    }
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    let proxy = ProxyServer::microsocks(&env, None);
    grant(&env, &bed)
        .env("HTTPS_PROXY", format!("socks5://127.0.0.1:{}", proxy.port))
        .run()
        .success();
    assert_eq!(
        proxy
            .log_lines_with(&format!("connected to {}", issuer_authority(&bed)))
            .len(),
        2,
        "{}",
        proxy.log()
    );
}

#[test]
fn no_proxy_sends_the_provider_direct() {
    if !have(Need::ProxyServers) {
        return;
    }
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    let proxy = ProxyServer::tinyproxy(&env, None);
    let run = grant(&env, &bed)
        .env("HTTPS_PROXY", format!("http://127.0.0.1:{}", proxy.port))
        .env("NO_PROXY", "localhost, .corp.example,127.0.0.0/8")
        .run()
        .success();
    assert_eq!(
        run.stderr()
            .matches("goes direct: NO_PROXY matches its host (entry 127.0.0.0/8)")
            .count(),
        2,
        "{}",
        run.stderr()
    );
    assert!(
        proxy.log_lines_with("): CONNECT ").is_empty(),
        "{}",
        proxy.log()
    );
}

#[test]
fn a_proxy_that_is_down_is_named_as_such() {
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    let port = free_port();
    grant(&env, &bed)
        .env("HTTPS_PROXY", format!("http://127.0.0.1:{port}"))
        .run()
        .failure(PROVIDER_EXIT)
        .stderr_contains(&format!(
            "the proxy http://127.0.0.1:{port} (from HTTPS_PROXY) refused the connection: nothing is listening there; check HTTPS_PROXY and that the proxy is running (after 4 attempts)"
        ));
    assert_eq!(bed.stats()["discovery"], 0);
}

#[test]
fn a_setting_that_cannot_work_fails_before_any_request_and_a_cache_hit_still_answers() {
    let env = TestEnv::new();
    let bed = https_bed("127.0.0.1");
    for (variable, value, expected) in [
        (
            "HTTPS_PROXY",
            "ftp://carol:ftp-pass-5@127.0.0.1:21",
            "kubecred: error: HTTPS_PROXY=ftp://****@127.0.0.1:21 names a ftp proxy, which kubecred cannot use; use an http://, https://, socks4://, socks4a://, socks5:// or socks5h:// proxy, or unset it\n",
        ),
        (
            "ALL_PROXY",
            "socks5h://carol:ftp-pass-5@127.0.0.1:99999",
            "kubecred: error: ALL_PROXY=socks5h://****@127.0.0.1:99999 is not a proxy URL (invalid port number); write it as http://HOST:PORT (or https://, socks5://, socks5h://), or unset it\n",
        ),
    ] {
        let run = grant(&env, &bed)
            .env(variable, value)
            .run()
            .failure(INPUT_EXIT)
            .never_shows(&["ftp-pass-5"])
            .stderr_contains(expected);
        not_retried(&run);
    }
    let stats = bed.stats();
    assert_eq!(
        (
            stats["discovery"].as_u64(),
            stats["token"]["total"].as_u64()
        ),
        (Some(0), Some(0)),
        "{stats}"
    );

    // A cached token needs no network: the broken variable does not stand in its way.
    grant(&env, &bed).run().success();
    grant(&env, &bed)
        .env("HTTPS_PROXY", "ftp://127.0.0.1:21")
        .run()
        .success();
    assert_eq!(bed.token_requests("client_credentials"), 1);
}
