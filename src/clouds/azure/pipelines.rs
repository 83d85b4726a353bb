//! An Azure Pipelines service connection's OIDC token (Azure kubelogin's `-l azurepipelines`,
//! azure-identity's `AzurePipelinesCredential`), the client assertion of the client-credentials
//! grant at Entra's token endpoint, as the GitHub Actions and GitLab ID tokens are
//! (`grants/ci_token.rs`): POST `$SYSTEM_OIDCREQUESTURI?api-version=7.1&serviceConnectionId=<ID>`
//! with the job's `$SYSTEM_ACCESSTOKEN` as the bearer and `X-TFS-FedAuthRedirect: Suppress` (a
//! refusal is a 401, not a redirect to a sign-in page), answered `{"oidcToken": "<jwt>"}`. Read
//! afresh for every grant: these tokens live minutes.

use crate::config::HttpSettings;
use crate::error::{Exit, fail, outage};
use crate::secret::Secret;

/// The Azure DevOps REST version azure-identity and Go's azidentity ask for.
pub const OIDC_API_VERSION: &str = "7.1";

/// The variables the Azure Pipelines agent sets (the request URI in every job; the access token
/// only where the step maps `$(System.AccessToken)` into its env).
pub const SYSTEM_OIDCREQUESTURI: &str = "SYSTEM_OIDCREQUESTURI";
pub const SYSTEM_ACCESSTOKEN: &str = "SYSTEM_ACCESSTOKEN";

/// An OIDC token answer is a few KB.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The service connection (Azure kubelogin's `--azure-pipelines-service-connection-id`, or the
/// `AZURESUBSCRIPTION_SERVICE_CONNECTION_ID` the AzureCLI@2 task sets).
#[derive(Debug, Clone)]
pub struct PipelinesSettings {
    pub service_connection_id: String,
}

/// The request for the service connection's OIDC token, before it is sent (for tests to compare
/// with azure-identity's).
pub fn request(
    settings: &PipelinesSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(url::Url, reqwest::header::HeaderMap)> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let base = var(SYSTEM_OIDCREQUESTURI).ok_or_else(|| {
        fail(
            Exit::Input,
            "SYSTEM_OIDCREQUESTURI is not set: the azurepipelines source runs only in an Azure Pipelines job",
        )
    })?;
    let bearer = var(SYSTEM_ACCESSTOKEN).ok_or_else(|| {
        fail(
            Exit::Input,
            "SYSTEM_ACCESSTOKEN is not set; map it into the step's environment (env: SYSTEM_ACCESSTOKEN: $(System.AccessToken))",
        )
    })?;
    if settings.service_connection_id.trim().is_empty() {
        return Err(fail(
            Exit::Input,
            "no Azure Pipelines service connection ID; give the service connection's ID (AZURESUBSCRIPTION_SERVICE_CONNECTION_ID in an AzureCLI@2 step)",
        ));
    }
    let mut url = url::Url::parse(base.trim_end_matches('/'))
        .map_err(|_| fail(Exit::Input, "SYSTEM_OIDCREQUESTURI is not a URL"))?;
    let secure = url.scheme() == "https"
        || (url.scheme() == "http" && crate::config::is_loopback_host(&url));
    if !secure {
        return Err(fail(
            Exit::Input,
            "SYSTEM_OIDCREQUESTURI must be https (plain http only on loopback)",
        ));
    }
    url.query_pairs_mut()
        .append_pair("api-version", OIDC_API_VERSION)
        .append_pair("serviceConnectionId", &settings.service_connection_id);
    use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut authorization = HeaderValue::from_str(&format!("Bearer {bearer}")).map_err(|_| {
        fail(
            Exit::Input,
            "SYSTEM_ACCESSTOKEN holds characters a header cannot carry",
        )
    })?;
    authorization.set_sensitive(true);
    headers.insert(AUTHORIZATION, authorization);
    headers.insert(
        HeaderName::from_static("x-tfs-fedauthredirect"),
        HeaderValue::from_static("Suppress"),
    );
    Ok((url, headers))
}

#[derive(serde::Deserialize)]
struct OidcAnswer {
    #[serde(rename = "oidcToken")]
    oidc_token: Option<Secret>,
}

/// The service connection's OIDC token, to send as `client_assertion`.
pub fn oidc_token(
    settings: &PipelinesSettings,
    env: &dyn Fn(&str) -> Option<String>,
    http: &HttpSettings,
) -> anyhow::Result<Secret> {
    let (url, headers) = request(settings, env)?;
    let shown = crate::text::display_url(&url);
    let doing = format!("requesting the Azure Pipelines OIDC token from {shown}");
    crate::debug!(1, "{doing}");
    let client = crate::http::client(http, http.timeout)?;
    let answer = client
        .send(&crate::http::Outgoing {
            method: reqwest::Method::POST,
            url: &url,
            headers,
            body: Vec::new(),
            what: &doing,
            body_cap: MAX_ANSWER_BYTES,
            // Another OIDC token spends nothing (azure-identity retries this POST too).
            replay: crate::http::Replay::Safe,
            // Not Entra: the --request-header values are not Azure DevOps' business.
            recipient: crate::http::Recipient::Other,
        })
        .map_err(|failure| outage(format!("{doing}: {failure}")))?;
    let status = answer.status;
    if !status.is_success() {
        let hint = if status == reqwest::StatusCode::UNAUTHORIZED
            || status == reqwest::StatusCode::FORBIDDEN
            || status == reqwest::StatusCode::NOT_FOUND
        {
            "check the service connection ID and that the pipeline may use it (and that SYSTEM_ACCESSTOKEN is this job's)"
        } else {
            "Azure DevOps is failing or busy; retry the job"
        };
        let message = format!(
            "the Azure Pipelines OIDC endpoint {shown} answered {}{}; {hint}",
            crate::http::describe_status(status, &answer.headers),
            crate::http::after_attempts(answer.attempts)
        );
        return Err(
            if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                outage(message)
            } else {
                fail(Exit::Provider, message)
            },
        );
    }
    let token = serde_json::from_slice::<OidcAnswer>(&answer.body)
        .ok()
        .and_then(|parsed| parsed.oidc_token)
        .map(|token| Secret::new(token.expose().trim()))
        .filter(|token| crate::tokens::unverified_jwt_segment(token.expose(), 1).is_some())
        .ok_or_else(|| {
            fail(
                Exit::Provider,
                format!("the Azure Pipelines OIDC answer from {shown} is not {{\"oidcToken\": \"<jwt>\"}}"),
            )
        })?;
    Ok(token)
}

#[cfg(test)]
#[path = "pipelines_tests.rs"]
mod tests;
