//! The hand-over between the two binaries. `kubecred` is what kubectl starts on every command,
//! so it holds only get-token, login, logout and status; `setup`, `whoami`, `completion` and
//! `man` live in `kubecred-tools`, installed beside it, which `kubecred` replaces itself with
//! (exec, same arguments, same terminal) when asked for one of them.
//!
//! Why two binaries: the loader maps and relocates the whole binary before `main`, whatever the
//! command. With CEL, YAML and the generators linked in, `kubecred` was 10.3 MB with 22,000
//! relocations, and a cache hit cost 1.8× `cat`; without them, 7 MB, 5,800 relocations and
//! 1.4× (bench/RESULTS.md; side by side, 0.8× the time of the single binary). The split is kept
//! by `commands::run` never naming a tools-only command's code, so the linker drops it
//! (tests/it/binaries.rs checks).

use crate::error::{fail, Exit};
use std::path::PathBuf;

/// The binary kubectl runs.
pub const MAIN_BINARY: &str = "kubecred";
/// The binary with setup, whoami, completion and man.
pub const TOOLS_BINARY: &str = "kubecred-tools";

/// `name` in the directory of the running binary (symlinks resolved: `kubectl-kubecred` linked
/// into PATH by krew still finds its sibling in the install directory).
fn sibling(name: &str) -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| std::io::Error::other("the running binary has no directory"))?;
    Ok(dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
}

/// Runs this process's command line in `kubecred-tools` instead (`command` names it in errors).
/// On unix the process becomes kubecred-tools and this returns only when that cannot start.
pub(super) fn hand_over(command: &str) -> anyhow::Result<Option<String>> {
    let not_started = |err: std::io::Error, path: &str| {
        fail(
            Exit::Input,
            format!(
                "kubecred {command} runs {path}, which could not be started: {err}; install \
                 {TOOLS_BINARY} in the same directory as {MAIN_BINARY} (`cargo install --path .` \
                 installs both)"
            ),
        )
    };
    let tools = sibling(TOOLS_BINARY).map_err(|err| not_started(err, TOOLS_BINARY))?;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| MAIN_BINARY.into());
    let mut child = std::process::Command::new(&tools);
    child.args(args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // argv[0] stays what the user ran, so that help and errors name `kubecred` (or
        // `kubectl kubecred`), as they do for every other command.
        let err = child.arg0(argv0).exec();
        Err(not_started(err, &tools.display().to_string()))
    }
    #[cfg(not(unix))]
    {
        let _ = argv0;
        let status = child
            .status()
            .map_err(|err| not_started(err, &tools.display().to_string()))?;
        std::process::exit(status.code().unwrap_or(Exit::Input as i32));
    }
}

/// The `kubecred` binary beside this one, for the kubeconfig `setup` prints (the tools binary
/// is not what kubectl must run).
pub(super) fn main_binary() -> anyhow::Result<PathBuf> {
    sibling(MAIN_BINARY)
        .and_then(std::fs::canonicalize)
        .map_err(|err| {
            fail(
                Exit::Input,
                format!(
                    "cannot find the {MAIN_BINARY} binary beside {TOOLS_BINARY} for the printed kubeconfig: {err}; install both in one directory"
                ),
            )
        })
}
