//! Tokens from a cloud's own identity rather than from an OpenID Connect grant: what a managed
//! cluster (AKS, EKS, GKE) trusts, obtained the way the cloud's own tools obtain it. Each cloud is
//! a module of sources; the miss path (`acquire`) asks one of them for a [`CloudToken`] under the
//! entry's lock, exactly where it would run a grant, and caches it like any token. Nothing here
//! runs on a cache hit.

pub mod azure;

/// A token from a cloud's own identity: what kubectl is given, until when, and who it is (an IAM
/// ARN, a Google account, an Entra object) for `status` and `whoami`.
#[derive(Debug)]
pub struct CloudToken {
    pub token: crate::secret::Secret,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub who: Option<String>,
}
