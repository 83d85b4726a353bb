//! The commands, dispatched in one place ([`run`]). Each reads `KUBERNETES_EXEC_INFO`,
//! resolves the settings once, sets the log level, and hands the [`Config`] to the command's own
//! module. A command returns what to print on stdout, if anything (`get-token`: the
//! ExecCredential; `status`, `completion`, `man`, and `setup`, `whoami` and
//! `convert-kubeconfig`, which kubectl never runs: their output for a person or a script);
//! everything else it says goes to stderr.

mod claims_table;
pub(crate) mod command_on_path;
mod convert;
mod docs;
mod get_token;
mod login;
mod logout;
mod setup;
mod stanza;
mod status;
mod version;
mod whoami;

use crate::acquire;
use crate::cli::{Cli, Command, LoginArgs, TokenArgs};
use crate::clock::SystemClock;
use crate::config::{Config, Environment};
use crate::env_vars;
use crate::exec_credential::ExecInfo;
use std::ffi::OsString;

/// Runs one command, parsed from the process's command line `argv`; returns what to print on
/// stdout, if anything.
pub fn run(cli: Cli, argv: &[OsString]) -> anyhow::Result<Option<String>> {
    let clock = SystemClock;
    match cli.command {
        Command::GetToken(args) => {
            get_token::run(&resolve(&args, Run::ByKubectl, argv)?, argv, &clock)
        }
        Command::Login(LoginArgs {
            remote_bootstrap: Some(url),
            token,
            ..
        }) => {
            let (settings, verbose) =
                crate::config::resolve_relay_side(&token, &Environment::of_process(argv))?;
            crate::log::set_level(verbose);
            login::remote_bootstrap(&url, &settings)
        }
        Command::Login(args) => login::run(
            &resolve(&args.token, Run::ByPerson, argv)?,
            args.print_token_info,
            &clock,
        ),
        Command::Logout(args) => logout::run(&args, argv, &clock),
        Command::Status(args) => status::run(&args, &clock),
        Command::Completion { shell } => docs::completion(shell),
        Command::Man => docs::man(),
        Command::Version => version::run(),
        Command::Setup(args) => setup::run(
            &args,
            &|token: &TokenArgs| resolve(token, Run::ByPerson, argv),
            &clock,
        ),
        Command::Whoami(args) => whoami::run(&args, argv, &clock),
        Command::ConvertKubeconfig(args) => convert::run(&args, &clock),
        Command::RenewAhead(args) => {
            let config = resolve(&args.token, Run::ByKubectl, argv)?;
            acquire::renew_in_background(&config, args.lock_fd, &clock)?;
            Ok(None)
        }
    }
}

/// Who runs the command, which decides what an absent `KUBERNETES_EXEC_INFO` means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// kubectl (or another client) runs `get-token`: without the variable the session is not
    /// interactive (the JavaScript client, client-go before 1.20).
    ByKubectl,
    /// A person runs `login`/`logout` in a shell: with no KUBERNETES_EXEC_INFO, a terminal on
    /// stdin makes the session interactive (paste fallback, authcode-keyboard).
    ByPerson,
}

/// The settings of this run (`argv`: its command line), with the log level set from them.
fn resolve(args: &TokenArgs, run: Run, argv: &[OsString]) -> anyhow::Result<Config> {
    let raw = match std::env::var(env_vars::KUBERNETES_EXEC_INFO) {
        Ok(raw) => Some(raw),
        Err(std::env::VarError::NotPresent) => None,
        // Set but not text: bad input from the client, not "no exec info" (which would answer
        // in v1beta1 as if the client were old).
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(crate::error::fail(
                crate::error::Exit::Input,
                "KUBERNETES_EXEC_INFO is not valid UTF-8; it must be the ExecCredential JSON that kubectl sets — check the environment of the command that runs kubecred",
            ));
        }
    };
    let mut exec = ExecInfo::parse(raw.as_deref())?;
    if run == Run::ByPerson && raw.is_none() {
        exec.interactive = crate::presence::stdin_is_a_terminal();
    }
    let config = Config::resolve(args, &Environment::of_process(argv), exec)?;
    crate::log::set_level(config.verbose);
    Ok(config)
}
