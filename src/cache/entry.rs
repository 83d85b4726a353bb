//! Which entries a configuration's tokens live in, described once from the settings: the key,
//! what the entry records about itself, where it is stored. [`TokenCache`](super::TokenCache) is
//! handed an [`Entry`] and never sees the settings.
//!
//! A plain configuration has one entry. A `--shared-login` cluster has two: its derived entry,
//! which holds the cluster's access token alone and names the login it was derived from, and the
//! shared login's entry, which holds the refresh token every cluster's token is derived from and
//! records the targets that login was granted. Both keys are computed here, the login's first
//! (the derived key is made from it), so nothing rebuilds the login's entry from the settings.

use super::{CacheKey, EntryAbout};
use crate::config::{CacheStorage, Config};
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

/// The entries a configuration's tokens live in.
#[derive(Debug, Clone)]
pub struct Entries {
    /// The entry kubectl's token is read from on a hit: the configuration's own, or a shared
    /// login cluster's derived entry.
    pub token: Entry,
    /// A shared login's entry, which `token` is derived from (`None` without `--shared-login`).
    pub login: Option<Entry>,
}

impl Entries {
    /// The entries `config`'s tokens live in. On the hit path: one hash for a plain entry, two
    /// for a shared login's cluster (the login's key, and the derived key from it).
    pub fn of(config: &Config) -> Entries {
        let entry = |key, about| Entry {
            key,
            about,
            storage: config.cache.storage,
            dir: config.cache.dir.clone(),
        };
        let Some(shared) = &config.shared_login else {
            return Entries {
                token: entry(CacheKey::for_settings(config), about_settings(config)),
                login: None,
            };
        };
        let login_key = CacheKey::for_settings(config);
        let derived_about = EntryAbout {
            grant: format!("{} (shared login)", shared.derive.name()),
            audience: Some(shared.target.audience().to_string()),
            resource: shared.target.resource().map(str::to_string),
            derived_from: Some(login_key.to_string()),
            ..about_settings(config)
        };
        let derived_key = CacheKey::derived(&login_key, shared);
        Entries {
            token: entry(derived_key, derived_about),
            login: Some(entry(login_key, about_settings(config))),
        }
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
