//! AWS credentials as the chain finds them (`Credentials`: a key, its secret, a session token,
//! until when, and where from), and the temporary credentials of an assumed role as kubecred
//! keeps them between runs (`RoleCredentials`, like a refresh token: never in a file another user
//! can read, never printed).

use crate::secret::Secret;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Signing credentials.
#[derive(Debug, Clone)]
pub(crate) struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
    /// When temporary credentials stop working; `None` for long-term keys.
    pub expires_at: Option<DateTime<Utc>>,
    /// Where they came from, for `-v` and messages: "the environment", "profile dev".
    pub source: String,
}

/// The temporary credentials STS answered for an assumed role (`AssumeRole`,
/// `AssumeRoleWithWebIdentity`), with the role session's ARN. Kept in kubecred's cache entry
/// like a refresh token and reused while [`RoleCredentials::outlast_a_token`] says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleCredentials {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Secret,
    pub expires_at: DateTime<Utc>,
    /// `arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION`: who the cluster sees.
    pub assumed_role_arn: Option<String>,
}

/// How long a token made from credentials is handed out for (the AWS CLI's 14 minutes), and a
/// minute more: credentials with less left than this would sign a token that stops working
/// before kubectl stops using it.
pub const TOKEN_LIFETIME: TimeDelta = TimeDelta::minutes(14);
const MARGIN: TimeDelta = TimeDelta::minutes(1);

impl RoleCredentials {
    /// Whether a token signed with them at `now` stays good for its whole life: they are reused
    /// until then, and a new role session is made after.
    pub fn outlast_a_token(&self, now: DateTime<Utc>) -> bool {
        self.expires_at - now > TOKEN_LIFETIME + MARGIN
    }

    pub(crate) fn for_signing(&self, source: &str) -> Credentials {
        Credentials {
            access_key_id: self.access_key_id.clone(),
            secret_access_key: self.secret_access_key.clone(),
            session_token: Some(self.session_token.clone()),
            expires_at: Some(self.expires_at),
            source: source.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(expires_at: &str) -> RoleCredentials {
        RoleCredentials {
            access_key_id: "ASIA".into(),
            secret_access_key: Secret::new("role-secret"),
            session_token: Secret::new("role-session-token"),
            expires_at: expires_at.parse().unwrap(),
            assumed_role_arn: Some("arn:aws:sts::1:assumed-role/r/s".into()),
        }
    }

    #[test]
    fn role_credentials_are_reused_while_they_outlast_a_token_and_never_shown() {
        let credentials = role("2026-11-28T16:00:00Z");
        let now = |at: &str| at.parse::<DateTime<Utc>>().unwrap();
        assert!(credentials.outlast_a_token(now("2026-11-28T15:44:59Z")));
        assert!(!credentials.outlast_a_token(now("2026-11-28T15:45:00Z")));
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("role-secret") && !shown.contains("role-session-token"));
        let json = serde_json::to_string(&credentials).unwrap();
        assert_eq!(
            serde_json::from_str::<RoleCredentials>(&json).unwrap(),
            credentials
        );
    }
}
