//! Renewing an entry's tokens without a person: one step, [`renew`], for the foreground (a run
//! whose cached token ran out, `miss.rs`) and the background (refresh-ahead, `renew_ahead.rs`),
//! for every kind of entry. It picks how the entry renews — its refresh token, a grant that
//! needs nobody, or for a `--shared-login` cluster a derivation from the login (`shared.rs`) —
//! keeps what must be kept of the provider's answer, and says what it came to in one type,
//! [`Renewal`]. Each path maps that to its policy in one `match`: the foreground hands tokens
//! out, or logs in where only a person can renew; the background notes the failure and backs
//! off.
//!
//! What a refresh's answer means is decided here once ([`refresh`]), so that it means the same
//! wherever it happens: new tokens (saved by the caller), a refused refresh token (dropped from
//! the entry, never sent again, and the refusal noted; the entry's other tokens stay), an answer
//! without the token kubectl needs or an unusable one (a rotated refresh token is kept either
//! way: the old one is spent), or an outage (the entry as it was). A refusal noted earlier is
//! the same outcome again, without a request, so that the still-valid token is handed out until
//! it runs out.

use super::shared::{self, LoginEntry};
use super::{Held, keep};
use crate::cache::{Cached, Note};
use crate::clock::Clock;
use crate::config::{Config, Derive, Grant, SharedLogin, TokenKind};
use crate::grants::{ProviderClient, RefreshOutcome};
use crate::secret::Secret;
use crate::tokens::Tokens;
use chrono::{DateTime, Utc};

/// What renewing an entry without a person came to. What had to be kept of the provider's
/// answer has been: a rotated refresh token, a refused one dropped and the refusal noted.
pub(super) enum Renewal {
    /// New tokens with the credential kubectl needs, not saved yet: the foreground hands them
    /// out even when the cache cannot keep them, the background fails.
    Renewed(Tokens),
    /// The provider refused the refresh token these tokens renew from (the entry's, or a shared
    /// login's): just now (`earlier` is `None`: dropped and noted by this renewal), or at
    /// `earlier`, as noted in the entry's state.
    Refused {
        reason: String,
        earlier: Option<DateTime<Utc>>,
    },
    /// No refresh token to renew with, and the configured grant needs nobody: a new grant
    /// renews the tokens.
    NewGrant,
    /// Only a login renews these tokens, which only the foreground may start; why, in a phrase.
    NeedsPerson(String),
    /// The renewal failed: the provider unreachable, or refusing in another way, or an answer
    /// that cannot be used. The entry is as it was but for a rotated refresh token.
    Failed(anyhow::Error),
}

/// Renews `entry` (under its lock) without a person: a `--shared-login` cluster's token is
/// derived from `login`, the shared login's entry (`shared::derive`); any other entry is
/// refreshed by its refresh token, or said how it can be renewed. `provider` is built here when
/// a request needs it, and left for the caller (a login after a refused refresh token talks to
/// the same provider).
pub(super) fn renew<'a>(
    config: &'a Config,
    entry: Held<'_>,
    login: Option<&LoginEntry>,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> Renewal {
    if let (Some(shared), Some(login)) = (&config.shared_login, login) {
        return derive(config, shared, login, provider, clock);
    }
    refresh(config, entry, provider, clock).unwrap_or_else(|refused| Renewal::Failed(refused.error))
}

/// Derives this cluster's token from the login entry `login`, without a person: the renewal
/// step of a shared login's cluster (see the module comment).
fn derive<'a>(
    config: &'a Config,
    shared: &SharedLogin,
    login: &LoginEntry,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> Renewal {
    let Some(cached) = &login.cached else {
        return Renewal::NeedsPerson("no shared login yet".into());
    };
    if login
        .refused_targets()
        .iter()
        .any(|refused| refused == shared.target.value())
    {
        return Renewal::Failed(shared::refused_since(config, shared));
    }
    if shared.bound_to_the_grant()
        && !login
            .granted()
            .iter()
            .any(|held| held == shared.target.value())
    {
        if shared
            .login_resources
            .iter()
            .any(|asked| asked == shared.target.value())
        {
            return Renewal::NeedsPerson(format!(
                "the shared login was not granted {}, which --login-resource now asks for: one more login, for every cluster",
                shared.target.describe()
            ));
        }
        return Renewal::Failed(shared::outside_the_login(config, shared, &login.granted()));
    }
    let exchange = shared.derive == Derive::TokenExchange;
    let usable_as_it_is = exchange
        && cached
            .tokens
            .fresh_credential(TokenKind::AccessToken, clock.now(), config.min_validity)
            .is_some();
    let login_tokens = if usable_as_it_is {
        cached.tokens.clone()
    } else {
        match refresh(config, login.held(), provider, clock) {
            Ok(Renewal::Renewed(tokens)) => {
                keep(&login.cache, &tokens, &login.lock);
                tokens
            }
            Ok(Renewal::NewGrant) => {
                return Renewal::NeedsPerson("the shared login has no refresh token".into());
            }
            Ok(other) => return other,
            Err(refused) => {
                crate::debug!(1, "{}", crate::error::one_line(&refused.error));
                let error = shared::narrowed(config, shared, login, &refused.reason, refused.sent);
                return Renewal::Failed(error);
            }
        }
    };
    derived_from(config, shared, &login_tokens, provider, clock)
        .map_or_else(Renewal::Failed, Renewal::Renewed)
}

/// The cluster's token from the login's tokens: the login's access token when the refresh
/// asked for the target, or exchanged for it (RFC 8693); checked before it is handed back.
fn derived_from<'a>(
    config: &'a Config,
    shared: &SharedLogin,
    login_tokens: &Tokens,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> anyhow::Result<Tokens> {
    let tokens = if shared.derive == Derive::TokenExchange {
        let access_token = login_tokens
            .access_token
            .as_ref()
            .expect("a fresh or renewed login has an access token");
        let provider = match provider {
            Some(provider) => provider,
            None => provider.insert(ProviderClient::new(config, clock)?),
        };
        provider.exchange_access_token(access_token, &shared.target)?
    } else {
        login_tokens.clone()
    };
    shared::check_audience(config, &tokens, &shared.target)?;
    Ok(shared::derived_only(&tokens))
}

/// The provider refused the target a refresh named (`invalid_target`). The refresh token was
/// sent: a shared login records the refusal with it (`shared.rs`).
pub(super) struct TargetRefused {
    pub(super) reason: String,
    pub(super) error: anyhow::Error,
    pub(super) sent: Secret,
}

/// Refreshes `entry` by its refresh token (fetched from the keyring if it is there); without
/// one, says how the entry can be renewed: the refusal noted earlier, a grant that needs nobody,
/// or a login.
pub(super) fn refresh<'a>(
    config: &'a Config,
    entry: Held<'_>,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> Result<Renewal, TargetRefused> {
    let Some(cached) = entry.cached else {
        return Ok(without_refresh_token(config, "nothing is cached"));
    };
    // Every error on the way is the renewal failing.
    let mut attempt = || -> anyhow::Result<Result<Renewal, TargetRefused>> {
        let Some(refresh_token) = entry.cache.refresh_token(cached, entry.lock)? else {
            return Ok(Ok(no_refresh_token(config, entry, cached)));
        };
        let provider = match provider {
            Some(provider) => provider,
            None => provider.insert(ProviderClient::new(config, clock)?),
        };
        let original = &cached.tokens.identity;
        let outcome = provider.refresh(&refresh_token, original.as_ref())?;
        answered(config, entry, cached, refresh_token, outcome, clock)
    };
    attempt().unwrap_or_else(|error| Ok(Renewal::Failed(error)))
}

/// What the provider's answer to the refresh of `cached` with `sent` means, with what must be
/// kept of it kept: a rotated refresh token (the old one is spent), a refused one dropped and
/// the refusal noted.
fn answered(
    config: &Config,
    entry: Held<'_>,
    cached: &Cached,
    sent: Secret,
    outcome: RefreshOutcome,
    clock: &dyn Clock,
) -> anyhow::Result<Result<Renewal, TargetRefused>> {
    let keep_rotated = |rotated: Option<Secret>| {
        entry
            .cache
            .save_rotated_refresh_token(&cached.tokens, &sent, rotated, entry.lock)
    };
    Ok(Ok(match outcome {
        RefreshOutcome::Refreshed(tokens) if tokens.credential(config.token_kind).is_some() => {
            Renewal::Renewed(tokens)
        }
        RefreshOutcome::Refreshed(tokens) => {
            // No ID token on a refresh: OpenID Connect Core §12.2 allows it.
            keep_rotated(tokens.refresh_token)?;
            Renewal::NeedsPerson("the refresh answer lacks the token kubectl needs".into())
        }
        RefreshOutcome::Unusable {
            refresh_token: rotated,
            error,
        } => {
            keep_rotated(Some(rotated))?;
            return Err(error);
        }
        RefreshOutcome::Rejected(reason) => {
            // Revoked, or expired at the provider: sending it again can only be refused again.
            let dropped = Tokens {
                refresh_token: None,
                ..cached.tokens.clone()
            };
            entry.cache.save(&dropped, entry.lock)?;
            entry.cache.update_state(entry.lock, |state| {
                state.refresh_refused = Some(Note::new(&reason, clock.now()));
            });
            Renewal::Refused {
                reason,
                earlier: None,
            }
        }
        RefreshOutcome::TargetRefused { reason, error } => {
            return Ok(Err(TargetRefused {
                reason,
                error,
                sent,
            }));
        }
    }))
}

/// How `cached`, with no refresh token to send, renews: the provider's refusal noted after
/// these tokens were obtained is the outcome again; otherwise a new grant or a login.
fn no_refresh_token(config: &Config, entry: Held<'_>, cached: &Cached) -> Renewal {
    let state = entry.cache.state(Some(cached.tokens.obtained_at));
    if let Some(refusal) = state.refresh_refused {
        return Renewal::Refused {
            reason: refusal.reason,
            earlier: Some(refusal.at),
        };
    }
    without_refresh_token(
        config,
        if cached.has_refresh_token() {
            "the entry's refresh token is not in the OS keyring reachable here (deleted, or kept by another session's keyring)"
        } else {
            "the entry has no refresh token"
        },
    )
}

/// How an entry without a refresh token renews: by a new grant when it needs nobody, else by a
/// login (`why` not).
fn without_refresh_token(config: &Config, why: &str) -> Renewal {
    if grant_needs_no_person(config) {
        Renewal::NewGrant
    } else {
        Renewal::NeedsPerson(format!("{why} and its grant needs a person"))
    }
}

/// Whether the configured grant yields a new token without a person.
pub(super) fn grant_needs_no_person(config: &Config) -> bool {
    match config.grant {
        Grant::ClientCredentials | Grant::TokenExchange => true,
        Grant::Password => config
            .password
            .as_ref()
            .is_some_and(|password| !password.needs_a_person()),
        // A login needs a person; a federated token is the subject token itself, renewed by
        // whoever rotates its file.
        Grant::Authcode | Grant::AuthcodeKeyboard | Grant::DeviceCode | Grant::FederatedToken => {
            false
        }
    }
}
