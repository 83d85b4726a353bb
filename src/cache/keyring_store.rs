//! The OS keyring, as the token cache uses it: bounded in time, with the store picked by trying it.
//!
//! Stores, in order of preference: on Linux the Secret Service (GNOME Keyring, KWallet, KeePassXC —
//! persistent, what desktops have), then the kernel keyring (keyutils: in memory until reboot, but
//! present in a headless SSH session where no Secret Service runs); on macOS the Keychain; on
//! Windows DPAPI-protected files (`protected_file.rs`: the Credential Manager holds 2560 bytes an
//! item, less than a login). Whether a store is reachable is decided by an actual operation on it,
//! never guessed from the environment, and each failure keeps its reason and whether the store
//! refused or was out of reach (`store_failure.rs`), for the message.
//!
//! Every store is used through the one interface of `store.rs` ([`SecretStore`]: put, get,
//! remove), the keyring crate's stores ([`OsKeyring`]) and the DPAPI files alike; [`open`] is
//! the one place that tells them apart.
//!
//! Every call runs on a worker thread and is abandoned after [`KEYRING_TIMEOUT`]: a Secret Service
//! whose collection is locked may show an unlock dialog and block until someone answers it, and
//! client-go waits for the plugin forever. A store that timed out once is not asked again in this
//! process (its worker thread may still be stuck).
//!
//! Secrets travel as [`Secret`]; error texts come from the keyring crate's `Display`, which never
//! includes a stored value.

use super::protected_file::{self, ProtectedFiles};
use super::store::{Fault, Os, SecretStore, Store, StoreFailure};
use super::store_failure::{KeyringFailure, classify};
use crate::secret::Secret;
use keyring::{Entry, Error as KeyringError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

/// The keyring "service" of every kubecred item; the account names the cache entry.
pub(crate) const SERVICE: &str = "kubecred";

/// How long one keyring call may take before kubecred gives up on that store.
pub(crate) const KEYRING_TIMEOUT: Duration = Duration::from_secs(10);

/// Where `account`'s item is in `store`, in the platform's terms, for `status` (`root`: the
/// cache directory).
pub(crate) fn item_location(store: Store, os: Os, root: &Path, account: &str) -> String {
    match (store, os) {
        (Store::Dpapi, _) => protected_file::path(root, account).display().to_string(),
        (Store::Native, _) => format!(
            "{}, generic password: service {SERVICE}, account {account}",
            store.name_on(os)
        ),
        (Store::SecretService, _) => {
            format!("Secret Service item: service {SERVICE}, username {account}")
        }
        (Store::Keyutils, _) => {
            format!("kernel keyring: user key keyring-rs:{account}@{SERVICE}")
        }
    }
}

/// `store` through the stores' one interface, its DPAPI files under the cache root `root`: the
/// one place that tells the keyring crate's stores from kubecred's own files.
fn open(store: Store, root: &Path) -> Box<dyn SecretStore + '_> {
    match store {
        Store::Dpapi => Box::new(ProtectedFiles { root }),
        Store::SecretService | Store::Keyutils | Store::Native => Box::new(OsKeyring(store)),
    }
}

/// Stores that timed out in this process; their worker threads may still be blocked.
static TIMED_OUT: Mutex<Vec<Store>> = Mutex::new(Vec::new());

/// The keyring client of one cache. Cheap to build: nothing is contacted until a call.
#[derive(Debug, Clone)]
pub(crate) struct Keyring {
    /// Where the file-based store (DPAPI) keeps its files: the cache root.
    root: PathBuf,
    stores: Vec<Store>,
    timeout: Duration,
}

impl Keyring {
    /// The platform's stores, with the cache root `root`.
    pub(crate) fn new(root: &Path) -> Keyring {
        Keyring {
            root: root.to_path_buf(),
            stores: Store::platform_stores(),
            timeout: KEYRING_TIMEOUT,
        }
    }

    /// A client limited to some stores and another timeout (tests).
    #[cfg(test)]
    pub(crate) fn with_stores(root: &Path, stores: Vec<Store>, timeout: Duration) -> Keyring {
        Keyring {
            root: root.to_path_buf(),
            stores,
            timeout,
        }
    }

    /// Stores `value` under `account` in the first store that accepts it; returns that store.
    pub(crate) fn set(&self, account: &str, value: &Secret) -> Result<Store, KeyringFailure> {
        let mut failures = Vec::new();
        for &store in &self.stores {
            let (root, owned_account, owned_value) =
                (self.root.clone(), account.to_string(), value.clone());
            match self.call(store, move || {
                open(store, &root).put(&owned_account, &owned_value)
            }) {
                Ok(()) => {
                    crate::debug!(2, "stored {account} in the {}", store.name());
                    return Ok(store);
                }
                Err(failure) => failures.push(failure),
            }
        }
        Err(KeyringFailure { failures })
    }

    /// Reads `account` from one given store. `Ok(None)`: no such item.
    pub(crate) fn get_from(
        &self,
        store: Store,
        account: &str,
    ) -> Result<Option<Secret>, KeyringFailure> {
        self.get_one(store, account).map_err(KeyringFailure::from)
    }

    /// Looks for `account` in every store, in order. `Ok(None)` only when at least one store is
    /// known to work and none holds the item; an error when no store could be reached at all.
    pub(crate) fn find(&self, account: &str) -> Result<Option<(Secret, Store)>, KeyringFailure> {
        let mut failures = Vec::new();
        let mut reachable = false;
        let mut unproven = Vec::new();
        for &store in &self.stores {
            match self.get_one(store, account) {
                Ok(Some(value)) => return Ok(Some((value, store))),
                Ok(None) if store.miss_proves_reachable() => reachable = true,
                Ok(None) => unproven.push(store),
                Err(failure) => failures.push(failure),
            }
        }
        if reachable {
            return Ok(None);
        }
        // Only stores whose miss proves nothing are left: a write tells whether they work.
        for store in unproven {
            match self.probe(store) {
                Ok(()) => return Ok(None),
                Err(failure) => failures.push(failure),
            }
        }
        Err(KeyringFailure { failures })
    }

    /// Deletes `account` from one store; an item that is not there is fine.
    pub(crate) fn delete_from(&self, store: Store, account: &str) -> Result<(), KeyringFailure> {
        let (root, owned_account) = (self.root.clone(), account.to_string());
        self.call(store, move || open(store, &root).remove(&owned_account))
            .map_err(KeyringFailure::from)
    }

    /// Deletes `account` from every store. An error only when no store could be reached.
    pub(crate) fn delete_everywhere(&self, account: &str) -> Result<(), KeyringFailure> {
        let mut failures = Vec::new();
        let mut deleted_somewhere = false;
        for &store in &self.stores {
            match self.delete_from(store, account) {
                Ok(()) => deleted_somewhere = true,
                Err(failure) => failures.extend(failure.failures),
            }
        }
        if deleted_somewhere {
            Ok(())
        } else {
            Err(KeyringFailure { failures })
        }
    }

    /// Reads the item another program keeps under `service` and `account` (int128/kubelogin's
    /// token cache, written through Go's go-keyring), as text. go-keyring names items by service
    /// and account as kubecred does, but stores the value as UTF-8 bytes (the keyring crate's
    /// Windows store reads UTF-16) and on Windows names the credential `service:account` in the
    /// Credential Manager; it uses no kernel keyring and no DPAPI file. `Ok(None)` when a store
    /// was reached and none holds the item.
    pub(crate) fn get_other_programs(
        &self,
        service: &str,
        account: &str,
    ) -> Result<Option<String>, KeyringFailure> {
        let mut failures = Vec::new();
        let mut reachable = false;
        for store in Store::other_programs_stores() {
            let (owned_service, owned_account) = (service.to_string(), account.to_string());
            let outcome = self.call(store, move || {
                let fail = |err: KeyringError| describe(store, &err);
                match other_programs_entry(store, &owned_service, &owned_account)
                    .map_err(fail)?
                    .get_secret()
                {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(KeyringError::NoEntry) => Ok(None),
                    Err(err) => Err(fail(err)),
                }
            });
            match outcome {
                Ok(Some(bytes)) => {
                    return String::from_utf8(bytes).map(Some).map_err(|_| {
                        KeyringFailure::from(StoreFailure::new(
                            store,
                            Fault::Failed,
                            format!("the item {service}/{account} is not text"),
                        ))
                    });
                }
                Ok(None) => reachable = true,
                Err(failure) => failures.push(failure),
            }
        }
        if reachable {
            Ok(None)
        } else {
            Err(KeyringFailure { failures })
        }
    }

    fn get_one(&self, store: Store, account: &str) -> Result<Option<Secret>, StoreFailure> {
        let (root, owned_account) = (self.root.clone(), account.to_string());
        self.call(store, move || open(store, &root).get(&owned_account))
    }

    /// Writes, reads and deletes a throw-away item, to learn whether `store` works at all.
    pub(crate) fn probe(&self, store: Store) -> Result<(), StoreFailure> {
        let root = self.root.clone();
        self.call(store, move || {
            let probed = open(store, &root);
            probed.put("probe", &Secret::new("reachable"))?;
            probed.remove("probe")
        })
    }

    /// Runs one store operation on a worker thread, waiting at most `self.timeout`.
    fn call<T: Send + 'static>(
        &self,
        store: Store,
        op: impl FnOnce() -> Result<T, StoreFailure> + Send + 'static,
    ) -> Result<T, StoreFailure> {
        let timeout_failure = |earlier: &str| {
            StoreFailure::new(
                store,
                Fault::Unreachable,
                format!(
                    "it did not answer within {}{earlier} (is it locked, waiting for an unlock prompt?)",
                    crate::duration::display(self.timeout)
                ),
            )
        };
        if TIMED_OUT
            .lock()
            .map(|stores| stores.contains(&store))
            .unwrap_or(false)
        {
            return Err(timeout_failure(" earlier in this run"));
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("kubecred-keyring".into())
            .spawn(move || {
                let _ = sender.send(op());
            })
            .map_err(|err| {
                StoreFailure::new(
                    store,
                    Fault::Failed,
                    format!("cannot start a thread for the keyring call: {err}"),
                )
            })?;
        match receiver.recv_timeout(self.timeout) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(mut stores) = TIMED_OUT.lock() {
                    stores.push(store);
                }
                Err(timeout_failure(""))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(StoreFailure::new(
                store,
                Fault::Failed,
                "the keyring call failed unexpectedly (its thread panicked)",
            )),
        }
    }
}

/// A store the keyring crate reaches: the Secret Service, the kernel keyring, the macOS
/// Keychain, the Windows Credential Manager.
struct OsKeyring(Store);

impl SecretStore for OsKeyring {
    /// Writes `value` as `account` (on the worker thread), and reads the item back: a successful
    /// write is not enough, since a process whose session keyring it may not search (seen on VMs
    /// and containers where the session keyring belongs to another user namespace) can add a key
    /// to it and then never read it again.
    fn put(&self, account: &str, value: &Secret) -> Result<(), StoreFailure> {
        let OsKeyring(store) = *self;
        let fail = |err: KeyringError| describe(store, &err);
        let entry = entry(store, account).map_err(fail)?;
        entry.set_password(value.expose()).map_err(fail)?;
        let readable = match entry.get_password() {
            Ok(read) => read == value.expose(),
            Err(KeyringError::NoEntry) => false,
            Err(err) => return Err(fail(err)),
        };
        if readable {
            Ok(())
        } else {
            Err(StoreFailure::new(
                store,
                Fault::Unreachable,
                unreadable(store),
            ))
        }
    }

    fn get(&self, account: &str) -> Result<Option<Secret>, StoreFailure> {
        let OsKeyring(store) = *self;
        let fail = |err: KeyringError| describe(store, &err);
        match entry(store, account).map_err(fail)?.get_password() {
            Ok(value) => Ok(Some(Secret::new(value))),
            Err(KeyringError::NoEntry) => Ok(None),
            Err(err) => Err(fail(err)),
        }
    }

    fn remove(&self, account: &str) -> Result<(), StoreFailure> {
        let OsKeyring(store) = *self;
        let fail = |err: KeyringError| describe(store, &err);
        match entry(store, account).map_err(fail)?.delete_credential() {
            Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
            Err(err) => Err(fail(err)),
        }
    }
}

fn unreadable(store: Store) -> &'static str {
    match store {
        Store::Keyutils => {
            "an item written to it could not be read back (this session has no usable session keyring; run under `keyctl session`)"
        }
        _ => "an item written to it could not be read back",
    }
}

/// The keyring item of `account` in `store`, built for that store explicitly (not through the
/// crate's process-wide default builder), so that one process can use two stores.
fn entry(store: Store, account: &str) -> keyring::Result<Entry> {
    entry_of(store, SERVICE, account)
}

/// The item of `service` and `account` in `store`.
fn entry_of(store: Store, service: &str, account: &str) -> keyring::Result<Entry> {
    match store {
        #[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd"))]
        Store::SecretService => Ok(Entry::new_with_credential(Box::new(
            keyring::secret_service::SsCredential::new_with_target(None, service, account)?,
        ))),
        #[cfg(target_os = "linux")]
        Store::Keyutils => Ok(Entry::new_with_credential(Box::new(
            keyring::keyutils::KeyutilsCredential::new_with_target(None, service, account)?,
        ))),
        #[cfg(any(target_os = "macos", target_os = "ios", target_os = "windows"))]
        Store::Native => Entry::new(service, account),
        #[allow(unreachable_patterns)]
        other => Err(KeyringError::PlatformFailure(
            format!("the {} is not available on this platform", other.name()).into(),
        )),
    }
}

/// The item another program wrote with go-keyring (see [`Keyring::get_other_programs`]).
fn other_programs_entry(store: Store, service: &str, account: &str) -> keyring::Result<Entry> {
    match store {
        #[cfg(target_os = "windows")]
        Store::Native => Ok(Entry::new_with_credential(Box::new(
            keyring::windows::WinCredential::new_with_target(
                Some(&format!("{service}:{account}")),
                service,
                account,
            )?,
        ))),
        _ => entry_of(store, service, account),
    }
}

/// One store's failure from a keyring crate error: refused or out of reach
/// (`store_failure::classify`), in one line, in our words where the crate's would mislead. Uses
/// `Display` only: the `Debug` form of some variants carries the bytes that were read.
fn describe(store: Store, err: &KeyringError) -> StoreFailure {
    let os = Os::current();
    let fault = classify(os, store, err);
    let detail = match (store, err, fault) {
        // See `Store::miss_proves_reachable`: from a write, this is keyutils' "access denied".
        (Store::Keyutils, KeyringError::NoEntry, _) => {
            "access denied (this session has no usable session keyring; run under `keyctl session`)"
                .to_string()
        }
        // The crate calls keyutils' EINVAL an invalid password.
        (Store::Keyutils, KeyringError::Invalid(..), Fault::TooLarge) => {
            "over 32767 bytes, the most a kernel keyring key holds".to_string()
        }
        (Store::Keyutils, _, Fault::TooLarge) => {
            "this user's kernel keys would pass their quota (sysctl kernel.keys.maxbytes, 20000 bytes by default)".to_string()
        }
        _ => err.to_string(),
    };
    StoreFailure::new(store, fault, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::stored_entry::RefreshPlace;
    use crate::cache::tests::{
        cache_in, file_text, large_tokens, lock, save_and_read_back, stored_refresh, tokens,
    };
    use std::process::Command;

    #[test]
    fn no_store_means_a_clear_reason() {
        let keyring = Keyring::with_stores(Path::new("/nonexistent"), Vec::new(), KEYRING_TIMEOUT);
        let err = keyring.set("k", &Secret::new("v")).unwrap_err();
        assert!(err.to_string().contains("no OS keyring support"), "{err}");
        assert!(keyring.find("k").is_err());
        assert!(keyring.delete_everywhere("k").is_err());
    }

    #[test]
    fn errors_never_show_the_value() {
        let err = KeyringError::BadEncoding(b"super-secret-bytes".to_vec());
        assert!(
            !describe(Store::Native, &err)
                .detail
                .contains("super-secret")
        );
    }

    // ---- Through the token cache: in environments this process cannot have (child processes),
    // and, opt-in, with a real OS keyring. Every test here matches `cargo test cache::keyring`.

    /// Set by `scripts/test.sh` when the tests run inside `dbus-run-session` with an unlocked
    /// gnome-keyring: the real-keyring tests then run against the Secret Service.
    const ENV_SECRET_SERVICE: &str = "KUBECRED_TEST_KEYRING";
    /// Set when the tests run under `keyctl session -` with no D-Bus session in reach: the
    /// real-keyring tests then run against the kernel keyring (the fallback).
    const ENV_KEYUTILS: &str = "KUBECRED_TEST_KEYUTILS";

    /// Child processes: environments this process cannot have. Linux only: elsewhere the OS
    /// keychain cannot be taken away from a child process.
    #[cfg(target_os = "linux")]
    mod children {
        use super::*;
        use crate::error::Exit;
        use std::time::Instant;

        /// Names the child-process test to run in earnest (see [`run_child`]).
        const ENV_CHILD: &str = "KUBECRED_TEST_CACHE_CHILD";

        /// Re-runs this test binary for the one test `name`, with `ENV_CHILD=name` and `envs`, and
        /// returns its output. The child test asserts; a sentinel on stdout proves it really ran.
        fn run_child(name: &str, envs: &[(&str, &str)]) -> std::process::Output {
            let mut command = Command::new(std::env::current_exe().unwrap());
            command
                .args([
                    &format!("cache::keyring_store::tests::children::{name}"),
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ENV_CHILD, name);
            for (key, value) in envs {
                command.env(key, value);
            }
            let output = command.output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.success() && stdout.contains(&format!("CHILD-OK {name}")),
                "child {name} failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
                output.status
            );
            output
        }

        /// Stops a child half started by anything but [`run_child`] (`cargo test -- --ignored`).
        fn expect_to_be_child(name: &str) {
            assert!(
                std::env::var(ENV_CHILD).is_ok_and(|value| value == name),
                "{name} is the child half of another test, run by it"
            );
        }

        /// The stores to use where none must be reachable: all of them, unless this session has a
        /// working kernel keyring (under `keyctl session`), which a child cannot shed — then only the
        /// Secret Service, made unreachable by the bus address the parent set.
        fn stores_without_a_working_keyutils() -> Vec<Store> {
            let all = Store::platform_stores();
            if all.contains(&Store::Keyutils)
                && Keyring::with_stores(
                    Path::new("/nonexistent"),
                    vec![Store::Keyutils],
                    KEYRING_TIMEOUT,
                )
                .probe(Store::Keyutils)
                .is_ok()
            {
                crate::log::notice(format_args!(
                    "this session has a working kernel keyring: testing with the Secret Service only"
                ));
                all.into_iter().filter(|s| *s != Store::Keyutils).collect()
            } else {
                all
            }
        }

        #[test]
        fn without_a_reachable_keyring_keyring_mode_fails_fast_and_auto_falls_back_once() {
            let started = Instant::now();
            let output = run_child(
                "no_keyring_child",
                &[(
                    "DBUS_SESSION_BUS_ADDRESS",
                    "unix:path=/nonexistent/kubecred-test-bus",
                )],
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{:?}",
                started.elapsed()
            );
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                stderr
                    .matches("keeping the refresh token in the private file")
                    .count(),
                1,
                "the fallback notice must appear once: {stderr}"
            );
        }

        #[test]
        #[ignore = "the child half of without_a_reachable_keyring_keyring_mode_fails_fast_and_auto_falls_back_once, run by it"]
        fn no_keyring_child() {
            expect_to_be_child("no_keyring_child");
            let dir = tempfile::tempdir().unwrap();
            let stores = stores_without_a_working_keyutils();

            let mut keyring_cache = cache_in(dir.path(), "keyring");
            keyring_cache.keyring =
                Keyring::with_stores(dir.path(), stores.clone(), KEYRING_TIMEOUT);
            let started = Instant::now();
            let err = keyring_cache.load().unwrap_err();
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "{:?}",
                started.elapsed()
            );
            let message = crate::error::one_line(&err);
            assert!(
                message.starts_with("no OS keyring is reachable (Secret Service: "),
                "{message}"
            );
            assert!(
                message.contains("start a Secret Service")
                    && message.ends_with("or use --cache-storage disk"),
                "{message}"
            );
            assert_eq!(crate::error::exit_code_of(&err), Exit::Cache);
            let guard = lock(&keyring_cache);
            let err = keyring_cache.save(&tokens("k", true), &guard).unwrap_err();
            assert!(
                crate::error::one_line(&err).starts_with("no OS keyring is reachable"),
                "{err:#}"
            );
            assert!(
                !keyring_cache.entry_path().exists(),
                "keyring mode writes no token file"
            );

            let mut auto = cache_in(dir.path(), "auto");
            auto.keyring = Keyring::with_stores(dir.path(), stores, KEYRING_TIMEOUT);
            let guard = lock(&auto);
            let first = tokens("a1", true);
            auto.save(&first, &guard).unwrap();
            assert!(file_text(&auto).contains(first.refresh_token.as_ref().unwrap().expose()));
            // A rotated refresh token replaces the old one, without a second notice.
            let second = tokens("a2", true);
            auto.save(&second, &guard).unwrap();
            let cached = auto.load().unwrap().unwrap();
            assert_eq!(cached.tokens, second);
            assert_eq!(
                auto.refresh_token(&cached, &guard).unwrap(),
                second.refresh_token
            );
            println!("CHILD-OK no_keyring_child");
        }

        #[test]
        fn a_keyring_that_never_answers_is_abandoned_after_the_timeout() {
            let dir = tempfile::tempdir().unwrap();
            // A "session bus" that accepts connections and never says a word, like a daemon stuck
            // behind an unlock prompt.
            let socket = dir.path().join("bus");
            let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            let address = format!("unix:path={}", socket.display());
            run_child(
                "hanging_keyring_child",
                &[("DBUS_SESSION_BUS_ADDRESS", &address)],
            );
        }

        #[test]
        #[ignore = "the child half of a_keyring_that_never_answers_is_abandoned_after_the_timeout, run by it"]
        fn hanging_keyring_child() {
            expect_to_be_child("hanging_keyring_child");
            let dir = tempfile::tempdir().unwrap();
            let timeout = Duration::from_millis(300);
            let keyring = Keyring::with_stores(dir.path(), vec![Store::SecretService], timeout);

            let mut auto = cache_in(dir.path(), "auto");
            auto.keyring = keyring.clone();
            let guard = lock(&auto);
            let started = Instant::now();
            auto.save(&tokens("hang", true), &guard).unwrap();
            let first = started.elapsed();
            assert!(
                first >= timeout && first < Duration::from_secs(3),
                "{first:?}"
            );
            assert_eq!(stored_refresh(&auto), RefreshPlace::Entry);

            // The store that hung is not asked again in this process.
            let mut keyring_cache = cache_in(dir.path(), "keyring");
            keyring_cache.keyring = keyring;
            let started = Instant::now();
            let err = keyring_cache.load().unwrap_err();
            assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
            let message = crate::error::one_line(&err);
            assert!(
                message.contains("Secret Service: it did not answer within 300ms"),
                "{message}"
            );
            println!("CHILD-OK hanging_keyring_child");
        }

        // ---- a real OS keyring (opt-in: see ENV_SECRET_SERVICE and ENV_KEYUTILS) ----
    }

    /// The store the real-keyring tests expect, or `None` (test skipped) when the environment
    /// does not provide one.
    fn real_keyring(test: &str) -> Option<Store> {
        if std::env::var(ENV_SECRET_SERVICE).is_ok_and(|v| v == "1") {
            Some(Store::SecretService)
        } else if std::env::var(ENV_KEYUTILS).is_ok_and(|v| v == "1") {
            Some(Store::Keyutils)
        } else {
            crate::log::notice(format_args!(
                "skipped {test}: set {ENV_SECRET_SERVICE}=1 inside dbus-run-session with gnome-keyring, or {ENV_KEYUTILS}=1 under `keyctl session -`"
            ));
            None
        }
    }

    fn wrong_store_hint(expected: Store) -> String {
        format!(
            "expected the {}; with {ENV_KEYUTILS}=1 the Secret Service must be out of reach (unset DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR)",
            expected.name()
        )
    }

    /// Reads an item with the platform's own tool, independently of the keyring crate.
    fn read_with_os_tool(store: Store, account: &str) -> Option<String> {
        let output = match store {
            Store::SecretService => Command::new("secret-tool")
                .args(["lookup", "service", SERVICE, "username", account])
                .output()
                .expect("secret-tool (Debian libsecret-tools) is needed for this test"),
            Store::Keyutils => {
                let description = format!("keyring-rs:{account}@{}", SERVICE);
                let search = Command::new("keyctl")
                    .args(["search", "@s", "user", &description])
                    .output()
                    .expect("keyctl (Debian keyutils) is needed for this test");
                if !search.status.success() {
                    return None;
                }
                let id = String::from_utf8(search.stdout).unwrap();
                Command::new("keyctl")
                    .args(["pipe", id.trim()])
                    .output()
                    .unwrap()
            }
            Store::Native | Store::Dpapi => unreachable!("no OS tool check on this platform"),
        };
        output
            .status
            .success()
            .then(|| String::from_utf8(output.stdout).unwrap())
            .filter(|text| !text.is_empty())
    }

    #[test]
    fn real_keyring_mode_round_trip() {
        let Some(expected) = real_keyring("real_keyring_mode_round_trip") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "keyring");
        assert!(cache.load().unwrap().is_none());
        let saved = tokens("kr", true);
        let guard = lock(&cache);
        save_and_read_back(&cache, &saved, &guard);
        let (_, store) = cache.keyring.find(cache.key.as_str()).unwrap().unwrap();
        assert_eq!(store, expected, "{}", wrong_store_hint(expected));
        let item =
            read_with_os_tool(expected, cache.key.as_str()).expect("the item is in the OS keyring");
        assert!(item.contains(saved.refresh_token.as_ref().unwrap().expose()));
        assert!(
            !dir.path().join("tokens").exists(),
            "nothing on disk but lock files"
        );

        cache.remove(&guard).unwrap();
        assert!(cache.load().unwrap().is_none());
        assert_eq!(read_with_os_tool(expected, cache.key.as_str()), None);
    }

    #[test]
    fn real_auto_mode_keeps_the_refresh_token_in_the_keyring_only() {
        let Some(expected) =
            real_keyring("real_auto_mode_keeps_the_refresh_token_in_the_keyring_only")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "auto");
        let guard = lock(&cache);
        let saved = tokens("auto", true);
        let refresh = saved.refresh_token.clone().unwrap();
        cache.save(&saved, &guard).unwrap();

        let text = file_text(&cache);
        assert!(
            !text.contains(refresh.expose()),
            "the refresh token leaked into the file: {text}"
        );
        assert!(text.contains("id-token-auto"));
        assert_eq!(
            stored_refresh(&cache),
            RefreshPlace::Keyring(expected),
            "{}",
            wrong_store_hint(expected)
        );
        assert_eq!(
            read_with_os_tool(expected, &cache.refresh_account()).as_deref(),
            Some(refresh.expose())
        );

        let cached = cache.load().unwrap().unwrap();
        assert_eq!(
            cached.tokens.refresh_token, None,
            "the hit path does not read the keyring"
        );
        assert!(cached.has_refresh_token());
        assert_eq!(cache.refresh_token(&cached, &guard).unwrap(), Some(refresh));

        // A rotated refresh token replaces the old one.
        let rotated = tokens("auto2", true);
        cache.save(&rotated, &guard).unwrap();
        let cached = cache.load().unwrap().unwrap();
        assert_eq!(
            cache.refresh_token(&cached, &guard).unwrap(),
            rotated.refresh_token
        );

        // An entry without a refresh token leaves none behind in the keyring.
        cache.save(&tokens("auto3", false), &guard).unwrap();
        assert_eq!(stored_refresh(&cache), RefreshPlace::None);
        assert_eq!(read_with_os_tool(expected, &cache.refresh_account()), None);
    }

    #[test]
    fn real_remove_deletes_the_file_and_the_keyring_item() {
        let Some(expected) = real_keyring("real_remove_deletes_the_file_and_the_keyring_item")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "auto");
        let guard = lock(&cache);
        cache.save(&tokens("rm", true), &guard).unwrap();
        assert!(read_with_os_tool(expected, &cache.refresh_account()).is_some());
        cache.remove(&guard).unwrap();
        assert!(!cache.entry_path().exists());
        assert_eq!(read_with_os_tool(expected, &cache.refresh_account()), None);
        assert_eq!(
            cache
                .keyring
                .get_from(expected, &cache.refresh_account())
                .unwrap(),
            None
        );
    }

    #[test]
    fn real_a_refresh_token_gone_from_the_keyring_means_a_new_login() {
        let Some(expected) =
            real_keyring("real_a_refresh_token_gone_from_the_keyring_means_a_new_login")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), "auto");
        let guard = lock(&cache);
        cache.save(&tokens("gone", true), &guard).unwrap();
        // What a reboot does to the kernel keyring, or a user to their keyring.
        cache
            .keyring
            .delete_from(expected, &cache.refresh_account())
            .unwrap();
        let cached = cache.load().unwrap().unwrap();
        assert_eq!(cache.refresh_token(&cached, &guard).unwrap(), None);
    }

    #[test]
    fn real_keyring_keeps_a_large_login_or_says_it_refused_one_too_large() {
        let Some(expected) =
            real_keyring("real_keyring_keeps_a_large_login_or_says_it_refused_one_too_large")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut cache = cache_in(dir.path(), "keyring");
        cache.keyring = Keyring::with_stores(dir.path(), vec![expected], KEYRING_TIMEOUT);
        let guard = lock(&cache);
        // A 4 KB ID token and a 2,000-character refresh token: every store takes that.
        let large = large_tokens("kr-large");
        save_and_read_back(&cache, &large, &guard);

        // Over 32 KB: the kernel keyring refuses it, and says so; the Secret Service takes it.
        let mut huge = large_tokens("kr-huge");
        huge.access_token = Some(Secret::new("h".repeat(40_000)));
        match (expected, cache.save(&huge, &guard)) {
            (Store::Keyutils, Err(err)) => {
                let message = crate::error::one_line(&err);
                assert!(
                    message.starts_with(
                        "the kernel keyring refused the cache entry (too large: over 32767 bytes"
                    ),
                    "{message}"
                );
                assert!(message.contains("--cache-storage auto"), "{message}");
                // The entry it had is still there.
                assert_eq!(cache.load().unwrap().unwrap().tokens, large);
            }
            (Store::SecretService, Ok(())) => {
                assert_eq!(cache.load().unwrap().unwrap().tokens, huge);
            }
            (store, outcome) => panic!("{store:?}: {outcome:?}"),
        }
        cache.remove(&guard).unwrap();
        assert!(cache.load().unwrap().is_none());
    }
}
