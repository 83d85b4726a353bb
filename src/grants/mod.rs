//! Obtaining tokens from the identity provider: the OAuth 2.0 grants, built on the `oauth2`
//! crate (request encoding, client authentication, PKCE, device-code polling) so that kubecred
//! only adds what is its own: OIDC ID-token verification, expiry rules, and the login UX.
//!
//! [`ProviderClient`] is the provider as the grants see it; each grant is a file of its own
//! (`client_credentials.rs`, `refresh.rs`, `authcode.rs`, `device.rs`; `revoke.rs` for logout), and `errors.rs` words
//! the provider's refusals. Everything here talks to the network: it runs only after the cache
//! missed and the entry's lock is held (see `acquire/`).

mod authcode;
mod client_credentials;
mod device;
mod errors;
mod refresh;
mod revoke;

pub use refresh::RefreshOutcome;
pub use revoke::Revocation;

use crate::clock::Clock;
use crate::config::{ClientAuthMethod, Config, Grant};
use crate::oidc::Provider;
use crate::secret::Secret;
use crate::tokens::{access_token_expiry, Tokens};
use chrono::{DateTime, Utc};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthType, AuthUrl, Client, ClientId, ClientSecret, DeviceAuthorizationUrl, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, ExtraTokenFields, Scope, StandardRevocableToken,
    StandardTokenResponse, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The `id_token` an OpenID Provider adds to token responses.
#[derive(Clone, Serialize, Deserialize)]
pub struct OidcTokenFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
}

impl ExtraTokenFields for OidcTokenFields {}

// Hand-written so that a `{:?}` of a token response can never print the ID token.
impl fmt::Debug for OidcTokenFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcTokenFields")
            .field("id_token", &self.id_token.as_ref().map(|_| "****"))
            .finish()
    }
}

type OidcTokenResponse = StandardTokenResponse<OidcTokenFields, BasicTokenType>;

type OAuthClient = Client<
    BasicErrorResponse,
    OidcTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointMaybeSet,
    EndpointMaybeSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// The provider as the grants talk to it: the HTTP client, the discovered provider (its
/// metadata and keys), our settings and the clock. Building one runs discovery (from the disk
/// cache when it is fresh), so it is built only after the cache missed.
pub struct ProviderClient<'a> {
    config: &'a Config,
    clock: &'a dyn Clock,
    http: reqwest::blocking::Client,
    provider: Provider,
}

impl<'a> ProviderClient<'a> {
    pub fn new(config: &'a Config, clock: &'a dyn Clock) -> anyhow::Result<ProviderClient<'a>> {
        let http = crate::http::client(&config.http)?;
        let provider = Provider::discover(&http, &config.issuer, &config.cache.dir, clock.now())?;
        Ok(ProviderClient {
            config,
            clock,
            http,
            provider,
        })
    }

    fn oauth_client(&self) -> OAuthClient {
        // Discovery has already parsed and vetted every endpoint (https, or http on loopback).
        let meta = &self.provider.metadata;
        let auth_url = meta.authorization_endpoint.clone().map(AuthUrl::from_url);
        let device_url = meta
            .device_authorization_endpoint
            .clone()
            .map(DeviceAuthorizationUrl::from_url);
        let token_url = TokenUrl::from_url(meta.token_endpoint.clone());
        let mut client = Client::new(ClientId::new(self.config.client.id.clone()))
            .set_auth_uri_option(auth_url)
            .set_device_authorization_url_option(device_url)
            .set_token_uri(token_url);
        if let Some(secret) = &self.config.client.secret {
            client = client
                .set_client_secret(ClientSecret::new(secret.expose().to_string()))
                .set_auth_type(self.auth_type());
        }
        client
    }

    /// `client_secret_basic` unless asked otherwise or the provider only lists `client_secret_post`.
    fn auth_type(&self) -> AuthType {
        match self.config.client.auth_method {
            ClientAuthMethod::Basic => AuthType::BasicAuth,
            ClientAuthMethod::Post => AuthType::RequestBody,
            ClientAuthMethod::Auto => {
                let methods = self
                    .provider
                    .metadata
                    .token_endpoint_auth_methods_supported
                    .as_deref();
                match methods {
                    Some(methods)
                        if !methods.iter().any(|m| m == "client_secret_basic")
                            && methods.iter().any(|m| m == "client_secret_post") =>
                    {
                        AuthType::RequestBody
                    }
                    _ => AuthType::BasicAuth,
                }
            }
        }
    }

    /// Scopes, and `audience` / `resource` as extra parameters, for token requests.
    fn token_params(&self) -> Vec<(&'static str, String)> {
        let mut params = Vec::new();
        if let Some(audience) = &self.config.audience {
            params.push(("audience", audience.clone()));
        }
        if let Some(resource) = &self.config.resource {
            params.push(("resource", resource.clone()));
        }
        params
    }

    fn scopes(&self) -> impl Iterator<Item = Scope> + '_ {
        self.config.scopes.iter().cloned().map(Scope::new)
    }

    /// Turns a token response into [`Tokens`], verifying the ID token when there is one.
    /// `requested_at` is taken before the request went out, so that `expires_in` counted from it
    /// can only make the expiry earlier than the real one, never later.
    fn tokens_from(
        &self,
        response: OidcTokenResponse,
        nonce: Option<&str>,
        previous_refresh: Option<&Secret>,
        requested_at: DateTime<Utc>,
    ) -> anyhow::Result<Tokens> {
        let now = self.clock.now();
        let access = response.access_token().secret().to_string();
        let access_expiry = access_token_expiry(&access, response.expires_in(), requested_at);
        let (id_token, id_token_expiry) = match &response.extra_fields().id_token {
            Some(raw) => {
                let id_token = Secret::new(raw.clone());
                let claims = self.provider.verify_id_token(
                    &self.http,
                    &id_token,
                    &self.config.client.id,
                    nonce,
                    now,
                )?;
                crate::debug!(
                    1,
                    "ID token for subject {:?}, valid until {}",
                    claims.sub,
                    claims.exp
                );
                (Some(id_token), Some(claims.exp))
            }
            None => (None, None),
        };
        // A provider may keep the refresh token unchanged and omit it from the response.
        let refresh_token = response
            .refresh_token()
            .map(|token| Secret::new(token.secret().to_string()))
            .or_else(|| previous_refresh.cloned());
        Ok(Tokens {
            id_token,
            id_token_expiry,
            access_token: Some(Secret::new(access)),
            access_token_expiry: access_expiry,
            refresh_token,
            obtained_at: requested_at,
        })
    }
}

impl ProviderClient<'_> {
    /// Runs the configured grant (not the refresh).
    pub fn obtain(&self) -> anyhow::Result<Tokens> {
        match self.config.grant {
            Grant::ClientCredentials => self.client_credentials(),
            Grant::Authcode => self.authcode(),
            Grant::AuthcodeKeyboard => self.authcode_keyboard(),
            Grant::DeviceCode => self.device_code(),
        }
    }
}
