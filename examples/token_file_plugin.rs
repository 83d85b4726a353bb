//! A small exec credential plugin of your own, on kubecred's library: it reads
//! `KUBERNETES_EXEC_INFO` the way kubecred does and prints the `ExecCredential` client-go expects,
//! for a bearer token that some other tool already wrote to a file — a CI system's OIDC token, a
//! projected service-account token, a token fetched by a sidecar.
//!
//!     cargo build --example token_file_plugin
//!
//! ```yaml
//! users:
//! - name: from-file
//!   user:
//!     exec:
//!       apiVersion: client.authentication.k8s.io/v1
//!       command: /path/to/target/debug/examples/token_file_plugin
//!       args: [/var/run/secrets/tokens/kubernetes]    # or the cluster extension's tokenFile
//!       interactiveMode: Never
//! ```
//!
//! The library pieces it uses, and why each is worth reusing:
//! - [`ExecInfo::parse`]: the client's `apiVersion` (echoed back: client-go rejects any other),
//!   whether it handed over a terminal, and with `provideClusterInfo: true` the cluster's
//!   `client.authentication.k8s.io/exec` extension. An unset or empty variable (the JavaScript
//!   client, client-go before 1.20) means v1beta1.
//! - [`unverified_jwt_expiry`]: the token's `exp`, read without verifying the signature (the API
//!   server verifies; the plugin only needs to tell the client when to ask again).
//! - [`render`]: the one-line document, expiry in whole seconds at or before the real one.
//! - [`Secret`]: the token never shows in a `Debug` or error message by accident.
//!
//! As kubecred does, it prints the credential and nothing else on stdout, and on failure one line
//! on stderr and exit code 1, so that kubectl shows the reason.

use anyhow::{Context, bail};
use kubecred::env_vars::KUBERNETES_EXEC_INFO;
use kubecred::exec_credential::{ExecInfo, render};
use kubecred::secret::Secret;
use kubecred::tokens::unverified_jwt_expiry;
use std::io::Write;
use std::path::PathBuf;

fn main() {
    match credential() {
        Ok(document) => {
            // One write of the whole document: a client reads stdout to its end.
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(document.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                std::process::exit(1);
            }
        }
        Err(err) => {
            // Not eprintln!: it panics when stderr is a closed pipe. A plugin's error line is
            // best effort; the exit status is what the client acts on.
            let _ = writeln!(std::io::stderr(), "token_file_plugin: error: {err:#}");
            std::process::exit(1);
        }
    }
}

fn credential() -> anyhow::Result<String> {
    let exec_info = ExecInfo::parse(std::env::var(KUBERNETES_EXEC_INFO).ok().as_deref())?;

    // The token file: the first argument, else the cluster extension's `tokenFile` (so one
    // cluster entry can name it for every user, as kubecred's own settings can be).
    let from_extension = || {
        exec_info
            .cluster_config()
            .and_then(|extension| extension.get("tokenFile"))
            .and_then(|value| value.as_str())
            .map(PathBuf::from)
    };
    let Some(path) = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .or_else(from_extension)
    else {
        bail!(
            "no token file: pass its path as the argument, or set tokenFile in the cluster's \
             client.authentication.k8s.io/exec extension (with provideClusterInfo: true)"
        );
    };

    let token = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the token file {}", path.display()))?;
    let token = Secret::new(token.trim());
    if token.expose().is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    let Some(expiry) = unverified_jwt_expiry(token.expose()) else {
        bail!(
            "the token in {} is not a JWT with an exp claim; this plugin needs one to tell the \
             client when to ask again",
            path.display()
        );
    };
    Ok(render(exec_info.api_version, &token, expiry))
}
