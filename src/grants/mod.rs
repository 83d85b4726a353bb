//! Obtaining tokens from the identity provider: the OAuth 2.0 grants, built on the `oauth2`
//! crate (request encoding, client authentication, PKCE, device-code polling) so that kubecred
//! only adds what is its own: OIDC ID-token verification, expiry rules, and the login UX.
//!
//! [`ProviderClient`] is the provider as the grants see it; each grant is a file of its own
//! (`client_credentials.rs`, `refresh.rs`, `authcode.rs`, `device.rs`; `revoke.rs` for logout), and `errors.rs` words
//! the provider's refusals (`device_refusal.rs` tells a refused device flow apart); `answers.rs` mends providers' token answers before `oauth2` reads
//! them. Everything here talks to the network: it runs only after the cache
//! missed and the entry's lock is held (see `acquire/`).

mod answers;
mod authcode;
pub(crate) mod ci_token;
mod client_auth;
mod client_credentials;
mod device;
mod device_refusal;
mod errors;
mod federated;
mod password;
mod refresh;
mod revoke;
mod token_exchange;

pub use federated::federated_token;
pub use refresh::RefreshOutcome;
pub use revoke::Revocation;

use crate::clock::Clock;
use crate::config::{BrowserChoice, ClientAuth, Config, Grant, RequestTargets};
use crate::error::{Exit, fail};
use crate::http::{OAuthCall, Replay};
use crate::oidc::Provider;
use crate::oidc::device_flow_memory;
use crate::presence::Presence;
use crate::secret::Secret;
use crate::tokens::{Identity, Tokens, access_token_expiry};
use chrono::{DateTime, Utc};
use device::DeviceFlowFailure;
use device_refusal::Step;
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthUrl, Client, ClientId, ClientSecret, DeviceAuthorizationUrl, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, ExtraTokenFields, Scope, StandardRevocableToken,
    StandardTokenResponse, TokenResponse, TokenUrl,
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

/// The provider as the grants talk to it: the HTTP client, the discovered provider (its
/// metadata and keys), our settings and the clock. Building one runs discovery (from the disk
/// cache when it is fresh), so it is built only after the cache missed.
pub struct ProviderClient<'a> {
    config: &'a Config,
    clock: &'a dyn Clock,
    http: crate::http::Client,
    provider: Provider,
    /// Whether a login has shown a person something to act on (a browser tab, a URL, a device
    /// code): what the failed-login cool-down holds off ([`Self::asked_a_person`]).
    asked_a_person: std::cell::Cell<bool>,
    /// What each request says about its target, as the settings decide it.
    targets: RequestTargets,
}

impl<'a> ProviderClient<'a> {
    pub fn new(config: &'a Config, clock: &'a dyn Clock) -> anyhow::Result<ProviderClient<'a>> {
        // Retries stay inside the lock timeout, less the slack it keeps for our own cache writes,
        // so that the kubectl processes waiting on this entry never give up before we do.
        let retry_window = config
            .cache
            .lock_timeout
            .saturating_sub(crate::config::LOCK_TIMEOUT_SLACK);
        let http = crate::http::client(&config.http, retry_window)?;
        let provider = match &config.token_endpoint {
            Some(endpoint) => Provider::token_endpoint_only(&config.issuer, endpoint.clone()),
            None => Provider::discover(
                &http,
                &config.issuer,
                &config.issuer_as_given,
                &config.cache.dir,
                clock.now(),
            )?,
        };
        Ok(ProviderClient {
            config,
            clock,
            http,
            provider,
            asked_a_person: std::cell::Cell::new(false),
            targets: config.request_targets(),
        })
    }

    /// Whether a login got as far as a person: a browser opened (or its URL shown, with a
    /// terminal to paste into), a device code shown. A login that failed before — the provider
    /// refused the device authorization request, a setting is wrong, nothing could open — asked
    /// nobody, so there is no tab storm for a cool-down to hold off, and the next run must say
    /// the real cause (`acquire::login_step::run_grant`).
    pub fn asked_a_person(&self) -> bool {
        self.asked_a_person.get()
    }

    /// Notes that a login is now before a person ([`Self::asked_a_person`]).
    fn asking_a_person(&self) {
        self.asked_a_person.set(true);
    }

    /// The HTTP client oauth2 sends `what` through, every successful answer mended first
    /// (`answers.rs`).
    fn oauth_call(&self, what: &'static str, replay: Replay) -> OAuthCall<'_> {
        self.http
            .oauth(what, replay)
            .rewriting_successful_answers(answers::whole_seconds_as_numbers)
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
        // Without a secret, `oauth2` sends `client_id` in the body: what assertions need too
        // (`client_assertion_params`, added per request).
        if let ClientAuth::Secret { secret, method } = &self.config.client.auth {
            client = client
                .set_client_secret(ClientSecret::new(secret.expose().to_string()))
                .set_auth_type(self.secret_auth_type(*method));
        }
        client
    }

    /// The extra parameters of token requests: the target parameters the settings name
    /// (`config::RequestTargets`), with the client assertion when the client authenticates by
    /// one (a new one per request).
    fn token_params(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut params = self.client_assertion_params()?;
        params.extend(self.targets.token.iter().cloned());
        Ok(params)
    }

    /// The scopes a login (or a grant that names scopes) asks for.
    fn scopes(&self) -> impl Iterator<Item = Scope> + '_ {
        self.targets.scopes.iter().cloned().map(Scope::new)
    }

    /// Turns a token response into [`Tokens`], verifying the ID token when there is one.
    /// `requested_at` is taken before the request went out, so that `expires_in` counted from it
    /// can only make the expiry earlier than the real one, never later. `previous` is, for a
    /// refresh, what the entry held: its refresh token (kept when none is returned) and the
    /// identity the new ID token must repeat.
    fn tokens_from(
        &self,
        response: OidcTokenResponse,
        nonce: Option<&str>,
        previous: Option<Previous<'_>>,
        requested_at: DateTime<Utc>,
    ) -> anyhow::Result<Tokens> {
        let original = previous.and_then(|p| p.identity);
        let now = self.clock.now();
        let access = response.access_token().secret().to_string();
        // An empty token would be cached and printed, and kubectl would fail with it for the
        // token's whole lifetime: it is the provider's error, and nothing is kept.
        if access.trim().is_empty() {
            return Err(empty_token(&self.config.issuer_as_given, "access_token"));
        }
        if let Some(raw) = &response.extra_fields().id_token
            && raw.trim().is_empty()
        {
            return Err(empty_token(&self.config.issuer_as_given, "id_token"));
        }
        let access_expiry = access_token_expiry(&access, response.expires_in(), requested_at);
        let (id_token, id_token_expiry, identity) = match &response.extra_fields().id_token {
            Some(raw) => {
                let id_token = Secret::new(raw.clone());
                let claims = self.provider.verify_id_token(
                    &self.http,
                    &id_token,
                    &self.config.client.id,
                    nonce,
                    original,
                    now,
                )?;
                crate::debug!(
                    1,
                    "ID token for subject {:?}, valid until {}",
                    claims.sub,
                    claims.exp
                );
                (Some(id_token), Some(claims.exp), Some(claims.identity))
            }
            // A refresh need not return an ID token (§12.2); the login's identity still binds
            // the next one that does.
            None => (None, None, original.cloned()),
        };
        // A provider may keep the refresh token unchanged and omit it from the response.
        let refresh_token = response
            .refresh_token()
            .map(|token| Secret::new(token.secret().to_string()))
            .or_else(|| previous.map(|p| p.refresh_token.clone()));
        Ok(Tokens {
            id_token,
            id_token_expiry,
            access_token: Some(Secret::new(access)),
            access_token_expiry: access_expiry,
            refresh_token,
            obtained_at: requested_at,
            identity,
            granted_scope: response
                .scopes()
                .map(|scopes| scopes.iter().map(|s| s.to_string()).collect()),
        })
    }
}

fn empty_token(issuer: &str, field: &str) -> anyhow::Error {
    crate::error::fail(
        crate::error::Exit::Provider,
        format!(
            "{issuer} returned a token response with an empty {field}; the provider is misbehaving — try again later, or tell its administrators"
        ),
    )
}

/// What a refresh starts from: the refresh token sent, and the identity of the entry's login.
#[derive(Clone, Copy)]
struct Previous<'a> {
    refresh_token: &'a Secret,
    identity: Option<&'a Identity>,
}

impl ProviderClient<'_> {
    /// Verifies an ID token another program obtained for this client (`convert-kubeconfig`
    /// carries it over): see [`Provider::verify_carried_id_token`].
    pub fn verify_carried_id_token(
        &self,
        token: &Secret,
    ) -> anyhow::Result<crate::oidc::CarriedIdToken> {
        self.provider.verify_carried_id_token(
            &self.http,
            token,
            &self.config.client.id,
            self.clock.now(),
        )
    }

    /// Runs the configured grant (not the refresh).
    /// The logins of a person ask `presence` how to reach them.
    pub fn obtain(&self, presence: &Presence) -> anyhow::Result<Tokens> {
        match self.config.grant {
            Grant::ClientCredentials => self.client_credentials(),
            Grant::Authcode if self.config.grant_is_automatic => self.automatic_login(presence),
            Grant::Authcode => self.authcode(presence),
            Grant::AuthcodeKeyboard => self.authcode_keyboard(presence),
            Grant::DeviceCode => self.device_code(presence),
            Grant::TokenExchange => self.token_exchange(),
            Grant::Password => self.password(),
            // Never sent to a provider: `acquire` calls `federated_token` before building one.
            Grant::FederatedToken => federated_token(self.config, self.clock),
            // A cloud's token comes from the cloud (`clouds/`), which `acquire` asks instead.
            Grant::Google => Err(fail(
                Exit::Input,
                "--grant-type google takes no OpenID provider's grant",
            )),
        }
    }
}

impl ProviderClient<'_> {
    /// `--grant-type auto`: the browser login, unless no browser can open here (an SSH session
    /// without a display, no launcher) and the provider offers the device flow, which works from
    /// a browser anywhere; then that, said in one line. Decided after discovery, so that the
    /// cache key (which names `authcode` for auto) is the same wherever the login happens.
    ///
    /// Where the provider refuses the device flow (at the start, or at the poll after the person
    /// signed in: `device_refusal.rs`), or refused it lately (`oidc::device_flow_memory`), and a
    /// terminal can take a pasted code, the browser login goes on with the code pasted (or
    /// relayed), said in one line, within the same --auth-timeout; with no terminal, the
    /// refusal is the error, saying where a login can happen.
    fn automatic_login(&self, presence: &Presence) -> anyhow::Result<Tokens> {
        let device_flow_offered = self
            .provider
            .metadata
            .device_authorization_endpoint
            .is_some();
        // The device flow takes a client secret or none (config refuses the others with it).
        let client_fits = matches!(
            self.config.client.auth,
            ClientAuth::None | ClientAuth::Secret { .. }
        );
        let why = match choose_automatic_login(
            presence,
            &self.config.login.browser,
            device_flow_offered,
            client_fits,
        ) {
            AutoLogin::Browser => return self.authcode(presence),
            AutoLogin::Pasted {
                no_browser,
                because,
            } => {
                crate::debug!(
                    1,
                    "no browser can open here ({no_browser}), and the device flow is not an option ({because}): the browser login, with the code pasted"
                );
                return self.authcode(presence);
            }
            AutoLogin::DeviceFlow { no_browser } => no_browser,
        };
        if let Some(refusal) = device_flow_memory::remembered(
            &self.config.cache.dir,
            &self.config.issuer,
            &self.config.client.id,
            self.clock.now(),
        ) {
            return self.after_a_remembered_refusal(&why, &refusal, presence);
        }
        let deadline = Instant::now() + self.config.login.auth_timeout;
        let issuer = &self.provider.metadata.issuer;
        let announce = format!(
            "no browser can open here ({why}), so --grant-type auto uses the device flow, which {issuer} offers; pass --grant-type authcode-keyboard (paste the code) or authcode to choose otherwise"
        );
        match self.device_flow(Some(&announce), presence) {
            Ok(tokens) => Ok(tokens),
            Err(DeviceFlowFailure::Failed(err)) => Err(err),
            Err(DeviceFlowFailure::Refused(refused)) => {
                self.after_a_device_flow_refusal(&why, refused, presence, deadline)
            }
        }
    }

    /// `auto` where no browser can open (`why`) and the provider refused the device flow for
    /// this client lately (`refusal`): the browser login with the code pasted, where a terminal
    /// can take it.
    fn after_a_remembered_refusal(
        &self,
        why: &str,
        refusal: &device_flow_memory::DeviceFlowRefusal,
        presence: &Presence,
    ) -> anyhow::Result<Tokens> {
        let issuer = &self.provider.metadata.issuer;
        let ago = refusal
            .refused_at()
            .and_then(|at| (self.clock.now() - at).to_std().ok())
            .map(crate::duration::display_elapsed)
            .unwrap_or_else(|| "lately".into());
        let refused = format!(
            "{issuer} refused the device flow for this client {ago} ago ({})",
            refusal.said
        );
        if !presence.stdin() {
            return Err(fail(
                Exit::Login,
                format!("no browser can open here ({why}), {refused}, and {NO_PASTE_HERE}"),
            ));
        }
        crate::log::notice(format!(
            "no browser can open here ({why}), and {refused}, so --grant-type auto uses the browser login with the code pasted here; pass --grant-type device-code to try the device flow again"
        ));
        self.authcode(presence)
    }

    /// `auto` where no browser can open (`why`) and the provider just refused the device flow:
    /// the browser login with the code pasted, within the same `deadline`, where a terminal can
    /// take it; else the refusal, saying where a login can happen.
    fn after_a_device_flow_refusal(
        &self,
        why: &str,
        refused: device_refusal::DeviceFlowRefused,
        presence: &Presence,
        deadline: Instant,
    ) -> anyhow::Result<Tokens> {
        let issuer = &self.provider.metadata.issuer;
        if !presence.stdin() {
            let why_not = format!("no browser can open here ({why}) and {NO_PASTE_HERE}");
            return Err(refused.into_error(issuer, &self.config.client.id, Some(&why_not)));
        }
        let (said, meaning) = (&refused.said, refused.meaning);
        let remembered_for = format!("{} days", device_flow_memory::REMEMBERED_FOR.num_days());
        crate::log::notice(match refused.step {
            Step::Authorization => format!(
                "no browser can open here ({why}), and {issuer} refused the device flow for this client ({said}): {meaning}; so --grant-type auto goes on with the browser login, the code pasted here (for the next {remembered_for} too)"
            ),
            Step::Poll => format!(
                "{issuer} refused the device login after you signed in ({said}): {meaning}; so --grant-type auto goes on with the browser login, the code pasted here (for the next {remembered_for} too)"
            ),
        });
        self.authcode_until(deadline, presence)
    }
}

/// How `--grant-type auto` logs in, before any refusal of the device flow is known: decided
/// from who is here and what the provider offers (`choose_automatic_login`).
#[derive(Debug, PartialEq, Eq)]
enum AutoLogin {
    /// A browser opens here (or the user's `--browser-command`, or `--skip-open-browser`'s
    /// printed URL): the browser login.
    Browser,
    /// No browser opens here and the device flow is not an option (`because`): the browser
    /// login, its code pasted or relayed.
    Pasted {
        no_browser: String,
        because: &'static str,
    },
    /// No browser opens here, and the provider offers the device flow, which works from a
    /// browser anywhere.
    DeviceFlow { no_browser: String },
}

/// `--grant-type auto`'s choice for a session (`presence`) and a browser setting, where the
/// provider offers the device flow or not and the client can take it or not.
fn choose_automatic_login(
    presence: &Presence,
    browser: &BrowserChoice,
    device_flow_offered: bool,
    client_fits: bool,
) -> AutoLogin {
    let no_browser = match browser {
        BrowserChoice::System => presence.system_browser_cannot_open(),
        _ => None,
    };
    let Some(no_browser) = no_browser else {
        return AutoLogin::Browser;
    };
    match (device_flow_offered, client_fits) {
        (true, true) => AutoLogin::DeviceFlow { no_browser },
        (true, false) => AutoLogin::Pasted {
            no_browser,
            because: "the client authenticates with a key or an assertion",
        },
        (false, _) => AutoLogin::Pasted {
            no_browser,
            because: "the provider's discovery lists no device_authorization_endpoint",
        },
    }
}

/// Why a login that needs a pasted code cannot happen in this session, and where it can.
const NO_PASTE_HERE: &str = "this session cannot take a pasted code (stdin is not a terminal kubectl handed over); run `kubecred login` with the same flags in a terminal, or set interactiveMode: IfAvailable in the kubeconfig's exec stanza";

/// A token endpoint answer parsed as the oauth2 client parses it, with the expiry worked out and
/// the OAuth error worded: the `token_response` fuzz target (`crate::fuzzing`).
#[cfg(any(test, fuzzing))]
pub(crate) fn fuzz_token_response(data: &[u8], now: DateTime<Utc>) {
    let mended = answers::whole_seconds_as_numbers(data.to_vec());
    if let Ok(response) = serde_json::from_slice::<OidcTokenResponse>(&mended) {
        let _ = access_token_expiry(response.access_token().secret(), response.expires_in(), now);
        let _ = response.refresh_token().map(|token| token.secret().len());
    }
    if let Ok(error) = serde_json::from_slice::<BasicErrorResponse>(data) {
        let _ = errors::describe_server_error(&error);
    }
}

/// A device authorization answer parsed as the oauth2 client parses it, and the instructions
/// rendered from it: the `device_response` fuzz target (`crate::fuzzing`).
#[cfg(any(test, fuzzing))]
pub(crate) fn fuzz_device_response(data: &[u8]) {
    if let Ok(details) = serde_json::from_slice::<oauth2::StandardDeviceAuthorizationResponse>(data)
    {
        let complete = details
            .verification_uri_complete()
            .map(|uri| uri.secret().to_string());
        let _ = crate::presence::device_display::render(
            details.verification_uri().as_str(),
            details.user_code().secret(),
            complete.as_deref(),
            details.expires_in(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presence::callers::*;

    /// `--grant-type auto`'s login, per caller: the browser where one opens, else the device
    /// flow where the provider offers it to this client, else the browser login with the code
    /// pasted (which the preflight refuses where nobody can paste or see it).
    #[test]
    fn auto_logs_each_caller_in_where_a_browser_or_a_code_reaches_them() {
        let system = BrowserChoice::System;
        let command = BrowserChoice::Command(vec!["open-it".into()]);
        let device = |why: &str| AutoLogin::DeviceFlow {
            no_browser: why.into(),
        };
        let pasted = |why: &str, because| AutoLogin::Pasted {
            no_browser: why.into(),
            because,
        };
        let ssh = "an SSH session, DISPLAY and WAYLAND_DISPLAY unset";
        let no_launcher = "no browser launcher installed: xdg-open";
        let no_endpoint = "the provider's discovery lists no device_authorization_endpoint";
        let keyed = "the client authenticates with a key or an assertion";
        let table = [
            (
                "terminal on a desktop",
                terminal_on_a_desktop(),
                AutoLogin::Browser,
            ),
            ("IDE on a desktop", ide_on_a_desktop(), AutoLogin::Browser),
            ("SSH terminal", ssh_terminal(), device(ssh)),
            (
                "IDE, no launcher",
                ide_without_a_launcher(),
                device(no_launcher),
            ),
        ];
        for (caller, presence, expected) in table {
            assert_eq!(
                choose_automatic_login(&presence, &system, true, true),
                expected,
                "{caller}"
            );
            // A --browser-command always opens: the browser login, wherever this is.
            assert_eq!(
                choose_automatic_login(&presence, &command, true, true),
                AutoLogin::Browser,
                "{caller} with --browser-command"
            );
        }
        let presence = ssh_terminal();
        assert_eq!(
            choose_automatic_login(&presence, &system, false, true),
            pasted(ssh, no_endpoint)
        );
        assert_eq!(
            choose_automatic_login(&presence, &system, true, false),
            pasted(ssh, keyed)
        );
    }
}
