//! The API server's structured authentication configuration (`AuthenticationConfiguration`,
//! `apiserver.config.k8s.io/v1`, stable since Kubernetes 1.34), and its evaluation against a
//! token's claims the way kube-apiserver's JWT authenticator does it — so that `kubecred whoami
//! --authentication-config FILE` can say which user the cluster would see, or which rule rejects
//! the token and with what message (on the server that message reaches only the API server's
//! log; the user gets a bare 401).
//!
//! `types.rs` holds the file's shape and the static checks kube-apiserver makes when it loads it;
//! `evaluate.rs` the per-token steps in kube-apiserver's order; `cel.rs` the CEL expressions.
//! Nothing here runs on `get-token`: only `whoami` (and `setup`, for the configuration it
//! generates) reaches this module, and the CEL environment is built on first use.

mod cel;
mod evaluate;
mod types;

#[cfg(test)]
mod tests;

pub use evaluate::{AuthenticatedUser, evaluate};
pub use types::AuthenticationConfiguration;
