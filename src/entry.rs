//! The process around a command: parse the command line, run the dispatch, print the document on
//! stdout or one error line on stderr, and turn the outcome into the exit code (`kubecred-full`,
//! [`run`]). The `kubecred` front (front.rs) shares the C `main` and the printing.
//!
//! On unix both binaries define the C `main` themselves (`no_main`) and call [`c_main`]: std's
//! start-up, which this skips, reads `/proc/self/maps` to find the main thread's stack for its
//! overflow guard — about a tenth of a cache hit's instructions. What it also did that kubecred
//! needs is done here: SIGPIPE is ignored (a write to a closed pipe is an error we report, not a
//! silent death), and stdout is flushed before returning. A stack overflow then ends in a plain
//! SIGSEGV instead of std's message.

use crate::cli::{usage_error_line, Cli};
use crate::error::{exit_code_of, one_line, Exit};
use std::io::Write;

/// What a binary runs for a parsed command line: the document for stdout, if any.
pub type Dispatch = fn(Cli) -> anyhow::Result<Option<String>>;

/// The whole process for a `no_main` binary's C `main`: `process` is the binary's work
/// (`|| run(commands::run)`, `front::run`); returns its exit status.
#[cfg(unix)]
pub fn c_main(process: fn() -> u8) -> libc::c_int {
    // SAFETY: setting a signal's disposition to "ignore" before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // std reads the arguments itself (from glibc's .init_array hook), so argc/argv go unused.
    let code = process();
    let _ = std::io::stdout().flush();
    libc::c_int::from(code)
}

/// Parses the process's command line, runs `dispatch`, prints; returns the exit code.
pub fn run(dispatch: Dispatch) -> u8 {
    // A kubelogin stanza moved over by changing only `command:` still reads
    // `args: [oidc-login, get-token, ...]` (kubelogin runs as `kubectl oidc-login`): the parse
    // drops that first `oidc-login` and takes kubelogin's `-v1` (see Cli::try_parse_command_line).
    let cli = match Cli::try_parse_command_line(crate::binaries::full_binary_argv()) {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    match dispatch(cli) {
        Ok(Some(document)) => print_document(&document),
        Ok(None) => 0,
        Err(err) => {
            crate::log::error_line(one_line(&err));
            exit_code_of(&err) as u8
        }
    }
}

/// Writes the document to stdout in one write; the exit code.
pub fn print_document(document: &str) -> u8 {
    // One write of the whole document: stdout carries the ExecCredential and nothing else.
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(document.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => 0,
        Err(err) => {
            // stderr may be gone too (kubectl died): never panic over reporting it.
            crate::log::error_line(format_args!(
                "writing the credential to stdout failed: {err}; kubectl may have gone away"
            ));
            Exit::Input as u8
        }
    }
}

/// `--help` and `--version` print as usual; a usage error becomes one line on stderr.
fn clap_error(err: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            0
        }
        _ => {
            crate::log::error_line(usage_error_line(&err));
            Exit::Usage as u8
        }
    }
}
