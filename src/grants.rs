//! Obtaining tokens from the identity provider: the OAuth 2.0 grants, built on the `oauth2`
//! crate (request encoding, client authentication, PKCE, device-code polling) so that kubecred
//! only adds what is its own: OIDC ID-token verification, expiry rules, and the login UX.
//!
//! Everything here talks to the network. It runs only after the cache missed and the entry's
//! lock is held (see `get_token.rs`).

use crate::cli::ClientAuthMethod;
use crate::config::{BrowserChoice, Config, Grant};
use crate::error::{fail, Exit};
use crate::login::loopback::{CallbackListener, DEFAULT_REDIRECT_URL};
use crate::login::{browser, device_display, paste, wait};
use crate::oidc::Provider;
use crate::secret::Secret;
use crate::tokens::{access_token_expiry, Tokens};
use chrono::{DateTime, Utc};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken,
    DeviceAuthorizationUrl, EndpointMaybeSet, EndpointNotSet, EndpointSet, ErrorResponseType,
    ExtraTokenFields, HttpClientError, PkceCodeChallenge, RedirectUrl, RefreshToken,
    RequestTokenError, Scope, StandardDeviceAuthorizationResponse, StandardErrorResponse,
    StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Instant;

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

/// Fails at once when a login would be needed but cannot happen in this session, before any
/// network round trip.
pub fn check_login_possible(config: &Config) -> anyhow::Result<()> {
    if config.grant == Grant::AuthcodeKeyboard
        && !paste::stdin_is_interactive(config.exec.interactive)
    {
        return Err(fail(
            Exit::Login,
            "--grant-type authcode-keyboard needs an interactive terminal (kubectl passes stdin only with interactiveMode IfAvailable/Always on a TTY); use --grant-type device-code or authcode",
        ));
    }
    Ok(())
}

/// One conversation with the provider: the HTTP client, its metadata and our settings.
pub struct Session<'a> {
    config: &'a Config,
    http: reqwest::blocking::Client,
    provider: Provider,
}

impl<'a> Session<'a> {
    pub fn new(config: &'a Config) -> anyhow::Result<Session<'a>> {
        let http = crate::http::client(config)?;
        let provider = Provider::discover(&http, config)?;
        Ok(Session {
            config,
            http,
            provider,
        })
    }

    fn oauth_client(&self) -> anyhow::Result<OAuthClient> {
        let meta = &self.provider.metadata;
        let bad_endpoint = |what: &str, err: url::ParseError| {
            fail(
                Exit::Provider,
                format!("the provider's {what} is not a URL ({err}); check the issuer's discovery document"),
            )
        };
        let auth_url = meta
            .authorization_endpoint
            .as_ref()
            .map(|url| AuthUrl::new(url.to_string()))
            .transpose()
            .map_err(|err| bad_endpoint("authorization_endpoint", err))?;
        let device_url = meta
            .device_authorization_endpoint
            .as_ref()
            .map(|url| DeviceAuthorizationUrl::new(url.to_string()))
            .transpose()
            .map_err(|err| bad_endpoint("device_authorization_endpoint", err))?;
        let token_url = TokenUrl::new(meta.token_endpoint.to_string())
            .map_err(|err| bad_endpoint("token_endpoint", err))?;
        let mut client = Client::new(ClientId::new(self.config.client_id.clone()))
            .set_auth_uri_option(auth_url)
            .set_device_authorization_url_option(device_url)
            .set_token_uri(token_url);
        if let Some(secret) = &self.config.client_secret {
            client = client
                .set_client_secret(ClientSecret::new(secret.expose().to_string()))
                .set_auth_type(self.auth_type());
        }
        Ok(client)
    }

    /// `client_secret_basic` unless asked otherwise or the provider only lists `client_secret_post`.
    fn auth_type(&self) -> AuthType {
        match self.config.client_auth {
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
        let now = Utc::now();
        let access = response.access_token().secret().to_string();
        let access_expiry = access_token_expiry(&access, response.expires_in(), requested_at);
        let (id_token, id_token_expiry) = match &response.extra_fields().id_token {
            Some(raw) => {
                let id_token = Secret::new(raw.clone());
                let claims = self.provider.verify_id_token(
                    &self.http,
                    &id_token,
                    &self.config.client_id,
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

    /// OAuth 2.0 client credentials: a confidential client acting as itself.
    pub fn client_credentials(&self) -> anyhow::Result<Tokens> {
        let client = self.oauth_client()?;
        let mut request = client
            .exchange_client_credentials()
            .add_scopes(self.scopes());
        for (name, value) in self.token_params() {
            request = request.add_extra_param(name, value);
        }
        crate::debug!(
            1,
            "requesting a token with client credentials from {}",
            client.token_uri().as_str()
        );
        let requested_at = Utc::now();
        let response = request.request(&self.http).map_err(|err| {
            token_error(err, "client credentials", &self.provider.metadata.issuer)
        })?;
        self.tokens_from(response, None, None, requested_at)
    }

    /// The refresh-token grant. `invalid_grant` is an outcome, not an error: the caller drops
    /// the entry and logs in again.
    pub fn refresh(&self, refresh_token: &Secret) -> anyhow::Result<RefreshOutcome> {
        let client = self.oauth_client()?;
        let token = RefreshToken::new(refresh_token.expose().to_string());
        let mut request = client.exchange_refresh_token(&token);
        for (name, value) in self.token_params() {
            request = request.add_extra_param(name, value);
        }
        crate::debug!(1, "refreshing the token at {}", client.token_uri().as_str());
        let requested_at = Utc::now();
        match request.request(&self.http) {
            Ok(response) => {
                let current = response
                    .refresh_token()
                    .map(|token| Secret::new(token.secret().to_string()))
                    .unwrap_or_else(|| refresh_token.clone());
                match self.tokens_from(response, None, Some(refresh_token), requested_at) {
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
            Err(err) => Err(token_error(err, "refresh", &self.provider.metadata.issuer)),
        }
    }

    /// Whether to use PKCE: on unless turned off, or unless discovery lists methods without S256.
    fn use_pkce(&self) -> bool {
        self.config
            .login
            .pkce
            .unwrap_or_else(|| self.provider.metadata.supports_pkce_s256())
    }

    /// The authorization URL with state, nonce, PKCE and the user's extra parameters.
    fn authorization_request(
        &self,
        client: &OAuthClient,
    ) -> anyhow::Result<(
        url::Url,
        CsrfToken,
        String,
        Option<oauth2::PkceCodeVerifier>,
    )> {
        let nonce = CsrfToken::new_random().secret().to_string();
        let mut request = client
            .authorize_url(CsrfToken::new_random)
            .map_err(|_| {
                fail(
                    Exit::Provider,
                    format!(
                        "{} has no authorization_endpoint; use --grant-type device-code or client-credentials",
                        self.provider.metadata.issuer
                    ),
                )
            })?
            .add_scopes(self.scopes())
            .add_extra_param("nonce", nonce.clone());
        let verifier = if self.use_pkce() {
            let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
            request = request.set_pkce_challenge(challenge);
            Some(verifier)
        } else {
            None
        };
        if let Some(resource) = &self.config.resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        if let Some(audience) = &self.config.audience {
            request = request.add_extra_param("audience", audience.clone());
        }
        if let Some(hint) = &self.config.login.login_hint {
            request = request.add_extra_param("login_hint", hint.clone());
        }
        if let Some(prompt) = &self.config.login.prompt {
            request = request.add_extra_param("prompt", prompt.clone());
        }
        for (name, value) in &self.config.login.auth_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        let (url, state) = request.url();
        Ok((url, state, nonce, verifier))
    }

    fn exchange_code(
        &self,
        client: &OAuthClient,
        code: &Secret,
        verifier: Option<oauth2::PkceCodeVerifier>,
        nonce: &str,
    ) -> anyhow::Result<Tokens> {
        let mut request = client.exchange_code(AuthorizationCode::new(code.expose().to_string()));
        if let Some(verifier) = verifier {
            request = request.set_pkce_verifier(verifier);
        }
        for (name, value) in self.token_params() {
            request = request.add_extra_param(name, value);
        }
        let requested_at = Utc::now();
        let response = request.request(&self.http).map_err(|err| {
            token_error(err, "authorization code", &self.provider.metadata.issuer)
        })?;
        self.tokens_from(response, Some(nonce), None, requested_at)
    }

    /// Authorization code + PKCE through the browser and a one-shot loopback listener, with the
    /// paste fallback when the session is interactive.
    pub fn authcode(&self) -> anyhow::Result<Tokens> {
        let deadline = Instant::now() + self.config.login.auth_timeout;
        let listener = CallbackListener::bind(
            &self.config.login.listen_addresses,
            self.config.login.redirect_url.as_ref(),
        )?;
        let redirect = listener.redirect_uri();
        let client = self.oauth_client()?.set_redirect_uri(
            RedirectUrl::new(redirect.clone())
                .map_err(|err| fail(Exit::Input, format!("redirect URL {redirect}: {err}")))?,
        );
        let (url, state, nonce, verifier) = self.authorization_request(&client)?;
        let paste = paste::stdin_is_interactive(self.config.exec.interactive)
            .then(paste::PasteSource::spawn_stdin);
        let opened = browser::open(url.as_str(), &self.config.login.browser)?;
        // With no browser and no terminal to paste into, nothing can complete this login: say so
        // now rather than hang kubectl for the whole --auth-timeout. (--skip-open-browser keeps
        // waiting: the user may open the URL elsewhere, e.g. through an SSH port forward.)
        if !opened && paste.is_none() && self.config.login.browser != BrowserChoice::Skip {
            return Err(fail(
                Exit::Login,
                "no browser could be opened and this session cannot take a pasted code; use --grant-type device-code, set --browser-command, or pass --skip-open-browser to wait for a callback (e.g. through an SSH port forward)",
            ));
        }
        if paste.is_some() {
            crate::log::notice(
                "Or paste the code (or the whole URL the browser was sent to) here and press Enter.",
            );
        }
        let code = wait::for_code(listener, paste, state.secret(), deadline)?;
        self.exchange_code(&client, &code, verifier, &nonce)
    }

    /// Authorization code + PKCE with no listener: the user pastes the code.
    /// `check_login_possible` has already refused sessions without a terminal (get_token.rs).
    pub fn authcode_keyboard(&self) -> anyhow::Result<Tokens> {
        let deadline = Instant::now() + self.config.login.auth_timeout;
        let redirect = self
            .config
            .login
            .redirect_url
            .as_ref()
            .map(|url| url.to_string())
            .unwrap_or_else(|| DEFAULT_REDIRECT_URL.to_string());
        let client = self.oauth_client()?.set_redirect_uri(
            RedirectUrl::new(redirect.clone())
                .map_err(|err| fail(Exit::Input, format!("redirect URL {redirect}: {err}")))?,
        );
        let (url, state, nonce, verifier) = self.authorization_request(&client)?;
        browser::open(url.as_str(), &self.config.login.browser)?;
        let code = wait::read_code(paste::PasteSource::spawn_stdin(), state.secret(), deadline)?;
        self.exchange_code(&client, &code, verifier, &nonce)
    }

    /// The device authorization grant (RFC 8628): show a URL, a code and a QR code, then poll.
    pub fn device_code(&self) -> anyhow::Result<Tokens> {
        let client = self.oauth_client()?;
        let mut request = client
            .exchange_device_code()
            .map_err(|_| {
                fail(
                    Exit::Provider,
                    format!(
                        "{} does not offer the device flow (no device_authorization_endpoint); use --grant-type authcode",
                        self.provider.metadata.issuer
                    ),
                )
            })?
            .add_scopes(self.scopes());
        for (name, value) in self.token_params() {
            request = request.add_extra_param(name, value);
        }
        // RFC 8628 has no PKCE, but some providers accept it on the device grant to bind the
        // polling client to the one that started the flow; the rest ignore the extra parameters.
        let verifier = if self.use_pkce() {
            let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
            request = request
                .add_extra_param("code_challenge", challenge.as_str().to_string())
                .add_extra_param("code_challenge_method", challenge.method().to_string());
            Some(verifier)
        } else {
            None
        };
        let details: StandardDeviceAuthorizationResponse =
            request.request(&self.http).map_err(|err| {
                token_error(err, "device authorization", &self.provider.metadata.issuer)
            })?;
        let complete = details
            .verification_uri_complete()
            .map(|uri| uri.secret().to_string());
        device_display::show(
            details.verification_uri().as_str(),
            details.user_code().secret(),
            complete.as_deref(),
            details.expires_in(),
        );
        if self.config.login.browser != BrowserChoice::Skip {
            let target = complete
                .clone()
                .unwrap_or_else(|| details.verification_uri().to_string());
            // The URL and code are already on screen: a browser that fails to open is no error.
            if let Err(err) = browser::open(&target, &self.config.login.browser) {
                crate::log::notice(format!(
                    "could not open a browser: {}",
                    crate::error::one_line(&err)
                ));
            }
        }
        let mut poll = client.exchange_device_access_token(&details);
        for (name, value) in self.token_params() {
            poll = poll.add_extra_param(name, value);
        }
        if let Some(verifier) = &verifier {
            poll = poll.add_extra_param("code_verifier", verifier.secret().to_string());
        }
        // oauth2 honours `interval`, `slow_down` (+5 s) and `authorization_pending`; its timeout
        // replaces the code's `expires_in`, so pass the earlier of the two. It reports either
        // running out as `expired_token`: tell our own --auth-timeout apart by the clock.
        let auth_timeout = self.config.login.auth_timeout;
        let limited_by_us = auth_timeout < details.expires_in();
        let started = Instant::now();
        let requested_at = Utc::now();
        let response = poll
            .request(
                &self.http,
                std::thread::sleep,
                Some(auth_timeout.min(details.expires_in())),
            )
            .map_err(|err| match err {
                RequestTokenError::ServerResponse(err) => {
                    let code = err.error().to_string();
                    if code == "expired_token" && limited_by_us && started.elapsed() >= auth_timeout {
                        return fail(
                            Exit::Login,
                            format!(
                                "no device login completed within {}s (--auth-timeout); run `kubecred login` to get a new code, or pass a longer --auth-timeout",
                                auth_timeout.as_secs()
                            ),
                        );
                    }
                    let next = match code.as_str() {
                        "access_denied" => "the login was denied; run `kubecred login` to try again",
                        "expired_token" => "the code expired before the login was approved; run `kubecred login` for a new code",
                        _ => "run `kubecred login` to try again",
                    };
                    fail(
                        Exit::Login,
                        format!("device login failed: {}; {next}", describe_server_error(&err)),
                    )
                }
                other => token_error(other, "device code", &self.provider.metadata.issuer),
            })?;
        self.tokens_from(response, None, None, requested_at)
    }

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

/// `error: description` of an OAuth error response (descriptions come from the provider and
/// never contain our secrets).
fn describe_server_error<T: ErrorResponseType + fmt::Display>(
    err: &StandardErrorResponse<T>,
) -> String {
    match err.error_description() {
        Some(description) => format!(
            "{} ({})",
            err.error(),
            description.replace(['\n', '\r'], " ")
        ),
        None => err.error().to_string(),
    }
}

/// One line for a failed token request, with the next step where kubecred can tell it.
fn token_error<T: ErrorResponseType + fmt::Display>(
    err: RequestTokenError<HttpClientError<reqwest::Error>, StandardErrorResponse<T>>,
    grant: &str,
    issuer: &str,
) -> anyhow::Error {
    match err {
        RequestTokenError::ServerResponse(response) => {
            let hint = match response.error().to_string().as_str() {
                "invalid_client" => "check --client-id and the client secret",
                "unauthorized_client" => "the client is not allowed this grant type at the provider; check --grant-type",
                "invalid_scope" => "check --scope",
                "invalid_target" => "check --resource / --audience",
                "invalid_grant" => "log in again (kubecred login)",
                _ => "check the provider's logs and kubecred's settings",
            };
            fail(
                Exit::Provider,
                format!(
                    "{issuer} refused the {grant} token request: {}; {hint}",
                    describe_server_error(&response)
                ),
            )
        }
        RequestTokenError::Request(err) => {
            let detail = match err {
                HttpClientError::Reqwest(err) => crate::http::describe(&err),
                other => other.to_string(),
            };
            fail(
                Exit::Provider,
                format!("the {grant} token request to {issuer} failed: {detail}"),
            )
        }
        // The body may hold tokens: name the place of the problem, never echo the body.
        RequestTokenError::Parse(err, _body) => fail(
            Exit::Provider,
            format!(
                "the {grant} response from {issuer} is not a valid OAuth 2.0 response (at `{}`); is the issuer URL right?",
                err.path()
            ),
        ),
        RequestTokenError::Other(message) => fail(
            Exit::Provider,
            format!("the {grant} token request to {issuer} failed: {message}"),
        ),
    }
}
