//! The wording of a failed token request: the provider's OAuth error with a next step that fits
//! it, or why the request did not get an answer, always with the HTTP status when the answer was
//! not a usable one (an outage must not look like a misconfiguration, and is marked as one:
//! `error::outage`, which lets a still-valid cached token be handed out). Response bodies are never
//! echoed (they can hold tokens); everything taken from the provider is made printable.

use crate::error::{Exit, fail, outage};
use crate::http::{AnswerSummary, OAuthCall, RequestFailure};
use crate::text::printable_brief;
use oauth2::{ErrorResponseType, RequestTokenError, StandardErrorResponse};
use std::fmt;

/// `error (description)` of an OAuth error response, safe for the terminal: both come from the
/// provider, which may put control characters or a screenful of text in them.
pub(super) fn describe_server_error<T: ErrorResponseType + fmt::Display>(
    err: &StandardErrorResponse<T>,
) -> String {
    let error = printable_brief(&err.error().to_string(), 100).into_owned();
    match err.error_description() {
        Some(description) => format!("{error} ({})", printable_brief(description.trim(), 300)),
        None => error,
    }
}

/// One line for a failed token request, with the next step where kubecred can tell it. `call`
/// is the client the request went through: it knows the last answer's HTTP status.
pub(super) fn token_error<T: ErrorResponseType + fmt::Display>(
    err: RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
    grant: &str,
    issuer: &str,
    call: &OAuthCall,
) -> anyhow::Error {
    token_error_with_forbidden_hint(err, grant, issuer, call, None)
}

/// [`token_error`], with the next step to give for a bare 403 (no OAuth error in it) when the
/// grant knows a likelier cause than the URL or the settings in general.
pub(super) fn token_error_with_forbidden_hint<T: ErrorResponseType + fmt::Display>(
    err: RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
    grant: &str,
    issuer: &str,
    call: &OAuthCall,
    forbidden_hint: Option<&str>,
) -> anyhow::Error {
    request_error(
        err,
        &format!("{grant} token request"),
        issuer,
        call,
        forbidden_hint,
    )
}

/// One line for a failed request to the provider that is not a token request (the device
/// authorization request), `request` naming it: "device authorization request".
pub(super) fn request_error<T: ErrorResponseType + fmt::Display>(
    err: RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
    request: &str,
    issuer: &str,
    call: &OAuthCall,
    forbidden_hint: Option<&str>,
) -> anyhow::Error {
    let answered = call.last_answer();
    if let Some(unusable) =
        unusable_answer(&err, answered.as_ref(), request, issuer, forbidden_hint)
    {
        return unusable;
    }
    match err {
        RequestTokenError::ServerResponse(response) => {
            provider_error(&response, answered.as_ref(), request, issuer)
        }
        RequestTokenError::Request(failure) => {
            outage(format!("the {request} to {issuer} failed: {failure}"))
        }
        // The body may hold tokens: name the place of the problem, never echo the body.
        RequestTokenError::Parse(err, _body) => outage(format!(
            "the answer of {issuer} to the {request} ({}) is not a valid OAuth 2.0 response (at `{}`); is the issuer URL right?",
            status_of(answered.as_ref()),
            printable_brief(&err.path().to_string(), 100)
        )),
        // oauth2 says "Other" for a 200 of the wrong content type (an HTML login page).
        RequestTokenError::Other(message) => {
            let hint = "is the issuer URL right?";
            outage(format!(
                "the {request} to {issuer} answered {}{}: {}; {hint}",
                status_of(answered.as_ref()),
                answered
                    .as_ref()
                    .and_then(|a| a.content_type.as_ref())
                    .map(|t| format!(" with Content-Type {t}"))
                    .unwrap_or_default(),
                printable_brief(&message, 200)
            ))
        }
    }
}

/// "HTTP 502 Bad Gateway", or "an unknown status" where no answer is known.
fn status_of(answered: Option<&AnswerSummary>) -> String {
    answered
        .map(|a| a.described.clone())
        .unwrap_or_else(|| "an unknown status".into())
}

/// An answer that is not a 2xx and not an OAuth error (an HTML error page, an empty 502, a
/// redirect): its status says more than oauth2's complaint about the body.
fn unusable_answer<T: ErrorResponseType + fmt::Display>(
    err: &RequestTokenError<RequestFailure, StandardErrorResponse<T>>,
    answered: Option<&AnswerSummary>,
    request: &str,
    issuer: &str,
    forbidden_hint: Option<&str>,
) -> Option<anyhow::Error> {
    let answer = answered.filter(|answer| !answer.status.is_success())?;
    if !matches!(
        err,
        RequestTokenError::Parse(..) | RequestTokenError::Other(_)
    ) {
        return None;
    }
    let hint = forbidden_hint
        .filter(|_| answer.status == reqwest::StatusCode::FORBIDDEN)
        .unwrap_or_else(|| crate::http::status_hint(answer.status));
    Some(outage(format!(
        "the {request} to {issuer} answered {}, not an OAuth 2.0 response; {hint}",
        answer.described,
    )))
}

/// The provider's OAuth error: a refusal with the next step its code calls for, or an outage
/// when it came with a 5xx or 429 (`server_error`, `temporarily_unavailable`).
fn provider_error<T: ErrorResponseType + fmt::Display>(
    response: &StandardErrorResponse<T>,
    answered: Option<&AnswerSummary>,
    request: &str,
    issuer: &str,
) -> anyhow::Error {
    if let Some(answer) =
        answered.filter(|a| a.status.is_server_error() || a.status.as_u16() == 429)
    {
        return outage(format!(
            "the {request} to {issuer} answered {}: {}; {}",
            answer.described,
            describe_server_error(response),
            crate::http::status_hint(answer.status)
        ));
    }
    let hint = match response.error().to_string().as_str() {
        "invalid_client" => {
            "check --client-id and the client secret (or private key, or assertion)"
        }
        "unauthorized_client" => {
            "the client is not allowed this grant type at the provider; check --grant-type"
        }
        "invalid_scope" => "check --scope",
        "invalid_target" => "check --resource / --audience",
        "invalid_grant" => "log in again (kubecred login)",
        _ => "check the provider's logs and kubecred's settings",
    };
    fail(
        Exit::Provider,
        format!(
            "{issuer} refused the {request}: {}; {hint}",
            describe_server_error(response)
        ),
    )
}
