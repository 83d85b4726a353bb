//! Token revocation (RFC 7009), for `kubecred logout`: the refresh token is sent to the
//! provider's `revocation_endpoint`, so that a copy of it (a backup, a stolen disk) is worthless.
//!
//! Hand-written rather than `oauth2`'s `revoke_token`: that refuses any `http` endpoint, and
//! kubecred allows plain http for an issuer on loopback (a local or test provider) exactly as for
//! every other endpoint, which discovery has already vetted. The request is one form POST with the
//! same client authentication as the token requests.

use super::ProviderClient;
use crate::secret::Secret;
use oauth2::AuthType;
use url::form_urlencoded::byte_serialize;

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
        let client = &self.config.client;
        let mut form = vec![
            ("token", refresh_token.expose().to_string()),
            ("token_type_hint", "refresh_token".to_string()),
        ];
        let mut request = self.http.post(endpoint.clone());
        match &client.secret {
            // RFC 6749 §2.3.1: id and secret are form-encoded before they go into Basic auth.
            Some(secret) if matches!(self.auth_type(), AuthType::BasicAuth) => {
                let encode = |value: &str| byte_serialize(value.as_bytes()).collect::<String>();
                request = request.basic_auth(encode(&client.id), Some(encode(secret.expose())));
            }
            Some(secret) => {
                form.push(("client_id", client.id.clone()));
                form.push(("client_secret", secret.expose().to_string()));
            }
            None => form.push(("client_id", client.id.clone())),
        }
        let shown = crate::http::display_url(endpoint);
        crate::debug!(1, "revoking the refresh token at {shown}");
        let response = request
            .form(&form)
            .send()
            .map_err(|err| crate::http::request_failed(&format!("revoking at {shown}"), &err))?;
        crate::http::check_status(response, &format!("the revocation endpoint {shown}"))?;
        Ok(Revocation::Revoked)
    }
}
