//! What each `--cache-storage` does with an entry: `auto` and `disk` keep a private file (in
//! `auto` the refresh token goes to the OS keyring when one is reachable), `keyring` keeps the
//! whole entry in the keyring, `none` keeps nothing. [`for_storage`] is the one place that
//! chooses; every backend reads and writes through the [`TokenCache`]'s paths and keyring.

use super::store::Os;
use super::stored_entry::{RefreshPlace, StoredEntry, StoredRefresh};
use super::{TokenCache, keyring_failed, sessions};
use crate::config::CacheStorage;
use crate::fs::private_file;
use crate::secret::Secret;
use crate::tokens::Tokens;

/// One way of keeping entries.
pub(super) trait Backend: std::fmt::Debug + Sync {
    fn load(&self, cache: &TokenCache) -> anyhow::Result<Option<StoredEntry>>;
    fn save(&self, cache: &TokenCache, tokens: &Tokens) -> anyhow::Result<()>;
    fn remove(&self, cache: &TokenCache) -> anyhow::Result<()>;
    /// Whether entries are kept at all (and so need a lock).
    fn keeps_entries(&self) -> bool {
        true
    }
    /// Whether entries are files under the cache directory (`auto`, `disk`).
    fn keeps_files(&self) -> bool {
        false
    }
}

/// The backend of a `--cache-storage` setting.
pub(super) fn for_storage(storage: CacheStorage) -> &'static dyn Backend {
    match storage {
        CacheStorage::Auto => &Files {
            refresh_in_keyring: true,
        },
        CacheStorage::Disk => &Files {
            refresh_in_keyring: false,
        },
        CacheStorage::Keyring => &WholeEntryInKeyring,
        CacheStorage::None => &Nothing,
    }
}

/// `none`: nothing is loaded, saved or removed, and nothing is locked.
#[derive(Debug)]
struct Nothing;

impl Backend for Nothing {
    fn load(&self, _: &TokenCache) -> anyhow::Result<Option<StoredEntry>> {
        Ok(None)
    }

    fn save(&self, _: &TokenCache, _: &Tokens) -> anyhow::Result<()> {
        Ok(())
    }

    fn remove(&self, _: &TokenCache) -> anyhow::Result<()> {
        Ok(())
    }

    fn keeps_entries(&self) -> bool {
        false
    }
}

/// `auto` (`refresh_in_keyring`) and `disk`: the entry is a private file.
#[derive(Debug)]
struct Files {
    refresh_in_keyring: bool,
}

impl Backend for Files {
    fn load(&self, cache: &TokenCache) -> anyhow::Result<Option<StoredEntry>> {
        cache.read_entry_file()
    }

    fn keeps_files(&self) -> bool {
        true
    }

    fn save(&self, cache: &TokenCache, tokens: &Tokens) -> anyhow::Result<()> {
        let previous = cache.previous_refresh_location();
        let refresh_token = match &tokens.refresh_token {
            Some(token) if self.refresh_in_keyring => token,
            _ => {
                cache.write_entry_file(&StoredEntry::with_refresh_inside(
                    tokens,
                    cache.about(tokens),
                ))?;
                cache.forget_stale_keyring_refresh(previous, None);
                return Ok(());
            }
        };
        match cache.keyring.set(&cache.refresh_account(), refresh_token) {
            Ok(store) => {
                cache.write_entry_file(&StoredEntry::new(
                    tokens,
                    StoredRefresh::Keyring { store },
                    cache.about(tokens),
                ))?;
                cache.forget_stale_keyring_refresh(previous, Some(store));
            }
            Err(failure) => {
                cache.write_entry_file(&StoredEntry::with_refresh_inside(
                    tokens,
                    cache.about(tokens),
                ))?;
                // Say it once: when the entry did not already keep its refresh token in the file,
                // and once a run for the same reason (convert-kubeconfig saves one entry a user).
                let summary = failure.summary(Os::current(), "the refresh token");
                if previous != Some(RefreshPlace::Entry) && first_said_in_this_run(&summary) {
                    crate::log::notice(format!(
                        "{summary}; keeping the refresh token in the private file {}",
                        cache.entry_path().display()
                    ));
                }
                cache.forget_stale_keyring_refresh(previous, None);
            }
        }
        Ok(())
    }

    fn remove(&self, cache: &TokenCache) -> anyhow::Result<()> {
        let previous = cache.previous_refresh_location();
        cache.remove_entry_file()?;
        match previous {
            Some(RefreshPlace::Keyring(store)) => cache
                .keyring
                .delete_from(store, &cache.refresh_account())
                .map_err(|failure| {
                    crate::error::fail(
                        crate::error::Exit::Cache,
                        format!(
                            "cannot delete the refresh token: {}; then run kubecred logout again",
                            failure.message(Os::current(), "its deletion")
                        ),
                    )
                }),
            Some(_) => Ok(()),
            None if self.refresh_in_keyring => {
                // No readable file says where the refresh token went: clean up what an earlier
                // save may have left, without insisting.
                let _ = cache.keyring.delete_everywhere(&cache.refresh_account());
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// Whether `reason` is said for the first time in this process: a run that saves several
/// entries with the keyring out of reach says so once, not once per entry.
fn first_said_in_this_run(reason: &str) -> bool {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.iter().any(|earlier| earlier == reason) {
        return false;
    }
    said.push(reason.to_string());
    true
}

/// `keyring`: the whole entry is one OS keyring item (account `<key>`); nothing on disk but the
/// secret-free index (and on Windows the DPAPI-protected file that is the item).
#[derive(Debug)]
struct WholeEntryInKeyring;

impl Backend for WholeEntryInKeyring {
    fn load(&self, cache: &TokenCache) -> anyhow::Result<Option<StoredEntry>> {
        let Some((json, store)) = cache
            .keyring
            .find(cache.key.as_str())
            .map_err(|failure| keyring_failed(&failure))?
        else {
            return Ok(None);
        };
        match StoredEntry::parse(json.expose().as_bytes()) {
            Ok(entry) => Ok(Some(entry)),
            Err(reason) => {
                crate::debug!(
                    1,
                    "ignoring the cache entry {} in the {}: {reason}",
                    cache.key,
                    store.name()
                );
                Ok(None)
            }
        }
    }

    fn save(&self, cache: &TokenCache, tokens: &Tokens) -> anyhow::Result<()> {
        let json = StoredEntry::with_refresh_inside(tokens, cache.about(tokens)).to_json();
        let json = String::from_utf8(json).expect("serde_json writes UTF-8");
        let store = cache
            .keyring
            .set(cache.key.as_str(), &Secret::new(json))
            .map_err(|failure| keyring_failed(&failure))?;
        crate::debug!(1, "saved cache entry {} in the {}", cache.key, store.name());
        // The keyring cannot be listed: a secret-free index file lets `status` and
        // `logout --all` find the entry (sessions.rs).
        sessions::write_keyring_index(cache, tokens, store);
        // "Nothing on disk": drop a file an earlier `auto`/`disk` run left with tokens in it.
        if let Err(err) = private_file::remove_with_leftovers(&cache.entry_path()) {
            crate::debug!(
                1,
                "cannot delete the old cache file {}: {err}",
                cache.entry_path().display()
            );
        }
        Ok(())
    }

    fn remove(&self, cache: &TokenCache) -> anyhow::Result<()> {
        cache
            .keyring
            .delete_everywhere(cache.key.as_str())
            .map_err(|failure| keyring_failed(&failure))?;
        let _ = cache.keyring.delete_everywhere(&cache.refresh_account());
        // A file left from another storage mode (or a killed writer) would otherwise still
        // hold tokens.
        let _ = private_file::remove_with_leftovers(&cache.entry_path());
        let _ =
            private_file::remove_if_exists(&sessions::keyring_index_path(&cache.dir, &cache.key));
        Ok(())
    }
}
