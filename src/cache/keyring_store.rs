//! The OS keyring, as the token cache uses it: bounded in time, with the store picked by trying it.
//!
//! Stores, in order of preference: on Linux the Secret Service (GNOME Keyring, KWallet, KeePassXC —
//! persistent, what desktops have), then the kernel keyring (keyutils: in memory until reboot, but
//! present in a headless SSH session where no Secret Service runs); on macOS the Keychain; on
//! Windows the Credential Manager. Whether a store is reachable is decided by an actual operation
//! on it, never guessed from the environment, and each failure keeps its reason for the message.
//!
//! Every call runs on a worker thread and is abandoned after [`KEYRING_TIMEOUT`]: a Secret Service
//! whose collection is locked may show an unlock dialog and block until someone answers it, and
//! client-go waits for the plugin forever. A store that timed out once is not asked again in this
//! process (its worker thread may still be stuck).
//!
//! Secrets travel as [`Secret`]; error texts come from the keyring crate's `Display`, which never
//! includes a stored value.

use crate::secret::Secret;
use keyring::{Entry, Error as KeyringError};
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

/// The keyring "service" of every kubecred item; the account names the cache entry.
pub(crate) const SERVICE: &str = "kubecred";

/// How long one keyring call may take before kubecred gives up on that store.
pub(crate) const KEYRING_TIMEOUT: Duration = Duration::from_secs(10);

/// A credential store. Recorded in the cache file next to a token kept in the keyring, so that the
/// refresh path asks the right store directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Store {
    /// The freedesktop Secret Service over D-Bus.
    SecretService,
    /// The Linux kernel key retention service (session + persistent keyrings).
    Keyutils,
    /// The platform's own store: macOS Keychain, Windows Credential Manager.
    Native,
}

impl Store {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Store::SecretService => "Secret Service",
            Store::Keyutils => "kernel keyring",
            Store::Native => "OS keychain",
        }
    }

    /// The stores of this platform, most preferred first.
    pub(crate) fn platform_stores() -> Vec<Store> {
        if cfg!(target_os = "linux") {
            vec![Store::SecretService, Store::Keyutils]
        } else if cfg!(any(target_os = "freebsd", target_os = "openbsd")) {
            vec![Store::SecretService]
        } else if cfg!(any(
            target_os = "macos",
            target_os = "ios",
            target_os = "windows"
        )) {
            vec![Store::Native]
        } else {
            Vec::new()
        }
    }

    /// Whether "no such item" from this store proves that the store works. The keyring crate
    /// reports keyutils' "access denied" (what a process without a usable session keyring gets)
    /// as "no such item", so a keyutils miss proves nothing.
    fn miss_proves_reachable(self) -> bool {
        self != Store::Keyutils
    }
}

/// Why no store could do what was asked: one reason per store tried, joined with "; ".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreachable(pub String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Stores that timed out in this process; their worker threads may still be blocked.
static TIMED_OUT: Mutex<Vec<Store>> = Mutex::new(Vec::new());

/// The keyring client of one cache. Cheap to build: nothing is contacted until a call.
#[derive(Debug, Clone)]
pub(crate) struct Keyring {
    stores: Vec<Store>,
    timeout: Duration,
}

impl Default for Keyring {
    fn default() -> Self {
        Keyring {
            stores: Store::platform_stores(),
            timeout: KEYRING_TIMEOUT,
        }
    }
}

impl Keyring {
    /// A client limited to some stores and another timeout (tests).
    #[cfg(test)]
    pub(crate) fn with_stores(stores: Vec<Store>, timeout: Duration) -> Keyring {
        Keyring { stores, timeout }
    }

    /// Stores `value` under `account` in the first store that accepts it; returns that store.
    pub(crate) fn set(&self, account: &str, value: &Secret) -> Result<Store, Unreachable> {
        let mut reasons = Vec::new();
        for &store in &self.stores {
            let (owned_account, owned_value) = (account.to_string(), value.clone());
            let outcome = self.call(store, move || {
                let entry = entry(store, &owned_account)?;
                entry.set_password(owned_value.expose())?;
                read_back(&entry, owned_value.expose())
            });
            match outcome {
                Ok(true) => {
                    crate::debug!(2, "stored {account} in the {}", store.name());
                    return Ok(store);
                }
                Ok(false) => reasons.push(format!("{}: {}", store.name(), unreadable(store))),
                Err(reason) => reasons.push(format!("{}: {reason}", store.name())),
            }
        }
        Err(unreachable(reasons))
    }

    /// Reads `account` from one given store. `Ok(None)`: no such item.
    pub(crate) fn get_from(
        &self,
        store: Store,
        account: &str,
    ) -> Result<Option<Secret>, Unreachable> {
        self.get_one(store, account)
            .map_err(|reason| Unreachable(format!("{}: {reason}", store.name())))
    }

    /// Looks for `account` in every store, in order. `Ok(None)` only when at least one store is
    /// known to work and none holds the item; an error when no store could be reached at all.
    pub(crate) fn find(&self, account: &str) -> Result<Option<(Secret, Store)>, Unreachable> {
        let mut reasons = Vec::new();
        let mut reachable = false;
        let mut unproven = Vec::new();
        for &store in &self.stores {
            match self.get_one(store, account) {
                Ok(Some(value)) => return Ok(Some((value, store))),
                Ok(None) if store.miss_proves_reachable() => reachable = true,
                Ok(None) => unproven.push(store),
                Err(reason) => reasons.push(format!("{}: {reason}", store.name())),
            }
        }
        if reachable {
            return Ok(None);
        }
        // Only stores whose miss proves nothing are left: a write tells whether they work.
        for store in unproven {
            match self.probe(store) {
                Ok(()) => return Ok(None),
                Err(reason) => reasons.push(format!("{}: {reason}", store.name())),
            }
        }
        Err(unreachable(reasons))
    }

    /// Deletes `account` from one store; an item that is not there is fine.
    pub(crate) fn delete_from(&self, store: Store, account: &str) -> Result<(), Unreachable> {
        let owned_account = account.to_string();
        let outcome = self.call(store, move || {
            match entry(store, &owned_account)?.delete_credential() {
                Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
                Err(err) => Err(err),
            }
        });
        outcome.map_err(|reason| Unreachable(format!("{}: {reason}", store.name())))
    }

    /// Deletes `account` from every store. An error only when no store could be reached.
    pub(crate) fn delete_everywhere(&self, account: &str) -> Result<(), Unreachable> {
        let mut reasons = Vec::new();
        let mut deleted_somewhere = false;
        for &store in &self.stores {
            match self.delete_from(store, account) {
                Ok(()) => deleted_somewhere = true,
                Err(reason) => reasons.push(reason.0),
            }
        }
        if deleted_somewhere {
            Ok(())
        } else {
            Err(unreachable(reasons))
        }
    }

    /// Reads the item another program keeps under `service` and `account` (int128/kubelogin's
    /// token cache, written through Go's go-keyring), as text. go-keyring names items by service
    /// and account as kubecred does, but stores the value as UTF-8 bytes (the keyring crate's
    /// Windows store reads UTF-16) and on Windows names the credential `service:account`; it
    /// uses no kernel keyring. `Ok(None)` when a store was reached and none holds the item.
    pub(crate) fn get_other_programs(
        &self,
        service: &str,
        account: &str,
    ) -> Result<Option<String>, Unreachable> {
        let mut reasons = Vec::new();
        let mut reachable = false;
        for &store in self
            .stores
            .iter()
            .filter(|store| **store != Store::Keyutils)
        {
            let (owned_service, owned_account) = (service.to_string(), account.to_string());
            let outcome = self.call(store, move || {
                match other_programs_entry(store, &owned_service, &owned_account)?.get_secret() {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(KeyringError::NoEntry) => Ok(None),
                    Err(err) => Err(err),
                }
            });
            match outcome {
                Ok(Some(bytes)) => {
                    return String::from_utf8(bytes).map(Some).map_err(|_| {
                        Unreachable(format!(
                            "the {} item {service}/{account} is not text",
                            store.name()
                        ))
                    })
                }
                Ok(None) => reachable = true,
                Err(reason) => reasons.push(format!("{}: {reason}", store.name())),
            }
        }
        if reachable {
            Ok(None)
        } else {
            Err(unreachable(reasons))
        }
    }

    fn get_one(&self, store: Store, account: &str) -> Result<Option<Secret>, String> {
        let owned_account = account.to_string();
        self.call(store, move || {
            match entry(store, &owned_account)?.get_password() {
                Ok(value) => Ok(Some(Secret::new(value))),
                Err(KeyringError::NoEntry) => Ok(None),
                Err(err) => Err(err),
            }
        })
    }

    /// Writes, reads and deletes a throw-away item, to learn whether `store` works at all.
    pub(crate) fn probe(&self, store: Store) -> Result<(), String> {
        let readable = self.call(store, move || {
            let probe = entry(store, "probe")?;
            probe.set_password("reachable")?;
            let readable = read_back(&probe, "reachable")?;
            match probe.delete_credential() {
                Ok(()) | Err(KeyringError::NoEntry) => Ok(readable),
                Err(err) => Err(err),
            }
        })?;
        if readable {
            Ok(())
        } else {
            Err(unreadable(store).into())
        }
    }

    /// Runs one keyring operation on a worker thread, waiting at most `self.timeout`. The error is
    /// the reason, as one line.
    fn call<T: Send + 'static>(
        &self,
        store: Store,
        op: impl FnOnce() -> keyring::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let timeout_text = || {
            format!(
                "the OS keyring did not answer within {} (is it locked, waiting for an unlock prompt?)",
                crate::duration::display(self.timeout)
            )
        };
        if TIMED_OUT
            .lock()
            .map(|stores| stores.contains(&store))
            .unwrap_or(false)
        {
            return Err(format!("{} earlier in this run", timeout_text()));
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("kubecred-keyring".into())
            .spawn(move || {
                let _ = sender.send(op());
            })
            .map_err(|err| format!("cannot start a thread for the keyring call: {err}"))?;
        match receiver.recv_timeout(self.timeout) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(describe(store, &err)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(mut stores) = TIMED_OUT.lock() {
                    stores.push(store);
                }
                Err(timeout_text())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err("the keyring call failed unexpectedly (its thread panicked)".into())
            }
        }
    }
}

/// Whether `entry` now holds `expected`. A successful write is not enough: a process whose session
/// keyring it may not search (seen on VMs and containers where the session keyring belongs to
/// another user namespace) can add a key to it and then never read it again.
fn read_back(entry: &Entry, expected: &str) -> keyring::Result<bool> {
    match entry.get_password() {
        Ok(value) => Ok(value == expected),
        Err(KeyringError::NoEntry) => Ok(false),
        Err(err) => Err(err),
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

fn unreachable(reasons: Vec<String>) -> Unreachable {
    if reasons.is_empty() {
        Unreachable("kubecred has no OS keyring support on this platform".into())
    } else {
        Unreachable(reasons.join("; "))
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

/// One line about a keyring error, with a hint where the cause is common. Uses `Display` only:
/// the `Debug` form of some variants carries the bytes that were read.
fn describe(store: Store, err: &KeyringError) -> String {
    let text = err.to_string().replace(['\n', '\r'], " ");
    match (store, err) {
        // See `Store::miss_proves_reachable`: from a write, this is keyutils' "access denied".
        (Store::Keyutils, KeyringError::NoEntry) => {
            "access denied (this session has no usable session keyring; run under `keyctl session`)"
                .into()
        }
        (_, KeyringError::NoStorageAccess(_)) => format!("{text} (is the keyring locked?)"),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::stored_entry::RefreshPlace;
    use crate::cache::tests::{cache_in, file_text, lock, stored_refresh, tokens};
    use std::process::Command;

    #[test]
    fn store_names_round_trip_through_json() {
        for store in [Store::SecretService, Store::Keyutils, Store::Native] {
            let json = serde_json::to_string(&store).unwrap();
            assert_eq!(serde_json::from_str::<Store>(&json).unwrap(), store);
        }
        assert_eq!(
            serde_json::to_string(&Store::SecretService).unwrap(),
            "\"secret-service\""
        );
    }

    #[test]
    fn no_store_means_a_clear_reason() {
        let keyring = Keyring::with_stores(Vec::new(), KEYRING_TIMEOUT);
        let err = keyring.set("k", &Secret::new("v")).unwrap_err();
        assert!(err.0.contains("no OS keyring support"), "{err}");
        assert!(keyring.find("k").is_err());
        assert!(keyring.delete_everywhere("k").is_err());
    }

    #[test]
    fn errors_never_show_the_value() {
        let err = KeyringError::BadEncoding(b"super-secret-bytes".to_vec());
        assert!(!describe(Store::Native, &err).contains("super-secret"));
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
                && Keyring::with_stores(vec![Store::Keyutils], KEYRING_TIMEOUT)
                    .probe(Store::Keyutils)
                    .is_ok()
            {
                crate::log::notice(format_args!("this session has a working kernel keyring: testing with the Secret Service only"));
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
            keyring_cache.keyring = Keyring::with_stores(stores.clone(), KEYRING_TIMEOUT);
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
                message.contains("use --cache-storage disk, or start a keyring"),
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
            auto.keyring = Keyring::with_stores(stores, KEYRING_TIMEOUT);
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
            let keyring = Keyring::with_stores(vec![Store::SecretService], timeout);

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
                message.contains("the OS keyring did not answer within 300ms"),
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
            crate::log::notice(format_args!("skipped {test}: set {ENV_SECRET_SERVICE}=1 inside dbus-run-session with gnome-keyring, or {ENV_KEYUTILS}=1 under `keyctl session -`"));
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
            Store::Native => unreachable!("no OS tool check on this platform"),
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
        cache.save(&saved, &guard).unwrap();

        let cached = cache.load().unwrap().unwrap();
        assert_eq!(cached.tokens, saved);
        assert_eq!(
            cache.refresh_token(&cached, &guard).unwrap(),
            saved.refresh_token
        );
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
}
