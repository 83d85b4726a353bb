//! Puts the git commit into `kubecred --version` (`KUBECRED_GIT_COMMIT`): `git rev-parse --short
//! HEAD` when the source is a git checkout and git is installed, else the `KUBECRED_GIT_COMMIT`
//! a packager sets, else "unknown" (a build from a tarball must not fail).
//!
//! Cargo reruns this only when HEAD or the branch it points at moves (not on every build), or
//! when the override changes.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KUBECRED_GIT_COMMIT");
    let commit = std::env::var("KUBECRED_GIT_COMMIT")
        .ok()
        .filter(|value| !value.is_empty())
        .or_else(|| {
            // A tarball unpacked inside another repository must not take that one's commit.
            let toplevel = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
            let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
            if toplevel.canonicalize().ok()? != manifest_dir.canonicalize().ok()? {
                return None;
            }
            let commit = git(&["rev-parse", "--short", "HEAD"])?;
            // Rerun when HEAD moves to another branch or commit, or the branch moves. In a
            // worktree HEAD is in its own git dir and the refs are in the common one.
            let git_dir = PathBuf::from(git(&["rev-parse", "--git-dir"])?);
            let common_dir = PathBuf::from(git(&["rev-parse", "--git-common-dir"])?);
            // A path that does not exist would make cargo rerun this on every build: skip those.
            let mut watched = vec![git_dir.join("HEAD"), common_dir.join("packed-refs")];
            if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watched.push(common_dir.join(reference));
            }
            for path in watched.iter().filter(|path| path.exists()) {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            Some(commit)
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=KUBECRED_GIT_COMMIT={commit}");
}
