//! The miss: everything that talks to the provider happens here, under the entry's lock, after
//! looking again — one path for every entry. The renewal step renews without a person
//! (`renewal.rs`: a refresh, a grant that needs nobody, a shared login's derivation), and where
//! only a person can renew, the login step logs in (`login_step.rs`), into the entry the tokens
//! renew from: the entry itself, or a `--shared-login` cluster's login entry, whose lock is
//! taken second (`shared.rs`), with the login's settings; a derived token then follows from
//! the new login.
//!
//! What the foreground does with each renewal outcome is one `match` here: new tokens are
//! kept and handed out; after the provider refused the refresh token, the still-valid cached
//! token is handed out until it runs out ([`hand_out_after_refusal`], said once), and a login
//! follows only once it no longer serves; an outage is the caller's to judge (stale-if-error).

use super::login_step::{self, Refused};
use super::renewal::{self, Renewal};
use super::shared::{self, LoginEntry};
use super::{Held, Trigger, keep};
use crate::cache::{Cached, Entry, TokenCache};
use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Exit, fail};
use crate::tokens::{Tokens, printed_expiry};

/// Single flight: the miss of `cache`'s entry (and, for a shared login's cluster, of `login`,
/// the login's entry), under the entry's lock. `forced`: not even a fresh cached token will do
/// (`--force-refresh`, `login`, a 401 re-run).
pub(super) fn obtain_under_lock(
    config: &Config,
    cache: &TokenCache,
    login: Option<&Entry>,
    trigger: Trigger,
    forced: bool,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let started = clock.now();
    let lock = cache.lock(config.cache.lock_timeout)?;
    // Another process may have refreshed or logged in while we waited for the lock. A forced run
    // still takes what a parallel run obtained after this one started: N parallel
    // `--force-refresh` runs then make one request, not N in a row.
    let cached = cache.load()?;
    if let Some(cached) = &cached {
        let fresh = cached
            .tokens
            .fresh_credential(config.token_kind, clock.now(), config.min_validity)
            .is_some();
        if fresh && (!forced || cached.tokens.obtained_at >= started) {
            crate::debug!(1, "another kubecred refreshed the token while we waited");
            return Ok(cached.tokens.clone());
        }
    }
    let login = login
        .map(|entry| LoginEntry::open(entry, config.cache.lock_timeout))
        .transpose()?;
    let entry = Held {
        cache,
        lock: &lock,
        cached: cached.as_ref(),
    };
    // A renewal is cheap and needs no user; `kubecred login` means a new login, though. The
    // provider client a refresh builds serves the login after it.
    let mut provider = None;
    let mut refused = None;
    if trigger == Trigger::GetToken {
        match renewal::renew(config, entry, login.as_ref(), &mut provider, clock) {
            Renewal::Renewed(tokens) => {
                keep(cache, &tokens, &lock);
                return Ok(tokens);
            }
            Renewal::Refused { reason, earlier } => {
                let whose = Whose::of(login.is_some());
                if !forced
                    && let Some(tokens) =
                        hand_out_after_refusal(config, entry, whose, &reason, earlier, clock)
                {
                    return Ok(tokens);
                }
                if earlier.is_none() {
                    if login.is_none() {
                        remove_if_dead(config, entry, clock);
                    }
                    refused = Some(Refused {
                        reason,
                        whose: whose.refresh_token,
                    });
                }
            }
            Renewal::NewGrant => {}
            Renewal::NeedsPerson(why) => crate::debug!(1, "{why}; logging in"),
            Renewal::Failed(err) => return Err(err),
        }
    }
    match login {
        None => login_step::log_in(config, entry, trigger, refused, provider, clock),
        Some(login) => {
            drop(provider); // The login asks with the login's settings, below.
            let (settings, login) = login.login_settings(config);
            let tokens =
                login_step::log_in(&settings, login.held(), trigger, refused, None, clock)?;
            after_login(config, entry, login, &tokens, clock)
        }
    }
}

/// After the login step logged in again (its tokens `tokens`, saved in `login`): this
/// cluster's token, saved in `entry`. The login's own access token is this cluster's when the
/// provider issued it for the target (a refresh derivation asks the code exchange for it);
/// otherwise it is derived from the new login now.
fn after_login(
    config: &Config,
    entry: Held<'_>,
    mut login: LoginEntry,
    tokens: &Tokens,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let shared = shared::shared_settings(config);
    let derived = if shared::check_audience(config, tokens, &shared.target).is_ok() {
        shared::derived_only(tokens)
    } else {
        login.cached = login.cache.load()?;
        match renewal::renew(config, entry, Some(&login), &mut None, clock) {
            Renewal::Renewed(tokens) => tokens,
            Renewal::Failed(err) => return Err(err),
            Renewal::NeedsPerson(why) | Renewal::Refused { reason: why, .. } => {
                return Err(fail(
                    Exit::Provider,
                    format!(
                        "{} logged you in, but no token for {} could be derived from the login ({why}); check the provider's settings for this target",
                        config.issuer_as_given,
                        shared.target.describe()
                    ),
                ));
            }
            Renewal::NewGrant => unreachable!("a shared login's grant needs a person"),
        }
    };
    keep(entry.cache, &derived, entry.lock);
    Ok(derived)
}

/// How the messages about a refused refresh token name it and the token still handed out.
#[derive(Clone, Copy)]
struct Whose {
    refresh_token: &'static str,
    cached_token: &'static str,
}

impl Whose {
    fn of(shared_login: bool) -> Whose {
        if shared_login {
            Whose {
                refresh_token: "the shared login's refresh token",
                cached_token: "this cluster's cached token",
            }
        } else {
            Whose {
                refresh_token: "the refresh token",
                cached_token: "the cached token",
            }
        }
    }
}

/// The cached tokens, when the provider refused the refresh token they renew from (just now,
/// or at `earlier`) and the credential is still valid: handed out without a login until it runs
/// out. The refusal is said once, when it happens (or shown by `status`, when the background
/// renewal met it); a login is needed only once the token is no longer accepted.
fn hand_out_after_refusal(
    config: &Config,
    entry: Held<'_>,
    whose: Whose,
    reason: &str,
    earlier: Option<chrono::DateTime<chrono::Utc>>,
    clock: &dyn Clock,
) -> Option<Tokens> {
    let cached = entry.cached?;
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
fn remove_if_dead(config: &Config, entry: Held<'_>, clock: &dyn Clock) {
    let usable = entry.cached.and_then(|cached: &Cached| {
        cached
            .tokens
            .usable_credential(config.token_kind, clock.now())
    });
    if usable.is_none()
        && let Err(err) = entry.cache.remove(entry.lock)
    {
        crate::log::notice(format!(
            "could not delete the cache entry of the refused refresh token: {}",
            crate::error::one_line(&err)
        ));
    }
}
