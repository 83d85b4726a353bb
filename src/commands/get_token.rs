//! `kubecred get-token`: what a kubeconfig `exec` stanza runs. Prints one ExecCredential.

use crate::acquire;
use crate::clock::Clock;
use crate::config::Config;

pub(super) fn run(config: &Config, clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    // The background renewal a cache hit started (refresh-ahead): renews, prints nothing.
    if let Some(lock) = std::env::var_os(crate::env_vars::KUBECRED_BACKGROUND_RENEWAL) {
        acquire::renew_in_background(config, clock, &lock.to_string_lossy())?;
        return Ok(None);
    }
    acquire::credential(config, clock).map(Some)
}
