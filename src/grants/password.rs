//! The resource owner password credentials grant (RFC 6749 §4.3), deprecated by the OAuth 2.0
//! Security BCP (the client sees the password; no MFA) but still what some providers offer
//! automation. The password comes from --password-file, KUBECRED_PASSWORD, or a no-echo prompt
//! on the terminal — the prompt only in an interactive session (`acquire::preflight_login`
//! refuses at once otherwise). The deprecation notice is printed once per process.

use super::ProviderClient;
use super::errors::token_error;
use crate::config::PasswordSource;
use crate::error::{Exit, fail};
use crate::http::Replay;
use crate::secret::Secret;
use crate::tokens::Tokens;
use oauth2::{ResourceOwnerPassword, ResourceOwnerUsername};
use std::sync::atomic::{AtomicBool, Ordering};

impl ProviderClient<'_> {
    /// Logs the user in with a user name and password.
    pub fn password(&self) -> anyhow::Result<Tokens> {
        let settings = self
            .config
            .password
            .as_ref()
            .expect("config requires a user for --grant-type password");
        deprecation_notice_once();
        let username = match &settings.username {
            Some(name) => name.clone(),
            None => read_username(self.config.login.auth_timeout)?,
        };
        let password = read_password(&settings.source, &username)?;
        let client = self.oauth_client();
        let shown = username.clone();
        let username = ResourceOwnerUsername::new(username);
        let password = ResourceOwnerPassword::new(password.expose().to_string());
        let mut request = client
            .exchange_password(&username, &password)
            .add_scopes(self.scopes());
        for (name, value) in self.token_params()? {
            request = request.add_extra_param(name, value);
        }
        crate::debug!(
            1,
            "requesting a token for {} with the password grant from {}",
            shown,
            client.token_uri().as_str()
        );
        let requested_at = self.clock.now();
        // A password can be sent again: a duplicate request only costs the provider a token.
        let call = self.oauth_call("the password grant request", Replay::Safe);
        let response = request
            .request(&call)
            .map_err(|err| token_error(err, "password", &self.provider.metadata.issuer, &call))?;
        self.tokens_from(response, None, None, requested_at)
    }
}

fn deprecation_notice_once() {
    static SHOWN: AtomicBool = AtomicBool::new(false);
    if !SHOWN.swap(true, Ordering::Relaxed) {
        crate::log::notice(
            "--grant-type password is deprecated (OAuth 2.0 Security BCP): the password passes through kubecred and MFA cannot work; prefer token-exchange, client-credentials or a browser login",
        );
    }
}

/// The user name, typed at the terminal (preflight made sure the session is interactive),
/// within `within`: the line, trimmed.
fn read_username(within: std::time::Duration) -> anyhow::Result<String> {
    use crate::login::paste::{PasteSource, Pasted};
    crate::log::stderr(format_args!("Username: "));
    let deadline = std::time::Instant::now() + within;
    let name = match PasteSource::spawn_stdin().line_before(deadline) {
        Pasted::Line(line) => line.trim().to_string(),
        _ => String::new(),
    };
    if name.is_empty() {
        return Err(fail(
            Exit::Login,
            "no user name was typed for --grant-type password; pass --username",
        ));
    }
    Ok(name)
}

/// The password, from where the settings say. A file's trailing line ending is dropped (editors
/// add one); everything else, spaces included, is the password.
fn read_password(source: &PasswordSource, username: &str) -> anyhow::Result<Secret> {
    let password = match source {
        PasswordSource::Env(password) => password.expose().to_string(),
        PasswordSource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|err| {
                fail(
                    Exit::Input,
                    format!("cannot read the password file {}: {err}; check --password-file", path.display()),
                )
            })?;
            text.trim_end_matches(['\n', '\r']).to_string()
        }
        // Read from the terminal itself (/dev/tty), with echo off; preflight made sure there is
        // one and that the session is interactive.
        PasswordSource::Prompt => rpassword::prompt_password(format!("Password for {username}: "))
            .map_err(|err| {
                fail(
                    Exit::Login,
                    format!("cannot read the password from the terminal: {err}; set KUBECRED_PASSWORD or pass --password-file"),
                )
            })?,
    };
    if password.is_empty() {
        return Err(fail(
            Exit::Input,
            "the password is empty; check KUBECRED_PASSWORD or --password-file",
        ));
    }
    Ok(Secret::new(password))
}
