//! The refresh-token grant (RFC 6749 §6). `invalid_grant` is an outcome, not an error: the
//! caller drops the entry and logs in again. A rotated refresh token is handed back even when the
//! rest of the answer is unusable, because the old one is spent.

use super::errors::{describe_server_error, token_error};
use super::{Previous, ProviderClient};
use crate::http::Replay;
use crate::secret::Secret;
use crate::tokens::{Identity, Tokens};
use oauth2::{RefreshToken, RequestTokenError, TokenResponse};

/// What a refresh attempt came to.
pub enum RefreshOutcome {
    Refreshed(Tokens),
    /// The provider no longer accepts the refresh token (`invalid_grant`): log in again.
    Rejected(String),
    /// The provider refused the target the refresh named (`invalid_target`): `reason` as it
    /// said it, `error` the refusal worded for a user. A shared login's refresh token may
    /// still serve other targets (`acquire/shared.rs`).
    TargetRefused {
        reason: String,
        error: anyhow::Error,
    },
    /// The provider answered, but the answer cannot be used (e.g. the ID token failed
    /// verification). It may have rotated the refresh token all the same, so the caller must
    /// keep `refresh_token`: the old one is spent, and reusing it can revoke the whole grant.
    Unusable {
        refresh_token: Secret,
        error: anyhow::Error,
    },
}

impl ProviderClient<'_> {
    /// The refresh-token grant. `invalid_grant` is an outcome, not an error: the caller drops
    /// the entry and logs in again. A returned ID token must name the same issuer, subject and
    /// audience as `original`, the identity of the entry's login (OpenID Connect Core §12.2).
    pub fn refresh(
        &self,
        refresh_token: &Secret,
        original: Option<&Identity>,
    ) -> anyhow::Result<RefreshOutcome> {
        let client = self.oauth_client();
        let token = RefreshToken::new(refresh_token.expose().to_string());
        let mut request = client.exchange_refresh_token(&token);
        for (name, value) in self.token_params()? {
            request = request.add_extra_param(name, value);
        }
        if !self.targets.refresh_scopes.is_empty() {
            request = request.add_scopes(
                self.targets
                    .refresh_scopes
                    .iter()
                    .cloned()
                    .map(oauth2::Scope::new),
            );
        }
        crate::debug!(1, "refreshing the token at {}", client.token_uri().as_str());
        let requested_at = self.clock.now();
        // A provider that rotates refresh tokens spends this one on the first request it
        // processes: resent only if the first surely never arrived (see http/retry.rs).
        let call = self.oauth_call("the refresh request", Replay::OnlyIfUnprocessed);
        match request.request(&call) {
            Ok(response) => {
                let current = response
                    .refresh_token()
                    .map(|token| Secret::new(token.secret().to_string()))
                    .unwrap_or_else(|| refresh_token.clone());
                let previous = Previous {
                    refresh_token,
                    identity: original,
                };
                match self.tokens_from(response, None, Some(previous), requested_at) {
                    Ok(tokens) => Ok(RefreshOutcome::Refreshed(tokens)),
                    Err(error) => Ok(RefreshOutcome::Unusable {
                        refresh_token: current,
                        error,
                    }),
                }
            }
            Err(RequestTokenError::ServerResponse(err))
                if err.error().as_ref() == "invalid_grant" =>
            {
                Ok(RefreshOutcome::Rejected(describe_server_error(&err)))
            }
            // The target named (RFC 8707 §2.2): the caller knows whether it was granted.
            Err(RequestTokenError::ServerResponse(err))
                if err.error().as_ref() == "invalid_target" =>
            {
                let reason = describe_server_error(&err);
                let error = token_error(
                    RequestTokenError::ServerResponse(err),
                    "refresh",
                    &self.provider.metadata.issuer,
                    &call,
                );
                Ok(RefreshOutcome::TargetRefused { reason, error })
            }
            Err(err) => Err(token_error(
                err,
                "refresh",
                &self.provider.metadata.issuer,
                &call,
            )),
        }
    }
}
