//! `--shared-login`: one login (one refresh token) for an issuer, client and account, and each
//! cluster's token derived from it for the cluster's own target. This module resolves the
//! settings ([`SharedLogin`]) and what they mean: what the one login asks for, whether a target
//! is bound to the login's grant, and which audience a derived token must carry. What each
//! request carries is `request_targets.rs`'s; the derivation itself is `acquire/shared.rs`; the
//! login's and the derived tokens' entries are keyed by `cache/key.rs`.
//!
//! A target is a resource (RFC 8707: oidc-provider, Authelia), an audience (Auth0's
//! multi-resource refresh tokens) or a scope (Entra ID and Keycloak derive the audience from the
//! scope asked for). Only access tokens can change audience on refresh (an ID token's `aud` is
//! the client, OpenID Connect Core §12.2), so a shared login always hands out access tokens.

use super::extension::Extension;
use super::{Grant, TokenKind, input};
use crate::cli::{DeriveArg, TokenArgs};

/// How a cluster's token is derived from the one login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// A refresh grant of the login's refresh token carrying the target.
    Refresh,
    /// An RFC 8693 exchange of the login's access token for one with the target.
    TokenExchange,
    /// The login's ID token traded at a cloud's security token service for the cloud's own
    /// token (Google's workforce pools): `config::CloudSettings` says where and for what.
    Cloud,
}

impl Derive {
    pub fn name(self) -> &'static str {
        match self {
            Derive::Refresh => "refresh",
            Derive::TokenExchange => "token-exchange",
            Derive::Cloud => "cloud",
        }
    }
}

/// What one cluster's token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `resource` (RFC 8707); the token's `aud` is the resource.
    Resource(String),
    /// `audience` (Auth0 and others); the token's `aud` is the audience.
    Audience(String),
    /// A scope the provider derives the audience from; `audience` is the one the token must
    /// carry.
    Scope { scope: String, audience: String },
    /// A cloud's token ([`Derive::Cloud`]), exchanged for the login's ID token.
    Cloud(super::CloudTarget),
}

impl Target {
    /// The audience a token derived for this target must carry.
    pub fn audience(&self) -> &str {
        match self {
            Target::Resource(uri) | Target::Audience(uri) => uri,
            Target::Scope { audience, .. } => audience,
            Target::Cloud(cloud) => cloud.audience(),
        }
    }

    /// The target in a phrase: `resource https://a.example`.
    pub fn describe(&self) -> String {
        match self {
            Target::Resource(uri) => format!("resource {uri}"),
            Target::Audience(audience) => format!("audience {audience}"),
            Target::Scope { scope, .. } => format!("scope {scope}"),
            Target::Cloud(cloud) => cloud.describe(),
        }
    }

    /// The resource (RFC 8707) the target names, if it is one.
    pub fn resource(&self) -> Option<&str> {
        match self {
            Target::Resource(uri) => Some(uri),
            _ => None,
        }
    }

    /// What the target is, as written (the resource, audience or scope).
    pub fn value(&self) -> &str {
        match self {
            Target::Resource(value) | Target::Audience(value) => value,
            Target::Scope { scope, .. } => scope,
            Target::Cloud(cloud) => cloud.audience(),
        }
    }

    /// What keys a token derived for this target (`cache::CacheKey::derived`): the phrase, or
    /// for a cloud's token everything that changes it.
    pub fn key_material(&self) -> String {
        match self {
            Target::Cloud(cloud) => cloud.key().to_string(),
            _ => self.describe(),
        }
    }
}

/// The settings of a shared login, resolved.
#[derive(Debug, Clone)]
pub struct SharedLogin {
    /// This cluster's target.
    pub target: Target,
    pub derive: Derive,
    /// `--login-resource`s as given (this cluster's target not added).
    pub login_resources: Vec<String>,
    /// `--login-scope`s as given (this cluster's target not added).
    pub login_scopes: Vec<String>,
}

impl SharedLogin {
    /// The targets the one login asks the provider for on behalf of every cluster, this
    /// cluster's among them where the provider grants the target to the login (a refresh
    /// derivation): `resource`s or `audience`s, or scopes for a scope target. With a token
    /// exchange the targets are the exchange's business, and the login asks for the
    /// `--login-resource`s alone.
    pub fn login_targets(&self) -> Vec<String> {
        let mut targets = match self.target {
            Target::Scope { .. } => self.login_scopes.clone(),
            _ => self.login_resources.clone(),
        };
        if self.derive == Derive::Refresh && !targets.iter().any(|t| t == self.target.value()) {
            targets.push(self.target.value().to_string());
        }
        targets
    }

    /// Asks the login for `targets` too (what a login being replaced held): resources, or
    /// scopes for a scope target.
    pub fn also_ask_for(&mut self, targets: Vec<String>) {
        let list = match self.target {
            Target::Scope { .. } => &mut self.login_scopes,
            _ => &mut self.login_resources,
        };
        for target in targets {
            if !list.contains(&target) {
                list.push(target);
            }
        }
    }

    /// How a derived token is named where its grant is shown (`status`): the derivation, or for
    /// a cloud's token the cloud's exchange.
    pub fn derived_grant_name(&self) -> &'static str {
        match &self.target {
            Target::Cloud(cloud) => cloud.grant_name(),
            _ => self.derive.name(),
        }
    }

    /// Whether the provider binds this target to what the login was granted, so that a refresh
    /// for a target outside the grant must never be sent: RFC 8707 §2.2 resources (oidc-provider
    /// answers `invalid_target` and spends the refresh token), and audiences. A scope is for
    /// the provider to judge (Entra ID's refresh tokens cover every resource consented to), and
    /// an exchange spends no refresh token.
    pub fn bound_to_the_grant(&self) -> bool {
        self.derive == Derive::Refresh && !matches!(self.target, Target::Scope { .. })
    }
}

/// `--shared-login` and its settings, from the flags or the cluster extension; `None` when it
/// is off. Checks that the grant can share a login and that exactly one target is named.
pub(super) fn resolve(
    args: &TokenArgs,
    ext: &Extension,
    grant: Grant,
    token_kind: TokenKind,
    audience: Option<String>,
    resource: Option<String>,
) -> anyhow::Result<Option<SharedLogin>> {
    let on = match args.shared_login {
        Some(on) => on,
        None => ext.bool("sharedLogin")?.unwrap_or(false),
    };
    if !on {
        // The extension's key is left alone: a cluster shared by users of both kinds.
        if args.target_scope.is_some() {
            return Err(input(
                "--target-scope names a cluster's target for --shared-login; add --shared-login (sharedLogin in the cluster extension), or ask for the scope with --scope",
            ));
        }
        return Ok(None);
    }
    let target_scope = args.target_scope.clone().or(ext.string("targetScope")?);
    if !(grant.is_user_login()) {
        return Err(input(format!(
            "--shared-login shares a person's login, and --grant-type {} logs nobody in: drop --shared-login; a machine gets a token per cluster by exchanging its own token with each cluster's --audience (--grant-type token-exchange; kubecred's manual: One login for many clusters)",
            grant.name()
        )));
    }
    if token_kind == TokenKind::IdToken && args.use_access_token == Some(false) {
        return Err(input(
            "--shared-login hands out access tokens (an ID token's audience is the client, and cannot change per cluster): drop --use-access-token=false",
        ));
    }
    Ok(Some(SharedLogin {
        target: target(resource, audience, target_scope)?,
        derive: derive(args, ext)?,
        login_resources: login_list(&args.login_resources, ext, "loginResources")?,
        login_scopes: login_list(&args.login_scopes, ext, "loginScopes")?,
    }))
}

/// The shared login a cloud's token is derived from (`target`, `Derive::Cloud`): on whatever
/// `--shared-login` says, with the login's own settings (`--login-resource`, `--login-scope`).
/// An OIDC cluster's target beside it is refused: the cloud names this cluster's.
pub(super) fn for_a_cloud(
    args: &TokenArgs,
    ext: &Extension,
    target: Target,
) -> anyhow::Result<SharedLogin> {
    if args.resource.is_some() || args.audience.is_some() || args.target_scope.is_some() {
        return Err(input(format!(
            "--resource, --audience and --target-scope name an OIDC cluster's target; this cluster's is the {}: leave them out",
            target.describe()
        )));
    }
    Ok(SharedLogin {
        target,
        derive: Derive::Cloud,
        login_resources: login_list(&args.login_resources, ext, "loginResources")?,
        login_scopes: login_list(&args.login_scopes, ext, "loginScopes")?,
    })
}

/// This cluster's one target, from the settings that may name it.
fn target(
    resource: Option<String>,
    audience: Option<String>,
    target_scope: Option<String>,
) -> anyhow::Result<Target> {
    Ok(match (resource, audience, target_scope) {
        (Some(uri), None, None) => Target::Resource(uri),
        (None, Some(audience), None) => Target::Audience(audience),
        (None, audience, Some(scope)) => {
            let audience = audience.unwrap_or_else(|| audience_of_scope(&scope));
            Target::Scope { scope, audience }
        }
        (None, None, None) => {
            return Err(input(
                "--shared-login needs this cluster's target: --resource, --audience or --target-scope (resource, audience or targetScope in the cluster extension, with provideClusterInfo: true)",
            ));
        }
        _ => {
            return Err(input(
                "--shared-login takes one target per cluster: --resource or --audience (or --target-scope, with --audience naming the audience its tokens carry), not both",
            ));
        }
    })
}

/// `--derive`, or the extension's `derive`; a refresh by default.
fn derive(args: &TokenArgs, ext: &Extension) -> anyhow::Result<Derive> {
    Ok(match args.derive {
        Some(DeriveArg::Refresh) => Derive::Refresh,
        Some(DeriveArg::TokenExchange) => Derive::TokenExchange,
        None => match ext.string("derive")?.as_deref() {
            None | Some("refresh") => Derive::Refresh,
            Some("token-exchange") => Derive::TokenExchange,
            Some(other) => {
                return Err(input(format!(
                    "cluster extension derive {other:?} is not refresh or token-exchange"
                )));
            }
        },
    })
}

/// A list of what the login asks for: the flag's values as `given`, else the extension's `key`;
/// trimmed, without empty items or repeats, in order.
fn login_list(given: &[String], ext: &Extension, key: &str) -> anyhow::Result<Vec<String>> {
    let items = if given.is_empty() {
        ext.string_list(key)?.unwrap_or_default()
    } else {
        given.to_vec()
    };
    let mut unique: Vec<String> = Vec::new();
    for item in items
        .iter()
        .map(|item| item.trim())
        .filter(|i| !i.is_empty())
    {
        if !unique.iter().any(|have| have == item) {
            unique.push(item.to_string());
        }
    }
    Ok(unique)
}

/// The audience a provider gives a token asked for with `scope`, by Entra ID's convention:
/// `api://cluster-b/.default` (or `api://cluster-b/access`) is for `api://cluster-b`. A scope
/// that is not a URI with a path names its audience itself.
fn audience_of_scope(scope: &str) -> String {
    match scope.rsplit_once('/') {
        Some((resource, _)) if resource.contains("://") && !resource.ends_with('/') => {
            resource.to_string()
        }
        _ => scope.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_names_its_audience_as_entra_does() {
        assert_eq!(
            audience_of_scope("api://cluster-b/.default"),
            "api://cluster-b"
        );
        assert_eq!(
            audience_of_scope("https://k8s.example/b/access"),
            "https://k8s.example/b"
        );
        assert_eq!(audience_of_scope("cluster-b"), "cluster-b");
        assert_eq!(audience_of_scope("api://cluster-b"), "api://cluster-b");
    }

    #[test]
    fn the_login_asks_for_every_cluster_and_this_one() {
        let shared = |target, derive| SharedLogin {
            target,
            derive,
            login_resources: vec!["https://a".into(), "https://b".into()],
            login_scopes: vec!["cluster-a".into()],
        };
        let b = shared(Target::Resource("https://b".into()), Derive::Refresh);
        assert_eq!(b.login_targets(), ["https://a", "https://b"]);
        assert!(b.bound_to_the_grant());
        let c = shared(Target::Audience("https://c".into()), Derive::Refresh);
        assert_eq!(c.login_targets(), ["https://a", "https://b", "https://c"]);
        let exchanged = shared(Target::Resource("https://c".into()), Derive::TokenExchange);
        assert_eq!(exchanged.login_targets(), ["https://a", "https://b"]);
        assert!(!exchanged.bound_to_the_grant());
        let scope = shared(
            Target::Scope {
                scope: "cluster-b".into(),
                audience: "b".into(),
            },
            Derive::Refresh,
        );
        assert_eq!(scope.login_targets(), ["cluster-a", "cluster-b"]);
        assert!(!scope.bound_to_the_grant());
    }
}
