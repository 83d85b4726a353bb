//! The token cache: where tokens live between kubectl runs, and the lock that makes parallel runs
//! refresh once.
//!
//! Every kubectl process runs the plugin at least once, so the cache hit is the hot path: in the
//! default `auto` storage it is ONE read of a small private file, with no keyring call and no other
//! I/O. The short-lived ID/access tokens live in that file (`<cache_dir>/tokens/<key>.json`, 0600);
//! the long-lived refresh token goes to the OS keyring when one is reachable — it is only needed
//! to refresh — and otherwise stays in the same private file, which then says so. `disk` keeps
//! everything in the file, `keyring` everything in the keyring, `none` nothing anywhere.
//!
//! One entry per [`CacheKey`]: a hash of everything that changes which token the provider issues.
//! The entry holds both the ID and the access token, so the kind printed is not part of the key.
//!
//! Writers hold the entry's [`EntryLock`] (every writing method takes it as a parameter); readers
//! on the hit path do not need it, because files are replaced atomically. After taking the lock a
//! caller should [`load`](TokenCache::load) again: another process may have refreshed meanwhile.

mod keyring_store;
mod lock;

pub use lock::EntryLock;

use crate::config::{CacheStorage, Config};
use crate::digest::sha256_hex;
use crate::error::{fail, Exit};
use crate::private_file::{self, ReadError};
use crate::secret::Secret;
use crate::tokens::Tokens;
use keyring_store::{Keyring, Store};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the cache key material and of the stored entry. Bump it when either changes
/// meaning: old entries then read as corrupt (a miss) and are replaced.
const FORMAT_VERSION: u32 = 1;

/// An entry larger than this is not one kubecred wrote (ID tokens are a few KB).
const MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// Names one cache entry: lower-case hex SHA-256 over a canonical JSON of every setting that changes
/// the token the provider issues. Safe to show and to use as a file name; contains no secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

/// The key material. Field order is fixed by the struct, and JSON quoting keeps field boundaries
/// unambiguous (`"a b"+"c"` and `"a"+"b c"` encode differently). Lists that are sets are sorted.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    v: u32,
    issuer: &'a str,
    client_id: &'a str,
    /// A hash: the secret itself must not reach a file name or a log line, but a changed secret
    /// may be another client registration, so it changes the key.
    client_secret_sha256: Option<String>,
    scopes: Vec<&'a str>,
    grant: &'static str,
    audience: Option<&'a str>,
    resource: Option<&'a str>,
    auth_params: Vec<(&'a str, &'a str)>,
    login_hint: Option<&'a str>,
    /// Which provider we trust: tokens fetched while trusting another CA (or none) are not the same.
    ca_sha256: Vec<String>,
    insecure_skip_tls_verify: bool,
}

impl CacheKey {
    pub fn for_config(config: &Config) -> CacheKey {
        CacheKey(sha256_hex(canonical_key_material(config).as_bytes()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn canonical_key_material(config: &Config) -> String {
    let mut scopes: Vec<&str> = config.scopes.iter().map(String::as_str).collect();
    scopes.sort_unstable();
    scopes.dedup();
    let mut auth_params: Vec<(&str, &str)> = config
        .login
        .auth_params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    auth_params.sort_unstable();
    let mut ca_sha256: Vec<String> = config
        .http
        .tls
        .extra_ca_pems
        .iter()
        .map(|pem| sha256_hex(pem))
        .collect();
    ca_sha256.sort_unstable();
    ca_sha256.dedup();
    let material = KeyMaterial {
        v: FORMAT_VERSION,
        issuer: config.issuer.as_str(),
        client_id: &config.client.id,
        client_secret_sha256: config
            .client
            .secret
            .as_ref()
            .map(|secret| sha256_hex(secret.expose().as_bytes())),
        scopes,
        grant: config.grant.name(),
        audience: config.audience.as_deref(),
        resource: config.resource.as_deref(),
        auth_params,
        login_hint: config.login.login_hint.as_deref(),
        ca_sha256,
        insecure_skip_tls_verify: config.http.tls.insecure_skip_verify,
    };
    serde_json::to_string(&material).expect("the key material is plain strings")
}

/// What is stored for one entry: the cache file in `auto`/`disk`, the keyring item in `keyring`.
#[derive(Debug, Serialize, Deserialize)]
struct StoredEntry {
    v: u32,
    /// `tokens.refresh_token` is `None` unless `refresh` is [`RefreshAt::Entry`].
    tokens: Tokens,
    refresh: RefreshAt,
}

/// Where the refresh token of an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "kebab-case")]
enum RefreshAt {
    /// There is none (client credentials, or the provider issued none).
    None,
    /// In this entry, next to the other tokens.
    Entry,
    /// In an OS keyring item of its own (account `<key>:refresh`), in this store.
    Keyring { store: Store },
}

impl StoredEntry {
    /// The entry in `bytes`; the error says why they are not one (a miss, not a failure).
    fn parse(bytes: &[u8]) -> Result<StoredEntry, String> {
        let entry: StoredEntry = match serde_json::from_slice(bytes) {
            Ok(entry) => entry,
            Err(err) => {
                // Another format version has another shape: say so rather than name a field.
                #[derive(Deserialize)]
                struct Version {
                    v: u32,
                }
                return Err(match serde_json::from_slice::<Version>(bytes) {
                    Ok(Version { v }) if v != FORMAT_VERSION => {
                        format!("format version {v}, this kubecred reads version {FORMAT_VERSION}")
                    }
                    _ => format!("not a cache entry: {err}"),
                });
            }
        };
        if entry.v != FORMAT_VERSION {
            return Err(format!(
                "format version {}, this kubecred reads version {FORMAT_VERSION}",
                entry.v
            ));
        }
        let consistent = match entry.refresh {
            RefreshAt::Entry => entry.tokens.refresh_token.is_some(),
            RefreshAt::None | RefreshAt::Keyring { .. } => entry.tokens.refresh_token.is_none(),
        };
        if !consistent {
            return Err("the refresh token location does not match".into());
        }
        Ok(entry)
    }

    fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("tokens serialize to JSON")
    }
}

/// A loaded entry. `tokens.refresh_token` is `None` when the refresh token is in the OS keyring:
/// [`TokenCache::refresh_token`] fetches it from wherever it is.
#[derive(Debug, Clone)]
pub struct Cached {
    pub tokens: Tokens,
    refresh: RefreshAt,
}

impl Cached {
    /// Whether the entry has a refresh token (possibly in the keyring), without fetching it.
    pub fn has_refresh_token(&self) -> bool {
        self.refresh != RefreshAt::None
    }
}

/// The cache of one configuration's tokens. Building it is cheap and does no I/O.
#[derive(Debug, Clone)]
pub struct TokenCache {
    storage: CacheStorage,
    dir: PathBuf,
    key: CacheKey,
    keyring: Keyring,
}

impl TokenCache {
    pub fn new(config: &Config) -> TokenCache {
        TokenCache {
            storage: config.cache.storage,
            dir: config.cache.dir.clone(),
            key: CacheKey::for_config(config),
            keyring: Keyring::default(),
        }
    }

    pub fn key(&self) -> &CacheKey {
        &self.key
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

    /// A path for other per-entry state, `<cache_dir>/state/<key>.<suffix>` (the login module
    /// keeps its cool-down marker there). Creates nothing: the writer creates (or tightens) the
    /// directory with [`private_file::write_private`].
    pub fn state_path(&self, suffix: &str) -> PathBuf {
        self.dir
            .join("state")
            .join(format!("{}.{suffix}", self.key))
    }

    /// The cache-hit path. In `auto` and `disk` storage: ONE small file read, no keyring call, no
    /// other I/O. In `keyring` storage: one keyring read. `Ok(None)` on a miss; an entry that is
    /// corrupt or from another format version is a miss too (and the next save replaces it).
    pub fn load(&self) -> anyhow::Result<Option<Cached>> {
        let entry = match self.storage {
            CacheStorage::None => return Ok(None),
            CacheStorage::Auto | CacheStorage::Disk => self.read_disk_entry()?,
            CacheStorage::Keyring => self.read_keyring_entry()?,
        };
        Ok(entry.map(|entry| Cached {
            tokens: entry.tokens,
            refresh: entry.refresh,
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
        match cached.refresh {
            RefreshAt::None => Ok(None),
            RefreshAt::Entry => Ok(cached.tokens.refresh_token.clone()),
            RefreshAt::Keyring { store } => {
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
                    Err(reason) => {
                        let message = format!(
                            "cannot read the refresh token from the OS keyring ({reason}); a new login is needed"
                        );
                        crate::log::notice(message);
                        Ok(None)
                    }
                }
            }
        }
    }

    /// Saves `tokens`, replacing the entry; it has completed (and is on disk) when this returns,
    /// so call it before printing the credential.
    ///
    /// `tokens.refresh_token` is stored as given: when the provider did not send a new refresh
    /// token, the caller must carry the old one over (from [`TokenCache::refresh_token`]), or the
    /// entry loses it.
    pub fn save(&self, tokens: &Tokens, _lock: &EntryLock) -> anyhow::Result<()> {
        match self.storage {
            CacheStorage::None => Ok(()),
            CacheStorage::Disk => {
                let previous = self.previous_refresh_location();
                self.write_disk_entry(tokens.clone(), refresh_in_entry(tokens))?;
                self.forget_stale_keyring_refresh(previous, None);
                Ok(())
            }
            CacheStorage::Auto => self.save_auto(tokens),
            CacheStorage::Keyring => self.save_keyring(tokens),
        }
    }

    /// Drops the entry, wherever its parts are: after `invalid_grant`, or on `kubecred logout`.
    pub fn remove(&self, _lock: &EntryLock) -> anyhow::Result<()> {
        match self.storage {
            CacheStorage::None => Ok(()),
            CacheStorage::Auto | CacheStorage::Disk => {
                let previous = self.previous_refresh_location();
                self.remove_disk_entry()?;
                match previous {
                    Some(RefreshAt::Keyring { store }) => self
                        .keyring
                        .delete_from(store, &self.refresh_account())
                        .map_err(|reason| {
                            fail(
                                Exit::Cache,
                                format!(
                                    "cannot delete the refresh token from the OS keyring ({reason}); unlock the keyring and run kubecred logout again"
                                ),
                            )
                        }),
                    Some(_) => Ok(()),
                    None if self.storage == CacheStorage::Auto => {
                        // No readable file says where the refresh token went: clean up what an
                        // earlier save may have left, without insisting.
                        let _ = self.keyring.delete_everywhere(&self.refresh_account());
                        Ok(())
                    }
                    None => Ok(()),
                }
            }
            CacheStorage::Keyring => {
                self.keyring
                    .delete_everywhere(self.key.as_str())
                    .map_err(|reason| no_keyring(&reason))?;
                let _ = self.keyring.delete_everywhere(&self.refresh_account());
                // A file left from another storage mode would otherwise still hold tokens.
                let _ = private_file::remove_if_exists(&self.entry_path());
                Ok(())
            }
        }
    }

    /// Takes this entry's cross-process lock, waiting at most `timeout`. With `--cache-storage
    /// none` there is nothing to protect: no file is created and nothing waits.
    pub fn lock(&self, timeout: Duration) -> anyhow::Result<EntryLock> {
        match self.storage {
            CacheStorage::None => Ok(EntryLock::none()),
            _ => EntryLock::acquire(&self.lock_path(), timeout),
        }
    }

    fn refresh_account(&self) -> String {
        format!("{}:refresh", self.key)
    }

    fn save_auto(&self, tokens: &Tokens) -> anyhow::Result<()> {
        let previous = self.previous_refresh_location();
        let Some(refresh_token) = &tokens.refresh_token else {
            self.write_disk_entry(tokens.clone(), RefreshAt::None)?;
            self.forget_stale_keyring_refresh(previous, None);
            return Ok(());
        };
        match self.keyring.set(&self.refresh_account(), refresh_token) {
            Ok(store) => {
                let short_lived = Tokens {
                    refresh_token: None,
                    ..tokens.clone()
                };
                self.write_disk_entry(short_lived, RefreshAt::Keyring { store })?;
                self.forget_stale_keyring_refresh(previous, Some(store));
            }
            Err(reason) => {
                self.write_disk_entry(tokens.clone(), RefreshAt::Entry)?;
                // Say it once: when the entry did not already keep its refresh token in the file.
                if previous != Some(RefreshAt::Entry) {
                    crate::log::notice(format!(
                        "no OS keyring is reachable ({reason}); keeping the refresh token in the private file {}",
                        self.entry_path().display()
                    ));
                }
                self.forget_stale_keyring_refresh(previous, None);
            }
        }
        Ok(())
    }

    fn save_keyring(&self, tokens: &Tokens) -> anyhow::Result<()> {
        let entry = StoredEntry {
            v: FORMAT_VERSION,
            tokens: tokens.clone(),
            refresh: refresh_in_entry(tokens),
        };
        let json = String::from_utf8(entry.to_json()).expect("serde_json writes UTF-8");
        let store = self
            .keyring
            .set(self.key.as_str(), &Secret::new(json))
            .map_err(|reason| no_keyring(&reason))?;
        crate::debug!(1, "saved cache entry {} in the {}", self.key, store.name());
        // "Nothing on disk": drop a file an earlier `auto`/`disk` run left with tokens in it.
        if let Err(err) = private_file::remove_if_exists(&self.entry_path()) {
            crate::debug!(
                1,
                "cannot delete the old cache file {}: {err}",
                self.entry_path().display()
            );
        }
        Ok(())
    }

    /// Reads the cache file; a missing or corrupt file is a miss.
    fn read_disk_entry(&self) -> anyhow::Result<Option<StoredEntry>> {
        let path = self.entry_path();
        match read_entry_file(&path) {
            Ok(entry) => Ok(Some(entry)),
            Err(ReadError::NotFound) => Ok(None),
            Err(ReadError::Corrupt(reason)) => {
                crate::debug!(1, "ignoring the cache file {}: {reason}", path.display());
                Ok(None)
            }
            Err(ReadError::Io(err)) => Err(fail(
                Exit::Cache,
                format!(
                    "cannot read the token cache file {}: {err}; fix its permissions or delete it",
                    path.display()
                ),
            )),
        }
    }

    fn read_keyring_entry(&self) -> anyhow::Result<Option<StoredEntry>> {
        let Some((json, store)) = self
            .keyring
            .find(self.key.as_str())
            .map_err(|reason| no_keyring(&reason))?
        else {
            return Ok(None);
        };
        match StoredEntry::parse(json.expose().as_bytes()) {
            Ok(entry) => Ok(Some(entry)),
            Err(reason) => {
                crate::debug!(
                    1,
                    "ignoring the cache entry {} in the {}: {reason}",
                    self.key,
                    store.name()
                );
                Ok(None)
            }
        }
    }

    /// Where the current file says the refresh token is (`None`: no readable file). Read under the
    /// lock by writers, to clean up after themselves and to keep notices to one.
    fn previous_refresh_location(&self) -> Option<RefreshAt> {
        match read_entry_file(&self.entry_path()) {
            Ok(entry) => Some(entry.refresh),
            Err(_) => None,
        }
    }

    /// Deletes a refresh token that an earlier save put in a keyring store that no longer holds
    /// it (`now`: the store that holds the current one). Best effort: a leftover is a stale token
    /// in the user's own keyring, and the save itself has succeeded.
    fn forget_stale_keyring_refresh(&self, previous: Option<RefreshAt>, now: Option<Store>) {
        if let Some(RefreshAt::Keyring { store }) = previous {
            if Some(store) != now {
                if let Err(reason) = self.keyring.delete_from(store, &self.refresh_account()) {
                    crate::debug!(
                        1,
                        "cannot delete the old refresh token from the keyring: {reason}"
                    );
                }
            }
        }
    }

    fn write_disk_entry(&self, tokens: Tokens, refresh: RefreshAt) -> anyhow::Result<()> {
        let path = self.entry_path();
        let entry = StoredEntry {
            v: FORMAT_VERSION,
            tokens,
            refresh,
        };
        let cannot = |err: std::io::Error| {
            fail(
                Exit::Cache,
                format!(
                    "cannot write the token cache file {}: {err}; check the permissions of {}, or pass --cache-dir",
                    path.display(),
                    self.dir.display()
                ),
            )
        };
        private_file::write_private(&path, &entry.to_json()).map_err(cannot)
    }

    fn remove_disk_entry(&self) -> anyhow::Result<()> {
        let path = self.entry_path();
        private_file::remove_if_exists(&path)
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
}

fn read_entry_file(path: &Path) -> Result<StoredEntry, ReadError> {
    let bytes = private_file::read(path, MAX_ENTRY_BYTES)?;
    StoredEntry::parse(&bytes).map_err(ReadError::Corrupt)
}

fn refresh_in_entry(tokens: &Tokens) -> RefreshAt {
    if tokens.refresh_token.is_some() {
        RefreshAt::Entry
    } else {
        RefreshAt::None
    }
}

fn no_keyring(reason: &keyring_store::Unreachable) -> anyhow::Error {
    fail(
        Exit::Cache,
        format!(
            "no OS keyring is reachable ({reason}); use --cache-storage disk, or start a keyring (a Secret Service such as gnome-keyring)"
        ),
    )
}

#[cfg(test)]
pub(super) mod tests {
    //! Helpers here are shared with the keyring tests in `keyring_store.rs`.
    use super::*;
    use crate::cli::{Cli, Command as CliCommand};
    use crate::config::Environment;
    use crate::exec_credential::ExecInfo;
    use chrono::{DateTime, Utc};
    use clap::Parser;
    use std::collections::HashSet;

    pub(super) fn config_from(extra: &[String]) -> Config {
        let mut argv = vec!["kubecred".to_string(), "get-token".to_string()];
        argv.extend_from_slice(extra);
        let args = match Cli::try_parse_from(argv).unwrap().command {
            CliCommand::GetToken(args) => args,
            _ => unreachable!(),
        };
        Config::resolve(&args, &Environment::default(), ExecInfo::absent()).unwrap()
    }

    pub(super) fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// Unique per call, so that tests sharing a real keyring never share an entry.
    pub(super) fn unique() -> String {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or(0);
        format!("{}-{n}-{nanos}", std::process::id())
    }

    /// A cache in `dir` with its own key.
    pub(super) fn cache_in(dir: &Path, storage: &str) -> TokenCache {
        TokenCache::new(&config_from(&[
            format!("--issuer-url=https://idp.example/{}", unique()),
            "--client-id=kubernetes".into(),
            format!("--cache-dir={}", dir.display()),
            format!("--cache-storage={storage}"),
        ]))
    }

    pub(super) fn tokens(tag: &str, refresh: bool) -> Tokens {
        let now: DateTime<Utc> = Utc::now();
        Tokens {
            id_token: Some(Secret::new(format!("id-token-{tag}"))),
            id_token_expiry: Some(now + chrono::Duration::hours(1)),
            access_token: Some(Secret::new(format!("access-token-{tag}"))),
            access_token_expiry: Some(now + chrono::Duration::minutes(30)),
            refresh_token: refresh
                .then(|| Secret::new(format!("refresh-token-{tag}-{}", unique()))),
            obtained_at: now,
        }
    }

    pub(super) fn lock(cache: &TokenCache) -> EntryLock {
        cache.lock(Duration::from_secs(5)).unwrap()
    }

    pub(super) fn file_text(cache: &TokenCache) -> String {
        std::fs::read_to_string(cache.entry_path()).unwrap()
    }

    pub(super) fn stored_refresh(cache: &TokenCache) -> RefreshAt {
        StoredEntry::parse(file_text(cache).as_bytes())
            .unwrap()
            .refresh
    }

    // ---- the key ----

    const KEY_BASE: [&str; 2] = ["--issuer-url=https://idp.example", "--client-id=kubernetes"];

    /// The key of the base settings, with `extra` flags added or replacing a base flag.
    fn key_of(extra: &[&str]) -> CacheKey {
        let flag = |arg: &str| arg.split('=').next().unwrap().to_string();
        let mut args: Vec<String> = KEY_BASE
            .iter()
            .filter(|base| !extra.iter().any(|e| flag(e) == flag(base)))
            .map(|s| s.to_string())
            .collect();
        args.extend(strings(extra));
        CacheKey::for_config(&config_from(&args))
    }

    #[test]
    fn key_is_64_lower_case_hex() {
        let key = key_of(&[]);
        assert_eq!(key.as_str().len(), 64);
        assert!(key
            .as_str()
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_eq!(key.to_string(), key.as_str());
    }

    #[test]
    fn key_ignores_the_order_of_scopes_and_auth_params() {
        assert_eq!(
            key_of(&["--scope=email,groups"]),
            key_of(&["--scope=groups,email"])
        );
        assert_eq!(
            key_of(&["--scope=email groups"]),
            key_of(&["--scope=groups", "--scope=email"])
        );
        assert_eq!(
            key_of(&["--auth-param=a=1", "--auth-param=b=2"]),
            key_of(&["--auth-param=b=2", "--auth-param=a=1"])
        );
    }

    #[test]
    fn key_changes_with_each_input_that_changes_the_token() {
        let ca = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "-----BEGIN CERTIFICATE-----\nA\n",
        );
        let ca2 = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "-----BEGIN CERTIFICATE-----\nB\n",
        );
        let ca_arg = format!("--certificate-authority-data={ca}");
        let ca2_arg = format!("--certificate-authority-data={ca2}");
        let variants: Vec<Vec<&str>> = vec![
            vec![],
            vec!["--issuer-url=https://other.example"],
            vec!["--client-id=other"],
            vec!["--client-secret=s1"],
            vec!["--client-secret=s2"],
            vec!["--scope=email"],
            vec!["--grant-type=device-code"],
            vec!["--audience=x"],
            vec!["--resource=x"],
            vec!["--auth-param=x=1"],
            vec!["--auth-param=x=2"],
            vec!["--login-hint=x"],
            vec![ca_arg.as_str()],
            vec![ca2_arg.as_str()],
            vec!["--insecure-skip-tls-verify"],
        ];
        let keys: HashSet<CacheKey> = variants.iter().map(|extra| key_of(extra)).collect();
        assert_eq!(
            keys.len(),
            variants.len(),
            "two different settings share a key"
        );
    }

    #[test]
    fn key_ignores_what_does_not_change_the_token() {
        let base = key_of(&[]);
        for extra in [
            "--use-access-token",
            "--min-validity=5m",
            "--cache-storage=disk",
            "--cache-dir=/elsewhere",
            "--force-refresh",
            "--prompt=login",
        ] {
            assert_eq!(key_of(&[extra]), base, "{extra}");
        }
    }

    #[test]
    fn key_material_holds_a_hash_of_the_client_secret_not_the_secret() {
        let mut args = strings(&KEY_BASE);
        args.push("--client-secret=very-secret-value".into());
        let material = canonical_key_material(&config_from(&args));
        assert!(!material.contains("very-secret-value"), "{material}");
        assert!(
            material.contains(&sha256_hex(b"very-secret-value")),
            "{material}"
        );
        assert!(material.starts_with(r#"{"v":1,"#), "{material}");
    }

    #[test]
    fn key_field_boundaries_cannot_be_confused() {
        // The same characters split differently between two fields must give different keys.
        assert_ne!(
            key_of(&["--auth-param=a=b=c"]),
            key_of(&["--auth-param=a=b", "--auth-param=c="])
        );
        assert_ne!(
            key_of(&["--audience=ab", "--resource=c"]),
            key_of(&["--audience=a", "--resource=bc"])
        );
    }

    // ---- disk storage ----

    #[test]
    fn disk_round_trip_with_the_refresh_token_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        assert!(
            cache.load().unwrap().is_none(),
            "a missing directory is a miss"
        );
        let saved = tokens("disk", true);
        let guard = lock(&cache);
        cache.save(&saved, &guard).unwrap();
        let cached = cache.load().unwrap().unwrap();
        assert_eq!(cached.tokens, saved);
        assert!(cached.has_refresh_token());
        assert_eq!(
            cache.refresh_token(&cached, &guard).unwrap(),
            saved.refresh_token
        );
        assert_eq!(stored_refresh(&cache), RefreshAt::Entry);
        assert!(cache.entry_path().starts_with(dir.path().join("tokens")));
        assert!(cache
            .entry_path()
            .ends_with(format!("{}.json", cache.key())));
    }

    #[test]
    fn an_entry_without_a_refresh_token_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        let guard = lock(&cache);
        cache.save(&tokens("none", false), &guard).unwrap();
        let cached = cache.load().unwrap().unwrap();
        assert!(!cached.has_refresh_token());
        assert_eq!(cache.refresh_token(&cached, &guard).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn cache_files_are_0600_in_0700_directories() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        // A tokens directory that exists already, too open: it is tightened.
        std::fs::create_dir(dir.path().join("tokens")).unwrap();
        std::fs::set_permissions(
            dir.path().join("tokens"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let cache = cache_in(dir.path(), "auto");
        let guard = lock(&cache);
        cache.save(&tokens("perm", false), &guard).unwrap();
        assert_eq!(mode(&dir.path().join("tokens")), 0o700);
        assert_eq!(mode(&dir.path().join("locks")), 0o700);
        assert_eq!(mode(&cache.entry_path()), 0o600);
        assert_eq!(mode(&cache.lock_path()), 0o600);
        assert_eq!(
            cache.state_path("cooldown").parent(),
            Some(dir.path().join("state").as_path())
        );
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_a_miss_and_the_next_save_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        std::fs::create_dir_all(cache.entry_path().parent().unwrap()).unwrap();
        for bad in [
            &b"{not json"[..],
            b"",
            br#"{"v":2,"tokens":{},"refresh":{"in":"none"}}"#,
            br#"{"v":1,"tokens":{"obtained_at":"2026-01-01T00:00:00Z"}}"#,
            br#"{"v":1,"tokens":{"obtained_at":"2026-01-01T00:00:00Z","refresh_token":"r"},"refresh":{"in":"none"}}"#,
        ] {
            std::fs::write(cache.entry_path(), bad).unwrap();
            assert!(cache.load().unwrap().is_none(), "{}", String::from_utf8_lossy(bad));
        }
        let saved = tokens("fixed", true);
        cache.save(&saved, &lock(&cache)).unwrap();
        assert_eq!(cache.load().unwrap().unwrap().tokens, saved);
    }

    #[test]
    fn another_format_version_is_named_in_the_reason() {
        let err = StoredEntry::parse(br#"{"v":2,"something":"else"}"#).unwrap_err();
        assert!(err.contains("format version 2"), "{err}");
        let err = StoredEntry::parse(b"[1]").unwrap_err();
        assert!(err.starts_with("not a cache entry"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_entry_is_an_error_not_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        // A directory in place of the file: reading fails for a reason other than absence.
        std::fs::create_dir_all(cache.entry_path()).unwrap();
        let err = cache.load().unwrap_err();
        assert!(
            format!("{err:#}").starts_with("cannot read the token cache file"),
            "{err:#}"
        );
        assert_eq!(crate::error::exit_code_of(&err), Exit::Cache);
    }

    #[test]
    fn saves_are_atomic_and_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        let guard = lock(&cache);
        for i in 0..5 {
            cache.save(&tokens(&format!("v{i}"), true), &guard).unwrap();
        }
        let names: Vec<String> = std::fs::read_dir(dir.path().join("tokens"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [format!("{}.json", cache.key())]);
        assert_eq!(
            cache.load().unwrap().unwrap().tokens.id_token,
            Some(Secret::new("id-token-v4"))
        );
    }

    #[test]
    fn remove_deletes_the_file_and_tolerates_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "disk");
        let guard = lock(&cache);
        cache.remove(&guard).unwrap();
        cache.save(&tokens("rm", true), &guard).unwrap();
        cache.remove(&guard).unwrap();
        assert!(!cache.entry_path().exists());
        assert!(cache.load().unwrap().is_none());
        assert!(cache.lock_path().exists(), "lock files stay");
    }

    #[test]
    fn storage_none_stores_nothing_and_creates_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "none");
        let guard = cache.lock(Duration::ZERO).unwrap();
        assert!(guard.path().is_none());
        cache.save(&tokens("none", true), &guard).unwrap();
        assert!(cache.load().unwrap().is_none());
        cache.remove(&guard).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_lock_of_an_entry_excludes_a_second_holder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "auto");
        let _held = lock(&cache);
        let err = cache.lock(Duration::from_millis(200)).unwrap_err();
        let message = format!("{err:#}");
        assert!(
            message.contains("timed out after 200ms waiting for the lock on"),
            "{message}"
        );
        assert!(
            message.contains(&cache.lock_path().display().to_string()),
            "{message}"
        );
        // Another entry in the same directory is not blocked.
        let other = cache_in(dir.path(), "auto");
        other.lock(Duration::ZERO).unwrap();
    }

    #[test]
    fn auto_without_any_keyring_keeps_the_refresh_token_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), "auto");
        cache.keyring = Keyring::with_stores(Vec::new(), Duration::from_secs(1));
        let saved = tokens("nokeyring", true);
        let guard = lock(&cache);
        cache.save(&saved, &guard).unwrap();
        assert!(file_text(&cache).contains(saved.refresh_token.as_ref().unwrap().expose()));
        assert_eq!(stored_refresh(&cache), RefreshAt::Entry);
        let cached = cache.load().unwrap().unwrap();
        assert_eq!(cached.tokens, saved);
        assert_eq!(
            cache.refresh_token(&cached, &guard).unwrap(),
            saved.refresh_token
        );
    }

    #[test]
    fn the_file_never_shows_up_in_debug_output() {
        let saved = tokens("debug", true);
        let cached = Cached {
            tokens: saved.clone(),
            refresh: RefreshAt::Entry,
        };
        let shown = format!("{cached:?}");
        assert!(
            !shown.contains(saved.refresh_token.as_ref().unwrap().expose()),
            "{shown}"
        );
        assert!(!shown.contains("id-token-debug"), "{shown}");
    }
}
