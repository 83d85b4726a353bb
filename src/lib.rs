//! kubecred: a Kubernetes client-go exec credential plugin for OpenID Connect / OAuth 2.0.
//!
//! The binary is a few lines (`main.rs` calls [`main`]); everything else lives here so that
//! integration tests and examples can use it. See ARCHITECTURE.md for the map.

pub(crate) mod acquire;
pub(crate) mod atomic_file;
pub(crate) mod authn_config;
pub mod cache;
pub(crate) mod ci_token;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod command_on_path;
pub(crate) mod commands;
pub mod config;
pub(crate) mod digest;
pub(crate) mod duration;
pub mod env_vars;
pub(crate) mod error;
pub mod exec_credential;
pub(crate) mod file_replace;
pub(crate) mod grants;
pub(crate) mod http;
pub(crate) mod kubeconfig;
pub(crate) mod kubelogin;
pub(crate) mod log;
pub(crate) mod login;
pub(crate) mod oidc;
pub(crate) mod private_file;
pub(crate) mod process;
pub mod secret;
pub mod startup_arena;
pub(crate) mod text;
pub mod tokens;

/// The fuzz targets' way in (fuzz/, built by cargo-fuzz with `--cfg fuzzing`) and the corpus
/// replay of the unit tests; not part of the library otherwise.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;

pub use process::main;
