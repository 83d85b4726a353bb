//! The cool-down after a failed interactive login: for a short while (`--login-cooldown`,
//! 30 s by default) kubecred fails at once instead of opening another browser tab.
//!
//! kubectl may run a failing plugin several times in one command, and IDEs and dashboards call
//! it in the background; without this, one abandoned login turns into a storm of browser tabs.
//! A login that failed before it asked anybody (`grants::ProviderClient::asked_a_person`: the
//! provider refused the device authorization request, a setting is wrong) leaves no record: there
//! is no storm to stop, and the next run must show the real cause (`run_grant` in `login_step.rs`).
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
    let Some((record, elapsed, remaining)) = held(noted, cooldown, now) else {
        return Ok(());
    };
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

/// The hold-off of callers without a terminal (an IDE, a dashboard that polls): while the
/// failed login `noted`, started by such a caller (abandoned, timed out), is less than
/// `holdoff` (`--login-holdoff`, minutes) before `now`, they fail at once instead of opening
/// another tab that nobody may be looking at. A person acts to end it: `kubecred login`, or
/// kubectl in a terminal (whose login replaces the note).
pub(super) fn hold_off(
    noted: Option<&Note>,
    holdoff: Duration,
    now: DateTime<Utc>,
) -> anyhow::Result<()> {
    let Some((record, elapsed, remaining)) = held(noted, holdoff, now) else {
        return Ok(());
    };
    Err(transient(
        Exit::Login,
        format!(
            "a browser login for this cluster started without a terminal was not completed {} ago ({}); callers without a terminal open no other tab for {} (--login-holdoff) — run `kubecred login` with the same flags, or kubectl in a terminal, to log in now",
            crate::duration::display_elapsed(elapsed),
            summary(&record.reason),
            crate::duration::display_whole_seconds(remaining),
        ),
    ))
}

/// The note `noted`, how long ago it was made and how long is left of `wait` after it; `None`
/// when nothing holds a login off (no note, no wait, or the wait is over).
fn held(
    noted: Option<&Note>,
    wait: Duration,
    now: DateTime<Utc>,
) -> Option<(&Note, Duration, Duration)> {
    if wait.is_zero() {
        return None;
    }
    let record = noted?;
    // A record from the future means the clock was set back: its age is unknown, and it
    // must not stretch the wait beyond `wait`, so it is ignored.
    let Ok(elapsed) = now.signed_duration_since(record.at).to_std() else {
        debug!(
            1,
            "ignoring a failed-login record dated in the future ({})", record.at
        );
        return None;
    };
    let remaining = wait.checked_sub(elapsed).filter(|left| !left.is_zero())?;
    debug!(1, "last failed login: {}", record.reason);
    Some((record, elapsed, remaining))
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
    fn a_caller_without_a_terminal_is_held_off_for_the_holdoff_not_the_cooldown() {
        let note = Note::new(REASON, at(0));
        let ten_minutes = Duration::from_secs(600);
        let err = hold_off(Some(&note), ten_minutes, at(90)).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert_eq!(
            err.to_string(),
            "a browser login for this cluster started without a terminal was not completed \
             1m30s ago (no login completed within 180s (--auth-timeout)); callers without a \
             terminal open no other tab for 8m30s (--login-holdoff) — run `kubecred login` \
             with the same flags, or kubectl in a terminal, to log in now"
        );
        // Past the cool-down, still held off; at the hold-off's end, or with none, free.
        check(Some(&note), THIRTY, at(90)).unwrap();
        hold_off(Some(&note), ten_minutes, at(600)).unwrap();
        hold_off(Some(&note), Duration::ZERO, at(90)).unwrap();
        hold_off(None, ten_minutes, at(90)).unwrap();
    }

    #[test]
    fn a_record_from_the_future_is_ignored() {
        let note = Note::new(REASON, at(3600));
        check(Some(&note), THIRTY, at(0)).unwrap();
    }
}
