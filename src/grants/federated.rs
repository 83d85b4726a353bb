//! `--grant-type federated-token`: no exchange. The subject token (a CI job's ID token, a
//! projected service-account token) is itself the credential, for clusters whose structured
//! AuthenticationConfiguration trusts the CI issuer directly. No provider is contacted: no
//! discovery, no token request (only GitHub Actions' own ID-token endpoint, when that is the
//! source).
//!
//! The expiry printed is the token's own `exp` (read without verifying the signature: the API
//! server verifies it; we only must never claim it lives longer). A token without `exp`, already
//! expired, or from another issuer than `--issuer-url` is refused with the reason.

use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Exit, fail};
use crate::tokens::{Tokens, unverified_jwt_expiry, unverified_jwt_segment};

/// Reads the subject token now and wraps it as the credential.
pub fn federated_token(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let subject = config
        .subject
        .as_ref()
        .expect("config requires a subject token for federated-token");
    let token = crate::grants::ci_token::read(
        &subject.source,
        "subject token",
        crate::grants::ci_token::Http::Build(&config.http),
    )?;
    let from = subject.source.describe();
    let claims = unverified_jwt_segment(token.expose(), 1).unwrap_or_default();
    let issuer = claims.get("iss").and_then(|iss| iss.as_str()).unwrap_or("");
    if issuer.trim_end_matches('/') != config.issuer.as_str().trim_end_matches('/') {
        return Err(fail(
            Exit::Input,
            format!(
                "the token from the {from} was issued by {:?}, not by --issuer-url {}; set --issuer-url to the issuer the cluster trusts",
                crate::text::printable_brief(issuer, 200),
                config.issuer_as_given
            ),
        ));
    }
    if let Some(audience) = &config.audience {
        let matches = match claims.get("aud") {
            Some(serde_json::Value::String(aud)) => aud == audience,
            Some(serde_json::Value::Array(auds)) => auds.iter().any(|aud| aud == audience),
            _ => false,
        };
        if !matches {
            return Err(fail(
                Exit::Input,
                format!(
                    "the token from the {from} is not for audience {audience} (its aud claim differs); request it with that audience (--subject-token-audience, or the CI's id_tokens aud)"
                ),
            ));
        }
    }
    let expiry = unverified_jwt_expiry(token.expose()).ok_or_else(|| {
        fail(
            Exit::Input,
            format!("the token from the {from} has no exp claim: kubecred cannot tell kubectl how long it is valid"),
        )
    })?;
    let now = clock.now();
    if expiry <= now {
        return Err(fail(
            Exit::Input,
            format!(
                "the token from the {from} expired at {expiry}; the CI system or the kubelet should hand out a fresh one (check the file is the rotated one)"
            ),
        ));
    }
    crate::debug!(1, "federated token from the {from}, valid until {expiry}");
    Ok(Tokens {
        id_token: None,
        id_token_expiry: None,
        access_token: Some(token),
        access_token_expiry: Some(expiry),
        refresh_token: None,
        obtained_at: now,
        identity: None,
        granted_scope: None,
    })
}
