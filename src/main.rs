//! The `kubecred` binary: parse, run, print the result or one error line.

use clap::Parser;
use kubecred::cli::Cli;
use kubecred::error::{exit_code_of, one_line, Exit};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    match kubecred::run(cli) {
        Ok(Some(document)) => {
            // One write of the whole document: stdout carries the ExecCredential and nothing else.
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(document.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
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
            let rendered = err.render().to_string();
            let first = rendered
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("invalid command line")
                .trim_start_matches("error: ");
            eprintln!("kubecred: error: {first} (see kubecred --help)");
            ExitCode::from(Exit::Usage as u8)
        }
    }
}
