//! A failure that needs the person, raised where the person looks: a caller without a terminal
//! (an IDE's hidden panel, a dashboard, Terraform) shows kubecred's error line to nobody, or as
//! "exit code 4" alone. On a person's desktop, such a failure also raises one desktop
//! notification (`presence/notify.rs`) naming the cluster (or the provider), what happened and
//! the command that fixes it.
//!
//! Only when it helps: `--notify failures` (the default), no terminal, a desktop
//! (`presence/desktop.rs`), and a failure a person can act on — a login held back or abandoned,
//! refused by the provider, a refused refresh token with no valid token left, a setting to fix —
//! not an outage, which mends itself. At most one per entry per `--login-holdoff`: the time is
//! noted in the entry's state under its lock (taken without waiting: whoever holds it is logging
//! in, and speaks for itself), so that a dashboard that polls, or four callers at once, raise
//! one. Never on a hit or a success: only the failure path of `credential` calls it. The stderr
//! line stays the error; nothing is printed on stdout.

use crate::cache::TokenCache;
use crate::clock::Clock;
use crate::config::{Config, Notify};
use crate::error::{Exit, exit_code_of, is_transient, one_line};
use crate::presence::Presence;
use crate::presence::notify::{self, Notification};
use chrono::{DateTime, Utc};

/// Raises the desktop notification for `error`, the run's failure, when it is due (see the
/// module comment). Best effort: what stops it is said at `-v`, and it never changes the exit.
pub(super) fn after_failure(
    config: &Config,
    cache: &TokenCache,
    presence: &Presence,
    error: &anyhow::Error,
    clock: &dyn Clock,
) {
    let now = clock.now();
    // The cheap checks first: the settings, the terminal, the kind of failure, the entry's
    // notes (one small file); the desktop is probed (a display's socket asked) only after them.
    let last = || cache.state(None).notified_at;
    if let Err(why) = due(config, presence, error, last(), now) {
        crate::debug!(1, "no desktop notification: {why}");
        return;
    }
    let Ok(Some(lock)) = cache.try_lock() else {
        crate::debug!(
            1,
            "no desktop notification: another kubecred holds the entry (its own failure is told)"
        );
        return;
    };
    // Looked at again under the lock: a parallel run may have raised one meanwhile.
    if let Err(why) = due(config, presence, error, last(), now) {
        crate::debug!(1, "no desktop notification: {why}");
        return;
    }
    cache.update_state(&lock, |state| state.notified_at = Some(now));
    drop(lock);
    match notify::raise(&notification(config, error)) {
        Ok(()) => crate::debug!(1, "raised a desktop notification"),
        Err(why) => crate::debug!(1, "no desktop notification: {why}"),
    }
}

/// Whether a notification of `error` is due now (`last`: when the entry's last one was raised),
/// or why not: the decision table of notifications, the cheap checks before the desktop's probe.
/// Only with `--notify failures`, without a terminal (which shows the error line), for a failure
/// a person can act on, at most one per `--login-holdoff` (or per cool-down, when the hold-off
/// is 0: a dashboard polling every few seconds must not raise one each time), and on a desktop.
fn due(
    config: &Config,
    presence: &Presence,
    error: &anyhow::Error,
    last: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), String> {
    if config.login.notify == Notify::Never {
        return Err("--notify never".into());
    }
    if presence.terminal() {
        return Err("a terminal shows the error".into());
    }
    if !needs_the_person(error) {
        return Err("an outage, which mends itself".into());
    }
    let holdoff = chrono::Duration::from_std(config.login.holdoff.max(config.login.cooldown))
        .unwrap_or(chrono::Duration::MAX);
    if let Some(at) = last
        && at <= now
        && now - at < holdoff
    {
        return Err(format!(
            "one was raised at {} (one per --login-holdoff)",
            crate::duration::display_time(at)
        ));
    }
    if let Err(why) = presence.desktop() {
        return Err(format!("no desktop here ({why})"));
    }
    Ok(())
}

/// Whether a person must act on `error`: anything but an outage of the provider (a transient
/// failure that is not a login held back), which the next run may not meet at all.
fn needs_the_person(error: &anyhow::Error) -> bool {
    !is_transient(error) || exit_code_of(error) == Exit::Login
}

/// What the notification says: the cluster (its API server, when kubectl said which) or the
/// provider, kubecred's error line, and the command a person runs to log in (none for a
/// setting to change: the line says which).
fn notification(config: &Config, error: &anyhow::Error) -> Notification {
    let subject = match config
        .exec
        .cluster
        .as_ref()
        .and_then(|c| c.server.as_deref())
    {
        Some(server) => format!("cluster {server}"),
        None => config.issuer_as_given.clone(),
    };
    // A setting the person must change (a flag, the cluster extension): the error line names
    // it, and logging in again would not help.
    let fix = (exit_code_of(error) != Exit::Input).then_some(
        "kubecred login with this kubeconfig's settings, or any kubectl command in a terminal",
    );
    Notification::failure(&subject, &one_line(error), fix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{fail, outage, transient};
    use crate::presence::callers::*;
    use chrono::TimeZone;

    #[test]
    fn outages_mend_themselves_everything_else_needs_the_person() {
        assert!(!needs_the_person(&outage("the provider timed out")));
        assert!(needs_the_person(&transient(
            Exit::Login,
            "a login failed 3s ago"
        )));
        assert!(needs_the_person(&fail(Exit::Provider, "invalid_client")));
        assert!(needs_the_person(&fail(Exit::Input, "no client ID")));
        assert!(needs_the_person(&fail(Exit::Login, "access_denied")));
    }

    /// Who gets a notification of which failure: only a caller without a terminal, on a
    /// desktop, for a failure a person acts on, once per hold-off.
    #[test]
    fn a_failure_notifies_only_a_caller_on_a_desktop_without_a_terminal_once() {
        let dir = std::path::Path::new("/nonexistent/kubecred");
        let config = super::super::tests::config_with(dir, &[]);
        let never = super::super::tests::config_with(dir, &["--notify=never"]);
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let login = transient(Exit::Login, "a login for this cluster failed 3s ago");
        let refused = fail(Exit::Provider, "invalid_client");
        let down = outage("the provider timed out");
        let verdict = |config: &Config, presence: &Presence, error, last| {
            due(config, presence, error, last, now).map_err(|why| {
                [
                    "never",
                    "terminal",
                    "outage",
                    "one was raised",
                    "no desktop",
                ]
                .into_iter()
                .find(|word| why.contains(word))
                .unwrap_or_else(|| panic!("an unknown reason: {why}"))
            })
        };
        // Per caller: a login held off, a provider's refusal, an outage.
        type Verdicts = [Result<(), &'static str>; 3];
        let table: [(&str, Presence, Verdicts); 6] = [
            (
                "terminal on a desktop",
                terminal_on_a_desktop(),
                [Err("terminal"); 3],
            ),
            ("SSH terminal", ssh_terminal(), [Err("terminal"); 3]),
            (
                "IDE on a desktop",
                ide_on_a_desktop(),
                [Ok(()), Ok(()), Err("outage")],
            ),
            (
                "IDE, no launcher",
                ide_without_a_launcher(),
                [Ok(()), Ok(()), Err("outage")],
            ),
            (
                "CI",
                ci(),
                [Err("no desktop"), Err("no desktop"), Err("outage")],
            ),
            (
                "terminal on stderr only",
                terminal_without_stdin(),
                [Err("terminal"); 3],
            ),
        ];
        for (caller, presence, expected) in table {
            let got =
                [&login, &refused, &down].map(|error| verdict(&config, &presence, error, None));
            assert_eq!(got, expected, "{caller}");
        }
        let ide = ide_on_a_desktop();
        assert_eq!(verdict(&never, &ide, &login, None), Err("never"));
        // One per hold-off (10 minutes by default): not again 9 minutes after, again at 10.
        let ago = |minutes| Some(now - chrono::Duration::minutes(minutes));
        assert_eq!(
            verdict(&config, &ide, &login, ago(9)),
            Err("one was raised")
        );
        assert_eq!(verdict(&config, &ide, &login, ago(10)), Ok(()));
        // A note from the future (the clock was set back) holds nothing off.
        assert_eq!(verdict(&config, &ide, &login, ago(-5)), Ok(()));
    }

    /// Nothing is probed for a caller the cheap checks turn away: a CI job's outage, or a
    /// terminal, never asks the display.
    #[test]
    fn the_desktop_is_probed_only_after_the_cheap_checks() {
        let config = super::super::tests::config_with(std::path::Path::new("/nonexistent"), &[]);
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let unprobed = Presence::of_this_run(false);
        let down = outage("the provider timed out");
        assert!(due(&config, &unprobed, &down, None, now).is_err());
        assert!(!unprobed.desktop_probed());
    }
}
