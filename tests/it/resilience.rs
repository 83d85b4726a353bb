//! The provider kept off kubectl's path while a token is valid, through the real kubectl against
//! the test provider: stale-if-error (the provider down, answering 503, refusing the refresh
//! token). Refresh-ahead, the background renewal, is `background.rs`.

use crate::support::*;
use serde_json::json;

const V1: &str = "client.authentication.k8s.io/v1";

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
