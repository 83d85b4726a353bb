//! The miss: everything that talks to the provider happens here, under the entry's lock, after
//! looking again — one path for every entry. The renewal step renews without a person
//! (`renewal.rs`: a refresh, a grant that needs nobody, a shared login's derivation), and where
//! only a person can renew, the login step logs in (`login_step.rs`), into the entry the tokens
//! renew from (`source.rs`): the entry itself, or a `--shared-login` cluster's login entry,
//! whose lock is taken second, with the login's settings (`shared.rs`); a derived token then
//! follows from the new login.
//!
//! What the foreground does with each renewal outcome is one `match` here: new tokens are
//! kept and handed out; after the provider refused the refresh token, the still-valid cached
//! token is handed out until it runs out ([`hand_out_after_refusal`], said once), and a login
//! follows only once it no longer serves; an outage is the caller's to judge (stale-if-error).

use super::locked::Locked;
use super::login_step::{self, Refused};
use super::renewal::{self, Renewal, Stop};
use super::shared;
use super::source::{Grantor, LazyProvider, Renewing, Source};
use super::{Occasion, Presence};
use crate::cache::TokenCache;
use crate::clock::Clock;
use crate::config::{Config, SharedLogin};
use crate::error::{Exit, fail};
use crate::tokens::{Tokens, printed_expiry};

/// Single flight: the miss of `cache`'s entry (its tokens coming from `source`), under the
/// entry's lock, for `occasion`.
pub(super) fn obtain_under_lock(
    config: &Config,
    cache: &TokenCache,
    source: &Source,
    occasion: Occasion,
    presence: &Presence,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let started = clock.now();
    let entry = Locked::open(cache, config.cache.lock_timeout)?;
    // Another process may have refreshed or logged in while we waited for the lock. A forced run
    // still takes what a parallel run obtained after this one started: N parallel
    // `--force-refresh` runs then make one request, not N in a row.
    if let Some(cached) = &entry.cached {
        let fresh = cached
            .tokens
            .fresh_credential(config.token_kind, clock.now(), config.min_validity)
            .is_some();
        if fresh && (!occasion.forced() || cached.tokens.obtained_at >= started) {
            crate::debug!(1, "another kubecred refreshed the token while we waited");
            return Ok(cached.tokens.clone());
        }
    }
    let from = source.lock(config.cache.lock_timeout)?;
    // A renewal is cheap and needs no user; `kubecred login` means a new login, though. The
    // provider a refresh builds serves the login after it.
    let mut provider = LazyProvider::new(config, clock);
    let mut refused = None;
    if occasion.renews_first() {
        match renewal::renew(config, &entry, &from, &mut provider, clock) {
            Renewal::Renewed(tokens) => {
                entry.keep(&tokens);
                return Ok(tokens);
            }
            Renewal::NewGrant(_) => {}
            Renewal::Stopped(Stop::Refused { reason, earlier }) => {
                let whose = Whose::of(&from);
                if !occasion.forced()
                    && let Some(tokens) =
                        hand_out_after_refusal(config, &entry, whose, &reason, earlier, clock)
                {
                    return Ok(tokens);
                }
                if earlier.is_none() {
                    if let Renewing::Own(_) = from {
                        remove_if_dead(config, &entry, clock);
                    }
                    refused = Some(Refused {
                        reason,
                        whose: whose.refresh_token,
                    });
                }
            }
            Renewal::Stopped(Stop::NeedsPerson(why)) => crate::debug!(1, "{why}; logging in"),
            Renewal::Stopped(Stop::Failed(err)) => return Err(err),
        }
    }
    match from {
        Renewing::Own(grantor) => login_step::log_in(
            config, &entry, grantor, occasion, refused, provider, presence, clock,
        ),
        Renewing::SharedLogin { shared, login } => {
            // The login asks with the login's settings: what it holds and what is asked.
            drop(provider);
            let (settings, login) = shared::for_a_login(config, login);
            let tokens = login_step::log_in(
                &settings,
                &login,
                Grantor::Provider,
                occasion,
                refused,
                LazyProvider::new(&settings, clock),
                presence,
                clock,
            )?;
            after_login(config, &entry, shared, login, &tokens, clock)
        }
    }
}

/// After the login step logged in again (its tokens `tokens`, saved in `login`): this
/// cluster's token, saved in `entry`. The login's own access token is this cluster's when the
/// provider issued it for the target (a refresh derivation asks the code exchange for it);
/// otherwise it is derived from the new login now.
fn after_login(
    config: &Config,
    entry: &Locked,
    shared: &SharedLogin,
    mut login: Locked,
    tokens: &Tokens,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    // A cloud's token is never the login's own: it is exchanged for the login's ID token.
    let the_logins_own = shared.derive != crate::config::Derive::Cloud
        && shared::check_audience(config, tokens, &shared.target).is_ok();
    let derived = if the_logins_own {
        shared::derived_only(tokens)
    } else {
        login.reload()?;
        let mut provider = LazyProvider::new(config, clock);
        match renewal::derive(config, shared, &login, &mut provider, clock) {
            Ok(tokens) => tokens,
            Err(Stop::Failed(err)) => return Err(err),
            Err(Stop::NeedsPerson(why) | Stop::Refused { reason: why, .. }) => {
                return Err(fail(
                    Exit::Provider,
                    format!(
                        "{} logged you in, but no token for {} could be derived from the login ({why}); check the provider's settings for this target",
                        config.issuer_as_given,
                        shared.target.describe()
                    ),
                ));
            }
        }
    };
    entry.keep(&derived);
    Ok(derived)
}

/// How the messages about a refused refresh token name it and the token still handed out.
#[derive(Clone, Copy)]
struct Whose {
    refresh_token: &'static str,
    cached_token: &'static str,
}

impl Whose {
    fn of(from: &Renewing) -> Whose {
        match from {
            Renewing::SharedLogin { .. } => Whose {
                refresh_token: "the shared login's refresh token",
                cached_token: "this cluster's cached token",
            },
            Renewing::Own(_) => Whose {
                refresh_token: "the refresh token",
                cached_token: "the cached token",
            },
        }
    }
}

/// The cached tokens, when the provider refused the refresh token they renew from (just now,
/// or at `earlier`) and the credential is still valid: handed out without a login until it runs
/// out. The refusal is said once, when it happens (or shown by `status`, when the background
/// renewal met it); a login is needed only once the token is no longer accepted.
fn hand_out_after_refusal(
    config: &Config,
    entry: &Locked,
    whose: Whose,
    reason: &str,
    earlier: Option<chrono::DateTime<chrono::Utc>>,
    clock: &dyn Clock,
) -> Option<Tokens> {
    let cached = entry.cached.as_ref()?;
    let (_, expiry) = cached
        .tokens
        .usable_credential(config.token_kind, clock.now())?;
    match earlier {
        None => crate::log::notice(format!(
            "{} refused {} ({reason}); {} is used until {}, then a login is needed (kubecred login)",
            config.issuer_as_given,
            whose.refresh_token,
            whose.cached_token,
            crate::duration::display_time(printed_expiry(expiry, clock.now()))
        )),
        Some(at) => crate::debug!(
            1,
            "the provider refused {} at {} ({reason}); handing out the cached token until it runs out",
            whose.refresh_token,
            crate::duration::display_time(at),
        ),
    }
    Some(Tokens {
        refresh_token: None,
        ..cached.tokens.clone()
    })
}

/// After the provider refused the entry's refresh token: an entry with nothing usable left is
/// removed, so that `status` does not list it while the login it needs fails.
fn remove_if_dead(config: &Config, entry: &Locked, clock: &dyn Clock) {
    let usable = entry.cached.as_ref().and_then(|cached| {
        cached
            .tokens
            .usable_credential(config.token_kind, clock.now())
    });
    if usable.is_none()
        && let Err(err) = entry.cache.remove(&entry.lock)
    {
        crate::log::notice(format!(
            "could not delete the cache entry of the refused refresh token: {}",
            crate::error::one_line(&err)
        ));
    }
}

#[cfg(test)]
pub(super) mod tests;
