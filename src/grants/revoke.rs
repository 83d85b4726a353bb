//! Token revocation (RFC 7009), for `kubecred logout`: the refresh token is sent to the
//! provider's `revocation_endpoint`, so that a copy of it (a backup, a stolen disk) is worthless.
//!
//! Hand-written rather than `oauth2`'s `revoke_token`: that refuses any `http` endpoint, and
//! kubecred allows plain http for an issuer on loopback (a local or test provider) exactly as for
//! every other endpoint, which discovery has already vetted. The request is one form POST with the
//! same client authentication as the token requests.

use super::ProviderClient;
use crate::error::{Exit, fail};
use crate::http::Replay;
use crate::secret::Secret;
use oauth2::SyncHttpClient;

/// What became of the refresh token at the provider.
#[derive(Debug)]
pub enum Revocation {
    /// The provider answered 200: the token is dead (RFC 7009 answers 200 for an unknown token too).
    Revoked,
    /// Discovery names no `revocation_endpoint`.
    NotSupported,
}

impl ProviderClient<'_> {
    /// Revokes `refresh_token`. An error (the provider refused, or could not be reached) is for
    /// the caller to report as a warning: the local entry goes either way.
    pub fn revoke_refresh_token(&self, refresh_token: &Secret) -> anyhow::Result<Revocation> {
        let Some(endpoint) = &self.provider.metadata.revocation_endpoint else {
            return Ok(Revocation::NotSupported);
        };
        let form = vec![
            ("token", refresh_token.expose().to_string()),
            ("token_type_hint", "refresh_token".to_string()),
        ];
        let request = self.authenticated_form(endpoint, form)?;
        let shown = crate::text::display_url(endpoint);
        crate::debug!(1, "revoking the refresh token at {shown}");
        // Revoking twice is harmless: a lost answer may be resent.
        let call = self.oauth_call("the revocation request", Replay::Safe);
        let response = call
            .call(request)
            .map_err(|failure| fail(Exit::Provider, format!("revoking at {shown}: {failure}")))?;
        let answer = crate::http::Answer {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.body().clone(),
            attempts: call.last_answer().map_or(1, |answer| answer.attempts),
        };
        crate::http::check_status(&answer, &format!("the revocation endpoint {shown}"))?;
        Ok(Revocation::Revoked)
    }
}
