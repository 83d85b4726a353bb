//! Tests of the token cache through its public methods, in `auto`, `disk` and `none` storage.
//! The helpers here are shared with the keyring tests in `keyring_store.rs` and the key tests.

use super::*;
use crate::cli::{Cli, Command as CliCommand};
use crate::config::{Config, Environment};
use crate::exec_credential::ExecInfo;
use chrono::{DateTime, Utc};
use clap::Parser;
use std::time::Duration;

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

/// A cache in `dir` with its own key: an entry described by hand, no settings needed.
pub(super) fn cache_in(dir: &Path, storage: &str) -> TokenCache {
    let issuer = format!("https://idp.example/{}", unique());
    TokenCache::new(Entry {
        key: CacheKey::from_file_stem(&crate::digest::sha256_hex(issuer.as_bytes())).unwrap(),
        about: about_of(issuer),
        storage: match storage {
            "auto" => CacheStorage::Auto,
            "disk" => CacheStorage::Disk,
            "keyring" => CacheStorage::Keyring,
            "none" => CacheStorage::None,
            other => panic!("no storage {other}"),
        },
        dir: dir.to_path_buf(),
    })
}

/// What an entry of `issuer`'s records about itself, as written by hand.
fn about_of(issuer: String) -> EntryAbout {
    EntryAbout {
        issuer,
        client_id: "kubernetes".into(),
        account: None,
        subject: None,
        grant: "authcode".into(),
        scopes: vec!["openid".into()],
        audience: None,
        resource: None,
        granted: None,
        refused_targets: None,
        derived_from: None,
    }
}

pub(super) fn tokens(tag: &str, refresh: bool) -> Tokens {
    let now: DateTime<Utc> = Utc::now();
    Tokens {
        id_token: Some(Secret::new(format!("id-token-{tag}"))),
        id_token_expiry: Some(now + chrono::Duration::hours(1)),
        access_token: Some(Secret::new(format!("access-token-{tag}"))),
        access_token_expiry: Some(now + chrono::Duration::minutes(30)),
        refresh_token: refresh.then(|| Secret::new(format!("refresh-token-{tag}-{}", unique()))),
        obtained_at: now,
        identity: None,
        granted_scope: None,
    }
}

/// Saves `saved` (a whole entry, `keyring` storage) and checks that it reads back as saved,
/// the refresh token included.
pub(super) fn save_and_read_back(cache: &TokenCache, saved: &Tokens, guard: &EntryLock) {
    cache.save(saved, guard).unwrap();
    let cached = cache.load().unwrap().unwrap();
    assert_eq!(&cached.tokens, saved);
    assert_eq!(
        cache.refresh_token(&cached, guard).unwrap(),
        saved.refresh_token
    );
}

pub(super) fn lock(cache: &TokenCache) -> EntryLock {
    cache.lock(Duration::from_secs(5)).unwrap()
}

pub(super) fn file_text(cache: &TokenCache) -> String {
    std::fs::read_to_string(cache.entry_path()).unwrap()
}

pub(super) fn stored_refresh(cache: &TokenCache) -> RefreshPlace {
    StoredEntry::parse(file_text(cache).as_bytes())
        .unwrap()
        .into_tokens()
        .1
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
    assert_eq!(stored_refresh(&cache), RefreshPlace::Entry);
    assert!(cache.entry_path().starts_with(dir.path().join("tokens")));
    assert!(
        cache
            .entry_path()
            .ends_with(format!("{}.json", cache.key()))
    );
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
        cache.state_path().parent(),
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
    cache.keyring = Keyring::with_stores(dir.path(), Vec::new(), Duration::from_secs(1));
    let saved = tokens("nokeyring", true);
    let guard = lock(&cache);
    cache.save(&saved, &guard).unwrap();
    assert!(file_text(&cache).contains(saved.refresh_token.as_ref().unwrap().expose()));
    assert_eq!(stored_refresh(&cache), RefreshPlace::Entry);
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
        refresh: RefreshPlace::Entry,
        about: about_of("https://idp.example".into()),
    };
    let shown = format!("{cached:?}");
    assert!(
        !shown.contains(saved.refresh_token.as_ref().unwrap().expose()),
        "{shown}"
    );
    assert!(!shown.contains("id-token-debug"), "{shown}");
}

// ---- listing (status, logout --all) ----

#[test]
fn entries_are_listed_with_what_they_are_for_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        list_sessions(&dir.path().join("absent"))
            .unwrap()
            .is_empty()
    );
    let work = TokenCache::new(Entry::of(&config_from(&strings(&[
        "--issuer-url=https://idp.example",
        "--client-id=kubernetes",
        "--account=work",
        &format!("--cache-dir={}", dir.path().display()),
        "--cache-storage=disk",
    ]))));
    let other = cache_in(dir.path(), "disk");
    work.save(&tokens("work", true), &lock(&work)).unwrap();
    other.save(&tokens("other", false), &lock(&other)).unwrap();
    // Not entries: a leftover temporary file and a stray name.
    std::fs::write(dir.path().join("tokens").join("x.json.1.tmp"), "{}").unwrap();
    std::fs::write(dir.path().join("tokens").join("notes.json"), "{}").unwrap();

    let sessions = list_sessions(dir.path()).unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let listed = sessions.iter().find(|s| &s.key == work.key()).unwrap();
    let about = listed.about.as_ref().unwrap();
    // As the user wrote it (status shows it so), not as the URL parser normalised it.
    assert_eq!(about.issuer, "https://idp.example");
    assert_eq!(about.client_id, "kubernetes");
    assert_eq!(about.account.as_deref(), Some("work"));
    assert_eq!(about.grant, "authcode");
    assert_eq!(listed.place, SessionPlace::File);
    assert_eq!(listed.refresh_token, RefreshPlace::Entry);
    assert!(listed.id_token_expiry.is_some());
    let listed_other = sessions.iter().find(|s| &s.key == other.key()).unwrap();
    assert_eq!(listed_other.refresh_token, RefreshPlace::None);
    assert!(
        !format!("{sessions:?}").contains("token-work"),
        "{sessions:?}"
    );

    // A corrupt entry is still listed (and so can be removed), with the reason.
    std::fs::write(other.entry_path(), "not json").unwrap();
    let sessions = list_sessions(dir.path()).unwrap();
    let corrupt = sessions.iter().find(|s| &s.key == other.key()).unwrap();
    assert!(corrupt.unreadable.is_some());

    // Removal through the listed entry, whatever the settings would choose.
    for session in &sessions {
        let cache = TokenCache::for_session(dir.path(), session);
        cache.remove(&lock(&cache)).unwrap();
    }
    assert!(list_sessions(dir.path()).unwrap().is_empty());
}

#[test]
fn an_entry_names_its_issuer_as_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    for written in [
        "https://idp.example:8443",
        "https://idp.example/",
        "https://idp.example/realms/main",
    ] {
        let cache = TokenCache::new(Entry::of(&config_from(&[
            format!("--issuer-url={written}"),
            "--client-id=kubernetes".into(),
            format!("--cache-dir={}", dir.path().display()),
        ])));
        assert_eq!(cache.record().unwrap().issuer, written);
    }
}

// ---- the Windows store (DPAPI-protected files), over the test stand-in for DPAPI ----

/// Every file under `dir`, with its bytes.
fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

fn files_holding(dir: &Path, secret: &Secret) -> Vec<PathBuf> {
    let needle = secret.expose().as_bytes();
    every_file(dir)
        .into_iter()
        .filter(|(_, bytes)| bytes.windows(needle.len()).any(|window| window == needle))
        .map(|(path, _)| path)
        .collect()
}

/// A login as large as real ones get: a 4 KB ID token, a 2,000-character refresh token.
pub(super) fn large_tokens(tag: &str) -> Tokens {
    let mut large = tokens(tag, true);
    large.id_token = Some(Secret::new(format!("id-{tag}-{}", "i".repeat(4096))));
    large.access_token = Some(Secret::new(format!("at-{tag}-{}", "a".repeat(1500))));
    large.refresh_token = Some(Secret::new(format!("rt-{tag}-{}", "r".repeat(2000))));
    large
}

fn on_dpapi(mut cache: TokenCache, dir: &Path) -> TokenCache {
    cache.keyring = Keyring::with_stores(dir, vec![Store::Dpapi], Duration::from_secs(5));
    cache
}

#[test]
fn keyring_storage_in_dpapi_files_keeps_a_large_login_with_no_token_in_the_clear() {
    let dir = tempfile::tempdir().unwrap();
    let cache = on_dpapi(cache_in(dir.path(), "keyring"), dir.path());
    let saved = large_tokens("kr");
    let guard = lock(&cache);
    save_and_read_back(&cache, &saved, &guard);
    for token in [&saved.id_token, &saved.access_token, &saved.refresh_token] {
        let found = files_holding(dir.path(), token.as_ref().unwrap());
        assert!(found.is_empty(), "a token in the clear in {found:?}");
    }
    let protected = protected_file::path(dir.path(), cache.key.as_str());
    assert!(protected.exists());
    assert!(!cache.entry_path().exists());

    // status: a keyring entry in the DPAPI store, its one secret file named.
    let sessions = list_sessions(dir.path()).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        sessions[0].place,
        SessionPlace::Keyring {
            store: Store::Dpapi
        }
    );
    let pieces = secrets_of(dir.path(), &sessions[0]);
    assert_eq!(
        pieces,
        [SecretPiece {
            holds: "all_tokens",
            store: Some(Store::Dpapi),
            location: protected.display().to_string(),
        }]
    );

    // logout, through the listed entry: nothing is left that held a token, nor the index.
    let listed = TokenCache::for_session(dir.path(), &sessions[0]);
    let listed = on_dpapi(listed, dir.path());
    listed.remove(&guard).unwrap();
    assert!(!protected.exists());
    assert!(list_sessions(dir.path()).unwrap().is_empty());
    let left: Vec<PathBuf> = every_file(dir.path())
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| !path.starts_with(dir.path().join("locks")))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(cache.load().unwrap().is_none());
}

#[test]
fn auto_storage_keeps_the_refresh_token_in_a_dpapi_file_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let cache = on_dpapi(cache_in(dir.path(), "auto"), dir.path());
    let saved = large_tokens("auto");
    let refresh = saved.refresh_token.clone().unwrap();
    let guard = lock(&cache);
    cache.save(&saved, &guard).unwrap();

    assert!(files_holding(dir.path(), &refresh).is_empty());
    assert_eq!(stored_refresh(&cache), RefreshPlace::Keyring(Store::Dpapi));
    let cached = cache.load().unwrap().unwrap();
    assert_eq!(cache.refresh_token(&cached, &guard).unwrap(), Some(refresh));
    let sessions = list_sessions(dir.path()).unwrap();
    let pieces = secrets_of(dir.path(), &sessions[0]);
    let protected = protected_file::path(dir.path(), &cache.refresh_account());
    assert_eq!(
        pieces
            .iter()
            .map(|piece| (piece.holds, piece.store, piece.location.clone()))
            .collect::<Vec<_>>(),
        [
            (
                "id_and_access_tokens",
                None,
                cache.entry_path().display().to_string()
            ),
            (
                "refresh_token",
                Some(Store::Dpapi),
                protected.display().to_string()
            ),
        ]
    );

    cache.remove(&guard).unwrap();
    let entry = cache.entry_path();
    // On Windows a deleted file stays until its last handle closes, and the cache keeps the
    // entry it loaded open (the hand-out stamp).
    drop(cache);
    assert!(!protected.exists() && !entry.exists());
}

#[test]
fn a_store_that_cannot_keep_the_secret_says_so_and_auto_falls_back_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the DPAPI store's directory should be.
    std::fs::write(dir.path().join(protected_file::DIR), b"").unwrap();

    let keyring = on_dpapi(cache_in(dir.path(), "keyring"), dir.path());
    let guard = lock(&keyring);
    let err = keyring.save(&large_tokens("kr"), &guard).unwrap_err();
    let message = crate::error::one_line(&err);
    assert!(
        message.starts_with("the DPAPI file store failed with the cache entry (cannot write "),
        "{message}"
    );
    assert!(!message.contains("reachable"), "{message}");
    assert_eq!(crate::error::exit_code_of(&err), Exit::Cache);

    let auto = on_dpapi(cache_in(dir.path(), "auto"), dir.path());
    let guard = lock(&auto);
    let saved = large_tokens("auto");
    auto.save(&saved, &guard).unwrap();
    assert_eq!(stored_refresh(&auto), RefreshPlace::Entry);
    assert_eq!(auto.load().unwrap().unwrap().tokens, saved);
}
