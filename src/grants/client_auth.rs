//! Client authentication at the token endpoint, for every grant that authenticates the client
//! (client credentials, token exchange, password, refresh): a secret (`client_secret_basic` /
//! `_post`, which the `oauth2` crate sends), or an assertion (RFC 7523 §2.2) sent as
//! `client_assertion` — one we sign with our private key (`private_key_jwt`: short-lived, a
//! unique `jti`, `aud` = the token endpoint, a new one per request), or a JWT a CI system issued
//! (a federated assertion, as Entra ID workload identity uses), read afresh per request.

use super::ProviderClient;
use crate::config::{ClientAuth, ClientAuthMethod, PrivateKeyPem, PrivateKeySettings};
use crate::error::{Exit, fail};
use crate::secret::Secret;
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use oauth2::AuthType;
use serde::Serialize;

/// RFC 7523 §2.2: the `client_assertion_type` of a JWT assertion.
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A signed assertion lives this long: long enough for clock skew and one request, short enough
/// that a captured one is soon worthless.
const ASSERTION_LIFETIME_SECS: i64 = 120;

/// A private key file larger than this is not a PEM key (the wrong path).
const MAX_KEY_BYTES: u64 = 64 * 1024;

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    jti: String,
    iat: i64,
    nbf: i64,
    exp: i64,
}

/// A loaded signing key: the key, its algorithm, and its `kid`.
pub(crate) struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
    key_id: String,
}

impl SigningKey {
    /// Parses a PEM RSA (RS256) or EC P-256 (ES256) private key; `key_id` defaults to the
    /// RFC 7638 SHA-256 thumbprint of its public JWK, which is what providers that register a
    /// JWKS (and `kubecred`'s docs) use.
    pub(crate) fn from_pem(pem: &[u8], key_id: Option<&str>, shown: &str) -> anyhow::Result<Self> {
        let bad = |detail: &str| {
            fail(
                Exit::Input,
                format!(
                    "the client private key {shown} {detail}; give a PEM RSA or EC P-256 private key"
                ),
            )
        };
        let (key, algorithm) = match EncodingKey::from_rsa_pem(pem) {
            Ok(key) => (key, Algorithm::RS256),
            Err(_) => match EncodingKey::from_ec_pem(pem) {
                Ok(key) => (key, Algorithm::ES256),
                Err(_) => return Err(bad("is not a PEM private key")),
            },
        };
        let key_id = match key_id {
            Some(kid) => kid.to_string(),
            None => Jwk::from_encoding_key(&key, algorithm)
                .and_then(|jwk| jwk.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256))
                .map_err(|_| {
                    bad("has no public key kubecred can compute (only RSA and EC P-256 keys)")
                })?,
        };
        Ok(SigningKey {
            key,
            algorithm,
            key_id,
        })
    }

    /// One assertion for one request to `audience` (the token endpoint).
    pub(crate) fn assertion(
        &self,
        client_id: &str,
        audience: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Secret> {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.key_id.clone());
        let iat = now.timestamp();
        let claims = AssertionClaims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            // 128 random bits: the provider rejects a replayed jti.
            jti: oauth2::CsrfToken::new_random().secret().to_string(),
            iat,
            nbf: iat,
            exp: iat + ASSERTION_LIFETIME_SECS,
        };
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map(Secret::new)
            .map_err(|err| {
                fail(
                    Exit::Input,
                    format!(
                        "signing the client assertion failed ({err}); check the client private key"
                    ),
                )
            })
    }
}

fn load_key(settings: &PrivateKeySettings) -> anyhow::Result<SigningKey> {
    match &settings.pem {
        PrivateKeyPem::File(path) => {
            use std::io::Read;
            let shown = path.display().to_string();
            let mut pem = Vec::new();
            std::fs::File::open(path)
                .and_then(|file| file.take(MAX_KEY_BYTES).read_to_end(&mut pem))
                .map_err(|err| {
                    fail(
                        Exit::Input,
                        format!("cannot read the client private key {shown}: {err}; check --client-private-key-file"),
                    )
                })?;
            SigningKey::from_pem(&pem, settings.key_id.as_deref(), &shown)
        }
        PrivateKeyPem::Env(pem) => SigningKey::from_pem(
            pem.expose().as_bytes(),
            settings.key_id.as_deref(),
            "in KUBECRED_CLIENT_PRIVATE_KEY",
        ),
    }
}

impl ProviderClient<'_> {
    /// `client_assertion_type` and `client_assertion` for one token request, when the client
    /// authenticates by assertion; nothing otherwise (a secret travels through `oauth2`).
    pub(super) fn client_assertion_params(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let assertion = match &self.config.client.auth {
            ClientAuth::None | ClientAuth::Secret { .. } => return Ok(Vec::new()),
            ClientAuth::PrivateKeyJwt(settings) => load_key(settings)?.assertion(
                &self.config.client.id,
                self.provider.metadata.token_endpoint.as_str(),
                self.clock.now(),
            )?,
            ClientAuth::Assertion(source) => crate::grants::ci_token::read(
                source,
                "client assertion",
                crate::grants::ci_token::Http::Ready(&self.http),
            )?,
        };
        Ok(vec![
            ("client_assertion_type", JWT_BEARER_ASSERTION.to_string()),
            ("client_assertion", assertion.expose().to_string()),
        ])
    }

    /// `client_secret_basic` unless asked otherwise or the provider only lists `client_secret_post`.
    pub(super) fn secret_auth_type(&self, method: ClientAuthMethod) -> AuthType {
        match method {
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

    /// A form POST to `endpoint` (token exchange, revocation: requests `oauth2` does not make
    /// for us), authenticated the way `oauth2` would: Basic (RFC 6749 §2.3.1: id and secret
    /// form-urlencoded first), or `client_id` in the body with the secret or the assertion beside
    /// it. Sent with an [`OAuthCall`](crate::http::OAuthCall), so it is bounded like the rest.
    pub(super) fn authenticated_form(
        &self,
        endpoint: &url::Url,
        mut params: Vec<(&'static str, String)>,
    ) -> anyhow::Result<oauth2::HttpRequest> {
        use base64::Engine;
        use oauth2::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
        let id = &self.config.client.id;
        let mut basic = None;
        match &self.config.client.auth {
            ClientAuth::Secret { secret, method }
                if matches!(self.secret_auth_type(*method), AuthType::BasicAuth) =>
            {
                let encode = |text: &str| {
                    url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", encode(id), encode(secret.expose()));
                basic = Some(base64::engine::general_purpose::STANDARD.encode(pair));
            }
            ClientAuth::Secret { secret, .. } => {
                params.push(("client_id", id.clone()));
                params.push(("client_secret", secret.expose().to_string()));
            }
            // An anonymous token exchange sends no client_id (Google's STS wants none).
            _ => {
                if !id.is_empty() {
                    params.push(("client_id", id.clone()));
                }
                params.extend(self.client_assertion_params()?);
            }
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params.iter().map(|(name, value)| (*name, value.as_str())))
            .finish();
        let mut request = oauth2::HttpRequest::new(body.into_bytes());
        *request.method_mut() = oauth2::http::Method::POST;
        *request.uri_mut() = endpoint
            .as_str()
            .parse()
            .map_err(|_| fail(Exit::Provider, format!("{endpoint} is not a valid URI")))?;
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        if let Some(basic) = basic {
            let mut value = HeaderValue::from_str(&format!("Basic {basic}")).map_err(|_| {
                fail(
                    Exit::Input,
                    "the client credentials cannot be sent in a header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(request)
    }
}

#[cfg(test)]
#[path = "client_auth_tests.rs"]
mod tests;
