//! Replacing a user's files with care, for the kubeconfig files kubecred edits
//! (`convert-kubeconfig`, `setup --write-kubeconfig`): a backup beside each file first (0600: a
//! kubeconfig holds credentials), the new content written to a temporary file in the same
//! directory with the file's own mode and owner, flushed, then renamed over it (`atomic_file.rs`)
//! — so a reader (a kubectl running meanwhile) sees the old file or the new one, never half of
//! one, and a crash leaves the old one. A file reached through a symbolic link is replaced where it lives:
//! the link stays.
//!
//! Several files change together or not at all ([`replace_all`]): every backup and temporary
//! file is made before the first rename; a failure before then removes them and leaves every
//! file as it was; a rename that fails after others succeeded puts those back from their
//! backups. (Unlike `private_file.rs`, which owns kubecred's cache: these are the user's files,
//! in the user's directories, with the user's modes.)

use crate::fs::atomic_file;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One file to write: where, and what.
#[derive(Debug, Clone)]
pub struct Replacement {
    pub path: PathBuf,
    pub content: Vec<u8>,
}

/// A file written (in the order of the replacements): where (a link followed to its file), and
/// its backup (none for a file that did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    pub backup: Option<PathBuf>,
}

/// Why nothing was written: the file it failed at, and the error.
#[derive(Debug)]
pub struct Failure {
    pub path: PathBuf,
    pub error: io::Error,
    /// The files that could not be put back after a failed rename (their backups hold them).
    pub not_restored: Vec<Written>,
}

impl std::fmt::Display for Failure {
    /// "cannot write FILE: ERROR; no file was changed", or which files could not be put back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.error)?;
        if self.not_restored.is_empty() {
            return f.write_str("; no file was changed");
        }
        let left: Vec<String> = self
            .not_restored
            .iter()
            .map(|w| match &w.backup {
                Some(backup) => format!("{} (its backup: {})", w.path.display(), backup.display()),
                None => format!("{} (new)", w.path.display()),
            })
            .collect();
        write!(
            f,
            "; these were written and could not be put back: {}",
            left.join(", ")
        )
    }
}

/// Writes every replacement, or none: see the module's description. `stamp` names the backups
/// (`<file>.before-kubecred-<stamp>`, with a number added when one of that name exists).
pub fn replace_all(files: &[Replacement], stamp: &str) -> Result<Vec<Written>, Failure> {
    let mut staged = Vec::new();
    for file in files {
        match stage(&file.path, &file.content, stamp) {
            Ok(one) => staged.push(one),
            Err(error) => {
                staged.into_iter().for_each(Staged::abandon);
                return Err(Failure {
                    path: file.path.clone(),
                    error,
                    not_restored: Vec::new(),
                });
            }
        }
    }
    let mut written: Vec<Written> = Vec::new();
    let mut rest = staged.into_iter();
    while let Some(one) = rest.next() {
        let path = one.target.clone();
        match one.commit() {
            Ok(done) => written.push(done),
            Err(error) => {
                rest.for_each(Staged::abandon);
                let not_restored = written
                    .into_iter()
                    .filter(|done| restore(done).is_err())
                    .collect();
                return Err(Failure {
                    path,
                    error,
                    not_restored,
                });
            }
        }
    }
    Ok(written)
}

/// A file ready to be renamed into place.
#[derive(Debug)]
struct Staged {
    /// The real file (links followed).
    target: PathBuf,
    new: atomic_file::Staged,
    backup: Option<PathBuf>,
}

impl Staged {
    fn commit(self) -> io::Result<Written> {
        self.new.commit()?;
        Ok(Written {
            path: self.target,
            backup: self.backup,
        })
    }

    fn abandon(self) {
        // The temporary file goes with `new`.
        if let Some(backup) = &self.backup {
            let _ = fs::remove_file(backup);
        }
    }
}

/// The name the temporary files of this process carry (`atomic_file::stage`).
fn temp_tag() -> String {
    format!("kubecred-{}", std::process::id())
}

/// The backup and the temporary file of one replacement.
fn stage(path: &Path, content: &[u8], stamp: &str) -> io::Result<Staged> {
    // A link is followed to the file it names (a dotfiles manager's link stays a link); any
    // other path is used as given (canonicalize would turn a Windows path into its `\\?\` form).
    let is_link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    let target = if is_link {
        fs::canonicalize(path)?
    } else {
        path.to_path_buf()
    };
    let existing = match fs::metadata(&target) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    if existing.is_none() {
        // kubectl creates the directory of a new kubeconfig too (~/.kube).
        create_private_dir(atomic_file::parent_dir(&target))?;
    }
    let backup = match &existing {
        Some(_) => Some(write_backup(&target, stamp)?),
        None => None,
    };
    let mode = match &existing {
        Some(meta) => atomic_file::Mode::Like(meta),
        None => atomic_file::Mode::Private,
    };
    let new = atomic_file::stage(&target, &temp_tag(), content, mode).inspect_err(|_| {
        if let Some(backup) = &backup {
            let _ = fs::remove_file(backup);
        }
    })?;
    Ok(Staged {
        target,
        new,
        backup,
    })
}

/// `<file>.before-kubecred-<stamp>`, 0600, a copy of the file, flushed to disk.
fn write_backup(target: &Path, stamp: &str) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = fs::read(target)?;
    for attempt in 1..100 {
        let suffix = match attempt {
            1 => String::new(),
            n => format!("-{n}"),
        };
        let backup = target.with_file_name(format!("{name}.before-kubecred-{stamp}{suffix}"));
        match create_new_private(&backup) {
            Ok(mut file) => {
                let written = file.write_all(&bytes).and_then(|()| file.sync_all());
                if let Err(err) = written {
                    let _ = fs::remove_file(&backup);
                    return Err(err);
                }
                return Ok(backup);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "too many backups of this name",
    ))
}

/// A new file, 0600 from its creation (a backup holds what the kubeconfig held: credentials).
fn create_new_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Puts a written file back from its backup (or removes one that did not exist before).
fn restore(done: &Written) -> io::Result<()> {
    match &done.backup {
        Some(backup) => {
            let bytes = fs::read(backup)?;
            let meta = fs::metadata(&done.path)?;
            atomic_file::replace(
                &done.path,
                &temp_tag(),
                &bytes,
                atomic_file::Mode::Like(&meta),
            )
        }
        None => fs::remove_file(&done.path),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_mode_is_kept_a_private_backup_comes_first_and_links_stay_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("config");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let fresh = dir.path().join("new/dir/config");

        let written = replace_all(
            &[
                Replacement {
                    path: link.clone(),
                    content: b"new".to_vec(),
                },
                Replacement {
                    path: fresh.clone(),
                    content: b"created".to_vec(),
                },
            ],
            "20261125T101500Z",
        )
        .unwrap();
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(mode(&real), 0o640);
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let backup = written[0].backup.clone().unwrap();
        assert_eq!(
            backup,
            dir.path().join("config.before-kubecred-20261125T101500Z")
        );
        assert_eq!(fs::read_to_string(&backup).unwrap(), "old");
        assert_eq!(mode(&backup), 0o600);
        assert_eq!(fs::read_to_string(&fresh).unwrap(), "created");
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(written[1].backup, None);

        // A second backup in the same second does not overwrite the first.
        let again = replace_all(
            &[Replacement {
                path: real.clone(),
                content: b"newer".to_vec(),
            }],
            "20261125T101500Z",
        )
        .unwrap();
        assert_eq!(
            again[0].backup.as_deref(),
            Some(
                dir.path()
                    .join("config.before-kubecred-20261125T101500Z-2")
                    .as_path()
            )
        );
        assert_eq!(fs::read_to_string(&backup).unwrap(), "old");
    }

    #[test]
    fn a_file_that_cannot_be_written_leaves_every_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        fs::write(&good, "good").unwrap();
        // A directory where a kubeconfig should be: no file can replace it.
        let not_a_file = dir.path().join("config.d");
        fs::create_dir(&not_a_file).unwrap();
        let failure = replace_all(
            &[
                Replacement {
                    path: good.clone(),
                    content: b"changed".to_vec(),
                },
                Replacement {
                    path: not_a_file.clone(),
                    content: b"changed".to_vec(),
                },
            ],
            "stamp",
        )
        .unwrap_err();
        assert_eq!(failure.path, not_a_file);
        let message = failure.to_string();
        assert!(
            message.starts_with(&format!("cannot write {}: ", not_a_file.display()))
                && message.ends_with("; no file was changed"),
            "{message}"
        );
        assert_eq!(fs::read_to_string(&good).unwrap(), "good");
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            left.len(),
            2,
            "backups and temporary files removed: {left:?}"
        );
    }
}
