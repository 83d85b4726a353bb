//! The cool-down after a failed interactive login: for a short while (`--login-cooldown`,
//! 30 s by default) kubecred fails at once instead of opening another browser tab.
//!
//! kubectl may run a failing plugin several times in one command, and IDEs and dashboards call
//! it in the background; without this, one abandoned login turns into a storm of browser tabs.
//! The record is a [`FailureNote`] per cache entry (time and a one-line reason). A missing or
//! unreadable note means no cool-down: this is a courtesy, never a reason to lock someone out.

use super::failure_note::FailureNote;
use crate::debug;
use crate::error::{transient, Exit};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::time::Duration;

/// The failed-login note of one cache entry (`<cache_dir>/state/<key>.login-failed`).
#[derive(Debug, Clone)]
pub struct Cooldown {
    note: FailureNote,
}

impl Cooldown {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Cooldown {
            note: FailureNote::new(path),
        }
    }

    #[cfg(test)]
    pub fn path(&self) -> &std::path::Path {
        self.note.path()
    }

    /// Notes that a login failed at `now` (see [`FailureNote::record`]).
    pub fn record_failure(&self, reason: &str, now: DateTime<Utc>) {
        self.note.record(reason, now);
    }

    /// Fails while a failure recorded less than `cooldown` before `now` is on file.
    pub fn check(&self, cooldown: Duration, now: DateTime<Utc>) -> anyhow::Result<()> {
        if cooldown.is_zero() {
            return Ok(());
        }
        let Some(record) = self.note.read() else {
            return Ok(());
        };
        // A record from the future means the clock was set back: its age is unknown, and it
        // must not stretch the cool-down beyond `cooldown`, so it is ignored.
        let Ok(elapsed) = now.signed_duration_since(record.failed_at).to_std() else {
            debug!(
                1,
                "ignoring a failed-login record dated in the future ({})", record.failed_at
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

    /// Forgets the failure, after a successful login or a logout.
    pub fn clear(&self) {
        self.note.clear();
    }
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
    use std::fs;

    const THIRTY: Duration = Duration::from_secs(30);
    const REASON: &str =
        "no login completed within 180s (--auth-timeout); run `kubecred login` to try again";

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    fn cooldown_in(dir: &tempfile::TempDir) -> Cooldown {
        Cooldown::new(dir.path().join("state").join("entry.login-failed"))
    }

    #[test]
    fn no_record_no_cooldown() {
        let dir = tempfile::tempdir().unwrap();
        cooldown_in(&dir).check(THIRTY, at(0)).unwrap();
    }

    #[test]
    fn a_recent_failure_fails_at_once_and_says_how_long() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.record_failure(REASON, at(0));
        let err = cooldown.check(THIRTY, at(5)).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert_eq!(
            err.to_string(),
            "a login for this cluster failed 5s ago (no login completed within 180s (--auth-timeout)); \
             not opening another browser for 25s — run `kubecred login` with the same flags, \
             pass --force-refresh, or set KUBECRED_FORCE_REFRESH=1 for one kubectl command, \
             to retry now"
        );
        cooldown.check(THIRTY, at(30)).unwrap();
        cooldown.check(Duration::ZERO, at(5)).unwrap();
    }

    #[test]
    fn remaining_time_rounds_up() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.record_failure("denied", at(0));
        let later = at(10) + chrono::Duration::milliseconds(500);
        let message = cooldown.check(THIRTY, later).unwrap_err().to_string();
        assert!(
            message.contains("failed 10s ago (denied); not opening another browser for 20s"),
            "{message}"
        );
    }

    #[test]
    fn a_record_from_the_future_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.record_failure(REASON, at(3600));
        cooldown.check(THIRTY, at(0)).unwrap();
    }

    #[test]
    fn clear_forgets_and_tolerates_a_missing_record() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.clear();
        cooldown.record_failure(REASON, at(0));
        cooldown.clear();
        cooldown.check(THIRTY, at(1)).unwrap();
        assert!(!cooldown.path().exists());
    }

    #[test]
    fn a_corrupt_record_means_no_cooldown() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        fs::create_dir_all(cooldown.path().parent().unwrap()).unwrap();
        fs::write(cooldown.path(), b"{not json").unwrap();
        cooldown.check(THIRTY, at(0)).unwrap();
        fs::write(cooldown.path(), vec![b' '; 100_000]).unwrap();
        cooldown.check(THIRTY, at(0)).unwrap();
    }

    #[test]
    fn the_reason_is_kept_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.record_failure("first line\nsecond \x1b[31mline", at(0));
        let message = cooldown.check(THIRTY, at(1)).unwrap_err().to_string();
        assert!(
            message.contains("(first line second  [31mline)"),
            "{message}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_record_and_its_new_directory_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        cooldown.record_failure(REASON, at(0));
        let mode =
            |path: &std::path::Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(cooldown.path()), 0o600);
        assert_eq!(mode(cooldown.path().parent().unwrap()), 0o700);
        // Only the record is left behind: the temporary file was renamed over it.
        assert_eq!(
            fs::read_dir(cooldown.path().parent().unwrap())
                .unwrap()
                .count(),
            1
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_existing_loose_state_directory_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cooldown = cooldown_in(&dir);
        let state = cooldown.path().parent().unwrap();
        fs::create_dir(state).unwrap();
        fs::set_permissions(state, fs::Permissions::from_mode(0o755)).unwrap();
        cooldown.record_failure(REASON, at(0));
        assert_eq!(
            fs::metadata(state).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(cooldown.check(THIRTY, at(1)).is_err());
    }
}
