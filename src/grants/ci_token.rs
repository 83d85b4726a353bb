//! Reads a JWT that someone else issued — a CI job's ID token, a projected service-account token,
//! a federated-token file — from where [`CredentialSource`] says: a file (read again on every
//! grant: these files rotate), an environment variable, the GitHub Actions ID-token endpoint, or
//! a GitLab CI `id_tokens` variable. Used for token-exchange subject tokens, federated tokens and
//! client assertions. Runs only after a cache miss, under the entry's lock.

use crate::config::CredentialSource;
use crate::env_vars;
use crate::error::{Exit, fail};
use crate::secret::Secret;
use std::io::Read;

/// A JWT is a few KB; a larger file or answer is a mistake (the wrong path), not a token.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// The HTTP client for a source that needs one (GitHub Actions): the grant's own, or built from
/// the settings only when such a source is read (a file or a variable needs none).
#[derive(Clone, Copy)]
pub enum Http<'a> {
    Ready(&'a crate::http::Client),
    Build(&'a crate::config::HttpSettings),
}

/// Reads the token now. `what` names its use in messages ("subject token", "client assertion").
/// `http` is needed only for GitHub Actions, and built only then.
pub fn read(source: &CredentialSource, what: &str, http: Http<'_>) -> anyhow::Result<Secret> {
    let raw = match source {
        CredentialSource::File(path) => {
            let mut text = String::new();
            let file = std::fs::File::open(path).map_err(|err| {
                fail(
                    Exit::Input,
                    format!("cannot read the {what} file {}: {err}; check the path (for a projected service-account token: the volume mount)", path.display()),
                )
            })?;
            file.take(MAX_TOKEN_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(|err| {
                    fail(
                        Exit::Input,
                        format!("cannot read the {what} file {}: {err}", path.display()),
                    )
                })?;
            if text.len() as u64 > MAX_TOKEN_BYTES {
                return Err(fail(
                    Exit::Input,
                    format!(
                        "the {what} file {} is larger than {MAX_TOKEN_BYTES} bytes: it is not a token",
                        path.display()
                    ),
                ));
            }
            text
        }
        CredentialSource::Env(name) => std::env::var(name).map_err(|_| {
            fail(
                Exit::Input,
                format!("the {what} variable {name} is not set in kubecred's environment; set it (kubeconfig exec `env`, or the CI job)"),
            )
        })?,
        CredentialSource::Gitlab { variable } => std::env::var(variable).map_err(|_| {
            fail(
                Exit::Input,
                format!("the GitLab CI id_tokens variable {variable} is not set; declare it under the job's `id_tokens:` (or name yours with --gitlab-id-token-variable)"),
            )
        })?,
        CredentialSource::GithubActions { audience } => {
            github_actions_id_token(audience.as_deref(), http)?
        }
    };
    let token = raw.trim();
    if token.is_empty() {
        return Err(fail(
            Exit::Input,
            format!("the {what} from the {} is empty", source.describe()),
        ));
    }
    if crate::tokens::unverified_jwt_segment(token, 1).is_none() {
        return Err(fail(
            Exit::Input,
            format!(
                "the {what} from the {} is not a JWT (three base64url segments)",
                source.describe()
            ),
        ));
    }
    Ok(Secret::new(token))
}

#[derive(serde::Deserialize)]
struct ActionsIdToken {
    value: Secret,
}

/// Asks the Actions runtime for the job's ID token: GET `$ACTIONS_ID_TOKEN_REQUEST_URL`
/// (plus `&audience=`), `Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answer
/// `{"value": "<jwt>"}`. The URL must be https (or http on loopback, for tests); the answer is
/// read up to a bound; redirects are not followed (the client follows none).
fn github_actions_id_token(audience: Option<&str>, http: Http<'_>) -> anyhow::Result<String> {
    let missing = || {
        fail(
            Exit::Input,
            "the GitHub Actions ID-token variables (ACTIONS_ID_TOKEN_REQUEST_URL, ACTIONS_ID_TOKEN_REQUEST_TOKEN) are not set; give the job `permissions: id-token: write`",
        )
    };
    let raw_url = std::env::var(env_vars::ACTIONS_ID_TOKEN_REQUEST_URL).map_err(|_| missing())?;
    let bearer = std::env::var(env_vars::ACTIONS_ID_TOKEN_REQUEST_TOKEN).map_err(|_| missing())?;
    let mut url = url::Url::parse(&raw_url)
        .map_err(|_| fail(Exit::Input, "ACTIONS_ID_TOKEN_REQUEST_URL is not a URL"))?;
    let secure = url.scheme() == "https"
        || (url.scheme() == "http" && crate::config::is_loopback_host(&url));
    if !secure {
        return Err(fail(
            Exit::Input,
            "ACTIONS_ID_TOKEN_REQUEST_URL must be https (plain http only on loopback)",
        ));
    }
    if let Some(audience) = audience {
        url.query_pairs_mut().append_pair("audience", audience);
    }
    let shown = crate::text::display_url(&url);
    crate::debug!(1, "requesting the GitHub Actions ID token from {shown}");
    let built;
    let http = match http {
        Http::Ready(client) => client,
        Http::Build(settings) => {
            built = crate::http::client(settings, settings.timeout)?;
            &built
        }
    };
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let mut authorization = reqwest::header::HeaderValue::from_str(&format!("Bearer {bearer}"))
        .map_err(|_| {
            fail(
                Exit::Input,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN holds characters a header cannot carry",
            )
        })?;
    authorization.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, authorization);
    let doing = format!("requesting the GitHub Actions ID token from {shown}");
    let answer = http
        .send(&crate::http::Outgoing {
            method: reqwest::Method::GET,
            url: &url,
            headers,
            body: Vec::new(),
            what: &doing,
            body_cap: MAX_TOKEN_BYTES,
            replay: crate::http::Replay::Safe,
            // Not the identity provider: the --request-header values are not GitHub's business.
            recipient: crate::http::Recipient::Other,
        })
        .map_err(|failure| fail(Exit::Provider, format!("{doing}: {failure}")))?;
    crate::http::check_status(
        &answer,
        &format!("the GitHub Actions ID-token endpoint {shown}"),
    )?;
    let body = answer.body;
    let parsed: ActionsIdToken = serde_json::from_slice(&body).map_err(|_| {
        fail(
            Exit::Provider,
            format!(
                "the GitHub Actions ID-token answer from {shown} is not {{\"value\": \"<jwt>\"}}"
            ),
        )
    })?;
    Ok(parsed.value.expose().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Settings for a client that these sources never build (only GitHub Actions needs one).
    static NO_HTTP: crate::config::HttpSettings = crate::config::HttpSettings {
        tls: crate::config::TlsSettings {
            extra_ca_pems: Vec::new(),
            insecure_skip_verify: false,
        },
        timeout: std::time::Duration::from_secs(1),
        proxy: crate::config::ProxyEnvironment {
            variables: Vec::new(),
            system_settings: false,
        },
        request_headers: Vec::new(),
    };

    const JWT: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaSJ9.c2ln";

    #[test]
    fn a_file_is_read_again_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let source = CredentialSource::File(path.clone());
        std::fs::write(&path, format!("{JWT}\n")).unwrap();
        assert_eq!(
            read(&source, "subject token", Http::Build(&NO_HTTP))
                .unwrap()
                .expose(),
            JWT
        );
        let rotated = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaTIifQ.c2ln";
        std::fs::write(&path, rotated).unwrap();
        assert_eq!(
            read(&source, "subject token", Http::Build(&NO_HTTP))
                .unwrap()
                .expose(),
            rotated
        );
    }

    #[test]
    fn a_missing_or_odd_source_fails_without_echoing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let source = CredentialSource::File(path.clone());
        let err = read(&source, "subject token", Http::Build(&NO_HTTP)).unwrap_err();
        assert!(format!("{err:#}").contains("cannot read the subject token file"));
        std::fs::write(&path, "not-a-jwt-secret-value").unwrap();
        let err = format!(
            "{:#}",
            read(&source, "subject token", Http::Build(&NO_HTTP)).unwrap_err()
        );
        assert!(err.contains("is not a JWT"), "{err}");
        assert!(!err.contains("not-a-jwt-secret-value"), "{err}");
        let err = read(
            &CredentialSource::Gitlab {
                variable: "KUBECRED_TEST_SURELY_UNSET_VARIABLE".into(),
            },
            "subject token",
            Http::Build(&NO_HTTP),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("id_tokens"));
    }
}
