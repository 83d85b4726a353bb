//! Which entries a configuration's tokens live in, described once from the settings: the key,
//! what the entry records about itself, where it is stored. [`TokenCache`](super::TokenCache) is
//! handed an [`Entry`] and never sees the settings; which entries a run uses is the token path's
//! to say (`acquire/source.rs`).
//!
//! A plain configuration has one entry. A `--shared-login` cluster has two: its derived entry,
//! which holds the cluster's access token alone and names the login it was derived from, and the
//! shared login's entry, which holds the refresh token every cluster's token is derived from and
//! records the targets that login was granted. Both keys are computed here, the login's first
//! (the derived key is made from it), so nothing rebuilds the login's entry from the settings.

use super::{CacheKey, EntryAbout};
use crate::config::{CacheStorage, Config, SharedLogin};
use std::path::PathBuf;

/// One cache entry: its key, what a save records about it, and where it is kept.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: CacheKey,
    /// What a save records (the subject is filled in from the tokens).
    pub about: EntryAbout,
    pub storage: CacheStorage,
    /// The cache root (`--cache-dir`).
    pub dir: PathBuf,
}

impl Entry {
    /// The entry of `config`'s own tokens (for a `--shared-login` cluster: its login's entry).
    /// On the hit path: one hash.
    pub fn of(config: &Config) -> Entry {
        Entry {
            key: CacheKey::for_settings(config),
            about: about_settings(config),
            storage: config.cache.storage,
            dir: config.cache.dir.clone(),
        }
    }

    /// A `--shared-login` cluster's two entries: its derived entry, keyed from the login's key
    /// (two hashes on the hit path), and the shared login's entry ([`Entry::of`]).
    pub fn shared(config: &Config, shared: &SharedLogin) -> (Entry, Entry) {
        let login = Entry::of(config);
        let derived = Entry {
            key: CacheKey::derived(&login.key, shared),
            about: EntryAbout {
                grant: format!("{} (shared login)", shared.derived_grant_name()),
                audience: Some(shared.target.audience().to_string()),
                resource: shared.target.resource().map(str::to_string),
                derived_from: Some(login.key.to_string()),
                ..about_settings(config)
            },
            storage: login.storage,
            dir: login.dir.clone(),
        };
        (derived, login)
    }
}

/// What an entry records of the settings `config` obtains it with (the subject is filled in
/// from the tokens when they are saved; a shared login's granted targets when they are known).
fn about_settings(config: &Config) -> EntryAbout {
    EntryAbout {
        issuer: config.issuer_as_given.clone(),
        client_id: config.client.id.clone(),
        account: config.account.clone(),
        subject: None,
        grant: config.grant.name().to_string(),
        scopes: config.scopes.clone(),
        audience: config.audience.clone(),
        resource: config.resource.clone(),
        granted: None,
        refused_targets: None,
        derived_from: None,
    }
}
