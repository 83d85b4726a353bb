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
        let scopes = self.refresh_scopes();
        if !scopes.is_empty() {
            request = request.add_scopes(scopes);
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
            // A shared login is only refreshed for a target it was granted (`acquire/shared.rs`):
            // the provider's grant has narrowed since, which settings cannot mend.
            Err(RequestTokenError::ServerResponse(err))
                if err.error().as_ref() == "invalid_target"
                    && let Some(shared) = &self.config.shared_login =>
            {
                Err(crate::error::fail(
                    crate::error::Exit::Provider,
                    format!(
                        "{} refused to refresh the shared login for {} ({}), which the login was granted: the provider no longer grants it to this login; check that it still knows the target, then log in again (kubecred login) for every cluster",
                        self.config.issuer_as_given,
                        shared.target.describe(),
                        describe_server_error(&err)
                    ),
                ))
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
