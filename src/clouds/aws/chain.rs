//! The AWS default credential chain, in the AWS CLI's order (botocore's
//! `create_credential_resolver`): the environment's keys (skipped when `--aws-profile` names a
//! profile, as `--profile` skips them there); then the profile's — a role to assume (`role_arn`
//! with `source_profile` or `credential_source`), a web identity (the profile's
//! `web_identity_token_file`, else `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`), SSO, its
//! keys, its `credential_process`; then container credentials; then the instance metadata
//! service. The first that has credentials answers; one that is set up and fails is the error
//! (an SSO session that needs `aws sso login`, a refused role), never a silent fall-through.

use super::credentials::Credentials;
use super::endpoint::{self, Endpoint};
use super::files::{Section, SharedFiles};
use super::net::Clients;
use super::sts::{self, AssumeRole, WebIdentity};
use super::{metadata, process, sso, vars};
use crate::error::{Exit, fail, transient};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use std::path::Path;

/// Which profile, and how it was chosen.
#[derive(Debug, Clone)]
pub(super) struct ProfileChoice {
    pub name: String,
    /// By `--aws-profile`: the environment's keys are then not used (botocore's `--profile`).
    pub from_flag: bool,
    /// By the flag or a variable: it must exist.
    pub named: bool,
}

impl ProfileChoice {
    /// `--aws-profile`, else `AWS_PROFILE`, else `AWS_DEFAULT_PROFILE`, else `default`.
    pub fn of(flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> ProfileChoice {
        if let Some(name) = flag.filter(|n| !n.is_empty()) {
            return ProfileChoice {
                name: name.to_string(),
                from_flag: true,
                named: true,
            };
        }
        match [vars::AWS_PROFILE, vars::AWS_DEFAULT_PROFILE]
            .into_iter()
            .find_map(|name| env(name).filter(|v| !v.is_empty()))
        {
            Some(name) => ProfileChoice {
                name,
                from_flag: false,
                named: true,
            },
            None => ProfileChoice {
                name: "default".into(),
                from_flag: false,
                named: false,
            },
        }
    }

    /// How the profile is named in messages, and the flag that picks it in commands.
    pub fn profile_flag(&self) -> String {
        if self.name == "default" {
            String::new()
        } else {
            format!(" --profile {}", self.name)
        }
    }
}

/// What every step reads.
pub(super) struct Context<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub home: Option<&'a Path>,
    pub now: DateTime<Utc>,
    pub files: &'a SharedFiles,
    pub clients: &'a Clients<'a>,
    /// Where STS is (for the roles the chain assumes).
    pub sts: Endpoint,
    pub profile: ProfileChoice,
}

impl Context<'_> {
    fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|value| !value.is_empty())
    }
}

/// The credentials the chain finds first.
pub(super) fn credentials(cx: &Context) -> anyhow::Result<Credentials> {
    // A profile that is named must exist, even where the environment's keys then sign: the
    // AWS CLI refuses it too (a typo in AWS_PROFILE is found at once, not on another machine).
    let profile = cx.files.profile(&cx.profile.name);
    if profile.is_none() && cx.profile.named {
        return Err(fail(
            Exit::Input,
            format!(
                "the AWS profile {:?} is not in {}; check --aws-profile or AWS_PROFILE, or add the profile (aws configure --profile {})",
                cx.profile.name,
                cx.files.both(),
                cx.profile.name
            ),
        ));
    }
    if !cx.profile.from_flag
        && let Some(found) = environment(cx)?
    {
        return Ok(found);
    }
    if let Some(found) = from_profile(cx, &cx.profile.name, &mut Vec::new())? {
        return Ok(found);
    }
    if let Some(found) = metadata::container(cx)? {
        return Ok(found);
    }
    if let Some(found) = metadata::instance(cx)? {
        return Ok(found);
    }
    Err(transient(
        Exit::Login,
        format!(
            "no AWS credentials found (not in the environment, nor for the profile {:?} in {}, nor from a container or instance role); configure them (aws configure{}, or aws sso login{})",
            cx.profile.name,
            cx.files.both(),
            cx.profile.profile_flag(),
            cx.profile.profile_flag(),
        ),
    ))
}

/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, with the session token and expiry.
pub(super) fn environment(cx: &Context) -> anyhow::Result<Option<Credentials>> {
    let key = cx.var(vars::AWS_ACCESS_KEY_ID);
    let secret = cx.var(vars::AWS_SECRET_ACCESS_KEY);
    let (key, secret) = match (key, secret) {
        (Some(key), Some(secret)) => (key, secret),
        (None, None) => return Ok(None),
        (Some(_), None) | (None, Some(_)) => {
            return Err(fail(
                Exit::Input,
                "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set; set both, or neither",
            ));
        }
    };
    let expires_at = match cx.var(vars::AWS_CREDENTIAL_EXPIRATION) {
        None => None,
        Some(text) => Some(time(&text).ok_or_else(|| {
            fail(
                Exit::Input,
                format!(
                    "AWS_CREDENTIAL_EXPIRATION is not a time ({}); give it as 2026-11-28T16:00:00Z",
                    crate::text::printable_brief(&text, 60)
                ),
            )
        })?),
    };
    let found = Credentials {
        access_key_id: key,
        secret_access_key: Secret::new(secret),
        session_token: cx
            .var(vars::AWS_SESSION_TOKEN)
            .or_else(|| cx.var(vars::AWS_SECURITY_TOKEN))
            .map(Secret::new),
        expires_at,
        source: "the environment (AWS_ACCESS_KEY_ID)".into(),
    };
    still_valid(found, cx.now, "renew them and set them again").map(Some)
}

/// Credentials that have run out are a login needed, named with their source.
pub(super) fn still_valid(
    found: Credentials,
    now: DateTime<Utc>,
    what_to_do: &str,
) -> anyhow::Result<Credentials> {
    match found.expires_at {
        Some(at) if at <= now => Err(transient(
            Exit::Login,
            format!(
                "the AWS credentials from {} expired at {}; {what_to_do}",
                found.source,
                crate::duration::display_time(at)
            ),
        )),
        _ => Ok(found),
    }
}

/// An ISO 8601 / RFC 3339 time as AWS writes them (`2026-11-28T16:00:00Z`, with fractions or
/// an offset).
pub(super) fn time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

/// The credentials of profile `name`, if it sets any up. `visited` is the `source_profile`
/// chain so far (a loop is an error, as in botocore).
fn from_profile(
    cx: &Context,
    name: &str,
    visited: &mut Vec<String>,
) -> anyhow::Result<Option<Credentials>> {
    let Some(profile) = cx.files.profile(name) else {
        // The default profile need not exist; a named one was checked by the caller.
        return web_identity(cx, name, None);
    };
    if profile.get("role_arn").is_some()
        && (profile.get("source_profile").is_some() || profile.get("credential_source").is_some())
    {
        return assumed_role(cx, name, profile, visited).map(Some);
    }
    if let Some(found) = web_identity(cx, name, Some(profile))? {
        return Ok(Some(found));
    }
    if profile.get("role_arn").is_some() {
        return Err(fail(
            Exit::Input,
            format!(
                "the AWS profile {name:?} in {} has a role_arn but no source_profile, credential_source or web_identity_token_file to assume it with; add one",
                cx.files.file_of(name).display()
            ),
        ));
    }
    if profile.get("sso_session").is_some() || profile.get("sso_start_url").is_some() {
        return sso::credentials(cx, name, profile).map(Some);
    }
    if let Some(found) = static_keys(cx, name, profile)? {
        return Ok(Some(found));
    }
    if let Some(command) = profile.get("credential_process") {
        return process::credentials(cx, name, command).map(Some);
    }
    Ok(None)
}

/// `aws_access_key_id` and `aws_secret_access_key` (and `aws_session_token`) of a profile.
fn static_keys(cx: &Context, name: &str, profile: &Section) -> anyhow::Result<Option<Credentials>> {
    let (key, secret) = match (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        (Some(key), Some(secret)) => (key, secret),
        (None, None) => return Ok(None),
        _ => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the AWS profile {name:?} in {} has only one of aws_access_key_id and aws_secret_access_key; set both",
                    cx.files.file_of(name).display()
                ),
            ));
        }
    };
    Ok(Some(Credentials {
        access_key_id: key.to_string(),
        secret_access_key: Secret::new(secret),
        session_token: profile
            .get("aws_session_token")
            .or_else(|| profile.get("aws_security_token"))
            .map(Secret::new),
        expires_at: None,
        source: format!(
            "the AWS profile {name:?} in {}",
            cx.files.file_of(name).display()
        ),
    }))
}

/// botocore's default role session name: `botocore-session-<unix seconds>`.
fn default_session_name(now: DateTime<Utc>) -> String {
    format!("botocore-session-{}", now.timestamp())
}

/// `role_arn` with `source_profile` or `credential_source`: the source's credentials, then
/// `AssumeRole`.
fn assumed_role(
    cx: &Context,
    name: &str,
    profile: &Section,
    visited: &mut Vec<String>,
) -> anyhow::Result<Credentials> {
    let role_arn = profile.get("role_arn").unwrap_or_default();
    let file = cx.files.file_of(name).display().to_string();
    if profile.get("mfa_serial").is_some() {
        return Err(fail(
            Exit::Login,
            format!(
                "the AWS profile {name:?} in {file} needs an MFA code (mfa_serial) to assume {role_arn}, which kubectl cannot ask for; use a profile without mfa_serial, or a credential_process that asks for the code"
            ),
        ));
    }
    visited.push(name.to_string());
    let source = match (
        profile.get("source_profile"),
        profile.get("credential_source"),
    ) {
        (Some(_), Some(_)) => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the AWS profile {name:?} in {file} has both source_profile and credential_source; keep one"
                ),
            ));
        }
        (Some(source), None) => source_profile(cx, name, source, visited)?,
        (None, Some(kind)) => credential_source(cx, name, kind)?,
        (None, None) => unreachable!("the caller checked"),
    };
    let duration_seconds = match profile.get("duration_seconds") {
        None => None,
        Some(text) => Some(text.parse::<u32>().map_err(|_| {
            fail(
                Exit::Input,
                format!(
                    "the AWS profile {name:?} in {file} has duration_seconds {:?}, not a number of seconds; fix it",
                    crate::text::printable_brief(text, 40)
                ),
            )
        })?),
    };
    let session_name = profile
        .get("role_session_name")
        .map(str::to_string)
        .unwrap_or_else(|| default_session_name(cx.now));
    let role = sts::assume_role(
        cx.clients,
        &cx.sts,
        &source,
        &AssumeRole {
            role_arn,
            session_name: &session_name,
            external_id: profile.get("external_id"),
            duration_seconds,
        },
        cx.now,
    )?;
    Ok(role.for_signing(&format!("the role {role_arn} of the AWS profile {name:?}")))
}

/// The credentials of a `source_profile`: itself with its own keys, another role, or any
/// profile credentials but the environment's (botocore's source-profile providers).
fn source_profile(
    cx: &Context,
    from: &str,
    source: &str,
    visited: &mut Vec<String>,
) -> anyhow::Result<Credentials> {
    let Some(profile) = cx.files.profile(source) else {
        return Err(fail(
            Exit::Input,
            format!(
                "the AWS profile {from:?} names the source_profile {source:?}, which is not in {}; fix source_profile",
                cx.files.both()
            ),
        ));
    };
    // A profile that is its own source uses its own keys.
    if source == from
        && let Some(found) = static_keys(cx, source, profile)?
    {
        return Ok(found);
    }
    if visited.iter().any(|seen| seen == source) {
        visited.push(source.to_string());
        return Err(fail(
            Exit::Input,
            format!(
                "the AWS profiles' source_profile settings go round in a loop ({}); fix one of them",
                visited.join(" → ")
            ),
        ));
    }
    from_profile(cx, source, visited)?.ok_or_else(|| {
        fail(
            Exit::Input,
            format!(
                "the AWS profile {source:?} (the source_profile of {from:?}) has no credentials; give it keys, SSO, a role or a credential_process"
            ),
        )
    })
}

/// `credential_source`: the environment, the instance's role or the container's.
fn credential_source(cx: &Context, name: &str, kind: &str) -> anyhow::Result<Credentials> {
    let found = match kind {
        "Environment" => environment(cx)?,
        "Ec2InstanceMetadata" => metadata::instance(cx)?,
        "EcsContainer" => metadata::container(cx)?,
        other => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the AWS profile {name:?} has credential_source {:?}; it takes Environment, Ec2InstanceMetadata or EcsContainer",
                    crate::text::printable_brief(other, 60)
                ),
            ));
        }
    };
    found.ok_or_else(|| {
        transient(
            Exit::Login,
            format!(
                "the credential_source {kind} of the AWS profile {name:?} has no credentials here; run where it has, or change credential_source"
            ),
        )
    })
}

/// A web identity token file and a role: the profile's `web_identity_token_file` and
/// `role_arn`, else `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`.
fn web_identity(
    cx: &Context,
    name: &str,
    profile: Option<&Section>,
) -> anyhow::Result<Option<Credentials>> {
    let from_profile = profile.and_then(|p| {
        Some((
            p.get("web_identity_token_file")?.to_string(),
            p.get("role_arn")?.to_string(),
            p.get("role_session_name").map(str::to_string),
            format!("the AWS profile {name:?}'s web_identity_token_file"),
        ))
    });
    let from_env = || {
        Some((
            cx.var(vars::AWS_WEB_IDENTITY_TOKEN_FILE)?,
            cx.var(vars::AWS_ROLE_ARN)?,
            cx.var(vars::AWS_ROLE_SESSION_NAME),
            "AWS_WEB_IDENTITY_TOKEN_FILE".to_string(),
        ))
    };
    let Some((file, role_arn, session_name, from)) = from_profile.or_else(from_env) else {
        return Ok(None);
    };
    let token = std::fs::read_to_string(&file).map_err(|err| {
        transient(
            Exit::Login,
            format!(
                "cannot read the web identity token file {file} ({from}): {err}; check that the token is mounted there"
            ),
        )
    })?;
    let session_name = session_name.unwrap_or_else(|| default_session_name(cx.now));
    let token_from = format!("the file {file}");
    let role = sts::assume_role_with_web_identity(
        cx.clients,
        &cx.sts,
        &WebIdentity {
            role_arn: &role_arn,
            session_name: &session_name,
            token_from: &token_from,
        },
        &Secret::new(token.trim()),
    )?;
    Ok(Some(role.for_signing(&format!(
        "the role {role_arn} assumed with {token_from}"
    ))))
}

/// The region and STS endpoint every request of the chain uses, from the settings, the
/// environment and the chosen profile.
pub(super) fn region_and_sts(
    region_flag: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    profile: &ProfileChoice,
) -> anyhow::Result<(Option<String>, Endpoint)> {
    let region = endpoint::region(region_flag, env, files.profile(&profile.name))?;
    let sts = endpoint::sts(region.as_deref(), env, files, &profile.name)?;
    Ok((region, sts))
}
