//! The second, independent OpenID Provider: Debian's glewlwyd (a C server; set up by
//! tests/support/glewlwyd.mjs from the package's own schema and configuration file). Client
//! credentials (through `setup`, though its discovery does not list the grant), the device flow
//! and the browser login, refreshes that bring no ID token, and a shared login for two resource
//! indicators (RFC 8707) with and without glewlwyd's one-time refresh tokens — end to end, with
//! no knob of ours inside the provider: what glewlwyd did is read from its own log.

use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Glewlwyd {
    child: Child,
    info: Value,
}

/// The resources (RFC 8707) of the two clusters of the shared-login tests: glewlwyd takes https
/// URIs (or loopback http ones), and never fetches them.
const A: &str = "https://a.kubecred.example";
const B: &str = "https://b.kubecred.example";

impl Glewlwyd {
    fn start() -> Glewlwyd {
        Glewlwyd::start_with(&[])
    }

    /// glewlwyd set up with `options` (`serve`'s: `--resource URI`, `--one-time-refresh-tokens`).
    fn start_with(options: &[&str]) -> Glewlwyd {
        ensure_node_test_bed();
        let mut child = Command::new("node")
            .arg(script())
            .arg("serve")
            .args(options)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node tests/support/glewlwyd.mjs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("reading glewlwyd.mjs' startup line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("glewlwyd.mjs startup line {line:?}: {err}"));
        Glewlwyd { child, info }
    }

    fn get(&self, key: &str) -> String {
        match &self.info[key] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// get-token as the public client with glewlwyd's "browser" (tests/support/glewlwyd.mjs).
    fn user_args(&self, grant: &str) -> Vec<String> {
        vec![
            "get-token".into(),
            format!("--issuer-url={}", self.get("issuer")),
            format!("--client-id={}", self.get("public_client")),
            format!("--grant-type={grant}"),
            format!("--listen-address=127.0.0.1:{}", self.get("callback_port")),
            format!("--redirect-url={}", self.get("callback")),
            format!("--browser-command=node {} browse", script().display()),
        ]
    }

    /// get-token for the cluster of `resource`, with one browser login for the clusters of
    /// [`A`] and [`B`].
    fn shared_login_args(&self, resource: &str) -> Vec<String> {
        let mut args = self.user_args("authcode");
        args.extend([
            "--shared-login".into(),
            "--use-access-token".into(),
            format!("--login-resource={A},{B}"),
            format!("--resource={resource}"),
        ]);
        args
    }

    /// glewlwyd's log so far (its own file, at DEBUG).
    fn log(&self) -> String {
        std::fs::read_to_string(self.get("log")).expect("glewlwyd's log file")
    }

    /// The refreshes glewlwyd refused for `resource` (`invalid_target`), as its log says.
    fn refused_refreshes(&self, resource: &str) -> usize {
        self.log()
            .matches(&format!(
                "get_access_token_from_refresh - Error resource '{resource}' unauthorized"
            ))
            .count()
    }
}

impl Drop for Glewlwyd {
    fn drop(&mut self) {
        stop_node_server(&mut self.child);
    }
}

fn script() -> std::path::PathBuf {
    repo_root().join("tests/support/glewlwyd.mjs")
}

/// The same arguments, unable to log in: only the cache or a refresh can answer.
fn without_login(args: &[String]) -> Vec<String> {
    let mut args: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--browser-command"))
        .cloned()
        .collect();
    args.extend(["--skip-open-browser".into(), "--auth-timeout=1s".into()]);
    args
}

/// glewlwyd's discovery lists authorization_code, implicit and device_code only, yet it serves
/// client credentials: `setup` warns and succeeds, and get-token works as setup printed it.
/// Asked without a scope, glewlwyd answers a bare 403 (no OAuth error): the error says to pass
/// --scope rather than to check the URL.
#[test]
fn setup_and_client_credentials() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start();
    let env = TestEnv::new();
    let secret = env.dir.path().join("cc-secret");
    std::fs::write(&secret, op.get("cc_secret")).unwrap();
    let mut args = vec![
        format!("--issuer-url={}", op.get("issuer")),
        format!("--client-id={}", op.get("cc_client")),
        format!("--client-secret-file={}", secret.display()),
        "--grant-type=client-credentials".into(),
        "--use-access-token".into(),
    ];
    let mut scopeless = vec!["get-token".to_string()];
    scopeless.extend(args.iter().cloned());
    env.kubecred_owned(&scopeless)
        .run()
        .failure(3)
        .stderr_contains("answered HTTP 403")
        .stderr_contains("without a scope: pass --scope")
        .never_shows(&[&op.get("cc_secret")]);
    args.push("--scope=openid".into());
    let mut setup = vec!["setup".to_string()];
    setup.extend(args.iter().cloned());
    env.kubecred_owned(&setup)
        .run()
        .success()
        .never_shows(&[&op.get("cc_secret")])
        .stderr_contains("  warn  discovery does not list the client_credentials grant");
    let mut get = vec!["get-token".to_string()];
    get.extend(args);
    let token = env.kubecred_owned(&get).run().success().token();
    let claims = jwt_claims(&token);
    assert_eq!(claims["iss"], op.get("issuer").as_str(), "{claims}");
    assert_eq!(claims["sub"], op.get("cc_client").as_str(), "{claims}");
}

/// The device flow approved by alice, then a refresh (glewlwyd's carries no ID token, so the
/// access token is the credential) with no login possible.
#[test]
fn device_flow_then_refresh() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start();
    let env = TestEnv::new();
    let args = with_flag(&op.user_args("device-code"), "--use-access-token");
    let first = env.kubecred_owned(&args).run().success().token();
    assert_eq!(jwt_claims(&first)["iss"], op.get("issuer").as_str());
    assert!(expire_cached_tokens(&env.cache_dir()) > 0);
    let renewed = env
        .kubecred_owned(&without_login(&args))
        .run()
        .success()
        .token();
    assert_ne!(renewed, first, "the refresh brought a new access token");
}

/// The browser login (authorization code with PKCE) as alice: glewlwyd's ID token, verified
/// against its JWKS, is the credential; a second run is served from the cache.
#[test]
fn browser_login() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start();
    let env = TestEnv::new();
    let args = op.user_args("authcode");
    let token = env.kubecred_owned(&args).run().success().token();
    let claims = jwt_claims(&token);
    assert_eq!(claims["iss"], op.get("issuer").as_str(), "{claims}");
    assert_eq!(claims["aud"], op.get("public_client").as_str(), "{claims}");
    let again = env
        .kubecred_owned(&without_login(&args))
        .run()
        .success()
        .token();
    assert_eq!(again, token);
}

/// The shared login's get-token arguments for the clusters of [`A`] and [`B`], after one browser
/// login run for a's cluster (the code exchange names it) and b's token derived by refresh.
fn log_in_for_a_then_derive_b(op: &Glewlwyd, env: &TestEnv) -> (Vec<String>, Vec<String>) {
    let (for_a, for_b) = (op.shared_login_args(A), op.shared_login_args(B));
    let a = env.kubecred_owned(&for_a).run().success().token();
    assert_eq!(jwt_claims(&a)["aud"], A);
    assert_eq!(renewed_audience(env, &for_b), B);
    (for_a, for_b)
}

/// The audience of the token get-token prints for `args` where no login can happen: from the
/// cache, or renewed from the shared login.
fn renewed_audience(env: &TestEnv, args: &[String]) -> String {
    let token = env
        .kubecred_owned(&without_login(args))
        .run()
        .success()
        .token();
    jwt_claims(&token)["aud"].as_str().unwrap().to_string()
}

/// With glewlwyd's one-time refresh tokens, each refresh disables the refresh token it was
/// given and answers with one limited to the resource that refresh named: after the second
/// cluster's token, the shared login no longer serves the first. glewlwyd refuses that refresh
/// (`invalid_target`, "Invalid Resource") and keeps the refresh token; kubecred says what
/// happened and what can help, records the refusal, and sends it no more until the next login —
/// which glewlwyd narrows again at the next refresh for the other cluster, as the message says.
#[test]
fn one_time_refresh_tokens_narrow_the_shared_login_and_the_refused_target_is_not_asked_again() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start_with(&[
        "--resource",
        A,
        "--resource",
        B,
        "--one-time-refresh-tokens",
    ]);
    let env = TestEnv::new();
    let (for_a, for_b) = log_in_for_a_then_derive_b(&op, &env);

    // a's token runs out: its refresh is refused, once.
    assert!(expire_cached_tokens(&env.cache_dir()) > 0);
    env.kubecred_owned(&without_login(&for_a))
        .run()
        .failure(3)
        .stderr_contains(&format!(
            "refused to refresh the shared login for resource {A} (invalid_target (Invalid Resource))"
        ))
        .stderr_contains("narrows each rotated refresh token to the last target asked for")
        .stderr_contains("not asked again until the next login, which would be narrowed the same way")
        .stderr_contains("without --shared-login");
    assert_eq!(op.refused_refreshes(A), 1, "{}", op.log());
    // The next run for a says so at once: glewlwyd hears nothing of it.
    let heard = op.log();
    let run = env
        .kubecred_owned(&without_login(&for_a))
        .run()
        .failure(3)
        .stderr_contains(&format!("no longer serves resource {A}"));
    assert_eq!(run.stdout(), "");
    assert_eq!(op.log(), heard, "the later run sent glewlwyd a request");
    // The refused refresh did not spend the login: b's token still comes from it.
    assert_eq!(renewed_audience(&env, &for_b), B);

    // A new login replaces the entry: a's token comes from it, and b's by refresh — which
    // narrows the new login to b in turn.
    let mut login = for_a.clone();
    login[0] = "login".into();
    env.kubecred_owned(&login).run().success();
    assert_eq!(renewed_audience(&env, &for_a), A);
    assert!(expire_cached_tokens(&env.cache_dir()) > 0);
    assert_eq!(renewed_audience(&env, &for_b), B);
    env.kubecred_owned(&without_login(&for_a))
        .run()
        .failure(3)
        .stderr_contains(&format!(
            "refused to refresh the shared login for resource {A}"
        ));
    assert_eq!(op.refused_refreshes(A), 2, "{}", op.log());
}

/// On glewlwyd's defaults (a refresh token used again and again), the shared login's refresh
/// token keeps every resource the login asked for: both clusters' tokens are renewed from it,
/// in any order, and nothing is refused.
#[test]
fn without_one_time_refresh_tokens_the_shared_login_serves_both_resources() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start_with(&["--resource", A, "--resource", B]);
    let env = TestEnv::new();
    let (for_a, for_b) = log_in_for_a_then_derive_b(&op, &env);
    for _ in 0..2 {
        assert!(expire_cached_tokens(&env.cache_dir()) > 0);
        assert_eq!(renewed_audience(&env, &for_a), A);
        assert_eq!(renewed_audience(&env, &for_b), B);
    }
    assert_eq!(
        op.refused_refreshes(A) + op.refused_refreshes(B),
        0,
        "{}",
        op.log()
    );
}

/// glewlwyd's revocation endpoint takes no public client, and its discovery says so
/// (`revocation_endpoint_auth_methods_supported` without `none`): `logout` says that, rather than
/// warning to check the URL and settings, and that the refresh token stays valid at the
/// provider, which it does; the entry is gone all the same.
#[test]
fn logout_of_a_public_client_says_the_provider_takes_no_public_client_revocation() {
    if !have(Need::Glewlwyd) {
        return;
    }
    let op = Glewlwyd::start();
    let env = TestEnv::new();
    let args = with_flag(&op.user_args("device-code"), "--use-access-token");
    env.kubecred_owned(&args).run().success();
    let files = cache_token_files(&env.cache_dir());
    assert_eq!(files.len(), 1);
    let entry: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let refresh_token = entry["refresh"]["refresh_token"]
        .as_str()
        .unwrap_or_else(|| panic!("a refresh token in {entry}"))
        .to_string();

    let mut logout = args.clone();
    logout[0] = "logout".into();
    let run = env
        .kubecred_owned(&logout)
        .run()
        .success()
        .stderr_contains(
            "forgot the cached login; a public client cannot revoke tokens at this provider (its discovery lists no client authentication for revocation), so the refresh token stays valid at the provider until it expires; no copy of it is left here",
        )
        .never_shows(&[&refresh_token]);
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    assert!(!run.stderr().contains("check the URL"), "{}", run.stderr());
    assert!(cache_token_files(&env.cache_dir()).is_empty());

    // As said: the provider still takes the refresh token.
    let discovery: Value = reqwest::blocking::get(format!(
        "{}/.well-known/openid-configuration",
        op.get("issuer")
    ))
    .and_then(|r| r.json())
    .unwrap();
    let refreshed = reqwest::blocking::Client::new()
        .post(discovery["token_endpoint"].as_str().unwrap())
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.as_str()),
            ("client_id", op.get("public_client").as_str()),
        ])
        .send()
        .unwrap();
    assert_eq!(refreshed.status(), 200, "the refresh token still works");
}
