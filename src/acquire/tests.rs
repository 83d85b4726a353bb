//! The cache-hit path against a stated time: freshness is judged by the injected clock, so a
//! test moves time instead of rewriting cached files.

use super::*;
use crate::cache::TokenCache;
use crate::cli::{Cli, Command};
use crate::clock::FixedClock;
use crate::config::Environment;
use crate::exec_credential::ExecInfo;
use crate::secret::Secret;
use chrono::{TimeZone, Utc};
use clap::Parser;
use std::time::Duration;

fn config(cache_dir: &std::path::Path) -> Config {
    config_with(cache_dir, &[])
}

pub(super) fn config_with(cache_dir: &std::path::Path, extra: &[&str]) -> Config {
    let mut argv = vec![
        "kubecred".to_string(),
        "get-token".into(),
        "--issuer-url=https://idp.example".into(),
        "--client-id=kubernetes".into(),
        "--cache-storage=disk".into(),
        format!("--cache-dir={}", cache_dir.display()),
    ];
    argv.extend(extra.iter().map(|arg| arg.to_string()));
    let Command::GetToken(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    Config::resolve(&args, &Environment::default(), ExecInfo::absent()).unwrap()
}

#[test]
fn a_cached_token_is_served_until_min_validity_before_its_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let start = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
    let Sourced { cache, source } = Source::of(&config);
    let tokens = Tokens {
        id_token: Some(Secret::new("id-token")),
        id_token_expiry: Some(start + chrono::Duration::seconds(90)),
        access_token: None,
        access_token_expiry: None,
        refresh_token: None,
        obtained_at: start,
        identity: None,
        granted_scope: None,
    };
    cache
        .save(&tokens, &cache.lock(Duration::from_secs(5)).unwrap())
        .unwrap();
    assert_eq!(config.min_validity, Duration::from_secs(60));

    let clock = FixedClock::at(start);
    let document = cached_credential(&config, &cache, &source, &clock)
        .unwrap()
        .unwrap()
        .document;
    // The real expiry is 12:01:30; the printed one keeps the 30 s safety margin.
    assert!(
        document.contains(r#""expirationTimestamp":"2026-11-22T12:01:00Z""#),
        "{document}"
    );
    clock.advance(chrono::Duration::seconds(29));
    assert!(
        cached_credential(&config, &cache, &source, &clock)
            .unwrap()
            .is_some()
    );
    clock.advance(chrono::Duration::seconds(1));
    assert!(
        cached_credential(&config, &cache, &source, &clock)
            .unwrap()
            .is_none(),
        "60s of validity left is not enough"
    );
}

#[test]
fn an_already_expired_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let now = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
    let tokens = Tokens {
        id_token: Some(Secret::new("id-token")),
        id_token_expiry: Some(now),
        access_token: None,
        access_token_expiry: None,
        refresh_token: None,
        obtained_at: now,
        identity: None,
        granted_scope: None,
    };
    let err = render(&config, &tokens, &FixedClock::at(now)).unwrap_err();
    assert_eq!(crate::error::exit_code_of(&err), Exit::Provider);
    assert!(
        format!("{err:#}").contains("has already expired"),
        "{err:#}"
    );
}

/// Tokens obtained at `start` that live an hour, with or without a refresh token, saved.
fn save_hour_token(cache: &TokenCache, start: chrono::DateTime<Utc>, refresh: bool) {
    let tokens = Tokens {
        id_token: Some(Secret::new("id-token")),
        id_token_expiry: Some(start + chrono::Duration::seconds(3600)),
        access_token: Some(Secret::new("access-token")),
        access_token_expiry: Some(start + chrono::Duration::seconds(3600)),
        refresh_token: refresh.then(|| Secret::new("refresh-token")),
        obtained_at: start,
        identity: None,
        granted_scope: None,
    };
    cache
        .save(&tokens, &cache.lock(Duration::from_secs(5)).unwrap())
        .unwrap();
}

#[test]
fn a_hit_in_the_last_quarter_asks_for_a_renewal_only_when_one_needs_no_person() {
    let dir = tempfile::tempdir().unwrap();
    let start = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
    let renew_at = |config: &Config, seconds: i64| {
        let clock = FixedClock::at(start + chrono::Duration::seconds(seconds));
        let Sourced { cache, source } = Source::of(config);
        cached_credential(config, &cache, &source, &clock)
            .unwrap()
            .map(|hit| hit.renew_ahead)
    };

    let config = config(dir.path());
    save_hour_token(&Source::of(&config).cache, start, true);
    assert_eq!(renew_at(&config, 2699), Some(false));
    assert_eq!(
        renew_at(&config, 2701),
        Some(true),
        "a quarter of an hour left"
    );
    assert_eq!(
        renew_at(&config, 3541),
        None,
        "less than --min-validity left: a miss"
    );

    // Without a refresh token, a browser login would be the only renewal: none in the background.
    save_hour_token(&Source::of(&config).cache, start, false);
    assert_eq!(renew_at(&config, 2701), Some(false));

    // A grant that needs nobody renews without a refresh token; --refresh-ahead sets the window.
    let dir = tempfile::tempdir().unwrap();
    let machine = config_with(
        dir.path(),
        &[
            "--grant-type=client-credentials",
            "--client-secret=s",
            "--refresh-ahead=5m",
        ],
    );
    save_hour_token(&Source::of(&machine).cache, start, false);
    assert_eq!(renew_at(&machine, 3299), Some(false));
    assert_eq!(renew_at(&machine, 3301), Some(true));
    let off = config_with(
        dir.path(),
        &[
            "--grant-type=client-credentials",
            "--client-secret=s",
            "--refresh-ahead=0",
        ],
    );
    assert_eq!(renew_at(&off, 3500), Some(false));
}

#[test]
fn after_an_outage_the_cached_token_serves_until_its_printed_expiry_and_never_after() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let start = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
    let cache = Source::of(&config).cache;
    save_hour_token(&cache, start, true);
    let outage = crate::error::outage("connection refused");
    let at = |seconds| FixedClock::at(start + chrono::Duration::seconds(seconds));

    let document = still_valid_after(&outage, &config, &cache, &at(3560)).unwrap();
    // The printed expiry keeps the 30 s margin: 12:59:30.
    assert!(
        document.contains(r#""expirationTimestamp":"2026-11-22T12:59:30Z""#),
        "{document}"
    );
    assert!(still_valid_after(&outage, &config, &cache, &at(3570)).is_none());
    assert!(still_valid_after(&outage, &config, &cache, &at(3700)).is_none());
}
