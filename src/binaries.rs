//! The two installed binaries, `kubecred` (the cache-hit front, front.rs) and `kubecred-full`
//! (every command): their names, finding one beside the other, and the marker the front sets on
//! a hand-over. A leaf module, so that the front and `setup` (which prints `kubecred`'s path)
//! can both use it without importing each other.

use std::ffi::OsString;
use std::path::PathBuf;

/// The binary kubectl runs: the front.
pub const MAIN_BINARY: &str = "kubecred";
/// The binary with every command, which the front hands all but cache hits to.
pub const FULL_BINARY: &str = "kubecred-full";

/// Set by the front on the process it hands over to, to the argv[0] the user ran. It tells a
/// front that finds it that the "kubecred-full" it was started as is another front (a copy or a
/// link of `kubecred`), which would otherwise exec itself for ever; and it carries argv[0] where
/// the hand-over cannot (Windows starts a child, whose argv[0] is its own path), so that help
/// still names `kubectl kubecred`. kubecred-full removes it at start, so nothing it starts (the
/// browser, or a shell whose kubectl runs kubecred again) inherits it.
pub const HANDED_OVER: &str = "KUBECRED_HANDED_OVER_ARGV0";

/// `name` in the directory of the running binary, after symlinks: `kubectl-kubecred` linked into
/// PATH (by krew, or by hand) finds its sibling in the install directory. `current_exe` resolves
/// links on Linux but returns the link itself on some systems (macOS), hence the canonicalize.
/// Only a hand-over and `setup` look: never a cache hit.
pub fn sibling(name: &str) -> std::io::Result<PathBuf> {
    let exe = std::fs::canonicalize(std::env::current_exe()?)?;
    let dir = exe
        .parent()
        .ok_or_else(|| std::io::Error::other("the running binary has no directory"))?;
    Ok(dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
}

/// The `kubecred` binary beside `kubecred-full`, for the kubeconfig `setup` prints (kubectl must
/// run the front).
pub fn main_binary() -> anyhow::Result<PathBuf> {
    sibling(MAIN_BINARY)
        .and_then(std::fs::canonicalize)
        .map_err(|err| {
            crate::error::fail(
                crate::error::Exit::Input,
                format!(
                    "cannot find the {MAIN_BINARY} binary beside {FULL_BINARY} for the printed kubeconfig: {err}; install both in one directory"
                ),
            )
        })
}

/// kubecred-full's command line: this process's arguments, with argv[0] as the user ran it when
/// the front handed the run over. Takes the [`HANDED_OVER`] marker out of the environment.
pub fn full_binary_argv() -> Vec<OsString> {
    let mut argv: Vec<OsString> = std::env::args_os().collect();
    if let Some(argv0) = std::env::var_os(HANDED_OVER) {
        // SAFETY (edition 2024 marks this unsafe): called at the start of main, before any
        // thread exists.
        std::env::remove_var(HANDED_OVER);
        match argv.first_mut() {
            Some(first) => *first = argv0,
            None => argv.push(argv0),
        }
    }
    argv
}
