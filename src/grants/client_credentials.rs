//! The client credentials grant (RFC 6749 §4.4): a confidential client acting as itself, for CI
//! jobs and services. There is no user: the credential is the access token, or, where the
//! settings ask for the ID token some providers issue with `openid` (int128/kubelogin's default),
//! that ID token, verified. There is no authorization request either, so `--auth-param`s go
//! with the token request, as kubelogin sends its extra parameters.

use super::ProviderClient;
use super::errors::token_error_with_forbidden_hint;
use crate::http::Replay;
use crate::tokens::Tokens;

impl ProviderClient<'_> {
    /// OAuth 2.0 client credentials: a confidential client acting as itself.
    pub fn client_credentials(&self) -> anyhow::Result<Tokens> {
        let client = self.oauth_client();
        let mut request = client
            .exchange_client_credentials()
            .add_scopes(self.scopes());
        for (name, value) in self.token_params()? {
            request = request.add_extra_param(name, value);
        }
        for (name, value) in &self.config.login.auth_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        crate::debug!(
            1,
            "requesting a token with client credentials from {}",
            client.token_uri().as_str()
        );
        let requested_at = self.clock.now();
        // Nothing one-time is spent: a duplicate request only costs the provider a token.
        let call = self.oauth_call("the client credentials request", Replay::Safe);
        // Some providers (glewlwyd) refuse client credentials asked without a scope with a bare
        // 403, no OAuth error: the generic hint (the URL, the settings) would send the user astray.
        let forbidden_hint = self.config.scopes.is_empty().then_some(
            "a provider may refuse client credentials without a scope: pass --scope with one this client is allowed",
        );
        let response = request.request(&call).map_err(|err| {
            token_error_with_forbidden_hint(
                err,
                "client credentials",
                &self.provider.metadata.issuer,
                &call,
                forbidden_hint,
            )
        })?;
        self.tokens_from(response, None, None, requested_at)
    }
}
