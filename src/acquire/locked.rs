//! One entry under its lock, as read after taking it: the one type the miss path, the renewal
//! and login steps and the background renewal work on, for an entry of its own and for a shared
//! login's entry alike. Taking the lock and reading go together (another process may have
//! refreshed while this one waited), so nothing works on an entry it read before locking.

use crate::cache::{Cached, EntryLock, EntryState, TokenCache};
use crate::tokens::Tokens;
use std::time::Duration;

/// An entry under its lock, with what it held when read.
pub(super) struct Locked<'c> {
    pub(super) cache: &'c TokenCache,
    pub(super) lock: EntryLock,
    pub(super) cached: Option<Cached>,
}

impl<'c> Locked<'c> {
    /// Takes the entry's lock (waiting at most `timeout`) and reads the entry.
    pub(super) fn open(cache: &'c TokenCache, timeout: Duration) -> anyhow::Result<Locked<'c>> {
        let lock = cache.lock(timeout)?;
        Locked::read(cache, lock)
    }

    /// Takes the entry's lock if nobody holds it (`None`: somebody does) and reads the entry:
    /// for the background, which never waits.
    pub(super) fn try_open(cache: &'c TokenCache) -> anyhow::Result<Option<Locked<'c>>> {
        let Some(lock) = cache.try_lock()? else {
            return Ok(None);
        };
        Locked::read(cache, lock).map(Some)
    }

    fn read(cache: &'c TokenCache, lock: EntryLock) -> anyhow::Result<Locked<'c>> {
        let cached = cache.load()?;
        Ok(Locked {
            cache,
            lock,
            cached,
        })
    }

    /// Reads the entry under `lock`, already held (the background renewal's, handed down). An
    /// entry that cannot be read is none here: the background has nothing to renew, and the
    /// foreground says why when the token runs out.
    pub(super) fn read_as_held(cache: &'c TokenCache, lock: EntryLock) -> Locked<'c> {
        let cached = cache.load().unwrap_or_default();
        Locked {
            cache,
            lock,
            cached,
        }
    }

    /// Reads the entry again (after this run changed it through another path).
    pub(super) fn reload(&mut self) -> anyhow::Result<()> {
        self.cached = self.cache.load()?;
        Ok(())
    }

    /// What is noted about the entry's current tokens (all notes, without tokens).
    pub(super) fn state(&self) -> EntryState {
        self.cache
            .state(self.cached.as_ref().map(|cached| cached.tokens.obtained_at))
    }

    /// Saves tokens the foreground just obtained and is about to hand out. A login (or refresh)
    /// that succeeded is never lost to the cache: when they cannot be kept, one warning says
    /// why, and they are handed out all the same; only failing to obtain a token fails the run.
    pub(super) fn keep(&self, tokens: &Tokens) {
        if let Err(err) = self.cache.save(tokens, &self.lock) {
            crate::log::notice(format!(
                "warning: the new token is handed out but not cached: {}",
                crate::error::one_line(&err)
            ));
        }
    }
}
