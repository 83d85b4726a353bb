//! A note that something failed, and why, kept beside a cache entry (`state/<key>.<what>`): the
//! failed login behind the cool-down (`cooldown.rs`), and the failed background renewal that
//! `kubecred status` and `-v` show (`renew_ahead.rs`).
//!
//! Best effort in every direction: a note that cannot be written is only logged (the failure's
//! own error matters more), and one that cannot be read is no note.

use crate::debug;
use crate::private_file;
use crate::text::printable_brief;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::PathBuf;

/// A note is a few hundred bytes; anything much larger is not ours.
const MAX_NOTE_BYTES: u64 = 8 * 1024;

/// Where one kind of failure of one cache entry is noted.
#[derive(Debug, Clone)]
pub(crate) struct FailureNote {
    path: PathBuf,
}

/// What a note holds.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Failure {
    pub failed_at: DateTime<Utc>,
    /// One printable line, without secrets (error messages never hold one).
    pub reason: String,
}

impl FailureNote {
    pub(crate) fn new(path: impl Into<PathBuf>) -> Self {
        FailureNote { path: path.into() }
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Notes a failure at `now`. `reason` is shown to the user later: it must not contain a
    /// secret (error messages never do).
    pub(crate) fn record(&self, reason: &str, now: DateTime<Utc>) {
        let failure = Failure {
            failed_at: now,
            reason: printable_brief(reason.trim(), 500).into_owned(),
        };
        if let Err(err) = self.write(&failure) {
            debug!(
                1,
                "could not note the failure in {}: {err}",
                self.path.display()
            );
        }
    }

    /// The failure on file, if any.
    pub(crate) fn read(&self) -> Option<Failure> {
        let problem = match private_file::read_json::<Failure>(&self.path, MAX_NOTE_BYTES) {
            Ok(mut failure) => {
                // The file is ours, but is still shown on a terminal: keep it one safe line.
                failure.reason = printable_brief(&failure.reason, 500).into_owned();
                return Some(failure);
            }
            Err(private_file::ReadError::NotFound) => return None,
            Err(private_file::ReadError::Corrupt(reason)) => format!("corrupt ({reason})"),
            Err(private_file::ReadError::Foreign(reason)) => format!("not ours ({reason})"),
            Err(private_file::ReadError::Io(err)) => format!("unreadable ({err})"),
        };
        debug!(1, "ignoring {}: {problem}", self.path.display());
        None
    }

    /// Forgets the failure. A missing note is fine; other problems are only logged.
    pub(crate) fn clear(&self) {
        match fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => debug!(1, "could not remove {}: {err}", self.path.display()),
        }
    }

    /// Writes the note atomically (a temporary file renamed over it), readable by the user only,
    /// so that parallel runs never read half a note. The `state/` directory is created, or
    /// tightened if it exists looser, like the token cache's own directories.
    fn write(&self, failure: &Failure) -> io::Result<()> {
        let json = serde_json::to_vec(failure).map_err(io::Error::other)?;
        private_file::write_private(private_file::root_of(&self.path)?, &self.path, &json)
    }
}
