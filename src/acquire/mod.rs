//! Acquiring a credential: answer from the cache when the token is fresh, otherwise take the
//! entry's lock, look again, refresh or run the grant once, save, and hand the tokens back.
//! `get-token`, `login` and `logout` ([`forget`](forget::forget)) are built on it (see `commands/`), and
//! `convert-kubeconfig` saves the tokens it carries over from other programs through it
//! ([`adopt`]).
//!
//! The cache-hit path ([`cached_credential`]) reads one small file and renders JSON: it builds no
//! HTTP or TLS client, does no discovery, reads no JWKS and calls no keyring (in `auto` and
//! `disk` storage). Everything slow happens under the lock, so N parallel kubectl processes
//! cause one request to the identity provider, and one browser tab. The login cool-down
//! (`cooldown.rs`) is this path's policy: after a failed login, fail at once for a while.
//! Renewing without a person is one step (`renewal.rs`: [`renewal::renew`] and its one outcome,
//! [`renewal::Renewal`]) that this path and the background renewal of refresh-ahead
//! (`renew_ahead.rs`) both take, each mapping the outcome to its own policy ([`after_renewal`]
//! here). What is remembered about an entry besides its tokens is its state, which the cache
//! keeps (`cache/entry_state.rs`). A `--shared-login` cluster's miss derives its token from the
//! one login (`shared.rs`), by the same renewal step.

mod adopt;
mod cooldown;
mod detach;
mod forget;
mod hand_out;
mod renew_ahead;
mod renewal;
mod shared;
#[cfg(test)]
mod tests;

pub use adopt::{Adopted, Carried, adopt, preview};
pub use forget::{Forgotten, RevocationOutcome, forget};
pub use renew_ahead::run as renew_in_background;

/// The arguments that run this get-token again as its background renewal (`kubecred renew-ahead
/// …`), handed the entry's lock on descriptor `lock_fd` (unix); `None` when this run's command
/// line is not one to renew from. Only `cli` reads command lines, so `commands` supplies this
/// from the process's, captured once (`process.rs`); it is called only when a renewal starts.
pub type RenewalArguments<'a> = dyn Fn(Option<i32>) -> Option<Vec<std::ffi::OsString>> + 'a;

use crate::cache::{EntryLock, EntryState, Note, TokenCache};
use crate::clock::Clock;
use crate::config::{BrowserChoice, Config, Grant, PasswordSettings, TokenKind};
use crate::error::{Exit, fail, transient};
use crate::exec_credential;
use crate::grants::ProviderClient;
use crate::login::paste;
use crate::tokens::{Tokens, printed_expiry};
use renewal::Renewal;

/// Why tokens are being obtained: kubectl asked (`get-token`), or the user did (`login`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    GetToken,
    ExplicitLogin,
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
    let cache = TokenCache::new(config);
    let parent = hand_out::parent(config.exec.from_client);
    let mut forced = config.force_refresh;
    // The cached credential a 401 re-run was about: handed out again if the refresh fails (the
    // provider unreachable, or a client that runs us twice for no 401), never lost over it.
    let mut rerun_fallback = None;
    if !forced {
        match from_cache(config, &cache, parent, clock)? {
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
                forced = true;
                rerun_fallback = Some((document, parent));
            }
            None => {}
        }
    }
    let tokens = match obtain_under_lock(config, &cache, Trigger::GetToken, forced, clock) {
        Ok(tokens) => tokens,
        Err(err) => {
            let Some((document, parent)) = rerun_fallback else {
                if !config.force_refresh
                    && crate::error::is_transient(&err)
                    && let Some(document) = still_valid_after(&err, config, &cache, clock)
                {
                    return Ok(document);
                }
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
    parent: Option<u32>,
    clock: &dyn Clock,
) -> anyhow::Result<Option<FromCache<'a>>> {
    let Some(CachedCredential {
        document,
        obtained_at,
        expiry,
        renew_ahead,
    }) = cached_credential(config, cache, clock)?
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
    let cache = TokenCache::new(config);
    obtain_under_lock(config, &cache, Trigger::ExplicitLogin, true, clock)
}

/// The tokens `get-token` would print from (for `whoami`): the cached ones while fresh,
/// otherwise refreshed or obtained as `get-token` would. Not the cache-hit path: that one
/// renders straight from the file ([`credential`]).
pub fn tokens(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let cache = TokenCache::new(config);
    if !config.force_refresh
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
    obtain_under_lock(
        config,
        &cache,
        Trigger::GetToken,
        config.force_refresh,
        clock,
    )
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
            renew_ahead: renew_ahead::due(config, &cached, expiry, now),
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

/// The cached tokens, when the provider refused their refresh token (noted after they were
/// obtained) and the credential is still valid: handed out without a login until it runs out.
/// The refusal was said once, when it happened (or shown by `status`, when the background
/// renewal met it); a login is needed only once the token is no longer accepted.
fn valid_after_refused_refresh(
    config: &Config,
    cached: &crate::cache::Cached,
    state: &EntryState,
    clock: &dyn Clock,
) -> Option<Tokens> {
    cached
        .tokens
        .usable_credential(config.token_kind, clock.now())?;
    let refusal = state.refresh_refused.as_ref()?;
    crate::debug!(
        1,
        "the provider refused the refresh token at {} ({}); handing out the cached token until it runs out",
        crate::duration::display_time(refusal.at),
        refusal.reason
    );
    Some(cached.tokens.clone())
}

/// Single flight: everything that talks to the provider happens here, under the entry's lock.
/// `forced`: not even a fresh cached token will do (`--force-refresh`, `login`, a 401 re-run).
fn obtain_under_lock(
    config: &Config,
    cache: &TokenCache,
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
    if config.shared_login.is_some() {
        return shared::obtain(
            config,
            cache,
            &lock,
            cached.as_ref(),
            trigger,
            forced,
            clock,
        );
    }
    let state = cache.state(cached.as_ref().map(|c| c.tokens.obtained_at));

    // A refresh is cheap and needs no user; `kubecred login` means a new login, though. The
    // provider client a refresh builds serves the login after it.
    let mut provider = None;
    let mut refused_refresh = None;
    if let (Some(cached), Trigger::GetToken) = (&cached, trigger) {
        if !forced && let Some(tokens) = valid_after_refused_refresh(config, cached, &state, clock)
        {
            return Ok(tokens);
        }
        let renewal = renewal::renew(config, cache, cached, &lock, &mut provider, clock);
        match after_renewal(config, cache, &lock, renewal, forced, clock)? {
            AfterRenewal::HandOut(tokens) => return Ok(tokens),
            AfterRenewal::Login { refused } => refused_refresh = refused,
        }
    }
    preflight_login(config, &state, trigger, clock)?;
    // Why a browser tab opens (or a device code shows) for someone who was logged in: said
    // once the login goes ahead. Where it cannot, its own error is the one line.
    if let Some(reason) = refused_refresh
        && config.grant.needs_a_person()
    {
        crate::log::notice(format!(
            "{} refused the refresh token ({reason}); logging in again",
            config.issuer_as_given
        ));
    }

    notice_secrets_on_command_line(config);
    // The subject token itself is the credential: no provider, no discovery.
    if config.grant == Grant::FederatedToken {
        let tokens = crate::grants::federated_token(config, clock)?;
        keep(cache, &tokens, &lock);
        return Ok(tokens);
    }
    let provider = match provider {
        Some(provider) => provider,
        None => ProviderClient::new(config, clock)?,
    };
    obtain_new(config, cache, &provider, &lock, clock)
}

/// What the foreground does after a renewal.
enum AfterRenewal {
    HandOut(Tokens),
    /// A login (or a new grant) is next; `refused`: because the provider refused the refresh
    /// token, saying this.
    Login {
        refused: Option<String>,
    },
}

/// The foreground's policy for what a renewal came to: the tokens to hand out, or a login (or
/// a new grant) next. `forced`: the cached token will not do.
fn after_renewal(
    config: &Config,
    cache: &TokenCache,
    lock: &EntryLock,
    renewal: Renewal,
    forced: bool,
    clock: &dyn Clock,
) -> anyhow::Result<AfterRenewal> {
    match renewal {
        Renewal::Renewed(tokens) => {
            keep(cache, &tokens, lock);
            Ok(AfterRenewal::HandOut(tokens))
        }
        Renewal::Refused { reason, kept } => {
            // Not an outage, and the cached token may still be good: handed out until it runs
            // out (said once: the refresh token is gone), then a login is needed.
            let usable = kept.usable_credential(config.token_kind, clock.now());
            if let (Some((_, expiry)), false) = (usable, forced) {
                crate::log::notice(format!(
                    "{} refused the refresh token ({reason}); the cached token is used until {}, then a login is needed (kubecred login)",
                    config.issuer_as_given,
                    crate::duration::display_time(printed_expiry(expiry, clock.now()))
                ));
                return Ok(AfterRenewal::HandOut(kept));
            }
            crate::debug!(1, "refresh token refused ({reason}): a login is needed");
            if usable.is_none() {
                // Nothing in it can be used any more: an entry that is dead should not be
                // listed by `status` while the login it needs fails.
                if let Err(err) = cache.remove(lock) {
                    crate::log::notice(format!(
                        "could not delete the cache entry of the refused refresh token: {}",
                        crate::error::one_line(&err)
                    ));
                }
            }
            Ok(AfterRenewal::Login {
                refused: Some(reason),
            })
        }
        Renewal::NewGrant => Ok(AfterRenewal::Login { refused: None }),
        Renewal::NeedsPerson(why) => {
            crate::debug!(1, "{why}; logging in again");
            Ok(AfterRenewal::Login { refused: None })
        }
        Renewal::Failed(err) => Err(err),
    }
}

/// Saves tokens the foreground just obtained and is about to hand out. A login (or refresh)
/// that succeeded is never lost to the cache: when they cannot be kept, one warning says why,
/// and they are handed out all the same; only failing to obtain a token fails the run. The
/// entry's notes go either way: they were about tokens these replace, and a cool-down left
/// behind by a login that succeeded would hold off the next one for nothing.
fn keep(cache: &TokenCache, tokens: &Tokens, lock: &EntryLock) {
    if let Err(err) = cache.save(tokens, lock) {
        cache.update_state(lock, |state| *state = EntryState::default());
        crate::log::notice(format!(
            "warning: the new token is handed out but not cached: {}",
            crate::error::one_line(&err)
        ));
    }
}

/// The checks that make a login that cannot or should not happen fail at once, before any
/// network round trip: a keyboard login without a terminal, and the cool-down after a failed
/// login (which `kubecred login` and --force-refresh bypass). Grants without a user pass. Each
/// refusal is transient: it says nothing about the cached token, which may still be handed out.
fn preflight_login(
    config: &Config,
    state: &EntryState,
    trigger: Trigger,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    if config.grant_is_automatic
        && config.login.browser == BrowserChoice::System
        && !terminal_attached()
    {
        return Err(transient(Exit::Login, NO_TERMINAL_FOR_AUTO));
    }
    if config
        .password
        .as_ref()
        .is_some_and(PasswordSettings::needs_a_person)
        && !paste::stdin_is_interactive(config.exec.interactive)
    {
        return Err(transient(
            Exit::Login,
            "--grant-type password has no user name or no password and this session is not interactive (no terminal, or kubectl's interactiveMode Never): pass --username, and set KUBECRED_PASSWORD or pass --password-file",
        ));
    }
    if !config.grant.is_user_login() {
        return Ok(());
    }
    if config.grant == Grant::AuthcodeKeyboard
        && !paste::stdin_is_interactive(config.exec.interactive)
    {
        return Err(transient(
            Exit::Login,
            "--grant-type authcode-keyboard needs an interactive terminal (kubectl passes stdin only with interactiveMode IfAvailable/Always on a TTY); use --grant-type device-code or authcode",
        ));
    }
    if trigger == Trigger::GetToken && !config.force_refresh {
        cooldown::check(
            state.login_failed.as_ref(),
            config.login.cooldown,
            clock.now(),
        )?;
    }
    Ok(())
}

/// The refusal of `--grant-type auto` where nobody can log in, naming the grants that work.
const NO_TERMINAL_FOR_AUTO: &str = "no terminal to log in on, so --grant-type auto will not open a browser or prompt (a CI job or a script?); choose a non-interactive grant: --grant-type client-credentials, token-exchange, federated-token or password (with KUBECRED_PASSWORD), or pass --grant-type authcode to open the system browser anyway (an IDE without a terminal)";

/// Whether a person may be at a terminal: stdin or stderr is one (kubectl hands the plugin
/// its stderr always, its stdin only in interactive mode).
fn terminal_attached() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() || std::io::stderr().is_terminal()
}

/// A secret given as a command-line flag shows in `ps` to every user of the machine: say so
/// when it is about to be used (not on the cache-hit path, where it is not).
fn notice_secrets_on_command_line(config: &Config) {
    for secret in &config.secrets_on_command_line {
        crate::log::notice(format!(
            "{} on the command line is visible to other users in `ps`; use {}",
            secret.flag, secret.instead
        ));
    }
}

/// A new grant. An interactive login leaves a cool-down record behind unless it succeeds or
/// fails before it asked a person, so that kubectl retries and background callers do not open a
/// browser tab each.
fn obtain_new(
    config: &Config,
    cache: &TokenCache,
    provider: &ProviderClient,
    lock: &EntryLock,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    if !config.grant.is_user_login() {
        let tokens = provider.obtain()?;
        keep(cache, &tokens, lock);
        return Ok(tokens);
    }
    let note_failure = |reason: &str| {
        cache.update_state(lock, |state| {
            state.login_failed = Some(Note::new(reason, clock.now()));
        });
    };
    // Written before the browser opens: a login that is abandoned (Ctrl-C, or an IDE killing
    // the plugin) must hold off the next tab as much as one that failed.
    note_failure("a login was started and did not finish");
    match provider.obtain() {
        Ok(tokens) => {
            // Keeping clears the note, also when the tokens cannot be kept.
            keep(cache, &tokens, lock);
            Ok(tokens)
        }
        // A login that failed before it asked anybody (the provider refused the device
        // authorization request, a setting is wrong, nothing could open) leaves no cool-down:
        // there is no tab storm to hold off, and the next run must say the real cause, not "not
        // opening another browser". (`password` is held off either way: each retry is another
        // password the provider may count against the account.)
        Err(err) if provider.asked_a_person() || !config.grant.needs_a_person() => {
            note_failure(&crate::error::one_line(&err));
            Err(err)
        }
        Err(err) => {
            cache.update_state(lock, |state| state.login_failed = None);
            Err(err)
        }
    }
}
