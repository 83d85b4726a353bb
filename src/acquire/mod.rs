//! Acquiring a credential: answer from the cache when the token is fresh, otherwise take the
//! entry's lock, look again, refresh or run the grant once, save, and hand the tokens back.
//! `get-token`, `login` and `logout` are built on it (see `commands/`).
//!
//! The cache-hit path ([`cached_credential`]) reads one small file and renders JSON: it builds no
//! HTTP or TLS client, does no discovery, reads no JWKS and calls no keyring (in `auto` and
//! `disk` storage). Everything slow happens under the lock, so N parallel kubectl processes
//! cause one request to the identity provider, and one browser tab. The login cool-down
//! (`cooldown.rs`) is this path's policy: after a failed login, fail at once for a while.

mod cooldown;
#[cfg(test)]
mod tests;

pub use cooldown::Cooldown;

use crate::cache::{EntryLock, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, Grant, TokenKind};
use crate::error::{fail, Exit};
use crate::exec_credential;
use crate::grants::{ProviderClient, RefreshOutcome};
use crate::login::paste;
use crate::tokens::Tokens;

/// Why tokens are being obtained: kubectl asked (`get-token`), or the user did (`login`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    GetToken,
    ExplicitLogin,
}

/// The ExecCredential document for kubectl: from the cache when it is fresh, otherwise from a
/// refresh or a new grant.
pub fn credential(config: &Config, clock: &dyn Clock) -> anyhow::Result<String> {
    let cache = TokenCache::new(config);
    if !config.force_refresh {
        if let Some(document) = cached_credential(config, &cache, clock)? {
            crate::debug!(1, "cache hit");
            return Ok(document);
        }
    }
    let tokens = obtain_under_lock(config, &cache, Trigger::GetToken, clock)?;
    render(config, &tokens, clock)
}

/// A new login (or grant) now, never a refresh, bypassing the cool-down.
pub fn login(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let cache = TokenCache::new(config);
    obtain_under_lock(config, &cache, Trigger::ExplicitLogin, clock)
}

/// The tokens `get-token` would print from (for `whoami`): the cached ones while fresh,
/// otherwise refreshed or obtained as `get-token` would. Not the cache-hit path: that one
/// renders straight from the file ([`credential`]).
pub fn tokens(config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let cache = TokenCache::new(config);
    if !config.force_refresh {
        if let Some(cached) = cache.load()? {
            let fresh = cached
                .tokens
                .fresh_credential(config.token_kind, clock.now(), config.min_validity)
                .is_some();
            if fresh {
                return Ok(cached.tokens);
            }
        }
    }
    obtain_under_lock(config, &cache, Trigger::GetToken, clock)
}

/// Forgets this entry's tokens (and its cool-down).
pub fn logout(config: &Config) -> anyhow::Result<()> {
    let cache = TokenCache::new(config);
    let lock = cache.lock(config.cache.lock_timeout)?;
    cache.remove(&lock)?;
    cooldown_for(&cache).clear();
    Ok(())
}

/// The cache-hit path. Returns `None` when there is no fresh credential.
fn cached_credential(
    config: &Config,
    cache: &TokenCache,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    let Some(cached) = cache.load()? else {
        return Ok(None);
    };
    Ok(cached
        .tokens
        .fresh_credential(config.token_kind, clock.now(), config.min_validity)
        .map(|(token, expiry)| exec_credential::render(config.exec.api_version, token, expiry)))
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
        fail(Exit::Provider, format!("{} returned {what}", config.issuer))
    })?;
    if expiry <= clock.now() {
        return Err(fail(
            Exit::Provider,
            format!(
                "{} returned a token that has already expired ({expiry}); check the clocks of this machine and the provider",
                config.issuer
            ),
        ));
    }
    Ok(exec_credential::render(
        config.exec.api_version,
        token,
        expiry,
    ))
}

fn cooldown_for(cache: &TokenCache) -> Cooldown {
    Cooldown::new(cache.state_path("login-failed"))
}

/// Single flight: everything that talks to the provider happens here, under the entry's lock.
fn obtain_under_lock(
    config: &Config,
    cache: &TokenCache,
    trigger: Trigger,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let started = clock.now();
    let lock = cache.lock(config.cache.lock_timeout)?;
    let forced = config.force_refresh || trigger == Trigger::ExplicitLogin;

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

    // A refresh is cheap and needs no user; `kubecred login` means a new login, though.
    let refresh_token = match (&cached, trigger) {
        (Some(cached), Trigger::GetToken) => cache.refresh_token(cached, &lock)?,
        _ => None,
    };
    if refresh_token.is_none() {
        preflight_login(config, cache, trigger, clock)?;
    }

    let provider = ProviderClient::new(config, clock)?;
    if let (Some(refresh_token), Some(cached)) = (refresh_token, &cached) {
        match provider.refresh(&refresh_token)? {
            RefreshOutcome::Refreshed(tokens) => {
                // Saved before anything else: the provider may have rotated the refresh token.
                cache.save(&tokens, &lock)?;
                if tokens.credential(config.token_kind).is_some() {
                    return Ok(tokens);
                }
                crate::debug!(
                    1,
                    "the refresh response lacks the token kubectl needs; logging in again"
                );
            }
            RefreshOutcome::Unusable {
                refresh_token,
                error,
            } => {
                let mut kept = cached.tokens.clone();
                kept.refresh_token = Some(refresh_token);
                cache.save(&kept, &lock)?;
                return Err(error);
            }
            RefreshOutcome::Rejected(reason) => {
                crate::debug!(
                    1,
                    "refresh token rejected ({reason}); dropping the cache entry"
                );
                // A leftover keyring item must not stand between the user and a new login.
                if let Err(err) = cache.remove(&lock) {
                    crate::log::notice(format!(
                        "could not delete the rejected token: {}",
                        crate::error::one_line(&err)
                    ));
                }
            }
        }
        preflight_login(config, cache, trigger, clock)?;
    }

    obtain_new(config, cache, &provider, &lock, clock)
}

/// The checks that make a login that cannot or should not happen fail at once, before any
/// network round trip: a keyboard login without a terminal, and the cool-down after a failed
/// login (which `kubecred login` and --force-refresh bypass). Grants without a user pass.
fn preflight_login(
    config: &Config,
    cache: &TokenCache,
    trigger: Trigger,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    if !config.grant.is_user_login() {
        return Ok(());
    }
    if config.grant == Grant::AuthcodeKeyboard
        && !paste::stdin_is_interactive(config.exec.interactive)
    {
        return Err(fail(
            Exit::Login,
            "--grant-type authcode-keyboard needs an interactive terminal (kubectl passes stdin only with interactiveMode IfAvailable/Always on a TTY); use --grant-type device-code or authcode",
        ));
    }
    if trigger == Trigger::GetToken && !config.force_refresh {
        cooldown_for(cache).check(config.login.cooldown, clock.now())?;
    }
    Ok(())
}

/// A new grant. An interactive login leaves a cool-down record behind unless it succeeds, so
/// that kubectl retries and background callers do not open a browser tab each.
fn obtain_new(
    config: &Config,
    cache: &TokenCache,
    provider: &ProviderClient,
    lock: &EntryLock,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    if !config.grant.is_user_login() {
        let tokens = provider.obtain()?;
        cache.save(&tokens, lock)?;
        return Ok(tokens);
    }
    let cooldown = cooldown_for(cache);
    // Written before the browser opens: a login that is abandoned (Ctrl-C, or an IDE killing
    // the plugin) must hold off the next tab as much as one that failed.
    cooldown.record_failure("a login was started and did not finish", clock.now());
    match provider.obtain() {
        Ok(tokens) => {
            cooldown.clear();
            cache.save(&tokens, lock)?;
            Ok(tokens)
        }
        Err(err) => {
            cooldown.record_failure(&crate::error::one_line(&err), clock.now());
            Err(err)
        }
    }
}
