//! The command by which a kubeconfig should run this binary: the name it is found by on `PATH`
//! (`kubecred`, or `kubectl-kubecred` where a kubectl plugin manager such as krew put only that
//! name there), never the file a link resolves to. Package managers install a versioned file
//! behind a stable link (krew: `~/.krew/store/kubecred/v0.1.0/kubecred` behind
//! `~/.krew/bin/kubectl-kubecred`; Homebrew: `Cellar/kubecred/0.1.0/bin/kubecred` behind
//! `bin/kubecred`) and delete the versioned file on upgrade, so a printed resolved path would
//! break every kubeconfig at the next upgrade. `setup` prints what [`for_kubeconfig`] chooses;
//! `convert-kubeconfig` is meant to use the same rule.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::cli::{KUBECTL_PLUGIN_NAME, PROGRAM_NAME};

/// What to write as a kubeconfig's `exec.command` for this binary, and why it is that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecCommand {
    /// `kubecred` runs this binary through PATH.
    Name,
    /// Only `kubectl-kubecred` runs this binary through PATH (krew links no `kubecred`).
    KubectlPluginName,
    /// Neither name on PATH is this binary: its path, as it was run (links left unresolved).
    Path(PathBuf),
}

impl ExecCommand {
    /// The command as a kubeconfig and kuberc carry it.
    pub fn as_command(&self) -> String {
        match self {
            ExecCommand::Name => PROGRAM_NAME.to_string(),
            ExecCommand::KubectlPluginName => KUBECTL_PLUGIN_NAME.to_string(),
            ExecCommand::Path(path) => path.display().to_string(),
        }
    }
}

/// The command for this process's binary, by the process's PATH, program name and working
/// directory. An error only when the running binary cannot be found at all.
pub fn for_kubeconfig() -> std::io::Result<ExecCommand> {
    let this = std::fs::canonicalize(std::env::current_exe()?)?;
    let invoked_as = std::env::args_os().next().map(PathBuf::from);
    let search_path = std::env::var_os("PATH");
    Ok(choose(&this, invoked_as.as_deref(), search_path.as_deref()))
}

/// [`for_kubeconfig`] with its inputs given: `this` is the running binary's canonical path.
fn choose(this: &Path, invoked_as: Option<&Path>, search_path: Option<&OsStr>) -> ExecCommand {
    let runs_this = |name: &str| {
        first_on_path(name, search_path)
            .and_then(|found| std::fs::canonicalize(found).ok())
            .is_some_and(|found| found == this)
    };
    if runs_this(PROGRAM_NAME) {
        return ExecCommand::Name;
    }
    if runs_this(KUBECTL_PLUGIN_NAME) {
        return ExecCommand::KubectlPluginName;
    }
    // Not on PATH under either name (a build tree, an unpacked archive): the path it was run
    // by, made absolute but with its links kept, when that still is this binary.
    let as_run = invoked_as
        .filter(|path| path.components().count() > 1)
        .and_then(|path| std::path::absolute(path).ok())
        .filter(|path| std::fs::canonicalize(path).is_ok_and(|real| real == this));
    ExecCommand::Path(as_run.unwrap_or_else(|| without_verbatim_prefix(this.to_path_buf())))
}

/// The file `name` runs as, the way client-go's `exec.LookPath` finds it: the first executable
/// file of that name in a PATH directory. Empty PATH entries (the working directory) are
/// skipped: a kubeconfig must not depend on where kubectl runs.
fn first_on_path(name: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    let file_name = OsString::from(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    std::env::split_paths(search_path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&file_name))
        .find(|candidate| is_executable_file(candidate))
}

#[cfg(unix)]
fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
}

/// `C:\Users\…` for Windows' `\\?\C:\Users\…`: canonicalize returns the verbatim form, which
/// is neither what a user reads nor what they would write in a kubeconfig. Other paths as they are.
fn without_verbatim_prefix(path: PathBuf) -> PathBuf {
    let plain = path
        .to_str()
        .and_then(|text| text.strip_prefix(r"\\?\"))
        .filter(|rest| rest.as_bytes().get(1) == Some(&b':'))
        .map(PathBuf::from);
    plain.unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_windows_verbatim_drive_path_is_printed_plainly() {
        let plain = |p: &str| without_verbatim_prefix(PathBuf::from(p));
        assert_eq!(
            plain(r"\\?\C:\Program Files\kubecred\kubecred.exe"),
            PathBuf::from(r"C:\Program Files\kubecred\kubecred.exe")
        );
        // A verbatim UNC path has no plain form this simple: left as it is.
        assert_eq!(
            plain(r"\\?\UNC\server\share\kubecred.exe"),
            PathBuf::from(r"\\?\UNC\server\share\kubecred.exe")
        );
        assert_eq!(
            plain("/usr/local/bin/kubecred"),
            PathBuf::from("/usr/local/bin/kubecred")
        );
    }

    #[cfg(unix)]
    mod layouts {
        use super::super::*;
        use std::os::unix::fs::symlink;

        /// A versioned file behind links, as package managers install it.
        struct Layout {
            root: tempfile::TempDir,
        }

        impl Layout {
            fn new() -> Layout {
                Layout {
                    root: tempfile::tempdir().unwrap(),
                }
            }

            fn path(&self, relative: &str) -> PathBuf {
                self.root.path().join(relative)
            }

            /// An executable file at `relative`; its canonical path.
            fn binary(&self, relative: &str) -> PathBuf {
                use std::os::unix::fs::PermissionsExt;
                let path = self.path(relative);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, "#!/bin/sh\n").unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::canonicalize(path).unwrap()
            }

            fn link(&self, relative: &str, target: &str) {
                let path = self.path(relative);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                symlink(target, path).unwrap();
            }

            fn search_path(&self, dirs: &[&str]) -> OsString {
                std::env::join_paths(dirs.iter().map(|dir| self.path(dir))).unwrap()
            }
        }

        #[test]
        fn under_krew_the_plugin_link_is_named_not_the_versioned_store() {
            let krew = Layout::new();
            let this = krew.binary("krew/store/kubecred/v0.1.0/kubecred");
            krew.link(
                "krew/bin/kubectl-kubecred",
                "../store/kubecred/v0.1.0/kubecred",
            );
            let path = krew.search_path(&["krew/bin"]);
            let invoked = krew.path("krew/bin/kubectl-kubecred");
            assert_eq!(
                choose(&this, Some(&invoked), Some(&path)),
                ExecCommand::KubectlPluginName
            );
        }

        #[test]
        fn under_homebrew_the_bin_link_is_named_not_the_cellar() {
            let brew = Layout::new();
            let this = brew.binary("brew/Cellar/kubecred/0.1.0/bin/kubecred");
            brew.link("brew/bin/kubecred", "../Cellar/kubecred/0.1.0/bin/kubecred");
            brew.link(
                "brew/bin/kubectl-kubecred",
                "../Cellar/kubecred/0.1.0/bin/kubecred",
            );
            let path = brew.search_path(&["brew/bin"]);
            assert_eq!(
                choose(&this, Some(Path::new("kubecred")), Some(&path)),
                ExecCommand::Name
            );
            assert_eq!(ExecCommand::Name.as_command(), "kubecred");
        }

        #[test]
        fn another_kubecred_first_on_path_is_not_named() {
            let two = Layout::new();
            let this = two.binary("new/kubecred");
            two.binary("old/kubecred");
            let path = two.search_path(&["old", "new"]);
            let invoked = two.path("new/kubecred");
            // `kubecred` would run the old one: the stanza names this binary's path.
            assert_eq!(
                choose(&this, Some(&invoked), Some(&path)),
                ExecCommand::Path(invoked.clone())
            );
        }

        #[test]
        fn off_path_the_path_as_run_is_kept_with_its_links() {
            let tree = Layout::new();
            let this = tree.binary("opt/kubecred-0.1.0/kubecred");
            tree.link("opt/current", "kubecred-0.1.0");
            let as_run = tree.path("opt/current/kubecred");
            assert_eq!(
                choose(&this, Some(&as_run), Some(&tree.search_path(&["bin"]))),
                ExecCommand::Path(as_run.clone())
            );
            // Run by a bare name that PATH no longer finds: the real path is all there is.
            assert_eq!(
                choose(&this, Some(Path::new("kubecred")), None),
                ExecCommand::Path(this.clone())
            );
        }

        #[test]
        fn a_file_that_is_not_executable_is_not_what_path_runs() {
            let tree = Layout::new();
            let this = tree.binary("real/kubecred");
            std::fs::create_dir_all(tree.path("first")).unwrap();
            std::fs::write(tree.path("first/kubecred"), "not a program").unwrap();
            tree.link("second/kubecred", "../real/kubecred");
            let path = tree.search_path(&["first", "second"]);
            assert_eq!(
                choose(&this, Some(Path::new("kubecred")), Some(&path)),
                ExecCommand::Name
            );
        }
    }
}
