//! Forgetting one entry, for `logout`: its refresh token revoked at the provider (RFC 7009),
//! then every part of the entry removed (`TokenCache::remove`: the tokens wherever they are,
//! and what was noted about them), all under the entry's lock so that no parallel run refreshes
//! (and saves) in between.

use super::source::{Source, Sourced};
use crate::cache::TokenCache;
use crate::clock::Clock;
use crate::config::Config;
use crate::grants::{ProviderClient, Revocation};

/// What `logout` did with one entry.
#[derive(Debug)]
pub struct Forgotten {
    /// Whether there was an entry (a readable one) to forget.
    pub found: bool,
    pub revocation: RevocationOutcome,
}

/// What became of an entry's refresh token at the provider.
#[derive(Debug)]
pub enum RevocationOutcome {
    /// The entry had none (client credentials), or the keyring no longer held it.
    NoRefreshToken,
    Done(Revocation),
    /// Not tried: the caller gave no provider to revoke at — `logout --all` for an entry
    /// whose record could not be read, or whose provider's settings could not be made (it says
    /// why), and `logout` for a second copy of the entry (another storage's) once it has sent
    /// one revocation.
    NotTried,
    /// The provider refused or could not be reached: a warning, the entry went all the same.
    Failed(anyhow::Error),
}

/// Forgets one entry: revokes its refresh token at the provider `revoke_with` describes, then
/// removes every part of the entry.
pub fn forget(
    cache: &TokenCache,
    lock_timeout: std::time::Duration,
    revoke_with: Option<&Config>,
    clock: &dyn Clock,
) -> anyhow::Result<Forgotten> {
    let lock = cache.lock(lock_timeout)?;
    let cached = cache.load()?;
    let refresh_token = match &cached {
        Some(cached) => cache.refresh_token(cached, &lock)?,
        None => None,
    };
    let revocation = match (refresh_token, revoke_with) {
        (None, _) => RevocationOutcome::NoRefreshToken,
        (Some(_), None) => RevocationOutcome::NotTried,
        (Some(token), Some(config)) => match ProviderClient::new(config, clock)
            .and_then(|provider| provider.revoke_refresh_token(&token))
        {
            Ok(done) => RevocationOutcome::Done(done),
            Err(err) => RevocationOutcome::Failed(err),
        },
    };
    cache.remove(&lock)?;
    Ok(Forgotten {
        found: cached.is_some(),
        revocation,
    })
}

/// What `logout` did for one configuration's login: the entry forgotten (for a `--shared-login`
/// cluster, the shared login's), and its copies kept by another storage mode, each with its
/// revocation; and how many cluster tokens derived from a shared login went with it.
#[derive(Debug)]
pub struct LoggedOut {
    pub entries: Vec<Forgotten>,
    pub derived: usize,
}

/// Logs out of `config`'s login: a shared login is ended for every cluster — its entry, and
/// every entry `derived_from` it — and an entry kept by another storage mode (a login with
/// another `--cache-storage`) goes too, so that no copy of a token stays behind. One revocation
/// is sent: by the first entry that holds a refresh token.
pub fn log_out(config: &Config, clock: &dyn Clock) -> anyhow::Result<LoggedOut> {
    let cache = match Source::of(config) {
        Sourced {
            cache,
            source: Source::Own(_),
        } => cache,
        Sourced {
            source: Source::SharedLogin { login, .. },
            ..
        } => login,
    };
    let timeout = config.cache.lock_timeout;
    let first = forget(&cache, timeout, Some(config), clock)?;
    let mut revoked = !matches!(first.revocation, RevocationOutcome::NoRefreshToken);
    let mut logged_out = LoggedOut {
        entries: vec![first],
        derived: 0,
    };
    for session in crate::cache::list_sessions(&config.cache.dir)? {
        let derived_from_it = session
            .about
            .as_ref()
            .and_then(|about| about.derived_from.as_deref())
            == Some(cache.key().as_str());
        if &session.key != cache.key() && !derived_from_it {
            continue;
        }
        let revoke_with = (!derived_from_it && !revoked).then_some(config);
        let other = TokenCache::for_session(&config.cache.dir, &session);
        let forgotten = forget(&other, timeout, revoke_with, clock)?;
        if derived_from_it {
            logged_out.derived += usize::from(forgotten.found);
            continue;
        }
        revoked |= !matches!(forgotten.revocation, RevocationOutcome::NoRefreshToken);
        logged_out.entries.push(forgotten);
    }
    Ok(logged_out)
}
