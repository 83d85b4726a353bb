//! The two STS calls the source makes: `AssumeRole` (signed with the credentials found, for
//! `--aws-role-arn` and a profile's `role_arn`) and `AssumeRoleWithWebIdentity` (unsigned: the ID
//! token is the credential, for web identity files and a kubecred login), sent as botocore sends
//! them (a form `POST` of the Query protocol: `Action`, `Version`, then the parameters in the
//! API's order), and their XML answers read for the few fields needed. STS's refusals become one
//! line with its code and message: `AccessDenied` is a refused role (exit 3), `ExpiredToken` the
//! caller's own credentials run out (a login needed, exit 4).

use super::credentials::{Credentials, RoleCredentials};
use super::endpoint::Endpoint;
use super::net::Clients;
use super::sigv4;
use crate::error::{Exit, fail, outage, transient};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use reqwest::Method;

const CONTENT_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";

/// What `AssumeRole` is asked.
pub(super) struct AssumeRole<'a> {
    pub role_arn: &'a str,
    pub session_name: &'a str,
    pub external_id: Option<&'a str>,
    pub duration_seconds: Option<u32>,
}

pub(super) fn assume_role(
    clients: &Clients,
    endpoint: &Endpoint,
    caller: &Credentials,
    request: &AssumeRole,
    now: DateTime<Utc>,
) -> anyhow::Result<RoleCredentials> {
    let duration = request.duration_seconds.map(|d| d.to_string());
    let mut pairs = vec![
        ("Action", "AssumeRole"),
        ("Version", "2011-06-15"),
        ("RoleArn", request.role_arn),
        ("RoleSessionName", request.session_name),
    ];
    if let Some(duration) = &duration {
        pairs.push(("DurationSeconds", duration));
    }
    if let Some(external_id) = request.external_id {
        pairs.push(("ExternalId", external_id));
    }
    let body = sigv4::query_of(&pairs);
    let mut headers = vec![("Content-Type", CONTENT_TYPE.to_string())];
    headers.extend(sigv4::signed_post_headers(
        caller,
        endpoint,
        CONTENT_TYPE,
        &body,
        now,
    ));
    let what = format!("the AssumeRole request to {}", endpoint.url);
    let answer = clients.send(
        Method::POST,
        &endpoint.url,
        &headers,
        body.into_bytes(),
        &what,
    )?;
    let refused = |code: &str, message: &str| {
        let said = said(code, message);
        match code {
            "ExpiredToken" | "ExpiredTokenException" => transient(
                Exit::Login,
                format!(
                    "the AWS credentials from {} have expired (STS: {said}); renew them and run kubectl again",
                    caller.source
                ),
            ),
            "InvalidClientTokenId" | "SignatureDoesNotMatch" | "UnrecognizedClientException" => {
                fail(
                    Exit::Provider,
                    format!(
                        "STS did not accept the AWS credentials from {} ({said}); check them (aws sts get-caller-identity tells what they are)",
                        caller.source
                    ),
                )
            }
            _ => fail(
                Exit::Provider,
                format!(
                    "STS refused to assume the role {} with the AWS credentials from {} ({said}); check that the role's trust policy lets them assume it",
                    request.role_arn, caller.source
                ),
            ),
        }
    };
    read_answer(&answer, "AssumeRole", &what, refused)
}

/// What `AssumeRoleWithWebIdentity` is asked; the token is passed beside it.
pub(super) struct WebIdentity<'a> {
    pub role_arn: &'a str,
    pub session_name: &'a str,
    /// Where the token came from, for messages: "the file /var/run/…/token", "your kubecred login".
    pub token_from: &'a str,
}

pub(super) fn assume_role_with_web_identity(
    clients: &Clients,
    endpoint: &Endpoint,
    request: &WebIdentity,
    token: &Secret,
) -> anyhow::Result<RoleCredentials> {
    let body = sigv4::query_of(&[
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", request.role_arn),
        ("RoleSessionName", request.session_name),
        ("WebIdentityToken", token.expose()),
    ]);
    let what = format!("the AssumeRoleWithWebIdentity request to {}", endpoint.url);
    let headers = [("Content-Type", CONTENT_TYPE.to_string())];
    let answer = clients.send(
        Method::POST,
        &endpoint.url,
        &headers,
        body.into_bytes(),
        &what,
    )?;
    let refused = |code: &str, message: &str| {
        let said = said(code, message);
        match code {
            "ExpiredTokenException" => transient(
                Exit::Login,
                format!(
                    "STS found the ID token from {} expired ({said}); get a new one and run kubectl again",
                    request.token_from
                ),
            ),
            "InvalidIdentityToken" | "IDPRejectedClaim" | "IDPCommunicationError" => fail(
                Exit::Provider,
                format!(
                    "STS did not accept the ID token from {} for the role {} ({said}); check the IAM OIDC identity provider (its issuer URL and audience) and the role's trust policy",
                    request.token_from, request.role_arn
                ),
            ),
            _ => fail(
                Exit::Provider,
                format!(
                    "STS refused to assume the role {} with the ID token from {} ({said}); check that the role's trust policy lets that token's issuer, audience and subject assume it",
                    request.role_arn, request.token_from
                ),
            ),
        }
    };
    read_answer(&answer, "AssumeRoleWithWebIdentity", &what, refused)
}

/// "AccessDenied: User ... is not authorized ..." from STS's code and message, printable and
/// brief.
fn said(code: &str, message: &str) -> String {
    let message = crate::text::printable_brief(message.trim(), 300);
    if message.is_empty() {
        crate::text::printable_brief(code, 80).into_owned()
    } else {
        format!("{}: {message}", crate::text::printable_brief(code, 80))
    }
}

/// The credentials of a 200 answer; an STS error through `refused`; anything else an outage
/// (5xx, throttling) or an unusable answer.
fn read_answer(
    answer: &crate::http::Answer,
    action: &str,
    what: &str,
    refused: impl Fn(&str, &str) -> anyhow::Error,
) -> anyhow::Result<RoleCredentials> {
    let body = String::from_utf8_lossy(&answer.body);
    let status = answer.status;
    if !status.is_success() {
        let code = element(&body, "Code").unwrap_or_default();
        let message = element(&body, "Message").unwrap_or_default();
        let attempts = crate::http::after_attempts(answer.attempts);
        if status.is_server_error() || status.as_u16() == 429 || code.starts_with("Throttling") {
            return Err(outage(format!(
                "{what} answered HTTP {status}{attempts}{}; STS is failing or overloaded, try again later",
                if code.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", said(&code, &message))
                }
            )));
        }
        if code.is_empty() {
            return Err(fail(
                Exit::Provider,
                format!(
                    "{what} answered HTTP {status}{attempts}, not an STS answer; check the STS endpoint (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL)"
                ),
            ));
        }
        return Err(refused(&code, &message));
    }
    let unusable = |missing: &str| {
        outage(format!(
            "{what} answered without {missing}; check the STS endpoint (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL)"
        ))
    };
    let result_tag = format!("{action}Result");
    let result = element_raw(&body, &result_tag).ok_or_else(|| unusable(&result_tag))?;
    let field = |name: &str| element(result, name).ok_or_else(|| unusable(name));
    let expiration = field("Expiration")?;
    let expires_at = DateTime::parse_from_rfc3339(&expiration)
        .map_err(|_| unusable("an Expiration that is a time"))?
        .with_timezone(&Utc);
    Ok(RoleCredentials {
        access_key_id: field("AccessKeyId")?,
        secret_access_key: Secret::new(field("SecretAccessKey")?),
        session_token: Secret::new(field("SessionToken")?),
        expires_at,
        assumed_role_arn: element_raw(result, "AssumedRoleUser")
            .and_then(|user| element(user, "Arn")),
    })
}

/// The text between `<tag>` and `</tag>`, as written (the first such element).
fn element_raw<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    Some(&xml[start..end])
}

/// An element's text, with XML's escapes undone.
pub(super) fn element(xml: &str, tag: &str) -> Option<String> {
    let raw = element_raw(xml, tag)?;
    let mut text = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        text.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else {
            break;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                text.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                text.push('&');
                rest = &rest[1..];
            }
        }
    }
    text.push_str(rest);
    Some(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_read_with_escapes_undone() {
        let xml = "<R><Message>User: arn:aws:iam::1:user/u is not &lt;authorized&gt; &amp; &#x41;&#66;</Message><Code>AccessDenied</Code></R>";
        assert_eq!(
            element(xml, "Message").unwrap(),
            "User: arn:aws:iam::1:user/u is not <authorized> & AB"
        );
        assert_eq!(element(xml, "Code").unwrap(), "AccessDenied");
        assert_eq!(element(xml, "Nope"), None);
    }

    fn answer(status: u16, body: &str) -> crate::http::Answer {
        crate::http::Answer {
            status: reqwest::StatusCode::from_u16(status).unwrap(),
            headers: Default::default(),
            body: body.as_bytes().to_vec(),
            attempts: 1,
        }
    }

    const OK: &str = "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><SourceIdentity>x</SourceIdentity><AssumedRoleUser><AssumedRoleId>AROA:s</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/dev/s</Arn></AssumedRoleUser><Credentials><AccessKeyId>ASIAX</AccessKeyId><SecretAccessKey>sec/ret+</SecretAccessKey><SessionToken>to&amp;ken</SessionToken><Expiration>2026-11-28T16:32:38Z</Expiration></Credentials></AssumeRoleResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>";

    #[test]
    fn an_answer_gives_the_credentials_and_the_role_sessions_arn() {
        let refused = |_: &str, _: &str| panic!("not refused");
        let role = read_answer(&answer(200, OK), "AssumeRole", "the request", refused).unwrap();
        assert_eq!(role.access_key_id, "ASIAX");
        assert_eq!(role.secret_access_key.expose(), "sec/ret+");
        assert_eq!(role.session_token.expose(), "to&ken");
        assert_eq!(role.expires_at.to_rfc3339(), "2026-11-28T16:32:38+00:00");
        assert_eq!(
            role.assumed_role_arn.as_deref(),
            Some("arn:aws:sts::123456789012:assumed-role/dev/s")
        );
    }

    #[test]
    fn refusals_outages_and_strangers_are_told_apart() {
        let refused = |code: &str, message: &str| fail(Exit::Provider, format!("{code}|{message}"));
        let line = |status, body| {
            let err = read_answer(&answer(status, body), "AssumeRole", "the request", refused)
                .unwrap_err();
            (
                crate::error::one_line(&err),
                crate::error::exit_code_of(&err),
                crate::error::is_transient(&err),
            )
        };
        assert_eq!(
            line(
                403,
                "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>no</Message></Error></ErrorResponse>"
            ),
            ("AccessDenied|no".into(), Exit::Provider, false)
        );
        assert_eq!(
            line(503, "<ErrorResponse><Error><Code>ServiceUnavailable</Code><Message>busy</Message></Error></ErrorResponse>"),
            ("the request answered HTTP 503 Service Unavailable (ServiceUnavailable: busy); STS is failing or overloaded, try again later".into(), Exit::Provider, true)
        );
        assert_eq!(
            line(400, "<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>"),
            ("the request answered HTTP 400 Bad Request (Throttling: Rate exceeded); STS is failing or overloaded, try again later".into(), Exit::Provider, true)
        );
        assert_eq!(
            line(404, "<html>not found</html>"),
            ("the request answered HTTP 404 Not Found, not an STS answer; check the STS endpoint (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL)".into(), Exit::Provider, false)
        );
        assert_eq!(
            line(200, "<html/>"),
            ("the request answered without AssumeRoleResult; check the STS endpoint (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL)".into(), Exit::Provider, true)
        );
    }
}
