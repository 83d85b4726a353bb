//! The Windows store of what `keyring` and `auto` storage keep out of plain files: one private
//! file per secret, `<cache-dir>\dpapi\<account>.dpapi`, whose content is the secret encrypted
//! with DPAPI (`CryptProtectData`, user scope: only this Windows user, on this machine, can
//! decrypt it — with a key Windows derives from their logon, as it does for the Credential
//! Manager's own items).
//!
//! Why not the Credential Manager (DECISIONS.md, "Secrets on Windows"): one item holds at
//! most 2560 bytes, and an ordinary login's entry (an ID token of a few KB, an Entra ID refresh
//! token of 1–2 KB) is larger; splitting a secret over several items makes every save several
//! writes that a killed process can leave half done, and the keyring crate's items roam with the
//! user's profile to other machines. A file takes any size, is replaced atomically
//! (`private_file`), and stays on this machine. This is how Azure's own tools keep their token
//! cache on Windows (the Azure CLI's `msal_token_cache.bin`, through the MSAL extensions).
//!
//! [`ProtectedFiles`] is this store behind the stores' one interface (`store::SecretStore`), as
//! the keyring crate's stores are (`keyring_store.rs`). The file is written and read like every
//! other cache file (`private_file`: atomic replace, bounded reads). A blob that does not decrypt (copied from another user or machine, or after an
//! administrator reset the user's password) is a miss, replaced by the next save.
//!
//! DPAPI exists only on Windows; unit tests elsewhere run this store over a reversible stand-in
//! for it (`not_dpapi`), so that the file handling is tested on every platform.

use super::store::{Fault, SecretStore, Store, StoreFailure};
use crate::fs::private_file::{self, ReadError};
use crate::secret::Secret;
use std::io;
use std::path::{Path, PathBuf};

/// The directory under the cache root.
pub(crate) const DIR: &str = "dpapi";

/// A blob larger than this is not one kubecred wrote (entries are at most 1 MiB).
const MAX_BLOB_BYTES: u64 = 2 * 1024 * 1024;

/// The file of `account` (`<key>` or `<key>:refresh`; Windows file names cannot hold `:`).
pub(crate) fn path(root: &Path, account: &str) -> PathBuf {
    root.join(DIR)
        .join(format!("{}.dpapi", account.replace(':', ".")))
}

/// The DPAPI store of the cache rooted at `root`: one file per item.
pub(super) struct ProtectedFiles<'a> {
    pub(super) root: &'a Path,
}

impl SecretStore for ProtectedFiles<'_> {
    /// Encrypts `value` and replaces the file of `account` with it.
    fn put(&self, account: &str, value: &Secret) -> Result<(), StoreFailure> {
        let blob = protect(value.expose().as_bytes()).map_err(|err| {
            StoreFailure::new(
                Store::Dpapi,
                fault_of_io(&err),
                format!("CryptProtectData: {err}"),
            )
        })?;
        let file = path(self.root, account);
        private_file::write_private(self.root, &file, &blob).map_err(|err| {
            StoreFailure::new(
                Store::Dpapi,
                fault_of_io(&err),
                format!("cannot write {}: {err}", file.display()),
            )
        })
    }

    /// The secret of `account`; `Ok(None)` when there is no file, or one that is not a blob
    /// this user can decrypt.
    fn get(&self, account: &str) -> Result<Option<Secret>, StoreFailure> {
        let file = path(self.root, account);
        let blob = match private_file::read(&file, MAX_BLOB_BYTES) {
            Ok(blob) => blob,
            Err(ReadError::NotFound) => return Ok(None),
            Err(ReadError::Corrupt(reason)) => {
                crate::debug!(1, "ignoring {}: {reason}", file.display());
                return Ok(None);
            }
            Err(ReadError::Foreign(reason)) => {
                return Err(StoreFailure::new(
                    Store::Dpapi,
                    Fault::AccessDenied,
                    format!("{}: {reason}", file.display()),
                ));
            }
            Err(ReadError::Io(err)) => {
                return Err(StoreFailure::new(
                    Store::Dpapi,
                    fault_of_io(&err),
                    format!("cannot read {}: {err}", file.display()),
                ));
            }
        };
        match unprotect(&blob).map(String::from_utf8) {
            Ok(Ok(text)) => Ok(Some(Secret::new(text))),
            Ok(Err(_)) => {
                crate::debug!(1, "ignoring {}: not text", file.display());
                Ok(None)
            }
            Err(err) => {
                crate::debug!(
                    1,
                    "ignoring {}: it does not decrypt for this user ({err})",
                    file.display()
                );
                Ok(None)
            }
        }
    }

    /// Deletes the file of `account` and what killed writers of it left; a missing file is
    /// fine.
    fn remove(&self, account: &str) -> Result<(), StoreFailure> {
        let file = path(self.root, account);
        private_file::remove_with_leftovers(&file)
            .map(|_| ())
            .map_err(|err| {
                StoreFailure::new(
                    Store::Dpapi,
                    fault_of_io(&err),
                    format!("cannot delete {}: {err}", file.display()),
                )
            })
    }
}

fn fault_of_io(err: &io::Error) -> Fault {
    match err.kind() {
        io::ErrorKind::PermissionDenied => Fault::AccessDenied,
        io::ErrorKind::Unsupported => Fault::Unreachable,
        _ => Fault::Failed,
    }
}

#[cfg(windows)]
use dpapi::{protect, unprotect};
#[cfg(not(windows))]
use not_dpapi::{protect, unprotect};

/// `CryptProtectData` and `CryptUnprotectData` through `windows-sys`, the binding the keyring
/// crate already brings in for the Credential Manager (same version; one more feature).
#[cfg(windows)]
mod dpapi {
    use std::io;
    use windows_sys::Win32::Foundation::LocalFree;
    use windows_sys::Win32::Security::Cryptography::{
        CRYPT_INTEGER_BLOB, CRYPTPROTECT_UI_FORBIDDEN, CryptProtectData, CryptUnprotectData,
    };

    /// Mixed into every blob. Not a secret (it is in this source): it only keeps kubecred's
    /// blobs apart from other programs' — a blob of ours does not decrypt for a caller that
    /// passes none, nor one of theirs for us.
    const ENTROPY: &[u8] = b"kubecred token cache";

    /// The blob's description, stored in it in the clear (what DPAPI tools show for it).
    const DESCRIPTION: windows_sys::core::PCWSTR = windows_sys::core::w!("kubecred");

    fn blob(bytes: &[u8]) -> io::Result<CRYPT_INTEGER_BLOB> {
        Ok(CRYPT_INTEGER_BLOB {
            cbData: u32::try_from(bytes.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "over 4 GiB"))?,
            // DPAPI reads the input only; the API's type is not const.
            pbData: bytes.as_ptr().cast_mut(),
        })
    }

    /// Copies DPAPI's output and frees it (zeroed first: it may be a plain secret).
    ///
    /// # Safety
    /// `out` must be an output blob DPAPI filled (allocated with `LocalAlloc`).
    unsafe fn take(out: CRYPT_INTEGER_BLOB) -> Vec<u8> {
        // SAFETY: DPAPI returned `cbData` readable and writable bytes at `pbData`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.pbData, out.cbData as usize) };
        let copy = bytes.to_vec();
        bytes.fill(0);
        // SAFETY: allocated by DPAPI with LocalAlloc, freed once.
        unsafe { LocalFree(out.pbData.cast()) };
        copy
    }

    /// Encrypts for the current user. `CRYPTPROTECT_UI_FORBIDDEN`: never a dialog (kubecred
    /// runs under kubectl, often with nobody watching).
    pub(super) fn protect(plain: &[u8]) -> io::Result<Vec<u8>> {
        // SAFETY: every pointer is valid for the call; `out` is filled on success only.
        call(plain, |input, entropy, out| unsafe {
            CryptProtectData(
                input,
                DESCRIPTION,
                entropy,
                std::ptr::null(),
                std::ptr::null(),
                CRYPTPROTECT_UI_FORBIDDEN,
                out,
            )
        })
    }

    pub(super) fn unprotect(sealed: &[u8]) -> io::Result<Vec<u8>> {
        // SAFETY: as in `protect`; no description is asked for.
        call(sealed, |input, entropy, out| unsafe {
            CryptUnprotectData(
                input,
                std::ptr::null_mut(),
                entropy,
                std::ptr::null(),
                std::ptr::null(),
                CRYPTPROTECT_UI_FORBIDDEN,
                out,
            )
        })
    }

    /// Runs one DPAPI call on `data` with kubecred's entropy and returns its output.
    fn call(
        data: &[u8],
        dpapi: impl FnOnce(
            *const CRYPT_INTEGER_BLOB,
            *const CRYPT_INTEGER_BLOB,
            *mut CRYPT_INTEGER_BLOB,
        ) -> windows_sys::core::BOOL,
    ) -> io::Result<Vec<u8>> {
        let input = blob(data)?;
        let entropy = blob(ENTROPY)?;
        let mut out = CRYPT_INTEGER_BLOB {
            cbData: 0,
            pbData: std::ptr::null_mut(),
        };
        if dpapi(&input, &entropy, &mut out) == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: filled by the DPAPI call, which succeeded.
        Ok(unsafe { take(out) })
    }
}

/// Elsewhere: no DPAPI. Unit tests get a reversible stand-in that, like DPAPI, leaves no byte of
/// the secret in the file; other builds refuse (no store of this kind is chosen there: an entry
/// naming it came from a Windows machine).
#[cfg(not(windows))]
mod not_dpapi {
    use std::io;

    #[cfg(test)]
    const MARK: &[u8] = b"not-dpapi:";

    #[cfg(test)]
    pub(super) fn protect(plain: &[u8]) -> io::Result<Vec<u8>> {
        Ok(MARK
            .iter()
            .copied()
            .chain(plain.iter().map(|b| b ^ 0xa5))
            .collect())
    }

    #[cfg(test)]
    pub(super) fn unprotect(sealed: &[u8]) -> io::Result<Vec<u8>> {
        let body = sealed
            .strip_prefix(MARK)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a test blob"))?;
        Ok(body.iter().map(|b| b ^ 0xa5).collect())
    }

    #[cfg(not(test))]
    pub(super) fn protect(_: &[u8]) -> io::Result<Vec<u8>> {
        Err(unsupported())
    }

    #[cfg(not(test))]
    pub(super) fn unprotect(_: &[u8]) -> io::Result<Vec<u8>> {
        Err(unsupported())
    }

    #[cfg(not(test))]
    fn unsupported() -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, "DPAPI exists only on Windows")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(root: &tempfile::TempDir) -> ProtectedFiles<'_> {
        ProtectedFiles { root: root.path() }
    }

    #[test]
    fn a_secret_round_trips_through_its_file_and_is_not_in_it_in_the_clear() {
        let root = tempfile::tempdir().unwrap();
        let secret = Secret::new("rt-".repeat(700));
        store(&root).put("k:refresh", &secret).unwrap();
        let file = path(root.path(), "k:refresh");
        assert_eq!(file, root.path().join("dpapi").join("k.refresh.dpapi"));
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(6).any(|w| w == b"rt-rt-"),
            "plain text on disk"
        );
        assert_eq!(store(&root).get("k:refresh").unwrap(), Some(secret));
        assert_eq!(private_file::temp_files_left_in(file.parent().unwrap()), 0);

        store(&root).remove("k:refresh").unwrap();
        assert!(!file.exists());
        assert_eq!(store(&root).get("k:refresh").unwrap(), None);
        store(&root).remove("k:refresh").unwrap();
    }

    #[test]
    fn a_blob_that_does_not_decrypt_is_a_miss_and_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let file = path(root.path(), "k");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"someone else's blob").unwrap();
        assert_eq!(store(&root).get("k").unwrap(), None);
        store(&root).put("k", &Secret::new("new")).unwrap();
        assert_eq!(store(&root).get("k").unwrap(), Some(Secret::new("new")));
    }

    #[test]
    fn a_file_that_cannot_be_written_is_a_refusal_naming_the_file() {
        let root = tempfile::tempdir().unwrap();
        // A regular file where the directory should be: not even root can write below it.
        std::fs::write(root.path().join(DIR), b"").unwrap();
        let err = store(&root)
            .put("k", &Secret::new("the-secret-value"))
            .unwrap_err();
        assert_eq!(err.store, Store::Dpapi);
        assert_eq!(err.fault, Fault::Failed);
        assert!(err.detail.starts_with("cannot write "), "{err:?}");
        assert!(err.detail.contains("k.dpapi"), "{err:?}");
        assert!(!err.detail.contains("the-secret-value"));
    }
}
