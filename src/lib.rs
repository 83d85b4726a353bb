//! kubecred: a Kubernetes client-go exec credential plugin for OpenID Connect / OAuth 2.0.
//!
//! The two binaries are a few lines each: `main.rs` (`kubecred`, the cache-hit front: [`front`])
//! and `bin/kubecred-full.rs` (every command: [`entry`] with [`run`]); everything else lives
//! here so that integration tests and examples can use it. See ARCHITECTURE.md for the map.

pub mod acquire;
pub mod authn_config;
pub mod binaries;
pub mod cache;
pub mod ci_token;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod digest;
pub mod duration;
pub mod entry;
pub mod env_vars;
pub mod error;
pub mod exec_credential;
pub mod front;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
pub mod http;
pub mod kubeconfig;
pub mod kubelogin;
pub mod log;
pub mod login;
pub mod oidc;
pub mod private_file;
pub mod secret;
pub mod text;
pub mod tokens;

pub use commands::run;
