//! The token cache: where tokens live between kubectl runs, and the lock that makes parallel runs
//! refresh once.
//!
//! Every kubectl process runs the plugin at least once, so the cache hit is the hot path: in the
//! default `auto` storage it is ONE read of a small private file, with no keyring call and no other
//! I/O. The short-lived ID/access tokens live in that file (`<cache_dir>/tokens/<key>.json`, 0600);
//! the long-lived refresh token goes to the OS keyring when one takes it — it is only needed
//! to refresh — and otherwise stays in the same private file, which then says so. `disk` keeps
//! everything in the file, `keyring` everything in the keyring, `none` nothing anywhere. On
//! Windows "the OS keyring" is a DPAPI-protected file (`protected_file.rs`), behind the same
//! interface as the keyring crate's stores (`store.rs`, `keyring_store.rs`).
//! [`TokenCache::new`] is the one place that turns `--cache-storage` into a backend
//! (`backends.rs`); the stored form of an entry is `stored_entry.rs`.
//!
//! One entry per [`CacheKey`] (`key.rs`): a hash of everything that changes which token the
//! provider issues. The entry holds both the ID and the access token, so the kind printed is not
//! part of the key. A cache is opened on an [`Entry`], described once from the settings
//! (`entry.rs`, [`Entry::of`]): its key, what it records about itself, where it is kept. A
//! shared login (`--shared-login`) is one entry for the login (recording the targets it was
//! granted) and one per cluster target holding only that cluster's access token (recording the
//! login it was derived from): `acquire/shared.rs` derives them.
//!
//! Every file of an entry is the cache's: its tokens (a file, or keyring items and the
//! secret-free index of `sessions.rs`), its lock (`lock.rs`) and its state, what is noted about
//! it besides its tokens (`entry_state.rs`: a failed login, a refused refresh token, the
//! background renewal's back-off). Saving new tokens clears the state, removing the entry
//! removes it; what the notes mean is for `acquire/` to decide.
//!
//! Writers hold the entry's [`EntryLock`] (every writing method takes it as a parameter); readers
//! on the hit path do not need it, because files are replaced atomically. After taking the lock a
//! caller should [`load`](TokenCache::load) again: another process may have refreshed meanwhile.

mod backends;
mod entry;
mod entry_state;
mod key;
mod keyring_store;
mod lock;
mod protected_file;
mod sessions;
mod store;
mod store_failure;
mod stored_entry;
#[cfg(test)]
mod tests;

pub use entry::Entry;
pub(crate) use entry_state::{EntryState, Note, RenewalFailure, RenewalNote};
pub use key::CacheKey;

pub use lock::EntryLock;
pub use sessions::{SecretPiece, Session, SessionPlace, list_sessions, secrets_of};
pub use store::Store;
pub use stored_entry::{EntryAbout, RefreshPlace};

use crate::config::CacheStorage;
use crate::error::{Exit, fail};
use crate::fs::private_file::{self, ReadError};
use crate::secret::Secret;
use crate::tokens::Tokens;
use backends::Backend;
use chrono::{DateTime, Utc};
use entry_state::StateFile;
use keyring_store::Keyring;
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::Os;
use stored_entry::StoredEntry;

/// An entry larger than this is not one kubecred wrote (ID tokens are a few KB).
const MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// A loaded entry. `tokens.refresh_token` is `None` when the refresh token is in the OS keyring:
/// [`TokenCache::refresh_token`] fetches it from wherever it is.
#[derive(Debug, Clone)]
pub struct Cached {
    pub tokens: Tokens,
    refresh: RefreshPlace,
    /// What the entry says it is for.
    pub about: EntryAbout,
}

impl Cached {
    /// Whether the entry has a refresh token (possibly in the keyring), without fetching it.
    pub fn has_refresh_token(&self) -> bool {
        self.refresh != RefreshPlace::None
    }
}

/// The cache of one configuration's tokens. Building it is cheap and does no I/O.
#[derive(Debug, Clone)]
pub struct TokenCache {
    storage: CacheStorage,
    backend: &'static dyn Backend,
    dir: PathBuf,
    key: CacheKey,
    keyring: Keyring,
    /// Set when the cache directory cannot be used (created, written): the run goes on without
    /// the cache, warned about once, rather than lose the credential it obtains.
    dir_unusable: std::cell::Cell<bool>,
    /// The entry file the last [`load`](TokenCache::load) read, still open: its modification
    /// time carries the hand-out stamp (see `acquire/hand_out.rs`), set without a new open.
    last_read: std::cell::RefCell<Option<std::rc::Rc<private_file::OpenedFile>>>,
    /// What a save records about the entry (the subject is filled from the tokens). `None` only
    /// for a cache opened from a listed entry ([`TokenCache::for_session`]), which is never
    /// saved: the listing may not say what the entry is for (an unreadable one is listed too).
    /// A shared login's entry records what its login holds, which only the token path knows
    /// ([`TokenCache::set_record`]).
    about: std::cell::RefCell<Option<EntryAbout>>,
}

impl TokenCache {
    /// The cache of `entry`. Its description ([`Entry::of`], [`Entry::shared`]) is made once from the settings;
    /// the cache never sees them.
    pub fn new(entry: Entry) -> TokenCache {
        TokenCache::of_entry(entry.storage, &entry.dir, entry.key, Some(entry.about))
    }

    /// What this cache's saves record about the entry from now on: a finished record, made by
    /// the token path (a shared login's entry: what its login was granted, and refused since).
    pub fn set_record(&self, about: EntryAbout) {
        *self.about.borrow_mut() = Some(about);
    }

    /// What this cache's saves record about the entry (`None` for a listed entry's).
    pub fn record(&self) -> Option<EntryAbout> {
        self.about.borrow().clone()
    }

    /// The cache of an entry that [`list_sessions`] found (`logout --all`), with the backend that
    /// wrote it, whatever the current settings would choose. `auto` removes a `disk` entry too.
    /// It is only loaded and removed, never saved (it records nothing about the entry).
    pub fn for_session(dir: &Path, session: &Session) -> TokenCache {
        let storage = match session.place {
            SessionPlace::File => CacheStorage::Auto,
            SessionPlace::Keyring { .. } => CacheStorage::Keyring,
        };
        TokenCache::of_entry(storage, dir, session.key.clone(), None)
    }

    /// The entry `key` under the cache root `dir`, kept as `storage` says.
    fn of_entry(
        storage: CacheStorage,
        dir: &Path,
        key: CacheKey,
        about: Option<EntryAbout>,
    ) -> TokenCache {
        TokenCache {
            storage,
            backend: backends::for_storage(storage),
            dir: dir.to_path_buf(),
            key,
            keyring: Keyring::new(dir),
            dir_unusable: std::cell::Cell::new(false),
            last_read: std::cell::RefCell::new(None),
            about: std::cell::RefCell::new(about),
        }
    }

    /// What to record about an entry holding `tokens`.
    fn about(&self, tokens: &Tokens) -> EntryAbout {
        let mut about = self
            .record()
            .expect("a cache opened from a listing is only removed, never saved");
        about.subject = crate::tokens::display_subject(tokens);
        about
    }

    pub fn key(&self) -> &CacheKey {
        &self.key
    }

    /// The cache root (`--cache-dir`): every file below it is private ([`private_file`]).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn storage(&self) -> CacheStorage {
        self.storage
    }

    /// The cache file of this entry (`<cache_dir>/tokens/<key>.json`); it may not exist.
    pub fn entry_path(&self) -> PathBuf {
        self.dir.join("tokens").join(format!("{}.json", self.key))
    }

    /// The lock file of this entry (`<cache_dir>/locks/<key>.lock`); it may not exist.
    pub fn lock_path(&self) -> PathBuf {
        self.dir.join("locks").join(format!("{}.lock", self.key))
    }

    /// The state file of this entry (`<cache_dir>/state/<key>.json`); it may not exist.
    #[cfg(all(test, unix))]
    pub(crate) fn state_path(&self) -> PathBuf {
        self.state_file().path().to_path_buf()
    }

    fn state_file(&self) -> StateFile {
        StateFile::of(&self.dir, &self.key)
    }

    /// What is noted about this entry's tokens obtained at `tokens_obtained_at` (`None`: no
    /// tokens, every note counts): notes older than them are about tokens they replaced, and
    /// are left out. A missing or unreadable state is an empty one.
    pub(crate) fn state(&self, tokens_obtained_at: Option<DateTime<Utc>>) -> EntryState {
        self.state_file().read(tokens_obtained_at)
    }

    /// Changes what is noted about this entry: `change` gets every note on file and edits it.
    /// Best effort: a note that cannot be written is logged at `-v`.
    pub(crate) fn update_state(&self, _lock: &EntryLock, change: impl FnOnce(&mut EntryState)) {
        self.state_file().update(change);
    }

    /// The cache-hit path. In `auto` and `disk` storage: ONE small file read, no keyring call, no
    /// other I/O. In `keyring` storage: one keyring read. `Ok(None)` on a miss; an entry that is
    /// corrupt or from an unknown format version is a miss too (and the next save replaces it).
    pub fn load(&self) -> anyhow::Result<Option<Cached>> {
        Ok(self.backend.load(self)?.map(|entry| {
            let about = entry.about.clone();
            let (tokens, refresh) = entry.into_tokens();
            Cached {
                tokens,
                refresh,
                about,
            }
        }))
    }

    /// The refresh token of a loaded entry, fetched from the OS keyring if that is where it is.
    ///
    /// `Ok(None)` when there is none — also when the keyring lost it (the kernel keyring forgets
    /// everything at reboot) or cannot be reached now: then a notice says so, and the caller logs
    /// in again rather than failing.
    pub fn refresh_token(
        &self,
        cached: &Cached,
        _lock: &EntryLock,
    ) -> anyhow::Result<Option<Secret>> {
        let store = match cached.refresh {
            RefreshPlace::None => return Ok(None),
            RefreshPlace::Entry => return Ok(cached.tokens.refresh_token.clone()),
            RefreshPlace::Keyring(store) => store,
        };
        match self.keyring.get_from(store, &self.refresh_account()) {
            Ok(Some(token)) => Ok(Some(token)),
            Ok(None) => {
                crate::debug!(
                    1,
                    "the refresh token of cache entry {} is no longer in the {}",
                    self.key,
                    store.name()
                );
                Ok(None)
            }
            Err(failure) => {
                crate::log::notice(format!(
                    "{}; a new login is needed",
                    failure.summary(Os::current(), "the refresh token")
                ));
                Ok(None)
            }
        }
    }

    /// Saves `tokens`, replacing the entry; it has completed (and is on disk) when this returns,
    /// so call it before printing the credential. What was noted about the entry goes with the
    /// tokens it was about ([`TokenCache::state`]) — also when they cannot be written: the
    /// notes were about tokens these replace, and a cool-down left behind by a login that
    /// succeeded would hold off the next one for nothing.
    ///
    /// `tokens.refresh_token` is stored as given: when the provider did not send a new refresh
    /// token, the caller must carry the old one over (from [`TokenCache::refresh_token`]), or the
    /// entry loses it.
    ///
    /// An error says why the entry could not be kept; a caller holding tokens it just obtained
    /// should hand them out all the same (a login is never lost to the cache).
    pub fn save(&self, tokens: &Tokens, lock: &EntryLock) -> anyhow::Result<()> {
        let written = self.write(tokens, lock);
        self.state_file().clear();
        written
    }

    /// After a refresh whose answer was of no other use: the provider may have rotated the
    /// refresh token all the same, and the one `sent` is then spent (reusing it can revoke the
    /// whole grant), so the entry's `tokens` are saved again with the `answered` one. They are
    /// the same tokens, so what is noted about them stays. Nothing to do when the answer had no
    /// refresh token or the one sent.
    pub(crate) fn save_rotated_refresh_token(
        &self,
        tokens: &Tokens,
        sent: &Secret,
        answered: Option<Secret>,
        lock: &EntryLock,
    ) -> anyhow::Result<()> {
        let Some(rotated) = answered.filter(|answered| answered != sent) else {
            return Ok(());
        };
        let kept = Tokens {
            refresh_token: Some(rotated),
            ..tokens.clone()
        };
        self.rewrite(&kept, lock)
    }

    /// Writes the entry's `tokens` again, with what this cache records about it now (a changed
    /// record, or a rotated refresh token): they are the same tokens, so what is noted about
    /// them stays. `tokens` must carry the refresh token (from [`TokenCache::refresh_token`]),
    /// or the entry loses it.
    pub(crate) fn rewrite(&self, tokens: &Tokens, lock: &EntryLock) -> anyhow::Result<()> {
        self.write(tokens, lock)
    }

    fn write(&self, tokens: &Tokens, _lock: &EntryLock) -> anyhow::Result<()> {
        // `lock` said so once ("the token is not cached"). Without the lock no store is written
        // either: the DPAPI store lives in that directory, and a write without the lock could
        // overwrite a parallel run's newer entry.
        if self.dir_unusable.get() {
            crate::debug!(1, "not caching the token: the cache directory is unusable");
            return Ok(());
        }
        self.backend.save(self, tokens)
    }

    /// Drops the entry, wherever its parts are, and what was noted about it: after a refused
    /// refresh token left nothing usable, or on `kubecred logout`.
    pub fn remove(&self, _lock: &EntryLock) -> anyhow::Result<()> {
        self.backend.remove(self)?;
        self.state_file().remove_all();
        Ok(())
    }

    /// Takes this entry's lock if nobody holds it, without waiting (`None`: someone does). With
    /// `--cache-storage none` there is nothing to lock, and `None` too: nothing to renew.
    pub fn try_lock(&self) -> anyhow::Result<Option<EntryLock>> {
        if !self.backend.keeps_entries() {
            return Ok(None);
        }
        // The lock creates (or tightens) its private directory itself.
        EntryLock::try_acquire(&self.dir, &self.lock_path())
    }

    /// Takes this entry's cross-process lock, waiting at most `timeout`. With `--cache-storage
    /// none` there is nothing to protect: no file is created and nothing waits.
    pub fn lock(&self, timeout: Duration) -> anyhow::Result<EntryLock> {
        if !self.backend.keeps_entries() {
            return Ok(EntryLock::none());
        }
        let locks = self.lock_path();
        let locks = locks.parent().unwrap_or(&self.dir);
        let entry = self.entry_path();
        let entries = entry.parent().unwrap_or(&self.dir);
        // The entries' directory too, where it exists and the storage keeps files there: one of
        // another user's is refused now, before a login whose tokens it could not keep. (Any
        // other trouble with it is the write's to report: the login is handed out regardless.)
        let ensured = private_file::ensure_private_dir(&self.dir, locks).and_then(|()| {
            if !self.backend.keeps_files() {
                return Ok(());
            }
            private_file::check_private_dirs(&self.dir, entries).or_else(|err| {
                if private_file::is_foreign(&err) {
                    Err(err)
                } else {
                    Ok(())
                }
            })
        });
        match ensured {
            Ok(()) => EntryLock::acquire(&self.dir, &self.lock_path(), timeout),
            Err(err) if private_file::is_foreign(&err) => Err(refusing_the_directory(&err)),
            // A directory that cannot be made (read-only, full, under a file): the credential
            // still reaches kubectl, uncached, with one warning. Parallel runs then each talk to
            // the provider, which is what `--cache-storage none` does too.
            Err(err) => {
                crate::log::notice(format_args!(
                    "cannot use the cache directory {} ({err}); the token is not cached — fix its permissions or pass --cache-dir",
                    self.dir.display()
                ));
                self.dir_unusable.set(true);
                Ok(EntryLock::none())
            }
        }
    }

    /// The keyring account of this entry's refresh token in `auto` storage.
    fn refresh_account(&self) -> String {
        format!("{}:refresh", self.key)
    }

    /// The modification time (seconds, nanoseconds) of the entry file the last load read: the
    /// hand-out stamp. `None` when the entry is not a file (`keyring`, `none`) or was not read.
    pub fn loaded_stamp(&self) -> Option<(i64, u32)> {
        self.last_read.borrow().as_ref().map(|file| file.modified)
    }

    /// Sets the hand-out stamp of the entry file the last load read, on its open descriptor (no
    /// path lookup: a file renamed over it meanwhile is not touched). Best effort.
    pub fn set_loaded_stamp(&self, seconds: i64, nanos: u32) {
        if let Some(file) = self.last_read.borrow().as_ref()
            && !file.set_modified(seconds, nanos)
        {
            crate::debug!(2, "could not stamp the cache entry {}", self.key);
        }
    }

    /// Sets the hand-out stamp of the entry file now on disk (after a save). Best effort.
    pub fn set_entry_stamp(&self, seconds: i64, nanos: u32) {
        if self.backend.keeps_files() && !self.dir_unusable.get() {
            private_file::set_modified_at(&self.entry_path(), seconds, nanos);
        }
    }

    /// Reads the cache file; a missing or corrupt file is a miss.
    fn read_entry_file(&self) -> anyhow::Result<Option<StoredEntry>> {
        let path = self.entry_path();
        let read =
            private_file::read_keeping_open(&path, MAX_ENTRY_BYTES).and_then(|(bytes, file)| {
                let entry = StoredEntry::parse(&bytes).map_err(ReadError::Corrupt)?;
                *self.last_read.borrow_mut() = Some(std::rc::Rc::new(file));
                Ok(entry)
            });
        match read {
            Ok(entry) => {
                // The directories it was read through must be ours too: one `stat` each (the
                // hit's only file calls besides the entry's), a loose one tightened.
                let tokens = path.parent().unwrap_or(&self.dir);
                match private_file::check_private_dirs(&self.dir, tokens) {
                    Err(err) if private_file::is_foreign(&err) => Err(refusing_the_directory(&err)),
                    _ => Ok(Some(entry)),
                }
            }
            Err(ReadError::NotFound) => Ok(None),
            Err(ReadError::Corrupt(reason)) => {
                crate::debug!(1, "ignoring the cache file {}: {reason}", path.display());
                Ok(None)
            }
            Err(ReadError::Foreign(reason)) => Err(fail(
                Exit::Cache,
                format!(
                    "refusing the token cache file {}: {reason}; someone else may have planted it — delete it, and use a --cache-dir only you can write to",
                    path.display()
                ),
            )),
            Err(ReadError::Io(err)) => Err(fail(
                Exit::Cache,
                format!(
                    "cannot read the token cache file {}: {err}; fix its permissions or delete it",
                    path.display()
                ),
            )),
        }
    }

    fn write_entry_file(&self, entry: &StoredEntry) -> anyhow::Result<()> {
        let path = self.entry_path();
        // Closed first: Windows refuses to rename a file over one this process holds open (see
        // `atomic_file::Staged::commit`), and the stamp belongs to the new file (`set_entry_stamp`).
        self.last_read.borrow_mut().take();
        private_file::write_private(&self.dir, &path, &entry.to_json()).map_err(|err| {
            fail(
                Exit::Cache,
                format!(
                    "cannot write the token cache file {}: {err}; check the permissions of {}, or pass --cache-dir",
                    path.display(),
                    self.dir.display()
                ),
            )
        })
    }

    fn remove_entry_file(&self) -> anyhow::Result<()> {
        let path = self.entry_path();
        // Closed first: on Windows a file still open stays until its last handle goes.
        self.last_read.borrow_mut().take();
        private_file::remove_with_leftovers(&path)
            .map(|_| ())
            .map_err(|err| {
                fail(
                    Exit::Cache,
                    format!(
                        "cannot delete the token cache file {}: {err}; delete it by hand",
                        path.display()
                    ),
                )
            })
    }

    /// Where the current file says the refresh token is (`None`: no readable file). Read under the
    /// lock by writers, to clean up after themselves and to keep notices to one.
    fn previous_refresh_location(&self) -> Option<RefreshPlace> {
        read_entry_file(&self.entry_path())
            .ok()
            .map(|entry| entry.into_tokens().1)
    }

    /// Deletes a refresh token that an earlier save put in a keyring store that no longer holds
    /// it (`now`: the store that holds the current one). Best effort: a leftover is a stale token
    /// in the user's own keyring, and the save itself has succeeded.
    fn forget_stale_keyring_refresh(&self, previous: Option<RefreshPlace>, now: Option<Store>) {
        if let Some(RefreshPlace::Keyring(store)) = previous
            && Some(store) != now
            && let Err(reason) = self.keyring.delete_from(store, &self.refresh_account())
        {
            crate::debug!(
                1,
                "cannot delete the old refresh token from the keyring: {reason}"
            );
        }
    }
}

/// An item another program keeps in the OS keyring under `service` and `account` (int128/
/// kubelogin's token cache), read within the keyring's time bound like kubecred's own items.
/// `Ok(None)`: a store was reached and holds no such item; the error says why none was reached.
pub fn other_programs_keyring_item(service: &str, account: &str) -> Result<Option<Secret>, String> {
    // No DPAPI file of kubecred's is read (other programs' items are in the OS stores only), so
    // the cache root the client is given does not matter.
    Keyring::new(Path::new(""))
        .get_other_programs(service, account)
        .map(|found| found.map(Secret::new))
        .map_err(|failure| failure.to_string())
}

/// The tokens in the bytes of a cache entry (file or keyring item), as [`TokenCache::load`] reads
/// them; the error says why they are not an entry. For the fuzz targets (`crate::fuzzing`).
#[cfg(any(test, fuzzing))]
pub(crate) fn decode_entry(bytes: &[u8]) -> Result<Tokens, String> {
    StoredEntry::parse(bytes).map(|entry| entry.into_tokens().0)
}

fn read_entry_file(path: &Path) -> Result<StoredEntry, ReadError> {
    let bytes = private_file::read(path, MAX_ENTRY_BYTES)?;
    StoredEntry::parse(&bytes).map_err(ReadError::Corrupt)
}

/// The refusal of a directory in the cache path that belongs to another user
/// ([`private_file::is_foreign`]): they could swap entries under us.
fn refusing_the_directory(err: &std::io::Error) -> anyhow::Error {
    fail(
        Exit::Cache,
        format!("refusing the cache directory: {err}; pass a --cache-dir of your own"),
    )
}

/// The error of `--cache-storage keyring` when the keyring did not keep or give back the entry:
/// refused or out of reach, and what to do about it on this OS.
fn keyring_failed(failure: &store_failure::KeyringFailure) -> anyhow::Error {
    fail(
        Exit::Cache,
        failure.message(Os::current(), "the cache entry"),
    )
}
