//! Acquiring a credential: answer from the cache when the token is fresh, otherwise take the
//! entry's lock, look again, renew or log in once, save, and hand the tokens back. `get-token`,
//! `login`, `whoami` and `setup` are built on it, `logout` forgets through it ([`log_out`]: a
//! shared login ends with every cluster token derived from it), and `convert-kubeconfig` saves
//! the tokens it carries over from other programs through it ([`adopt`]).
//!
//! Where a run's tokens come from is decided once (`source.rs`: an entry's own grantor — the
//! provider, a federated token — or a `--shared-login` cluster's login), and why it runs is one
//! [`Occasion`]. The cache-hit path ([`cached_credential`]) reads one small file and renders
//! JSON: it builds no HTTP or TLS client, does no discovery, reads no JWKS and calls no keyring
//! (in `auto` and `disk` storage). Everything slow happens under the lock (`locked.rs`, one type
//! for every entry), on the one miss path (`miss.rs`), so N parallel kubectl processes cause one
//! request to the identity provider, and one browser tab. The miss takes two steps, each written
//! once for every source: renewing without a person (`renewal.rs`: [`renewal::renew`] and its one
//! outcome — a refresh, a grant that needs nobody, or a shared login's derivation,
//! `shared.rs`), which the background renewal of refresh-ahead (`renew_ahead.rs`) takes too, and
//! the login (`login_step.rs`: who is here, from the run's [`Presence`]; the cool-down of
//! `cooldown.rs`; the grant). A failure a person must act on, where no terminal shows it, raises
//! a desktop notification (`desktop_notice.rs`). What is remembered about an entry besides its
//! tokens is its state, which the cache keeps (`cache/entry_state.rs`).

mod adopt;
mod cooldown;
mod desktop_notice;
mod detach;
mod forget;
mod hand_out;
mod locked;
mod login_step;
mod miss;
mod renew_ahead;
mod renewal;
mod shared;
mod source;
#[cfg(test)]
mod tests;

pub use adopt::{Adopted, Carried, adopt, preview};
pub use forget::{Forgotten, LoggedOut, RevocationOutcome, forget, log_out};
pub use renew_ahead::run as renew_in_background;

/// The arguments that run this get-token again as its background renewal (`kubecred renew-ahead
/// …`), handed the entry's lock on descriptor `lock_fd` (unix); `None` when this run's command
/// line is not one to renew from. Only `cli` reads command lines, so `commands` supplies this
/// from the process's, captured once (`process/mod.rs`); it is called only when a renewal starts.
pub type RenewalArguments<'a> = dyn Fn(Option<i32>) -> Option<Vec<std::ffi::OsString>> + 'a;

use crate::cache::TokenCache;
use crate::clock::Clock;
use crate::config::{Config, TokenKind};
use crate::error::{Exit, fail};
use crate::exec_credential;
use crate::presence::Presence;
use crate::tokens::{Tokens, printed_expiry};
use miss::obtain_under_lock;
use source::{Source, Sourced};

/// Why tokens are being obtained: the one reason a miss (or the renewal step) runs, which
/// decides what it may do — take a token a parallel run obtained, renew before logging in,
/// hand out a still-valid token after a refusal, hold off after a failed login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occasion {
    /// kubectl asked, and the cached token is missing or runs out too soon.
    Expired,
    /// kubectl asked with `--force-refresh`: not even a fresh cached token will do, and no
    /// cool-down holds the login back.
    ForceRefresh,
    /// The same client ran us again right after it was handed this token: the API server
    /// probably refused it (401), so refresh once (`hand_out.rs`).
    After401,
    /// `kubecred login`: a new login now, never a refresh, past the cool-down.
    Login,
}

impl Occasion {
    /// Not even a fresh cached token will do (but one a parallel run obtained after this run
    /// started does).
    fn forced(self) -> bool {
        self != Occasion::Expired
    }

    /// A renewal without a person is tried before a login.
    fn renews_first(self) -> bool {
        self != Occasion::Login
    }

    /// A login is held back by the cool-down after a failed one (and, without a terminal, the
    /// hold-off): kubectl asked, without --force-refresh.
    fn held_off_after_a_failed_login(self) -> bool {
        matches!(self, Occasion::Expired | Occasion::After401)
    }
}

/// The ExecCredential document for kubectl: from the cache when it is fresh, otherwise from a
/// refresh or a new grant.
///
/// A run that looks like client-go's re-run after a 401 (`hand_out.rs`) refreshes once instead
/// of answering from the cache. A hit in the refresh-ahead window starts a background renewal
/// with `renewal_arguments`.
pub fn credential(
    config: &Config,
    renewal_arguments: &RenewalArguments,
    clock: &dyn Clock,
) -> anyhow::Result<String> {
    let Sourced { cache, source } = Source::of(config);
    let parent = hand_out::parent(config.exec.from_client);
    let mut occasion = if config.force_refresh {
        Occasion::ForceRefresh
    } else {
        Occasion::Expired
    };
    // The cached credential a 401 re-run was about: handed out again if the refresh fails (the
    // provider unreachable, or a client that runs us twice for no 401), never lost over it.
    let mut rerun_fallback = None;
    if occasion == Occasion::Expired {
        match from_cache(config, &cache, &source, parent, clock)? {
            Some(FromCache::Hit(hit)) => {
                let renew = hit.renew_ahead;
                let document = hit.hand_out();
                crate::debug!(1, "cache hit");
                if let Some(tokens_obtained_at) = renew {
                    renew_ahead::start(
                        config,
                        &cache,
                        tokens_obtained_at,
                        renewal_arguments,
                        clock,
                    );
                }
                return Ok(document);
            }
            Some(FromCache::RerunAfter401 { document, parent }) => {
                crate::debug!(
                    1,
                    "the same client asks again right after getting this token: the API server probably refused it (401); refreshing once"
                );
                occasion = Occasion::After401;
                rerun_fallback = Some((document, parent));
            }
            None => {}
        }
    }
    let presence = Presence::of_this_run(config.exec.interactive);
    let miss = obtain_under_lock(config, &cache, &source, occasion, &presence, clock);
    let tokens = match miss {
        Ok(tokens) => tokens,
        Err(err) => {
            let Some((document, parent)) = rerun_fallback else {
                if occasion == Occasion::Expired
                    && crate::error::is_transient(&err)
                    && let Some(document) = still_valid_after(&err, config, &cache, clock)
                {
                    return Ok(document);
                }
                desktop_notice::after_failure(config, &cache, &presence, &err, clock);
                return Err(err);
            };
            crate::debug!(
                1,
                "the refresh after a suspected 401 failed ({}); handing out the cached token",
                crate::error::one_line(&err)
            );
            // Not again for this parent and token.
            cache.set_loaded_stamp(clock.now().timestamp(), hand_out::mark(parent, true));
            return Ok(document);
        }
    };
    if let Some(parent) = parent {
        // A new token (or one another run just obtained): not force-refreshed again for this
        // parent.
        cache.set_entry_stamp(clock.now().timestamp(), hand_out::mark(parent, true));
    }
    render(config, &tokens, clock)
}

/// What the cache answers a get-token run.
enum FromCache<'a> {
    /// A fresh credential to hand out.
    Hit(CachedHit<'a>),
    /// The same client asks again right after it was handed this credential: the API server
    /// probably refused it (401), so refresh once (`hand_out.rs`).
    RerunAfter401 { document: String, parent: u32 },
}

/// A fresh cached credential and the hand-out stamp it is due.
struct CachedHit<'a> {
    document: String,
    cache: &'a TokenCache,
    /// The hand-out stamp to set: when (seconds) and the mark.
    stamp: Option<(i64, u32)>,
    /// The token is in its refresh-ahead window: renew it in the background. When the cached
    /// tokens were obtained (the renewal's notes are about them).
    renew_ahead: Option<chrono::DateTime<chrono::Utc>>,
}

impl CachedHit<'_> {
    /// Records the hand-out (the 401 stamp) and returns the document.
    fn hand_out(self) -> String {
        if let Some((seconds, mark)) = self.stamp {
            self.cache.set_loaded_stamp(seconds, mark);
        }
        self.document
    }
}

/// Reads the cache and judges the run of a client with `parent` by the hand-out stamp; writes
/// nothing. `None`: no fresh credential.
fn from_cache<'a>(
    config: &Config,
    cache: &'a TokenCache,
    source: &Source,
    parent: Option<u32>,
    clock: &dyn Clock,
) -> anyhow::Result<Option<FromCache<'a>>> {
    let Some(CachedCredential {
        document,
        obtained_at,
        expiry,
        renew_ahead,
    }) = cached_credential(config, cache, source, clock)?
    else {
        return Ok(None);
    };
    let now = clock.now();
    let judged = parent.map(|parent| {
        let verdict = hand_out::judge(cache.loaded_stamp(), parent, now, obtained_at, expiry);
        (parent, verdict)
    });
    let stamp = match judged {
        Some((parent, hand_out::OnHit::Refresh)) => {
            return Ok(Some(FromCache::RerunAfter401 { document, parent }));
        }
        Some((_, hand_out::OnHit::Serve { stamp: Some(mark) })) => Some((now.timestamp(), mark)),
        Some((_, hand_out::OnHit::Serve { stamp: None })) | None => None,
    };
    Ok(Some(FromCache::Hit(CachedHit {
        document,
        cache,
        stamp,
        renew_ahead: renew_ahead.then_some(obtained_at),
    })))
}

/// A new login (or grant) now, never a refresh, bypassing the cool-down.
pub fn login(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let Sourced { cache, source } = Source::of(config);
    let presence = Presence::of_this_run(config.exec.interactive);
    obtain_under_lock(config, &cache, &source, Occasion::Login, &presence, clock)
}

/// Whether the login that brought `tokens` (`login`'s) left a refresh token to renew them by:
/// its own, or for a `--shared-login` cluster the login entry's, from which every cluster's token
/// is derived (`setup`'s warning).
pub fn login_renews(config: &Config, tokens: &Tokens) -> anyhow::Result<bool> {
    Ok(match Source::of(config).source {
        Source::Own(_) => tokens.refresh_token.is_some(),
        Source::SharedLogin { login, .. } => {
            login.load()?.is_some_and(|login| login.has_refresh_token())
        }
    })
}

/// The tokens `get-token` would print from (for `whoami`): the cached ones while fresh,
/// otherwise refreshed or obtained as `get-token` would. Not the cache-hit path: that one
/// renders straight from the file ([`credential`]).
pub fn tokens(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let Sourced { cache, source } = Source::of(config);
    let occasion = if config.force_refresh {
        Occasion::ForceRefresh
    } else {
        Occasion::Expired
    };
    if occasion == Occasion::Expired
        && let Some(cached) = cache.load()?
    {
        let fresh = cached
            .tokens
            .fresh_credential(config.token_kind, clock.now(), config.min_validity)
            .is_some();
        if fresh {
            return Ok(cached.tokens);
        }
    }
    let presence = Presence::of_this_run(config.exec.interactive);
    obtain_under_lock(config, &cache, &source, occasion, &presence, clock)
}

/// A fresh credential from the cache.
struct CachedCredential {
    document: String,
    /// When its token was obtained and really expires (the 401 hand-out rules need them).
    obtained_at: chrono::DateTime<chrono::Utc>,
    expiry: chrono::DateTime<chrono::Utc>,
    /// In the refresh-ahead window, and renewable without a person.
    renew_ahead: bool,
}

/// The cache-hit path: the document to print, or `None` when there is no fresh credential.
fn cached_credential(
    config: &Config,
    cache: &TokenCache,
    source: &Source,
    clock: &dyn Clock,
) -> anyhow::Result<Option<CachedCredential>> {
    let Some(cached) = cache.load()? else {
        return Ok(None);
    };
    let now = clock.now();
    Ok(cached
        .tokens
        .fresh_credential(config.token_kind, now, config.min_validity)
        .map(|(token, expiry)| CachedCredential {
            document: exec_credential::render(
                config.exec.api_version,
                token,
                printed_expiry(expiry, now),
            ),
            obtained_at: cached.tokens.obtained_at,
            expiry,
            renew_ahead: renew_ahead::due(config, source, &cached, expiry, now),
        }))
}

/// stale-if-error: after a failure that says nothing about the token or the settings (see
/// `error::ExitError::transient`), the cached credential while the API server still accepts it:
/// its printed expiry, with the safety margin, is still ahead. Never an expired token. The
/// entry and its refresh token stay as they are; the next run tries the provider again.
fn still_valid_after(
    failure: &anyhow::Error,
    config: &Config,
    cache: &TokenCache,
    clock: &dyn Clock,
) -> Option<String> {
    let cached = cache.load().ok()??;
    let now = clock.now();
    let (token, expiry) = cached.tokens.usable_credential(config.token_kind, now)?;
    let printed = printed_expiry(expiry, now);
    let until = crate::duration::display_time(printed);
    if crate::error::exit_code_of(failure) == Exit::Provider {
        crate::log::notice(format!(
            "{}; using the cached token, valid until {until}",
            crate::error::one_line(failure)
        ));
    } else {
        // No login can happen here and now (no terminal, the cool-down): the token still
        // works, and whoever can log in will.
        crate::debug!(
            1,
            "{}; using the cached token, valid until {until}",
            crate::error::one_line(failure)
        );
    }
    Some(exec_credential::render(
        config.exec.api_version,
        token,
        printed,
    ))
}

fn render(config: &Config, tokens: &Tokens, clock: &dyn Clock) -> anyhow::Result<String> {
    let (token, expiry) = tokens.credential(config.token_kind).ok_or_else(|| {
        let what = match config.token_kind {
            TokenKind::IdToken => {
                "no ID token; request the openid scope, or pass --use-access-token"
            }
            TokenKind::AccessToken => {
                "no access token with a known expiry (no exp claim, no expires_in)"
            }
        };
        fail(
            Exit::Provider,
            format!("{} returned {what}", config.issuer_as_given),
        )
    })?;
    if expiry <= clock.now() {
        return Err(fail(
            Exit::Provider,
            format!(
                "{} returned a token that has already expired ({expiry}); check the clocks of this machine and the provider",
                config.issuer_as_given
            ),
        ));
    }
    Ok(exec_credential::render(
        config.exec.api_version,
        token,
        printed_expiry(expiry, clock.now()),
    ))
}
