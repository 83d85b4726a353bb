//! The `kubecred` binary: parse, run, print the result or one error line.

use kubecred::cli::{usage_error_line, Cli};
use kubecred::error::{exit_code_of, one_line, Exit};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A kubelogin stanza moved over by changing only `command:` still reads
    // `args: [oidc-login, get-token, ...]` (kubelogin runs as `kubectl oidc-login`): the parse
    // drops that first `oidc-login` and takes kubelogin's `-v1` (see Cli::try_parse_command_line).
    let cli = match Cli::try_parse_command_line(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    match kubecred::run(cli) {
        Ok(Some(document)) => {
            // One write of the whole document: stdout carries the ExecCredential and nothing else.
            let mut stdout = std::io::stdout().lock();
            if let Err(err) = stdout
                .write_all(document.as_bytes())
                .and_then(|()| stdout.flush())
            {
                // stderr may be gone too (kubectl died): never panic over reporting it.
                let _ = writeln!(
                    std::io::stderr(),
                    "kubecred: error: writing the credential to stdout failed: {err}; kubectl may have gone away"
                );
                return ExitCode::from(Exit::Input as u8);
            }
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kubecred: error: {}", one_line(&err));
            ExitCode::from(exit_code_of(&err) as u8)
        }
    }
}

/// `--help` and `--version` print as usual; a usage error becomes one line on stderr.
fn clap_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("kubecred: error: {}", usage_error_line(&err));
            ExitCode::from(Exit::Usage as u8)
        }
    }
}
