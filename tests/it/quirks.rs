//! Real providers as they are: answers that depart from the letter of the specifications in
//! documented ways, each from the test provider made to do exactly that and nothing else.

use crate::support::*;
use serde_json::json;

/// Azure AD's v1 endpoint and ADFS send `"expires_in": "3600"`; others send a float. Both are
/// a working provider saying how long the token lives: the login succeeds, and the credential's
/// expiry comes from the token (never later than the provider said).
#[test]
fn expires_in_as_a_string_or_a_float_is_how_long_the_token_lives() {
    let bed = Testbed::start();
    // The access token is a JWT of the test provider's TTL (600 s): with a longer expires_in,
    // its `exp` decides, less the 30 s printed margin.
    for quirk in [json!("3600"), json!(3599.5)] {
        bed.configure(json!({"tokenResponsePatch": {"expires_in": quirk}}));
        let left = access_token_seconds_left(&TestEnv::new(), &bed);
        assert!(left <= 570 && left > 500, "{quirk}: {left} s left");
    }
    // expires_in decides when it is the earlier: 120 s, as a string, less the margin.
    bed.configure(json!({"tokenResponsePatch": {"expires_in": "120"}}));
    let left = access_token_seconds_left(&TestEnv::new(), &bed);
    assert!((60..=90).contains(&left), "{left} s left of 120 - 30");
    // And as a float with a fraction: rounded down, never a longer life than the provider said.
    bed.configure(json!({"tokenResponsePatch": {"expires_in": 119.9}}));
    let left = access_token_seconds_left(&TestEnv::new(), &bed);
    assert!((60..=89).contains(&left), "{left} s left of 119 - 30");
}

/// A client-credentials run for the access token: the seconds its printed expiry is away.
fn access_token_seconds_left(env: &TestEnv, bed: &Testbed) -> i64 {
    let run = env
        .kubecred_owned(&with_flag(&env.cc_args(bed), "--use-access-token"))
        .run()
        .success();
    let expiry = run.credential()["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .to_string();
    chrono::DateTime::parse_from_rfc3339(&expiry)
        .unwrap()
        .signed_duration_since(chrono::Utc::now())
        .num_seconds()
}

/// A provider whose discovery lists `authorization_code, implicit, device_code` but serves client
/// credentials too (a packaged C provider does exactly this): `grant_types_supported` is
/// informational (RFC 8414), so `setup` warns and tries the grant, which works.
#[test]
fn setup_tries_a_grant_that_discovery_leaves_out() {
    let bed = Testbed::start();
    bed.configure(json!({"discoveryPatch": {"grant_types_supported": [
        "authorization_code", "implicit", "urn:ietf:params:oauth:grant-type:device_code"
    ]}}));
    let env = TestEnv::new();
    let secret = env.dir.path().join("cc-secret");
    std::fs::write(&secret, CC_SECRET).unwrap();
    let run = env
        .kubecred_owned(&[
            "setup".into(),
            format!("--issuer-url={}", bed.issuer),
            format!("--client-id={CC_CLIENT}"),
            format!("--client-secret-file={}", secret.display()),
            "--grant-type=client-credentials".into(),
            format!("--resource={RESOURCE}"),
        ])
        .run()
        .success()
        .stderr_contains(
            "  warn  discovery does not list the client_credentials grant; the list is informational",
        );
    assert!(!run.stderr().contains("enable it"), "{}", run.stderr());
    assert_eq!(bed.token_requests("client_credentials"), 1);
}

/// Discovery documents carry members kubecred does not know, objects where it might expect a
/// string (`mtls_endpoint_aliases`, RFC 8705) and `null`s: none of them is a reason to fail.
#[test]
fn discovery_with_unknown_members_objects_and_nulls_is_read() {
    let bed = Testbed::start();
    bed.configure(json!({"discoveryPatch": {
        "mtls_endpoint_aliases": {"token_endpoint": "https://mtls.idp.example/token"},
        "x_vendor_extension": [1, {"nested": null}],
        "service_documentation": null,
        "op_policy_uri": null,
        "check_session_iframe": null
    }}));
    let env = TestEnv::new();
    env.kubecred_owned(&env.cc_args(&bed)).run().success();
}

/// OpenID Connect Core 12.2: a refresh answer need not carry an ID token. The old one (expired)
/// is never printed; with --use-access-token the new access token is all kubectl needs, and
/// without it a login is needed.
#[test]
fn a_refresh_answer_without_an_id_token_never_prints_the_old_one() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    // With --use-access-token: the refreshed access token is the credential.
    let env = TestEnv::new();
    let access_args = with_flag(&authcode_args(&bed), "--use-access-token");
    let first = env.kubecred_owned(&access_args).run().success().token();
    bed.configure(json!({"tokenResponsePatch": {"id_token": null}}));
    expire_cached_tokens(&env.cache_dir());
    let renewed = env.kubecred_owned(&access_args).run().success().token();
    assert_ne!(renewed, first);
    assert_eq!(bed.token_requests("refresh_token"), 1);

    // Printing the ID token: the refresh brings none, so a login is needed (none can happen
    // here), and the old ID token is not handed out.
    bed.configure(json!({"tokenResponsePatch": null}));
    let env = TestEnv::new();
    let old_id_token = env
        .kubecred_owned(&authcode_args(&bed))
        .run()
        .success()
        .token();
    bed.configure(json!({"tokenResponsePatch": {"id_token": null}}));
    expire_cached_tokens(&env.cache_dir());
    let mut no_browser = authcode_args(&bed);
    no_browser.retain(|a| !a.starts_with("--browser-command"));
    no_browser.extend(["--skip-open-browser".into(), "--auth-timeout=1s".into()]);
    let run = env.kubecred_owned(&no_browser).run().failure(4);
    assert!(!run.stdout().contains(&old_id_token));
    run.stderr_contains("no login completed within 1s");
}

/// Google's device authorization answer: `verification_url` (the pre-RFC 8628 name) instead of
/// `verification_uri`, and no `interval`. The URL is shown and opened, and the polls wait the
/// RFC 8628 default of 5 s (polling faster would earn slow_down or a ban from such a provider).
#[test]
fn device_flow_with_verification_url_and_no_interval() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let verification = format!("{}/device", bed.issuer);
    bed.configure(json!({"deviceResponsePatch": {
        "verification_url": verification,
        "verification_uri": null,
        "interval": null
    }}));
    let env = TestEnv::new();
    let started = std::time::Instant::now();
    env.kubecred_owned(&[
        "get-token".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={PUBLIC_CLIENT}"),
        "--grant-type=device-code".into(),
        format!("--browser-command={}", browser_command()),
    ])
    .run()
    .success()
    .stderr_contains(&verification);
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(5),
        "the first poll comes after the default interval of 5 s, not before: {took:?}"
    );
    let polls = bed.token_requests("urn:ietf:params:oauth:grant-type:device_code");
    // The browser approves within a few seconds: one or two polls 5 s apart, never a burst.
    assert!((1..=3).contains(&polls), "{polls} polls in {took:?}");
}

/// A provider may grant less than asked (RFC 6749 §3.3) and say so in `scope`: here no
/// offline_access, so no refresh token. The login works, and `setup` names what was left out
/// and what it means (a new login at every expiry) with where to change it.
#[test]
fn setup_names_a_narrower_scope_than_asked() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    bed.configure(json!({"tokenResponsePatch": {"scope": "openid email", "refresh_token": null}}));
    let env = TestEnv::new();
    let mut args = authcode_args(&bed);
    args[0] = "setup".into();
    args.push("--scope=offline_access,email".into());
    let run = env.kubecred_owned(&args).run().success().stderr_contains(
        "  warn  the provider granted the scope \"openid email\", without offline_access that was asked for",
    );
    run.stderr_contains(
        "  warn  no refresh token was issued: every expiry means a new login; the provider did not grant offline_access",
    );
}

/// Entra ID's multi-tenant discovery (`common`, `organizations`) names the template issuer
/// `https://login.microsoftonline.com/{tenantid}/v2.0`: no token carries it, and an API server
/// trusts one issuer. Both `get-token` and `setup` stop with the issuer to use instead, and
/// `setup` does not blame the issuer mismatch.
#[test]
fn entra_multi_tenant_template_issuer_names_the_tenant_issuer() {
    let bed = Testbed::start();
    bed.configure(json!({"discoveryPatch": {
        "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0"
    }}));
    let env = TestEnv::new();
    let run = env
        .kubecred_owned(&env.cc_args(&bed))
        .run()
        .failure(3) // the provider's exit code
        .stderr_contains("(Entra ID's multi-tenant endpoint); use your tenant's own issuer, https://login.microsoftonline.com/<tenant ID>/v2.0");
    assert!(
        !run.stderr().contains("set --issuer-url to exactly"),
        "{}",
        run.stderr()
    );
    assert_eq!(bed.total_token_requests(), 0);
}
