//! `kubecred login`: log in now — also during a login cool-down — and cache the result; say
//! who is logged in on stderr, print nothing on stdout.

use crate::acquire;
use crate::clock::Clock;
use crate::config::Config;

pub(super) fn run(config: &Config, clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    let tokens = acquire::login(config, clock)?;
    let who = crate::tokens::display_subject(&tokens).unwrap_or_else(|| "unknown".into());
    let until = tokens
        .credential(config.token_kind)
        .map(|(_, expiry)| expiry.to_rfc3339())
        .unwrap_or_else(|| "unknown".into());
    crate::log::notice(format!(
        "logged in to {} as {who} (token valid until {until})",
        config.issuer
    ));
    Ok(None)
}
