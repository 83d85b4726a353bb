//! Renewing an entry's tokens without a person: one step, [`renew`], for the foreground (a run
//! whose cached token ran out, `miss.rs`) and the background (refresh-ahead, `renew_ahead.rs`),
//! for every source (`source.rs`): an entry of its own renews by its refresh token, or says a
//! new grant will (one that needs nobody: `login_step::run_grant`); a `--shared-login`
//! cluster's token is derived from the login ([`derive`], `shared.rs`). It keeps what must be kept
//! of the provider's answer, and says what it came to in one type, [`Renewal`]. Each path maps
//! that to its policy in one `match`: the foreground hands tokens out, or logs in where only a
//! person can renew; the background notes the failure and backs off.
//!
//! What a refresh's answer means is decided here once ([`refresh`]), so that it means the same
//! wherever it happens: new tokens (saved by the caller), a refused refresh token (dropped from
//! the entry, never sent again, and the refusal noted; the entry's other tokens stay), an answer
//! without the token kubectl needs or an unusable one (a rotated refresh token is kept either
//! way: the old one is spent), a target the provider refused ([`Refreshed::TargetRefused`]: a
//! shared login records it), or an outage (the entry as it was). A refusal noted earlier is
//! the same outcome again, without a request, so that the still-valid token is handed out until
//! it runs out.

use super::locked::Locked;
use super::shared;
use super::source::{Grantor, LazyProvider, Renewing};
use crate::cache::{Cached, Note};
use crate::clock::Clock;
use crate::config::{Config, Derive, SharedLogin, Target, TokenKind};
use crate::grants::RefreshOutcome;
use crate::secret::Secret;
use crate::tokens::Tokens;
use chrono::{DateTime, Utc};

/// What renewing an entry without a person came to. What had to be kept of the provider's
/// answer has been: a rotated refresh token, a refused one dropped and the refusal noted.
pub(super) enum Renewal<'a> {
    /// New tokens with the credential kubectl needs, not saved yet: the foreground hands them
    /// out even when the cache cannot keep them, the background fails.
    Renewed(Tokens),
    /// No refresh token to renew with, and the entry's grant needs nobody: a new grant from
    /// this grantor renews the tokens.
    NewGrant(Grantor<'a>),
    /// Not renewed, and why.
    Stopped(Stop),
}

/// Why a renewal stopped short of new tokens.
pub(super) enum Stop {
    /// The provider refused the refresh token these tokens renew from (the entry's, or a shared
    /// login's): just now (`earlier` is `None`: dropped and noted by this renewal), or at
    /// `earlier`, as noted in the entry's state.
    Refused {
        reason: String,
        earlier: Option<DateTime<Utc>>,
    },
    /// Only a login renews these tokens, which only the foreground may start; why, in a phrase.
    NeedsPerson(String),
    /// The renewal failed: the provider unreachable, or refusing in another way, or an answer
    /// that cannot be used. The entry is as it was but for a rotated refresh token.
    Failed(anyhow::Error),
}

/// Renews `entry` (under its lock) without a person, from where its tokens come (`from`: its
/// own refresh token or grant, or a shared login's entry, locked too). `provider` is built here
/// when a request needs it, and stays built for the caller (a login after a refused refresh
/// token talks to the same provider).
pub(super) fn renew<'a>(
    config: &'a Config,
    entry: &Locked,
    from: &Renewing<'a>,
    provider: &mut LazyProvider<'a>,
    clock: &dyn Clock,
) -> Renewal<'a> {
    match from {
        Renewing::Own(Grantor::Provider) => match refresh(config, entry, provider, clock) {
            Refreshed::Renewed(tokens) => Renewal::Renewed(tokens),
            Refreshed::WithoutRefreshToken(why) => without_refresh_token(config, why),
            Refreshed::Stopped(stop) => Renewal::Stopped(stop),
            // Only a shared login records a refused target; for an entry of its own it is the
            // provider's refusal like any other.
            Refreshed::TargetRefused(refused) => Renewal::Stopped(Stop::Failed(refused.error)),
        },
        // The subject token is read again, the cloud asked again: nobody is needed, no provider.
        Renewing::Own(grantor @ (Grantor::Federated | Grantor::Cloud(_))) => {
            Renewal::NewGrant(*grantor)
        }
        Renewing::SharedLogin { shared, login } => {
            match derive(config, shared, login, provider, clock) {
                Ok(tokens) => Renewal::Renewed(tokens),
                Err(stop) => Renewal::Stopped(stop),
            }
        }
    }
}

/// Derives this cluster's token from the login entry `login` (under its lock), without a
/// person: the renewal step of a shared login's cluster (see `shared.rs`).
pub(super) fn derive<'a>(
    config: &'a Config,
    shared: &SharedLogin,
    login: &Locked,
    provider: &mut LazyProvider<'a>,
    clock: &dyn Clock,
) -> Result<Tokens, Stop> {
    let Some(cached) = &login.cached else {
        return Err(Stop::NeedsPerson("no shared login yet".into()));
    };
    let target = shared.target.value();
    if shared::refused_targets(login).iter().any(|t| t == target) {
        return Err(Stop::Failed(shared::refused_since(config, shared)));
    }
    let granted = shared::granted(login);
    if shared.bound_to_the_grant() && !granted.iter().any(|held| held == target) {
        if shared.login_resources.iter().any(|asked| asked == target) {
            return Err(Stop::NeedsPerson(format!(
                "the shared login was not granted {}, which --login-resource now asks for: one more login, for every cluster",
                shared.target.describe()
            )));
        }
        return Err(Stop::Failed(shared::outside_the_login(
            config, shared, &granted,
        )));
    }
    // An exchange spends no refresh token: the login's token serves as it is while it is fresh
    // (the access token for RFC 8693, the ID token for a cloud's STS).
    let exchanged = match shared.derive {
        Derive::Refresh => None,
        Derive::TokenExchange => Some(TokenKind::AccessToken),
        Derive::Cloud => Some(TokenKind::IdToken),
    };
    let usable_as_it_is = exchanged.is_some_and(|kind| {
        cached
            .tokens
            .fresh_credential(kind, clock.now(), config.min_validity)
            .is_some()
    });
    let login_tokens = if usable_as_it_is {
        cached.tokens.clone()
    } else {
        match refresh(config, login, provider, clock) {
            Refreshed::Renewed(tokens) => {
                // The login's own tokens are not what is handed out (the cluster's derived one
                // is): a failed save loses the rotated refresh token, and the next run logs in.
                if let Err(err) = login.cache.save(&tokens, &login.lock) {
                    crate::log::notice(format!(
                        "warning: the shared login's renewed tokens are not cached, so the next run logs in again: {}",
                        crate::error::one_line(&err)
                    ));
                }
                tokens
            }
            // A shared login's grant always needs a person.
            Refreshed::WithoutRefreshToken(why) => {
                return Err(Stop::NeedsPerson(format!(
                    "{why} and its grant needs a person"
                )));
            }
            Refreshed::Stopped(stop) => return Err(stop),
            Refreshed::TargetRefused(refused) => {
                crate::debug!(1, "{}", crate::error::one_line(&refused.error));
                return Err(Stop::Failed(shared::narrowed(
                    config,
                    shared,
                    login,
                    &refused.reason,
                    refused.sent,
                )));
            }
        }
    };
    derived_from(config, shared, &login_tokens, provider, clock)
}

/// The cluster's token from the login's tokens: the login's access token when the refresh
/// asked for the target, or exchanged for it (RFC 8693), checked before it is handed back; or a
/// cloud's token for the login's ID token.
fn derived_from(
    config: &Config,
    shared: &SharedLogin,
    login_tokens: &Tokens,
    provider: &mut LazyProvider,
    clock: &dyn Clock,
) -> Result<Tokens, Stop> {
    let tokens = match (&shared.derive, &shared.target) {
        (Derive::Cloud, Target::Cloud(cloud)) => {
            let Some(id_token) = &login_tokens.id_token else {
                return Err(Stop::NeedsPerson(
                    "the shared login holds no ID token to exchange (the provider's refresh answered none)".into(),
                ));
            };
            return crate::clouds::exchange(cloud, id_token, config, clock).map_err(Stop::Failed);
        }
        (Derive::TokenExchange, _) => {
            let access_token = login_tokens
                .access_token
                .as_ref()
                .expect("a fresh or renewed login has an access token");
            provider
                .get()
                .and_then(|provider| provider.exchange_access_token(access_token, &shared.target))
                .map_err(Stop::Failed)?
        }
        _ => login_tokens.clone(),
    };
    shared::check_audience(config, &tokens, &shared.target).map_err(Stop::Failed)?;
    Ok(shared::derived_only(&tokens))
}

/// What a refresh of an entry by its refresh token came to.
pub(super) enum Refreshed {
    Renewed(Tokens),
    /// There is no refresh token to send (why, in a phrase), and no refusal noted.
    WithoutRefreshToken(&'static str),
    Stopped(Stop),
    /// The provider refused the target the refresh named (`invalid_target`). The refresh token
    /// was sent: a shared login records the refusal with it (`shared.rs`).
    TargetRefused(TargetRefused),
}

/// The provider's refusal of the target a refresh named.
pub(super) struct TargetRefused {
    pub(super) reason: String,
    pub(super) error: anyhow::Error,
    pub(super) sent: Secret,
}

/// Refreshes `entry` by its refresh token (fetched from the keyring if it is there), or says why
/// it cannot: no refresh token (the refusal noted earlier is then the outcome again).
fn refresh(
    config: &Config,
    entry: &Locked,
    provider: &mut LazyProvider,
    clock: &dyn Clock,
) -> Refreshed {
    let Some(cached) = &entry.cached else {
        return Refreshed::WithoutRefreshToken("nothing is cached");
    };
    // Every error on the way is the renewal failing.
    let mut attempt = || -> anyhow::Result<Refreshed> {
        let Some(refresh_token) = entry.cache.refresh_token(cached, &entry.lock)? else {
            return Ok(no_refresh_token(entry, cached));
        };
        let original = &cached.tokens.identity;
        let outcome = provider.get()?.refresh(&refresh_token, original.as_ref())?;
        answered(config, entry, cached, refresh_token, outcome, clock)
    };
    attempt().unwrap_or_else(|error| Refreshed::Stopped(Stop::Failed(error)))
}

/// What the provider's answer to the refresh of `cached` with `sent` means, with what must be
/// kept of it kept: a rotated refresh token (the old one is spent), a refused one dropped and
/// the refusal noted.
fn answered(
    config: &Config,
    entry: &Locked,
    cached: &Cached,
    sent: Secret,
    outcome: RefreshOutcome,
    clock: &dyn Clock,
) -> anyhow::Result<Refreshed> {
    let keep_rotated = |rotated: Option<Secret>| {
        entry
            .cache
            .save_rotated_refresh_token(&cached.tokens, &sent, rotated, &entry.lock)
    };
    Ok(match outcome {
        RefreshOutcome::Refreshed(tokens) if tokens.credential(config.token_kind).is_some() => {
            Refreshed::Renewed(tokens)
        }
        RefreshOutcome::Refreshed(tokens) => {
            // No ID token on a refresh: OpenID Connect Core §12.2 allows it.
            keep_rotated(tokens.refresh_token)?;
            Refreshed::Stopped(Stop::NeedsPerson(
                "the refresh answer lacks the token kubectl needs".into(),
            ))
        }
        RefreshOutcome::Unusable {
            refresh_token: rotated,
            error,
        } => {
            keep_rotated(Some(rotated))?;
            Refreshed::Stopped(Stop::Failed(error))
        }
        RefreshOutcome::Rejected(reason) => {
            // Revoked, or expired at the provider: sending it again can only be refused again.
            let dropped = Tokens {
                refresh_token: None,
                ..cached.tokens.clone()
            };
            entry.cache.save(&dropped, &entry.lock)?;
            entry.cache.update_state(&entry.lock, |state| {
                state.refresh_refused = Some(Note::new(&reason, clock.now()));
            });
            Refreshed::Stopped(Stop::Refused {
                reason,
                earlier: None,
            })
        }
        RefreshOutcome::TargetRefused { reason, error } => {
            Refreshed::TargetRefused(TargetRefused {
                reason,
                error,
                sent,
            })
        }
    })
}

/// How `cached`, with no refresh token to send, renews: the provider's refusal noted after
/// these tokens were obtained is the outcome again; otherwise there is nothing to refresh with.
fn no_refresh_token(entry: &Locked, cached: &Cached) -> Refreshed {
    if let Some(refusal) = entry.state().refresh_refused {
        return Refreshed::Stopped(Stop::Refused {
            reason: refusal.reason,
            earlier: Some(refusal.at),
        });
    }
    Refreshed::WithoutRefreshToken(if cached.has_refresh_token() {
        "the entry's refresh token is not in the OS keyring reachable here (deleted, or kept by another session's keyring)"
    } else {
        "the entry has no refresh token"
    })
}

/// How an entry without a refresh token renews: by a new grant when it needs nobody, else by a
/// login (`why` not).
fn without_refresh_token<'a>(config: &Config, why: &str) -> Renewal<'a> {
    if config.grant_needs_no_person() {
        Renewal::NewGrant(Grantor::Provider)
    } else {
        Renewal::Stopped(Stop::NeedsPerson(format!(
            "{why} and its grant needs a person"
        )))
    }
}
