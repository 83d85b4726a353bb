//! `kubecred get-token`: what a kubeconfig `exec` stanza runs. Prints one ExecCredential.

use crate::acquire;
use crate::clock::Clock;
use crate::config::Config;

pub(super) fn run(config: &Config, clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    acquire::credential(config, clock).map(Some)
}
