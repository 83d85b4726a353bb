//! What `convert-kubeconfig` decides for each user before it touches anything: convert it (to
//! which kubecred stanza, and where its tokens are) or leave it, and why. Made by `sources.rs`
//! (and `azure.rs`) from the user's entry alone, carried out by `mod.rs`.

use crate::acquire::Carried;
use crate::kubeconfig::EnvVar;
use crate::peers::kubelogin::command_line::{GetToken, Storage};
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
    /// An int128/kubelogin stanza as kubelogin reads it: the converted one must read the same
    /// (`sources::differs_from_kubelogin`).
    pub kubelogin: Option<Box<GetToken>>,
}

/// Where a converted user's tokens are.
#[derive(Debug)]
pub(super) enum Tokens {
    /// In the kubeconfig itself (auth-provider).
    InKubeconfig(Carried),
    /// In int128/kubelogin's token cache.
    KubeloginCache(Box<KubeloginCache>),
    /// Nowhere kubecred can read them, and why.
    Unreadable(&'static str),
    /// None are needed: the grant needs no person.
    NotNeeded,
}

/// Where int128/kubelogin keeps a stanza's login.
#[derive(Debug)]
pub(super) struct KubeloginCache {
    /// Its cache directory (with the keyring, where its lock files are).
    pub dir: PathBuf,
    pub storage: Storage,
    /// The names kubelogin gives the stanza's entry (`kubelogin::token_cache`), or why they
    /// cannot be told.
    pub names: Result<Vec<String>, String>,
    /// `--oidc-use-access-token`: kubelogin's entry then holds the access token where the ID
    /// token would be; its refresh token is carried, and the first kubectl call refreshes.
    pub access_token: bool,
}
