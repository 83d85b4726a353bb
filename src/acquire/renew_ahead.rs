//! Refresh-ahead: a cache hit late in its token's life hands out the cached token at once and
//! starts one renewal in the background, so that kubectl never waits for the provider while a
//! token is valid.
//!
//! The hit decides with arithmetic on the entry it already read ([`due`]): no extra system call
//! until the window (`--refresh-ahead`, a quarter of the lifetime by default) is reached. Then
//! it reads the entry's state (one small file, usually absent) for the back-off, takes the
//! entry's lock without waiting — held: a renewal (or a login) is already under way, nothing to
//! do — and starts this same binary as `kubecred renew-ahead` with get-token's arguments,
//! detached from kubectl (`detach.rs`), handing it the lock.
//!
//! A shared login's derived token (`--shared-login`) is renewed from the login by the same
//! renewal step (`shared.rs`): the login's lock taken without waiting after the derived entry's,
//! never a login.
//!
//! The renewal ([`run`]) holds the foreground's standard, because nobody watches it:
//! - it never asks for a person: it takes the outcome of the renewal step the foreground takes
//!   too ([`renewal::renew`]) — the refresh token, or a grant that needs nobody — and where only
//!   a login would do, does nothing (a refresh token missing from the keyring is the
//!   foreground's to deal with, when the token runs out);
//! - it never changes what a hit answers while the cached token is valid: the entry changes only
//!   by new tokens, by a rotated refresh token, or by dropping a refresh token the provider
//!   refused (the token kubectl gets stays); it leaves no cool-down and deletes nothing;
//! - it backs off: a failure is noted with when the next renewal may start ([`retry_at`]):
//!   after an outage, a growing interval that still leaves a try before `--min-validity`; after
//!   a refusal, or with nothing to renew with, not again for these tokens. Hits read the note
//!   before starting another; `status` and `-v` show it, kubectl's stderr never does.

use super::locked::Locked;
use super::renewal::{self, Renewal, Stop};
use super::source::{Grantor, LazyProvider, Source, Sourced};
use super::{Presence, RenewalArguments, detach, login_step};
use crate::cache::{EntryState, Note, RenewalFailure, RenewalNote, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, RefreshAhead};
use crate::duration::display_time;
use crate::error::{Exit, fail};
use chrono::{DateTime, Duration, Utc};

/// The wait before the first retry after a failed renewal; doubled after each further failure.
const FIRST_RETRY: Duration = Duration::seconds(10);

/// No retry closer than this to the foreground's turn: by then the token is renewed by the
/// run that finds it too short, and a request or two saved is not worth a process.
const SHORTEST_RETRY: Duration = Duration::seconds(1);

/// Whether a hit with this entry should start a renewal: its token has less than the window
/// left, and the entry says it can be renewed without a person. The caller has already found it
/// fresh (more than `--min-validity` left).
pub(super) fn due(
    config: &Config,
    source: &Source,
    cached: &crate::cache::Cached,
    expiry: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    in_window(config.refresh_ahead, cached.tokens.obtained_at, expiry, now)
        && source.renews_alone(config, cached)
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
        RefreshAhead::Before(before) => match Duration::from_std(before) {
            Ok(window) => window,
            Err(_) => return true, // Longer than any token lives.
        },
    };
    left < window
}

/// Why no renewal may start now, given the state read for the entry's current tokens: the last
/// one failed and its back-off has not run out. `None`: one may.
fn backing_off(state: &EntryState, now: DateTime<Utc>) -> Option<String> {
    let failed = state.renewal.as_ref()?.failed.as_ref()?;
    let last = format!(
        "the last background renewal failed at {}: {}",
        display_time(failed.note.at),
        failed.note.reason
    );
    match failed.retry_at {
        None => Some(format!(
            "{last}; not again for this token (it is renewed when it runs out)"
        )),
        Some(retry_at) if now < retry_at => Some(format!(
            "{last}; the next try after {}",
            display_time(retry_at)
        )),
        Some(_) => None,
    }
}

/// Whether a renewal a hit started at the state's `started_at` may still be under way (Windows,
/// where the lock is not handed down, so the note is what stops the next hits). After the
/// longest a renewal can take, it is taken to have died.
#[cfg(windows)]
fn started_recently(state: &EntryState, config: &Config, now: DateTime<Utc>) -> bool {
    let longest = Duration::from_std(config.http.timeout * 3).unwrap_or(Duration::MAX)
        + Duration::seconds(10);
    state
        .renewal
        .as_ref()
        .and_then(|renewal| renewal.started_at)
        .is_some_and(|started| now < started + longest)
}

/// When the next background renewal may start after the `attempts`-th failure in a row at
/// `failed_at`; `deadline` is when the foreground takes over (the token's expiry less
/// `--min-validity`). An outage: [`FIRST_RETRY`], doubling, but never more than half the time
/// left, so that one more try still happens before the deadline. A refusal: `None`, not again.
fn retry_at(
    transient: bool,
    attempts: u32,
    failed_at: DateTime<Utc>,
    deadline: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    if !transient {
        return None;
    }
    let grown = FIRST_RETRY * 2i32.saturating_pow(attempts.saturating_sub(1).min(16));
    let delay = grown.min((deadline - failed_at) / 2);
    (delay >= SHORTEST_RETRY).then(|| failed_at + delay)
}

/// Starts the background renewal of `cache`'s entry (its tokens obtained at
/// `tokens_obtained_at`) with `arguments`, unless the back-off says not yet or one is under
/// way. Best effort: a renewal that cannot start costs nothing but a `-v` line (the token is
/// renewed in the foreground when it runs out).
pub(super) fn start(
    config: &Config,
    cache: &TokenCache,
    tokens_obtained_at: DateTime<Utc>,
    arguments: &RenewalArguments,
    clock: &dyn Clock,
) {
    #[cfg(not(windows))]
    let _ = config; // Only Windows' started-renewal note needs the settings.
    if let Some(why) = backing_off(&cache.state(Some(tokens_obtained_at)), clock.now()) {
        crate::debug!(1, "{why}");
        return;
    }
    #[cfg(windows)]
    if started_recently(&cache.state(Some(tokens_obtained_at)), config, clock.now()) {
        crate::debug!(1, "a renewal of this token is already under way");
        return;
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
    // Windows cannot hand the lock down: the note stops the hits that come before the child
    // takes the lock. Written under the lock, after looking again.
    #[cfg(windows)]
    {
        let now = clock.now();
        if started_recently(&cache.state(Some(tokens_obtained_at)), config, now) {
            return;
        }
        cache.update_state(&lock, |state| {
            state
                .renewal
                .get_or_insert_with(RenewalNote::default)
                .started_at = Some(now);
        });
    }
    match detach::spawn_renewal(lock, arguments) {
        Ok(()) => crate::debug!(1, "the token runs out soon: renewing it in the background"),
        Err(err) => crate::debug!(1, "could not start the background renewal: {err}"),
    }
}

/// The background renewal (`kubecred renew-ahead`, started by [`start`]): takes over the lock
/// (`lock_fd`, on unix) or takes it, renews the entry if it is still due, and notes how that
/// went. Prints nothing.
pub fn run(config: &Config, lock_fd: Option<i32>, clock: &dyn Clock) -> anyhow::Result<()> {
    let Sourced { cache, source } = Source::of(config);
    let Some(lock) = detach::take_over_lock(&cache, lock_fd)? else {
        return Ok(()); // Another renewal or a login holds the entry.
    };
    renew_and_note(config, &Locked::read_as_held(&cache, lock), &source, clock)
}

/// Renews `entry` (under the lock the renewal took over) if it is still due, and notes how that
/// went in the entry's state: nothing after a success (saving the tokens cleared the notes), the
/// failure and when the next renewal may start otherwise.
fn renew_and_note(
    config: &Config,
    entry: &Locked,
    source: &Source,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    let cache = entry.cache;
    match renew(config, entry, source, clock) {
        Ok(Renewed::Yes) => Ok(()), // Saving the tokens cleared the notes.
        Ok(Renewed::NotDue) => {
            cache.update_state(&entry.lock, |state| {
                if let Some(renewal) = &mut state.renewal {
                    renewal.started_at = None;
                    if renewal.failed.is_none() {
                        state.renewal = None;
                    }
                }
            });
            Ok(())
        }
        Err(Failed {
            error,
            tokens_obtained_at,
            deadline,
        }) => {
            let now = clock.now();
            cache.update_state(&entry.lock, |state| {
                let previous = state
                    .renewal
                    .take()
                    .and_then(|renewal| renewal.failed)
                    .filter(|failed| failed.note.at >= tokens_obtained_at);
                let attempts = previous.map_or(0, |failed| failed.attempts) + 1;
                let transient = crate::error::is_transient(&error);
                state.renewal = Some(RenewalNote {
                    started_at: None,
                    failed: Some(RenewalFailure {
                        note: Note::new(&crate::error::one_line(&error), now),
                        attempts,
                        retry_at: retry_at(transient, attempts, now, deadline),
                    }),
                });
            });
            Err(error)
        }
    }
}

/// What a background renewal did.
enum Renewed {
    Yes,
    /// Nothing to do: logged out, renewed by another run, too late, or backing off.
    NotDue,
}

/// A failed background renewal, with what its back-off is computed from.
struct Failed {
    error: anyhow::Error,
    tokens_obtained_at: DateTime<Utc>,
    /// When the foreground takes over: the token's expiry less `--min-validity`.
    deadline: DateTime<Utc>,
}

/// Renews `entry` (under its lock; its tokens from `source`, whose shared login's entry is
/// locked without waiting) if it is still due: the renewal step's outcome mapped in one `match`
/// — new tokens saved, a grant that needs nobody run as the foreground runs it, anything else
/// a failure noted — never a login (see the module comment for what may change in the entry).
fn renew(
    config: &Config,
    entry: &Locked,
    source: &Source,
    clock: &dyn Clock,
) -> Result<Renewed, Failed> {
    let Some(cached) = &entry.cached else {
        return Ok(Renewed::NotDue); // Logged out meanwhile, or unreadable: the foreground says.
    };
    let now = clock.now();
    let Some((_, expiry)) =
        cached
            .tokens
            .fresh_credential(config.token_kind, now, config.min_validity)
    else {
        return Ok(Renewed::NotDue); // Too late: the foreground renews (or logs in) on the next run.
    };
    let obtained_at = cached.tokens.obtained_at;
    // Looked at again under the lock: a renewal that ended since the hit read the state (its
    // failure noted), or one that succeeded, leaves nothing to do.
    if !due(config, source, cached, expiry, now) || backing_off(&entry.state(), now).is_some() {
        return Ok(Renewed::NotDue);
    }
    let failed = |error: anyhow::Error| Failed {
        error,
        tokens_obtained_at: obtained_at,
        deadline: expiry - Duration::from_std(config.min_validity).unwrap_or(Duration::zero()),
    };
    // A shared login's lock after the derived entry's, as in the foreground; held by another
    // run: it is deriving or logging in, and the foreground does the rest if need be.
    let Some(from) = source.try_lock().map_err(failed)? else {
        return Ok(Renewed::NotDue);
    };
    let mut provider = LazyProvider::new(config, clock);
    let tokens = match renewal::renew(config, entry, &from, &mut provider, clock) {
        Renewal::Renewed(tokens) => tokens,
        Renewal::NewGrant(grantor) => {
            new_grant(config, grantor, &mut provider, clock).map_err(failed)?
        }
        Renewal::Stopped(Stop::Refused { reason, .. }) => {
            return Err(failed(fail(
                Exit::Provider,
                format!(
                    "the provider refused the refresh token ({reason}); the cached token is handed out until it runs out, then a login is needed"
                ),
            )));
        }
        // Not a failure of the provider, but noted as one: it explains the login to come, and
        // stops the next hits from starting a renewal that cannot do anything.
        Renewal::Stopped(Stop::NeedsPerson(why)) => {
            return Err(failed(fail(
                Exit::Login,
                format!("{why}; a login is needed when the cached token runs out"),
            )));
        }
        Renewal::Stopped(Stop::Failed(error)) => return Err(failed(error)),
    };
    entry.cache.save(&tokens, &entry.lock).map_err(failed)?;
    Ok(Renewed::Yes)
}

/// A new grant that needs nobody, run as the foreground runs it (`login_step::run_grant`, but
/// leaving no cool-down record and asking nobody: the foreground's logins stay as they were);
/// its tokens must hold what kubectl is given.
fn new_grant(
    config: &Config,
    grantor: Grantor,
    provider: &mut LazyProvider,
    clock: &dyn Clock,
) -> anyhow::Result<crate::tokens::Tokens> {
    let tokens =
        login_step::run_grant(config, grantor, None, provider, &Presence::nobody(), clock)?;
    if tokens.credential(config.token_kind).is_none() {
        return Err(fail(
            Exit::Provider,
            format!(
                "{} returned no token of the kind kubectl is given; the foreground asks again when the cached token runs out",
                config.issuer_as_given
            ),
        ));
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn the_window_is_a_share_of_the_lifetime_or_a_fixed_time() {
        use std::time::Duration;
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

    #[test]
    fn after_an_outage_the_wait_doubles_and_leaves_a_try_before_the_deadline() {
        // A 1 h token, the window its last 15 minutes, the foreground's turn at 59 min.
        let deadline = at(3540);
        let mut failed_at = at(2700);
        let mut waits = Vec::new();
        for attempts in 1.. {
            let Some(next) = retry_at(true, attempts, failed_at, deadline) else {
                break;
            };
            assert!(
                next < deadline,
                "attempt {attempts} retries after the deadline"
            );
            waits.push((next - failed_at).num_seconds());
            failed_at = next;
        }
        // Doubling while it fits, then half of what is left each time, down to a second: a
        // bounded number of tries, the last a second before the foreground's turn.
        assert_eq!(
            waits,
            [10, 20, 40, 80, 160, 265, 132, 66, 33, 16, 8, 4, 2, 1]
        );
    }

    #[test]
    fn a_refusal_is_not_retried_for_the_same_tokens() {
        assert_eq!(retry_at(false, 1, at(0), at(3600)), None);
        // Nor is anything at the deadline's door.
        assert_eq!(retry_at(true, 1, at(0), at(1)), None);
    }

    #[test]
    fn a_hit_waits_out_the_back_off_and_says_why_at_v() {
        let failure = |retry_at| EntryState {
            renewal: Some(RenewalNote {
                started_at: None,
                failed: Some(RenewalFailure {
                    note: Note::new("invalid_client", at(0)),
                    attempts: 1,
                    retry_at,
                }),
            }),
            ..EntryState::default()
        };
        assert_eq!(backing_off(&EntryState::default(), at(0)), None);
        let later = failure(Some(at(10)));
        let why = backing_off(&later, at(5)).unwrap();
        assert!(
            why.starts_with("the last background renewal failed at ")
                && why.contains("invalid_client; the next try after "),
            "{why}"
        );
        assert_eq!(backing_off(&later, at(10)), None);
        let never = backing_off(&failure(None), at(100_000)).unwrap();
        assert!(never.ends_with("not again for this token (it is renewed when it runs out)"));
    }

    /// The background renewal's arms, against a loopback provider (the miss path's test bed).
    mod renewal {
        use super::super::super::locked::Locked;
        use super::super::super::miss::tests::*;
        use super::super::*;
        use crate::http::test_server::Answer;

        /// Runs the background renewal of `config`'s entry as `run` does, after the lock.
        fn in_background(bed: &Bed, config: &Config) -> anyhow::Result<()> {
            let Sourced { cache, source } = Source::of(config);
            let entry = Locked::open(&cache, std::time::Duration::from_secs(5)).unwrap();
            renew_and_note(config, &entry, &source, &bed.clock)
        }

        /// An hour's token in its last quarter (a quarter of an hour left, 10 minutes).
        fn late(access: &str, refresh: Option<&str>) -> crate::tokens::Tokens {
            hour_tokens(access, refresh, 3000)
        }

        fn renewal_note(config: &Config) -> Option<RenewalNote> {
            let cache = Source::of(config).cache;
            let obtained = cache.load().unwrap().map(|c| c.tokens.obtained_at);
            cache.state(obtained).renewal
        }

        #[test]
        fn a_token_in_its_window_is_refreshed_and_saved_with_no_note() {
            let bed = Bed::new();
            let config = bed.config(&[]);
            seed(&config, &late("old", Some("rt1")));
            bed.answers(vec![answer("new", Some("rt2"))]);
            in_background(&bed, &config).unwrap();
            assert_eq!(access(&cached(&config).unwrap()), "new");
            assert!(renewal_note(&config).is_none());
        }

        #[test]
        fn a_grant_that_needs_nobody_renews_and_leaves_no_cool_down() {
            let bed = Bed::new();
            let config = bed.config(&["--grant-type=client-credentials", "--client-secret=s"]);
            seed(&config, &late("old", None));
            bed.answers(vec![
                Answer::with(401, r#"{"error":"invalid_client"}"#)
                    .header("Content-Type", "application/json"),
            ]);
            let err = in_background(&bed, &config).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), Exit::Provider);
            // Noted as the renewal's failure, not again for these tokens; no login cool-down,
            // and the token kubectl gets is the same.
            let failed = renewal_note(&config).unwrap().failed.unwrap();
            assert_eq!(failed.retry_at, None);
            let cache = Source::of(&config).cache;
            assert!(cache.state(None).login_failed.is_none());
            assert_eq!(access(&cached(&config).unwrap()), "old");
            bed.answers(vec![answer("anew", None)]);
            // Backing off: nothing is asked until these tokens are replaced.
            in_background(&bed, &config).unwrap();
            assert_eq!(bed.server.hits(TOKEN), 1);
        }

        #[test]
        fn a_refused_refresh_token_is_dropped_and_the_valid_token_stays() {
            let bed = Bed::new();
            let config = bed.config(&[]);
            seed(&config, &late("valid", Some("rt")));
            bed.answers(vec![refused("invalid_grant")]);
            let err = in_background(&bed, &config).unwrap_err();
            assert!(
                crate::error::one_line(&err)
                    .starts_with("the provider refused the refresh token (invalid_grant")
            );
            let kept = Source::of(&config).cache.load().unwrap().unwrap();
            assert!(!kept.has_refresh_token());
            assert_eq!(access(&kept.tokens), "valid");
        }

        #[test]
        fn a_shared_login_another_run_holds_is_left_to_it() {
            let bed = Bed::new();
            let config = cluster(&bed, A, &[]);
            seed_login(&config, &hour_tokens("login", Some("rt"), 3600), &[A]);
            seed(&config, &late(&jwt_for(A), None));
            let Source::SharedLogin { login, .. } = Source::of(&config).source else {
                panic!("not a shared login's settings")
            };
            let held = login.lock(std::time::Duration::from_secs(5)).unwrap();
            in_background(&bed, &config).unwrap();
            assert_eq!(bed.server.hits(TOKEN), 0);
            drop(held);
            let derived = jwt_for(A);
            bed.answers(vec![answer(&derived, Some("rt2"))]);
            in_background(&bed, &config).unwrap();
            assert_eq!(bed.server.hits(TOKEN), 1);
        }
    }
}
