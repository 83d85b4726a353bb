//! kubecred: a Kubernetes client-go exec credential plugin for OpenID Connect / OAuth 2.0.
//!
//! The binary is a few lines (`main.rs` calls [`main`]); everything else lives here so that
//! integration tests and examples can use it. See ARCHITECTURE.md for the map. The files at
//! this root are the few every layer uses (the clock, errors, logging, secrets, text, time
//! spans, the environment's names, the token types and the Kubernetes JSON); every other module
//! is a folder.

pub(crate) mod acquire;
pub(crate) mod authn_config;
pub mod cache;
pub mod cli;
pub(crate) mod clock;
pub mod clouds;
pub(crate) mod commands;
pub mod config;
pub(crate) mod digest;
pub(crate) mod duration;
pub mod env_vars;
pub(crate) mod error;
pub mod exec_credential;
pub(crate) mod fs;
pub(crate) mod grants;
pub(crate) mod http;
pub(crate) mod kubeconfig;
pub(crate) mod log;
pub(crate) mod login;
pub(crate) mod oidc;
pub(crate) mod peers;
pub(crate) mod presence;
pub(crate) mod process;
pub mod secret;
pub(crate) mod text;
pub mod tokens;

/// The fuzz targets' way in (fuzz/, built by cargo-fuzz with `--cfg fuzzing`) and the corpus
/// replay of the unit tests; not part of the library otherwise.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;

pub use process::main;
/// The binary's allocator (`main.rs` installs it).
pub use process::startup_arena;

/// The name int128/kubelogin (1.36 on) gives the token-cache entry of the `get-token` line
/// `args` (what follows `kubelogin`) for a user whose home is `home`, as `convert-kubeconfig`
/// looks for it. For the integration tests, which write kubelogin's cache as kubelogin would;
/// the readers themselves stay inside the crate.
#[doc(hidden)]
pub fn kubelogin_cache_name(args: &[String], home: &str) -> Option<String> {
    use peers::kubelogin::command_line::{Read, read};
    use peers::kubelogin::token_cache::{Release, names_of};
    let env = |name: &str| (name == "HOME").then(|| home.to_string());
    let Read::GetToken(line) = read(args, &env) else {
        return None;
    };
    let mut names = names_of(Release::V1_36, &line).ok()?;
    (names.len() == 1).then(|| names.remove(0))
}
