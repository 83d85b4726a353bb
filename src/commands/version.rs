//! `kubecred version`: what `--version` prints, as a command (`kubectl kubecred version` reads as
//! kubectl's own `version`). The text is `cli::LONG_VERSION`, made at build time (build.rs).

/// `kubecred <version>`, then the commit, target, build date and compiler, one per line.
pub(super) fn run() -> anyhow::Result<Option<String>> {
    Ok(Some(format!("kubecred {}\n", crate::cli::LONG_VERSION)))
}
