//! OAuth 2.0 token exchange (RFC 8693) at the token endpoint: a JWT someone else issued (a CI
//! job's ID token, a pod's projected service-account token) is exchanged for a token the cluster
//! trusts. `oauth2` has no such grant, so this is a form POST of our own, authenticated like the
//! others (`client_auth.rs`), with a bounded answer parsed as a standard token response.
//!
//! Refresh: an exchanged token is never refreshed. Its refresh token, if the provider sends one,
//! is dropped; a new exchange with a freshly read subject token runs instead, so the issued
//! token never outlives what the CI system or the kubelet still vouches for.

use super::errors::token_error;
use super::{OidcTokenResponse, ProviderClient};
use crate::config::Target;
use crate::http::Replay;
use crate::secret::Secret;
use crate::tokens::Tokens;
use oauth2::RequestTokenError;
use oauth2::basic::BasicErrorResponse;

pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// RFC 8693's type of an OAuth 2.0 access token as the subject token.
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

impl ProviderClient<'_> {
    /// RFC 8693 token exchange of the configured subject token.
    pub fn token_exchange(&self) -> anyhow::Result<Tokens> {
        let subject = self
            .config
            .subject
            .as_ref()
            .expect("config requires a subject token for token-exchange");
        let subject_token = crate::grants::ci_token::read(
            &subject.source,
            "subject token",
            crate::grants::ci_token::Http::Ready(&self.http),
        )?;
        let mut params: Vec<(&'static str, String)> = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.into()),
            ("subject_token", subject_token.expose().to_string()),
            ("subject_token_type", subject.token_type.clone()),
        ];
        if let Some(requested) = &subject.requested_token_type {
            params.push(("requested_token_type", requested.clone()));
        }
        if !self.targets.scopes.is_empty() {
            params.push(("scope", self.targets.scopes.join(" ")));
        }
        params.extend(self.targets.token.iter().cloned());
        let endpoint = &self.provider.metadata.token_endpoint;
        crate::debug!(
            1,
            "exchanging the subject token from the {} at {}",
            subject.source.describe(),
            endpoint
        );
        let request = self.authenticated_form(endpoint, params)?;
        let requested_at = self.clock.now();
        let response = self.send_token_form(request, "token exchange")?;
        let mut tokens = self.tokens_from(response, None, None, requested_at)?;
        tokens.refresh_token = None; // see the module comment: re-exchange, never refresh
        Ok(tokens)
    }

    /// RFC 8693 exchange of a shared login's access token for a token with `target`'s
    /// audience or resource, as pinniped's CLI asks its supervisor: `subject_token_type`
    /// access_token, `requested_token_type` jwt. The answer's refresh token, if any, is dropped:
    /// the login's is the one that renews.
    pub fn exchange_access_token(
        &self,
        access_token: &Secret,
        target: &Target,
    ) -> anyhow::Result<Tokens> {
        let mut params: Vec<(&'static str, String)> = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.into()),
            ("subject_token", access_token.expose().to_string()),
            ("subject_token_type", ACCESS_TOKEN_TYPE.into()),
            ("requested_token_type", crate::config::TOKEN_TYPE_JWT.into()),
        ];
        params.push(target.exchange_parameter());
        let endpoint = &self.provider.metadata.token_endpoint;
        crate::debug!(
            1,
            "exchanging the shared login's access token for {} at {}",
            target.describe(),
            endpoint
        );
        let request = self.authenticated_form(endpoint, params)?;
        let requested_at = self.clock.now();
        let response = self.send_token_form(request, "token exchange")?;
        let mut tokens = self.tokens_from(response, None, None, requested_at)?;
        tokens.refresh_token = None;
        Ok(tokens)
    }

    /// Sends a token request form to the token endpoint through the bounded client (as
    /// oauth2's grants do, so the answer is capped and transient failures retried); a 2xx body
    /// is a token response, anything else is worded like the other grants' (`errors.rs`).
    fn send_token_form(
        &self,
        request: oauth2::HttpRequest,
        grant: &str,
    ) -> anyhow::Result<OidcTokenResponse> {
        use oauth2::SyncHttpClient;
        let issuer = &self.provider.metadata.issuer;
        // A subject token can be exchanged again: resending after a lost answer is safe.
        let call = self.oauth_call("the token exchange request", Replay::Safe);
        let response = call.call(request).map_err(|failure| {
            token_error::<oauth2::basic::BasicErrorResponseType>(
                RequestTokenError::Request(failure),
                grant,
                issuer,
                &call,
            )
        })?;
        if !response.status().is_success() {
            return Err(
                match serde_json::from_slice::<BasicErrorResponse>(response.body()) {
                    Ok(error) => token_error::<oauth2::basic::BasicErrorResponseType>(
                        RequestTokenError::ServerResponse(error),
                        grant,
                        issuer,
                        &call,
                    ),
                    // Worded by the status the call recorded (an HTML page, an empty 502).
                    Err(_) => token_error::<oauth2::basic::BasicErrorResponseType>(
                        RequestTokenError::Other("not an OAuth 2.0 error response".into()),
                        grant,
                        issuer,
                        &call,
                    ),
                },
            );
        }
        serde_json::from_slice(response.body()).map_err(|err| {
            crate::error::outage(format!(
                "the {grant} response from {issuer} is not a valid OAuth 2.0 token response (line {}, column {}); is the issuer URL right?",
                err.line(),
                err.column()
            ))
        })
    }
}
