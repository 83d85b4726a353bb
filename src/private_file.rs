//! Private files: directories 0700, files 0600, every write atomic, every read bounded. The one
//! implementation for everything kubecred stores under its cache directory: token entries, the
//! lock files' directory, the OIDC discovery/JWKS cache and the login cool-down record.
//!
//! A cache file is replaced, never rewritten in place: a writer fills a temporary file in the same
//! directory, flushes it to disk and renames it over the old one. A reader that does not hold the
//! entry lock (the cache-hit path of a parallel kubectl) therefore sees the old entry or the new
//! one, never half of one, and a crash mid-write leaves the old entry intact. Modes are set when a
//! file is created, not afterwards, so a token is never readable by others even for a moment.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// Why a private file could not be used; callers branch on it (a miss is not an error).
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No such file (or directory): a cache miss.
    NotFound,
    /// The file exists but is not what this version writes there (larger than the limit, or not
    /// the expected JSON); treated as a miss and replaced by the next write.
    Corrupt(String),
    /// The file could not be read (permissions, I/O error): worth reporting.
    Io(io::Error),
}

/// Reads a whole file of at most `limit` bytes: one `open` and its reads, nothing else (this is
/// the cache-hit path). A larger file is [`ReadError::Corrupt`]: nothing kubecred writes is that
/// large, and a runaway file must not be buffered.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let not_found_or_io = |err: io::Error| match err.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(err),
    };
    let file = File::open(path).map_err(not_found_or_io)?;
    // Sized from the file's length, so that a small entry is one read (and the EOF read), as
    // `fs::read` does; the `take` still bounds a file that grows while we read it.
    let metadata = file.metadata().map_err(not_found_or_io)?;
    if !metadata.is_file() {
        return Err(ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    let length = metadata.len();
    if length > limit {
        return Err(ReadError::Corrupt(format!("larger than {limit} bytes")));
    }
    let mut bytes = Vec::with_capacity(length as usize + 1);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(not_found_or_io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::Corrupt(format!("larger than {limit} bytes")));
    }
    Ok(bytes)
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

/// Creates `dir` (and missing parents) with mode 0700, and tightens an existing `dir` that others
/// can read or enter: the directory holds bearer tokens.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(dir)?;
        let metadata = fs::metadata(dir)?;
        if metadata.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        // Windows: the per-user cache directory (under %LOCALAPPDATA%) already has a private ACL.
        builder.create(dir)
    }
}

/// Writes `bytes` to `path` privately: creates the parent directory (and missing ancestors) with
/// mode 0700, tightening it if it exists looser ([`ensure_private_dir`]), then replaces the file
/// atomically with mode 0600 ([`write_atomic`]).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    ensure_private_dir(parent_dir(path)?)?;
    write_atomic(path, bytes)
}

/// Replaces `path` with `bytes` atomically; the file is created with mode 0600. The parent
/// directory must exist (see [`write_private`]).
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a cache file needs a name"))?
        .to_string_lossy();
    let (temp_path, mut file) = create_temp_file(dir, &name)?;
    let written = file
        .write_all(bytes)
        // Flush the data before the rename makes it visible: otherwise a crash can leave an
        // empty file under the final name, losing a refresh token the provider has rotated.
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            fs::rename(&temp_path, path)
        });
    if let Err(err) = written {
        let _ = fs::remove_file(&temp_path);
        return Err(err);
    }
    sync_dir(dir);
    Ok(())
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

/// Deletes `path`; a file that is already gone is fine. Returns whether a file was deleted.
pub(crate) fn remove_if_exists(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// A new file `.<name>.<pid>.<n>.tmp` next to the target, created exclusively with mode 0600. The
/// name is unique per process and call, and `create_new` guards against anything left over.
fn create_temp_file(dir: &Path, name: &str) -> io::Result<(std::path::PathBuf, File)> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let pid = std::process::id();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let temp_path = dir.join(format!(".{name}.{pid}.{n}.{nanos}.tmp"));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&temp_path) {
            Ok(file) => return Ok((temp_path, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
}

/// Makes the rename durable (unix: the directory entry lives in the directory's own data). Best
/// effort: some file systems refuse to fsync a directory, and the data itself is already synced.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
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
        write_private(&path, br#"{"a":1}"#).unwrap();
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
        ensure_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700);

        let loose = root.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&loose).unwrap();
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
        write_private(&fresh, b"x").unwrap();
        assert_eq!(mode(fresh.parent().unwrap()), 0o700);
        assert_eq!(mode(&fresh), 0o600);

        let loose = root.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        write_private(&loose.join("entry"), b"y").unwrap();
        assert_eq!(mode(&loose), 0o700);
        assert_eq!(fs::read(loose.join("entry")).unwrap(), b"y");
    }
}
