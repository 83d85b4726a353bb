//! Private files: directories 0700, files 0600, every write atomic, every read bounded. The one
//! implementation for everything kubecred stores under its cache directory: token entries, the
//! lock files' directory, the OIDC discovery/JWKS cache and the login cool-down record.
//!
//! A cache file is replaced, never rewritten in place (`atomic_file.rs`: a temporary file in the
//! same directory, flushed to disk and renamed over the old one; on Windows the rename is tried
//! again while a parallel kubectl's hit holds the entry open). A reader that does not hold the
//! entry lock (the cache-hit path of a parallel kubectl) therefore sees the old entry or the new
//! one, never half of one, and a crash mid-write leaves the old entry intact. Modes are set when a
//! file is created, not afterwards, so a token is never readable by others even for a moment.
//!
//! On Windows there are no modes: a file takes the access control list of its directory, and
//! the default cache directory is under the user's profile (`%LOCALAPPDATA%\kubecred\cache`),
//! whose ACL grants only the user, SYSTEM and the Administrators group. That is what protects
//! the tokens there, as it protects every other per-user secret store on Windows; a
//! `--cache-dir` elsewhere must be a directory only its user can read. The owner check of reads
//! is unix-only for the same reason.

use crate::fs::atomic_file;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Why a private file could not be used; callers branch on it (a miss is not an error).
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No such file (or directory): a cache miss.
    NotFound,
    /// The file exists but is not what this version writes there (larger than the limit, not the
    /// expected JSON, a symbolic link, a FIFO or another non-regular file); treated as a miss and
    /// replaced by the next write (the rename replaces the link or FIFO itself, never its target).
    Corrupt(String),
    /// The file belongs to another user: someone else put it there, so its content is not ours
    /// to trust. Callers refuse it with a clear error (or, for a cache of public documents, ignore
    /// it loudly); the write path refuses the directory too. Unix only (see the module's note on
    /// Windows).
    #[cfg_attr(not(unix), allow(dead_code))]
    Foreign(String),
    /// The file could not be read (permissions, I/O error): worth reporting.
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    /// Why, for a message that names the file itself: "no such file", the reason it is not
    /// used ("larger than 4096 bytes", "it belongs to uid 0, …"), or the I/O error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("no such file"),
            ReadError::Corrupt(reason) | ReadError::Foreign(reason) => f.write_str(reason),
            ReadError::Io(err) => err.fmt(f),
        }
    }
}

/// A file read by [`read_keeping_open`], still open: its modification time, and a way to set it
/// without opening the file again (the hand-out stamp of `acquire/hand_out.rs`).
#[derive(Debug)]
pub(crate) struct OpenedFile {
    file: File,
    /// Seconds and nanoseconds since the epoch.
    pub(crate) modified: (i64, u32),
}

impl OpenedFile {
    /// Sets the modification time on the open descriptor (`futimens`: no path, no open), leaving
    /// the access time alone. Best effort: returns whether it worked.
    pub(crate) fn set_modified(&self, seconds: i64, nanos: u32) -> bool {
        set_modified(&self.file, seconds, nanos)
    }
}

/// Opens the existing file at `path` (never through a symbolic link, never blocking) and sets its
/// modification time; for the write path, where an extra open costs nothing that matters.
pub(crate) fn set_modified_at(path: &Path, seconds: i64, nanos: u32) -> bool {
    open_no_follow(path).is_ok_and(|file| set_modified(&file, seconds, nanos))
}

/// std's `set_modified` is `futimens` on the descriptor with the access time omitted (on unix),
/// `SetFileTime` on Windows.
fn set_modified(file: &File, seconds: i64, nanos: u32) -> bool {
    let Ok(seconds) = u64::try_from(seconds) else {
        return false;
    };
    let since_epoch = std::time::Duration::new(seconds, nanos.min(999_999_999));
    std::time::UNIX_EPOCH
        .checked_add(since_epoch)
        .is_some_and(|time| file.set_modified(time).is_ok())
}

/// [`read`], keeping the file open for [`OpenedFile::set_modified`]: the same system calls.
pub(crate) fn read_keeping_open(
    path: &Path,
    limit: u64,
) -> Result<(Vec<u8>, OpenedFile), ReadError> {
    read_inner(path, limit)
}

/// Reads a whole file of at most `limit` bytes: one `open`, one `fstat` and its reads, nothing
/// else (this is the cache-hit path). Every check is made on the open descriptor, so it costs no
/// extra system call:
/// - the open does not follow a symbolic link (`O_NOFOLLOW`) and does not block (`O_NONBLOCK`:
///   opening a FIFO for reading would otherwise wait for a writer forever);
/// - the file must be a regular file, owned by this user (`Foreign` otherwise);
/// - a file of ours that others may read or write is tightened to 0600 (one `fchmod`, only then;
///   the content is still used: only this user could have written a file this user owns, or
///   someone who can act as this user anyway).
///
/// A larger file is [`ReadError::Corrupt`]: nothing kubecred writes is that large, and a runaway
/// file must not be buffered.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_inner(path, limit).map(|(bytes, _)| bytes)
}

fn read_inner(path: &Path, limit: u64) -> Result<(Vec<u8>, OpenedFile), ReadError> {
    let not_found_or_io = |err: io::Error| match err.kind() {
        // A path through a regular file (`--cache-dir` under a file): nothing there either.
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => ReadError::NotFound,
        _ => ReadError::Io(err),
    };
    let file = open_no_follow(path).map_err(|err| {
        if is_symlink_refusal(&err) {
            ReadError::Corrupt(
                "a symbolic link (kubecred does not follow links in its cache)".into(),
            )
        } else {
            not_found_or_io(err)
        }
    })?;
    // Sized from the file's length, so that a small entry is one read (and the EOF read), as
    // `fs::read` does; the `take` still bounds a file that grows while we read it.
    let metadata = file.metadata().map_err(not_found_or_io)?;
    if metadata.is_dir() {
        return Err(ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a directory, not a file",
        )));
    }
    if !metadata.is_file() {
        return Err(ReadError::Corrupt(
            "not a regular file (a FIFO, socket or device)".into(),
        ));
    }
    check_owner_and_tighten(&file, &metadata)?;
    let length = metadata.len();
    if length > limit {
        return Err(ReadError::Corrupt(format!("larger than {limit} bytes")));
    }
    let mut bytes = Vec::with_capacity(length as usize + 1);
    (&file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(not_found_or_io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::Corrupt(format!("larger than {limit} bytes")));
    }
    let modified = modified_of(&metadata);
    Ok((bytes, OpenedFile { file, modified }))
}

fn modified_of(metadata: &fs::Metadata) -> (i64, u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (metadata.mtime(), metadata.mtime_nsec() as u32)
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        (0, 0)
    }
}

/// Opens `path` for reading without following a final symbolic link and without blocking.
fn open_no_follow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Whether an open failed because the path is a symbolic link (`O_NOFOLLOW` answers `ELOOP`).
fn is_symlink_refusal(err: &io::Error) -> bool {
    #[cfg(unix)]
    {
        err.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// The owner check and the tightening of [`read`], on the open file.
fn check_owner_and_tighten(file: &File, metadata: &fs::Metadata) -> Result<(), ReadError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let me = effective_uid();
        if metadata.uid() != me {
            return Err(ReadError::Foreign(format!(
                "it belongs to uid {}, not to this user (uid {me})",
                metadata.uid()
            )));
        }
        // Best effort: the content is ours either way, and a read-only file system must not
        // turn a hit into a failure.
        if metadata.mode() & 0o077 != 0 {
            let _ = file.set_permissions(fs::Permissions::from_mode(0o600));
        }
    }
    #[cfg(not(unix))]
    let _ = (file, metadata);
    Ok(())
}

#[cfg(unix)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// [`read`], then parse the bytes as JSON of type `T`; JSON that does not fit is
/// [`ReadError::Corrupt`] with serde's reason.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    limit: u64,
) -> Result<T, ReadError> {
    let bytes = read(path, limit)?;
    serde_json::from_slice(&bytes).map_err(|err| ReadError::Corrupt(err.to_string()))
}

/// Makes `dir` and every directory between the cache root `root` and it private: creates what is
/// missing with mode 0700, and checks what exists — each must be a directory owned by this user
/// (an error saying whose it is otherwise: another user could rename entries aside and plant
/// their own, as ssh refuses a `~/.ssh` another user can write), and one that others can read,
/// write or enter is tightened to 0700. `root` itself is included; its own ancestors are created
/// if missing but not checked (they are the user's business, `/tmp` among them). A `dir` outside
/// `root` is refused.
pub(crate) fn ensure_private_dir(root: &Path, dir: &Path) -> io::Result<()> {
    let below = below_root(root, dir)?;
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    check_each_dir(root, below, Tighten::OrFail)
}

/// The directories from the cache root `root` down to `dir`, which exist, checked as
/// [`ensure_private_dir`] checks them, creating nothing: for the cache hit, whose entry was just
/// read through them. One `stat` each; a `chmod` only for a loose one, and a failed one is no
/// error (a read-only file system must not turn a hit into a failure). Another user's directory
/// is an error ([`is_foreign`]).
pub(crate) fn check_private_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    check_each_dir(root, below_root(root, dir)?, Tighten::IfItCan)
}

/// `dir`'s path below `root`; an error for a `dir` outside it.
fn below_root<'a>(root: &Path, dir: &'a Path) -> io::Result<&'a Path> {
    dir.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not inside the cache directory {}",
                dir.display(),
                root.display()
            ),
        )
    })
}

/// What to do when a loose directory of ours cannot be tightened.
#[derive(Clone, Copy)]
enum Tighten {
    /// Fail: the write path is about to put a token there.
    OrFail,
    /// Go on: the hit only reads.
    IfItCan,
}

/// [`check_private_dir`] for `root` and each directory of `below` under it, top down.
fn check_each_dir(root: &Path, below: &Path, tighten: Tighten) -> io::Result<()> {
    let mut current = root.to_path_buf();
    check_private_dir(&current, tighten)?;
    for part in below.components() {
        current.push(part);
        check_private_dir(&current, tighten)?;
    }
    Ok(())
}

/// The error inside the `io::Error` of a directory that belongs to another user: a refusal, not
/// a directory that merely cannot be written (see [`is_foreign`]).
#[derive(Debug)]
struct ForeignDirectory(String);

impl std::fmt::Display for ForeignDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ForeignDirectory {}

/// Whether `err` is [`ensure_private_dir`] or [`check_private_dirs`] refusing another user's
/// directory.
pub(crate) fn is_foreign(err: &io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.is::<ForeignDirectory>())
}

/// One directory of [`ensure_private_dir`]. A symbolic link is followed (a cache root on another
/// disk is common); what counts is the directory it names.
fn check_private_dir(dir: &Path, tighten: Tighten) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let metadata = fs::metadata(dir)?;
        if !metadata.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", dir.display()),
            ));
        }
        let me = effective_uid();
        if metadata.uid() != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                ForeignDirectory(format!(
                    "the directory {} belongs to uid {}, not to this user (uid {me}), and kubecred keeps tokens only in directories of their own user",
                    dir.display(),
                    metadata.uid()
                )),
            ));
        }
        if metadata.mode() & 0o077 != 0 {
            let tightened = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
            if let (Err(err), Tighten::OrFail) = (tightened, tighten) {
                return Err(err);
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        // Windows: the per-user cache directory (under %LOCALAPPDATA%) already has a private ACL.
        let _ = (dir, tighten);
        Ok(())
    }
}

/// Writes `bytes` to `path` privately: makes the directories from the cache root `root` down to
/// the file's own private ([`ensure_private_dir`]), then replaces the file atomically with mode
/// 0600 ([`write_atomic`]), and removes what earlier writers of the same file left behind.
pub(crate) fn write_private(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    ensure_private_dir(root, parent_dir(path)?)?;
    write_atomic(path, bytes)
}

/// The cache root of a file stored at `<root>/<kind>/<name>`, the layout of everything kubecred
/// keeps (`tokens/`, `locks/`, `state/`, `oidc/`), for writers that know only their file's path.
pub(crate) fn root_of(path: &Path) -> io::Result<&Path> {
    parent_dir(parent_dir(path)?)
}

/// Replaces `path` with `bytes` atomically, the new file created with mode 0600
/// (`atomic_file.rs`: a temporary file `.<name>.<pid>.<random>.tmp` beside it, flushed, renamed
/// over it). The parent directory must exist (see [`write_private`]). Once the new file is in
/// place, temporary files of earlier writers of the same `path` are deleted
/// ([`remove_leftovers`]): a writer killed between its write and its rename leaves one holding
/// a token, possibly a live refresh token.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tag = std::process::id().to_string();
    atomic_file::replace(path, &tag, bytes, atomic_file::Mode::Private)?;
    remove_leftovers(path);
    Ok(())
}

fn file_name(path: &Path) -> io::Result<String> {
    Ok(path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a cache file needs a name"))?
        .to_string_lossy()
        .into_owned())
}

/// Deletes the temporary files `.<name>.*.tmp` next to `path` ([`write_atomic`]'s names).
/// Best effort, returns how many went. Writers of a token entry hold its lock, so any temporary
/// file of that entry is a dead writer's; writers of the OIDC document cache do not lock, and a
/// parallel writer whose file goes then fails its rename, which costs it only a cache write.
fn remove_leftovers(path: &Path) -> usize {
    let (Ok(dir), Ok(name)) = (parent_dir(path), file_name(path)) else {
        return 0;
    };
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let found = entry.file_name();
            let found = found.to_string_lossy();
            found.starts_with(&prefix) && found.ends_with(".tmp")
        })
        .filter(|entry| fs::remove_file(entry.path()).is_ok())
        .count()
}

/// The directory `path` is in; `.` for a bare file name.
fn parent_dir(path: &Path) -> io::Result<&Path> {
    match path.parent() {
        Some(dir) if dir.as_os_str().is_empty() => Ok(Path::new(".")),
        Some(dir) => Ok(dir),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a cache file needs a parent directory",
        )),
    }
}

/// Deletes `path` and every temporary file an interrupted writer of it left behind
/// ([`remove_leftovers`]): `kubecred logout` must leave no copy of a token. A file that is
/// already gone is fine. Returns whether the file itself was deleted.
pub(crate) fn remove_with_leftovers(path: &Path) -> io::Result<bool> {
    let removed = remove_if_exists(path)?;
    remove_leftovers(path);
    Ok(removed)
}

/// Deletes `path`; a file that is already gone is fine. Returns whether a file was deleted.
pub(crate) fn remove_if_exists(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// How many of `write_atomic`'s temporary files are left in `dir` (tests check for none).
#[cfg(test)]
pub(crate) fn temp_files_left_in(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["entry.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        write_atomic(&path, b"old").unwrap();
        // Renaming a file over a non-empty directory fails after the temp file was written.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("x"), b"").unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(temp_files_left_in(dir.path()), 0);
    }

    #[test]
    fn reads_tell_missing_from_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read(&dir.path().join("nope"), 10),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(
            read(&dir.path().join("no/such/dir"), 10),
            Err(ReadError::NotFound)
        ));
        // A directory where a file should be: an I/O error, not a miss.
        assert!(matches!(read(dir.path(), 10), Err(ReadError::Io(_))));
    }

    #[test]
    fn reads_are_bounded_and_json_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_private(dir.path(), &path, br#"{"a":1}"#).unwrap();
        assert_eq!(read(&path, 7).unwrap(), br#"{"a":1}"#);
        assert!(matches!(read(&path, 6), Err(ReadError::Corrupt(_))));
        let value: serde_json::Value = read_json(&path, 100).unwrap();
        assert_eq!(value["a"], 1);
        assert!(matches!(
            read_json::<Vec<u8>>(&path, 100),
            Err(ReadError::Corrupt(_))
        ));
    }

    #[test]
    fn remove_tolerates_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"x").unwrap();
        assert!(remove_if_exists(&path).unwrap());
        assert!(!remove_if_exists(&path).unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn files_are_0600_and_directories_0700_even_if_they_existed_looser() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let fresh = root.path().join("a/b/tokens");
        ensure_private_dir(root.path(), &fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700);

        let loose = root.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(root.path(), &loose).unwrap();
        assert_eq!(mode(&loose), 0o700);

        let file = loose.join("entry.json");
        write_atomic(&file, b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn write_private_creates_or_tightens_the_directory() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let fresh = root.path().join("new/state/entry");
        write_private(root.path(), &fresh, b"x").unwrap();
        assert_eq!(mode(fresh.parent().unwrap()), 0o700);
        assert_eq!(mode(&fresh), 0o600);

        let loose = root.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        write_private(root.path(), &loose.join("entry"), b"y").unwrap();
        assert_eq!(mode(&loose), 0o700);
        assert_eq!(fs::read(loose.join("entry")).unwrap(), b"y");
    }

    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn the_cache_root_itself_is_tightened_and_a_dir_outside_it_refused() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o777)).unwrap();
        write_private(root.path(), &root.path().join("tokens/k.json"), b"x").unwrap();
        assert_eq!(mode_of(root.path()), 0o700);
        assert_eq!(mode_of(&root.path().join("tokens")), 0o700);
        let elsewhere = tempfile::tempdir().unwrap();
        let err = ensure_private_dir(root.path(), elsewhere.path()).unwrap_err();
        assert!(
            err.to_string().contains("not inside the cache directory"),
            "{err}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_not_followed_and_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        fs::write(&target, b"{}").unwrap();
        let link = dir.path().join("entry.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        match read(&link, 100) {
            Err(ReadError::Corrupt(reason)) => {
                assert!(reason.contains("symbolic link"), "{reason}")
            }
            other => panic!("expected a refused link, got {other:?}"),
        }
        write_private(dir.path(), &link, b"new").unwrap();
        assert_eq!(
            fs::read(&target).unwrap(),
            b"{}",
            "the link's target is untouched"
        );
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(read(&link, 100).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_a_miss_at_once_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open would wait for a writer forever.
        assert!(matches!(read(&path, 100), Err(ReadError::Corrupt(_))));
        write_private(dir.path(), &path, b"entry").unwrap();
        assert_eq!(read(&path, 100).unwrap(), b"entry");
    }

    #[cfg(unix)]
    #[test]
    fn a_loose_file_of_ours_is_tightened_on_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        fs::write(&path, b"x").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(read(&path, 100).unwrap(), b"x");
        assert_eq!(mode_of(&path), 0o600);
    }

    /// Another user's file or directory: needs root to make one (CI runs as root).
    #[cfg(unix)]
    #[test]
    fn another_users_file_or_directory_is_refused() {
        if effective_uid() != 0 {
            crate::log::notice("skipped: making a file of another user needs root");
            return;
        }
        let nobody = 65534;
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("tokens/k.json");
        write_private(root.path(), &path, b"x").unwrap();
        std::os::unix::fs::lchown(&path, Some(nobody), Some(nobody)).unwrap();
        match read(&path, 100) {
            Err(ReadError::Foreign(reason)) => assert!(reason.contains("uid 65534"), "{reason}"),
            other => panic!("expected a refused file, got {other:?}"),
        }
        std::os::unix::fs::lchown(root.path(), Some(nobody), Some(nobody)).unwrap();
        let err = write_private(root.path(), &path, b"y").unwrap_err();
        assert!(err.to_string().contains("belongs to uid 65534"), "{err}");
        assert!(is_foreign(&err));
        let unwritable = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(!is_foreign(&unwritable));
    }

    /// The hit's check: the same verdicts as the write path's, nothing created.
    #[cfg(unix)]
    #[test]
    fn the_hits_check_tightens_refuses_and_creates_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let tokens = root.path().join("tokens");
        fs::create_dir(&tokens).unwrap();
        for dir in [root.path(), &tokens] {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        }
        check_private_dirs(root.path(), &tokens).unwrap();
        assert_eq!(mode_of(root.path()), 0o700);
        assert_eq!(mode_of(&tokens), 0o700);
        let missing = root.path().join("state");
        assert_eq!(
            check_private_dirs(root.path(), &missing)
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
        assert!(!missing.exists());
        if effective_uid() != 0 {
            crate::log::notice("skipped: making a directory of another user needs root");
            return;
        }
        std::os::unix::fs::lchown(&tokens, Some(65534), Some(65534)).unwrap();
        let err = check_private_dirs(root.path(), &tokens).unwrap_err();
        assert!(is_foreign(&err), "{err}");
        assert!(err.to_string().contains("belongs to uid 65534"), "{err}");
    }

    #[test]
    fn a_write_and_a_removal_take_the_leftovers_of_killed_writers_along() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.json");
        let leftover = dir.path().join(".k.json.4242.0.123.tmp");
        let other_entry = dir.path().join(".other.json.4242.0.123.tmp");
        fs::write(&leftover, b"refresh token").unwrap();
        fs::write(&other_entry, b"not ours to delete").unwrap();
        write_private(dir.path(), &path, b"new").unwrap();
        assert!(!leftover.exists());
        assert!(other_entry.exists());

        fs::write(&leftover, b"refresh token").unwrap();
        assert!(remove_with_leftovers(&path).unwrap());
        assert!(!leftover.exists() && !path.exists());
        assert!(other_entry.exists());
    }
}
