//! Refresh-ahead: a cache hit late in its token's life hands out the cached token at once and
//! starts one renewal in the background, so that kubectl never waits for the provider while a
//! token is valid.
//!
//! The hit decides with arithmetic on the entry it already read ([`due`]): no extra system call
//! until the window (`--refresh-ahead`, a quarter of the lifetime by default) is reached. Then
//! it takes the entry's lock without waiting — held: a renewal (or a login) is already under
//! way, nothing to do — and starts this same binary with the same command line and
//! [`RENEWAL_ENV`] set, detached from kubectl: its own session, stdin, stdout and stderr on the
//! null device, so neither kubecred nor client-go (which reads the plugin's pipes to their end)
//! waits for it. On unix the child inherits the locked file (its descriptor number in
//! `RENEWAL_ENV`) and holds the lock from the start, so however many hits see the window, one
//! renewal runs; elsewhere it takes the lock itself.
//!
//! The renewal ([`run`]) never opens a browser or prompts: it refreshes, or runs a grant that
//! needs no person (client credentials, token exchange, a password from the environment or a
//! file). It re-reads the entry under the lock and does nothing if another run renewed it. A
//! failure leaves the entry as it was (the next hit tries again; the foreground falls back to the
//! cached token on an outage) and is noted for `kubecred status` and `-v`, never on kubectl's
//! stderr.

use super::failure_note::{Failure, FailureNote};
use crate::cache::{Cached, EntryLock, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, Grant, PasswordSettings, PasswordSource, RefreshAhead};
use crate::error::{fail, Exit};
use crate::grants::{ProviderClient, RefreshOutcome};
use chrono::{DateTime, Utc};
use std::process::{Command, Stdio};

// Set in the renewal's environment: this run is the background renewal. Its value is the
// descriptor of the inherited lock on unix, `-` where the child takes the lock itself.
use crate::env_vars::KUBECRED_BACKGROUND_RENEWAL as RENEWAL_ENV;

/// Whether a hit with this entry should start a renewal: its token has less than the window
/// left, and it can be renewed without a person. The caller has already found it fresh (more
/// than `--min-validity` left).
pub(super) fn due(
    config: &Config,
    cached: &Cached,
    expiry: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    in_window(config.refresh_ahead, cached.tokens.obtained_at, expiry, now)
        && (cached.has_refresh_token() || renewable_by_grant(config))
}

/// Whether `now` is in the refresh-ahead window of a token obtained at `obtained_at`.
fn in_window(
    setting: RefreshAhead,
    obtained_at: DateTime<Utc>,
    expiry: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    let left = expiry - now;
    let window = match setting {
        RefreshAhead::Off => return false,
        RefreshAhead::Share(percent) => (expiry - obtained_at) * i32::from(percent) / 100,
        RefreshAhead::Before(before) => match chrono::Duration::from_std(before) {
            Ok(window) => window,
            Err(_) => return true, // Longer than any token lives.
        },
    };
    left < window
}

/// Whether the configured grant yields a new token without a person.
fn renewable_by_grant(config: &Config) -> bool {
    match config.grant {
        Grant::ClientCredentials | Grant::TokenExchange => true,
        Grant::Password => !matches!(
            config.password,
            Some(PasswordSettings {
                source: PasswordSource::Prompt,
                ..
            }) | None
        ),
        // A login needs a person; a federated token is the subject token itself, renewed by
        // whoever rotates its file.
        Grant::Authcode | Grant::AuthcodeKeyboard | Grant::DeviceCode | Grant::FederatedToken => {
            false
        }
    }
}

/// Starts the background renewal of `cache`'s entry, unless one is under way. Best effort: a
/// renewal that cannot start costs nothing but a `-v` line (the token is renewed in the
/// foreground when it runs out).
pub(super) fn start(config: &Config, cache: &TokenCache) {
    if config.verbose > 0 {
        if let Some(failure) = last_failure(cache) {
            crate::debug!(
                1,
                "the last background renewal failed at {}: {}",
                failure.failed_at.format("%Y-%m-%d %H:%M:%S UTC"),
                failure.reason
            );
        }
    }
    let lock = match cache.try_lock() {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            crate::debug!(1, "a renewal of this token is already under way");
            return;
        }
        Err(err) => {
            crate::debug!(
                1,
                "not renewing in the background: {}",
                crate::error::one_line(&err)
            );
            return;
        }
    };
    match spawn(lock) {
        Ok(()) => crate::debug!(1, "the token runs out soon: renewing it in the background"),
        Err(err) => crate::debug!(1, "could not start the background renewal: {err}"),
    }
}

/// Starts this binary again with the same arguments as the detached renewal, handing it `lock`
/// on unix.
///
/// No `pre_exec`: without one, std starts the child with `posix_spawn` (no copy of this
/// process's page tables), which costs the hit that starts a renewal about half of what a
/// `fork` does. So the child starts its own session itself ([`run`]), and the lock's descriptor
/// is made inheritable here rather than moved between fork and exec.
fn spawn(lock: EntryLock) -> std::io::Result<()> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(std::env::args_os().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Some(file) = lock.into_file_for_child() else {
            return Ok(()); // No lock file: no cache to renew into.
        };
        let fd = file.as_raw_fd();
        // The one descriptor this process lets a child inherit, and this process starts no other
        // child: clearing close-on-exec here is safe.
        // SAFETY: fcntl on a descriptor this function owns.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        command.env(RENEWAL_ENV, fd.to_string());
        command.spawn()?;
        // This process's descriptor closes here without unlocking: the child's copy holds on.
        drop(file);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        command
            .env(RENEWAL_ENV, "-")
            .creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
        // Windows cannot hand an advisory lock down: the child takes it again itself.
        drop(lock);
        command.spawn()?;
    }
    #[cfg(not(any(unix, windows)))]
    {
        command.env(RENEWAL_ENV, "-");
        drop(lock);
        command.spawn()?;
    }
    Ok(())
}

/// The background renewal, run in the child [`spawn`] started (`RENEWAL_ENV` set): renews the
/// entry if it is still due, and notes how that went. Prints nothing.
pub fn run(config: &Config, clock: &dyn Clock, lock_fd: &str) -> anyhow::Result<()> {
    // Its own session: no controlling terminal, and no signal meant for kubectl's process group.
    // (Failing means it is a session leader already: nothing to leave.)
    #[cfg(unix)]
    // SAFETY: setsid has no preconditions.
    unsafe {
        libc::setsid();
    }
    let cache = TokenCache::new(config);
    let Some(lock) = take_lock(&cache, lock_fd)? else {
        return Ok(()); // Another renewal or a login holds the entry.
    };
    let note = FailureNote::new(cache.state_path(FAILURE_SUFFIX));
    match renew(config, &cache, &lock, clock) {
        Ok(()) => {
            note.clear();
            Ok(())
        }
        Err(err) => {
            note.record(&crate::error::one_line(&err), clock.now());
            Err(err)
        }
    }
}

/// The lock the parent handed down on `lock_fd`, or taken now without waiting.
fn take_lock(cache: &TokenCache, lock_fd: &str) -> anyhow::Result<Option<EntryLock>> {
    #[cfg(unix)]
    if let Ok(fd) = lock_fd.parse::<i32>() {
        use std::os::fd::FromRawFd;
        // SAFETY: fcntl only asks whether the descriptor is open.
        if fd <= 2 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            return Err(fail(
                Exit::Input,
                format!(
                    "{RENEWAL_ENV} is set by kubecred itself for its background renewal; unset it"
                ),
            ));
        }
        // SAFETY: the parent left the lock file open on this descriptor for this process alone
        // (`spawn`), and nothing else here opens or closes it.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        // SAFETY: fcntl on the descriptor `file` now owns: not inherited any further.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        return EntryLock::inherited(file, &cache.lock_path()).map(Some);
    }
    let _ = lock_fd;
    cache.try_lock()
}

/// Renews the entry under `lock` if it is still in the window: refresh token first, otherwise
/// the grant when it needs no person. The entry changes only by a successful renewal (and by a
/// refresh token the provider rotated, which must be kept whatever else happened).
fn renew(
    config: &Config,
    cache: &TokenCache,
    lock: &EntryLock,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    let Some(cached) = cache.load()? else {
        return Ok(()); // Logged out meanwhile.
    };
    let now = clock.now();
    let Some((_, expiry)) =
        cached
            .tokens
            .fresh_credential(config.token_kind, now, config.min_validity)
    else {
        return Ok(()); // Too late: the foreground renews (or logs in) on the next run.
    };
    if !due(config, &cached, expiry, now) {
        return Ok(()); // Another run renewed it.
    }
    let refresh_token = cache.refresh_token(&cached, lock)?;
    let provider = ProviderClient::new(config, clock)?;
    let Some(refresh_token) = refresh_token else {
        let tokens = provider.obtain()?;
        return cache.save(&tokens, lock);
    };
    match provider.refresh(&refresh_token, cached.tokens.original_identity().as_ref())? {
        RefreshOutcome::Refreshed(tokens) => {
            cache.save(&tokens, lock)?;
            if tokens.credential(config.token_kind).is_none() {
                return Err(fail(
                    Exit::Provider,
                    "the refresh answer lacks the token kubectl needs; a login is needed when the cached token runs out",
                ));
            }
            Ok(())
        }
        RefreshOutcome::Unusable {
            refresh_token,
            error,
        } => {
            super::keep_rotated_refresh_token(cache, &cached.tokens, refresh_token, lock)?;
            Err(error)
        }
        // The entry stays: its token is still good, and the foreground says what this means
        // when the token runs out.
        RefreshOutcome::Rejected(reason) => Err(fail(
            Exit::Provider,
            format!("the provider refused the refresh token ({reason}); a login is needed when the cached token runs out"),
        )),
    }
}

/// Where the background renewal of an entry notes its failure (beside the entry).
const FAILURE_SUFFIX: &str = "renewal-failed";

/// The failure the last background renewal of `cache`'s entry noted, if any.
fn last_failure(cache: &TokenCache) -> Option<Failure> {
    FailureNote::new(cache.state_path(FAILURE_SUFFIX)).read()
}

/// The failure the last background renewal of the entry `key` in `dir` noted (`status`).
pub fn last_failure_of(dir: &std::path::Path, key: &crate::cache::CacheKey) -> Option<Failure> {
    FailureNote::new(crate::cache::state_path(dir, key, FAILURE_SUFFIX)).read()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::time::Duration;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn the_window_is_a_share_of_the_lifetime_or_a_fixed_time() {
        let (obtained, expiry) = (at(0), at(3600));
        let quarter = RefreshAhead::Share(25);
        assert!(!in_window(quarter, obtained, expiry, at(2699)));
        assert!(!in_window(quarter, obtained, expiry, at(2700)));
        assert!(in_window(quarter, obtained, expiry, at(2701)));
        let ten_minutes = RefreshAhead::Before(Duration::from_secs(600));
        assert!(!in_window(ten_minutes, obtained, expiry, at(3000)));
        assert!(in_window(ten_minutes, obtained, expiry, at(3001)));
        assert!(!in_window(RefreshAhead::Off, obtained, expiry, at(3599)));
        let forever = RefreshAhead::Before(Duration::MAX);
        assert!(in_window(forever, obtained, expiry, at(1)));
    }
}
