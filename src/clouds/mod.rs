//! Tokens from the clouds' own identities, for managed clusters whose API server trusts the cloud
//! rather than an OpenID Connect provider (GKE: a Google access token). Each cloud is a library
//! module that takes plain settings, an environment lookup and the time, and returns a
//! [`CloudToken`]; the miss path calls it (never the cache hit).

pub mod google;

/// A token from a cloud's own identity: what kubectl is given, until when, and who it is (an IAM
/// ARN, a Google account, an Entra object) for `status` and `whoami`.
#[derive(Debug)]
pub struct CloudToken {
    pub token: crate::secret::Secret,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub who: Option<String>,
}
