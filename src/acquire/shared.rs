//! A shared login's tokens (`--shared-login`, settings in `config/shared_login.rs`): one login
//! entry per issuer, client and account — the refresh token, the identity, the targets it was
//! granted — and one derived entry per cluster target, holding that cluster's access token
//! only. The cache hit reads the derived entry alone, as any hit does (`acquire/mod.rs`).
//!
//! On a miss the caller holds the derived entry's lock; this step takes the login entry's, in
//! that order always, so that runs for different clusters queue on the login while runs for
//! one cluster queue on its entry. Under the login's lock the login entry is read again and
//! the token derived ([`derive`]): by the renewal step every refresh takes
//! (`renewal::renew`, carrying the target), or by an RFC 8693 exchange of the login's access
//! token (refreshed first when it ran out). A rotated refresh token is saved in the login entry
//! before anything else happens with the answer — also when the derived token is then
//! refused — so that parallel kubectl calls for several clusters never send a refresh token
//! the provider rotated away (oidc-provider revokes the whole grant on reuse).
//!
//! Checked, never trusted: a derived token must be a JWT whose `aud` holds the target
//! ([`check_audience`]); anything else (Auth0 answers an unknown audience with its default one)
//! is an error naming both, and nothing is cached for the cluster.
//!
//! A target the login was not granted is never sent on its refresh token where the provider
//! binds targets to the grant ([`SharedLogin::bound_to_the_grant`]): oidc-provider spends the
//! refresh token on a refresh it answers `invalid_target`, and the next use revokes the login.
//! When the settings now ask the login for it (`--login-resource`), a new login for the union
//! of what was granted and what is asked follows; otherwise the error says to add it.

use super::renewal::{self, Renewal};
use super::{Trigger, keep};
use crate::cache::{Cached, EntryLock, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, Derive, SharedLogin, Target};
use crate::error::{Exit, fail};
use crate::grants::ProviderClient;
use crate::tokens::Tokens;

/// The login entry of a shared login, under its lock, as read after taking it.
pub(super) struct LoginEntry {
    cache: TokenCache,
    lock: EntryLock,
    cached: Option<Cached>,
}

impl LoginEntry {
    /// Takes the login entry's lock (waiting at most the lock timeout) and reads the entry.
    pub(super) fn open(config: &Config) -> anyhow::Result<LoginEntry> {
        let cache = TokenCache::shared_login(config, Vec::new());
        let lock = cache.lock(config.cache.lock_timeout)?;
        LoginEntry::read(cache, lock)
    }

    /// Takes the login entry's lock if nobody holds it (`None`: somebody does), and reads it:
    /// for the background renewal, which never waits.
    pub(super) fn try_open(config: &Config) -> anyhow::Result<Option<LoginEntry>> {
        let cache = TokenCache::shared_login(config, Vec::new());
        let Some(lock) = cache.try_lock()? else {
            return Ok(None);
        };
        LoginEntry::read(cache, lock).map(Some)
    }

    fn read(cache: TokenCache, lock: EntryLock) -> anyhow::Result<LoginEntry> {
        let cached = cache.load()?;
        // Every save of the login entry records what it was granted, as read: a refresh for
        // one cluster must not change what the login holds for the others.
        let cache = cache.granted(granted(cached.as_ref()));
        Ok(LoginEntry {
            cache,
            lock,
            cached,
        })
    }
}

/// The targets the login entry records it was granted (none for an entry that records none).
fn granted(cached: Option<&Cached>) -> Vec<String> {
    cached
        .and_then(|cached| cached.about.as_ref())
        .and_then(|about| about.granted.clone())
        .unwrap_or_default()
}

/// What deriving a cluster's token from the shared login came to.
pub(super) enum Derivation {
    /// The cluster's token, its audience checked; not saved yet.
    Derived(Tokens),
    /// Only a new login gives this cluster a token: why, and whether the provider refused the
    /// login's refresh token (the reason).
    NeedsLogin {
        why: String,
        refused: Option<String>,
    },
    /// It failed: an outage, the provider refusing, a token for another audience, a target
    /// outside the login that only a change of settings adds.
    Failed(anyhow::Error),
}

/// Derives this cluster's token from the login entry `login`, without a person.
pub(super) fn derive<'a>(
    config: &'a Config,
    login: &LoginEntry,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> Derivation {
    let shared = shared_settings(config);
    let Some(cached) = &login.cached else {
        return Derivation::NeedsLogin {
            why: "no shared login yet".into(),
            refused: None,
        };
    };
    if shared.bound_to_the_grant() {
        let granted = granted(Some(cached));
        if !granted.iter().any(|held| held == shared.target.value()) {
            if shared
                .login_resources
                .iter()
                .any(|asked| asked == shared.target.value())
            {
                return Derivation::NeedsLogin {
                    why: format!(
                        "the shared login was not granted {}, which --login-resource now asks for: one more login, for every cluster",
                        shared.target.describe()
                    ),
                    refused: None,
                };
            }
            return Derivation::Failed(outside_the_login(config, shared, &granted));
        }
    }
    derive_from(config, login, cached, provider, clock).unwrap_or_else(Derivation::Failed)
}

/// The cluster's token from the login entry's tokens `cached`: renewed by a refresh grant that
/// carries the target (the provider client sends it: `grants/mod.rs`), or, for an RFC 8693
/// exchange, the login's access token exchanged for the target, refreshed first when it has
/// less than `--min-validity` left. Either way checked before it is handed back.
fn derive_from<'a>(
    config: &'a Config,
    login: &LoginEntry,
    cached: &Cached,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> anyhow::Result<Derivation> {
    let target = &shared_settings(config).target;
    let exchange = shared_settings(config).derive == Derive::TokenExchange;
    let usable_as_it_is = exchange
        && cached
            .tokens
            .fresh_credential(
                crate::config::TokenKind::AccessToken,
                clock.now(),
                config.min_validity,
            )
            .is_some();
    let login_tokens = if usable_as_it_is {
        cached.tokens.clone()
    } else {
        match renew_login(config, login, cached, provider, clock)? {
            Ok(tokens) => tokens,
            Err(needs_login) => return Ok(needs_login),
        }
    };
    let tokens = if exchange {
        let access_token = login_tokens
            .access_token
            .as_ref()
            .expect("a fresh or renewed login has an access token");
        let provider = match provider {
            Some(provider) => provider,
            None => provider.insert(ProviderClient::new(config, clock)?),
        };
        provider.exchange_access_token(access_token, target)?
    } else {
        login_tokens
    };
    check_audience(config, &tokens, target)?;
    Ok(Derivation::Derived(derived_only(&tokens)))
}

/// Renews the login entry by its refresh token (the renewal step of every refresh) and saves
/// what it came to there at once: the new tokens (a rotated refresh token among them), before
/// the caller looks at the access token. `Err(Derivation)`: only a login will do.
fn renew_login<'a>(
    config: &'a Config,
    login: &LoginEntry,
    cached: &Cached,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> anyhow::Result<Result<Tokens, Derivation>> {
    match renewal::renew(config, &login.cache, cached, &login.lock, provider, clock) {
        Renewal::Renewed(tokens) => {
            keep(&login.cache, &tokens, &login.lock);
            Ok(Ok(tokens))
        }
        Renewal::Refused { reason, .. } => Ok(Err(Derivation::NeedsLogin {
            why: format!("the provider refused the shared login's refresh token ({reason})"),
            refused: Some(reason),
        })),
        Renewal::NewGrant => Ok(Err(Derivation::NeedsLogin {
            why: "the shared login has no refresh token".into(),
            refused: None,
        })),
        Renewal::NeedsPerson(why) => Ok(Err(Derivation::NeedsLogin {
            why: why.into(),
            refused: None,
        })),
        Renewal::Failed(err) => Err(err),
    }
}

/// The foreground's miss for a shared-login cluster, the derived entry's lock held (and
/// `cached`, what it holds, read under it): derive from the login, or log in (for the union of
/// what the login holds and what is asked) and derive. `kubecred login` always logs in.
///
/// As with any entry, a cluster token that is no longer fresh but still valid is handed out
/// when the provider refused the login's refresh token (now, or noted earlier), until it runs
/// out; `forced` (a 401 re-run, --force-refresh): not even then.
pub(super) fn obtain(
    config: &Config,
    derived: &TokenCache,
    derived_lock: &EntryLock,
    cached: Option<&Cached>,
    trigger: Trigger,
    forced: bool,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let login = LoginEntry::open(config)?;
    let mut provider = None;
    let mut refused = None;
    if trigger == Trigger::GetToken {
        if !forced
            && let Some(cached) = cached
            && let Some(tokens) = super::valid_after_refused_refresh(
                config,
                cached,
                &login
                    .cache
                    .state(login.cached.as_ref().map(|c| c.tokens.obtained_at)),
                clock,
            )
        {
            return Ok(tokens);
        }
        match derive(config, &login, &mut provider, clock) {
            Derivation::Derived(tokens) => {
                keep(derived, &tokens, derived_lock);
                return Ok(tokens);
            }
            Derivation::NeedsLogin {
                why,
                refused: Some(reason),
            } if !forced
                && let Some(cached) = cached
                && let Some((_, expiry)) = cached
                    .tokens
                    .usable_credential(config.token_kind, clock.now()) =>
            {
                crate::debug!(1, "{why}");
                crate::log::notice(format!(
                    "{} refused the shared login's refresh token ({reason}); this cluster's cached token is used until {}, then a login is needed (kubecred login)",
                    config.issuer_as_given,
                    crate::duration::display_time(crate::tokens::printed_expiry(
                        expiry,
                        clock.now()
                    ))
                ));
                return Ok(cached.tokens.clone());
            }
            Derivation::NeedsLogin { why, refused: r } => {
                crate::debug!(1, "{why}; logging in");
                refused = r;
            }
            Derivation::Failed(err) => return Err(err),
        }
    }
    drop(provider);
    // The login asks for what it already holds as well: a login for one more cluster must not
    // take the others' targets away.
    let mut union = config.clone();
    if let Some(shared) = &mut union.shared_login {
        shared.also_ask_for(granted(login.cached.as_ref()));
    }
    let targets = shared_settings(&union).login_targets();
    let login_cache = login.cache.granted(targets);
    let state = login_cache.state(login.cached.as_ref().map(|c| c.tokens.obtained_at));
    super::preflight_login(&union, &state, trigger, clock)?;
    if let Some(reason) = refused
        && union.grant.needs_a_person()
    {
        crate::log::notice(format!(
            "{} refused the shared login's refresh token ({reason}); logging in again",
            union.issuer_as_given
        ));
    }
    super::notice_secrets_on_command_line(&union);
    let provider = ProviderClient::new(&union, clock)?;
    let tokens = super::obtain_new(&union, &login_cache, &provider, &login.lock, clock)?;
    let target = &shared_settings(config).target;
    // The login's own access token is this cluster's when the provider issued it for the
    // target (a refresh derivation asks the code exchange for it); otherwise derive it now.
    if check_audience(config, &tokens, target).is_ok() {
        let derived_tokens = derived_only(&tokens);
        keep(derived, &derived_tokens, derived_lock);
        return Ok(derived_tokens);
    }
    let relogged = LoginEntry {
        cached: login_cache.load()?,
        cache: login_cache,
        lock: login.lock,
    };
    let mut provider = Some(provider);
    match derive(config, &relogged, &mut provider, clock) {
        Derivation::Derived(tokens) => {
            keep(derived, &tokens, derived_lock);
            Ok(tokens)
        }
        Derivation::NeedsLogin { why, .. } => Err(fail(
            Exit::Provider,
            format!(
                "{} logged you in, but no token for {} could be derived from the login ({why}); check the provider's settings for this target",
                config.issuer_as_given,
                target.describe()
            ),
        )),
        Derivation::Failed(err) => Err(err),
    }
}

fn shared_settings(config: &Config) -> &SharedLogin {
    config
        .shared_login
        .as_ref()
        .expect("only shared-login configs derive")
}

/// What the derived entry keeps: the access token, its expiry and the identity, nothing that
/// renews (the login does).
fn derived_only(tokens: &Tokens) -> Tokens {
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
fn check_audience(config: &Config, tokens: &Tokens, target: &Target) -> anyhow::Result<()> {
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

/// The error for a target the login was not granted and the settings do not ask it for.
fn outside_the_login(config: &Config, shared: &SharedLogin, granted: &[String]) -> anyhow::Error {
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
