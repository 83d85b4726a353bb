//! 401 recovery: telling client-go's re-run after a 401 from an ordinary run, cheaply.
//!
//! When the API server answers 401, client-go runs the plugin again at once, but cannot say why;
//! a plugin that answers from its cache hands back the same rejected token until it expires
//! (the key was rotated, the session revoked, the clocks disagree). kubecred recognises the
//! re-run: the same parent process asking again, within [`RERUN_WINDOW`] of the hand-out, for
//! the very entry file it was handed — and then refreshes once.
//!
//! The hand-out record is the entry file's modification time, set on the descriptor the cache
//! hit already has open (`futimens`): seconds = when, nanoseconds = [`mark`] of the parent. This
//! adds one system call to the hit and no file open or read (the hit's `fstat` already returns
//! the time); a new entry file (any save) has a new time, so a stamp always names the token in
//! that file. Bounds, so that a client that legitimately runs the plugin twice costs at most one
//! refresh and a server that rejects every token causes no loop:
//! - only a run by a client (`KUBERNETES_EXEC_INFO` set) and only the same parent process
//!   (`std::os::unix::process::parent_id`);
//! - the file's stamp must be this parent's, from at most [`RERUN_WINDOW`] ago;
//! - a token handed out after a refresh (a forced one, or any new token) is stamped as such and
//!   is never force-refreshed for the same parent;
//! - a token younger than [`MIN_AGE`] is not refreshed again: one forced refresh per entry per
//!   [`MIN_AGE`] at most, whatever the parents;
//! - a re-run at or after the expiry the parent was handed (a token in its last 30 s is printed
//!   as expiring at once, `tokens::printed_expiry`) is the client renewing an expired
//!   credential, not a 401: served, not refreshed;
//! - a forced refresh that fails (provider unreachable) hands out the cached token after all,
//!   stamped so that this parent does not try again: a re-run never costs a valid credential.
//!
//! PID reuse could make a new process look like an old parent; that needs the same PID again
//! within [`RERUN_WINDOW`] asking for the same entry, and costs one refresh: not worth a read of
//! `/proc/<ppid>/stat` on every hit. Parallel hits by different parents overwrite each other's
//! stamp (the last one wins), so in a storm a 401 may go unrecognised: recovery is best effort.

use chrono::{DateTime, Duration, Utc};

/// How soon after a hand-out the same parent's next run counts as its re-run after a 401.
/// client-go re-runs as soon as the 401 arrives, which is one request after the hand-out.
pub const RERUN_WINDOW: Duration = Duration::seconds(10);

/// A token younger than this is not refreshed on a re-run.
pub const MIN_AGE: Duration = Duration::seconds(10);

/// What a cache hit does about the hand-out record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OnHit {
    /// Print the cached credential; stamp the entry with this mark (`None`: leave it).
    Serve { stamp: Option<u32> },
    /// The parent was handed this token moments ago and asks again: refresh once.
    Refresh,
}

/// The parent process to record, for a run by a client; `None` otherwise (no record, no
/// recognition). An orphan (parent 1) has no parent worth recording.
pub(super) fn parent(run_by_client: bool) -> Option<u32> {
    if !run_by_client {
        return None;
    }
    #[cfg(unix)]
    {
        Some(std::os::unix::process::parent_id()).filter(|&pid| pid > 1)
    }
    #[cfg(not(unix))]
    None
}

/// The nanoseconds of a stamp: the parent's PID, and whether the token was handed out right
/// after a refresh. PIDs are below 2^22 on Linux, so a mark is below 10^9 as nanoseconds must be,
/// and never 0 (the nanoseconds of a file system that stores whole seconds).
pub(super) fn mark(parent: u32, after_refresh: bool) -> u32 {
    parent.wrapping_mul(2) + u32::from(after_refresh)
}

/// What a hit on an entry whose file carries `stamp` does, for `parent`, at `now`; the token was
/// obtained at `obtained_at` and really expires at `expiry`.
pub(super) fn judge(
    stamp: Option<(i64, u32)>,
    parent: u32,
    now: DateTime<Utc>,
    obtained_at: DateTime<Utc>,
    expiry: DateTime<Utc>,
) -> OnHit {
    let Some((seconds, nanos)) = stamp else {
        return OnHit::Serve { stamp: None };
    };
    let now_s = now.timestamp();
    let recent = (now_s - RERUN_WINDOW.num_seconds()..=now_s + 1).contains(&seconds);
    if recent && nanos == mark(parent, true) {
        // Already refreshed for this parent (or new to it): never a second time.
        return OnHit::Serve { stamp: None };
    }
    // What the parent was told at the hand-out: past that, its re-run is for the expiry.
    let told_expiry = DateTime::from_timestamp(seconds, 0).map_or(expiry, |handed_out| {
        crate::tokens::printed_expiry(expiry, handed_out)
    });
    if recent && nanos == mark(parent, false) && now - obtained_at >= MIN_AGE && now < told_expiry {
        return OnHit::Refresh;
    }
    OnHit::Serve {
        stamp: Some(mark(parent, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    fn stamp(seconds: i64, parent: u32, after_refresh: bool) -> Option<(i64, u32)> {
        Some((at(seconds).timestamp(), mark(parent, after_refresh)))
    }

    const P: u32 = 4242;
    const OLD: i64 = -600;
    /// An expiry an hour ahead.
    const FAR: DateTime<Utc> = DateTime::from_timestamp(1_800_003_600, 0).unwrap();

    #[test]
    fn the_same_parent_asking_again_soon_gets_one_refresh() {
        assert_eq!(
            judge(stamp(0, P, false), P, at(2), at(OLD), FAR),
            OnHit::Refresh
        );
    }

    #[test]
    fn a_first_hand_out_is_stamped_and_served() {
        let serve_and_stamp = OnHit::Serve {
            stamp: Some(mark(P, false)),
        };
        // A file never stamped (its time is when it was written).
        assert_eq!(
            judge(Some((at(0).timestamp(), 123)), P, at(1), at(OLD), FAR),
            serve_and_stamp
        );
        // Another parent's hand-out.
        assert_eq!(
            judge(stamp(0, 77, false), P, at(1), at(OLD), FAR),
            serve_and_stamp
        );
        // This parent, but long ago (a PID reused, or a long-lived client's next call).
        assert_eq!(
            judge(stamp(-60, P, false), P, at(0), at(OLD), FAR),
            serve_and_stamp
        );
    }

    #[test]
    fn the_bounds_hold() {
        // A token handed out after a refresh is not refreshed again for this parent.
        assert_eq!(
            judge(stamp(0, P, true), P, at(2), at(OLD), FAR),
            OnHit::Serve { stamp: None }
        );
        // A young token is not refreshed, whoever asks.
        assert_eq!(
            judge(stamp(0, P, false), P, at(2), at(-3), FAR),
            OnHit::Serve {
                stamp: Some(mark(P, false))
            }
        );
        // Told at the hand-out that the token expires at once (its last 30 s): the re-run is
        // for that, not a 401.
        let soon = at(20);
        assert_eq!(
            judge(stamp(0, P, false), P, at(2), at(OLD), soon),
            OnHit::Serve {
                stamp: Some(mark(P, false))
            }
        );
        // Told it lasts until 40 - 30 = 10: a re-run before that is suspicious, one after not.
        let later = at(40);
        assert_eq!(
            judge(stamp(0, P, false), P, at(9), at(OLD), later),
            OnHit::Refresh
        );
        assert_ne!(
            judge(stamp(0, P, false), P, at(10), at(OLD), later),
            OnHit::Refresh
        );
        // No file, no record.
        assert_eq!(
            judge(None, P, at(0), at(OLD), FAR),
            OnHit::Serve { stamp: None }
        );
        // A mark is a valid nanosecond count for the largest Linux PID.
        assert!(mark(4_194_304, true) < 1_000_000_000);
        assert_ne!(mark(2, false), 0);
    }
}
