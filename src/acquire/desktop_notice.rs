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
use crate::presence::notify::{self, Notification};

/// Raises the desktop notification for `error`, the run's failure, when it is due (see the
/// module comment). Best effort: what stops it is said at `-v`, and it never changes the exit.
pub(super) fn after_failure(
    config: &Config,
    cache: &TokenCache,
    error: &anyhow::Error,
    clock: &dyn Clock,
) {
    if config.login.notify == Notify::Never
        || crate::presence::terminal_attached()
        || !needs_the_person(error)
    {
        return;
    }
    if let Err(why) = crate::presence::desktop::here() {
        crate::debug!(1, "no desktop notification: no desktop here ({why})");
        return;
    }
    let Ok(Some(lock)) = cache.try_lock() else {
        crate::debug!(
            1,
            "no desktop notification: another kubecred holds the entry (its own failure is told)"
        );
        return;
    };
    let now = clock.now();
    // One per hold-off; with the hold-off turned off (0), one per cool-down still, or a
    // dashboard polling every few seconds would raise one on each call.
    let holdoff = chrono::Duration::from_std(config.login.holdoff.max(config.login.cooldown))
        .unwrap_or(chrono::Duration::MAX);
    if let Some(at) = cache.state(None).notified_at
        && at <= now
        && now - at < holdoff
    {
        crate::debug!(
            1,
            "no desktop notification: one was raised at {} (one per --login-holdoff)",
            crate::duration::display_time(at)
        );
        return;
    }
    cache.update_state(&lock, |state| state.notified_at = Some(now));
    drop(lock);
    match notify::raise(&notification(config, error)) {
        Ok(()) => crate::debug!(1, "raised a desktop notification"),
        Err(why) => crate::debug!(1, "no desktop notification: {why}"),
    }
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
}
