//! Callers without a terminal (an IDE's Kubernetes plugin, a dashboard, Terraform) on a person's
//! desktop, and the same without one: the real kubectl run as they run it (stdin `/dev/null`,
//! output captured, no controlling terminal; `spec.interactive` false), on the desktop session
//! of `support/desktop.rs` (Xvfb, a session D-Bus, dunst, an `xdg-open` that opens the scripted
//! browser and counts the tabs).
//! Each test says, per caller, how many tabs opened, what the provider was asked and what
//! notifications the person got.

use crate::support::desktop::{
    BrowserAction, DesktopSession, Received, as_a_caller_without_a_terminal,
};
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The most a caller's run may take here (a login included: Chromium starts in a few seconds).
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The kubectl every test runs: `auth whoami`, printing the user name alone.
const WHOAMI: [&str; 4] = [
    "auth",
    "whoami",
    "-o",
    "jsonpath={.status.userInfo.username}",
];

/// A desktop, the test bed and a test environment; `None` where something is missing.
fn start(options: Value) -> Option<(DesktopSession, Testbed, TestEnv)> {
    if !have(Need::Browser) {
        return None;
    }
    let desktop = DesktopSession::start()?;
    Some((desktop, Testbed::start_with(options), TestEnv::new()))
}

/// Where `kubectl` runs: on the test's desktop, or in no desktop session at all (the
/// desktop's `xdg-open` still first on PATH, to show that nothing calls it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Session {
    Desktop,
    NoDesktop,
}

/// `kubectl auth whoami` as an IDE runs it, in `session`.
fn ide_kubectl(
    env: &TestEnv,
    kubeconfig: &Path,
    desktop: &DesktopSession,
    session: Session,
) -> Command {
    let mut kubectl = env.kubectl(kubeconfig, &WHOAMI);
    match session {
        Session::Desktop => desktop.apply(&mut kubectl),
        Session::NoDesktop => {
            kubectl.env("PATH", desktop.path_with_xdg_open());
        }
    }
    as_a_caller_without_a_terminal(&mut kubectl);
    kubectl
}

/// [`ide_kubectl`], run to its end (at most [`RUN_LIMIT`]).
fn ide_run(env: &TestEnv, kubeconfig: &Path, desktop: &DesktopSession, session: Session) -> Run {
    run_bounded(
        &mut ide_kubectl(env, kubeconfig, desktop, session),
        RUN_LIMIT,
    )
}

/// The stanza `kubecred setup` prints for a person's login (issuer, client; the system
/// browser; interactiveMode IfAvailable), with the test's cache and `extra` flags.
fn setup_like_kubeconfig(env: &TestEnv, bed: &Testbed, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "get-token".to_string(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={PUBLIC_CLIENT}"),
        "--listen-address=127.0.0.1:0".into(),
    ];
    args.extend(extra.iter().map(|flag| flag.to_string()));
    let path = env.kubeconfig(bed, KubeconfigSpec::new(V1, args));
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["users"][0]["user"]["exec"]["interactiveMode"] = json!("IfAvailable");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

fn device_kubeconfig(env: &TestEnv, bed: &Testbed, extra: &[&str]) -> PathBuf {
    setup_like_kubeconfig(env, bed, &[&["--grant-type=device-code"], extra].concat())
}

#[test]
fn a_device_login_without_a_terminal_opens_the_browser_on_a_desktop() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = device_kubeconfig(&env, &bed, &[]);
    let run = ide_run(&env, &kubeconfig, &desktop, Session::Desktop);
    let run = run.success();
    assert_eq!(run.stdout(), "alice", "{}", desktop.browser_log());
    // One tab, on the provider's page with the code in it (verification_uri_complete).
    let tabs = desktop.tabs();
    assert_eq!(tabs.len(), 1, "{tabs:?}");
    assert!(
        tabs[0].starts_with(&bed.issuer) && tabs[0].contains("user_code="),
        "{tabs:?}"
    );
    // Then cache hits: no tab, no request.
    bed.reset_stats();
    let again = ide_run(&env, &kubeconfig, &desktop, Session::Desktop).success();
    assert_eq!(again.stdout(), "alice");
    assert_eq!(desktop.tabs().len(), 1);
    assert_eq!(bed.stats()["token"]["total"], 0);
    // A success raises no notification.
    assert_eq!(desktop.notifications(), []);
}

/// `--skip-open-browser` says where the person reads the code: on stderr (a tool that shows
/// the plugin's output), so without a terminal and on a desktop no tab opens, the code is
/// printed, and the login completes when it is approved from there.
#[test]
fn a_device_login_told_to_skip_the_browser_prints_the_code_and_opens_no_tab() {
    use std::io::{BufReader, Read};
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = device_kubeconfig(&env, &bed, &["--skip-open-browser"]);
    let mut kubectl = ide_kubectl(&env, &kubeconfig, &desktop, Session::Desktop);
    let mut child = kubectl.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = crate::login::url_from(&mut stderr, &mut seen, |line| {
        let rest = line.strip_prefix("kubecred: to log in, open ")?;
        rest.split_whitespace().next().map(str::to_string)
    });
    let approved = Command::new("node")
        .arg(repo_root().join("tests/support/browser.mjs"))
        .arg(&url)
        .status()
        .unwrap();
    assert!(approved.success());
    let output = child.wait_with_output().unwrap();
    stderr.read_to_string(&mut seen).unwrap();
    assert!(output.status.success(), "{seen}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "alice", "{seen}");
    assert_eq!(desktop.tabs(), Vec::<String>::new());
    assert_eq!(bed.stats()["device_authorization"], 1);
    assert_eq!(desktop.notifications(), []);
}

#[test]
fn without_a_desktop_no_browser_opens() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = device_kubeconfig(&env, &bed, &["--auth-timeout=3s"]);
    // No display at all (a CI job, a service).
    let run = ide_run(&env, &kubeconfig, &desktop, Session::NoDesktop);
    assert!(!run.output.status.success(), "{}", run.stderr());
    // A Wayland display left behind by a compositor that is gone: its socket file is there,
    // nobody answers on it.
    let runtime = env.dir.path().join("stale-runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    drop(std::os::unix::net::UnixListener::bind(runtime.join("wayland-0")).unwrap());
    let mut stale = ide_kubectl(&env, &kubeconfig, &desktop, Session::NoDesktop);
    stale
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("WAYLAND_DISPLAY", "wayland-0");
    let run = run_bounded(&mut stale, RUN_LIMIT);
    assert!(!run.output.status.success(), "{}", run.stderr());
    assert_eq!(desktop.tabs(), Vec::<String>::new());
    assert_eq!(desktop.notifications(), []);
}

// ---- The callers of issue 39, once the miss path is wired -------------------------------------

#[test]
fn an_ide_logs_in_through_the_browser_once_then_hits() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = setup_like_kubeconfig(&env, &bed, &[]);
    let run = ide_run(&env, &kubeconfig, &desktop, Session::Desktop).success();
    assert_eq!(run.stdout(), "alice", "{}", desktop.browser_log());
    assert_eq!(desktop.tabs().len(), 1);
    assert_eq!(bed.stats()["authorization"], 1);
    assert_eq!(bed.stats()["token"]["authorization_code"], 1);
    for _ in 0..3 {
        ide_run(&env, &kubeconfig, &desktop, Session::Desktop).success();
    }
    assert_eq!(desktop.tabs().len(), 1);
    assert_eq!(bed.stats()["token"]["total"], 1);
    assert_eq!(desktop.notifications(), []);
}

#[test]
fn four_parallel_ide_callers_open_one_tab() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = setup_like_kubeconfig(&env, &bed, &[]);
    let users =
        run_all_at_once((0..4).map(|_| ide_kubectl(&env, &kubeconfig, &desktop, Session::Desktop)));
    assert!(users.iter().all(|user| user == "alice"), "{users:?}");
    assert_eq!(desktop.tabs().len(), 1);
    assert_eq!(bed.stats()["authorization"], 1);
}

#[test]
fn without_a_desktop_auto_is_refused_at_once_contacting_nobody() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    let kubeconfig = setup_like_kubeconfig(&env, &bed, &[]);
    bed.reset_stats();
    let started = Instant::now();
    let run = ide_run(&env, &kubeconfig, &desktop, Session::NoDesktop);
    assert!(!run.output.status.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        run.stderr().contains("no terminal to log in on"),
        "{}",
        run.stderr()
    );
    assert_eq!(bed.stats()["discovery"], 0);
    assert_eq!(bed.stats()["token"]["total"], 0);
    assert_eq!(desktop.tabs(), Vec::<String>::new());
    assert_eq!(desktop.notifications(), []);
}

#[test]
fn a_tab_nobody_completes_holds_off_a_polling_caller_with_one_notification() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    desktop.set_browser_action(BrowserAction::Ignore);
    let kubeconfig = setup_like_kubeconfig(&env, &bed, &["--auth-timeout=5s"]);
    let first = ide_run(&env, &kubeconfig, &desktop, Session::Desktop);
    assert!(!first.output.status.success());
    // A dashboard asking every few seconds for over a minute: each call fails at once.
    let polling_since = Instant::now();
    while polling_since.elapsed() < Duration::from_secs(65) {
        let started = Instant::now();
        let run = ide_run(&env, &kubeconfig, &desktop, Session::Desktop);
        assert!(!run.output.status.success());
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}: {}",
            started.elapsed(),
            run.stderr()
        );
        std::thread::sleep(Duration::from_secs(5));
    }
    assert_eq!(desktop.tabs().len(), 1);
    assert_eq!(bed.stats()["authorization"], 1);
    let notifications = desktop.notifications();
    assert_eq!(notifications.len(), 1, "{notifications:?}");
    let Received { appname, body, .. } = &notifications[0];
    assert_eq!(appname, "kubecred");
    assert!(body.contains("kubecred login"), "{body}");
}

#[test]
fn a_device_login_without_verification_uri_complete_shows_kubecreds_page() {
    let Some((desktop, bed, env)) = start(json!({
        "deviceResponsePatch": {"verification_uri_complete": null}
    })) else {
        return;
    };
    let kubeconfig = device_kubeconfig(&env, &bed, &[]);
    let run = ide_run(&env, &kubeconfig, &desktop, Session::Desktop).success();
    assert_eq!(run.stdout(), "alice", "{}", desktop.browser_log());
    let tabs = desktop.tabs();
    assert_eq!(tabs.len(), 1, "{tabs:?}");
    assert!(tabs[0].starts_with("http://127.0.0.1:"), "{tabs:?}");
    assert!(tabs[0].contains("/device/"), "{tabs:?}");
}

#[test]
fn failures_notify_once_hits_never_and_never_without_a_desktop() {
    let Some((desktop, bed, env)) = start(json!({})) else {
        return;
    };
    desktop.set_browser_action(BrowserAction::Deny);
    let kubeconfig = setup_like_kubeconfig(&env, &bed, &["--auth-timeout=20s"]);
    for _ in 0..3 {
        let run = ide_run(&env, &kubeconfig, &desktop, Session::Desktop);
        assert!(!run.output.status.success());
    }
    assert_eq!(desktop.notifications().len(), 1);
    // Without a desktop: the error line alone.
    let run = ide_run(&env, &kubeconfig, &desktop, Session::NoDesktop);
    assert!(!run.output.status.success());
    assert_eq!(desktop.notifications().len(), 1);
    // After a login in a terminal (here: kubecred login with the browser approving), hits
    // raise nothing.
    desktop.set_browser_action(BrowserAction::Approve);
    let mut login = env.kubecred(&[
        "login",
        &format!("--issuer-url={}", bed.issuer),
        &format!("--client-id={PUBLIC_CLIENT}"),
        "--listen-address=127.0.0.1:0",
    ]);
    desktop.apply(&mut login);
    run_bounded(&mut login, RUN_LIMIT).success();
    ide_run(&env, &kubeconfig, &desktop, Session::Desktop).success();
    assert_eq!(desktop.notifications().len(), 1);
}
