//! Tokens from the clouds' own identities, for managed clusters whose API server trusts the
//! cloud rather than an OpenID Connect provider: one module per cloud, each a library of the
//! token's source (the credentials the cloud's own tools find, and the token made from them),
//! which the miss path of `acquire` runs. Nothing here is reached on a cache hit.

pub mod aws;

/// A token from a cloud's own identity: what kubectl is given, until when, and who it is (an IAM
/// ARN, a Google account, an Entra object) for `status` and `whoami`.
pub struct CloudToken {
    pub token: crate::secret::Secret,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub who: Option<String>,
}
