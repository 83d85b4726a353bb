//! `kubecred logout`: forget the cached tokens for these settings, so that the next `get-token`
//! logs in again (to switch accounts, or after a role change).

use crate::acquire;
use crate::config::Config;

pub(super) fn run(config: &Config) -> anyhow::Result<Option<String>> {
    acquire::logout(config)?;
    crate::log::notice(format!(
        "forgot the cached tokens for {} ({})",
        config.issuer, config.client.id
    ));
    Ok(None)
}
