//! A shared login's tokens (`--shared-login`, settings in `config/shared_login.rs`): one login
//! entry per issuer, client and account — the refresh token, the identity, the targets it was
//! granted — and one derived entry per cluster target, holding that cluster's access token
//! only. The cache hit reads the derived entry alone, as any hit does (`acquire/mod.rs`); both
//! entries are described once (`source.rs`, with `cache::Entry::shared`), and the login entry's
//! record — the targets its login was granted, and refused since — is made here and handed to
//! the cache whole.
//!
//! This module holds the shared login's pieces; deriving itself is one way the renewal step
//! renews (`renewal.rs`, `derive`): the miss path and the background renewal take it like any
//! renewal. On a miss the caller holds the
//! derived entry's lock; the login entry's is taken second (`source.rs`, [`open_login`]), in that order
//! always, so that runs for different clusters queue on the login while runs for one cluster
//! queue on its entry. The token is derived by the refresh step every entry takes
//! (`renewal::refresh`, on the login entry, the request carrying the target: `grants` appends
//! what `config::Config::request_targets` says), or by an RFC 8693 exchange of the login's
//! access token (refreshed first when it ran out). The login's new tokens are saved in the login
//! entry before anything else happens with the answer — also when the derived token is then
//! refused — so that parallel kubectl calls for several clusters never send a refresh token the
//! provider rotated away (oidc-provider revokes the whole grant on reuse). Where only a login
//! will do, the miss path's one login step runs with the login's settings: what it holds and
//! what is asked, together ([`for_a_login`]); the miss path then derives.
//!
//! Checked, never trusted: a derived token must be a JWT whose `aud` holds the target
//! ([`check_audience`]); anything else (Auth0 answers an unknown audience with its default one)
//! is an error naming both, and nothing is cached for the cluster.
//!
//! A target the login was not granted is never sent on its refresh token where the provider
//! binds targets to the grant ([`SharedLogin::bound_to_the_grant`]): oidc-provider spends the
//! refresh token on a refresh it answers `invalid_target`, and the next use revokes the login.
//! When the settings now ask the login for it (`--login-resource`), a new login for the union
//! of what was granted and what is asked follows; otherwise the error says to add it. A target
//! the login was granted and the provider then refused (a provider that narrows a rotated
//! refresh token to the last resource asked for, as glewlwyd's one-time refresh tokens do) is
//! recorded in the login entry and not asked for again until the next login ([`narrowed`],
//! [`refused_since`]).

use super::locked::Locked;
use crate::cache::EntryAbout;
use crate::config::{Config, SharedLogin, Target};
use crate::error::{Exit, fail};
use crate::secret::Secret;
use crate::tokens::Tokens;

/// The login entry, as locked and read, recording from now on what it holds as read: a refresh
/// for one cluster must not change what the login holds for the others.
pub(super) fn open_login(login: Locked<'_>) -> Locked<'_> {
    let read = login.cached.as_ref().map(|cached| &cached.about);
    login.cache.set_record(EntryAbout {
        granted: Some(read.and_then(|r| r.granted.clone()).unwrap_or_default()),
        refused_targets: read.and_then(|r| r.refused_targets.clone()),
        ..settings_record(&login)
    });
    login
}

/// The targets the login entry records it was granted (none without a login entry).
pub(super) fn granted(login: &Locked) -> Vec<String> {
    about_list(login, |about| about.granted.as_ref())
}

/// The granted targets the provider has since refused to refresh the login for.
pub(super) fn refused_targets(login: &Locked) -> Vec<String> {
    about_list(login, |about| about.refused_targets.as_ref())
}

fn about_list(login: &Locked, list: impl Fn(&EntryAbout) -> Option<&Vec<String>>) -> Vec<String> {
    login
        .cached
        .as_ref()
        .map(|cached| &cached.about)
        .and_then(list)
        .cloned()
        .unwrap_or_default()
}

/// What the login entry's cache records now (made from the settings by `cache::Entry::shared`).
fn settings_record(login: &Locked) -> EntryAbout {
    login
        .cache
        .record()
        .expect("a login entry's cache is opened from its settings, never from a listing")
}

/// The settings a new login runs with: `config`'s, asking also for what the login holds (a
/// login for one more cluster must not take the others' targets away); and the login entry
/// recording those targets as granted, and none refused, with every save from now on.
pub(super) fn for_a_login<'c>(config: &Config, login: Locked<'c>) -> (Config, Locked<'c>) {
    let mut union = config.clone();
    let mut targets = Vec::new();
    if let Some(shared) = &mut union.shared_login {
        shared.also_ask_for(granted(&login));
        targets = shared.login_targets();
    }
    login.cache.set_record(EntryAbout {
        granted: Some(targets),
        refused_targets: None,
        ..settings_record(&login)
    });
    (union, login)
}

/// What the derived entry keeps: the access token, its expiry and the identity, nothing that
/// renews (the login does).
pub(super) fn derived_only(tokens: &Tokens) -> Tokens {
    Tokens {
        id_token: None,
        id_token_expiry: None,
        access_token: tokens.access_token.clone(),
        access_token_expiry: tokens.access_token_expiry,
        refresh_token: None,
        obtained_at: tokens.obtained_at,
        identity: tokens.identity.clone(),
        granted_scope: None,
    }
}

/// The token derived for `target` must be a JWT whose `aud` holds the target's audience: the
/// API server of another cluster would accept it otherwise, or this one refuse it.
pub(super) fn check_audience(
    config: &Config,
    tokens: &Tokens,
    target: &Target,
) -> anyhow::Result<()> {
    let wanted = target.audience();
    let issuer = &config.issuer_as_given;
    let payload = tokens
        .access_token
        .as_ref()
        .and_then(|token| crate::tokens::unverified_jwt_segment(token.expose(), 1));
    let Some(payload) = payload else {
        return Err(fail(
            Exit::Provider,
            format!(
                "{issuer} answered the request for {} with an access token that is not a JWT, so its audience cannot be checked against {wanted}; nothing was cached — the provider must issue JWT access tokens for this target",
                target.describe()
            ),
        ));
    };
    let audiences: Vec<&str> = match &payload["aud"] {
        serde_json::Value::String(one) => vec![one.as_str()],
        serde_json::Value::Array(many) => many.iter().filter_map(|a| a.as_str()).collect(),
        _ => Vec::new(),
    };
    if audiences.contains(&wanted) {
        return Ok(());
    }
    let received = if audiences.is_empty() {
        "no audience".to_string()
    } else {
        format!("audience {}", audiences.join(", "))
    };
    Err(fail(
        Exit::Provider,
        format!(
            "{issuer} answered the request for audience {wanted} with a token for {received}; nothing was cached — check that the provider knows {} (an unknown one may be answered with a default audience)",
            target.describe()
        ),
    ))
}

/// The provider refused to refresh the login for a target it was granted (`invalid_target`):
/// the refresh token no longer covers it. Recorded in the login entry (its tokens kept, with
/// the refresh token sent), so that it is not asked for again until the next login.
pub(super) fn narrowed(
    config: &Config,
    shared: &SharedLogin,
    login: &Locked,
    reason: &str,
    sent: Secret,
) -> anyhow::Error {
    if let Some(cached) = &login.cached {
        let kept = Tokens {
            refresh_token: Some(sent),
            ..cached.tokens.clone()
        };
        let mut record = settings_record(login);
        let refused = record.refused_targets.get_or_insert_with(Vec::new);
        let target = shared.target.value();
        if !refused.iter().any(|t| t == target) {
            refused.push(target.to_string());
        }
        login.cache.set_record(record);
        if let Err(err) = login.cache.rewrite(&kept, &login.lock) {
            crate::debug!(
                1,
                "could not record the refused target: {}",
                crate::error::one_line(&err)
            );
        }
    }
    fail(
        Exit::Provider,
        format!(
            "{} refused to refresh the shared login for {} ({}), which the login was granted: the provider no longer grants it to this login's refresh token, as a provider does that narrows each rotated refresh token to the last target asked for (glewlwyd's one-time refresh tokens); not asked again until the next login, which would be narrowed the same way — turn that off at the provider, or give this cluster a login of its own (without --shared-login)",
            config.issuer_as_given,
            shared.target.describe(),
            reason
        ),
    )
}

/// The error for a target the provider refused the login after granting it ([`narrowed`]),
/// without asking again.
pub(super) fn refused_since(config: &Config, shared: &SharedLogin) -> anyhow::Error {
    fail(
        Exit::Provider,
        format!(
            "the shared login for {} no longer serves {}: the provider refused to refresh it for this target after granting it, so it is not asked again until the next login; turn off the provider's narrowing of rotated refresh tokens (glewlwyd's one-time refresh tokens) and log in again (kubecred login), or give this cluster a login of its own (without --shared-login)",
            config.issuer_as_given,
            shared.target.describe()
        ),
    )
}

/// The error for a target the login was not granted and the settings do not ask it for.
pub(super) fn outside_the_login(
    config: &Config,
    shared: &SharedLogin,
    granted: &[String],
) -> anyhow::Error {
    let held = if granted.is_empty() {
        "nothing recorded".to_string()
    } else {
        granted.join(", ")
    };
    fail(
        Exit::Input,
        format!(
            "the shared login for {} was not granted {} (it holds {held}), and refreshing it for one it was not granted would spend it; add --login-resource={} (loginResources in the cluster extension) to this cluster's settings, then run kubectl again to log in once for every cluster",
            config.issuer_as_given,
            shared.target.describe(),
            shared.target.value()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn tokens_with_access(access: &str) -> Tokens {
        Tokens {
            id_token: None,
            id_token_expiry: None,
            access_token: Some(Secret::new(access.to_string())),
            access_token_expiry: None,
            refresh_token: None,
            obtained_at: chrono::Utc::now(),
            identity: None,
            granted_scope: None,
        }
    }

    fn jwt(payload: serde_json::Value) -> String {
        use base64::Engine;
        let encode = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!(
            "{}.{}.sig",
            encode(&serde_json::json!({"alg": "RS256"})),
            encode(&payload)
        )
    }

    fn config() -> Config {
        let dir = std::path::Path::new("/nonexistent/kubecred-test");
        super::super::tests::config_with(dir, &["--shared-login", "--resource=https://b.example"])
    }

    #[test]
    fn a_token_for_another_audience_is_refused_naming_both() {
        let config = config();
        let target = Target::Resource("https://b.example".into());
        let good = tokens_with_access(&jwt(serde_json::json!({"aud": ["x", "https://b.example"]})));
        assert!(check_audience(&config, &good, &target).is_ok());
        let other = tokens_with_access(&jwt(serde_json::json!({"aud": "https://default"})));
        let err = check_audience(&config, &other, &target).unwrap_err();
        let line = crate::error::one_line(&err);
        assert!(
            line.contains(
                "for audience https://b.example with a token for audience https://default"
            ) && line.contains("nothing was cached"),
            "{line}"
        );
        let opaque = tokens_with_access("opaque-token");
        let line = crate::error::one_line(&check_audience(&config, &opaque, &target).unwrap_err());
        assert!(line.contains("not a JWT"), "{line}");
        assert!(!line.contains("opaque-token"), "{line}");
    }

    #[test]
    fn a_cluster_outside_the_login_names_the_resource_and_the_setting() {
        let config = config();
        let shared = config.shared_login.as_ref().unwrap();
        let line = crate::error::one_line(&outside_the_login(
            &config,
            shared,
            &["https://a.example".into()],
        ));
        assert!(
            line.contains("not granted resource https://b.example (it holds https://a.example)")
                && line.contains("add --login-resource=https://b.example"),
            "{line}"
        );
    }
}
