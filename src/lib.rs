//! kubecred: a Kubernetes client-go exec credential plugin for OpenID Connect / OAuth 2.0.
//!
//! The binary is a few lines (`main.rs` calls [`main`]); everything else lives here so that
//! integration tests and examples can use it. See ARCHITECTURE.md for the map.

pub mod acquire;
pub mod authn_config;
pub mod cache;
pub mod ci_token;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod digest;
pub mod duration;
pub mod env_vars;
pub mod error;
pub mod exec_credential;
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
pub mod process;
pub mod secret;
pub mod text;
pub mod tokens;

pub use process::main;
