//! The background renewal as a process of its own that nobody waits for, and that holds nothing
//! of kubectl's: how a hit starts it ([`spawn_renewal`]) and what it does first
//! ([`take_over_lock`]).
//!
//! client-go reads the plugin's stdout (and stderr) to their end, so a child that kept a copy of
//! either would make kubectl wait for the renewal. The child gets the null device for stdin,
//! stdout and stderr, and nothing else of this process:
//! - on unix, std starts it with `posix_spawn` (no `pre_exec`, which would make it a `fork`: a
//!   slower start for the hit that spawns, bench/RESULTS.md section 7) and only descriptors
//!   without close-on-exec cross over. The entry's locked
//!   file is made one on purpose, so that the child holds the lock from its first instruction
//!   and however many hits see the window, one renewal runs; the child checks that the
//!   descriptor it is given is that file, then closes every other descriptor it inherited
//!   (kubectl, or whoever ran it, may have leaked some) and leaves kubectl's session.
//! - on Windows, std creates the child with `bInheritHandles` set (rust-lang/rust#54760), so it
//!   would inherit every inheritable handle of this process, the standard handles kubectl gave
//!   us among them: they are made non-inheritable just before the spawn. An advisory lock cannot
//!   be handed down there: the child takes it itself, and the hit notes that it started one
//!   (`renew_ahead.rs`) so that the hits before the child takes the lock start no other.

use super::RenewalArguments;
use crate::cache::{EntryLock, TokenCache};
use crate::error::{Exit, fail};
use std::process::{Command, Stdio};

/// Starts `kubecred renew-ahead` with `arguments` (this get-token run's, see
/// [`RenewalArguments`]), detached, handing it `lock` (on unix).
pub(super) fn spawn_renewal(lock: EntryLock, arguments: &RenewalArguments) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Some(file) = lock.into_file_for_child() else {
            return Ok(()); // No lock file: no cache to renew into.
        };
        let fd = file.as_raw_fd();
        let mut command = renewal_command(arguments(Some(fd)))?;
        // The one descriptor this process lets a child inherit, and this process starts no other
        // child: clearing close-on-exec here is safe.
        // SAFETY: fcntl on a descriptor this function owns.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        command.spawn()?;
        // This process's descriptor closes here without unlocking: the child's copy holds on.
        drop(file);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        let mut command = renewal_command(arguments(None))?;
        command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
        keep_standard_handles_from_children();
        drop(lock);
        command.spawn()?;
    }
    #[cfg(not(any(unix, windows)))]
    {
        let mut command = renewal_command(arguments(None))?;
        drop(lock);
        command.spawn()?;
    }
    Ok(())
}

/// This binary run with `args` (`None`: this run has none for a renewal), with the null device
/// for its standard streams.
fn renewal_command(args: Option<Vec<std::ffi::OsString>>) -> std::io::Result<Command> {
    let args =
        args.ok_or_else(|| std::io::Error::other("this run is not a get-token command line"))?;
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Ok(command)
}

/// Marks this process's standard handles non-inheritable, so that a child created now does not
/// hold kubectl's pipes open. Best effort: a handle that cannot be changed (or is not there)
/// is left as it is. This process only writes its answer and exits after the spawn, which the
/// flag does not affect.
#[cfg(windows)]
fn keep_standard_handles_from_children() {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::{HANDLE_FLAG_INHERIT, SetHandleInformation};
    let handles = [
        std::io::stdin().as_raw_handle(),
        std::io::stdout().as_raw_handle(),
        std::io::stderr().as_raw_handle(),
    ];
    for handle in handles.into_iter().filter(|handle| !handle.is_null()) {
        // SAFETY: SetHandleInformation only changes the flags of a handle this process owns;
        // an invalid handle makes it fail, which is ignored.
        unsafe { SetHandleInformation(handle, HANDLE_FLAG_INHERIT, 0) };
    }
}

/// In the renewal: the entry's lock, handed down on `lock_fd` (unix) or taken now without
/// waiting (`None`: a renewal or a login holds it). The descriptor must be the entry's lock
/// file, or the run is refused: it was not started by a hit. On unix this also leaves kubectl's
/// session and closes every other descriptor this process inherited.
pub(super) fn take_over_lock(
    cache: &TokenCache,
    lock_fd: Option<i32>,
) -> anyhow::Result<Option<EntryLock>> {
    #[cfg(unix)]
    {
        // Its own session: no controlling terminal, and no signal meant for kubectl's process
        // group. (Failing means it is a session leader already: nothing to leave.)
        // SAFETY: setsid has no preconditions.
        unsafe { libc::setsid() };
        if let Some(fd) = lock_fd {
            let file = adopt_lock_file(fd, &cache.lock_path())?;
            close_descriptors_except(fd);
            return EntryLock::inherited(file, &cache.lock_path()).map(Some);
        }
        close_descriptors_except(-1);
    }
    #[cfg(not(unix))]
    if let Some(fd) = lock_fd {
        return Err(not_our_lock(
            fd,
            "descriptors are not handed down on this system",
        ));
    }
    cache.try_lock()
}

/// The lock file open on `fd`, checked to be `lock_path` (the same device and inode, a regular
/// file) before this process takes the descriptor over.
#[cfg(unix)]
fn adopt_lock_file(fd: i32, lock_path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use std::mem::ManuallyDrop;
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::MetadataExt;
    if fd <= 2 {
        return Err(not_our_lock(fd, "a standard stream"));
    }
    // SAFETY: fcntl only asks whether the descriptor is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(not_our_lock(fd, "not open"));
    }
    // Not owned until it is known to be the lock: dropping this must not close someone's file.
    // SAFETY: the descriptor is open (above), and nothing else in this process uses it.
    let file = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let (Ok(given), Ok(expected)) = (file.metadata(), std::fs::symlink_metadata(lock_path)) else {
        return Err(not_our_lock(
            fd,
            &format!("cannot compare it with {}", lock_path.display()),
        ));
    };
    let same_file = given.file_type().is_file()
        && expected.file_type().is_file()
        && given.dev() == expected.dev()
        && given.ino() == expected.ino();
    if !same_file {
        return Err(not_our_lock(
            fd,
            &format!("not the lock file {}", lock_path.display()),
        ));
    }
    // SAFETY: fcntl on the descriptor this process now owns: not inherited any further.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(ManuallyDrop::into_inner(file))
}

fn not_our_lock(fd: i32, why: &str) -> anyhow::Error {
    fail(
        Exit::Usage,
        format!(
            "--lock-fd {fd} is not this entry's lock ({why}); `kubecred renew-ahead` is the background renewal a cache hit starts, not a command to run by hand — use `kubecred get-token` or `kubecred login`"
        ),
    )
}

/// Closes every descriptor above the standard streams but `keep`: what this process inherited
/// without close-on-exec (from kubectl, or whatever ran it) must not stay open for the
/// renewal's lifetime. The open descriptors are listed from `/proc/self/fd` (Linux) or
/// `/dev/fd` (macOS, the BSDs); where neither can be read, nothing is closed.
#[cfg(unix)]
fn close_descriptors_except(keep: i32) {
    let listing = std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd"));
    let Ok(listing) = listing else {
        return;
    };
    // Collected first: the listing's own descriptor closes when it is dropped.
    let open: Vec<i32> = listing
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect();
    for fd in open.into_iter().filter(|&fd| fd > 2 && fd != keep) {
        // SAFETY: closing a descriptor this process does not use; std holds none open here
        // but `keep`, and a descriptor that is already closed only makes close fail.
        unsafe { libc::close(fd) };
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn only_the_entry_lock_file_is_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let lock_path = dir.path().join("entry.lock");
        std::fs::write(&lock_path, b"").unwrap();
        let other_path = dir.path().join("other.lock");
        std::fs::write(&other_path, b"").unwrap();

        let other = std::fs::File::open(&other_path).unwrap();
        let message = adopt_lock_file(other.as_raw_fd(), &lock_path)
            .unwrap_err()
            .to_string();
        assert!(message.contains("not the lock file"), "{message}");
        assert!(
            message.contains("not a command to run by hand"),
            "{message}"
        );
        assert!(adopt_lock_file(1, &lock_path).is_err());
        assert!(
            adopt_lock_file(987_654, &lock_path)
                .unwrap_err()
                .to_string()
                .contains("not open")
        );

        let right = std::fs::File::open(&lock_path).unwrap();
        let fd = right.as_raw_fd();
        // Handed over: `adopt_lock_file` owns the descriptor from here on.
        std::mem::forget(right);
        let adopted = adopt_lock_file(fd, &lock_path).unwrap();
        assert_eq!(adopted.as_raw_fd(), fd);
    }
}
