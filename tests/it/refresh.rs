//! The refresh-token grant: one refresh on expiry, rotation persisted before printing,
//! `invalid_grant` dropping the entry, and single flight for 32 kubectl processes.

use crate::support::*;

/// Logs in once through the real browser and returns the first credential's token.
fn browser_login(env: &TestEnv, bed: &Testbed) -> String {
    let run = env.kubecred_owned(&authcode_args(bed)).run().success();
    assert_eq!(bed.token_requests("authorization_code"), 1);
    run.token()
}

#[test]
fn an_expired_token_is_refreshed_once_and_the_rotated_refresh_token_is_kept() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let first = browser_login(&env, &bed);
    assert_eq!(jwt_claims(&first)["sub"], "alice");

    expire_cached_tokens(&env.cache_dir());
    let second = env
        .kubecred_owned(&authcode_args(&bed))
        .run()
        .success()
        .token();
    // The refreshed ID token may equal the first one byte for byte (same second, same claims,
    // deterministic RS256): the provider's counters say what happened.
    assert_eq!(jwt_claims(&second)["sub"], "alice");
    assert_eq!(bed.token_requests("refresh_token"), 1);
    // The next run is a cache hit.
    env.kubecred_owned(&authcode_args(&bed)).run().success();
    assert_eq!(bed.token_requests("refresh_token"), 1);

    // The provider rotates refresh tokens (reusing the old one is invalid_grant): a second
    // refresh only works if the rotated token was saved.
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&authcode_args(&bed)).run().success();
    let stats = bed.stats();
    assert_eq!(stats["token"]["refresh_token"], 2, "{stats}");
    assert_eq!(
        stats["token"]["authorization_code"], 1,
        "no second login: {stats}"
    );
}

#[test]
fn invalid_grant_drops_the_entry_and_logs_in_again() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    browser_login(&env, &bed);
    bed.revoke_refresh_tokens();
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&authcode_args(&bed)).run().success();
    let stats = bed.stats();
    assert_eq!(stats["token"]["refresh_token"], 1, "{stats}");
    assert_eq!(stats["token"]["authorization_code"], 2, "{stats}");
}

#[test]
fn invalid_grant_without_a_way_to_log_in_fails_cleanly_and_keeps_no_dead_entry() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    browser_login(&env, &bed);
    bed.configure(serde_json::json!({"refreshError": "invalid_grant"}));
    expire_cached_tokens(&env.cache_dir());
    let mut args = authcode_args(&bed);
    args.retain(|a| !a.starts_with("--browser-command"));
    args.push("--skip-open-browser".into());
    args.push("--auth-timeout=1s".into());
    env.kubecred_owned(&args)
        .run()
        .failure(4)
        .stderr_contains("no login completed within 1s");
    assert!(
        cache_token_files(&env.cache_dir()).is_empty(),
        "the rejected entry is dropped"
    );
}

#[test]
fn thirty_two_kubectl_processes_refresh_once() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(serde_json::json!({"tokenDelayMs": 300}));
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, authcode_args(&bed)));
    env.kubectl(&kubeconfig, &["auth", "whoami"])
        .run()
        .success()
        .stdout_contains("alice");
    expire_cached_tokens(&env.cache_dir());
    bed.reset_stats();
    run_all_at_once((0..32).map(|_| env.kubectl(&kubeconfig, &["get", "--raw", "/version"])));
    let stats = bed.stats();
    assert_eq!(stats["token"]["total"], 1, "{stats}");
    assert_eq!(stats["token"]["refresh_token"], 1, "{stats}");
}
