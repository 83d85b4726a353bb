//! The notification's text and its deadline with stand-in services, and live: in a real desktop
//! session (tests/it's harness), a hung bus and no bus.

use super::*;
use std::time::Instant;

#[test]
fn the_text_names_the_subject_what_happened_and_the_fix() {
    let shown = Notification::failure(
        "https://idp.example",
        "the login was abandoned; no new browser tab for 10 minutes",
        Some("kubecred login --issuer-url=https://idp.example --client-id=k"),
    );
    assert_eq!(shown.summary, "kubecred: https://idp.example");
    assert_eq!(
        shown.body,
        "the login was abandoned; no new browser tab for 10 minutes\n\
         To fix it, run: kubecred login --issuer-url=https://idp.example --client-id=k"
    );
}

#[test]
fn text_from_outside_is_cleaned_and_cut() {
    let long = "x".repeat(2000);
    let shown = Notification::failure("idp\x1b[2J", &format!("refused\x07 {long}"), Some("k"));
    assert!(!shown.summary.contains('\x1b') && !shown.body.contains('\x07'));
    let (what, fix) = shown.body.split_once('\n').unwrap();
    assert_eq!(what.chars().count(), MAX_BODY_CHARS + 1, "{what}");
    assert!(what.ends_with('…'));
    assert_eq!(fix, "To fix it, run: k");
}

#[test]
fn without_a_fix_the_body_is_the_line_alone() {
    let shown = Notification::failure("idp", "add --login-resource=https://b", None);
    assert_eq!(shown.body, "add --login-resource=https://b");
}

#[test]
fn a_service_that_hangs_is_abandoned_at_the_deadline() {
    fn hangs(_: &Notification) -> Result<(), String> {
        std::thread::sleep(Duration::from_secs(30));
        Ok(())
    }
    let started = Instant::now();
    let outcome = raise_within(
        &Notification::failure("s", "w", Some("f")),
        Duration::from_secs(1),
        hangs,
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        outcome,
        Err("the notification service did not answer within 1 second; not waiting for it".into())
    );
}

#[test]
fn the_services_answer_is_passed_on() {
    fn refuses(_: &Notification) -> Result<(), String> {
        Err("refused".into())
    }
    fn shows(_: &Notification) -> Result<(), String> {
        Ok(())
    }
    let n = Notification::failure("s", "w", Some("f"));
    assert_eq!(raise_within(&n, DEADLINE, refuses), Err("refused".into()));
    assert_eq!(raise_within(&n, DEADLINE, shows), Ok(()));
}

/// The live tests: kubecred's notification in a real desktop session (tests/it's harness: Xvfb,
/// a session bus of its own, dunst), raised by a child process (this test binary again) that
/// is given the session's environment, as kubectl would give it to kubecred.
#[cfg(target_os = "linux")]
mod live {
    use super::super::desktop_session::{DesktopSession, Received};
    use super::*;
    use std::process::Command;

    const CHILD_MARKER: &str = "KUBECRED_TEST_NOTIFY_CHILD";
    const CHILD: &str = "presence::notify::tests::live::child_raises_a_notification";

    /// The child half of the tests below, run by them: raises one notification and says on
    /// stdout what came of it and how long it took.
    #[test]
    #[ignore = "the child half of the live notification tests, run by them"]
    fn child_raises_a_notification() {
        assert!(
            std::env::var_os(CHILD_MARKER).is_some(),
            "the child half of the live notification tests, run by them"
        );
        let started = Instant::now();
        let outcome = raise(&Notification::failure(
            "https://idp.example",
            "the login in the browser was abandoned & <nothing> was opened again",
            Some("kubecred login"),
        ));
        let elapsed = started.elapsed().as_millis();
        std::fs::write(
            std::env::var_os(CHILD_MARKER).unwrap(),
            format!("{outcome:?}\n{elapsed}\n"),
        )
        .unwrap();
    }

    /// Runs the child with `env`: what `raise` returned, and how long it took.
    fn raise_in_child(env: &[(String, String)]) -> (String, Duration) {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report");
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "--ignored", CHILD, "--test-threads=1"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(CHILD_MARKER, &report)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stdout)
        );
        let report = std::fs::read_to_string(report).unwrap();
        let (outcome, elapsed) = report.trim().split_once('\n').unwrap();
        (
            outcome.to_string(),
            Duration::from_millis(elapsed.parse().unwrap()),
        )
    }

    #[test]
    fn a_notification_reaches_the_desktops_notification_daemon() {
        let Some(desktop) = DesktopSession::start() else {
            return;
        };
        let (outcome, _) = raise_in_child(&desktop.env());
        assert_eq!(outcome, "Ok(())");
        assert_eq!(
            desktop.notifications(),
            [Received {
                appname: "kubecred".into(),
                summary: "kubecred: https://idp.example".into(),
                // dunst reads no body markup, so the text went as it is.
                body: "the login in the browser was abandoned & <nothing> was opened again\n\
                       To fix it, run: kubecred login"
                    .into(),
            }]
        );
    }

    #[test]
    fn a_bus_that_never_answers_is_abandoned_at_the_deadline() {
        // A socket that accepts connections and never says a word: a hung D-Bus.
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("bus");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let bus = (
            "DBUS_SESSION_BUS_ADDRESS".to_string(),
            format!("unix:path={}", socket.display()),
        );
        let (outcome, elapsed) = raise_in_child(&[bus]);
        assert_eq!(
            outcome,
            "Err(\"the notification service did not answer within 2 seconds; not waiting for it\")"
        );
        assert!(
            elapsed < DEADLINE + Duration::from_millis(500),
            "{elapsed:?}"
        );
    }

    #[test]
    fn without_a_session_bus_it_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let bus = (
            "DBUS_SESSION_BUS_ADDRESS".to_string(),
            format!("unix:path={}", dir.path().join("absent").display()),
        );
        let (outcome, elapsed) = raise_in_child(&[bus]);
        assert!(
            outcome.starts_with("Err(\"no notification service on the session D-Bus answered"),
            "{outcome}"
        );
        assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    }
}
