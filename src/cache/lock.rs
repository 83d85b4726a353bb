//! Cross-process lock around one cache entry. Held from the re-read after a cache miss until the
//! write, so that parallel kubectl runs (scripts, `xargs -P`, IDEs) refresh or log in once and the
//! others pick up the result instead of spending a rotated refresh token twice.
//!
//! The lock is an advisory OS file lock (`flock` on unix, `LockFileEx` on Windows) on
//! `<cache_dir>/locks/<key>.lock`; the OS releases it when the file is closed, also when the
//! process dies, so a crashed kubecred never leaves the entry locked. Waiting is bounded: client-go
//! has no timeout on a plugin, so a lock that waits forever hangs kubectl.
//!
//! Lock files are never deleted: deleting one while another process waits on it would let a third
//! process lock a new file of the same name, and two processes would then both hold "the" lock.

use crate::error::{Exit, fail};
use crate::fs::private_file;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The first sleep between attempts; short, because the usual holder finishes a refresh in tens
/// of milliseconds.
const FIRST_BACKOFF: Duration = Duration::from_millis(5);
/// The longest sleep between attempts, so that a waiter notices a released lock quickly.
const MAX_BACKOFF: Duration = Duration::from_millis(50);
/// After this long, tell the user why kubectl is not answering (another kubecred probably waits
/// for a browser login).
const NOTICE_AFTER: Duration = Duration::from_secs(1);

/// Proof that this process holds the lock of one cache entry; the lock is released on drop.
///
/// Cache operations that write take `&EntryLock`, so a write without the lock does not compile.
#[derive(Debug)]
pub struct EntryLock {
    /// The locked file and its path; `None` when the cache is off: there is nothing to protect.
    held: Option<LockedFile>,
}

#[derive(Debug)]
struct LockedFile {
    file: File,
    path: PathBuf,
}

impl EntryLock {
    fn held(file: File, path: &Path) -> EntryLock {
        EntryLock {
            held: Some(LockedFile {
                file,
                path: path.to_path_buf(),
            }),
        }
    }
}

impl EntryLock {
    /// Locks `path` (creating it, and its directory with mode 0700, checked from the cache root
    /// `root` down, see [`private_file::ensure_private_dir`]), waiting at most `timeout`.
    pub(crate) fn acquire(
        root: &Path,
        path: &Path,
        timeout: Duration,
    ) -> anyhow::Result<EntryLock> {
        let file = open_lock_file(root, path)?;
        let start = Instant::now();
        let deadline = start + timeout;
        let mut backoff = FIRST_BACKOFF;
        let mut noticed = false;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    crate::debug!(
                        2,
                        "locked {} after {}",
                        path.display(),
                        crate::duration::display(start.elapsed())
                    );
                    return Ok(EntryLock::held(file, path));
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(err)) => {
                    return Err(fail(
                        Exit::Cache,
                        format!(
                            "cannot lock {}: {err}; check that the cache directory is on a local file system, or pass --cache-dir",
                            path.display()
                        ),
                    ));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(fail(
                    Exit::Cache,
                    format!(
                        "timed out after {} waiting for the lock on {}; another kubecred is logging in or refreshing — finish that login, or raise --lock-timeout",
                        crate::duration::display(timeout),
                        path.display()
                    ),
                ));
            }
            if !noticed && now - start >= NOTICE_AFTER {
                noticed = true;
                crate::log::notice(format!(
                    "waiting for another kubecred that is logging in or refreshing the same token (lock {})…",
                    path.display()
                ));
            }
            std::thread::sleep(backoff.min(deadline - now));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Takes the lock if nobody holds it, without waiting: `None` when another process does.
    pub(crate) fn try_acquire(root: &Path, path: &Path) -> anyhow::Result<Option<EntryLock>> {
        let file = open_lock_file(root, path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(EntryLock::held(file, path))),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(err)) => Err(fail(
                Exit::Cache,
                format!("cannot lock {}: {err}", path.display()),
            )),
        }
    }

    /// The locked file, to be inherited by a child process that goes on holding the lock after
    /// this one exits (`acquire/renew_ahead.rs`). The lock belongs to the open file, which the
    /// child's copy keeps open: this process must not unlock it, only close its own descriptor.
    #[cfg(unix)]
    pub(crate) fn into_file_for_child(mut self) -> Option<File> {
        self.held.take().map(|held| held.file)
    }

    /// A lock a parent process took and handed down as `file` (see [`Self::into_file_for_child`]):
    /// held already (taking it again on the same open file cannot block), released on drop.
    #[cfg(unix)]
    pub(crate) fn inherited(file: File, path: &Path) -> anyhow::Result<EntryLock> {
        file.try_lock().map_err(|err| {
            fail(
                Exit::Cache,
                format!(
                    "the inherited lock on {} is not held: {err}",
                    path.display()
                ),
            )
        })?;
        Ok(EntryLock::held(file, path))
    }

    /// A lock that locks nothing, for `--cache-storage none` (no file is created).
    pub(crate) fn none() -> EntryLock {
        EntryLock { held: None }
    }

    /// The lock file, if there is one.
    pub fn path(&self) -> Option<&Path> {
        self.held.as_ref().map(|held| held.path.as_path())
    }
}

impl Drop for EntryLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the release independent
        // of any other handle to the same open file (none exists today, but it costs nothing).
        if let Some(held) = &self.held {
            let _ = held.file.unlock();
        }
    }
}

fn open_lock_file(root: &Path, path: &Path) -> anyhow::Result<File> {
    let cannot = |err: std::io::Error| {
        fail(
            Exit::Cache,
            format!(
                "cannot create the lock file {}: {err}; check the permissions of the cache directory, or pass --cache-dir",
                path.display()
            ),
        )
    };
    if let Some(dir) = path.parent() {
        private_file::ensure_private_dir(root, dir).map_err(cannot)?;
    }
    let mut options = OpenOptions::new();
    // Write access: Windows' LockFileEx wants it for an exclusive lock. Never truncate: the file
    // is empty, and truncating a file someone else holds is pointless.
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A link or a FIFO planted at the lock's path is neither followed nor waited on.
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path).map_err(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Set in the child process of [`another_process_is_excluded`]: the lock file to hold.
    const CHILD_ENV: &str = "KUBECRED_TEST_LOCK_CHILD";

    #[test]
    fn a_second_lock_times_out_with_a_message_and_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks").join("k.lock");
        let held = EntryLock::acquire(dir.path(), &path, Duration::from_secs(1)).unwrap();

        // Another thread (another open file description: flock treats it like another process).
        let path2 = path.clone();
        let root2 = dir.path().to_path_buf();
        let started = Instant::now();
        let err = std::thread::spawn(move || {
            EntryLock::acquire(&root2, &path2, Duration::from_millis(200)).unwrap_err()
        })
        .join()
        .unwrap();
        let waited = started.elapsed();
        let message = format!("{err:#}");
        assert!(
            message.starts_with("timed out after 200ms waiting for the lock on "),
            "{message}"
        );
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("raise --lock-timeout"), "{message}");
        assert_eq!(crate::error::exit_code_of(&err), Exit::Cache);
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");

        drop(held);
        let again = EntryLock::acquire(dir.path(), &path, Duration::from_millis(200)).unwrap();
        assert_eq!(again.path(), Some(path.as_path()));
        drop(again);
        assert!(path.exists(), "lock files are never deleted");
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let held = EntryLock::acquire(dir.path(), &path, Duration::ZERO).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let started = Instant::now();
        let _lock = EntryLock::acquire(dir.path(), &path, Duration::from_secs(5)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        releaser.join().unwrap();
    }

    #[test]
    fn different_keys_do_not_block_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let _a =
            EntryLock::acquire(dir.path(), &dir.path().join("a.lock"), Duration::ZERO).unwrap();
        let _b =
            EntryLock::acquire(dir.path(), &dir.path().join("b.lock"), Duration::ZERO).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn lock_files_and_their_directory_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        std::fs::create_dir(&locks).unwrap();
        std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = locks.join("k.lock");
        let _lock = EntryLock::acquire(dir.path(), &path, Duration::ZERO).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&locks), 0o700);
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn no_lock_creates_nothing() {
        let lock = EntryLock::none();
        assert!(lock.path().is_none());
    }

    /// Proves exclusion between processes: a child process (this test binary, re-run with a filter
    /// for [`child_holds_lock`]) holds the lock; this process must time out, then get it once the
    /// child exits.
    #[test]
    fn another_process_is_excluded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks").join("shared.lock");
        let locked_marker = dir.path().join("child-locked");
        let release_marker = dir.path().join("child-release");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "cache::lock::tests::child_holds_lock",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env(CHILD_ENV, &path)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !locked_marker.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the child never took the lock"
            );
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the child exited before taking the lock: {status}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }

        let err = EntryLock::acquire(dir.path(), &path, Duration::from_millis(200)).unwrap_err();
        assert!(
            format!("{err:#}").contains("timed out after 200ms"),
            "{err:#}"
        );

        std::fs::write(&release_marker, b"").unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
        EntryLock::acquire(dir.path(), &path, Duration::from_secs(5)).unwrap();
    }

    /// The child half of [`another_process_is_excluded`], which runs it.
    #[test]
    #[ignore = "the child half of another_process_is_excluded, run by it"]
    fn child_holds_lock() {
        let path = std::env::var_os(CHILD_ENV)
            .expect("the child half of another_process_is_excluded, run by it");
        let path = PathBuf::from(path);
        let dir = path.parent().unwrap().parent().unwrap().to_path_buf();
        let _lock = EntryLock::acquire(&dir, &path, Duration::from_secs(5)).unwrap();
        std::fs::write(dir.join("child-locked"), b"").unwrap();
        let started = Instant::now();
        while !dir.join("child-release").exists() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
