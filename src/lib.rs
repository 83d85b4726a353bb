//! kubecred: a Kubernetes client-go exec credential plugin for OpenID Connect / OAuth 2.0.
//!
//! The binary (`main.rs`) parses the command line and calls [`run`]; everything else lives here so
//! that integration tests and examples can use it. See ARCHITECTURE.md for the map.

pub mod cache;
pub mod cli;
pub mod clock;
pub mod config;
pub mod digest;
pub mod duration;
pub mod env_vars;
pub mod error;
pub mod exec_credential;
pub mod get_token;
pub mod grants;
pub mod http;
pub mod kubelogin;
pub mod log;
pub mod login;
pub mod oidc;
pub mod private_file;
pub mod secret;
pub mod tokens;

use cli::{Cli, Command};
use config::{Config, Environment};
use exec_credential::ExecInfo;
use std::io::IsTerminal;

/// Runs one command; returns what to print on stdout, if anything.
pub fn run(cli: Cli) -> anyhow::Result<Option<String>> {
    let exec_info_raw = std::env::var(env_vars::KUBERNETES_EXEC_INFO).ok();
    let exec = ExecInfo::parse(exec_info_raw.as_deref())?;
    let env = Environment::from_process();
    match cli.command {
        Command::GetToken(args) => {
            let config = Config::resolve(&args, &env, exec)?;
            log::set_level(config.verbose);
            get_token::get_token(&config).map(Some)
        }
        Command::Login(args) => {
            // Run by a person rather than by kubectl: with no KUBERNETES_EXEC_INFO, a terminal on
            // stdin makes the session interactive (paste fallback, authcode-keyboard).
            let exec = if exec_info_raw.is_none() {
                ExecInfo {
                    interactive: std::io::stdin().is_terminal(),
                    ..exec
                }
            } else {
                exec
            };
            let config = Config::resolve(&args, &env, exec)?;
            log::set_level(config.verbose);
            let tokens = get_token::login(&config)?;
            let who = tokens::display_subject(&tokens).unwrap_or_else(|| "unknown".into());
            let until = tokens
                .credential(config.token_kind)
                .map(|(_, expiry)| expiry.to_rfc3339())
                .unwrap_or_else(|| "unknown".into());
            log::notice(format!(
                "logged in to {} as {who} (token valid until {until})",
                config.issuer
            ));
            Ok(None)
        }
        Command::Logout(args) => {
            let config = Config::resolve(&args, &env, exec)?;
            log::set_level(config.verbose);
            get_token::logout(&config)?;
            log::notice(format!(
                "forgot the cached tokens for {} ({})",
                config.issuer, config.client.id
            ));
            Ok(None)
        }
    }
}
