//! The process around a command: read the command line (once: what needs it later, the usage
//! error's line and the background renewal's arguments, is handed it from here), parse it, run
//! the command ([`commands::run`]), print its document on stdout or one error line on stderr,
//! and turn the outcome into the exit code. `main.rs` is a plain `fn main` calling [`main`]: std ignores SIGPIPE before it runs (a
//! write to a closed pipe is an error we handle here, not a silent death) and flushes stdout at
//! exit.

pub mod startup_arena;

use crate::cli::{Cli, Command, usage_error_line};
use crate::commands;
use crate::error::{Exit, exit_code_of, one_line};
use std::ffi::OsString;
use std::io::Write;

/// The whole process: the exit code.
pub fn main() -> u8 {
    // A kubelogin stanza moved over by changing only `command:` still reads
    // `args: [oidc-login, get-token, ...]` (kubelogin runs as `kubectl oidc-login`): the parse
    // drops that first `oidc-login` and takes kubelogin's `-v1` (see Cli::try_parse_command_line).
    let argv: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_command_line(&argv) {
        Ok(cli) => cli,
        Err(err) => return clap_error(err, &argv),
    };
    let output = match cli.command {
        Command::GetToken(_) => Output::Credential,
        _ => Output::Report,
    };
    match commands::run(cli, &argv) {
        Ok(Some(document)) => print_document(&document, output),
        Ok(None) => 0,
        Err(err) => {
            crate::log::error_line(one_line(&err));
            exit_code_of(&err) as u8
        }
    }
}

/// What a command prints on stdout, which decides what a reader that went away means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    /// get-token's ExecCredential: kubectl needs it, so a failed write is an error.
    Credential,
    /// Everything else (`status`, `man`, `completion`, `setup`, `whoami`): a reader that stops
    /// early (`kubecred man | head`) ends the command quietly, as ripgrep does.
    Report,
}

/// Writes the document to stdout in one write; the exit code.
fn print_document(document: &str, output: Output) -> u8 {
    // One write of the whole document: stdout carries the ExecCredential and nothing else.
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(document.as_bytes())
        .and_then(|()| stdout.flush());
    match (written, output) {
        (Ok(()), _) => 0,
        (Err(err), Output::Report) if err.kind() == std::io::ErrorKind::BrokenPipe => 0,
        // stderr may be gone too (kubectl died): never panic over reporting it.
        (Err(err), Output::Credential) => {
            crate::log::error_line(format_args!(
                "writing the credential to stdout failed: {err}; kubectl may have gone away"
            ));
            Exit::Input as u8
        }
        (Err(err), Output::Report) => {
            crate::log::error_line(format_args!(
                "writing to stdout failed: {err}; check where the output is redirected"
            ));
            Exit::Input as u8
        }
    }
}

/// `--help` and `--version` print as usual; a usage error becomes one line on stderr.
fn clap_error(err: clap::Error, argv: &[OsString]) -> u8 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            0
        }
        _ => {
            crate::log::error_line(usage_error_line(&err, argv));
            Exit::Usage as u8
        }
    }
}
