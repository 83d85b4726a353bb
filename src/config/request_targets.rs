//! What each token request says about what its token is for — the scopes, and the `resource`
//! (RFC 8707) or `audience` parameters — decided here once, for every kind of request and every
//! kind of entry, so that a user debugging a provider's `invalid_target` finds it in one place.
//! The grants (`grants/`) append what [`Config::request_targets`] says and decide nothing.
//!
//! Without `--shared-login`, every request carries the `--audience` and `--resource` given,
//! and asks for the `--scope`s. A shared login's requests are shaped by its cluster's target
//! (`shared_login.rs`):
//! - the login's authorization request asks for every cluster's resource at once (RFC 8707
//!   §2.1), or this cluster's audience (Auth0 takes one), or by scope (every cluster's scope
//!   beside the configured ones: Entra ID, Keycloak);
//! - its token requests (the code exchange, the device flow's polls, the refresh) name one
//!   target: with a refresh derivation this cluster's, so that the token the login gets serves
//!   it; with an exchange one of the `--login-resource`s (a provider that granted several wants
//!   one named, RFC 8707 §2.2), this cluster's when it is among them;
//! - a refresh for a scope target asks for that scope beside the configured ones (how Entra ID
//!   and Keycloak pick the audience);
//! - the exchange of the login's access token names the cluster's target
//!   ([`Target::exchange_parameter`]).

use super::{Config, Derive, SharedLogin, Target};

/// What the requests of one set of settings carry about their target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTargets {
    /// The scopes of a login's authorization request (and device authorization request), and
    /// of the grants that name scopes in their token request (client credentials, password,
    /// token exchange).
    pub scopes: Vec<String>,
    /// The parameters of the authorization request and of the device authorization request.
    pub authorization: Vec<(&'static str, String)>,
    /// The parameters of every token request: the code exchange, the device flow's polls, the
    /// refresh, client credentials, password and the token exchange grant.
    pub token: Vec<(&'static str, String)>,
    /// The scopes a refresh asks for: none (the grant's), unless a shared login's cluster is
    /// targeted by scope.
    pub refresh_scopes: Vec<String>,
}

impl Config {
    /// What each kind of token request carries about its target, with these settings.
    pub fn request_targets(&self) -> RequestTargets {
        match &self.shared_login {
            None => {
                let mut parameters = Vec::new();
                if let Some(audience) = &self.audience {
                    parameters.push(("audience", audience.clone()));
                }
                if let Some(resource) = &self.resource {
                    parameters.push(("resource", resource.clone()));
                }
                RequestTargets {
                    scopes: self.scopes.clone(),
                    authorization: parameters.clone(),
                    token: parameters,
                    refresh_scopes: Vec::new(),
                }
            }
            Some(shared) => shared_login_targets(&self.scopes, shared),
        }
    }
}

/// A shared login's requests, for its cluster's target (see the module comment).
fn shared_login_targets(scopes: &[String], shared: &SharedLogin) -> RequestTargets {
    let mut login_scopes = scopes.to_vec();
    let authorization = match &shared.target {
        Target::Scope { .. } => {
            for scope in shared.login_targets() {
                if !login_scopes.contains(&scope) {
                    login_scopes.push(scope);
                }
            }
            Vec::new()
        }
        Target::Audience(audience) if shared.derive == Derive::Refresh => {
            vec![("audience", audience.clone())]
        }
        _ => shared
            .login_targets()
            .into_iter()
            .map(|resource| ("resource", resource))
            .collect(),
    };
    let token = match shared.derive {
        Derive::Refresh => match &shared.target {
            Target::Resource(uri) => vec![("resource", uri.clone())],
            Target::Audience(audience) => vec![("audience", audience.clone())],
            Target::Scope { .. } | Target::Cloud { .. } => Vec::new(),
        },
        // The cloud's exchange takes the login's ID token, as the login got it.
        Derive::Cloud => Vec::new(),
        Derive::TokenExchange => {
            let own = shared.target.value();
            let named = shared
                .login_resources
                .iter()
                .find(|resource| *resource == own)
                .or(shared.login_resources.first());
            named
                .map(|resource| ("resource", resource.clone()))
                .into_iter()
                .collect()
        }
    };
    let refresh_scopes = match (&shared.target, shared.derive) {
        (Target::Scope { scope, .. }, Derive::Refresh) => {
            let mut asked = scopes.to_vec();
            asked.push(scope.clone());
            asked
        }
        _ => Vec::new(),
    };
    RequestTargets {
        scopes: login_scopes,
        authorization,
        token,
        refresh_scopes,
    }
}

impl Target {
    /// The parameter that names this target in the exchange of a shared login's access token
    /// (RFC 8693): `resource`, `audience`, or `scope`.
    pub fn exchange_parameter(&self) -> (&'static str, String) {
        match self {
            Target::Resource(uri) => ("resource", uri.clone()),
            Target::Audience(audience) => ("audience", audience.clone()),
            Target::Scope { scope, .. } => ("scope", scope.clone()),
            // Never an RFC 8693 exchange's target: a cloud's exchange names its own.
            Target::Cloud(cloud) => ("audience", cloud.audience().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(target: Target, derive: Derive, login_resources: &[&str]) -> SharedLogin {
        SharedLogin {
            target,
            derive,
            login_resources: login_resources.iter().map(|r| r.to_string()).collect(),
            login_scopes: Vec::new(),
        }
    }

    /// The parameter a shared login's token requests carry (the code exchange, the refresh).
    fn token_parameter(shared: &SharedLogin) -> Option<(&'static str, String)> {
        let targets = shared_login_targets(&[], shared);
        assert!(targets.token.len() <= 1, "{targets:?}");
        targets.token.into_iter().next()
    }

    #[test]
    fn each_token_request_names_the_target_as_its_provider_family_takes_it() {
        let resource = Target::Resource("https://b".into());
        let audience = Target::Audience("https://b".into());
        let scope = Target::Scope {
            scope: "api://b/.default".into(),
            audience: "api://b".into(),
        };
        let pair = |name, value: &str| Some((name, value.to_string()));
        // A refresh derivation: the refresh (and the login's code exchange) ask for this
        // cluster's target: `resource` (RFC 8707), `audience` (Auth0), or by scope (Entra ID).
        let refresh = |target| shared(target, Derive::Refresh, &["https://a"]);
        assert_eq!(
            token_parameter(&refresh(resource.clone())),
            pair("resource", "https://b")
        );
        assert_eq!(
            token_parameter(&refresh(audience.clone())),
            pair("audience", "https://b")
        );
        assert_eq!(token_parameter(&refresh(scope.clone())), None);
        // An exchange: the login's own requests name one resource the login asked for, this
        // cluster's when it is one of them; none when the login asked for none.
        let exchange = |target, login: &[&str]| shared(target, Derive::TokenExchange, login);
        assert_eq!(
            token_parameter(&exchange(resource.clone(), &["https://a", "https://b"])),
            pair("resource", "https://b")
        );
        assert_eq!(
            token_parameter(&exchange(audience, &["https://a"])),
            pair("resource", "https://a")
        );
        assert_eq!(token_parameter(&exchange(scope, &[])), None);
    }

    #[test]
    fn the_login_asks_for_every_cluster_and_a_scope_refresh_for_its_own() {
        let configured = ["openid".to_string()];
        let by_resource = shared_login_targets(
            &configured,
            &shared(
                Target::Resource("https://c".into()),
                Derive::Refresh,
                &["https://a", "https://b"],
            ),
        );
        assert_eq!(
            by_resource.authorization,
            [
                ("resource", "https://a".to_string()),
                ("resource", "https://b".into()),
                ("resource", "https://c".into())
            ]
        );
        assert_eq!(by_resource.scopes, ["openid"]);
        assert!(by_resource.refresh_scopes.is_empty());
        let mut by_scope = shared(
            Target::Scope {
                scope: "api://b/.default".into(),
                audience: "api://b".into(),
            },
            Derive::Refresh,
            &[],
        );
        by_scope.login_scopes = vec!["api://a/.default".into()];
        let by_scope = shared_login_targets(&configured, &by_scope);
        assert!(by_scope.authorization.is_empty() && by_scope.token.is_empty());
        assert_eq!(
            by_scope.scopes,
            ["openid", "api://a/.default", "api://b/.default"]
        );
        assert_eq!(by_scope.refresh_scopes, ["openid", "api://b/.default"]);
    }
}
