//! What a redirect to the login listener, or a line pasted in its place, means for the login in
//! progress: its authorization code, the provider's refusal, or something to refuse or ignore
//! while the wait goes on.
//!
//! Both sources of a code (the browser's redirect, served by `listener.rs`, and the text the user
//! pastes, read by `paste.rs`) are judged here, by the same rules: the `state` is checked first
//! and in constant time, so nothing that lacks this login's state can end it; then the `iss`
//! parameter (RFC 9207), which must name the provider the login went to when it is present, and
//! must be present when the provider's discovery document says it sends it; and a provider
//! error becomes one line with a next step. There is no I/O here but the notices `settle`
//! prints on stderr.

use crate::error::{Exit, fail};
use crate::log::notice;
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
}

impl ExpectedResponse {
    /// For a login at `issuer` (as its discovery document spells it), which sends the `iss`
    /// parameter on every authorization response when `iss_parameter_supported`.
    pub fn new(state: &str, issuer: &str, iss_parameter_supported: bool) -> ExpectedResponse {
        ExpectedResponse {
            state: state.to_string(),
            issuer: Some((issuer.to_string(), iss_parameter_supported)),
        }
    }
}

/// Only a state to check: for callers (and tests) that know no issuer.
impl From<&str> for ExpectedResponse {
    fn from(state: &str) -> ExpectedResponse {
        ExpectedResponse {
            state: state.to_string(),
            issuer: None,
        }
    }
}

/// What a callback (from the browser or pasted) amounts to.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The authorization code of our login.
    Code(Secret),
    /// Not from our login: state missing or different. Ignored, with a notice.
    Refused(&'static str),
    /// The provider's error for our login (`error=access_denied&error_description=...`).
    Denied {
        error: String,
        description: Option<String>,
    },
    /// Our state, but neither a code nor an error.
    Incomplete,
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
    Some(Verdict::Code(Secret::new(line)))
}

/// Where a verdict came from, for the wording of the notices.
#[derive(Clone, Copy)]
pub(crate) enum Origin {
    Browser,
    Paste,
}

/// Ends the wait with the code or the provider's error, or tells the user why a callback was
/// ignored and keeps waiting (`Ok(None)`).
pub(crate) fn settle(verdict: Verdict, origin: Origin) -> anyhow::Result<Option<Secret>> {
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
        match iss {
            Some(iss) if iss != *issuer => return Verdict::WrongIssuer(Some(iss)),
            None if *announced => return Verdict::WrongIssuer(None),
            _ => {}
        }
    }
    if let Some(error) = error {
        return Verdict::Denied { error, description };
    }
    match code {
        Some(code) if !code.is_empty() => Verdict::Code(Secret::new(code)),
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
            Some(Verdict::Code(code)) => code.expose().to_string(),
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

    #[test]
    fn state_comparison() {
        assert!(same_state("abc", "abc"));
        assert!(!same_state("abd", "abc"));
        assert!(!same_state("ab", "abc"));
        assert!(!same_state("", ""));
    }
}
