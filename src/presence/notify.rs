//! One desktop notification, where a person's desktop is and no terminal shows the error line
//! (an IDE's hidden panel, a dashboard): freedesktop notifications over the session D-Bus on
//! Linux and the BSDs, Notification Center on macOS, a toast on Windows.
//!
//! Only a failure path calls [`raise`], never a cache hit: no code of it runs, and nothing of
//! it is loaded, before a run has failed (a static binary maps no library at start, and the
//! D-Bus connection, `osascript` or WinRT are reached only here). Whether to raise one at all
//! (`--notify`, a terminal, a desktop, one per entry per hold-off) is the caller's decision.
//!
//! Every wait is bounded: the whole notification gets [`DEADLINE`]; a D-Bus that hangs, a
//! notification service that never answers, a toast that blocks are abandoned after it (the
//! thread that asked is left to end with the process), so kubectl is never held up for it.
//! The text comes from kubecred's own error line and settings, never a secret, and is cleaned
//! and cut as any text for a terminal (`text::printable_brief`).
//!
//! The crates: `notify-rust` on Linux and the BSDs, at the release on zbus 4, the D-Bus stack
//! the keyring already brings (no second one); on macOS `osascript`'s `display notification`
//! (Notification Center), since notify-rust's macOS backend compiles Objective-C against the
//! Cocoa SDK, which neither the zig cross build nor a plain Linux lint has; on Windows
//! `tauri-winrt-notification`, the toast crate notify-rust itself uses, at the release on the
//! windows-core already in the lock.

use crate::text::printable_brief;
use std::sync::mpsc;
use std::time::Duration;

/// How long raising a notification may take, from start to the service's answer.
pub const DEADLINE: Duration = Duration::from_secs(2);

/// Longest summary and body kept (servers cut or wrap beyond a few lines anyway).
const MAX_SUMMARY_CHARS: usize = 120;
const MAX_BODY_CHARS: usize = 600;

/// What one notification says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// One line: kubecred and what it is about.
    pub summary: String,
    /// What happened, then the one command that fixes it.
    pub body: String,
}

impl Notification {
    /// A failure the person must act on: `subject` names the cluster or the provider
    /// (`https://idp.example`, `cluster prod`), `what` says what happened (kubecred's error
    /// line, without its `kubecred: error: `), `fix` is the one command that fixes it
    /// (`kubecred login …`, `kubectl get ns` in a terminal; none where `what` names a setting
    /// to change). None of them may hold a secret: they are shown on the screen and kept in the
    /// notification service's history.
    pub fn failure(subject: &str, what: &str, fix: Option<&str>) -> Notification {
        Notification {
            summary: printable_brief(&format!("kubecred: {subject}"), MAX_SUMMARY_CHARS)
                .into_owned(),
            // Cleaned apart, so that the one line break is kubecred's. No fix: the line says
            // what to change itself.
            body: match fix {
                None => printable_brief(what, MAX_BODY_CHARS).into_owned(),
                Some(fix) => format!(
                    "{}\nTo fix it, run: {}",
                    printable_brief(what, MAX_BODY_CHARS),
                    printable_brief(fix, MAX_BODY_CHARS)
                ),
            },
        }
    }
}

/// Raises `notification` on this session's desktop, waiting at most [`DEADLINE`]. An error
/// says why none was shown (for `-v`); it must never fail the credential.
pub fn raise(notification: &Notification) -> Result<(), String> {
    raise_within(notification, DEADLINE, platform::show)
}

/// Runs `show` on a thread of its own and waits for it until `deadline` has passed; after it,
/// the thread is abandoned (it holds nothing kubecred needs, and ends with the process).
fn raise_within(
    notification: &Notification,
    deadline: Duration,
    show: fn(&Notification) -> Result<(), String>,
) -> Result<(), String> {
    let (done, outcome) = mpsc::sync_channel(1);
    let notification = notification.clone();
    std::thread::Builder::new()
        .name("kubecred-notify".into())
        .spawn(move || {
            let _ = done.send(show(&notification));
        })
        .map_err(|err| format!("cannot start a thread for the notification: {err}"))?;
    match outcome.recv_timeout(deadline) {
        Ok(shown) => shown,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the notification service did not answer within {}; not waiting for it",
            crate::duration::in_words(deadline)
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err("the notification thread ended without an answer".into())
        }
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use super::Notification;
    use crate::text::html_escape;

    /// `org.freedesktop.Notifications.Notify` on the session bus (`DBUS_SESSION_BUS_ADDRESS`,
    /// else `$XDG_RUNTIME_DIR/bus`). The body is escaped where the server reads markup, and
    /// sent as it is where it does not (the specification's rule).
    pub fn show(notification: &Notification) -> Result<(), String> {
        let capabilities = notify_rust::get_capabilities().map_err(|err| {
            format!("no notification service on the session D-Bus answered ({err})")
        })?;
        let body = if capabilities.iter().any(|c| c == "body-markup") {
            html_escape(&notification.body)
        } else {
            notification.body.clone()
        };
        notify_rust::Notification::new()
            .appname("kubecred")
            .summary(&notification.summary)
            .body(&body)
            .icon("dialog-password")
            .urgency(notify_rust::Urgency::Normal)
            .show()
            .map(drop)
            .map_err(|err| format!("the notification service refused the notification ({err})"))
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use super::{DEADLINE, Notification};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// `display notification` through `osascript`, the text as the script's arguments (never
    /// inside the script, so nothing in it is read as AppleScript). The notification is
    /// Notification Center's, shown as from Script Editor.
    pub fn show(notification: &Notification) -> Result<(), String> {
        let mut child = Command::new("/usr/bin/osascript")
            .args([
                "-e",
                "on run argv",
                "-e",
                "display notification (item 2 of argv) with title (item 1 of argv)",
                "-e",
                "end run",
                &notification.summary,
                &notification.body,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot run osascript: {err}"))?;
        // Waited for here (not only by the caller's deadline) so that it is killed, not left
        // running, when it hangs.
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("osascript exited with {status}")),
                Ok(None) if started.elapsed() < DEADLINE => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("osascript did not finish in time".into());
                }
                Err(err) => return Err(format!("waiting for osascript: {err}")),
            }
        }
    }
}

#[cfg(windows)]
mod platform {
    use super::Notification;
    use tauri_winrt_notification::Toast;

    /// A toast through WinRT's ToastNotificationManager, under PowerShell's application ID (an
    /// unpackaged program has none of its own that Windows would show).
    pub fn show(notification: &Notification) -> Result<(), String> {
        Toast::new(Toast::POWERSHELL_APP_ID)
            .title(&notification.summary)
            .text1(&notification.body)
            .show()
            .map_err(|err| format!("Windows refused the toast ({err})"))
    }
}

#[cfg(not(any(unix, windows)))]
mod platform {
    use super::Notification;

    pub fn show(_notification: &Notification) -> Result<(), String> {
        Err("kubecred does not know how to raise a notification on this platform".into())
    }
}

/// The desktop session of the integration tests, for this module's live tests: one harness.
#[cfg(all(test, target_os = "linux"))]
#[path = "../../tests/it/support/desktop.rs"]
mod desktop_session;
#[cfg(test)]
mod tests;
