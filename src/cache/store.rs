//! The secret stores that keep what `auto` and `keyring` storage keep out of plain files: which
//! there are and which each OS has ([`Store`], [`Os`]), the one interface every store is used
//! through ([`SecretStore`]: put, get and remove an item by account), and how one store fails
//! ([`StoreFailure`]: out of reach, or refused and why).
//!
//! The bottom of the stores' part of `cache/`: the keyring client (`keyring_store.rs`), the
//! DPAPI files (`protected_file.rs`) and the wording of failures (`store_failure.rs`) build on
//! it, and it uses none of them.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// The platforms whose stores and advice differ. A parameter of everything that names a store
/// or words a message, rather than a `cfg!` inside it, so that every platform's wording is
/// unit-tested on any machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Os {
    Linux,
    Mac,
    Windows,
    /// FreeBSD and OpenBSD: a Secret Service only.
    OtherUnix,
    /// No OS keyring kubecred can use.
    Unsupported,
}

impl Os {
    /// The platform this kubecred was built for.
    pub(crate) const fn current() -> Os {
        if cfg!(target_os = "linux") {
            Os::Linux
        } else if cfg!(any(target_os = "macos", target_os = "ios")) {
            Os::Mac
        } else if cfg!(windows) {
            Os::Windows
        } else if cfg!(any(target_os = "freebsd", target_os = "openbsd")) {
            Os::OtherUnix
        } else {
            Os::Unsupported
        }
    }
}

/// A credential store. Recorded in the cache file next to a token kept in the keyring, so that the
/// refresh path asks the right store directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Store {
    /// The freedesktop Secret Service over D-Bus.
    SecretService,
    /// The Linux kernel key retention service (session + persistent keyrings).
    Keyutils,
    /// The platform's own store: the macOS Keychain; on Windows the Credential Manager, where
    /// kubecred keeps nothing of its own (its items are too small: `protected_file.rs`) and
    /// reads other programs' items only ([`Store::other_programs_stores`]).
    Native,
    /// Windows: a private file under the cache directory, encrypted with DPAPI for the user.
    Dpapi,
}

impl Store {
    /// The store's name on this platform, as messages and `status` say it.
    pub(crate) fn name(self) -> &'static str {
        self.name_on(Os::current())
    }

    pub(crate) fn name_on(self, os: Os) -> &'static str {
        match (self, os) {
            (Store::SecretService, _) => "Secret Service",
            (Store::Keyutils, _) => "kernel keyring",
            (Store::Native, Os::Mac) => "macOS Keychain",
            (Store::Native, Os::Windows) => "Windows Credential Manager",
            (Store::Native, _) => "OS keychain",
            (Store::Dpapi, _) => "DPAPI file store",
        }
    }

    /// The stores of this platform that take new secrets, most preferred first.
    pub(crate) fn platform_stores() -> Vec<Store> {
        match Os::current() {
            Os::Linux => vec![Store::SecretService, Store::Keyutils],
            Os::OtherUnix => vec![Store::SecretService],
            Os::Mac => vec![Store::Native],
            Os::Windows => vec![Store::Dpapi],
            Os::Unsupported => Vec::new(),
        }
    }

    /// The stores of this platform where other programs keep their items through go-keyring
    /// (int128/kubelogin's token cache, which `convert-kubeconfig` reads): the Secret Service,
    /// the macOS Keychain, the Windows Credential Manager; go-keyring uses no kernel keyring.
    pub(crate) fn other_programs_stores() -> Vec<Store> {
        match Os::current() {
            Os::Linux | Os::OtherUnix => vec![Store::SecretService],
            Os::Mac | Os::Windows => vec![Store::Native],
            Os::Unsupported => Vec::new(),
        }
    }

    /// Whether "no such item" from this store proves that the store works. The keyring crate
    /// reports keyutils' "access denied" (what a process without a usable session keyring gets)
    /// as "no such item", so a keyutils miss proves nothing.
    pub(super) fn miss_proves_reachable(self) -> bool {
        self != Store::Keyutils
    }
}

/// What every store does, whatever keeps its items: the keyring crate's stores
/// (`keyring_store.rs`) and the DPAPI files (`protected_file.rs`). The keyring client calls it
/// on a worker thread, within its time bound.
pub(super) trait SecretStore {
    /// Writes `value` as `account`'s item, replacing the one there.
    fn put(&self, account: &str, value: &Secret) -> Result<(), StoreFailure>;
    /// `account`'s item; `Ok(None)`: there is none.
    fn get(&self, account: &str) -> Result<Option<Secret>, StoreFailure>;
    /// Deletes `account`'s item; one that is not there is fine.
    fn remove(&self, account: &str) -> Result<(), StoreFailure>;
}

/// What went wrong with one store, in the terms the advice depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The store is not there or did not answer.
    Unreachable,
    /// It answered and refused: the secret is larger than it takes (or than its quota has left).
    TooLarge,
    /// It answered and refused: it is locked (or its unlock prompt was dismissed).
    Locked,
    /// It answered and refused this program or this user.
    AccessDenied,
    /// It answered with another failure.
    Failed,
}

impl Fault {
    pub(super) fn is_refusal(self) -> bool {
        self != Fault::Unreachable
    }

    /// The refusal in a word or two (after "refused …:").
    pub(super) fn phrase(self) -> &'static str {
        match self {
            Fault::Unreachable => "not reachable",
            Fault::TooLarge => "too large",
            Fault::Locked => "locked",
            Fault::AccessDenied => "access denied",
            Fault::Failed => "an error",
        }
    }
}

/// One store's failure. `detail` is one line and never holds a secret (it comes from error
/// types' `Display`, from I/O errors and from our own words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreFailure {
    pub(crate) store: Store,
    pub(crate) fault: Fault,
    pub(crate) detail: String,
}

impl StoreFailure {
    pub(crate) fn new(store: Store, fault: Fault, detail: impl Into<String>) -> StoreFailure {
        let detail = detail.into().replace(['\n', '\r'], " ");
        StoreFailure {
            store,
            fault,
            detail,
        }
    }

    /// "<store>: <detail>", or "<store> refused it, <phrase>: <detail>" for a refusal.
    pub(super) fn describe(&self, os: Os) -> String {
        let name = self.store.name_on(os);
        match self.fault {
            Fault::Unreachable => format!("{name}: {}", self.detail),
            fault => format!("{name} refused it, {}: {}", fault.phrase(), self.detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_round_trip_through_json() {
        for store in [
            Store::SecretService,
            Store::Keyutils,
            Store::Native,
            Store::Dpapi,
        ] {
            let json = serde_json::to_string(&store).unwrap();
            assert_eq!(serde_json::from_str::<Store>(&json).unwrap(), store);
        }
        assert_eq!(
            serde_json::to_string(&Store::SecretService).unwrap(),
            "\"secret-service\""
        );
        assert_eq!(serde_json::to_string(&Store::Dpapi).unwrap(), "\"dpapi\"");
    }

    #[test]
    fn store_names_are_the_platforms_own() {
        assert_eq!(
            Store::Native.name_on(Os::Windows),
            "Windows Credential Manager"
        );
        assert_eq!(Store::Native.name_on(Os::Mac), "macOS Keychain");
        assert_eq!(Store::Dpapi.name_on(Os::Windows), "DPAPI file store");
        assert_eq!(Store::Keyutils.name_on(Os::Linux), "kernel keyring");
    }

    #[test]
    fn details_stay_on_one_line() {
        let one = StoreFailure::new(Store::SecretService, Fault::Failed, "a\nb\rc");
        assert_eq!(one.detail, "a b c");
    }
}
