//! ID-token verification (OpenID Connect Core §3.1.3.7): a token is accepted only when it is
//! signed with an asymmetric algorithm by a key of the provider's JWKS, names the provider's
//! issuer, is meant for our client ID (aud, and azp when present), says when it was issued (iat),
//! is within its validity period and carries our nonce; a refreshed token must also name the same
//! issuer, subject and audience as the one of the original login (§12.2). Each check is a function that says, on failure, what was wrong and what
//! to do; messages never include the token.
//!
//! jsonwebtoken checks only the signature (its RustCrypto backend is picked by its crate
//! features: nothing to install at start-up); the claims are checked here, against the injected
//! clock.

use super::jwks::KeyError;
use super::{CLOCK_LEEWAY, rfc3339};
use crate::error::{Exit, fail};
use crate::secret::Secret;
use crate::tokens::Identity;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

/// The claims of a verified ID token that kubecred uses.
#[derive(Debug, Clone, PartialEq)]
pub struct IdTokenClaims {
    /// Whom the token is about, for whom, and from where: what a refreshed token must repeat.
    pub identity: Identity,
    pub sub: String,
    /// The token's real expiry (no leeway applied).
    pub exp: DateTime<Utc>,
    /// `email` and `preferred_username` are for display only ("logged in as …"), never for a
    /// decision.
    pub email: Option<String>,
    pub preferred_username: Option<String>,
}

/// What a token must say.
pub(super) struct Expected<'a> {
    /// The provider's issuer, as its discovery document spells it.
    pub issuer: &'a str,
    pub client_id: &'a str,
    /// The nonce sent with the login request; `None` for refreshed tokens.
    pub nonce: Option<&'a str>,
    /// For a refreshed token: the identity of the ID token of the original login, which the new
    /// one must repeat (OpenID Connect Core §12.2).
    pub original: Option<&'a Identity>,
}

/// Why a token was refused, and what the user can do about it.
pub(super) struct Refusal {
    reason: String,
    next: &'static str,
}

impl Refusal {
    /// The one-line error for a token from `issuer` refused for this reason.
    pub(super) fn into_error(self, issuer: &str) -> anyhow::Error {
        fail(
            Exit::Provider,
            format!(
                "the ID token from {issuer} failed verification: {}; {}",
                self.reason, self.next
            ),
        )
    }

    fn new(reason: impl Into<String>, next: &'static str) -> Refusal {
        Refusal {
            reason: reason.into(),
            next,
        }
    }
}

type Check<T> = Result<T, Refusal>;

/// Verifies `token`; `key_for(alg, kid)` finds the provider's key for it.
pub(super) fn verify(
    token: &Secret,
    expected: &Expected<'_>,
    key_for: impl FnOnce(Algorithm, Option<&str>) -> Result<DecodingKey, KeyError>,
    now: DateTime<Utc>,
) -> anyhow::Result<IdTokenClaims> {
    let issuer = expected.issuer;
    let refused = |refusal: Refusal| refusal.into_error(issuer);
    let token = token.expose();
    let header = parse_header(token).ok_or_else(|| {
        refused(Refusal::new(
            "it is not a JWT",
            "check that --issuer-url points at an OpenID Connect provider",
        ))
    })?;
    // Decide on the algorithm before touching any key: `none` and the HMAC family would let
    // whoever knows the client secret (or nobody) mint tokens.
    let alg = accepted_algorithm(&header.alg).map_err(refused)?;
    let key = match key_for(alg, header.kid.as_deref()) {
        Ok(key) => key,
        Err(KeyError::Fetch(err)) => {
            return Err(fail(
                Exit::Provider,
                format!(
                    "cannot verify the ID token from {issuer}: {}",
                    crate::error::one_line(&err)
                ),
            ));
        }
        Err(KeyError::Missing(reason)) => {
            return Err(refused(Refusal::new(
                reason,
                "if the provider has just rotated its keys, run the command again; otherwise check --issuer-url",
            )));
        }
    };
    let claims = verified_claims(token, &key, alg).map_err(refused)?;
    checked_claims(&claims, expected, now).map_err(refused)
}

/// The claim checks, once the signature is proven to be the provider's.
pub(super) fn checked_claims(
    claims: &Map<String, Value>,
    expected: &Expected<'_>,
    now: DateTime<Utc>,
) -> Result<IdTokenClaims, Refusal> {
    check_issuer(claims, expected.issuer)?;
    check_audience(claims, expected.client_id)?;
    check_issued_at(claims, now)?;
    let exp = check_validity_period(claims, now)?;
    if let Some(nonce) = expected.nonce {
        check_nonce(claims, nonce)?;
    }
    let sub = subject(claims)?;
    let identity = Identity {
        iss: expected.issuer.to_string(),
        sub: sub.to_string(),
        aud: audiences(claims).into_iter().map(str::to_string).collect(),
    };
    if let Some(original) = expected.original {
        check_same_identity(&identity, original)?;
    }
    Ok(IdTokenClaims {
        identity,
        sub: sub.to_string(),
        exp,
        email: string(claims, "email").map(str::to_string),
        preferred_username: string(claims, "preferred_username").map(str::to_string),
    })
}

/// The asymmetric algorithms kubecred accepts; never `none`, never a shared-secret one.
fn accepted_algorithm(name: &str) -> Check<Algorithm> {
    Ok(match name {
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "EdDSA" => Algorithm::EdDSA,
        other => {
            let reason = match other {
                "none" | "" => "it is unsigned (alg none)".to_string(),
                hs if hs.starts_with("HS") => format!(
                    "it is signed with {hs}, a shared-secret algorithm kubecred does not accept"
                ),
                _ => format!(
                    "its algorithm {:?} is not supported",
                    other.chars().take(16).collect::<String>()
                ),
            };
            return Err(Refusal::new(
                reason,
                "configure the client at the provider to sign ID tokens with RS256, PS256, ES256 or EdDSA",
            ));
        }
    })
}

/// The claims, once the signature is proven to be the provider's.
fn verified_claims(token: &str, key: &DecodingKey, alg: Algorithm) -> Check<Map<String, Value>> {
    // jsonwebtoken checks only the signature here; the claims are checked by the functions
    // below, against the injected clock and with messages that say which claim failed.
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
        Ok(data) => Ok(data.claims),
        Err(err) => {
            use jsonwebtoken::errors::ErrorKind;
            let reason = match err.kind() {
                ErrorKind::InvalidSignature => {
                    "its signature does not match the provider's key".to_string()
                }
                ErrorKind::InvalidEcdsaKey
                | ErrorKind::InvalidRsaKey(_)
                | ErrorKind::InvalidEddsaKey
                | ErrorKind::InvalidKeyFormat => {
                    format!("the provider's key for it is unusable ({err})")
                }
                // Not `{err}`: a JSON error can quote parts of the token.
                ErrorKind::Base64(_) => "it is not valid base64url".to_string(),
                ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                    "its header or claims are not a JSON object".to_string()
                }
                _ => "it is malformed".to_string(),
            };
            Err(Refusal::new(
                reason,
                "it was altered, or issued by another provider; check --issuer-url",
            ))
        }
    }
}

/// Google signs some ID tokens with `iss` `accounts.google.com`, without the scheme its
/// discovery document names; go-oidc and kube-apiserver accept that spelling for that issuer
/// alone, and so does kubecred.
const GOOGLE_ISSUER: &str = "https://accounts.google.com";

fn check_issuer(claims: &Map<String, Value>, issuer: &str) -> Check<()> {
    let iss = string(claims, "iss").unwrap_or("");
    let google_without_scheme = issuer == GOOGLE_ISSUER && iss == "accounts.google.com";
    if iss != issuer && !google_without_scheme {
        return Err(Refusal::new(
            format!("its issuer (iss) is {iss:?}, not {issuer:?}"),
            "the provider's tokens and its discovery document disagree; check the provider's issuer setting",
        ));
    }
    Ok(())
}

/// `aud` must include our client ID; `azp`, when present, must be our client ID, whatever the
/// number of audiences (OpenID Connect Core 3.1.3.7).
fn check_audience(claims: &Map<String, Value>, client_id: &str) -> Check<()> {
    let audiences = audiences(claims);
    if !audiences.contains(&client_id) {
        return Err(Refusal::new(
            format!("its audience {audiences:?} does not include the client ID {client_id:?}"),
            "check --client-id",
        ));
    }
    match claims.get("azp") {
        None => Ok(()),
        Some(Value::String(azp)) if azp == client_id => Ok(()),
        Some(Value::String(azp)) => Err(Refusal::new(
            format!("it was issued to the client {azp:?} (azp), not {client_id:?}"),
            "check --client-id",
        )),
        Some(_) => Err(Refusal::new(
            "its authorized party (azp) is not a string",
            "the provider's ID tokens must carry azp as a string",
        )),
    }
}

/// `aud` as a list: a single string or an array of strings (anything else counts as none).
fn audiences(claims: &Map<String, Value>) -> Vec<&str> {
    match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `iat` is required (OpenID Connect Core §2) and must not lie in the future beyond the leeway:
/// a token "issued" later than now was minted by a clock that is wrong, or was forged.
fn check_issued_at(claims: &Map<String, Value>, now: DateTime<Utc>) -> Check<()> {
    let iat = time(claims, "iat").ok_or_else(|| {
        Refusal::new(
            "it has no valid issue time (iat), which OpenID Connect requires",
            "the provider's ID tokens must carry iat; report this to the provider's administrator",
        )
    })?;
    if iat > now + CLOCK_LEEWAY {
        return Err(Refusal::new(
            format!(
                "it claims to be issued at {} (iat), in the future (this machine's time is {})",
                rfc3339(iat),
                rfc3339(now)
            ),
            "check this machine's clock",
        ));
    }
    Ok(())
}

/// A refreshed ID token must be about the same user, from the same issuer, for the same
/// audience as the original one (OpenID Connect Core §12.2): otherwise the refresh handed us
/// someone else's session, and printing it would switch the user's identity silently.
fn check_same_identity(new: &Identity, original: &Identity) -> Check<()> {
    let next = "the provider answered the refresh with another identity; run `kubecred logout`, then log in again";
    if new.iss != original.iss {
        return Err(Refusal::new(
            format!(
                "its issuer (iss) {:?} differs from the original login's {:?}",
                new.iss, original.iss
            ),
            next,
        ));
    }
    if new.sub != original.sub {
        return Err(Refusal::new(
            format!(
                "its subject (sub) {:?} differs from the original login's {:?}",
                new.sub, original.sub
            ),
            next,
        ));
    }
    let mut new_aud = new.aud.clone();
    let mut original_aud = original.aud.clone();
    new_aud.sort();
    new_aud.dedup();
    original_aud.sort();
    original_aud.dedup();
    if new_aud != original_aud {
        return Err(Refusal::new(
            format!(
                "its audience (aud) {:?} differs from the original login's {:?}",
                new.aud, original.aud
            ),
            next,
        ));
    }
    Ok(())
}

/// `exp` (required) has not passed and `nbf` (optional) has, each give or take the leeway.
/// Returns the real expiry.
fn check_validity_period(claims: &Map<String, Value>, now: DateTime<Utc>) -> Check<DateTime<Utc>> {
    let exp = time(claims, "exp").ok_or_else(|| {
        Refusal::new(
            "it has no valid exp claim",
            "the provider's ID tokens must carry an expiry",
        )
    })?;
    if exp + CLOCK_LEEWAY <= now {
        return Err(Refusal::new(
            format!(
                "it expired at {} (this machine's time is {})",
                rfc3339(exp),
                rfc3339(now)
            ),
            "check this machine's clock, then log in again",
        ));
    }
    if let Some(nbf) = time(claims, "nbf").filter(|nbf| *nbf > now + CLOCK_LEEWAY) {
        return Err(Refusal::new(
            format!(
                "it is not valid before {} (this machine's time is {})",
                rfc3339(nbf),
                rfc3339(now)
            ),
            "check this machine's clock",
        ));
    }
    Ok(exp)
}

/// The nonce value itself stays out of the message: it ties a login to this run.
fn check_nonce(claims: &Map<String, Value>, expected: &str) -> Check<()> {
    match string(claims, "nonce") {
        Some(nonce) if nonce == expected => Ok(()),
        Some(_) => Err(Refusal::new(
            "its nonce does not match the one kubecred sent",
            "the login answer may be stale or replayed; log in again",
        )),
        None => Err(Refusal::new(
            "it carries no nonce although kubecred sent one",
            "log in again; if it persists, the provider does not support nonces",
        )),
    }
}

fn subject(claims: &Map<String, Value>) -> Check<&str> {
    string(claims, "sub")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Refusal::new(
                "it has no subject (sub)",
                "the provider's ID tokens must name the user",
            )
        })
}

fn string<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    claims.get(name).and_then(Value::as_str)
}

/// A NumericDate claim (seconds since the epoch; fractions dropped).
fn time(claims: &Map<String, Value>, name: &str) -> Option<DateTime<Utc>> {
    claims
        .get(name)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
        .and_then(|secs| DateTime::from_timestamp(secs, 0))
}

struct JwtHeader {
    alg: String,
    kid: Option<String>,
}

/// Reads a JWT's header without trusting it, so that the algorithm can be vetted before any key
/// is looked up. jsonwebtoken's own header parser rejects `none` with a vague error.
fn parse_header(token: &str) -> Option<JwtHeader> {
    let json = crate::tokens::unverified_jwt_segment(token, 0)?;
    Some(JwtHeader {
        alg: json.get("alg")?.as_str()?.to_string(),
        kid: json.get("kid").and_then(Value::as_str).map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(iss: &str) -> Map<String, Value> {
        let Value::Object(map) = serde_json::json!({ "iss": iss }) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn google_s_issuer_without_its_scheme_is_accepted_for_google_alone() {
        assert!(check_issuer(&claims("accounts.google.com"), GOOGLE_ISSUER).is_ok());
        assert!(check_issuer(&claims(GOOGLE_ISSUER), GOOGLE_ISSUER).is_ok());
        assert!(check_issuer(&claims("idp.example"), "https://idp.example").is_err());
        assert!(check_issuer(&claims("accounts.google.com"), "https://idp.example").is_err());
    }
}
