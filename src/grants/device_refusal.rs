//! When the provider refuses the device flow itself: not a person who said no, not an outage,
//! but a client the device authorization grant is not allowed for, or a policy that blocks it
//! (identity teams switch it off: device-code phishing). `--grant-type auto` then goes on with
//! the browser login whose code is pasted, and remembers the refusal (`oidc::device_flow_memory`);
//! `--grant-type device-code` says what happened and what works instead.
//!
//! What counts, at the device authorization request and at the poll after the person signed
//! in (a policy applied then, as Entra's Conditional Access does):
//! - `unauthorized_client` (RFC 6749 §5.2: the client may not use this grant) — Keycloak: "Client
//!   is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for
//!   the client."; Okta: "The client is not authorized to use the provided grant type…";
//! - `unsupported_grant_type` (the token endpoint takes no device code grant);
//! - `invalid_request` whose description says the grant is not allowed, permitted or enabled —
//!   oidc-provider: "urn:ietf:params:oauth:grant-type:device_code is not allowed for this client";
//! - at the device authorization request only: `invalid_client` (the client is not accepted for
//!   this flow: Okta's web applications, Entra's app registrations without public client flows)
//!   and `access_denied` (no person has been asked yet: it can only be a policy);
//! - at the poll, `access_denied` only when its description names a policy or a block (otherwise
//!   it is the person's "deny", RFC 8628 §3.5);
//! - Microsoft Entra ID's codes, whatever the `error` beside them, read from the
//!   `error_description` ("AADSTS53003: …"), as listed in Microsoft's "Microsoft Entra
//!   authentication and authorization error codes" (learn.microsoft.com/entra/identity-platform/
//!   reference-error-codes):
//!   - AADSTS53003 BlockedByConditionalAccess: what a Conditional Access policy on the
//!     "Authentication flows: device code flow" condition answers (Microsoft's recommended
//!     block; Azure/azure-cli#32420 shows "Error Code: 53003" for a tenant that forbids it);
//!   - AADSTS50097 DeviceAuthenticationRequired, AADSTS53000 DeviceNotCompliant, AADSTS53001
//!     DeviceNotDomainJoined: policies that want a managed device, which the device code flow
//!     cannot show (the device that signs in is not the one that gets the token;
//!     Azure/azure-powershell#9427, AzureAD/MSAL.PS#51), while the browser login can;
//!   - AADSTS7000218 ("must contain … 'client_assertion' or 'client_secret'"): the app
//!     registration does not allow public client flows, the device code flow among them.
//!
//!   AADSTS50199 (CmsiInterrupt) is a confirmation the person clicks through, not a refusal,
//!   and is left out.

use crate::text::printable_brief;

/// Where in the device flow the provider answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The device authorization request: no person involved yet.
    Authorization,
    /// The token poll, after the person signed in.
    Poll,
}

/// Microsoft Entra ID's refusals of the device flow (see the module comment), with what each
/// means.
const ENTRA_REFUSALS: [(&str, &str); 5] = [
    (
        "53003",
        "a Conditional Access policy blocks this sign-in (AADSTS53003), as one blocking the device code flow does",
    ),
    (
        "50097",
        "Conditional Access wants device authentication, which the device code flow cannot give (AADSTS50097)",
    ),
    (
        "53000",
        "Conditional Access wants a compliant device, which the device code flow cannot show (AADSTS53000)",
    ),
    (
        "53001",
        "Conditional Access wants a domain-joined device, which the device code flow cannot show (AADSTS53001)",
    ),
    (
        "7000218",
        "the app registration does not allow public client flows, the device code flow among them (AADSTS7000218)",
    ),
];

/// What a provider's `error` (and description) at `step` means, when it refuses the device flow
/// itself; `None` for anything else (the person's denial, an expired code, a wrong scope…).
pub(super) fn refusal(step: Step, error: &str, description: Option<&str>) -> Option<&'static str> {
    let description = description.unwrap_or_default();
    if let Some(code) = entra_code(description)
        && let Some((_, meaning)) = ENTRA_REFUSALS.iter().find(|(known, _)| *known == code)
    {
        return Some(meaning);
    }
    let says = |words: &[&str]| {
        let lower = description.to_ascii_lowercase();
        words.iter().any(|word| lower.contains(word))
    };
    match (error, step) {
        ("unauthorized_client", _) => {
            Some("the provider does not allow this client the device flow")
        }
        ("unsupported_grant_type", _) => Some("the provider does not take the device code grant"),
        ("invalid_request", _)
            if says(&[
                "not allowed",
                "not permitted",
                "not enabled",
                "disabled",
                "not authorized",
            ]) =>
        {
            Some("the provider does not allow this client the device flow")
        }
        ("invalid_client", Step::Authorization) => {
            Some("the provider does not accept this client for the device flow")
        }
        ("access_denied", Step::Authorization) => {
            Some("the provider's policy does not allow this client the device flow")
        }
        ("access_denied", Step::Poll) if says(&["polic", "blocked", "not allowed", "disabled"]) => {
            Some("the provider's policy does not allow this sign-in through the device flow")
        }
        _ => None,
    }
}

/// The first `AADSTS<digits>` code in an Entra ID error description ("AADSTS53003: Access has
/// been blocked…"), without its prefix.
fn entra_code(description: &str) -> Option<&str> {
    let at = description.find("AADSTS")? + "AADSTS".len();
    let digits = &description[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    (end > 0).then(|| &digits[..end])
}

/// The provider refused the device flow (see the module comment).
#[derive(Debug, Clone)]
pub(super) struct DeviceFlowRefused {
    pub step: Step,
    /// `error (description)` as the provider said it, made printable.
    pub said: String,
    /// What it means (`refusal`'s answer).
    pub meaning: &'static str,
}

impl DeviceFlowRefused {
    /// The one line for `--grant-type device-code`, or for `auto` where nothing else can log in
    /// (`and_then`: why not).
    pub fn into_error(self, issuer: &str, client: &str, and_then: Option<&str>) -> anyhow::Error {
        let client = printable_brief(client, 100);
        let next = and_then.map_or_else(
            || "log in with --grant-type auto or authcode-keyboard (the code pasted), or ask the provider's administrators to allow this client the device flow".to_string(),
            str::to_string,
        );
        let (exit, what) = match self.step {
            Step::Authorization => (
                crate::error::Exit::Provider,
                format!("{issuer} refused the device flow for the client {client}"),
            ),
            Step::Poll => (
                crate::error::Exit::Login,
                format!("{issuer} refused the device login after you signed in"),
            ),
        };
        crate::error::fail(
            exit,
            format!("{what} ({}): {}; {next}", self.said, self.meaning),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Step::{Authorization, Poll};

    #[test]
    fn the_providers_refusals_of_the_grant_are_recognised() {
        let keycloak = "Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for the client.";
        let okta = "The client is not authorized to use the provided grant type. Configured grant types: [authorization_code, refresh_token].";
        let oidc_provider =
            "urn:ietf:params:oauth:grant-type:device_code is not allowed for this client";
        for step in [Authorization, Poll] {
            assert!(refusal(step, "unauthorized_client", Some(keycloak)).is_some());
            assert!(refusal(step, "unauthorized_client", Some(okta)).is_some());
            assert!(refusal(step, "unauthorized_client", None).is_some());
            assert!(refusal(step, "unsupported_grant_type", None).is_some());
            assert!(refusal(step, "invalid_request", Some(oidc_provider)).is_some());
            assert!(refusal(step, "invalid_request", Some("Device flow is DISABLED")).is_some());
        }
        assert!(refusal(Authorization, "invalid_client", None).is_some());
        assert!(refusal(Authorization, "access_denied", None).is_some());
    }

    #[test]
    fn entra_conditional_access_codes_are_recognised_whatever_the_error() {
        let blocked = "AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance.\r\nTrace ID: 36a9bfd2\r\nTimestamp: 2023-05-29 05:46:34Z";
        for error in ["interaction_required", "invalid_grant", "access_denied"] {
            let meaning = refusal(Poll, error, Some(blocked)).unwrap();
            assert!(meaning.contains("AADSTS53003"), "{meaning}");
        }
        for code in ["50097", "53000", "53001", "7000218"] {
            let description = format!("AADSTS{code}: something");
            let meaning = refusal(Poll, "invalid_grant", Some(&description)).unwrap();
            assert!(meaning.contains(&format!("AADSTS{code}")), "{meaning}");
        }
        // A longer code that starts the same is another one; a click-through is no refusal.
        assert!(refusal(Poll, "invalid_grant", Some("AADSTS530032: blocked")).is_none());
        assert!(refusal(Poll, "invalid_grant", Some("AADSTS50199: confirm")).is_none());
        assert_eq!(entra_code("AADSTS"), None);
        assert_eq!(entra_code("x AADSTS70016: pending"), Some("70016"));
    }

    #[test]
    fn a_persons_denial_and_ordinary_errors_are_not_refusals() {
        // RFC 8628 §3.5: the person said no (oidc-provider's abort).
        assert!(refusal(Poll, "access_denied", Some("End-User aborted interaction")).is_none());
        assert!(refusal(Poll, "access_denied", None).is_none());
        assert!(refusal(Poll, "access_denied", Some("blocked by policy")).is_some());
        // At the poll a client error is not read as the flow's refusal (an expired secret).
        assert!(refusal(Poll, "invalid_client", None).is_none());
        for error in [
            "expired_token",
            "invalid_scope",
            "invalid_grant",
            "slow_down",
        ] {
            assert!(refusal(Authorization, error, None).is_none(), "{error}");
            assert!(refusal(Poll, error, None).is_none(), "{error}");
        }
        assert!(refusal(Authorization, "invalid_request", Some("missing client_id")).is_none());
    }

    #[test]
    fn the_error_says_which_step_refused_and_what_works_instead() {
        let refused = DeviceFlowRefused {
            step: Authorization,
            said: "invalid_request (not allowed)".into(),
            meaning: "the provider does not allow this client the device flow",
        };
        let err = refused
            .clone()
            .into_error("https://idp.example", "kubecred", None);
        assert_eq!(
            crate::error::exit_code_of(&err),
            crate::error::Exit::Provider
        );
        assert_eq!(
            err.to_string(),
            "https://idp.example refused the device flow for the client kubecred (invalid_request (not allowed)): the provider does not allow this client the device flow; log in with --grant-type auto or authcode-keyboard (the code pasted), or ask the provider's administrators to allow this client the device flow"
        );
        let at_poll = DeviceFlowRefused {
            step: Poll,
            ..refused
        };
        let err = at_poll.into_error("https://idp.example", "kubecred", Some("do this"));
        assert_eq!(crate::error::exit_code_of(&err), crate::error::Exit::Login);
        assert!(
            err.to_string()
                .starts_with("https://idp.example refused the device login after you signed in ("),
            "{err}"
        );
        assert!(err.to_string().ends_with("; do this"), "{err}");
    }
}
