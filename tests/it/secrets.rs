//! Nothing secret reaches stderr at `-vv`, and stdout carries the one credential token and
//! nothing else, through the real flows: a browser login (authorization code + PKCE), a refresh,
//! the device flow, and a refresh refused with `invalid_grant` followed by a login that times out.
//!
//! The secrets are the real ones: the tokens are read back from the cache entry
//! (`--cache-storage=disk`, so the refresh token is in the file too), the authorization code is
//! taken from the browser's own trace of the callback URL, the PKCE verifier is recognised by its
//! S256 challenge in the authorization URL. The device code never leaves the provider and
//! kubecred, so it is caught indirectly: no opaque value of its shape is on stderr, and the QR
//! code is that of the verification URL. `the_leak_detectors_see_what_they_look_for` shows each
//! detector failing on a leak.

use crate::support::*;
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};

/// The token strings of the one cache entry: every string value longer than 20 characters
/// under a key naming a token (`id_token`, `access_token`, `refresh_token`, wherever they sit in
/// the document), but not the `*_expiry` timestamps next to them.
struct CachedTokens {
    /// (key, value), in document order.
    all: Vec<(String, String)>,
}

impl CachedTokens {
    fn read(cache_dir: &Path) -> CachedTokens {
        fn walk(value: &Value, out: &mut Vec<(String, String)>) {
            match value {
                Value::Object(map) => {
                    for (key, field) in map {
                        match field {
                            Value::String(text)
                                if key.contains("token")
                                    && !key.contains("expiry")
                                    && text.len() > 20 =>
                            {
                                out.push((key.clone(), text.clone()))
                            }
                            _ => walk(field, out),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
                _ => {}
            }
        }
        let files = cache_token_files(cache_dir);
        assert_eq!(files.len(), 1, "one cache entry expected: {files:?}");
        let doc: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        let mut all = Vec::new();
        walk(&doc, &mut all);
        let tokens = CachedTokens { all };
        // Without these the checks below would prove nothing.
        for key in ["id_token", "access_token", "refresh_token"] {
            assert!(
                !tokens.get(key).is_empty(),
                "no {key} in the cache entry {}: {doc}",
                files[0].display()
            );
        }
        tokens
    }

    fn get(&self, key: &str) -> String {
        self.all
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    fn values(&self) -> impl Iterator<Item = &str> {
        self.all.iter().map(|(_, v)| v.as_str())
    }
}

/// `-vv` really was in effect: the verbose trace is there (at the default level a successful
/// login writes one `kubecred:` line, the one with the URL).
#[track_caller]
fn assert_verbose(run: &Run) {
    let lines = run
        .stderr()
        .lines()
        .filter(|line| line.starts_with("kubecred: "))
        .count();
    assert!(
        lines >= 3,
        "expected the -vv trace on stderr\n--- stderr ---\n{}",
        run.stderr()
    );
}

/// None of `secrets` (named, for the message) is on stderr.
#[track_caller]
fn assert_not_on_stderr<'a>(run: &Run, secrets: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let stderr = run.stderr();
    for (what, secret) in secrets {
        assert!(secret.len() > 20, "{what} is too short to search for");
        assert!(
            !stderr.contains(secret),
            "stderr shows the {what}\n--- stderr ---\n{stderr}"
        );
    }
}

/// stdout is one ExecCredential whose token is `token`, and holds none of `secrets` besides.
#[track_caller]
/// No cached token on stderr, and stdout is the credential carrying the cached ID token.
fn assert_only_the_credential_shows(run: &Run, cached: &CachedTokens) {
    let named = || cached.all.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    assert_not_on_stderr(run, named());
    assert_stdout_is_the_credential(run, &cached.get("id_token"), named());
}

fn assert_stdout_is_the_credential<'a>(
    run: &Run,
    token: &str,
    secrets: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    assert_eq!(run.token(), token, "the printed token is the cached one");
    let rest = run.stdout().replacen(token, "", 1);
    for (what, secret) in secrets {
        assert!(
            secret == token || !rest.contains(secret),
            "stdout shows the {what} besides the credential\n--- stdout ---\n{}",
            run.stdout()
        );
    }
}

/// Values of `code=` parameters: `code=` at the start of a word (so not `user_code=`, not
/// `response_type=code&`), followed by a value.
fn code_parameters(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("code=") {
        let starts_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let value: String = text[at + "code=".len()..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '&' | '"' | '\'' | ',' | ')'))
            .collect();
        if starts_word && !value.is_empty() {
            found.push(value);
        }
    }
    found
}

/// Runs of characters a PKCE verifier is made of (RFC 7636 "unreserved").
fn unreserved_runs(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')))
        .filter(|run| !run.is_empty())
        .collect()
}

/// A string on which `challenge` is the S256 PKCE challenge: any 43–128 characters of an
/// unreserved run, so the verifier is found even when glued to its neighbours.
fn pkce_verifier_in(text: &str, challenge: &str) -> Option<String> {
    let s256 = |verifier: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier))
    };
    for run in unreserved_runs(text) {
        for start in 0..run.len() {
            for len in 43..=128.min(run.len() - start) {
                let candidate = &run[start..start + len];
                if s256(candidate) == challenge {
                    return Some(candidate.to_string());
                }
            }
        }
    }
    None
}

/// Values shaped like the provider's opaque secrets (authorization and device codes, opaque
/// access and refresh tokens are 43 base64url characters): 32 or more base64url characters
/// with upper and lower case letters and digits. Hex digests (the cache key in the lock path)
/// and words do not qualify.
fn opaque_values(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|run| {
            run.len() >= 32
                && run.chars().any(|c| c.is_ascii_uppercase())
                && run.chars().any(|c| c.is_ascii_lowercase())
                && run.chars().any(|c| c.is_ascii_digit())
        })
        .collect()
}

/// The parameters of an authorization request that are public (they travel in the browser's
/// address bar): an opaque value on stderr that is one of these is no leak.
fn public_parameters(authorization_url: &str) -> Vec<String> {
    let url = url::Url::parse(authorization_url).unwrap();
    url.query_pairs()
        .filter(|(key, _)| matches!(key.as_ref(), "state" | "nonce" | "code_challenge"))
        .map(|(_, value)| value.into_owned())
        .collect()
}

#[track_caller]
fn assert_no_unexplained_opaque_value(run: &Run, public: &[String]) {
    let stderr = run.stderr();
    let unexplained: Vec<&str> = opaque_values(&stderr)
        .into_iter()
        .filter(|value| !public.iter().any(|p| p == value))
        .collect();
    assert!(
        unexplained.is_empty(),
        "stderr shows secret-shaped values {unexplained:?}\n--- stderr ---\n{stderr}"
    );
}

/// The modules of the first QR code drawn in half blocks on `text` (true = a filled cell), as
/// many rows as columns (the last half-block line of an odd-sized code has an empty lower half).
fn qr_cells(text: &str) -> Option<Vec<Vec<bool>>> {
    let is_block_line = |line: &&str| {
        line.chars().count() >= 21 && line.chars().all(|c| matches!(c, '█' | '▀' | '▄' | ' '))
    };
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|line| !is_block_line(line))
        .take_while(is_block_line)
        .collect();
    let width = lines.first()?.chars().count();
    let mut rows = Vec::new();
    for line in &lines {
        let (mut top, mut bottom) = (Vec::new(), Vec::new());
        for c in line.chars() {
            top.push(matches!(c, '█' | '▀'));
            bottom.push(matches!(c, '█' | '▄'));
        }
        if top.len() != width {
            return None;
        }
        rows.push(top);
        rows.push(bottom);
    }
    rows.truncate(width);
    Some(rows)
}

/// Whether `cells` is the QR code of `data` (at any error correction level, either colour
/// scheme, any quiet zone).
fn qr_encodes(cells: &[Vec<bool>], data: &str) -> bool {
    use qrcode::{Color, EcLevel, QrCode};
    for filled_is_dark in [false, true] {
        let dark = |r: usize, c: usize| cells[r][c] == filled_is_dark;
        let dark_cells: Vec<(usize, usize)> = (0..cells.len())
            .flat_map(|r| (0..cells[r].len()).map(move |c| (r, c)))
            .filter(|&(r, c)| dark(r, c))
            .collect();
        let Some(top) = dark_cells.iter().map(|&(r, _)| r).min() else {
            continue;
        };
        let left = dark_cells.iter().map(|&(_, c)| c).min().unwrap();
        for level in [EcLevel::L, EcLevel::M, EcLevel::Q, EcLevel::H] {
            let Ok(code) = QrCode::with_error_correction_level(data.as_bytes(), level) else {
                continue;
            };
            let width = code.width();
            let colors = code.to_colors();
            let fits = top + width <= cells.len()
                && cells.iter().all(|row| left + width <= row.len())
                && dark_cells
                    .iter()
                    .all(|&(r, c)| r < top + width && c < left + width);
            if fits
                && (0..width).all(|r| {
                    (0..width)
                        .all(|c| dark(top + r, left + c) == (colors[r * width + c] == Color::Dark))
                })
            {
                return true;
            }
        }
    }
    false
}

/// `launch <url>` lines of browser.mjs' log.
fn launched_urls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix("launch "))
        .map(str::to_string)
        .collect()
}

/// A `--browser-command` running browser.mjs with its page trace (`TESTBED_BROWSER_VERBOSE`)
/// written to `trace`, so that the callback URL can be read there. Its stderr must not be
/// kubecred's: the code in that trace would then be on kubecred's stderr without kubecred
/// printing it.
fn traced_browser_command(trace: &Path) -> String {
    let browser = repo_root().join("tests/support/browser.mjs");
    let script = format!(
        "TESTBED_BROWSER_VERBOSE=1 exec node {} \"$@\" 2>>{}",
        shlex::try_quote(&browser.to_string_lossy()).unwrap(),
        shlex::try_quote(&trace.to_string_lossy()).unwrap(),
    );
    shlex::try_join(["sh", "-c", script.as_str(), "sh"]).unwrap()
}

/// The authorization codes in the callback URLs of browser.mjs' trace. kubecred does not wait
/// for its browser command, so this waits for the browser to finish (`exit N`).
fn codes_from_trace(trace: &Path, issuer: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = std::fs::read_to_string(trace).unwrap_or_default();
        if text.contains("] exit ") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let issuer = url::Url::parse(issuer).unwrap();
    let mut codes: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_once("callback ").map(|(_, rest)| rest.trim()))
        .filter_map(|rest| url::Url::parse(rest.split_whitespace().next()?).ok())
        .filter(|url| url.origin() != issuer.origin())
        .filter_map(|url| {
            url.query_pairs()
                .find(|(key, _)| key == "code")
                .map(|(_, value)| value.into_owned())
        })
        .collect();
    codes.dedup();
    assert_eq!(
        codes.len(),
        1,
        "one callback with a code expected in the browser trace:\n{text}"
    );
    codes
}

#[test]
fn the_leak_detectors_see_what_they_look_for() {
    // code= parameters, but not user_code= or response_type=code.
    assert_eq!(
        code_parameters(
            "kubecred: got http://127.0.0.1:1/callback?code=abc123&state=s\n\
             kubecred: visit http://idp/device?user_code=WDJB-MJHT\n\
             kubecred: http://idp/auth?response_type=code&code_challenge=x"
        ),
        vec!["abc123".to_string()]
    );
    assert!(
        code_parameters("body: grant_type=authorization_code code=xyz").contains(&"xyz".into())
    );
    // A PKCE verifier is found by its challenge, also inside a longer run.
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"; // RFC 7636 appendix B
    assert_eq!(
        pkce_verifier_in(&format!("x code_verifier={verifier}&y"), challenge).as_deref(),
        Some(verifier)
    );
    assert_eq!(
        pkce_verifier_in(&format!("PkceCodeVerifier(\"{verifier}\")"), challenge).as_deref(),
        Some(verifier)
    );
    assert_eq!(
        pkce_verifier_in(&format!("glued{verifier}"), challenge).as_deref(),
        Some(verifier)
    );
    assert_eq!(
        pkce_verifier_in(
            "code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            challenge
        ),
        None
    );
    // Opaque secrets of the provider's shape, not hex digests, paths or words.
    let opaque = "jdBY3KRbQnNs8X_WqG6XCvkPbLMCRhu6AfgUOH_5Dxy";
    assert_eq!(
        opaque_values(&format!(
            "kubecred: locked /tmp/kubecred-it-AbC123/cache/locks/\
             b1832c887988cfc82d793451f6c5e8aafc9cc5d673d5bcb5dd28d0da80f1c151.lock after 0ms\n\
             kubecred: polling with device_code={opaque}"
        )),
        vec![opaque]
    );
    // The QR reader: what kubecred draws (light modules as blocks, quiet zone) reads back as
    // its data and only as its data, in either colour scheme.
    let url = "http://127.0.0.1:4711/device?user_code=WDJB-MJHT";
    let code = qrcode::QrCode::new(url.as_bytes()).unwrap();
    for (dark, light) in [
        (
            qrcode::render::unicode::Dense1x2::Light,
            qrcode::render::unicode::Dense1x2::Dark,
        ),
        (
            qrcode::render::unicode::Dense1x2::Dark,
            qrcode::render::unicode::Dense1x2::Light,
        ),
    ] {
        let drawn = code
            .render::<qrcode::render::unicode::Dense1x2>()
            .dark_color(dark)
            .light_color(light)
            .quiet_zone(true)
            .build();
        let cells = qr_cells(&format!(
            "kubecred: or scan this with a phone:\n{drawn}\nkubecred: the code expires\n"
        ))
        .unwrap();
        assert!(qr_encodes(&cells, url));
        assert!(!qr_encodes(&cells, &format!("{url}&device_code={opaque}")));
        assert!(!qr_encodes(
            &cells,
            "http://127.0.0.1:4711/device?user_code=WDJB-MJHX"
        ));
    }
}

#[test]
fn a_browser_login_at_vv_shows_no_token_code_or_verifier() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let log = env.dir.path().join("browser.log");
    let trace = env.dir.path().join("browser.trace");
    let mut args = authcode_args(&bed);
    args.retain(|arg| !arg.starts_with("--browser-command"));
    args.push(format!(
        "--browser-command={}",
        traced_browser_command(&trace)
    ));
    args.push("--cache-storage=disk".into());
    args.push("-vv".into());
    let run = env
        .kubecred_owned(&args)
        .env("TESTBED_BROWSER_LOG", &log)
        .run()
        .success();
    assert_verbose(&run);
    let stderr = run.stderr();

    // The tokens, as the cache holds them.
    let cached = CachedTokens::read(&env.cache_dir());
    assert_only_the_credential_shows(&run, &cached);

    // The authorization code, as the browser delivered it to the callback.
    let codes = codes_from_trace(&trace, &bed.issuer);
    let code = codes[0].as_str();
    assert_not_on_stderr(&run, [("authorization code", code)]);
    assert!(!run.stdout().contains(code), "stdout shows the code");
    let shown = code_parameters(&stderr);
    assert!(
        shown.is_empty(),
        "stderr shows code= parameters {shown:?}\n--- stderr ---\n{stderr}"
    );

    // The PKCE verifier, recognised by the challenge of the authorization URL.
    let launched = launched_urls(&log);
    assert_eq!(launched.len(), 1, "one browser launch: {launched:?}");
    let authorization = url::Url::parse(&launched[0]).unwrap();
    let challenge = authorization
        .query_pairs()
        .find(|(key, _)| key == "code_challenge")
        .map(|(_, value)| value.into_owned())
        .expect("a PKCE challenge in the authorization URL");
    assert_eq!(challenge.len(), 43, "{authorization}");
    for (stream, text) in [("stderr", stderr.as_str()), ("stdout", &run.stdout())] {
        if let Some(verifier) = pkce_verifier_in(text, &challenge) {
            panic!("{stream} shows the PKCE verifier {verifier}\n--- {stream} ---\n{text}");
        }
    }

    // Nothing else of a secret's shape: only the public request parameters.
    assert_no_unexplained_opaque_value(&run, &public_parameters(&launched[0]));
}

#[test]
fn a_refresh_at_vv_shows_neither_the_old_nor_the_new_tokens() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let log = env.dir.path().join("browser.log");
    let mut args = authcode_args(&bed);
    args.push("--cache-storage=disk".into());
    env.kubecred_owned(&args)
        .env("TESTBED_BROWSER_LOG", &log)
        .run()
        .success();
    expire_cached_tokens(&env.cache_dir());
    let before = CachedTokens::read(&env.cache_dir());

    args.push("-vv".into());
    let run = env
        .kubecred_owned(&args)
        .env("TESTBED_BROWSER_LOG", &log)
        .run()
        .success();
    assert_verbose(&run);
    let stats = bed.stats();
    assert_eq!(stats["token"]["refresh_token"], 1, "one refresh: {stats}");
    assert_eq!(
        stats["token"]["authorization_code"], 1,
        "no new login: {stats}"
    );
    assert_eq!(browser_launches(&log), 1, "no browser for a refresh");

    let after = CachedTokens::read(&env.cache_dir());
    // The ID token is not in the list: issued within the same second as the first one, it has
    // the same claims and (RS256 being deterministic) the same signature.
    for key in ["access_token", "refresh_token"] {
        assert_ne!(
            before.get(key),
            after.get(key),
            "the refresh replaced the {key}"
        );
    }
    let old = before
        .all
        .iter()
        .map(|(k, v)| (format!("old {k}"), v.clone()));
    let new = after
        .all
        .iter()
        .map(|(k, v)| (format!("new {k}"), v.clone()));
    let secrets: Vec<(String, String)> = old.chain(new).collect();
    let named = || secrets.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    assert_not_on_stderr(&run, named());
    assert_stdout_is_the_credential(&run, &after.get("id_token"), named());
    assert_no_unexplained_opaque_value(&run, &[]);
}

#[test]
fn a_device_flow_login_at_vv_shows_the_user_code_but_no_device_code_or_token() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let log = env.dir.path().join("browser.log");
    let run = env
        .kubecred(&[
            "get-token",
            &format!("--issuer-url={}", bed.issuer),
            &format!("--client-id={PUBLIC_CLIENT}"),
            "--grant-type=device-code",
            &format!("--browser-command={}", browser_command()),
            "--cache-storage=disk",
            "-vv",
        ])
        .env("TESTBED_BROWSER_LOG", &log)
        .run()
        .success();
    assert_verbose(&run);
    let stderr = run.stderr();

    let cached = CachedTokens::read(&env.cache_dir());
    assert_only_the_credential_shows(&run, &cached);

    // The user code is meant to be shown, in the verification URL the browser got.
    let launched = launched_urls(&log);
    assert_eq!(launched.len(), 1, "one browser launch: {launched:?}");
    let verification = url::Url::parse(&launched[0]).unwrap();
    let parameters: Vec<(String, String)> = verification.query_pairs().into_owned().collect();
    assert!(
        parameters.len() == 1 && parameters[0].0 == "user_code",
        "the verification URL carries the user code only: {verification}"
    );
    let user_code = &parameters[0].1;
    assert!(
        stderr.contains(user_code.as_str()),
        "the user code is shown\n{stderr}"
    );

    // The device code is never shown: no value of its shape in the text, and the QR code is
    // that of the verification URL.
    assert_no_unexplained_opaque_value(&run, &[]);
    let cells = qr_cells(&stderr).unwrap_or_else(|| panic!("a QR code on stderr\n{stderr}"));
    assert!(
        qr_encodes(&cells, verification.as_str()),
        "the QR code is that of {verification}\n{stderr}"
    );
}

#[test]
fn a_refused_refresh_then_a_timed_out_login_at_vv_shows_no_token() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = authcode_args(&bed);
    args.push("--cache-storage=disk".into());
    env.kubecred_owned(&args).run().success();
    expire_cached_tokens(&env.cache_dir());
    let before = CachedTokens::read(&env.cache_dir());

    bed.configure(serde_json::json!({"refreshError": "invalid_grant"}));
    bed.reset_stats();
    args.retain(|arg| !arg.starts_with("--browser-command"));
    args.push("--skip-open-browser".into());
    args.push("--auth-timeout=2s".into());
    args.push("-vv".into());
    let run = env
        .kubecred_owned(&args)
        .run()
        .failure(4)
        .stderr_contains("no login completed within 2s");
    assert_verbose(&run);
    let stats = bed.stats();
    assert_eq!(
        stats["token"]["refresh_token"], 1,
        "the refresh token was sent: {stats}"
    );
    assert_not_on_stderr(
        &run,
        before.all.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    // The login URL it printed carries only public parameters.
    let stderr = run.stderr();
    let url = stderr
        .split_whitespace()
        .find(|word| word.starts_with("http") && word.contains("code_challenge="))
        .unwrap_or_else(|| panic!("the login URL on stderr\n{stderr}"));
    assert_no_unexplained_opaque_value(&run, &public_parameters(url));
    assert!(before.values().all(|secret| !run.stdout().contains(secret)));
}
