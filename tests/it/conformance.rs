//! OpenID Connect relying-party conformance: the OpenID Foundation's `oidcc-client-test-*` modules
//! (Basic, Config and Refresh Token plans of openid-certification/conformance-suite; rohe/oidctest
//! `rp-*` name the same cases) that apply to a code-flow client with refresh, replayed against
//! `tests/support/conformance-op.mjs`: a provider that is correct except for the one defect the
//! module names. Each test is named after its module (or `kubecred_*` for a case the suite has no
//! module for), runs the real kubecred binary through a whole code flow (the "browser" is
//! `conformance-op.mjs follow`, which follows the provider's redirect to kubecred's loopback
//! listener: no Chromium needed), and checks the verdict the spec asks for: accepted and cached,
//! or refused with one line naming the failed check and nothing cached from the bad answer.
//! The module → test → expectation table is DECISIONS.md's "ID-token checks".

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const CLIENT_ID: &str = "conformance-rp";
const CLIENT_SECRET: &str = "conformance-secret-0123456789abcdef";
const USER: &str = "conformance-user";
/// Exit code of a provider whose answer kubecred refuses.
const PROVIDER: i32 = 3;
/// Exit code of a login that cannot complete.
const LOGIN: i32 = 4;

/// A running `conformance-op.mjs`, stopped when dropped.
struct ConformanceOp {
    child: Child,
    issuer: String,
}

impl ConformanceOp {
    fn start(module: &str) -> ConformanceOp {
        ensure_node_test_bed();
        let mut child = Command::new("node")
            .arg(script())
            .arg(json!({ "module": module }).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node tests/support/conformance-op.mjs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("reading conformance-op's startup line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("conformance-op startup line {line:?}: {err}"));
        ConformanceOp {
            issuer: info["issuer"].as_str().expect("issuer").to_string(),
            child,
        }
    }

    fn admin(&self) -> reqwest::blocking::Client {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }

    /// Switches the provider to another module (after a good first login, say).
    fn set_module(&self, module: &str) {
        self.admin()
            .post(format!("{}/_admin/module", self.issuer))
            .json(&json!({ "module": module }))
            .send()
            .and_then(|r| r.error_for_status())
            .expect("conformance-op module switch");
    }

    /// Signs with a new key from now on; the JWKS publishes only the new one.
    fn rotate_signing_key(&self) {
        self.admin()
            .post(format!("{}/_admin/rotate", self.issuer))
            .send()
            .and_then(|r| r.error_for_status())
            .expect("conformance-op key rotation");
    }

    fn stats(&self) -> Value {
        self.admin()
            .get(format!("{}/_admin/stats", self.issuer))
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .expect("conformance-op stats")
    }

    /// `kubecred get-token` for a code-flow login at this provider.
    fn args(&self) -> Vec<String> {
        vec![
            "get-token".into(),
            format!("--issuer-url={}", self.issuer),
            format!("--client-id={CLIENT_ID}"),
            format!("--client-secret={CLIENT_SECRET}"),
            "--grant-type=authcode".into(),
            "--listen-address=127.0.0.1:0".into(),
            format!("--browser-command=node {} follow", script().display()),
            "--auth-timeout=30s".into(),
        ]
    }
}

impl Drop for ConformanceOp {
    fn drop(&mut self) {
        stop_node_server(&mut self.child);
    }
}

fn script() -> std::path::PathBuf {
    repo_root().join("tests/support/conformance-op.mjs")
}

/// The ID tokens of the cache entries (there is at most one here).
fn cached_id_tokens(cache_dir: &Path) -> Vec<String> {
    cache_token_files(cache_dir)
        .iter()
        .filter_map(|path| {
            let entry: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            entry["id_token"].as_str().map(str::to_string)
        })
        .collect()
}

/// The module's ID token is accepted: printed, about the provider's user, and cached.
fn accepted(module: &str) -> (ConformanceOp, TestEnv, String) {
    let op = ConformanceOp::start(module);
    let env = TestEnv::new();
    let token = env.kubecred_owned(&op.args()).run().success().token();
    assert_eq!(jwt_claims(&token)["sub"], USER, "{module}");
    assert_eq!(cached_id_tokens(&env.cache_dir()), vec![token.clone()]);
    (op, env, token)
}

/// The login's ID token is refused with one error line containing `check`, and nothing is
/// cached.
fn rejected_at_login(module: &str, check: &str) -> ConformanceOp {
    let op = ConformanceOp::start(module);
    let env = TestEnv::new();
    env.kubecred_owned(&op.args())
        .run()
        .failure(PROVIDER)
        .stderr_contains(check);
    assert!(
        cache_token_files(&env.cache_dir()).is_empty(),
        "{module}: nothing may be cached from a refused answer"
    );
    assert_eq!(op.stats()["token"]["authorization_code"], 1);
    op
}

/// A good login, then the module's defect in the refresh response: refused with one error line
/// containing `check`; the entry keeps the login's ID token (the refused one is neither printed
/// nor cached).
fn rejected_at_refresh(module: &str, check: &str) {
    let (op, env, first) = accepted("oidcc-client-test");
    op.set_module(module);
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&op.args())
        .run()
        .failure(PROVIDER)
        .stderr_contains(check);
    assert_eq!(op.stats()["token"]["refresh_token"], 1, "{module}");
    assert_eq!(
        op.stats()["token"]["authorization_code"],
        1,
        "{module}: no second login"
    );
    assert_eq!(cached_id_tokens(&env.cache_dir()), vec![first]);
}

// ---- Basic plan (oidcc-client-basic-certification-test-plan) ----

#[test]
fn oidcc_client_test() {
    accepted("oidcc-client-test");
}

#[test]
fn oidcc_client_test_idtoken_sig_rs256() {
    let (_, _, token) = accepted("oidcc-client-test-idtoken-sig-rs256");
    assert_eq!(jwt_header(&token)["alg"], "RS256");
}

#[test]
fn oidcc_client_test_invalid_iss() {
    rejected_at_login(
        "oidcc-client-test-invalid-iss",
        "its issuer (iss) is \"https://issuer.invalid\"",
    );
}

#[test]
fn oidcc_client_test_missing_sub() {
    rejected_at_login("oidcc-client-test-missing-sub", "it has no subject (sub)");
}

#[test]
fn oidcc_client_test_invalid_aud() {
    rejected_at_login(
        "oidcc-client-test-invalid-aud",
        "its audience [\"another-client\"] does not include the client ID \"conformance-rp\"",
    );
}

#[test]
fn oidcc_client_test_missing_aud() {
    rejected_at_login(
        "oidcc-client-test-missing-aud",
        "its audience [] does not include the client ID",
    );
}

#[test]
fn oidcc_client_test_missing_iat() {
    rejected_at_login(
        "oidcc-client-test-missing-iat",
        "it has no valid issue time (iat)",
    );
}

#[test]
fn oidcc_client_test_nonce_invalid() {
    rejected_at_login(
        "oidcc-client-test-nonce-invalid",
        "its nonce does not match the one kubecred sent",
    );
}

#[test]
fn oidcc_client_test_kid_absent_single_jwks() {
    let (_, _, token) = accepted("oidcc-client-test-kid-absent-single-jwks");
    assert!(jwt_header(&token).get("kid").is_none());
}

/// The suite lets a client either try every key or refuse; kubecred refuses to guess.
#[test]
fn oidcc_client_test_kid_absent_multiple_jwks() {
    rejected_at_login(
        "oidcc-client-test-kid-absent-multiple-jwks",
        "it names no key (no kid) and the provider publishes 2 RS256 keys",
    );
}

#[test]
fn oidcc_client_test_idtoken_sig_none() {
    rejected_at_login(
        "oidcc-client-test-idtoken-sig-none",
        "it is unsigned (alg none)",
    );
}

#[test]
fn oidcc_client_test_invalid_sig_rs256() {
    rejected_at_login(
        "oidcc-client-test-invalid-sig-rs256",
        "its signature does not match the provider's key",
    );
}

#[test]
fn oidcc_client_test_invalid_sig_es256() {
    rejected_at_login(
        "oidcc-client-test-invalid-sig-es256",
        "its signature does not match the provider's key",
    );
}

/// HS256 keyed with the client secret: valid for whoever knows the secret, so never accepted.
#[test]
fn oidcc_client_test_invalid_sig_hs256() {
    rejected_at_login(
        "oidcc-client-test-invalid-sig-hs256",
        "it is signed with HS256, a shared-secret algorithm kubecred does not accept",
    );
}

/// The key-confusion forgery: HS256 keyed with the published RSA public key.
#[test]
fn kubecred_invalid_sig_hs256_keyed_with_the_rsa_public_key() {
    rejected_at_login(
        "invalid-sig-hs256-rsa-public-key",
        "it is signed with HS256, a shared-secret algorithm",
    );
}

#[test]
fn kubecred_idtoken_sig_es256() {
    let (_, _, token) = accepted("idtoken-sig-es256");
    assert_eq!(jwt_header(&token)["alg"], "ES256");
}

#[test]
fn kubecred_nonce_missing() {
    rejected_at_login(
        "nonce-missing",
        "it carries no nonce although kubecred sent one",
    );
}

#[test]
fn kubecred_id_token_expired() {
    rejected_at_login("id-token-expired", "it expired at ");
}

#[test]
fn kubecred_aud_array_with_azp() {
    accepted("aud-array-with-azp");
}

/// Several audiences and no azp: Core 1.0 errata 2 no longer asks for azp; ours is among them.
/// A provider clock 50 s ahead: iat and nbf in our future, within the one-minute leeway that
/// kube-apiserver allows too, so the token is accepted (a stricter check would lock out every
/// user of such a provider until the clocks agree).
#[test]
fn kubecred_iat_and_nbf_a_little_ahead() {
    let (_, _, token) = accepted("clock-ahead");
    let claims = jwt_claims(&token);
    let now = chrono::Utc::now().timestamp();
    assert!(claims["nbf"].as_i64().unwrap() > now + 30, "{claims}");
}

/// An account in 600 groups: a 12 KB claim travels whole, through the cache to kubectl.
#[test]
fn kubecred_groups_claim_of_12_kb() {
    let (op, env, token) = accepted("groups-12kb");
    let groups = jwt_claims(&token)["groups"].clone();
    assert_eq!(groups.as_array().unwrap().len(), 600);
    assert!(
        groups.to_string().len() > 12_000,
        "{}",
        groups.to_string().len()
    );
    // The cached copy is what the next call prints, without asking the provider again.
    let again = env.kubecred_owned(&op.args()).run().success().token();
    assert_eq!(again, token);
    assert_eq!(op.stats()["token"]["authorization_code"], 1);
}

/// A JWKS holding keys kubecred cannot use (Ed448, RSA-OAEP-512 and `use: enc` encryption keys,
/// ML-DSA, x5c-only) before the signing key: the signing key is found by kid, and without one
/// as the only key for RS256 signatures.
#[test]
fn kubecred_jwks_with_unusable_keys_beside_the_signing_key() {
    accepted("jwks-unusable-keys");
    accepted("jwks-unusable-keys-kid-absent");
}

#[test]
fn kubecred_aud_array_without_azp() {
    accepted("aud-array-without-azp");
}

#[test]
fn kubecred_azp_of_another_client() {
    rejected_at_login(
        "azp-another-client",
        "it was issued to the client \"another-client\" (azp), not \"conformance-rp\"",
    );
}

/// RFC 6749 §5.1: token_type is case-insensitive.
#[test]
fn kubecred_token_type_lowercase_bearer() {
    accepted("token-type-lowercase");
}

/// No expires_in: the printed expiry comes from the ID token's exp.
#[test]
fn kubecred_no_expires_in() {
    let op = ConformanceOp::start("no-expires-in");
    let env = TestEnv::new();
    let run = env.kubecred_owned(&op.args()).run().success();
    let exp = jwt_claims(&run.token())["exp"].as_i64().unwrap();
    let printed = run.credential()["status"]["expirationTimestamp"]
        .as_str()
        .expect("an expirationTimestamp")
        .to_string();
    let printed = chrono::DateTime::parse_from_rfc3339(&printed).unwrap();
    assert!(printed.timestamp() <= exp, "{printed} after exp {exp}");
}

// ---- Config plan (oidcc-client-config-certification-test-plan) ----

#[test]
fn oidcc_client_test_discovery_openid_config() {
    let (op, _, _) = accepted("oidcc-client-test-discovery-openid-config");
    assert_eq!(op.stats()["jwks"], 1);
}

/// The JWKS is at a path only the discovery document names.
#[test]
fn oidcc_client_test_discovery_jwks_uri_keys() {
    let (op, _, _) = accepted("oidcc-client-test-discovery-jwks-uri-keys");
    assert_eq!(op.stats()["jwks"], 1);
}

#[test]
fn oidcc_client_test_discovery_issuer_mismatch() {
    let op = ConformanceOp::start("oidcc-client-test-discovery-issuer-mismatch");
    let env = TestEnv::new();
    env.kubecred_owned(&op.args())
        .run()
        .failure(PROVIDER)
        .stderr_contains(&format!("names the issuer {}/someone-else", op.issuer));
    assert_eq!(
        op.stats()["authorize"],
        0,
        "no login against a mismatched issuer"
    );
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

/// Keys rotated before the first token is signed: the first JWKS fetch already has the key.
#[test]
fn oidcc_client_test_signing_key_rotation_just_before_signing() {
    let op = ConformanceOp::start("oidcc-client-test-signing-key-rotation-just-before-signing");
    op.rotate_signing_key();
    let env = TestEnv::new();
    env.kubecred_owned(&op.args()).run().success();
    assert_eq!(op.stats()["jwks"], 1);
}

/// Keys rotated between two ID tokens: the cached JWKS lacks the new kid, so it is fetched
/// again, exactly once, and the new token accepted.
#[test]
fn oidcc_client_test_signing_key_rotation() {
    let (op, env, _) = accepted("oidcc-client-test-signing-key-rotation");
    assert_eq!(op.stats()["jwks"], 1);
    op.rotate_signing_key();
    expire_cached_tokens(&env.cache_dir());
    let token = env.kubecred_owned(&op.args()).run().success().token();
    assert_eq!(jwt_header(&token)["kid"], "rsa-rotated-1");
    assert_eq!(op.stats()["jwks"], 2);
    assert_eq!(op.stats()["token"]["refresh_token"], 1);
}

/// A kid the provider never publishes: one refetch, then a clear refusal (no fetch loop).
#[test]
fn kubecred_unknown_kid_is_refetched_once_then_refused() {
    let (op, env, _) = accepted("oidcc-client-test");
    op.set_module("unknown-kid");
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&op.args())
        .run()
        .failure(PROVIDER)
        .stderr_contains("the provider publishes no key \"rsa-never-published\"");
    assert_eq!(op.stats()["jwks"], 2);
}

// ---- Refresh Token plan (oidcc-client-refreshtoken-test-plan) ----

#[test]
fn oidcc_client_test_refresh_token() {
    let (op, env, first) = accepted("oidcc-client-test-refresh-token");
    expire_cached_tokens(&env.cache_dir());
    let second = env.kubecred_owned(&op.args()).run().success().token();
    assert_eq!(jwt_claims(&second)["sub"], USER);
    assert_eq!(op.stats()["token"]["refresh_token"], 1);
    assert_eq!(op.stats()["token"]["authorization_code"], 1);
    assert_eq!(cached_id_tokens(&env.cache_dir()), vec![second.clone()]);
    // The provider rotates refresh tokens and takes each once: a second refresh works only if
    // the rotated one was kept.
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&op.args()).run().success();
    assert_eq!(op.stats()["token"]["refresh_token"], 2);
    let _ = first;
}

#[test]
fn oidcc_client_test_refresh_token_invalid_issuer() {
    rejected_at_refresh(
        "oidcc-client-test-refresh-token-invalid-issuer",
        "its issuer (iss) is \"https://issuer.invalid\"",
    );
}

#[test]
fn oidcc_client_test_refresh_token_invalid_sub() {
    rejected_at_refresh(
        "oidcc-client-test-refresh-token-invalid-sub",
        "its subject (sub) \"conformance-user-someone-else\" differs from the original login's \"conformance-user\"",
    );
}

#[test]
fn kubecred_refresh_token_invalid_aud() {
    rejected_at_refresh(
        "refresh-token-invalid-aud",
        "its audience (aud) [\"conformance-rp\", \"another-client\"] differs from the original login's [\"conformance-rp\"]",
    );
}

// ---- RFC 9207: iss on the authorization response ----

#[test]
fn kubecred_rfc9207_iss_matching_is_accepted() {
    accepted("rfc9207-iss-ok");
}

#[test]
fn kubecred_rfc9207_iss_of_another_issuer_is_refused() {
    let op = ConformanceOp::start("rfc9207-iss-wrong");
    let env = TestEnv::new();
    env.kubecred_owned(&op.args())
        .run()
        .failure(LOGIN)
        .stderr_contains("names the issuer \"http://127.0.0.1:1/mix-up\" (RFC 9207)");
    assert_eq!(
        op.stats()["token"]["authorization_code"],
        Value::Null,
        "no code exchange"
    );
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

#[test]
fn kubecred_rfc9207_iss_missing_though_announced_is_refused() {
    let op = ConformanceOp::start("rfc9207-iss-missing");
    let env = TestEnv::new();
    env.kubecred_owned(&op.args())
        .run()
        .failure(LOGIN)
        .stderr_contains("carries no iss parameter, which this provider announces");
    assert_eq!(
        op.stats()["token"]["authorization_code"],
        Value::Null,
        "no code exchange"
    );
}

fn jwt_header(token: &str) -> Value {
    use base64::Engine;
    let header = token.split('.').next().expect("a JWT");
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .unwrap(),
    )
    .unwrap()
}
