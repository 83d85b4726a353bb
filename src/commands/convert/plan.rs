//! What `convert-kubeconfig` decides for each user before it touches anything: convert it (to
//! which kubecred stanza, and where its tokens are) or leave it, and why. Made by `sources.rs`
//! (and `azure.rs`) from the user's entry alone, carried out by `mod.rs`.

use crate::acquire::Carried;
use crate::kubeconfig::EnvVar;
use std::path::PathBuf;

/// What to do with one user.
#[derive(Debug)]
pub(super) enum Plan {
    Convert(Conversion),
    /// Left as it is, and why.
    Skip(String),
}

/// A user's kubecred stanza, and where its tokens are.
#[derive(Debug)]
pub(super) struct Conversion {
    /// What the user ran: `auth-provider oidc`, `int128/kubelogin`, `Azure kubelogin (spn)`.
    pub from: String,
    /// The stanza's `args`, `get-token` first, in kubecred's flag names.
    pub args: Vec<String>,
    /// The stanza's `env`: what the old stanza had (minus what became flags), and the secrets
    /// that must not be on a command line.
    pub env: Vec<EnvVar>,
    pub tokens: Tokens,
    /// Said under the user's line: flags dropped, values moved.
    pub notes: Vec<String>,
}

/// Where a converted user's tokens are.
#[derive(Debug)]
pub(super) enum Tokens {
    /// In the kubeconfig itself (auth-provider).
    InKubeconfig(Carried),
    /// In int128/kubelogin's token cache.
    KubeloginCache {
        dir: PathBuf,
        storage: KubeloginStorage,
        /// `--oidc-use-access-token`: kubelogin's cache then holds the access token where the
        /// ID token would be; only its refresh token is carried.
        access_token: bool,
    },
    /// Nowhere kubecred can read them, and why.
    Unreadable(&'static str),
    /// None are needed: the grant needs no person.
    NotNeeded,
}

/// `--token-cache-storage` of a kubelogin stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KubeloginStorage {
    Disk,
    Keyring,
    None,
}
