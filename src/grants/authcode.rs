//! The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636, RFC 8252 for native apps):
//! through the browser and a loopback listener (with the paste fallback on an interactive
//! terminal), or `authcode-keyboard`, where the user pastes the code.
//!
//! Where no browser opened here, the person is also offered the relayed login: the command to
//! run where a browser and kubecred are (`kubecred login --remote-bootstrap '<URL>'`), which
//! takes the redirect there and prints a line to paste here. The code is then exchanged here,
//! with the PKCE verifier that never left this machine and the redirect URI the other machine
//! listened on (`callback::AuthorizationResponse::relayed_redirect_uri`).

use super::errors::token_error;
use super::{OAuthClient, ProviderClient};
use crate::config::BrowserChoice;
use crate::config::RedirectUri;
use crate::error::{Exit, fail};
use crate::http::Replay;
use crate::login::callback::{AuthorizationResponse, ExpectedResponse};
use crate::login::listener::{self, CallbackListener};
use crate::login::{paste, wait};
use crate::presence::{Presence, browser, progress};
use crate::tokens::Tokens;
use oauth2::{AuthorizationCode, CsrfToken, PkceCodeChallenge, RedirectUrl};
use std::time::Instant;
use url::Url;

impl ProviderClient<'_> {
    /// Whether to use PKCE: on unless turned off, or unless discovery lists methods without S256.
    pub(super) fn use_pkce(&self) -> bool {
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
        for (name, value) in self.targets.authorization.clone() {
            request = request.add_extra_param(name, value);
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

    /// Exchanges the code of `response`, naming the redirect URI it was issued for: the one
    /// `client` sent, or the relayed login's.
    fn exchange_code(
        &self,
        client: &OAuthClient,
        response: &AuthorizationResponse,
        verifier: Option<oauth2::PkceCodeVerifier>,
        nonce: &str,
    ) -> anyhow::Result<Tokens> {
        let relayed;
        let client = match &response.relayed_redirect_uri {
            Some(redirect) => {
                relayed = client.clone().set_redirect_uri(redirect_url(redirect)?);
                &relayed
            }
            None => client,
        };
        let code = response.code.expose().to_string();
        let mut request = client.exchange_code(AuthorizationCode::new(code));
        if let Some(verifier) = verifier {
            request = request.set_pkce_verifier(verifier);
        }
        for (name, value) in self.token_params()? {
            request = request.add_extra_param(name, value);
        }
        let requested_at = self.clock.now();
        // The code is single-use: resent only if the first request surely never arrived.
        let call = self.oauth_call("the authorization code exchange", Replay::OnlyIfUnprocessed);
        let response = request.request(&call).map_err(|err| {
            token_error(
                err,
                "authorization code",
                &self.provider.metadata.issuer,
                &call,
            )
        })?;
        self.tokens_from(response, Some(nonce), None, requested_at)
    }

    /// Authorization code + PKCE through the browser and a one-shot loopback listener, with the
    /// paste fallback when the session is interactive.
    pub fn authcode(&self, presence: &Presence) -> anyhow::Result<Tokens> {
        self.authcode_until(Instant::now() + self.config.login.auth_timeout, presence)
    }

    /// [`authcode`](Self::authcode), ending at `deadline` (`auto` going on after a refused device
    /// flow keeps the whole login within --auth-timeout).
    pub(super) fn authcode_until(
        &self,
        deadline: Instant,
        presence: &Presence,
    ) -> anyhow::Result<Tokens> {
        // A certificate that cannot serve fails before a port is taken or a browser opened.
        let tls = self
            .config
            .login
            .callback_tls
            .as_ref()
            .map(listener::tls_config)
            .transpose()?;
        let mut listener = CallbackListener::bind(
            &self.config.login.listen_addresses,
            &self.config.login.redirect,
        )?;
        if let Some(tls) = tls {
            listener = listener.with_tls(tls);
        }
        let client = self
            .oauth_client()
            .set_redirect_uri(redirect_url(listener.redirect_uri())?);
        let (url, state, nonce, verifier) = self.authorization_request(&client)?;
        let expected = self
            .expected_response(&state)
            .redirected_to(listener.redirect_uri());
        let paste = presence.stdin().then(paste::PasteSource::spawn_stdin);
        let opened = browser::open(url.as_str(), &self.config.login.browser, presence)?;
        // With no browser and no terminal to paste into, nothing can complete this login: say so
        // now rather than hang kubectl for the whole --auth-timeout. (--skip-open-browser keeps
        // waiting: the user may open the URL elsewhere, e.g. through an SSH port forward.)
        if !opened && paste.is_none() && self.config.login.browser != BrowserChoice::Skip {
            return Err(fail(
                Exit::Login,
                "no browser could be opened and this session cannot take a pasted code; use --grant-type device-code, set --browser-command, or pass --skip-open-browser to wait for a callback (e.g. through an SSH port forward)",
            ));
        }
        self.asking_a_person();
        if paste.is_some() {
            if opened {
                crate::log::notice(
                    "or paste the code (or the whole URL the browser was sent to) here and press Enter",
                );
            } else {
                offer_relay(&url);
                crate::log::notice(
                    "or paste the code (or the whole URL the browser was sent to, or the line `kubecred login --remote-bootstrap` printed) here and press Enter",
                );
            }
        }
        // No spinner while stdin takes a pasted code: its redraws would garble the typed line.
        let _spinner = paste.is_none().then(|| {
            progress::Spinner::start("waiting for the login in the browser", deadline, presence)
        });
        let response = wait::for_code(listener, paste, expected, deadline)?;
        self.exchange_code(&client, &response, verifier, &nonce)
    }

    /// What the authorization response must carry: our state, and the provider's `iss` when it
    /// sends one (RFC 9207).
    fn expected_response(&self, state: &CsrfToken) -> ExpectedResponse {
        let meta = &self.provider.metadata;
        ExpectedResponse::new(
            state.secret(),
            &meta.issuer,
            meta.authorization_response_iss_parameter_supported,
        )
    }

    /// Authorization code + PKCE with no listener: the user pastes the code.
    /// `acquire::preflight_login` has already refused sessions without a terminal.
    ///
    /// The URL is printed, not opened in the system browser: this grant is for a person whose
    /// browser is elsewhere (as kubelogin's authcode-keyboard), and a tab opened here would end
    /// on a redirect nothing answers. A browser command the user set (`--browser-command`,
    /// `$BROWSER`) still runs: that is how they asked for URLs to be opened.
    pub fn authcode_keyboard(&self, presence: &Presence) -> anyhow::Result<Tokens> {
        let deadline = Instant::now() + self.config.login.auth_timeout;
        let redirect = &self.config.login.redirect;
        let client = self
            .oauth_client()
            .set_redirect_uri(redirect_url(redirect)?);
        let (url, state, nonce, verifier) = self.authorization_request(&client)?;
        let browser = match &self.config.login.browser {
            BrowserChoice::System => &BrowserChoice::Skip,
            chosen => chosen,
        };
        if !browser::open(url.as_str(), browser, presence)? {
            offer_relay(&url);
        }
        self.asking_a_person();
        let response = wait::read_code(
            paste::PasteSource::spawn_stdin(),
            self.expected_response(&state).redirected_to(redirect),
            deadline,
        )?;
        self.exchange_code(&client, &response, verifier, &nonce)
    }
}

/// oauth2's redirect URL for `redirect`, holding its text as written: that is what oauth2 sends
/// (`RedirectUrl::from_url` would send the parse, with a `/` added to a bare host).
fn redirect_url(redirect: &RedirectUri) -> anyhow::Result<RedirectUrl> {
    RedirectUrl::new(redirect.as_str().to_string())
        .map_err(|err| fail(Exit::Input, format!("redirect URL {redirect}: {err}")))
}

/// Where no browser opened here: the relayed login, one command to run where a browser and
/// kubecred are (as gcloud's `--no-browser` offers), whose output is pasted here.
fn offer_relay(url: &Url) {
    crate::log::notice(format!(
        "or, where a browser and kubecred are, run: {}",
        relay_command(url)
    ));
}

/// `kubecred login --remote-bootstrap '<URL>'`, quoted for a POSIX shell (the URL's `&` would
/// otherwise end the command there).
fn relay_command(url: &Url) -> String {
    let quoted = url.as_str().replace('\'', "'\\''");
    format!("kubecred login --remote-bootstrap '{quoted}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_command_quotes_the_whole_url_for_a_shell() {
        let url = Url::parse("https://idp.example/auth?response_type=code&state=s").unwrap();
        assert_eq!(
            relay_command(&url),
            "kubecred login --remote-bootstrap 'https://idp.example/auth?response_type=code&state=s'"
        );
        // A quote cannot end the quoting early (the URL parser encodes it in a query, not in a
        // path).
        let quoted = Url::parse("https://idp.example/it's/auth?x=1").unwrap();
        assert_eq!(
            relay_command(&quoted),
            "kubecred login --remote-bootstrap 'https://idp.example/it'\\''s/auth?x=1'"
        );
    }
}
