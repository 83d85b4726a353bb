//! `kubecred login`: log in now — also during a login cool-down — and cache the result; say
//! who is logged in on stderr, print nothing on stdout. `--print-token-info` adds the token's
//! subject, issuer, audience and expiry (for CI logs), never the token; the exit status says
//! whether it worked. With `--remote-bootstrap` it is instead the browser's side of a login
//! another kubecred started (`bootstrap.rs`): it prints the line to paste there on stdout,
//! and needs and stores nothing here.

mod bootstrap;

use crate::acquire;
use crate::clock::Clock;
use crate::config::{Config, LoginSettings};

/// `kubecred login --remote-bootstrap URL`: the relay line, for stdout.
pub(super) fn remote_bootstrap(url: &str, login: &LoginSettings) -> anyhow::Result<Option<String>> {
    bootstrap::relay(url, login).map(Some)
}

pub(super) fn run(
    config: &Config,
    print_token_info: bool,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    let tokens = acquire::login(config, clock)?;
    let who = crate::tokens::display_subject(&tokens).unwrap_or_else(|| "unknown".into());
    let until = tokens
        .credential(config.token_kind)
        .map(|(_, expiry)| expiry.to_rfc3339())
        .unwrap_or_else(|| "unknown".into());
    crate::log::notice(format!(
        "logged in to {} as {who} (token valid until {until})",
        config.issuer_as_given
    ));
    if print_token_info && let Some((token, expiry)) = tokens.credential(config.token_kind) {
        for line in crate::tokens::token_info(token, expiry) {
            crate::log::notice(line);
        }
    }
    Ok(None)
}
