//! The resource owner password credentials grant (RFC 6749 §4.3), deprecated by the OAuth 2.0
//! Security BCP (the client sees the password; no MFA) but still what some providers offer
//! automation. The password comes from --password-file, KUBECRED_PASSWORD, or a no-echo prompt
//! on the terminal (after the user name's, without --username) — the prompts only in an
//! interactive session (`acquire::preflight_login` refuses at once otherwise), each reading its
//! own line within the login's --auth-timeout (`presence/prompt.rs`). The deprecation notice is
//! printed once per process.

use super::ProviderClient;
use super::errors::token_error;
use crate::config::PasswordSource;
use crate::error::{Exit, fail};
use crate::http::Replay;
use crate::presence::prompt;
use crate::secret::Secret;
use crate::tokens::Tokens;
use oauth2::{ResourceOwnerPassword, ResourceOwnerUsername};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

impl ProviderClient<'_> {
    /// Logs the user in with a user name and password.
    pub fn password(&self) -> anyhow::Result<Tokens> {
        let settings = self
            .config
            .password
            .as_ref()
            .expect("config requires a user for --grant-type password");
        deprecation_notice_once();
        // One deadline for whatever is typed: the user name and the password together.
        let typing = Typing::within(self.config.login.auth_timeout);
        let username = match &settings.username {
            Some(name) => name.clone(),
            None => read_username(&typing)?,
        };
        let password = read_password(&settings.source, &username, &typing)?;
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

/// The time a person has to type at the prompts: the login's `--auth-timeout`.
struct Typing {
    deadline: Instant,
    budget: Duration,
}

impl Typing {
    fn within(budget: Duration) -> Typing {
        Typing {
            deadline: Instant::now() + budget,
            budget,
        }
    }

    /// The error for a prompt that got no line (`what`: "user name", "password"); `instead`:
    /// how to do without the prompt.
    fn unanswered(&self, err: io::Error, what: &str, instead: &str) -> anyhow::Error {
        crate::log::stderr(format_args!("\n")); // Ends the prompt's line.
        let message = match err.kind() {
            io::ErrorKind::TimedOut => format!(
                "no {what} was typed within {} (--auth-timeout); {instead}, or pass a longer --auth-timeout",
                crate::duration::display_whole_seconds(self.budget)
            ),
            io::ErrorKind::Interrupted => format!(
                "the {what} prompt was interrupted (Ctrl-C); run `kubecred login` to try again, or {instead}"
            ),
            io::ErrorKind::UnexpectedEof => {
                format!(
                    "no {what} was typed (the input ended: Ctrl-D, or the terminal closed); {instead}"
                )
            }
            _ => format!("cannot read the {what} from the terminal: {err}; {instead}"),
        };
        fail(Exit::Login, message)
    }
}

/// The user name, typed at the terminal (preflight made sure the session is interactive), in
/// the time left: the line, trimmed. Only that line is read; the next is the password's.
fn read_username(typing: &Typing) -> anyhow::Result<String> {
    const INSTEAD: &str = "pass --username";
    crate::log::stderr(format_args!("Username: "));
    let name = prompt::line(typing.deadline)
        .map_err(|err| typing.unanswered(err, "user name", INSTEAD))?;
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
fn read_password(
    source: &PasswordSource,
    username: &str,
    typing: &Typing,
) -> anyhow::Result<Secret> {
    let password = match source {
        PasswordSource::Env(password) => password.expose().to_string(),
        PasswordSource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|err| {
                fail(
                    Exit::Input,
                    format!(
                        "cannot read the password file {}: {err}; check --password-file",
                        path.display()
                    ),
                )
            })?;
            text.trim_end_matches(['\n', '\r']).to_string()
        }
        // Read from the terminal on stdin, with echo off; preflight made sure it is one and
        // that the session is interactive.
        PasswordSource::Prompt => {
            crate::log::stderr(format_args!("Password for {username}: "));
            let password = prompt::hidden_line(typing.deadline).map_err(|err| {
                typing.unanswered(
                    err,
                    "password",
                    "set KUBECRED_PASSWORD or pass --password-file",
                )
            })?;
            crate::log::stderr(format_args!("\n")); // The Enter the terminal did not echo.
            password
        }
    };
    if password.is_empty() {
        return Err(fail(
            Exit::Input,
            "the password is empty; check KUBECRED_PASSWORD or --password-file",
        ));
    }
    Ok(Secret::new(password))
}
