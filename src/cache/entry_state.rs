//! What kubecred remembers about one cache entry besides its tokens, in one private file beside
//! it (`<cache_dir>/state/<key>.json`): the interactive login that failed (the cool-down,
//! `acquire/cooldown.rs`), the refresh token the provider refused (the cached token is then
//! handed out without a login until it runs out), and how the background renewal fared
//! (`acquire/renew_ahead.rs`: its back-off, and on Windows the renewal a hit has just started).
//! What the notes mean is decided there; this module keeps the file.
//!
//! One type, [`EntryState`]. One reader, [`StateFile::read`], which drops every note older
//! than the tokens it is read for: a note about tokens that have since been replaced says
//! nothing about the new ones. One writer, [`StateFile::update`], which `TokenCache::update_state`
//! calls with the entry's lock held, so that a read-modify-write never loses a parallel run's
//! note. The cache clears the file when it saves new tokens and removes it with the entry
//! (`TokenCache::save`, `TokenCache::remove`): no caller has to remember to.
//!
//! Best effort in every direction: a note that cannot be written is only logged (the failure it
//! is about matters more), and one that cannot be read is no note. Nothing here may stop a valid
//! token from being handed out.

use super::CacheKey;
use crate::fs::private_file;
use crate::text::printable_brief;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A state file is a few hundred bytes; anything much larger is not ours.
const MAX_STATE_BYTES: u64 = 16 * 1024;

/// The suffix of the state file: `<cache_dir>/state/<key>.json`.
const SUFFIX: &str = "json";

/// Everything noted about one entry. Every note is optional; the default is "nothing noted".
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EntryState {
    /// An interactive login failed (or was abandoned) at this time: the cool-down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_failed: Option<Note>,
    /// The login of `login_failed` was started without a terminal (an IDE, a dashboard): callers
    /// without one open no other browser tab for `--login-holdoff` (`acquire/cooldown.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub login_without_terminal: bool,
    /// When a desktop notification about this entry was raised: at most one per
    /// `--login-holdoff` (`acquire/desktop_notice.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified_at: Option<DateTime<Utc>>,
    /// The provider refused the entry's refresh token (`invalid_grant`); it has been dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_refused: Option<Note>,
    /// How the background renewal of the current tokens went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal: Option<RenewalNote>,
}

/// Something that happened at a time, and why; the reason is one printable line without
/// secrets (error messages never hold one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Note {
    pub at: DateTime<Utc>,
    pub reason: String,
}

impl Note {
    pub(crate) fn new(reason: &str, at: DateTime<Utc>) -> Note {
        Note {
            at,
            reason: printable_brief(reason.trim(), 500).into_owned(),
        }
    }
}

/// The background renewal of the entry's current tokens.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RenewalNote {
    /// A hit handed a renewal to a background process at this time (Windows only, where the
    /// entry's lock cannot be handed down with it): the hits after it start no other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    /// The last background renewal failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<RenewalFailure>,
}

/// A failed background renewal and when the next one may start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RenewalFailure {
    #[serde(flatten)]
    pub note: Note,
    /// Failed renewals of these tokens in a row, this one included.
    pub attempts: u32,
    /// When the next background renewal may start; `None`: not again for these tokens (the
    /// provider refused, or there is nothing to renew with). The foreground renews them when
    /// they run out, where a person can act on what went wrong.
    pub retry_at: Option<DateTime<Utc>>,
}

/// The state file of one entry.
#[derive(Debug, Clone)]
pub(super) struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// The state file of the entry `key` in the cache directory `dir`.
    pub(super) fn of(dir: &Path, key: &CacheKey) -> StateFile {
        StateFile {
            path: dir.join("state").join(format!("{key}.{SUFFIX}")),
        }
    }

    #[cfg(test)]
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The notes that concern tokens obtained at `tokens_obtained_at` (`None`: no tokens, every
    /// note counts): each note dated before them is dropped. A missing or unreadable file is an
    /// empty state.
    pub(super) fn read(&self, tokens_obtained_at: Option<DateTime<Utc>>) -> EntryState {
        let mut state = match private_file::read_json::<EntryState>(&self.path, MAX_STATE_BYTES) {
            Ok(state) => state,
            Err(private_file::ReadError::NotFound) => return EntryState::default(),
            Err(err) => {
                crate::debug!(1, "ignoring {}: {err}", self.path.display());
                return EntryState::default();
            }
        };
        // The file is ours, but is shown on a terminal: keep every reason one safe line.
        for note in state.notes_mut() {
            note.reason = printable_brief(&note.reason, 500).into_owned();
        }
        if let Some(obtained_at) = tokens_obtained_at {
            state.forget_before(obtained_at);
        }
        state
    }

    /// Changes the notes (the caller holds the entry's lock): `change` gets what is on file (all
    /// of it, old notes included) and edits it; an empty result removes the file.
    pub(super) fn update(&self, change: impl FnOnce(&mut EntryState)) {
        let mut state = self.read(None);
        change(&mut state);
        if state == EntryState::default() {
            self.clear();
            return;
        }
        let written = serde_json::to_vec(&state)
            .map_err(std::io::Error::other)
            .and_then(|json| {
                private_file::write_private(private_file::root_of(&self.path)?, &self.path, &json)
            });
        if let Err(err) = written {
            crate::debug!(1, "could not note in {}: {err}", self.path.display());
        }
    }

    /// Forgets every note: tokens were saved, and the notes were about the ones they replace.
    /// A missing file is fine; other problems are only logged.
    pub(super) fn clear(&self) {
        if let Err(err) = private_file::remove_if_exists(&self.path) {
            crate::debug!(1, "could not remove {}: {err}", self.path.display());
        }
    }

    /// Removes every trace of the notes (`logout`): the file, and what an interrupted writer
    /// left beside it.
    pub(super) fn remove_all(&self) {
        if let Err(err) = private_file::remove_with_leftovers(&self.path) {
            crate::debug!(1, "could not remove {}: {err}", self.path.display());
        }
    }
}

impl EntryState {
    fn notes_mut(&mut self) -> impl Iterator<Item = &mut Note> {
        let renewal_note = self
            .renewal
            .as_mut()
            .and_then(|renewal| renewal.failed.as_mut())
            .map(|failed| &mut failed.note);
        self.login_failed
            .as_mut()
            .into_iter()
            .chain(self.refresh_refused.as_mut())
            .chain(renewal_note)
    }

    /// Drops what happened before tokens obtained at `obtained_at`.
    fn forget_before(&mut self, obtained_at: DateTime<Utc>) {
        let current = |at: &DateTime<Utc>| *at >= obtained_at;
        self.login_failed = self.login_failed.take().filter(|note| current(&note.at));
        self.login_without_terminal &= self.login_failed.is_some();
        self.notified_at = self.notified_at.filter(current);
        self.refresh_refused = self.refresh_refused.take().filter(|note| current(&note.at));
        if let Some(renewal) = &mut self.renewal {
            renewal.started_at = renewal.started_at.filter(current);
            renewal.failed = renewal.failed.take().filter(|f| current(&f.note.at));
            if renewal.started_at.is_none() && renewal.failed.is_none() {
                self.renewal = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::fs;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    fn file_in(dir: &tempfile::TempDir) -> StateFile {
        StateFile {
            path: dir.path().join("state").join("entry.json"),
        }
    }

    fn failure(reason: &str, when: i64, retry: Option<i64>) -> RenewalNote {
        RenewalNote {
            started_at: None,
            failed: Some(RenewalFailure {
                note: Note::new(reason, at(when)),
                attempts: 1,
                retry_at: retry.map(at),
            }),
        }
    }

    #[test]
    fn notes_round_trip_and_an_empty_state_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        assert_eq!(file.read(None), EntryState::default());
        file.update(|state| {
            state.login_failed = Some(Note::new("denied", at(10)));
            state.renewal = Some(failure("invalid_client", 20, Some(30)));
        });
        let state = file.read(Some(at(0)));
        assert_eq!(state.login_failed.unwrap().reason, "denied");
        assert_eq!(
            state.renewal.unwrap().failed.unwrap().retry_at,
            Some(at(30))
        );
        file.update(|state| *state = EntryState::default());
        assert!(!file.path().exists());
    }

    #[test]
    fn notes_older_than_the_tokens_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        file.update(|state| {
            state.login_failed = Some(Note::new("abandoned", at(10)));
            state.refresh_refused = Some(Note::new("invalid_grant", at(30)));
            state.renewal = Some(failure("server_error", 10, Some(40)));
        });
        let state = file.read(Some(at(20)));
        assert_eq!(state.login_failed, None);
        assert_eq!(state.renewal, None);
        assert_eq!(state.refresh_refused.unwrap().reason, "invalid_grant");
        // Read for nothing in particular (the writer): everything.
        assert!(file.read(None).login_failed.is_some());
    }

    #[test]
    fn clear_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        file.clear(); // Nothing there: fine.
        file.remove_all();
        file.update(|state| {
            state.login_failed = Some(Note::new("denied", at(10)));
        });
        file.clear();
        assert!(!file.path().exists());
    }

    #[test]
    fn a_corrupt_or_huge_file_is_no_state() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        file.update(|state| {
            state.login_failed = Some(Note::new("denied", at(10)));
        });
        fs::write(file.path(), b"{not json").unwrap();
        assert_eq!(file.read(None), EntryState::default());
        fs::write(file.path(), vec![b' '; 100_000]).unwrap();
        assert_eq!(file.read(None), EntryState::default());
        // The next update starts afresh rather than failing.
        file.update(|state| {
            state.refresh_refused = Some(Note::new("invalid_grant", at(10)));
        });
        assert!(file.read(None).refresh_refused.is_some());
    }

    #[test]
    fn reasons_are_kept_on_one_printable_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        file.update(|state| {
            state.login_failed = Some(Note::new("first line\nsecond \x1b[31mline", at(0)));
        });
        assert_eq!(
            file.read(None).login_failed.unwrap().reason,
            "first line second  [31mline"
        );
        // Even when someone wrote the file by hand.
        fs::write(
            file.path(),
            r#"{"refresh_refused":{"at":"2027-01-15T08:00:00Z","reason":"a\nb"}}"#,
        )
        .unwrap();
        assert_eq!(file.read(None).refresh_refused.unwrap().reason, "a b");
    }

    #[cfg(unix)]
    #[test]
    fn the_file_and_its_new_directory_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(&dir);
        let state = file.path().parent().unwrap();
        fs::create_dir(state).unwrap();
        fs::set_permissions(state, fs::Permissions::from_mode(0o755)).unwrap();
        file.update(|state| {
            state.login_failed = Some(Note::new("denied", at(0)));
        });
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(state), 0o700);
        // Only the file is left behind: the temporary file was renamed over it.
        assert_eq!(fs::read_dir(state).unwrap().count(), 1);
    }
}
