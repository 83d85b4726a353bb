//! IAM Identity Center (SSO) profiles, as the AWS CLI reads them: the access token `aws sso
//! login` left in `~/.aws/sso/cache/<sha1 of the session name or start URL>.json`, traded at the
//! SSO portal (`GetRoleCredentials`) for the profile's account and role. kubecred never logs in to
//! SSO itself and never writes that cache: a missing or expired token is a login the user runs
//! (`aws sso login --profile NAME`), said in one line.

use super::chain::{Context, still_valid};
use super::credentials::Credentials;
use super::endpoint;
use super::files::Section;
use crate::error::{Exit, fail, transient};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde::Deserialize;
use sha1::{Digest, Sha1};

/// The fields of the token cache file that matter here.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedToken {
    access_token: Secret,
    expires_at: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleAnswer {
    role_credentials: RoleCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleCredentials {
    access_key_id: String,
    secret_access_key: Secret,
    session_token: Secret,
    /// Milliseconds since the epoch.
    expiration: i64,
}

pub(super) fn credentials(
    cx: &Context,
    name: &str,
    profile: &Section,
) -> anyhow::Result<Credentials> {
    let file = cx.files.file_of(name).display().to_string();
    let missing = |key: &str| {
        fail(
            Exit::Input,
            format!(
                "the AWS profile {name:?} in {file} is an SSO profile without {key}; add it (aws configure sso --profile {name} writes them)"
            ),
        )
    };
    // The session's section (`sso_session = NAME`), or the legacy keys in the profile itself.
    let (cache_key, start_url, sso_region) = match profile.get("sso_session") {
        Some(session) => {
            let section = cx.files.sso_session(session).ok_or_else(|| {
                fail(
                    Exit::Input,
                    format!(
                        "the AWS profile {name:?} names the sso_session {session:?}, which {} has not; add [sso-session {session}] (aws configure sso writes it)",
                        cx.files.config_path.display()
                    ),
                )
            })?;
            (
                session.to_string(),
                section
                    .get("sso_start_url")
                    .ok_or_else(|| missing("sso_start_url"))?,
                section
                    .get("sso_region")
                    .ok_or_else(|| missing("sso_region"))?,
            )
        }
        None => {
            let start_url = profile
                .get("sso_start_url")
                .ok_or_else(|| missing("sso_start_url"))?;
            (
                start_url.to_string(),
                start_url,
                profile
                    .get("sso_region")
                    .ok_or_else(|| missing("sso_region"))?,
            )
        }
    };
    let account = profile
        .get("sso_account_id")
        .ok_or_else(|| missing("sso_account_id"))?;
    let role = profile
        .get("sso_role_name")
        .ok_or_else(|| missing("sso_role_name"))?;
    let login = || {
        let flag = if name == "default" {
            String::new()
        } else {
            format!(" --profile {name}")
        };
        format!("run aws sso login{flag}")
    };

    let Some(home) = cx.home else {
        return Err(fail(
            Exit::Input,
            "cannot find the AWS SSO token cache: no home directory is known (HOME is not set); set HOME",
        ));
    };
    let cache_file = home.join(".aws").join("sso").join("cache").join(format!(
        "{}.json",
        crate_hex(&Sha1::digest(cache_key.as_bytes()))
    ));
    let text = match std::fs::read_to_string(&cache_file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(transient(
                Exit::Login,
                format!(
                    "the AWS profile {name:?} signs in with SSO ({start_url}), and no SSO session is logged in; {}",
                    login()
                ),
            ));
        }
        Err(err) => {
            return Err(fail(
                Exit::Input,
                format!(
                    "cannot read the AWS SSO token cache {}: {err}; check its permissions",
                    cache_file.display()
                ),
            ));
        }
    };
    let token: CachedToken = serde_json::from_str(&text).map_err(|_| {
        transient(
            Exit::Login,
            format!(
                "the AWS SSO token cache {} is not what aws sso login writes; {}",
                cache_file.display(),
                login()
            ),
        )
    })?;
    let expired = match parse_cache_time(&token.expires_at) {
        Some(at) => at <= cx.now,
        None => true,
    };
    if expired {
        return Err(transient(
            Exit::Login,
            format!(
                "the SSO session of the AWS profile {name:?} ({start_url}) has expired; {}",
                login()
            ),
        ));
    }

    let portal = endpoint::sso_portal(sso_region, cx.env, cx.files, name)?;
    let url = format!(
        "{}federation/credentials?role_name={}&account_id={}",
        with_slash(&portal.url),
        super::sigv4::encode(role),
        super::sigv4::encode(account)
    );
    let what = format!("the SSO GetRoleCredentials request to {}", portal.url);
    let answer = cx.clients.send(
        Method::GET,
        &url,
        &[(
            "x-amz-sso_bearer_token",
            token.access_token.expose().to_string(),
        )],
        Vec::new(),
        &what,
    )?;
    let status = answer.status.as_u16();
    if status == 401 {
        return Err(transient(
            Exit::Login,
            format!(
                "the SSO portal no longer accepts the SSO session of the AWS profile {name:?} ({start_url}); {}",
                login()
            ),
        ));
    }
    if !answer.status.is_success() {
        let said = serde_json::from_slice::<serde_json::Value>(&answer.body)
            .ok()
            .and_then(|body| {
                body.get("message")
                    .or_else(|| body.get("Message"))
                    .and_then(|m| m.as_str())
                    .map(|m| format!(": {}", crate::text::printable_brief(m, 300)))
            })
            .unwrap_or_default();
        if answer.status.is_server_error() || status == 429 {
            return Err(crate::error::outage(format!(
                "{what} answered HTTP {}{}{said}; the SSO portal is failing or overloaded, try again later",
                answer.status,
                crate::http::after_attempts(answer.attempts)
            )));
        }
        return Err(fail(
            Exit::Provider,
            format!(
                "the SSO portal refused the role {role} in account {account} to the AWS profile {name:?} (HTTP {}{said}); check sso_account_id and sso_role_name (aws sso list-account-roles lists yours)",
                answer.status
            ),
        ));
    }
    let answer: RoleAnswer = serde_json::from_slice(&answer.body).map_err(|_| {
        crate::error::outage(format!(
            "{what} answered something that is not role credentials; check the SSO endpoint (AWS_ENDPOINT_URL_SSO, AWS_ENDPOINT_URL)"
        ))
    })?;
    let credentials = answer.role_credentials;
    still_valid(
        Credentials {
            access_key_id: credentials.access_key_id,
            secret_access_key: credentials.secret_access_key,
            session_token: Some(credentials.session_token),
            expires_at: DateTime::from_timestamp_millis(credentials.expiration),
            source: format!("the SSO role {role} of the AWS profile {name:?}"),
        },
        cx.now,
        &login(),
    )
}

/// `2026-11-28T16:00:00Z`, or the older `2026-11-28T16:00:00UTC` the AWS CLI v1 wrote.
fn parse_cache_time(text: &str) -> Option<DateTime<Utc>> {
    super::chain::time(text).or_else(|| {
        let bare = text.trim().strip_suffix("UTC")?;
        chrono::NaiveDateTime::parse_from_str(bare, "%Y-%m-%dT%H:%M:%S")
            .ok()
            .map(|at| at.and_utc())
    })
}

fn with_slash(url: &str) -> String {
    if url.ends_with('/') {
        url.to_string()
    } else {
        format!("{url}/")
    }
}

fn crate_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_file_is_named_as_the_aws_cli_names_it() {
        // botocore's SSOTokenLoader: the SHA-1 of the session name (or legacy start URL).
        assert_eq!(
            crate_hex(&Sha1::digest(b"my-sso")),
            "0ad374308c5a4e22f723adf10145eafad7c4031c"
        );
    }

    #[test]
    fn both_time_formats_of_the_cache_are_read() {
        assert_eq!(
            parse_cache_time("2026-11-28T16:00:00Z")
                .unwrap()
                .to_rfc3339(),
            "2026-11-28T16:00:00+00:00"
        );
        assert_eq!(
            parse_cache_time("2026-11-28T16:00:00UTC")
                .unwrap()
                .to_rfc3339(),
            "2026-11-28T16:00:00+00:00"
        );
        assert_eq!(parse_cache_time("soon"), None);
    }
}
