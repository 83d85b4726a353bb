//! The device authorization grant (RFC 8628): show a URL, a code and a QR code on stderr, open
//! the browser when there is one, then poll the token endpoint until the user approves, the code
//! expires or `--auth-timeout` passes. A provider that refuses the flow itself, at the start or
//! at the poll (`device_refusal.rs`), is told apart from every other failure, and remembered
//! (`oidc::device_flow_memory`), so that `--grant-type auto` can go on with the login that works.

use super::ProviderClient;
use super::device_refusal::{DeviceFlowRefused, Step, refusal};
use super::errors::{describe_server_error, request_error, token_error};
use crate::error::{Exit, fail};
use crate::http::{OAuthCall, Replay, RequestFailure};
use crate::presence::device_page::{self, DevicePage};
use crate::presence::{CodeDisplay, Presence, browser, device_display};
use crate::tokens::Tokens;
use oauth2::{
    ErrorResponseType, PkceCodeChallenge, PkceCodeVerifier, RequestTokenError,
    StandardDeviceAuthorizationResponse, StandardErrorResponse,
};
use std::fmt;
use std::time::{Duration, Instant};

/// Why a device flow gave no tokens.
pub(super) enum DeviceFlowFailure {
    /// The provider refused the flow itself, at the start or at the poll.
    Refused(DeviceFlowRefused),
    /// Anything else, worded: the person's denial, a timeout, an outage, a wrong setting.
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for DeviceFlowFailure {
    fn from(err: anyhow::Error) -> DeviceFlowFailure {
        DeviceFlowFailure::Failed(err)
    }
}

impl ProviderClient<'_> {
    /// The device authorization grant (RFC 8628): show a URL, a code and a QR code, then poll.
    pub fn device_code(&self, presence: &Presence) -> anyhow::Result<Tokens> {
        self.device_flow(None, presence)
            .map_err(|failure| match failure {
                DeviceFlowFailure::Refused(refused) => {
                    refused.into_error(&self.provider.metadata.issuer, &self.config.client.id, None)
                }
                DeviceFlowFailure::Failed(err) => err,
            })
    }

    /// The device flow, with `announce` said once the provider has given a code (`auto`'s
    /// choice: a refusal at the start gets a line of its own instead).
    pub(super) fn device_flow(
        &self,
        announce: Option<&str>,
        presence: &Presence,
    ) -> Result<Tokens, DeviceFlowFailure> {
        let client = self.oauth_client();
        let (details, verifier) = self.start_device_flow(&client)?;
        if let Some(announce) = announce {
            crate::log::notice(announce);
        }
        // The local page (if any) is served until the poll is done.
        let _page = self.show_device_code(&details, presence)?;
        self.poll_device_flow(&client, &details, verifier.as_ref(), presence)
    }

    /// The device authorization request: the code to show, and the PKCE verifier the polls
    /// prove the flow with, when the settings use PKCE.
    fn start_device_flow(
        &self,
        client: &super::OAuthClient,
    ) -> Result<
        (
            StandardDeviceAuthorizationResponse,
            Option<PkceCodeVerifier>,
        ),
        DeviceFlowFailure,
    > {
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
        for (name, value) in self.targets.authorization.clone() {
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
        // A duplicate authorization request only starts a second, unused code.
        let start_call = self.oauth_call("the device authorization request", Replay::Safe);
        let details = request.request(&start_call).map_err(|err| {
            self.refused_or(err, Step::Authorization, &start_call, |err| {
                request_error(
                    err,
                    "device authorization request",
                    &self.provider.metadata.issuer,
                    &start_call,
                    None,
                )
            })
        })?;
        Ok((details, verifier))
    }

    /// Shows the person the code: the URL, the code and a QR code on stderr, and the browser
    /// opened on it where one can open. Without a terminal (an IDE, a dashboard), stderr is read
    /// by nobody: on a desktop the code goes into the browser (the provider's complete link, or
    /// kubecred's own page, served while the returned guard lives); a browser that cannot be
    /// started there fails the login at once rather than leave a code nobody sees. Unless the
    /// person said where they read it: `--skip-open-browser` (a job log somebody watches, a tool
    /// that shows the plugin's stderr) keeps the code on stderr, terminal or not.
    fn show_device_code(
        &self,
        details: &StandardDeviceAuthorizationResponse,
        presence: &Presence,
    ) -> anyhow::Result<Option<DevicePage>> {
        let page = self.put_the_code_before_a_person(details, presence)?;
        // Only once the code is visible has a person been asked: a login that failed before (no
        // page, no browser) leaves no cool-down, and the next run says the real cause again.
        self.asking_a_person();
        Ok(page)
    }

    /// `show_device_code`'s ways to the person, as the run's presence places the code
    /// ([`Presence::code_display`]): stderr (and the browser where one opens), or, without a
    /// terminal, the browser only; an error where it cannot show the code there.
    fn put_the_code_before_a_person(
        &self,
        details: &StandardDeviceAuthorizationResponse,
        presence: &Presence,
    ) -> anyhow::Result<Option<DevicePage>> {
        let complete = details
            .verification_uri_complete()
            .map(|uri| uri.secret().to_string());
        device_display::show(
            details.verification_uri().as_str(),
            details.user_code().secret(),
            complete.as_deref(),
            details.expires_in(),
        );
        let browser = &self.config.login.browser;
        match presence.code_display(browser) {
            CodeDisplay::Stderr => Ok(None),
            // The URL and code are on screen already: the browser is a convenience, and a failure
            // to open it is no error.
            CodeDisplay::StderrAndBrowser => {
                let target = complete.unwrap_or_else(|| details.verification_uri().to_string());
                browser::open_quietly(&target, browser, presence);
                Ok(None)
            }
            CodeDisplay::BrowserOnly => {
                let limit = self.config.login.auth_timeout.min(details.expires_in());
                let page = device_page::show_in_browser(
                    details.verification_uri().as_str(),
                    details.user_code().secret(),
                    complete.as_deref(),
                    Instant::now() + limit,
                    browser,
                    presence,
                )?;
                if !page.opened() {
                    return Err(fail(
                        Exit::Login,
                        "no terminal shows the device code here and no browser could be opened for it; run `kubecred login` with the same flags in a terminal",
                    ));
                }
                Ok(Some(page))
            }
        }
    }

    /// Polls the token endpoint until the person approves, the code expires or
    /// `--auth-timeout` passes.
    fn poll_device_flow(
        &self,
        client: &super::OAuthClient,
        details: &StandardDeviceAuthorizationResponse,
        verifier: Option<&PkceCodeVerifier>,
        presence: &Presence,
    ) -> Result<Tokens, DeviceFlowFailure> {
        let mut poll = client.exchange_device_access_token(details);
        for (name, value) in self.targets.token.clone() {
            poll = poll.add_extra_param(name, value);
        }
        if let Some(verifier) = verifier {
            poll = poll.add_extra_param("code_verifier", verifier.secret().to_string());
        }
        // oauth2 honours `interval`, `slow_down` (+5 s) and `authorization_pending`; its timeout
        // replaces the code's `expires_in`, so pass the earlier of the two. It reports either
        // running out as `expired_token`: tell our own --auth-timeout apart by the clock.
        let auth_timeout = self.config.login.auth_timeout;
        let limit = auth_timeout.min(details.expires_in());
        let started = Instant::now();
        let give_up_at = started + limit;
        let requested_at = self.clock.now();
        // The device code is redeemed once, by the poll that gets the tokens.
        let poll_call = self.oauth_call("the device token poll", Replay::OnlyIfUnprocessed);
        let spinner = crate::presence::progress::Spinner::start(
            "waiting for the login to be approved",
            give_up_at,
            presence,
        );
        let response = poll
            .request(
                &poll_call,
                |interval| std::thread::sleep(poll_sleep(interval, give_up_at, Instant::now())),
                Some(limit),
            )
            .map_err(|err| {
                self.refused_or(err, Step::Poll, &poll_call, |err| {
                    let ours =
                        auth_timeout < details.expires_in() && started.elapsed() >= auth_timeout;
                    self.poll_error(err, &poll_call, ours)
                })
            });
        drop(spinner); // Cleared before any message about the outcome.
        let response = response?;
        Ok(self.tokens_from(response, None, None, requested_at)?)
    }

    /// A failed device poll, worded: `our_timeout` when our own --auth-timeout ran out (oauth2
    /// reports it as `expired_token`, like the code's own expiry).
    fn poll_error<T: ErrorResponseType + fmt::Display>(
        &self,
        err: RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
        poll_call: &OAuthCall,
        our_timeout: bool,
    ) -> anyhow::Error {
        let RequestTokenError::ServerResponse(err) = err else {
            return token_error(
                err,
                "device code",
                &self.provider.metadata.issuer,
                poll_call,
            );
        };
        let code = err.error().to_string();
        if code == "expired_token" && our_timeout {
            // Polls that failed (the provider unreachable) are retried by oauth2 until the
            // time is up: say so, or the timeout hides an outage.
            let failing = poll_call
                .last_failure()
                .map(|failure| format!(" (the last poll failed: {failure})"))
                .unwrap_or_default();
            return fail(
                Exit::Login,
                format!(
                    "no device login completed within {}s (--auth-timeout){failing}; run `kubecred login` to get a new code, or pass a longer --auth-timeout",
                    self.config.login.auth_timeout.as_secs()
                ),
            );
        }
        let next = match code.as_str() {
            "access_denied" => "the login was denied; run `kubecred login` to try again",
            "expired_token" => {
                "the code expired before the login was approved; run `kubecred login` for a new code"
            }
            _ => "run `kubecred login` to try again",
        };
        fail(
            Exit::Login,
            format!(
                "device login failed: {}; {next}",
                describe_server_error(&err)
            ),
        )
    }

    /// The provider's refusal of the device flow itself, remembered for this issuer and client;
    /// any other failure worded by `word`. An answer of 5xx or 429 is an outage whatever its
    /// body says, never a refusal.
    fn refused_or<T: ErrorResponseType + fmt::Display>(
        &self,
        err: RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
        step: Step,
        call: &OAuthCall,
        word: impl FnOnce(RequestTokenError<RequestFailure, StandardErrorResponse<T>>) -> anyhow::Error,
    ) -> DeviceFlowFailure {
        let client_error = call
            .last_answer()
            .is_none_or(|answer| answer.status.is_client_error());
        if let RequestTokenError::ServerResponse(response) = &err
            && client_error
            && let Some(meaning) = refusal(
                step,
                &response.error().to_string(),
                response.error_description().map(String::as_str),
            )
        {
            let refused = DeviceFlowRefused {
                step,
                said: describe_server_error(response),
                meaning,
            };
            crate::oidc::device_flow_memory::remember(
                &self.config.cache.dir,
                &self.config.issuer,
                &self.config.client.id,
                &refused.said,
                self.clock.now(),
            );
            return DeviceFlowFailure::Refused(refused);
        }
        DeviceFlowFailure::Failed(word(err))
    }
}

/// How long to sleep before the next poll: the interval the provider asked for, but never past
/// the end of the login. oauth2 checks its timeout only after waking, so sleeping a whole
/// interval would overrun `--auth-timeout` by up to that interval; waking just after the
/// deadline (a few milliseconds, so that oauth2's own clock agrees it has passed) ends the loop
/// on time.
fn poll_sleep(interval: Duration, give_up_at: Instant, now: Instant) -> Duration {
    const PAST_THE_DEADLINE: Duration = Duration::from_millis(20);
    interval.min(give_up_at.saturating_duration_since(now) + PAST_THE_DEADLINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_never_sleeps_past_the_deadline() {
        let now = Instant::now();
        let five = Duration::from_secs(5);
        // Plenty of time: the provider's interval.
        assert_eq!(poll_sleep(five, now + Duration::from_secs(60), now), five);
        // 1.5 s left of the login: wake just after it ends, not 3.5 s later.
        let sleep = poll_sleep(five, now + Duration::from_millis(1500), now);
        assert!(sleep > Duration::from_millis(1500) && sleep < Duration::from_millis(1600));
        // Already past it.
        assert!(poll_sleep(five, now, now + Duration::from_secs(1)) < Duration::from_millis(100));
    }
}
