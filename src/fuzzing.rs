//! The fuzz targets' way in (`fuzz/`, `cargo +nightly fuzz`) and the corpus replay on stable
//! (its `tests` below): one function per kind of untrusted input, each taking arbitrary
//! bytes through the very code that handles that input in kubecred. Errors are expected
//! outcomes; the only failures are a panic, a hang or runaway memory. Not kubecred's API
//! (hidden from the docs); nothing here does I/O.

use crate::config::RedirectUri;
use crate::exec_credential::ExecInfo;
use crate::login::callback::{ExpectedResponse, StateRule, interpret_pasted};
use crate::login::listener::{Route, route};
use crate::oidc::{Expectation, ProviderMetadata};
use crate::secret::Secret;
use crate::tokens::{Identity, access_token_expiry};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use url::Url;

/// A fuzz target's entry function.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("exec_info", exec_info),
    ("id_token", id_token),
    ("id_token_claims", id_token_claims),
    ("cache_entry", cache_entry),
    ("callback_request", callback_request),
    ("pasted_line", pasted_line),
    ("token_response", token_response),
    ("discovery", discovery),
    ("device_response", device_response),
    ("duration", duration),
    ("redirect_uri", redirect_uri),
];

/// The issuer, client and state the targets' inputs are judged against (the corpus uses them).
pub const ISSUER: &str = "https://issuer.fuzz.example";
pub const CLIENT_ID: &str = "kubectl";
pub const STATE: &str = "fuzz-state-0123456789";
pub const NONCE: &str = "fuzz-nonce";
/// The redirect URI of the login a relay line is judged against: its port written with a
/// leading zero, which a relay line's must match as written but for the port.
pub const REDIRECT_URI: &str = "http://localhost:08000/callback";

/// The fixed "now" of the targets: 2026-01-01T00:00:00Z (the corpus' tokens are valid then).
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// `KUBERNETES_EXEC_INFO`, and the cluster extension in it resolved into settings (with the few
/// flags a kubeconfig would give).
pub fn exec_info(data: &[u8]) {
    let Some(raw) = text(data) else { return };
    let Ok(exec) = ExecInfo::parse(Some(raw)) else {
        return;
    };
    let argv = [
        "kubecred",
        "get-token",
        "--cache-dir=/nonexistent/kubecred-fuzz",
    ];
    let Ok(cli) = <crate::cli::Cli as clap::Parser>::try_parse_from(argv) else {
        unreachable!("fixed arguments parse")
    };
    let crate::cli::Command::GetToken(args) = cli.command else {
        unreachable!("get-token")
    };
    let env = crate::config::Environment::default();
    let _ = crate::config::Config::resolve(&args, &env, exec);
}

/// A JWKS document, a newline, then a compact JWT: verified as an ID token of [`ISSUER`] with
/// that key set, as a login answer (nonce) and as a refresh answer (original identity).
pub fn id_token(data: &[u8]) {
    let Some(raw) = text(data) else { return };
    let (jwks, token) = raw.split_once('\n').unwrap_or(("", raw));
    let jwks: Value = serde_json::from_str(jwks).unwrap_or(Value::Null);
    let token = Secret::new(token.trim_end());
    let original = original_identity();
    for expectation in token_expectations(&original) {
        let _ = crate::oidc::verify_with_jwks(&jwks, &token, &expectation, now());
    }
}

/// A claims object, checked as if its signature were valid: reaches every claim check.
pub fn id_token_claims(data: &[u8]) {
    let Ok(Value::Object(claims)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let original = original_identity();
    for expectation in token_expectations(&original) {
        let _ = crate::oidc::check_claims(&claims, &expectation, now());
    }
}

/// A login's ID token (our nonce) and a refreshed one (the login's identity).
fn token_expectations(original: &Identity) -> [Expectation<'_>; 2] {
    let expectation = |nonce, original| Expectation {
        issuer: ISSUER,
        client_id: CLIENT_ID,
        nonce,
        original,
    };
    [
        expectation(Some(NONCE), None),
        expectation(None, Some(original)),
    ]
}

fn original_identity() -> Identity {
    Identity {
        iss: ISSUER.into(),
        sub: "user-1".into(),
        aud: vec![CLIENT_ID.into()],
    }
}

/// A cache entry (file or keyring item), and what the cache-hit path then asks of it.
pub fn cache_entry(data: &[u8]) {
    let Ok(tokens) = crate::cache::decode_entry(data) else {
        return;
    };
    for kind in [
        crate::config::TokenKind::IdToken,
        crate::config::TokenKind::AccessToken,
    ] {
        let _ = tokens.fresh_credential(kind, now(), std::time::Duration::from_secs(10));
    }
    let _ = crate::tokens::display_subject(&tokens);
}

/// The request head the loopback listener reads from a connection (the browser's redirect).
pub fn callback_request(data: &[u8]) {
    let head = String::from_utf8_lossy(data);
    for expected in expectations() {
        if let Route::Callback(verdict) = route(&head, "/callback", &expected) {
            let _ =
                crate::login::callback::settle(verdict, crate::login::callback::Origin::Browser);
        }
    }
}

/// A line pasted on stdin in place of the redirect (or the bare code).
pub fn pasted_line(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    for expected in expectations() {
        for rule in [StateRule::Required, StateRule::IfPresent] {
            if let Some(verdict) = interpret_pasted(&line, &expected, rule) {
                let _ =
                    crate::login::callback::settle(verdict, crate::login::callback::Origin::Paste);
            }
        }
    }
}

fn expectations() -> [ExpectedResponse; 3] {
    let redirect = RedirectUri::parse(REDIRECT_URI).expect("a redirect URI");
    [
        ExpectedResponse::new(STATE, ISSUER, true),
        ExpectedResponse::from(STATE),
        ExpectedResponse::new(STATE, ISSUER, false).redirected_to(&redirect),
    ]
}

/// A token endpoint answer: the success shape (and the expiry worked out from it), and the OAuth
/// error shape with its wording.
pub fn token_response(data: &[u8]) {
    crate::grants::fuzz_token_response(data, now());
    if let Ok(token) = serde_json::from_slice::<Value>(data)
        && let Some(access) = token.get("access_token").and_then(Value::as_str)
    {
        let expires_in = token
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(std::time::Duration::from_secs);
        let _ = access_token_expiry(access, expires_in, now());
    }
}

/// A discovery document, validated against [`ISSUER`].
pub fn discovery(data: &[u8]) {
    let Ok(document) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let issuer = Url::parse(ISSUER).expect("a valid URL");
    if let Ok(metadata) = ProviderMetadata::validate(&document, &issuer, ISSUER) {
        let _ = metadata.supports_pkce_s256();
    }
}

/// A device authorization answer (RFC 8628), and the instructions shown from it.
pub fn device_response(data: &[u8]) {
    crate::grants::fuzz_device_response(data);
}

/// A duration as flags, the environment and the cluster extension give it, and its wording.
pub fn duration(data: &[u8]) {
    let Some(raw) = text(data) else { return };
    if let Ok(duration) = crate::duration::parse(raw) {
        let _ = crate::duration::display(duration);
        let _ = crate::duration::in_words(duration);
        let _ = crate::duration::display_elapsed(duration);
        let _ = crate::duration::display_whole_seconds(duration);
    }
}

/// A redirect URI as `--redirect-url`, a relay line or a remote-bootstrap URL gives it, and the
/// one change kubecred makes to its text, the port: a port put in, taken out or kept leaves the
/// rest of the text as written.
pub fn redirect_uri(data: &[u8]) {
    let Some(raw) = text(data) else { return };
    let Ok(uri) = RedirectUri::parse(raw) else {
        return;
    };
    // The port read from the text is the one the parse found (which forgets a default one).
    let default_port = uri.url().port_or_known_default();
    match uri.written_port() {
        None => assert_eq!(uri.url().port(), None, "{raw:?}"),
        Some(port) if Some(port) != default_port => {
            assert_eq!(uri.url().port(), Some(port), "{raw:?}")
        }
        Some(_) => {}
    }
    let bare = uri.without_port();
    assert_eq!(bare.written_port(), None, "{raw:?} without its port");
    if let Some(port) = uri.written_port() {
        assert_eq!(
            uri.with_port(port).as_str(),
            raw,
            "{raw:?} given its own port"
        );
    }
    for port in [1, 8000, u16::MAX] {
        let moved = uri.with_port(port);
        assert_eq!(moved.without_port(), bare, "{raw:?} given the port {port}");
        // A URI without a host (a URN) has no port to take.
        assert!(
            moved.written_port() == Some(port) || moved.as_str() == raw,
            "{raw:?} given the port {port}: {moved:?}"
        );
    }
}

/// The fuzz corpus as a regression test on stable: every file of `fuzz/corpus/<target>/` goes
/// through the same entry function as the nightly fuzz target, and none may panic. Inputs that
/// once crashed a target are kept there with their fix.
#[cfg(test)]
mod tests {
    use super::TARGETS;
    use std::collections::BTreeSet;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    #[test]
    fn every_corpus_input_runs_through_its_target_without_a_panic() {
        let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut failures = Vec::new();
        let mut total = 0;
        for (name, target) in TARGETS {
            let dir = fuzz.join("corpus").join(name);
            let files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
                .map(|entry| entry.unwrap().path())
                .collect();
            assert!(!files.is_empty(), "{} is empty", dir.display());
            for file in files {
                let data = std::fs::read(&file).unwrap();
                total += 1;
                if catch_unwind(AssertUnwindSafe(|| target(&data))).is_err() {
                    failures.push(file.display().to_string());
                }
            }
        }
        assert!(failures.is_empty(), "panicked on: {failures:#?}");
        assert!(total >= TARGETS.len());
    }

    /// The nightly targets and the list the replay walks are the same set.
    #[test]
    fn every_fuzz_target_is_replayed() {
        let files: BTreeSet<String> = std::fs::read_dir(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets"),
        )
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.trim_end_matches(".rs").to_string()
        })
        .collect();
        let listed: BTreeSet<String> = TARGETS.iter().map(|(name, _)| name.to_string()).collect();
        assert_eq!(files, listed);
    }
}
