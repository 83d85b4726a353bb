//! `kubecred get-token`: what a kubeconfig `exec` stanza runs. Prints one ExecCredential.

use crate::acquire;
use crate::cli;
use crate::clock::Clock;
use crate::config::Config;
use std::ffi::OsString;

/// `argv`: the process's command line, which a hit in the refresh-ahead window turns into its
/// background renewal's (`cli::renewal_arguments`, called only then).
pub(super) fn run(
    config: &Config,
    argv: &[OsString],
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    let renewal_arguments = |lock_fd| cli::renewal_arguments(argv.to_vec(), lock_fd);
    acquire::credential(config, &renewal_arguments, clock).map(Some)
}
