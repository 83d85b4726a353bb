//! Replacing a file atomically: the one kit for every file kubecred writes, the private files of
//! its cache (`private_file.rs`) and the user's kubeconfigs (`file_replace.rs`). The new content
//! goes to a temporary file beside the target, created with the mode it must have (never
//! readable by others even for a moment), flushed to disk, then renamed over the target, and the
//! directory is synced: a reader sees the old file or the new one, never half of one, and a crash
//! leaves the old one.
//!
//! `tempfile` makes the temporary file (a random name, created exclusively; removed when the
//! write is abandoned or fails) and renames it (`persist`). What is ours: the name, which says
//! whose file it is (`.<name>.<tag>.<random>.tmp`, so that the cache can find and remove what a
//! killed writer of an entry left, `private_file::remove_leftovers`); the mode and owner a
//! replaced kubeconfig keeps; and, on Windows, trying the rename again while another process
//! holds the target open ([`Staged::commit`]).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The mode and owner of the new file.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// 0600 (unix): only its user reads it.
    Private,
    /// Those of the file it replaces (unix: mode with its set-id bits, and owner where this
    /// process may give a file away; Windows: its read-only flag).
    Like(&'a fs::Metadata),
}

/// The new content of a file, written and flushed to a temporary file beside it, waiting to be
/// renamed over it. Dropped without [`Staged::commit`], the temporary file goes.
#[derive(Debug)]
pub(crate) struct Staged {
    temp: tempfile::NamedTempFile,
    target: PathBuf,
}

/// Writes `content` to a new temporary file beside `target` (named `.<target's name>.<tag>.
/// <random>.tmp`), with `mode`, flushed to disk. The directory must exist.
pub(crate) fn stage(target: &Path, tag: &str, content: &[u8], mode: Mode) -> io::Result<Staged> {
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file needs a name"))?
        .to_string_lossy();
    let prefix = format!(".{name}.{tag}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp").rand_bytes(8);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o600));
    }
    let mut temp = builder.tempfile_in(parent_dir(target))?;
    if let Mode::Like(existing) = mode {
        take_mode_and_owner(temp.as_file(), existing)?;
    }
    temp.write_all(content)?;
    // Flushed before the rename makes it visible: otherwise a crash can leave an empty file under
    // the final name (losing a refresh token the provider has rotated, or a kubeconfig).
    temp.as_file().sync_all()?;
    Ok(Staged {
        temp,
        target: target.to_path_buf(),
    })
}

/// [`stage`] then [`Staged::commit`]: `target` replaced by `content`.
pub(crate) fn replace(target: &Path, tag: &str, content: &[u8], mode: Mode) -> io::Result<()> {
    stage(target, tag, content, mode)?.commit()
}

impl Staged {
    /// Renames the temporary file over the target and syncs the directory; on failure the
    /// temporary file is removed and the target is as it was.
    ///
    /// Windows refuses ("Access denied", "sharing violation") to replace a file some process has
    /// open wherever it lacks POSIX rename semantics (before Windows 10 1809, on FAT and many
    /// network shares, under Wine), and a parallel kubectl's cache hit, an antivirus scanner or
    /// the search indexer holds a file open for moments: there the rename is tried again for a
    /// bounded while (about 0.6 s in all) before the error stands. Elsewhere, one rename.
    pub(crate) fn commit(self) -> io::Result<()> {
        let Staged { temp, target } = self;
        #[cfg(windows)]
        let temp = {
            let mut temp = temp;
            // ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION.
            let held_open = |err: &io::Error| matches!(err.raw_os_error(), Some(5 | 32));
            let mut pause = std::time::Duration::from_millis(10);
            for _ in 0..6 {
                match temp.persist(&target) {
                    Ok(_) => {
                        sync_dir(parent_dir(&target));
                        return Ok(());
                    }
                    Err(err) if held_open(&err.error) => {
                        temp = err.file;
                        std::thread::sleep(pause);
                    }
                    Err(err) => return Err(err.error),
                }
                pause *= 2;
            }
            temp
        };
        // The file handed back with an error is dropped here, which removes it.
        temp.persist(&target).map_err(|err| err.error)?;
        sync_dir(parent_dir(&target));
        Ok(())
    }
}

/// The mode (with its set-id bits) and owner of `existing` on the open `file`. The owner first:
/// only root may give a file away (a user's own file needs no change), and a chown clears the
/// set-id bits, which the mode then restores.
#[cfg(unix)]
fn take_mode_and_owner(file: &File, existing: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if existing.uid() != file.metadata()?.uid() {
        let _ = std::os::unix::fs::fchown(file, Some(existing.uid()), Some(existing.gid()));
    }
    file.set_permissions(fs::Permissions::from_mode(existing.mode() & 0o7777))
}

/// Windows: the read-only flag, the one permission std carries.
#[cfg(not(unix))]
fn take_mode_and_owner(file: &File, existing: &fs::Metadata) -> io::Result<()> {
    file.set_permissions(existing.permissions())
}

/// The directory `path` is in; `.` for a bare file name.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes a rename durable (unix: the directory entry lives in the directory's own data). Best
/// effort: some file systems refuse to fsync a directory, and the data itself is already synced.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_replace_leaves_the_new_content_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        replace(&path, "42", b"one", Mode::Private).unwrap();
        replace(&path, "42", b"two", Mode::Private).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(names_in(dir.path()), ["entry.json"]);
    }

    #[test]
    fn a_staged_file_is_named_for_its_target_and_goes_when_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let staged = stage(&path, "kubecred-7", b"new", Mode::Private).unwrap();
        let names = names_in(dir.path());
        assert_eq!(names.len(), 1);
        assert!(
            names[0].starts_with(".config.kubecred-7.") && names[0].ends_with(".tmp"),
            "{names:?}"
        );
        assert!(!path.exists());
        drop(staged);
        assert!(names_in(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_rename_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A file cannot be renamed over a directory that holds something.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("x"), b"").unwrap();
        assert!(replace(&blocked, "1", b"new", Mode::Private).is_err());
        assert_eq!(names_in(dir.path()), ["blocked"]);
    }

    /// A scanner or indexer holds the file open for a moment, sharing only reads: Windows
    /// without POSIX rename semantics (and Wine) refuses the rename meanwhile, and it is tried
    /// again.
    #[test]
    fn a_target_held_open_for_a_moment_is_still_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.json");
        fs::write(&path, b"old").unwrap();
        let mut options = fs::OpenOptions::new();
        options.read(true);
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            options.share_mode(1); // FILE_SHARE_READ: no rename or delete meanwhile.
        }
        let held = options.open(&path).unwrap();
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(held);
        });
        replace(&path, "1", b"new", Mode::Private).unwrap();
        reader.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(names_in(dir.path()), ["entry.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_0600_and_replacements_take_the_old_files_mode() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private");
        replace(&private, "1", b"x", Mode::Private).unwrap();
        assert_eq!(mode(&private), 0o600);

        let shared = dir.path().join("shared");
        fs::write(&shared, b"old").unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o644)).unwrap();
        let existing = fs::metadata(&shared).unwrap();
        replace(&shared, "1", b"new", Mode::Like(&existing)).unwrap();
        assert_eq!(mode(&shared), 0o644);
        assert_eq!(fs::read(&shared).unwrap(), b"new");
    }
}
