//! Credentials the machine hands out: a container's (ECS task roles, EKS Pod Identity:
//! `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` on 169.254.170.2, or `…_FULL_URI` on a loopback,
//! pod-identity or https address, with `AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)`), and an EC2
//! instance role's through IMDSv2 (a session token `PUT`, then the role's name, then its
//! credentials; at 169.254.169.254, or where `AWS_EC2_METADATA_SERVICE_ENDPOINT` or the
//! profile's `ec2_metadata_service_endpoint` say; off with `AWS_EC2_METADATA_DISABLED=true`).
//! Off EC2 the service does not answer: that is "no credentials here", in a second, not an error.

use super::chain::{Context, still_valid, time};
use super::credentials::Credentials;
use super::vars;
use crate::error::{Exit, fail, outage};
use crate::secret::Secret;
use reqwest::Method;
use serde::Deserialize;
use std::net::IpAddr;

/// The answer of both services (IMDS adds `Code`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    code: Option<String>,
    access_key_id: String,
    secret_access_key: Secret,
    token: Option<Secret>,
    expiration: Option<String>,
}

const CONTAINER_HOST: &str = "http://169.254.170.2";

/// Hosts a full URI may name over http: loopback, and the ECS and EKS Pod Identity agents.
fn allowed_over_http(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => *name == "localhost",
        url::Host::Ipv4(ip) => {
            ip.is_loopback()
                || ip.octets() == [169, 254, 170, 2]
                || ip.octets() == [169, 254, 170, 23]
        }
        url::Host::Ipv6(ip) => {
            ip.is_loopback() || IpAddr::V6(*ip) == "fd00:ec2::23".parse::<IpAddr>().unwrap()
        }
    }
}

pub(super) fn container(cx: &Context) -> anyhow::Result<Option<Credentials>> {
    let (url, from) = match (
        (cx.env)(vars::AWS_CONTAINER_CREDENTIALS_RELATIVE_URI).filter(|v| !v.is_empty()),
        (cx.env)(vars::AWS_CONTAINER_CREDENTIALS_FULL_URI).filter(|v| !v.is_empty()),
    ) {
        (Some(relative), _) => (
            format!("{CONTAINER_HOST}{relative}"),
            vars::AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
        ),
        (None, Some(full)) => {
            let parsed = url::Url::parse(&full).ok();
            let allowed = parsed.as_ref().is_some_and(|url| {
                url.scheme() == "https"
                    || (url.scheme() == "http"
                        && url.host().as_ref().is_some_and(allowed_over_http))
            });
            if !allowed {
                return Err(fail(
                    Exit::Input,
                    format!(
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI is {}, which the AWS SDKs do not ask for credentials: it must be https, or http on a loopback address or the ECS or EKS Pod Identity agent's",
                        crate::text::printable_brief(&crate::text::redact_userinfo(&full), 200)
                    ),
                ));
            }
            (full, vars::AWS_CONTAINER_CREDENTIALS_FULL_URI)
        }
        (None, None) => return Ok(None),
    };
    let mut headers = Vec::new();
    let token_file =
        (cx.env)(vars::AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE).filter(|v| !v.is_empty());
    if let Some(file) = token_file {
        let token = std::fs::read_to_string(&file).map_err(|err| {
            fail(
                Exit::Input,
                format!(
                    "cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {err}; check that the token is mounted there"
                ),
            )
        })?;
        headers.push(("Authorization", token.trim().to_string()));
    } else if let Some(token) =
        (cx.env)(vars::AWS_CONTAINER_AUTHORIZATION_TOKEN).filter(|v| !v.is_empty())
    {
        headers.push(("Authorization", token));
    }
    headers.push(("Accept", "application/json".to_string()));
    let shown = crate::text::redact_userinfo(&url).into_owned();
    let what = format!("the container credentials request to {shown} ({from})");
    let answer = cx.clients.send_to_container(&url, &headers, &what)?;
    if !answer.status.is_success() {
        let message = format!(
            "{what} answered HTTP {}{}",
            answer.status,
            crate::http::after_attempts(answer.attempts)
        );
        return Err(
            if answer.status.is_server_error() || answer.status.as_u16() == 429 {
                outage(format!("{message}; try again later"))
            } else {
                fail(
                    Exit::Provider,
                    format!("{message}; check the task's or pod's role and {from}"),
                )
            },
        );
    }
    let answer: Answer = serde_json::from_slice(&answer.body).map_err(|_| {
        outage(format!(
            "{what} answered something that is not credentials; check {from}"
        ))
    })?;
    credentials_of(cx, answer, format!("the container's role ({from})")).map(Some)
}

fn credentials_of(cx: &Context, answer: Answer, source: String) -> anyhow::Result<Credentials> {
    let expires_at = answer.expiration.as_deref().and_then(time);
    still_valid(
        Credentials {
            access_key_id: answer.access_key_id,
            secret_access_key: answer.secret_access_key,
            session_token: answer.token,
            expires_at,
            source,
        },
        cx.now,
        "try again in a minute (the service renews them)",
    )
}

/// The instance metadata service's base URL, without a trailing slash; `None` when it is off.
fn instance_endpoint(cx: &Context) -> Option<String> {
    let disabled = (cx.env)(vars::AWS_EC2_METADATA_DISABLED)
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
    if disabled {
        return None;
    }
    let profile = cx.files.profile(&cx.profile.name);
    let configured = (cx.env)(vars::AWS_EC2_METADATA_SERVICE_ENDPOINT)
        .filter(|v| !v.is_empty())
        .or_else(|| {
            profile
                .and_then(|p| p.get("ec2_metadata_service_endpoint"))
                .map(str::to_string)
        });
    if let Some(endpoint) = configured {
        return Some(endpoint.trim_end_matches('/').to_string());
    }
    let mode = (cx.env)(vars::AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE)
        .filter(|v| !v.is_empty())
        .or_else(|| {
            profile
                .and_then(|p| p.get("ec2_metadata_service_endpoint_mode"))
                .map(str::to_string)
        });
    Some(
        if mode.is_some_and(|m| m.eq_ignore_ascii_case("ipv6")) {
            "http://[fd00:ec2::254]"
        } else {
            "http://169.254.169.254"
        }
        .to_string(),
    )
}

pub(super) fn instance(cx: &Context) -> anyhow::Result<Option<Credentials>> {
    let Some(base) = instance_endpoint(cx) else {
        return Ok(None);
    };
    let what = |step: &str| format!("the instance metadata service's {step} ({base})");
    // No answer at all: not on EC2 (or the service is off), so no credentials from it.
    let Ok(token) = cx.clients.send_to_metadata(
        Method::PUT,
        &format!("{base}/latest/api/token"),
        &[("x-aws-ec2-metadata-token-ttl-seconds", "21600".to_string())],
        &what("session token request"),
    ) else {
        return Ok(None);
    };
    if !token.status.is_success() {
        crate::debug!(
            1,
            "{} answered HTTP {}: no instance role here",
            what("session token request"),
            token.status
        );
        return Ok(None);
    }
    let token = String::from_utf8_lossy(&token.body).trim().to_string();
    let headers = [("x-aws-ec2-metadata-token", token)];
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let roles = cx.clients.send_to_metadata(
        Method::GET,
        &roles_url,
        &headers,
        &what("role name request"),
    )?;
    if roles.status.as_u16() == 404 {
        // An instance without a role.
        return Ok(None);
    }
    if !roles.status.is_success() {
        return Err(outage(format!(
            "{} answered HTTP {}; try again later",
            what("role name request"),
            roles.status
        )));
    }
    let role = String::from_utf8_lossy(&roles.body)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_string);
    let Some(role) = role else {
        return Ok(None);
    };
    let answer = cx.clients.send_to_metadata(
        Method::GET,
        &format!("{roles_url}{}", super::sigv4::encode(&role)),
        &headers,
        &what("credentials request"),
    )?;
    if !answer.status.is_success() {
        return Err(outage(format!(
            "{} answered HTTP {}; try again later",
            what("credentials request"),
            answer.status
        )));
    }
    let answer: Answer = serde_json::from_slice(&answer.body).map_err(|_| {
        outage(format!(
            "{} answered something that is not credentials",
            what("credentials request")
        ))
    })?;
    if answer.code.as_deref().is_some_and(|code| code != "Success") {
        return Err(outage(format!(
            "{} answered Code {}; try again later",
            what("credentials request"),
            crate::text::printable_brief(answer.code.as_deref().unwrap_or(""), 60)
        )));
    }
    credentials_of(cx, answer, format!("the instance role {role}")).map(Some)
}
