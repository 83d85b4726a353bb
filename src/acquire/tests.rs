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
    let argv = [
        "kubecred".to_string(),
        "get-token".into(),
        "--issuer-url=https://idp.example".into(),
        "--client-id=kubernetes".into(),
        "--cache-storage=disk".into(),
        format!("--cache-dir={}", cache_dir.display()),
    ];
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
    let cache = TokenCache::new(&config);
    let tokens = Tokens {
        id_token: Some(Secret::new("id-token")),
        id_token_expiry: Some(start + chrono::Duration::seconds(90)),
        access_token: None,
        access_token_expiry: None,
        refresh_token: None,
        obtained_at: start,
        identity: None,
    };
    cache
        .save(&tokens, &cache.lock(Duration::from_secs(5)).unwrap())
        .unwrap();
    assert_eq!(config.min_validity, Duration::from_secs(60));

    let clock = FixedClock::at(start);
    let (document, _) = cached_credential(&config, &cache, &clock).unwrap().unwrap();
    // The real expiry is 12:01:30; the printed one keeps the 30 s safety margin.
    assert!(
        document.contains(r#""expirationTimestamp":"2026-11-22T12:01:00Z""#),
        "{document}"
    );
    clock.advance(chrono::Duration::seconds(29));
    assert!(cached_credential(&config, &cache, &clock)
        .unwrap()
        .is_some());
    clock.advance(chrono::Duration::seconds(1));
    assert!(
        cached_credential(&config, &cache, &clock)
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
    };
    let err = render(&config, &tokens, &FixedClock::at(now)).unwrap_err();
    assert_eq!(crate::error::exit_code_of(&err), Exit::Provider);
    assert!(
        format!("{err:#}").contains("has already expired"),
        "{err:#}"
    );
}
