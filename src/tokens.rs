//! The tokens one cache entry holds, and how their expiry is worked out.
//!
//! Expiry rules: an ID token's expiry is its verified `exp`; an access token's is the earlier of
//! its `exp` (when it is a JWT) and `expires_in` from the token response, since either may be the
//! binding one. A token with no known expiry is not cached as a credential.

use crate::config::TokenKind;
use crate::secret::Secret;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub id_token: Option<Secret>,
    #[serde(default)]
    pub id_token_expiry: Option<DateTime<Utc>>,
    #[serde(default)]
    pub access_token: Option<Secret>,
    #[serde(default)]
    pub access_token_expiry: Option<DateTime<Utc>>,
    #[serde(default)]
    pub refresh_token: Option<Secret>,
    /// When the provider answered; for diagnostics.
    pub obtained_at: DateTime<Utc>,
    /// The identity of the login's verified ID token, which every refreshed ID token must
    /// repeat (OpenID Connect Core §12.2); kept across refreshes that return no ID token.
    /// `None` when the login brought no ID token (client credentials, an access token only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The `scope` member of the token response that brought these tokens, when it had one:
    /// what `setup` compares with what was asked (a provider may grant less, RFC 6749 §3.3).
    /// Not cached: only the run that asked has a use for it.
    #[serde(skip)]
    pub granted_scope: Option<Vec<String>>,
}

/// Who an ID token is about (`sub`), who issued it (`iss`) and for whom (`aud`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub iss: String,
    pub sub: String,
    pub aud: Vec<String>,
}

impl Tokens {
    /// The token kubectl should get, with its expiry, if there is one of that kind.
    pub fn credential(&self, kind: TokenKind) -> Option<(&Secret, DateTime<Utc>)> {
        match kind {
            TokenKind::IdToken => Some((self.id_token.as_ref()?, self.id_token_expiry?)),
            TokenKind::AccessToken => {
                Some((self.access_token.as_ref()?, self.access_token_expiry?))
            }
        }
    }

    /// The credential, if it stays valid for at least `min_validity` after `now`.
    pub fn fresh_credential(
        &self,
        kind: TokenKind,
        now: DateTime<Utc>,
        min_validity: std::time::Duration,
    ) -> Option<(&Secret, DateTime<Utc>)> {
        let (token, expiry) = self.credential(kind)?;
        let margin = chrono::Duration::from_std(min_validity).ok()?;
        (expiry - margin > now).then_some((token, expiry))
    }

    /// The credential, while the API server still accepts it: its printed expiry, which keeps
    /// [`EXPIRY_SAFETY_MARGIN`], is still ahead of `now`. What may be handed out when no fresh
    /// one can be had (stale-if-error, a refused refresh token); never an expired token.
    pub fn usable_credential(
        &self,
        kind: TokenKind,
        now: DateTime<Utc>,
    ) -> Option<(&Secret, DateTime<Utc>)> {
        let (token, expiry) = self.credential(kind)?;
        (expiry - EXPIRY_SAFETY_MARGIN > now).then_some((token, expiry))
    }
}

/// How much earlier than the token's real expiry the printed `expirationTimestamp` is.
///
/// client-go (and the JavaScript client) use a credential until `expirationTimestamp`, kube-rs
/// until 60 s before it: printing the real expiry lets a request leave with a token that dies on
/// the way, or is judged by an API server whose clock runs a little ahead, and fail with 401.
/// 30 s covers a slow request plus the clock skew NTP leaves between two machines, and costs
/// nothing: a fresh cached token (more than `--min-validity`, 60 s by default, left) is what the
/// next run prints, without a round trip to the provider.
pub const EXPIRY_SAFETY_MARGIN: chrono::Duration = chrono::Duration::seconds(30);

/// The `expirationTimestamp` to print for a token that really expires at `real`:
/// [`EXPIRY_SAFETY_MARGIN`] earlier, but never before `now` (rounded up to the second, since the
/// printed value is whole seconds) and never later than `real`. A token with less than the
/// margin left is thus printed as expiring now: the client uses it for the request at hand and
/// runs kubecred again for the next one.
pub fn printed_expiry(real: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
    let now_rounded_up = if now.timestamp_subsec_nanos() == 0 {
        now
    } else {
        DateTime::from_timestamp(now.timestamp() + 1, 0).unwrap_or(now)
    };
    (real - EXPIRY_SAFETY_MARGIN).max(now_rounded_up).min(real)
}

/// Who a token names, for messages such as "logged in as …": `preferred_username`, `email` or
/// `sub` of the ID token (verified when it was obtained), else of a JWT access token.
pub fn display_subject(tokens: &Tokens) -> Option<String> {
    let claims = [&tokens.id_token, &tokens.access_token]
        .into_iter()
        .flatten()
        .find_map(|token| unverified_jwt_claims(token.expose()));
    let Some(claims) = claims else {
        // An opaque token (a cloud's): the identity its source said it is for.
        return tokens
            .identity
            .as_ref()
            .map(|identity| identity.sub.clone());
    };
    ["preferred_username", "email", "sub"]
        .iter()
        .find_map(|name| claims.get(*name)?.as_str().map(str::to_string))
}

/// The claims of a JWT, read WITHOUT verifying the signature.
fn unverified_jwt_claims(token: &str) -> Option<serde_json::Value> {
    unverified_jwt_segment(token, 1)
}

/// Segment `index` of a compact JWT (0: header, 1: claims) as JSON, read WITHOUT verifying
/// anything; `None` unless the token has exactly three segments and that one is base64url JSON.
pub(crate) fn unverified_jwt_segment(token: &str, index: usize) -> Option<serde_json::Value> {
    let segments: Vec<&str> = token.split('.').collect();
    if segments.len() != 3 {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segments.get(index)?.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The `exp` claim of a JWT, read WITHOUT verifying the signature. Use it only for tokens the
/// provider just handed us over TLS (access tokens are for the API server to verify, not us).
pub fn unverified_jwt_expiry(token: &str) -> Option<DateTime<Utc>> {
    let exp = unverified_jwt_claims(token)?.get("exp")?.as_i64()?;
    DateTime::from_timestamp(exp, 0)
}

/// The access token's expiry: the earlier of the JWT `exp` and `now + expires_in`.
pub fn access_token_expiry(
    token: &str,
    expires_in: Option<std::time::Duration>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    // A provider's absurd expires_in (found by fuzzing: 18446744073715 s) must not overflow the
    // date arithmetic, which panics: past chrono's range it counts as no expires_in.
    let from_response = expires_in
        .and_then(|d| chrono::Duration::from_std(d).ok())
        .and_then(|d| now.checked_add_signed(d));
    match (unverified_jwt_expiry(token), from_response) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What `kubecred login --print-token-info` says about the credential: subject, issuer,
/// audience (claims read without verifying: for display) and expiry; never the token.
pub fn token_info(token: &Secret, expiry: DateTime<Utc>) -> Vec<String> {
    let claims = unverified_jwt_claims(token.expose());
    let claim = |name: &str| -> String {
        let value = claims.as_ref().and_then(|claims| claims.get(name));
        let text = match value {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|item| item.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            _ => "(not in the token)".into(),
        };
        crate::text::printable_brief(&text, 200).into_owned()
    };
    let mut lines = Vec::new();
    if claims.is_none() {
        lines.push("token info: the token is opaque (not a JWT): no claims to show".to_string());
    }
    lines.push(format!("token subject: {}", claim("sub")));
    lines.push(format!("token issuer: {}", claim("iss")));
    lines.push(format!("token audience: {}", claim("aud")));
    lines.push(format!("token expires: {}", expiry.to_rfc3339()));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::time::Duration;

    #[test]
    fn an_expires_in_beyond_the_calendar_does_not_panic() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let huge = Some(Duration::from_secs(18_446_744_073_715));
        assert_eq!(access_token_expiry("opaque", huge, now), None);
        let jwt = jwt_with_exp(now.timestamp() + 60);
        assert_eq!(
            access_token_expiry(&jwt, huge, now),
            Some(now + chrono::Duration::seconds(60))
        );
    }

    fn jwt_with_exp(exp: i64) -> String {
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(&format!(r#"{{"exp":{exp}}}"#))
        )
    }

    #[test]
    fn access_expiry_is_the_earlier_of_exp_and_expires_in() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let jwt = jwt_with_exp(now.timestamp() + 100);
        assert_eq!(
            access_token_expiry(&jwt, Some(Duration::from_secs(300)), now),
            Some(now + chrono::Duration::seconds(100))
        );
        assert_eq!(
            access_token_expiry(&jwt, Some(Duration::from_secs(50)), now),
            Some(now + chrono::Duration::seconds(50))
        );
        assert_eq!(
            access_token_expiry("opaque", Some(Duration::from_secs(50)), now),
            Some(now + chrono::Duration::seconds(50))
        );
        assert_eq!(access_token_expiry("opaque", None, now), None);
    }

    #[test]
    fn display_subject_prefers_a_readable_name() {
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let jwt = |claims: &str| format!("{}.{}.sig", enc("{}"), enc(claims));
        let mut tokens = Tokens {
            id_token: Some(Secret::new(jwt(r#"{"sub":"u1","email":"a@x"}"#))),
            id_token_expiry: None,
            access_token: Some(Secret::new("opaque")),
            access_token_expiry: None,
            refresh_token: None,
            obtained_at: Utc::now(),
            identity: None,
            granted_scope: None,
        };
        assert_eq!(display_subject(&tokens).as_deref(), Some("a@x"));
        tokens.id_token = None;
        assert_eq!(display_subject(&tokens), None);
        tokens.access_token = Some(Secret::new(jwt(r#"{"sub":"client"}"#)));
        assert_eq!(display_subject(&tokens).as_deref(), Some("client"));
    }

    #[test]
    fn the_printed_expiry_keeps_a_margin_but_never_lies_in_the_past() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let secs = chrono::Duration::seconds;
        assert_eq!(printed_expiry(now + secs(600), now), now + secs(570));
        // Less than the margin left: printed as now, never earlier.
        assert_eq!(printed_expiry(now + secs(20), now), now);
        let mid_second = now + chrono::Duration::milliseconds(400);
        assert_eq!(printed_expiry(now + secs(20), mid_second), now + secs(1));
        // Never later than the real expiry.
        assert_eq!(printed_expiry(now, now), now);
    }

    #[test]
    fn freshness_respects_min_validity() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let tokens = Tokens {
            id_token: Some(Secret::new("id")),
            id_token_expiry: Some(now + chrono::Duration::seconds(90)),
            access_token: None,
            access_token_expiry: None,
            refresh_token: None,
            obtained_at: now,
            identity: None,
            granted_scope: None,
        };
        assert!(
            tokens
                .fresh_credential(TokenKind::IdToken, now, Duration::from_secs(60))
                .is_some()
        );
        assert!(
            tokens
                .fresh_credential(TokenKind::IdToken, now, Duration::from_secs(90))
                .is_none()
        );
        assert!(
            tokens
                .fresh_credential(TokenKind::AccessToken, now, Duration::ZERO)
                .is_none()
        );
    }
}
