//! EKS tokens, made as `aws eks get-token` makes them: `k8s-aws-v1.` and the unpadded base64url
//! of a presigned STS `GetCallerIdentity` URL (60 s, `x-k8s-aws-id: CLUSTER` signed), handed out
//! for 14 minutes from signing. The credentials that sign it come from the AWS default chain as
//! the AWS CLI resolves it (`chain.rs`: the environment, the shared files' profiles with keys,
//! `credential_process`, SSO, roles and web identity, container credentials, IMDSv2), or from an
//! assumed role: `--aws-role-arn` assumes it with them first (`AssumeRole`, session
//! `EKSGetTokenAuth` as the CLI names it), and a kubecred login trades its ID token for the
//! role's credentials (`AssumeRoleWithWebIdentity`), which the caller keeps like a refresh token
//! and signs with again while they outlast a token ([`RoleCredentials::outlast_a_token`]).
//!
//! Every function takes the environment as a lookup (a stanza's `env` over the process's, or a
//! test's), the home directory, the time, and the network's settings; nothing reads the process's
//! environment or clock, and nothing touches the network before it needs to (keys from the
//! environment or a file sign with no request at all). Every request goes through kubecred's own
//! HTTP client (`net.rs`). Why no AWS SDK crate: see Cargo.toml at `hmac`.

mod chain;
mod credentials;
mod endpoint;
mod files;
mod metadata;
mod net;
mod process;
mod sigv4;
mod sso;
mod sts;
mod vars;

pub use credentials::{RoleCredentials, TOKEN_LIFETIME};
pub use net::Network;

use super::CloudToken;
use crate::error::{Exit, fail};
use crate::secret::Secret;
use base64::Engine;
use chain::{Context, ProfileChoice};
use chrono::{DateTime, Utc};
use files::SharedFiles;
use net::Clients;
use reqwest::Method;
use std::path::Path;

/// What the EKS source is asked: the flags of `get-token --grant-type aws`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EksSettings {
    /// `--eks-cluster`: the cluster's name (or, for EKS on Outposts, its ID), signed as
    /// `x-k8s-aws-id`.
    pub cluster: String,
    /// `--aws-region`.
    pub region: Option<String>,
    /// `--aws-profile`.
    pub profile: Option<String>,
    /// `--aws-role-arn`: assumed before signing.
    pub role_arn: Option<String>,
    /// `--aws-role-session-name`.
    pub role_session_name: Option<String>,
}

/// The role session name `aws eks get-token --role-arn` gives (awscli's
/// `customizations/eks/get_token.py`).
pub const CLI_ROLE_SESSION_NAME: &str = "EKSGetTokenAuth";

/// The prefix of every EKS token.
const TOKEN_PREFIX: &str = "k8s-aws-v1.";

/// The environment as a lookup: a stanza's `env` over the process's, or a test's.
pub type Environment<'a> = &'a dyn Fn(&str) -> Option<String>;

/// An EKS token signed with the chain's credentials, or with `--aws-role-arn`'s after assuming
/// it with them (`AssumeRole` on every call, as the AWS CLI; a caller that keeps role
/// credentials calls [`role_credentials`] and [`eks_token_with`] instead).
pub fn eks_token(
    settings: &EksSettings,
    env: Environment,
    home: Option<&Path>,
    now: DateTime<Utc>,
    network: &Network,
) -> anyhow::Result<CloudToken> {
    check_cluster(settings)?;
    if settings.role_arn.is_some() {
        let role = role_credentials(settings, env, home, now, network)?;
        return eks_token_with(&role, settings, env, home, now);
    }
    let files = SharedFiles::load(env, home)?;
    let profile = ProfileChoice::of(settings.profile.as_deref(), env);
    let (_, sts) = chain::region_and_sts(settings.region.as_deref(), env, &files, &profile)?;
    let clients = Clients::new(network);
    let cx = Context {
        env,
        home,
        now,
        files: &files,
        clients: &clients,
        sts: sts.clone(),
        profile,
    };
    let found = chain::credentials(&cx)?;
    crate::debug!(
        1,
        "signing the EKS token with the AWS credentials from {}",
        found.source
    );
    Ok(token(&found, &sts, &settings.cluster, now, None))
}

/// `--aws-role-arn` assumed with the chain's credentials, with `--aws-role-session-name` or the
/// AWS CLI's session name: the role's temporary credentials, to keep and sign with while they
/// outlast a token.
pub fn role_credentials(
    settings: &EksSettings,
    env: Environment,
    home: Option<&Path>,
    now: DateTime<Utc>,
    network: &Network,
) -> anyhow::Result<RoleCredentials> {
    let role_arn = role_arn(settings)?;
    let files = SharedFiles::load(env, home)?;
    let profile = ProfileChoice::of(settings.profile.as_deref(), env);
    let (_, sts) = chain::region_and_sts(settings.region.as_deref(), env, &files, &profile)?;
    let clients = Clients::new(network);
    let cx = Context {
        env,
        home,
        now,
        files: &files,
        clients: &clients,
        sts: sts.clone(),
        profile,
    };
    let caller = chain::credentials(&cx)?;
    crate::debug!(
        1,
        "assuming {role_arn} with the AWS credentials from {}",
        caller.source
    );
    let session_name = settings
        .role_session_name
        .as_deref()
        .unwrap_or(CLI_ROLE_SESSION_NAME);
    sts::assume_role(
        &clients,
        &sts,
        &caller,
        &sts::AssumeRole {
            role_arn,
            session_name,
            external_id: None,
            duration_seconds: None,
        },
        now,
    )
}

/// The role's credentials for a kubecred login's ID token (`AssumeRoleWithWebIdentity`, which
/// needs no AWS credentials), with `--aws-role-session-name` or [`web_identity_session_name`].
pub fn assume_role_with_web_identity(
    settings: &EksSettings,
    id_token: &Secret,
    env: Environment,
    home: Option<&Path>,
    network: &Network,
) -> anyhow::Result<RoleCredentials> {
    let role_arn = role_arn(settings)?;
    let files = SharedFiles::load(env, home)?;
    let profile = ProfileChoice::of(settings.profile.as_deref(), env);
    let (_, sts) = chain::region_and_sts(settings.region.as_deref(), env, &files, &profile)?;
    let session_name = match &settings.role_session_name {
        Some(name) => name.clone(),
        None => web_identity_session_name(id_token),
    };
    sts::assume_role_with_web_identity(
        &Clients::new(network),
        &sts,
        &sts::WebIdentity {
            role_arn,
            session_name: &session_name,
            token_from: "your kubecred login",
        },
        id_token,
    )
}

/// An EKS token signed with a role's credentials (no request: the region and endpoint come from
/// the settings, the environment and the shared files).
pub fn eks_token_with(
    role: &RoleCredentials,
    settings: &EksSettings,
    env: Environment,
    home: Option<&Path>,
    now: DateTime<Utc>,
) -> anyhow::Result<CloudToken> {
    check_cluster(settings)?;
    let files = SharedFiles::load(env, home)?;
    let profile = ProfileChoice::of(settings.profile.as_deref(), env);
    let (_, sts) = chain::region_and_sts(settings.region.as_deref(), env, &files, &profile)?;
    let signing = role.for_signing("the assumed role");
    Ok(token(
        &signing,
        &sts,
        &settings.cluster,
        now,
        role.assumed_role_arn.clone(),
    ))
}

/// The session name for a login's role session: who logged in (the ID token's `email`, else
/// `preferred_username`, else `sub`) in the characters STS takes (`[\w+=,.@-]`, 2 to 64), so
/// that the ARN the cluster sees, `assumed-role/ROLE/SESSION`, names the person. The token was
/// verified by the login; here it is only read.
pub fn web_identity_session_name(id_token: &Secret) -> String {
    let claims = id_token
        .expose()
        .split('.')
        .nth(1)
        .and_then(|payload| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload.trim_end_matches('='))
                .ok()
        })
        .and_then(|json| serde_json::from_slice::<serde_json::Value>(&json).ok());
    let who = claims.as_ref().and_then(|claims| {
        ["email", "preferred_username", "sub"]
            .into_iter()
            .find_map(|name| claims.get(name)?.as_str().filter(|v| !v.is_empty()))
    });
    let name: String = who
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_+=,.@-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if name.len() < 2 {
        "kubecred".into()
    } else {
        name
    }
}

/// Who the token says the caller is: STS's `GetCallerIdentity` asked with the token's own
/// presigned URL, as EKS asks it (the ARN the cluster maps to a user).
pub fn caller_identity(token: &Secret, cluster: &str, network: &Network) -> anyhow::Result<String> {
    let url = presigned_url_of(token).ok_or_else(|| {
        fail(
            Exit::Input,
            "the token is not an EKS token (k8s-aws-v1. and a presigned STS URL)",
        )
    })?;
    let clients = Clients::new(network);
    let shown = url.split('?').next().unwrap_or_default().to_string();
    let what = format!("the GetCallerIdentity request to {shown}");
    let answer = clients.send(
        Method::GET,
        &url,
        &[("x-k8s-aws-id", cluster.to_string())],
        Vec::new(),
        &what,
    )?;
    let body = String::from_utf8_lossy(&answer.body);
    if !answer.status.is_success() {
        let code = sts::element(&body, "Code").unwrap_or_default();
        let message = sts::element(&body, "Message").unwrap_or_default();
        return Err(fail(
            Exit::Provider,
            format!(
                "{what} answered HTTP {} ({}: {}); the token's credentials are not accepted",
                answer.status,
                crate::text::printable_brief(&code, 80),
                crate::text::printable_brief(&message, 300)
            ),
        ));
    }
    sts::element(&body, "Arn").ok_or_else(|| {
        crate::error::outage(format!(
            "{what} answered without an Arn; check the STS endpoint"
        ))
    })
}

/// The presigned URL inside an EKS token.
fn presigned_url_of(token: &Secret) -> Option<String> {
    let encoded = token.expose().strip_prefix(TOKEN_PREFIX)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn token(
    credentials: &credentials::Credentials,
    sts: &endpoint::Endpoint,
    cluster: &str,
    now: DateTime<Utc>,
    who: Option<String>,
) -> CloudToken {
    let url = sigv4::presigned_get_caller_identity(credentials, sts, cluster, now);
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url.as_bytes());
    CloudToken {
        token: Secret::new(format!("{TOKEN_PREFIX}{encoded}")),
        expires_at: now + TOKEN_LIFETIME,
        who,
    }
}

fn check_cluster(settings: &EksSettings) -> anyhow::Result<()> {
    if settings.cluster.trim().is_empty() {
        return Err(fail(
            Exit::Input,
            "--grant-type aws needs the cluster's name; give --eks-cluster",
        ));
    }
    Ok(())
}

fn role_arn(settings: &EksSettings) -> anyhow::Result<&str> {
    settings
        .role_arn
        .as_deref()
        .filter(|arn| !arn.is_empty())
        .ok_or_else(|| fail(Exit::Input, "no role to assume; give --aws-role-arn"))
}

#[cfg(test)]
mod tests;
