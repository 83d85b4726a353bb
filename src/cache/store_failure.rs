//! Why a secret store did not keep or give back a secret, and what to tell the user about it on
//! their OS.
//!
//! A store that is not there (no D-Bus session, no daemon, no session keyring, no answer in time)
//! is *unreachable*; a store that answered and said no *refused*: the secret is too large for it,
//! it is locked, or it denied this program access. The two need different words and different
//! advice, and the advice names only what exists on the platform: a Secret Service or the kernel
//! keyring on Linux, the Keychain on macOS, DPAPI on Windows.
//!
//! The OS is a parameter ([`Os`]) of everything that words a message, rather than a `cfg!` inside
//! it, so that the wording of every platform is unit-tested on any machine. One store's failure
//! ([`StoreFailure`]: which store, its [`Fault`], the detail) is defined with the stores
//! (`store.rs`); here is what several of them mean together, and the advice. Reading a keyring
//! crate error takes the platform's own error types (their codes), so that part is `cfg`'d; the
//! code tables it feeds are plain functions, tested everywhere too.

use super::store::{Fault, Os, Store, StoreFailure};

/// Why no store did what was asked: one failure per store tried, in the order tried. Empty when
/// the platform has no store at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeyringFailure {
    pub(crate) failures: Vec<StoreFailure>,
}

impl From<StoreFailure> for KeyringFailure {
    fn from(failure: StoreFailure) -> Self {
        KeyringFailure {
            failures: vec![failure],
        }
    }
}

impl std::fmt::Display for KeyringFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary(Os::current(), "the secret"))
    }
}

impl KeyringFailure {
    /// The failure the message and its advice are about: the first refusal (a store that is
    /// there and said no is what the user can act on), else the first store that was out of reach.
    fn main(&self) -> Option<&StoreFailure> {
        self.failures
            .iter()
            .find(|failure| failure.fault.is_refusal())
            .or(self.failures.first())
    }

    /// The fault the advice is about ([`Fault::Unreachable`] when no store answered).
    pub(crate) fn fault(&self) -> Fault {
        self.main()
            .map_or(Fault::Unreachable, |failure| failure.fault)
    }

    /// What happened to `what` ("the cache entry", "the refresh token"), without advice:
    /// "the kernel keyring refused the cache entry (too large: …; Secret Service: …)", or
    /// "no OS keyring is reachable (Secret Service: …; kernel keyring: …)".
    pub(crate) fn summary(&self, os: Os, what: &str) -> String {
        let Some(main) = self.main() else {
            return "kubecred has no OS keyring support on this platform".into();
        };
        if !main.fault.is_refusal() {
            let reasons: Vec<String> = self.failures.iter().map(|f| f.describe(os)).collect();
            return format!("no OS keyring is reachable ({})", reasons.join("; "));
        }
        let others: Vec<String> = self
            .failures
            .iter()
            .filter(|failure| !std::ptr::eq(*failure, main))
            .map(|failure| format!("; {}", failure.describe(os)))
            .collect();
        let name = main.store.name_on(os);
        let how = match main.fault {
            Fault::Failed => format!("the {name} failed with {what}"),
            _ => format!("the {name} refused {what}"),
        };
        let phrase = match main.fault {
            Fault::Failed => String::new(),
            fault => format!("{}: ", fault.phrase()),
        };
        format!("{how} ({phrase}{}{})", main.detail, others.concat())
    }

    /// [`summary`](Self::summary) and what to do about it on `os`, for `--cache-storage keyring`
    /// (the whole entry in the keyring).
    pub(crate) fn message(&self, os: Os, what: &str) -> String {
        format!("{}; {}", self.summary(os, what), advice(os, self.fault()))
    }
}

/// What to do when the keyring cannot keep (or give back) an entry on `os`: only what exists
/// there, and always the way out that needs no keyring.
pub(crate) fn advice(os: Os, fault: Fault) -> &'static str {
    match (os, fault) {
        (Os::Linux, Fault::Unreachable) => {
            "start a Secret Service (GNOME Keyring, KWallet or KeePassXC, as a desktop session does), or run under `keyctl session` for the kernel keyring; or use --cache-storage disk"
        }
        (Os::Linux, Fault::TooLarge) => {
            "use --cache-storage auto (only the refresh token goes to the keyring), start a Secret Service (it takes secrets of any size), or raise the kernel keyring's quota (sysctl kernel.keys.maxbytes)"
        }
        (Os::Linux | Os::OtherUnix, Fault::Locked) => {
            "unlock the keyring (log in to the desktop session, or `gnome-keyring-daemon --unlock`) and answer its prompt; or use --cache-storage disk"
        }
        (Os::Linux, Fault::AccessDenied) => {
            "run under `keyctl session` for a session keyring of your own, or allow kubecred in the Secret Service's prompt; or use --cache-storage disk"
        }
        (Os::Linux | Os::OtherUnix, Fault::Failed) => {
            "check the keyring daemon's log (journalctl --user), or use --cache-storage disk"
        }
        (Os::OtherUnix, Fault::Unreachable | Fault::AccessDenied) => {
            "start a Secret Service (GNOME Keyring, KWallet or KeePassXC, as a desktop session does); or use --cache-storage disk"
        }
        (Os::OtherUnix | Os::Mac, Fault::TooLarge) => {
            "use --cache-storage auto (only the refresh token goes to the keyring) or disk"
        }
        (Os::Mac, Fault::Unreachable) => {
            "the login Keychain needs a logged-in user's session (not a launchd daemon or sudo); or use --cache-storage disk"
        }
        (Os::Mac, Fault::Locked) => {
            "unlock the login Keychain (`security unlock-keychain`, needed over SSH); or use --cache-storage disk"
        }
        (Os::Mac, Fault::AccessDenied) => {
            "allow kubecred when macOS asks for the Keychain (Always Allow), or in Keychain Access; or use --cache-storage disk"
        }
        (Os::Mac, Fault::Failed) => {
            "check the login Keychain with Keychain Access (First Aid), or use --cache-storage disk"
        }
        (Os::Windows, Fault::Unreachable) => {
            "DPAPI needs your Windows user profile loaded (an interactive or batch logon; a service account without a profile has none); or use --cache-storage disk"
        }
        // A DPAPI-protected file takes a secret of any size: "too large" is not a refusal it
        // makes, and would be a failure to write it.
        (Os::Windows, Fault::Failed | Fault::TooLarge) => {
            "check that the cache directory (--cache-dir, by default under %LOCALAPPDATA%), where the DPAPI-protected files are, can be written, and that your Windows user profile is loaded (DPAPI needs it); or use --cache-storage disk"
        }
        (Os::Windows, Fault::Locked | Fault::AccessDenied) => {
            "check that your Windows user can write the cache directory (--cache-dir, by default under %LOCALAPPDATA%), where the DPAPI-protected files are; or use --cache-storage disk"
        }
        (Os::Unsupported, _) => "use --cache-storage disk",
    }
}

/// The fault of a keyring crate error from `store`, read from the platform's own error codes
/// where the crate passes them through.
pub(crate) fn classify(os: Os, store: Store, err: &keyring::Error) -> Fault {
    use keyring::Error as E;
    match (store, err) {
        (_, E::TooLong(..)) => Fault::TooLarge,
        // keyutils answers a payload over 32767 bytes with EINVAL, which the crate reports as an
        // invalid password (our descriptions are always valid).
        (Store::Keyutils, E::Invalid(..)) => Fault::TooLarge,
        // From a write this is keyutils' "access denied" (see `Store::miss_proves_reachable`):
        // a session without a usable session keyring, which `keyctl session` gives.
        (Store::Keyutils, E::NoEntry) => Fault::Unreachable,
        (_, E::NoStorageAccess(inner) | E::PlatformFailure(inner)) => {
            match platform_code(inner.as_ref()) {
                Some(code) => fault_of_code(os, store, code),
                // The crate's own mapping: the Secret Service's NoStorageAccess is a locked
                // collection or a dismissed prompt; its other failures are D-Bus ones.
                None => match (store, err) {
                    (Store::SecretService, E::NoStorageAccess(_)) => Fault::Locked,
                    (Store::SecretService, _) => Fault::Unreachable,
                    (_, E::NoStorageAccess(_)) => Fault::AccessDenied,
                    _ => Fault::Failed,
                },
            }
        }
        _ => Fault::Failed,
    }
}

/// A platform error code inside a keyring crate error, from the types of this platform's store.
#[allow(unused_variables)]
fn platform_code(inner: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<PlatformCode> {
    #[cfg(target_os = "linux")]
    if let Some(err) = inner.downcast_ref::<linux_keyutils::KeyError>() {
        return Some(PlatformCode::Keyutils(match err {
            linux_keyutils::KeyError::QuotaExceeded => KeyutilsCode::QuotaExceeded,
            linux_keyutils::KeyError::AccessDenied | linux_keyutils::KeyError::PermissionDenied => {
                KeyutilsCode::Denied
            }
            linux_keyutils::KeyError::KeyringDoesNotExist
            | linux_keyutils::KeyError::OperationNotSupported => KeyutilsCode::NoKeyring,
            _ => KeyutilsCode::Other,
        }));
    }
    #[cfg(target_os = "macos")]
    if let Some(err) = inner.downcast_ref::<security_framework::base::Error>() {
        return Some(PlatformCode::MacStatus(err.code()));
    }
    #[cfg(windows)]
    if let Some(err) = inner.downcast_ref::<keyring::windows::Error>() {
        return Some(PlatformCode::Win32(err.0));
    }
    None
}

/// The codes [`fault_of_code`] tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Each platform's build reads only its own kind (the tests build them all).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum PlatformCode {
    Keyutils(KeyutilsCode),
    /// A macOS `OSStatus` from the Security framework.
    MacStatus(i32),
    /// A Win32 error code (`GetLastError`).
    Win32(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(any(test, target_os = "linux")), allow(dead_code))]
pub(crate) enum KeyutilsCode {
    /// EDQUOT: this user's keys would exceed kernel.keys.maxbytes (20000 bytes by default).
    QuotaExceeded,
    /// EACCES, EPERM.
    Denied,
    /// No session keyring here, or a kernel without keys (ENOTSUP).
    NoKeyring,
    Other,
}

/// The fault a platform code means.
pub(crate) fn fault_of_code(os: Os, store: Store, code: PlatformCode) -> Fault {
    match (os, store, code) {
        (_, Store::Keyutils, PlatformCode::Keyutils(KeyutilsCode::QuotaExceeded)) => {
            Fault::TooLarge
        }
        (_, Store::Keyutils, PlatformCode::Keyutils(KeyutilsCode::Denied)) => Fault::AccessDenied,
        (_, Store::Keyutils, PlatformCode::Keyutils(KeyutilsCode::NoKeyring)) => Fault::Unreachable,
        (Os::Mac, _, PlatformCode::MacStatus(status)) => match status {
            // errSecInteractionNotAllowed: the keychain is locked and no prompt may be shown
            // (an SSH session).
            -25308 => Fault::Locked,
            // errSecUserCanceled, errSecAuthFailed (Deny in the prompt), errSecReadOnly,
            // errSecMissingEntitlement.
            -128 | -25293 | -25292 | -34018 => Fault::AccessDenied,
            // errSecNotAvailable, errSecNoSuchKeychain, errSecInvalidKeychain: no keychain.
            -25291 | -25294 | -25295 => Fault::Unreachable,
            // errSecDataTooLarge.
            -25302 => Fault::TooLarge,
            _ => Fault::Failed,
        },
        (Os::Windows, _, PlatformCode::Win32(code)) => match code {
            // ERROR_NO_SUCH_LOGON_SESSION: no Credential Manager in this logon (a service).
            1312 => Fault::Unreachable,
            // ERROR_ACCESS_DENIED.
            5 => Fault::AccessDenied,
            _ => Fault::Failed,
        },
        _ => Fault::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_OS: [Os; 5] = [
        Os::Linux,
        Os::Mac,
        Os::Windows,
        Os::OtherUnix,
        Os::Unsupported,
    ];
    const ALL_FAULTS: [Fault; 5] = [
        Fault::Unreachable,
        Fault::TooLarge,
        Fault::Locked,
        Fault::AccessDenied,
        Fault::Failed,
    ];

    /// Words that name a store of one platform only.
    fn foreign_words(os: Os) -> &'static [&'static str] {
        match os {
            Os::Linux => &["Keychain", "Credential Manager", "DPAPI", "%LOCALAPPDATA%"],
            Os::Mac => &[
                "Secret Service",
                "gnome-keyring",
                "keyctl",
                "kernel keyring",
                "DPAPI",
                "Credential Manager",
            ],
            Os::Windows => &[
                "Secret Service",
                "gnome-keyring",
                "GNOME Keyring",
                "keyctl",
                "kernel",
                "Keychain",
                "Credential Manager",
            ],
            Os::OtherUnix => &[
                "keyctl",
                "kernel",
                "Keychain",
                "DPAPI",
                "Credential Manager",
            ],
            Os::Unsupported => &[
                "Secret Service",
                "keyctl",
                "Keychain",
                "DPAPI",
                "Credential Manager",
            ],
        }
    }

    #[test]
    fn advice_names_only_what_exists_on_each_platform_and_always_a_way_out() {
        for os in ALL_OS {
            for fault in ALL_FAULTS {
                let text = advice(os, fault);
                for word in foreign_words(os) {
                    assert!(
                        !text.contains(word),
                        "{os:?} {fault:?} names {word}: {text}"
                    );
                }
                assert!(
                    text.contains("--cache-storage"),
                    "{os:?} {fault:?}: no way out: {text}"
                );
            }
        }
        assert!(advice(Os::Linux, Fault::Unreachable).contains("Secret Service"));
        assert!(advice(Os::Linux, Fault::Unreachable).contains("keyctl session"));
        assert!(advice(Os::Mac, Fault::Locked).contains("security unlock-keychain"));
        assert!(advice(Os::Windows, Fault::Unreachable).contains("DPAPI"));
        assert!(advice(Os::Linux, Fault::TooLarge).contains("--cache-storage auto"));
    }

    fn failure(store: Store, fault: Fault, detail: &str) -> StoreFailure {
        StoreFailure::new(store, fault, detail)
    }

    #[test]
    fn a_refusal_says_refused_and_why_not_unreachable() {
        let both = KeyringFailure {
            failures: vec![
                failure(Store::SecretService, Fault::Unreachable, "no D-Bus session"),
                failure(Store::Keyutils, Fault::TooLarge, "over 32767 bytes"),
            ],
        };
        assert_eq!(both.fault(), Fault::TooLarge);
        let text = both.message(Os::Linux, "the cache entry");
        assert!(
            text.starts_with(
                "the kernel keyring refused the cache entry (too large: over 32767 bytes; Secret Service: no D-Bus session); "
            ),
            "{text}"
        );
        assert!(!text.contains("reachable"), "{text}");
        assert!(text.ends_with(advice(Os::Linux, Fault::TooLarge)), "{text}");

        let locked = KeyringFailure::from(failure(
            Store::Native,
            Fault::Locked,
            "User interaction is not allowed.",
        ));
        assert_eq!(
            locked.summary(Os::Mac, "the refresh token"),
            "the macOS Keychain refused the refresh token (locked: User interaction is not allowed.)"
        );
        let denied = KeyringFailure::from(failure(
            Store::Dpapi,
            Fault::AccessDenied,
            "cannot write C:\\x",
        ));
        let text = denied.message(Os::Windows, "the cache entry");
        assert!(
            text.starts_with("the DPAPI file store refused the cache entry (access denied: cannot write C:\\x); check that your Windows user can write the cache directory"),
            "{text}"
        );
        let failed =
            KeyringFailure::from(failure(Store::SecretService, Fault::Failed, "crypto error"));
        assert_eq!(
            failed.summary(Os::Linux, "the cache entry"),
            "the Secret Service failed with the cache entry (crypto error)"
        );
    }

    #[test]
    fn only_unreachable_stores_say_so_and_keep_every_reason() {
        let none = KeyringFailure {
            failures: vec![
                failure(Store::SecretService, Fault::Unreachable, "no D-Bus session"),
                failure(Store::Keyutils, Fault::Unreachable, "no session keyring"),
            ],
        };
        assert_eq!(
            none.message(Os::Linux, "the cache entry"),
            format!(
                "no OS keyring is reachable (Secret Service: no D-Bus session; kernel keyring: no session keyring); {}",
                advice(Os::Linux, Fault::Unreachable)
            )
        );
        assert_eq!(
            KeyringFailure::default().summary(Os::Unsupported, "x"),
            "kubecred has no OS keyring support on this platform"
        );
        // Other stores' refusals are listed with who refused and how.
        let mixed = KeyringFailure {
            failures: vec![
                failure(Store::SecretService, Fault::Locked, "collection is locked"),
                failure(Store::Keyutils, Fault::TooLarge, "over 32767 bytes"),
            ],
        };
        assert!(mixed.summary(Os::Linux, "the cache entry").ends_with(
            "(locked: collection is locked; kernel keyring refused it, too large: over 32767 bytes)"
        ));
    }

    #[test]
    fn keyring_crate_errors_are_told_apart_per_store() {
        use keyring::Error as E;
        let boxed = || -> Box<dyn std::error::Error + Send + Sync> { "opaque".into() };
        assert_eq!(
            classify(
                Os::Windows,
                Store::Native,
                &E::TooLong("password encoded as UTF-16".into(), 2560)
            ),
            Fault::TooLarge
        );
        assert_eq!(
            classify(
                Os::Linux,
                Store::Keyutils,
                &E::Invalid("password".into(), "rejected by platform".into())
            ),
            Fault::TooLarge
        );
        assert_eq!(
            classify(Os::Linux, Store::Keyutils, &E::NoEntry),
            Fault::Unreachable
        );
        assert_eq!(
            classify(
                Os::Linux,
                Store::SecretService,
                &E::NoStorageAccess(boxed())
            ),
            Fault::Locked
        );
        assert_eq!(
            classify(
                Os::Linux,
                Store::SecretService,
                &E::PlatformFailure(boxed())
            ),
            Fault::Unreachable
        );
        assert_eq!(
            classify(Os::Mac, Store::Native, &E::NoStorageAccess(boxed())),
            Fault::AccessDenied
        );
        assert_eq!(
            classify(Os::Linux, Store::SecretService, &E::BadEncoding(vec![1])),
            Fault::Failed
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_kernel_keyring_quota_is_a_size_refusal() {
        let err =
            keyring::Error::PlatformFailure(Box::new(linux_keyutils::KeyError::QuotaExceeded));
        assert_eq!(classify(Os::Linux, Store::Keyutils, &err), Fault::TooLarge);
        let err =
            keyring::Error::PlatformFailure(Box::new(linux_keyutils::KeyError::PermissionDenied));
        assert_eq!(
            classify(Os::Linux, Store::Keyutils, &err),
            Fault::AccessDenied
        );
    }

    #[test]
    fn platform_codes_mean_what_their_platform_says() {
        let mac = |status| fault_of_code(Os::Mac, Store::Native, PlatformCode::MacStatus(status));
        assert_eq!(mac(-25308), Fault::Locked);
        assert_eq!(mac(-128), Fault::AccessDenied);
        assert_eq!(mac(-25293), Fault::AccessDenied);
        assert_eq!(mac(-25291), Fault::Unreachable);
        assert_eq!(mac(-1), Fault::Failed);
        let win = |code| fault_of_code(Os::Windows, Store::Native, PlatformCode::Win32(code));
        assert_eq!(win(1312), Fault::Unreachable);
        assert_eq!(win(5), Fault::AccessDenied);
        assert_eq!(win(87), Fault::Failed);
        let keyutils =
            |code| fault_of_code(Os::Linux, Store::Keyutils, PlatformCode::Keyutils(code));
        assert_eq!(keyutils(KeyutilsCode::QuotaExceeded), Fault::TooLarge);
        assert_eq!(keyutils(KeyutilsCode::Denied), Fault::AccessDenied);
        assert_eq!(keyutils(KeyutilsCode::NoKeyring), Fault::Unreachable);
        assert_eq!(keyutils(KeyutilsCode::Other), Fault::Failed);
    }
}
