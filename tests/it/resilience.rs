//! The provider kept off kubectl's path while a token is valid, through the real kubectl against
//! the test provider: stale-if-error (the provider down, answering 503, refusing the refresh
//! token) and refresh-ahead (one detached background renewal for many hits, its failures in
//! `status`).

use crate::sessions::kubecred_plain;
use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

const V1: &str = "client.authentication.k8s.io/v1";

/// Waits (bounded) until `done` holds; panics naming `what` if it never does.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_outage_hands_out_the_still_valid_token_and_never_an_expired_one() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 200}));
    let env = TestEnv::new();
    // Five minutes asked for, 200 s issued: every run wants a renewal.
    let mut args = env.cc_args(&bed);
    args.extend(["--min-validity=5m".into(), "--refresh-ahead=0".into()]);
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    let version = || {
        env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
            .run()
    };
    version().success();
    let first = env.kubecred_owned(&args).run();
    let cached_token = first.success().token();
    let entry = entry_bytes(&env.cache_dir());

    // Down: connections reset. kubectl goes on, with one notice saying until when.
    bed.configure(json!({"providerDown": true}));
    let run = version().success();
    assert!(
        run.stderr()
            .contains("; using the cached token, valid until "),
        "{}",
        run.stderr()
    );
    assert_eq!(run.stderr().matches("using the cached token").count(), 1);
    assert!(bed.stats()["refused"].as_u64().unwrap() > 0);
    assert_eq!(
        env.kubecred_owned(&args).run().success().token(),
        cached_token
    );
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");

    // Up, but answering 503: the same.
    bed.configure(json!({"providerDown": false, "tokenError": "temporarily_unavailable"}));
    version()
        .success()
        .stderr_contains("503")
        .stderr_contains("using the cached token");
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");

    // Expired: never handed out. kubectl fails with kubecred's line.
    expire_cached_tokens(&env.cache_dir());
    let refused = version();
    assert_eq!(
        refused.output.status.code(),
        Some(1),
        "{}",
        refused.stderr()
    );
    assert!(refused.stderr().contains("temporarily_unavailable"));
    assert!(!refused.stderr().contains("using the cached token"));
    env.kubecred_owned(&args).run().failure(3);

    // Back: one request renews, and the next run is a plain hit of the new token.
    bed.configure(json!({"tokenError": null}));
    bed.reset_stats();
    version().success();
    assert_eq!(bed.token_requests("client_credentials"), 1);
}

#[test]
fn a_refused_refresh_token_is_said_once_and_the_valid_token_serves_until_a_login_is_needed() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"idTokenTtl": 200}));
    let env = TestEnv::new();
    let login = env
        .kubecred_owned(&authcode_args(&bed))
        .run()
        .success()
        .token();
    bed.configure(json!({"refreshError": "invalid_grant"}));
    // No browser from here on: a login would wait one second and fail.
    let mut args = authcode_args(&bed);
    args.retain(|a| !a.starts_with("--browser-command"));
    args.extend([
        "--skip-open-browser".into(),
        "--auth-timeout=1s".into(),
        "--min-validity=5m".into(),
    ]);
    let refused = env.kubecred_owned(&args).run().success();
    assert_eq!(refused.token(), login);
    assert_eq!(
        refused
            .stderr()
            .matches("refused the refresh token")
            .count(),
        1,
        "{}",
        refused.stderr()
    );
    refused.stderr_contains("then a login is needed");
    // Said once: the next run hands the token out quietly, without asking the provider again.
    let quiet = env.kubecred_owned(&args).run().success();
    assert_eq!(quiet.token(), login);
    assert_eq!(quiet.stderr(), "");
    assert_eq!(bed.token_requests("refresh_token"), 1);
    // Through kubectl too.
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    env.kubectl(&kubeconfig, &["auth", "whoami"])
        .run()
        .success()
        .stdout_contains("alice");
    // Once it can no longer be used, a login is needed (and here fails: no browser).
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&args)
        .run()
        .failure(4)
        .stderr_contains("no login completed within 1s");
}

#[test]
fn twenty_hits_in_the_window_start_one_renewal_that_outlives_kubectl() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    // The window opens 1 s after a token is issued.
    let mut args = env.cc_args(&bed);
    args.extend(["--min-validity=5s".into(), "--refresh-ahead=59s".into()]);
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    let first = env.kubecred_owned(&args).run().success().token();
    let entry = entry_bytes(&env.cache_dir());
    std::thread::sleep(Duration::from_millis(1500));

    // A provider that takes 12 s per token: the renewal is still under way when every kubectl
    // is done, so none of them waited for it (nor for its pipes: it holds none of theirs).
    bed.configure(json!({"tokenDelayMs": 12000}));
    bed.reset_stats();
    run_all_at_once((0..20).map(|_| env.kubectl(&kubeconfig, &["get", "--raw", "/version"])));
    assert_eq!(
        entry_bytes(&env.cache_dir()),
        entry,
        "the entry changed before the slow renewal could have finished"
    );
    wait_until("the background renewal", Duration::from_secs(30), || {
        entry_bytes(&env.cache_dir()) != entry
    });
    assert_eq!(bed.token_requests("client_credentials"), 1, "one renewal");
    let renewed = env
        .kubecred_owned(&with_flag(&args, "--refresh-ahead=0"))
        .run();
    assert_ne!(renewed.success().token(), first);
}

#[test]
fn a_failed_background_renewal_leaves_the_entry_and_shows_in_status_and_at_v() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    let mut args = env.cc_args(&bed);
    args.extend(["--min-validity=5s".into(), "--refresh-ahead=59s".into()]);
    let first = env.kubecred_owned(&args).run().success().token();
    let entry = entry_bytes(&env.cache_dir());
    std::thread::sleep(Duration::from_millis(1500));

    bed.configure(json!({"tokenError": "invalid_client"}));
    bed.reset_stats();
    let hit = env.kubecred_owned(&args).run().success();
    assert_eq!(hit.token(), first);
    assert_eq!(
        hit.stderr(),
        "",
        "a renewal's failure never reaches kubectl's stderr"
    );
    let status = || kubecred_plain(&env, &["status"]).run().success().stdout();
    wait_until(
        "the renewal's failure in status",
        Duration::from_secs(30),
        || status().contains("the background renewal for"),
    );
    assert!(status().contains("invalid_client"), "{}", status());
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    let json_status: serde_json::Value = serde_json::from_str(
        &kubecred_plain(&env, &["status", "--output=json"])
            .run()
            .success()
            .stdout(),
    )
    .unwrap();
    let failed = &json_status["entries"][0]["renewal_failed"];
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("invalid_client"),
        "{failed}"
    );
    env.kubecred_owned(&with_flag(&args, "-v"))
        .run()
        .success()
        .stderr_contains("the last background renewal failed at ");

    // The provider accepts again: the next hit's renewal succeeds and the note goes. The `-v` hit
    // started a renewal of its own; it must be over first, or it holds the entry lock (the next
    // hit then starts none) having asked the provider before the change.
    wait_until(
        "the -v hit's renewal to end",
        Duration::from_secs(30),
        || !an_entry_lock_is_held(&env.cache_dir()),
    );
    bed.configure(json!({"tokenError": null}));
    env.kubecred_owned(&args).run().success();
    wait_until("a successful renewal", Duration::from_secs(30), || {
        entry_bytes(&env.cache_dir()) != entry
    });
    wait_until("the note to go", Duration::from_secs(10), || {
        !status().contains("the background renewal for")
    });
}
