//! The wording of a failed token request: the provider's OAuth error with a next step that fits
//! it, or why the request did not get an answer. Response bodies are never echoed (they can hold
//! tokens).

use crate::error::{fail, Exit};
use oauth2::{ErrorResponseType, HttpClientError, RequestTokenError, StandardErrorResponse};
use std::fmt;

/// `error: description` of an OAuth error response (descriptions come from the provider and
/// never contain our secrets).
pub(super) fn describe_server_error<T: ErrorResponseType + fmt::Display>(
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
pub(super) fn token_error<T: ErrorResponseType + fmt::Display>(
    err: RequestTokenError<HttpClientError<reqwest::Error>, StandardErrorResponse<T>>,
    grant: &str,
    issuer: &str,
) -> anyhow::Error {
    match err {
        RequestTokenError::ServerResponse(response) => {
            let hint = match response.error().to_string().as_str() {
                "invalid_client" => "check --client-id and the client secret (or private key, or assertion)",
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
