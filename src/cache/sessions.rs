//! The cache's entries as a list, for `kubecred status` and `kubecred logout --all`: what each
//! is for (issuer, client, account, subject), where it lives, how long its tokens last, whether
//! it holds a refresh token and what is noted about it ([`Session::state`]) — never a token.
//!
//! A file entry (`auto`, `disk`) is `tokens/<key>.json`. A `keyring` entry lives only in the OS
//! keyring, which cannot be listed (the keyring crate looks items up by name only), so its save
//! also writes `keyring/<key>.json`: a secret-free index record with the same descriptive fields
//! and expiries. It is written and removed with the keyring item; it is what `status` shows, as of
//! the last save (a kernel keyring forgets its items at reboot; the next get-token logs in).

use super::entry_state::{EntryState, StateFile};
use super::keyring_store::item_location;
use super::store::{Os, Store};
use super::stored_entry::{EntryAbout, RefreshPlace, StoredEntry};
use super::{CacheKey, TokenCache, read_entry_file};
use crate::fs::private_file::{self, ReadError};
use crate::tokens::Tokens;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where an entry is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionPlace {
    /// A private file under the cache directory (`auto`, `disk`).
    File,
    /// A whole OS keyring item (`keyring`).
    Keyring { store: Store },
}

/// One cached entry as `status` shows it: no secret in it.
#[derive(Debug, Clone)]
pub struct Session {
    pub key: CacheKey,
    pub place: SessionPlace,
    /// `None`: the entry (or a `keyring` entry's index record) could not be read, and
    /// `unreadable` says why.
    pub about: Option<EntryAbout>,
    pub id_token_expiry: Option<DateTime<Utc>>,
    pub access_token_expiry: Option<DateTime<Utc>>,
    pub obtained_at: Option<DateTime<Utc>>,
    pub refresh_token: RefreshPlace,
    /// Why the entry could not be read (corrupt, another version); it is still listed, and
    /// `logout --all` still removes it.
    pub unreadable: Option<String>,
}

impl Session {
    /// What is noted about the entry's current tokens (`dir`: the cache root; see
    /// [`TokenCache::state`]).
    pub(crate) fn state(&self, dir: &Path) -> EntryState {
        StateFile::of(dir, &self.key).read(self.obtained_at)
    }
}

/// One place that holds some of an entry's tokens, for `status`: which tokens, in which store
/// (`None`: the plain private file), and where that is in the platform's terms (a path, or the
/// keyring item's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretPiece {
    /// `all_tokens`, `id_and_access_tokens` or `refresh_token`.
    pub holds: &'static str,
    pub store: Option<Store>,
    pub location: String,
}

/// Where `session`'s tokens are (`dir`: the cache root), as written by the last save.
pub fn secrets_of(dir: &Path, session: &Session) -> Vec<SecretPiece> {
    let os = Os::current();
    let key = session.key.as_str();
    let file = || {
        dir.join("tokens")
            .join(format!("{key}.json"))
            .display()
            .to_string()
    };
    match (session.place, session.refresh_token) {
        (SessionPlace::Keyring { store }, _) => vec![SecretPiece {
            holds: "all_tokens",
            store: Some(store),
            location: item_location(store, os, dir, key),
        }],
        (SessionPlace::File, RefreshPlace::Keyring(store)) => vec![
            SecretPiece {
                holds: "id_and_access_tokens",
                store: None,
                location: file(),
            },
            SecretPiece {
                holds: "refresh_token",
                store: Some(store),
                location: item_location(store, os, dir, &format!("{key}:refresh")),
            },
        ],
        (SessionPlace::File, RefreshPlace::Entry) => vec![SecretPiece {
            holds: "all_tokens",
            store: None,
            location: file(),
        }],
        (SessionPlace::File, RefreshPlace::None) => vec![SecretPiece {
            holds: "id_and_access_tokens",
            store: None,
            location: file(),
        }],
    }
}

/// The index record of a `keyring` entry (`keyring/<key>.json`).
#[derive(Serialize, Deserialize)]
struct KeyringIndex {
    v: u32,
    store: Store,
    about: EntryAbout,
    #[serde(default)]
    id_token_expiry: Option<DateTime<Utc>>,
    #[serde(default)]
    access_token_expiry: Option<DateTime<Utc>>,
    obtained_at: DateTime<Utc>,
    has_refresh_token: bool,
}

const INDEX_VERSION: u32 = 1;
const MAX_INDEX_BYTES: u64 = 64 * 1024;

pub(super) fn keyring_index_path(dir: &Path, key: &CacheKey) -> PathBuf {
    dir.join("keyring").join(format!("{key}.json"))
}

/// Records a `keyring` entry that was just saved in `store`. Best effort: the entry itself is
/// saved; without the record only `status` and `logout --all` miss it (a logout with the same
/// settings still finds it), so a failure is logged, not fatal.
pub(super) fn write_keyring_index(cache: &TokenCache, tokens: &Tokens, store: Store) {
    let record = KeyringIndex {
        v: INDEX_VERSION,
        store,
        about: cache.about(tokens),
        id_token_expiry: tokens.id_token_expiry,
        access_token_expiry: tokens.access_token_expiry,
        obtained_at: tokens.obtained_at,
        has_refresh_token: tokens.refresh_token.is_some(),
    };
    let path = keyring_index_path(&cache.dir, &cache.key);
    let json = serde_json::to_vec(&record).expect("the index record serializes");
    if let Err(err) = private_file::write_private(&cache.dir, &path, &json) {
        crate::log::notice(format!(
            "cannot write {} ({err}); kubecred status will not list this keyring entry",
            path.display()
        ));
    }
}

/// Every entry under `dir`: files first, then keyring entries, each sorted by key. Reads only
/// the cache directory (no keyring call). A missing directory is an empty list.
pub fn list_sessions(dir: &Path) -> anyhow::Result<Vec<Session>> {
    let mut sessions = Vec::new();
    for (key, path) in keyed_files(&dir.join("tokens"))? {
        sessions.push(match read_entry_file(&path) {
            Ok(entry) => from_entry(key, entry),
            Err(reason) => unreadable(key, SessionPlace::File, reason),
        });
    }
    for (key, path) in keyed_files(&dir.join("keyring"))? {
        let record = private_file::read(&path, MAX_INDEX_BYTES).and_then(|bytes| {
            serde_json::from_slice::<KeyringIndex>(&bytes)
                .map_err(|err| ReadError::Corrupt(err.to_string()))
        });
        sessions.push(match record {
            Ok(record) => from_index(key, record),
            // Without the record the store is unknown: any store is searched on removal.
            Err(reason) => unreadable(
                key,
                SessionPlace::Keyring {
                    store: Store::platform_stores()
                        .first()
                        .copied()
                        .unwrap_or(Store::Native),
                },
                reason,
            ),
        });
    }
    Ok(sessions)
}

/// The `<key>.json` files of `dir`, sorted by key; other names (temporary files, strays) are
/// not entries and are skipped.
fn keyed_files(dir: &Path) -> anyhow::Result<Vec<(CacheKey, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(crate::error::fail(
                crate::error::Exit::Cache,
                format!(
                    "cannot list {}: {err}; check its permissions or pass --cache-dir",
                    dir.display()
                ),
            ));
        }
    };
    let mut found: Vec<(CacheKey, PathBuf)> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let key = CacheKey::from_file_stem(name.to_str()?.strip_suffix(".json")?)?;
            Some((key, entry.path()))
        })
        .collect();
    found.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    Ok(found)
}

fn from_entry(key: CacheKey, entry: StoredEntry) -> Session {
    let about = entry.about.clone();
    let (tokens, refresh) = entry.into_tokens();
    Session {
        key,
        place: SessionPlace::File,
        about: Some(about),
        id_token_expiry: tokens.id_token_expiry,
        access_token_expiry: tokens.access_token_expiry,
        obtained_at: Some(tokens.obtained_at),
        refresh_token: refresh,
        unreadable: None,
    }
}

fn from_index(key: CacheKey, record: KeyringIndex) -> Session {
    Session {
        key,
        place: SessionPlace::Keyring {
            store: record.store,
        },
        about: Some(record.about),
        id_token_expiry: record.id_token_expiry,
        access_token_expiry: record.access_token_expiry,
        obtained_at: Some(record.obtained_at),
        refresh_token: if record.has_refresh_token {
            RefreshPlace::Entry
        } else {
            RefreshPlace::None
        },
        unreadable: None,
    }
}

fn unreadable(key: CacheKey, place: SessionPlace, reason: ReadError) -> Session {
    let reason = reason.to_string();
    Session {
        key,
        place,
        about: None,
        id_token_expiry: None,
        access_token_expiry: None,
        obtained_at: None,
        refresh_token: RefreshPlace::None,
        unreadable: Some(reason),
    }
}
