//! The name kubectl finds kubecred by on PATH, for the `command:` of the kubeconfig stanzas
//! kubecred writes (`convert-kubeconfig`): `kubecred`, or `kubectl-kubecred` where only that is
//! on PATH (krew installs only the plugin name). A bare name, never a resolved path: package
//! managers (krew, Homebrew) put a link on PATH to a versioned directory that their next upgrade
//! deletes, and a stanza naming that directory breaks with it. (Issue 27 has the same rule for
//! `setup`: the two are meant to be this one function.)

use std::ffi::OsStr;
use std::path::Path;

/// The names kubectl can run kubecred by, preferred first (the second is cli.rs's
/// `KUBECTL_PLUGIN_NAME`, which this leaf module cannot import).
const NAMES: [&str; 2] = ["kubecred", "kubectl-kubecred"];

/// `kubecred` when an executable of that name is on PATH, else `kubectl-kubecred` when that is,
/// else `None` (the caller names this binary by its path, and says so).
pub fn command_name_on_path() -> Option<&'static str> {
    first_on(&std::env::var_os("PATH")?)
}

/// The first of [`NAMES`] that is an executable file in a directory of `path` (a PATH value).
fn first_on(path: &OsStr) -> Option<&'static str> {
    let dirs: Vec<_> = std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .collect();
    NAMES.into_iter().find(|name| {
        let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
        dirs.iter().any(|dir| is_executable(&dir.join(&file)))
    })
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn kubecred_first_then_the_plugin_name_and_only_executables() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, krew) = (dir.path().join("bin"), dir.path().join("krew"));
        for d in [&bin, &krew] {
            std::fs::create_dir(d).unwrap();
        }
        let put = |path: &Path, mode: u32| {
            std::fs::write(path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let path = std::env::join_paths([&bin, &krew]).unwrap();
        assert_eq!(first_on(&path), None);
        put(&krew.join("kubectl-kubecred"), 0o755);
        // Not executable: kubectl could not run it.
        put(&bin.join("kubecred"), 0o644);
        assert_eq!(first_on(&path), Some("kubectl-kubecred"));
        put(&bin.join("kubecred"), 0o755);
        assert_eq!(first_on(&path), Some("kubecred"));
    }
}
