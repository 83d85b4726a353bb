//! What a redirect to the login listener, or a line pasted in its place, means for the login in
//! progress: its authorization code, the provider's refusal, or something to refuse or ignore
//! while the wait goes on.
//!
//! Both sources of a code (the browser's redirect, served by `listener.rs`, and the text the user
//! pastes, read by `paste.rs`) are judged here, by the same rules: the `state` is checked first
//! and in constant time, so nothing that lacks this login's state can end it; then the `iss`
//! parameter (RFC 9207), which must name the provider the login went to when it is present, and
//! must be present when the provider's discovery document says it sends it; and a provider
//! error becomes one line with a next step. A relayed login's line (`relay_line.rs`) is judged
//! the same way, and its redirect URI must be this login's but for the port. There is no I/O here
//! but the notices `settle` prints on stderr.

use crate::config::RedirectUri;
use crate::error::{Exit, fail};
use crate::log::notice;
use crate::login::relay_line;
use crate::secret::Secret;
use crate::text::printable_brief;
use url::Url;

/// What the authorization response of this login must carry.
#[derive(Clone)]
pub struct ExpectedResponse {
    /// The `state` sent with the authorization request.
    state: String,
    /// The issuer the request went to, and whether it announced the `iss` parameter
    /// (`authorization_response_iss_parameter_supported`); `None`: no issuer to compare with.
    issuer: Option<(String, bool)>,
    /// The redirect URI the request named, which a relayed line's must match but for the port;
    /// `None`: any loopback http redirect URI.
    redirect: Option<RedirectUri>,
}

/// The authorization response of this login, as far as the code exchange (or, on the machine
/// of a relayed login's browser, the relay line) needs it.
#[derive(Debug)]
pub struct AuthorizationResponse {
    pub code: Secret,
    /// The `iss` parameter as the response carried it (RFC 9207); already checked when the login
    /// knows its issuer.
    pub iss: Option<String>,
    /// The redirect URI the code was issued for when it is not the one this login sent: a
    /// relayed login, whose browser was redirected to another kubecred's listener. The exchange
    /// must name this one.
    pub relayed_redirect_uri: Option<RedirectUri>,
}

impl ExpectedResponse {
    /// For a login at `issuer` (as its discovery document spells it), which sends the `iss`
    /// parameter on every authorization response when `iss_parameter_supported`.
    pub fn new(state: &str, issuer: &str, iss_parameter_supported: bool) -> ExpectedResponse {
        ExpectedResponse {
            state: state.to_string(),
            issuer: Some((issuer.to_string(), iss_parameter_supported)),
            redirect: None,
        }
    }

    /// The same, for a request that named `redirect` as its redirect URI.
    pub fn redirected_to(mut self, redirect: &RedirectUri) -> ExpectedResponse {
        self.redirect = Some(redirect.clone());
        self
    }
}

/// Only a state to check: for callers (and tests) that know no issuer.
impl From<&str> for ExpectedResponse {
    fn from(state: &str) -> ExpectedResponse {
        ExpectedResponse {
            state: state.to_string(),
            issuer: None,
            redirect: None,
        }
    }
}

/// What a callback (from the browser or pasted) amounts to.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The authorization code of our login.
    Code(AuthorizationResponse),
    /// Not from our login: state missing or different. Ignored, with a notice.
    Refused(&'static str),
    /// The provider's error for our login (`error=access_denied&error_description=...`).
    Denied {
        error: String,
        description: Option<String>,
    },
    /// Our state, but neither a code nor an error.
    Incomplete,
    /// A relay line that cannot serve this login (another version, a redirect URI that is not
    /// this login's): ignored, with a notice saying why.
    Unusable(String),
    /// Our state, but the `iss` parameter names another issuer (`Some`), or is missing although
    /// the provider announced it (`None`): a mix-up attack or a misconfiguration (RFC 9207).
    WrongIssuer(Option<String>),
}

/// Whether a pasted URL must carry the login's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateRule {
    /// While the listener waits, a URL must prove it belongs to this login.
    Required,
    /// `authcode-keyboard`: providers that show the code on a page send no state with it.
    IfPresent,
}

/// What a pasted line amounts to; `None` for a blank line.
///
/// A URL (http(s), or any URL with a query) is read like the browser's callback; anything else
/// is taken as the bare code, which is what providers' "copy this code" pages show.
pub(crate) fn interpret_pasted(
    line: &str,
    expected: &ExpectedResponse,
    rule: StateRule,
) -> Option<Verdict> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    if let Some(relayed) = relay_line::parse(line) {
        return Some(match relayed {
            Ok(relayed) => relayed_verdict(&relayed, expected),
            Err(why) => Verdict::Unusable(why),
        });
    }
    if let Ok(url) = Url::parse(line) {
        // `Url::parse` also accepts `abc:def`, which could be a code: only a real redirect counts.
        if url.query().is_some() || matches!(url.scheme(), "http" | "https") {
            return Some(classify(url.query_pairs(), expected, rule));
        }
    }
    if line.contains(char::is_whitespace) {
        // Codes are single words (RFC 6749 §A.11); this is something else pasted by mistake.
        return Some(Verdict::Incomplete);
    }
    Some(Verdict::Code(AuthorizationResponse {
        code: Secret::new(line),
        iss: None,
        relayed_redirect_uri: None,
    }))
}

/// What a relay line means for this login: read like a redirect that must carry the state,
/// and, for a code, the redirect URI it was issued for, which must be this login's but for the
/// port (RFC 8252 §7.3: the other kubecred listened where it could).
fn relayed_verdict(relayed: &relay_line::Relayed, expected: &ExpectedResponse) -> Verdict {
    match classify(relayed.pairs(), expected, StateRule::Required) {
        Verdict::Code(mut response) => {
            match relayed_redirect(relayed.redirect_uri.as_deref(), expected.redirect.as_ref()) {
                Ok(redirect) => {
                    response.relayed_redirect_uri = Some(redirect);
                    Verdict::Code(response)
                }
                Err(why) => Verdict::Unusable(why),
            }
        }
        other => other,
    }
}

/// The redirect URI of a relay line, if it can stand for `sent`: http on a loopback host, and
/// the same text as `sent` (when known) but for the port.
fn relayed_redirect(raw: Option<&str>, sent: Option<&RedirectUri>) -> Result<RedirectUri, String> {
    let raw = raw.ok_or("the relay line names no redirect_uri")?;
    let shown = || printable_brief(raw, 200).into_owned();
    let relayed = RedirectUri::parse(raw)
        .map_err(|_| format!("its redirect_uri {:?} is not a URL", shown()))?;
    if relayed.url().scheme() != "http" || !crate::config::is_loopback_host(relayed.url()) {
        return Err(format!(
            "its redirect_uri {:?} is not an http address on this machine's loopback",
            shown()
        ));
    }
    if let Some(sent) = sent
        && relayed.without_port() != sent.without_port()
    {
        return Err(format!(
            "its redirect_uri {:?} is not this login's ({sent}) with another port: the line was printed for another login",
            shown()
        ));
    }
    Ok(relayed)
}

/// Where a verdict came from, for the wording of the notices.
#[derive(Clone, Copy)]
pub(crate) enum Origin {
    Browser,
    Paste,
}

/// Ends the wait with the code or the provider's error, or tells the user why a callback was
/// ignored and keeps waiting (`Ok(None)`).
pub(crate) fn settle(
    verdict: Verdict,
    origin: Origin,
) -> anyhow::Result<Option<AuthorizationResponse>> {
    let what = match origin {
        Origin::Browser => "a login callback",
        Origin::Paste => "the pasted text",
    };
    match verdict {
        Verdict::Code(code) => Ok(Some(code)),
        Verdict::Denied { error, description } => {
            Err(provider_refused(&error, description.as_deref()))
        }
        Verdict::Refused(why) => {
            notice(format!(
                "refused {what}: {why} (it belongs to another login, or is forged); still waiting for this login"
            ));
            Ok(None)
        }
        Verdict::Incomplete => {
            notice(format!(
                "ignored {what}: it holds neither a code nor an error; still waiting for this login"
            ));
            Ok(None)
        }
        Verdict::Unusable(why) => {
            notice(format!(
                "ignored {what}: {why}; still waiting for this login"
            ));
            Ok(None)
        }
        Verdict::WrongIssuer(found) => {
            let found = match found {
                Some(iss) => format!("names the issuer {:?}", printable_brief(&iss, 200)),
                None => "carries no iss parameter, which this provider announces".to_string(),
            };
            Err(fail(
                Exit::Login,
                format!(
                    "refused the login response: it {found} (RFC 9207), so it may come from another provider (a mix-up attack); check --issuer-url, then run `kubecred login` again"
                ),
            ))
        }
    }
}

/// Classifies the parameters of a redirect. The state is checked first, so that an error
/// callback with a wrong state is refused like any forged callback and cannot end the login.
pub(crate) fn classify<'a>(
    params: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
    expected: &ExpectedResponse,
    rule: StateRule,
) -> Verdict {
    let (mut code, mut state, mut error, mut description, mut iss) = (None, None, None, None, None);
    for (name, value) in params {
        // The first occurrence wins; a repeated parameter cannot override a checked one.
        let slot = match name.as_ref() {
            "code" => &mut code,
            "state" => &mut state,
            "error" => &mut error,
            "error_description" => &mut description,
            "iss" => &mut iss,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value.into_owned());
        }
    }
    match (&state, rule) {
        (None, StateRule::Required) => return Verdict::Refused("it carries no state"),
        (None, StateRule::IfPresent) => {}
        (Some(state), _) if !same_state(state, &expected.state) => {
            return Verdict::Refused("its state is not the one this login sent");
        }
        (Some(_), _) => {}
    }
    // RFC 9207 §2.4: a present iss must match, whatever the provider announced; a missing one
    // is refused only from a provider that announced it. Error responses included.
    if let Some((issuer, announced)) = &expected.issuer {
        match &iss {
            Some(iss) if iss != issuer => return Verdict::WrongIssuer(Some(iss.clone())),
            None if *announced => return Verdict::WrongIssuer(None),
            _ => {}
        }
    }
    if let Some(error) = error {
        return Verdict::Denied { error, description };
    }
    match code {
        Some(code) if !code.is_empty() => Verdict::Code(AuthorizationResponse {
            code: Secret::new(code),
            iss,
            relayed_redirect_uri: None,
        }),
        _ => Verdict::Incomplete,
    }
}

/// Compares in constant time, so the listener's timing says nothing about the expected state.
fn same_state(given: &str, expected: &str) -> bool {
    !expected.is_empty()
        && given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// The error for `error=...` on the callback, with a next step that fits the error code
/// (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6).
pub(crate) fn provider_refused(error: &str, description: Option<&str>) -> anyhow::Error {
    let next = match error {
        "access_denied" => {
            "if you did not cancel it, check that your account may use this client (or log in as another user), then run `kubecred login` to try again"
        }
        "invalid_scope" => "check the scopes (--scope) against what the client may request",
        "unauthorized_client" | "unsupported_response_type" | "invalid_request" => {
            "the client is not set up for this login at the provider: check --client-id, --redirect-url and the redirect URIs registered for the client"
        }
        "login_required"
        | "consent_required"
        | "interaction_required"
        | "account_selection_required" => {
            "the provider needs you to interact: drop --prompt none, then run `kubecred login`"
        }
        "server_error" | "temporarily_unavailable" => {
            "the provider has a problem; try again in a minute"
        }
        _ => "run `kubecred login` to try again",
    };
    let detail = description
        .filter(|text| !text.trim().is_empty())
        .map(|text| format!(" ({})", printable_brief(text, 300)))
        .unwrap_or_default();
    fail(
        Exit::Login,
        format!(
            "the identity provider refused the login: {}{detail}; {next}",
            printable_brief(error, 100)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = "state-xyz";

    fn code_of(verdict: Option<Verdict>) -> String {
        match verdict {
            Some(Verdict::Code(response)) => response.code.expose().to_string(),
            other => panic!("expected a code, got {other:?}"),
        }
    }
    #[test]
    fn pasted_lines_are_interpreted() {
        assert!(interpret_pasted("   ", &STATE.into(), StateRule::Required).is_none());
        assert_eq!(
            code_of(interpret_pasted(
                "abc:def",
                &STATE.into(),
                StateRule::Required
            )),
            "abc:def"
        );
        let custom_scheme = format!("com.example.app:/cb?code=x&state={STATE}");
        assert_eq!(
            code_of(interpret_pasted(
                &custom_scheme,
                &STATE.into(),
                StateRule::Required
            )),
            "x"
        );
        assert!(matches!(
            interpret_pasted(
                "http://localhost/callback?code=x",
                &STATE.into(),
                StateRule::Required
            ),
            Some(Verdict::Refused(_))
        ));
        assert!(matches!(
            interpret_pasted(
                &format!("http://localhost/cb?state={STATE}"),
                &STATE.into(),
                StateRule::Required
            ),
            Some(Verdict::Incomplete)
        ));
    }

    fn verdict(query: &str, expected: &ExpectedResponse) -> Verdict {
        classify(
            url::form_urlencoded::parse(query.as_bytes()),
            expected,
            StateRule::Required,
        )
    }

    #[test]
    fn the_iss_parameter_must_name_the_issuer_when_present_or_announced() {
        const ISSUER: &str = "https://op.example/realm";
        let announced = ExpectedResponse::new(STATE, ISSUER, true);
        let silent = ExpectedResponse::new(STATE, ISSUER, false);
        let ours = format!("code=c&state={STATE}&iss=https%3A%2F%2Fop.example%2Frealm");
        let theirs = format!("code=c&state={STATE}&iss=https%3A%2F%2Fevil.example");
        let without = format!("code=c&state={STATE}");
        for expected in [&announced, &silent] {
            assert!(matches!(verdict(&ours, expected), Verdict::Code(_)));
            assert!(matches!(
                verdict(&theirs, expected),
                Verdict::WrongIssuer(Some(iss)) if iss == "https://evil.example"
            ));
        }
        assert!(matches!(
            verdict(&without, &announced),
            Verdict::WrongIssuer(None)
        ));
        assert!(matches!(verdict(&without, &silent), Verdict::Code(_)));
        // An error response from another issuer is refused too, not shown as the provider's.
        let error = format!("error=access_denied&state={STATE}&iss=https%3A%2F%2Fevil.example");
        assert!(matches!(
            verdict(&error, &announced),
            Verdict::WrongIssuer(Some(_))
        ));
        // The state still comes first: a forged callback is ignored, whatever its iss.
        assert!(matches!(
            verdict("code=c&iss=https%3A%2F%2Fevil.example", &announced),
            Verdict::Refused(_)
        ));
        let err = settle(verdict(&theirs, &announced), Origin::Browser).unwrap_err();
        let text = crate::error::one_line(&err);
        assert!(
            text.contains("names the issuer \"https://evil.example\" (RFC 9207)"),
            "{text}"
        );
        assert_eq!(crate::error::exit_code_of(&err), Exit::Login);
    }

    /// A login at the test issuer that sent `http://localhost:8000/callback`.
    fn relaying_login() -> ExpectedResponse {
        ExpectedResponse::new(STATE, "https://op.example", false)
            .redirected_to(&RedirectUri::parse("http://localhost:8000/callback").unwrap())
    }

    fn relay(state: &str, redirect: &str, iss: Option<&str>) -> String {
        relay_line::render(
            state,
            &Secret::new("the-code"),
            &RedirectUri::parse(redirect).unwrap(),
            iss,
        )
    }

    #[test]
    fn a_relay_line_gives_the_code_and_the_redirect_it_was_issued_for() {
        for rule in [StateRule::Required, StateRule::IfPresent] {
            let line = relay(STATE, "http://localhost:49152/callback", None);
            let Some(Verdict::Code(response)) = interpret_pasted(&line, &relaying_login(), rule)
            else {
                panic!("{line} not taken");
            };
            assert_eq!(response.code.expose(), "the-code");
            assert_eq!(
                response.relayed_redirect_uri.unwrap().as_str(),
                "http://localhost:49152/callback"
            );
        }
        // A pasted address is no relay: the redirect URI stays the one sent.
        let pasted = format!("http://localhost:8000/callback?code=c&state={STATE}");
        let Some(Verdict::Code(response)) =
            interpret_pasted(&pasted, &relaying_login(), StateRule::Required)
        else {
            panic!("{pasted} not taken");
        };
        assert!(response.relayed_redirect_uri.is_none());
    }

    #[test]
    fn a_relay_line_of_another_login_is_refused_and_the_wait_goes_on() {
        let other = relay("another-login", "http://localhost:49152/callback", None);
        for rule in [StateRule::Required, StateRule::IfPresent] {
            let verdict = interpret_pasted(&other, &relaying_login(), rule).unwrap();
            assert!(matches!(verdict, Verdict::Refused(_)), "{verdict:?}");
            assert!(settle(verdict, Origin::Paste).unwrap().is_none());
        }
        let stateless =
            "kubecred-relay:v1?code=c&redirect_uri=http%3A%2F%2Flocalhost%3A1%2Fcallback";
        assert!(matches!(
            interpret_pasted(stateless, &relaying_login(), StateRule::IfPresent),
            Some(Verdict::Refused("it carries no state"))
        ));
    }

    #[test]
    fn a_relay_line_whose_redirect_is_not_this_logins_is_unusable() {
        let unusable = |redirect: &str| match interpret_pasted(
            &relay(STATE, redirect, None),
            &relaying_login(),
            StateRule::Required,
        ) {
            Some(Verdict::Unusable(why)) => why,
            other => panic!("{redirect}: {other:?}"),
        };
        assert!(unusable("http://localhost:49152/other").contains("is not this login's"));
        assert!(unusable("http://127.0.0.1:49152/callback").contains("is not this login's"));
        assert!(unusable("https://localhost:49152/callback").contains("not an http address"));
        assert!(unusable("http://app.example:80/callback").contains("not an http address"));
        let without = format!("kubecred-relay:v1?state={STATE}&code=c");
        assert!(matches!(
            interpret_pasted(&without, &relaying_login(), StateRule::Required),
            Some(Verdict::Unusable(why)) if why.contains("names no redirect_uri")
        ));
        // A later version is named, and the wait goes on.
        let later = interpret_pasted(
            "kubecred-relay:v9?x",
            &relaying_login(),
            StateRule::Required,
        );
        assert!(matches!(&later, Some(Verdict::Unusable(why)) if why.contains("\"v9\"")));
        assert!(settle(later.unwrap(), Origin::Paste).unwrap().is_none());
    }

    #[test]
    fn a_relay_lines_iss_is_checked_like_a_redirects() {
        let line = relay(
            STATE,
            "http://localhost:1/callback",
            Some("https://evil.example"),
        );
        assert!(matches!(
            interpret_pasted(&line, &relaying_login(), StateRule::Required),
            Some(Verdict::WrongIssuer(Some(iss))) if iss == "https://evil.example"
        ));
        let ours = relay(
            STATE,
            "http://localhost:1/callback",
            Some("https://op.example"),
        );
        let Some(Verdict::Code(response)) =
            interpret_pasted(&ours, &relaying_login(), StateRule::Required)
        else {
            panic!("{ours} not taken");
        };
        assert_eq!(response.iss.as_deref(), Some("https://op.example"));
    }

    #[test]
    fn state_comparison() {
        assert!(same_state("abc", "abc"));
        assert!(!same_state("abd", "abc"));
        assert!(!same_state("ab", "abc"));
        assert!(!same_state("", ""));
    }
}
