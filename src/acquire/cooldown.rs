//! The cool-down after a failed interactive login: for a short while (`--login-cooldown`,
//! 30 s by default) kubecred fails at once instead of opening another browser tab.
//!
//! kubectl may run a failing plugin several times in one command, and IDEs and dashboards call
//! it in the background; without this, one abandoned login turns into a storm of browser tabs.
//! A login that failed before it asked anybody (`grants::ProviderClient::asked_a_person`: the
//! provider refused the device authorization request, a setting is wrong) leaves no record: there
//! is no storm to stop, and the next run must show the real cause (`obtain_new` in `mod.rs`).
//! The record is the `login_failed` note of the entry's state (`cache/entry_state.rs`): a time and a
//! one-line reason. A missing or unreadable note means no cool-down: this is a courtesy, never a
//! reason to lock someone out.

use crate::cache::Note;
use crate::debug;
use crate::error::{Exit, transient};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Fails while the failed login `noted` (the entry's `login_failed` note) is less than
/// `cooldown` before `now`.
pub(super) fn check(
    noted: Option<&Note>,
    cooldown: Duration,
    now: DateTime<Utc>,
) -> anyhow::Result<()> {
    if cooldown.is_zero() {
        return Ok(());
    }
    let Some(record) = noted else {
        return Ok(());
    };
    // A record from the future means the clock was set back: its age is unknown, and it
    // must not stretch the cool-down beyond `cooldown`, so it is ignored.
    let Ok(elapsed) = now.signed_duration_since(record.at).to_std() else {
        debug!(
            1,
            "ignoring a failed-login record dated in the future ({})", record.at
        );
        return Ok(());
    };
    let Some(remaining) = cooldown.checked_sub(elapsed).filter(|left| !left.is_zero()) else {
        return Ok(());
    };
    debug!(1, "last failed login: {}", record.reason);
    Err(transient(
        Exit::Login,
        format!(
            "a login for this cluster failed {} ago ({}); not opening another browser for {} — \
             run `kubecred login` with the same flags, pass --force-refresh, \
             or set KUBECRED_FORCE_REFRESH=1 for one kubectl command, to retry now",
            crate::duration::display_elapsed(elapsed),
            summary(&record.reason),
            crate::duration::display_whole_seconds(remaining),
        ),
    ))
}

/// The part of an error message before its advice (kubecred's messages read "what failed; what
/// to do"): the advice of the old error would only compete with the cool-down's own.
fn summary(reason: &str) -> &str {
    reason.split_once("; ").map_or(reason, |(what, _)| what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code_of;
    use chrono::TimeZone;

    const THIRTY: Duration = Duration::from_secs(30);
    const REASON: &str =
        "no login completed within 180s (--auth-timeout); run `kubecred login` to try again";

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn no_record_no_cooldown() {
        check(None, THIRTY, at(0)).unwrap();
    }

    #[test]
    fn a_recent_failure_fails_at_once_and_says_how_long() {
        let note = Note::new(REASON, at(0));
        let err = check(Some(&note), THIRTY, at(5)).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert_eq!(
            err.to_string(),
            "a login for this cluster failed 5s ago (no login completed within 180s (--auth-timeout)); \
             not opening another browser for 25s — run `kubecred login` with the same flags, \
             pass --force-refresh, or set KUBECRED_FORCE_REFRESH=1 for one kubectl command, \
             to retry now"
        );
        check(Some(&note), THIRTY, at(30)).unwrap();
        check(Some(&note), Duration::ZERO, at(5)).unwrap();
    }

    #[test]
    fn remaining_time_rounds_up() {
        let note = Note::new("denied", at(0));
        let later = at(10) + chrono::Duration::milliseconds(500);
        let message = check(Some(&note), THIRTY, later).unwrap_err().to_string();
        assert!(
            message.contains("failed 10s ago (denied); not opening another browser for 20s"),
            "{message}"
        );
    }

    #[test]
    fn a_record_from_the_future_is_ignored() {
        let note = Note::new(REASON, at(3600));
        check(Some(&note), THIRTY, at(0)).unwrap();
    }
}
