//! Every arm of the miss path, plain and shared, against a loopback provider of canned answers
//! (`http::test_server`), a cache in a temporary directory and a fixed clock; the person is
//! nobody (a CI job: `presence::callers::ci`), so a login that needs one is refused by the
//! preflight before any request, which is how these tests see that the miss went on to log in.
//! Access tokens are the credential (`--use-access-token`): no ID token to sign.

use super::super::source::Sourced;
use super::*;
use crate::cache::{EntryAbout, TokenCache};
use crate::clock::FixedClock;
use crate::error::{exit_code_of, is_transient, one_line};
use crate::http::test_server::{Answer, TestServer};
use crate::presence::callers::ci;
use crate::secret::Secret;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

pub(in crate::acquire) const TOKEN: &str = "/token";

/// A provider on loopback and a cache directory.
pub(in crate::acquire) struct Bed {
    pub(in crate::acquire) server: TestServer,
    dir: tempfile::TempDir,
    pub(in crate::acquire) clock: FixedClock,
}

pub(in crate::acquire) fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap()
}

impl Bed {
    pub(in crate::acquire) fn new() -> Bed {
        let server = TestServer::start();
        let base = server.base.clone();
        server.answer(
            "/.well-known/openid-configuration",
            Answer::json(
                json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/auth"),
                    "token_endpoint": format!("{base}{TOKEN}"),
                    "jwks_uri": format!("{base}/jwks"),
                })
                .to_string(),
            ),
        );
        Bed {
            server,
            dir: tempfile::tempdir().unwrap(),
            clock: FixedClock::at(start()),
        }
    }

    /// The settings of a kubectl user of this provider, with `flags` more.
    pub(in crate::acquire) fn config(&self, flags: &[&str]) -> Config {
        let issuer = format!("--issuer-url={}", self.server.base);
        let mut all = vec![issuer.as_str(), "--use-access-token"];
        all.extend(flags);
        super::super::tests::config_with(self.dir.path(), &all)
    }

    /// The provider's token endpoint answers these in turn (the last repeats).
    pub(in crate::acquire) fn answers(&self, answers: Vec<Answer>) {
        self.server.answer_in_turn(TOKEN, answers);
    }

    /// The `grant_type` of each token request so far.
    pub(in crate::acquire) fn grants(&self) -> Vec<String> {
        self.server
            .bodies(TOKEN)
            .iter()
            .map(|body| {
                url::form_urlencoded::parse(body.as_bytes())
                    .find(|(name, _)| name == "grant_type")
                    .map(|(_, value)| value.into_owned())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The miss of `config` for `occasion`, as a CI job meets it.
    pub(in crate::acquire) fn miss(
        &self,
        config: &Config,
        occasion: Occasion,
    ) -> anyhow::Result<Tokens> {
        let Sourced { cache, source } = Source::of(config);
        obtain_under_lock(config, &cache, &source, occasion, &ci(), &self.clock)
    }
}

/// Tokens obtained `age` seconds before the start, living an hour, with a refresh token.
pub(in crate::acquire) fn hour_tokens(access: &str, refresh: Option<&str>, age: i64) -> Tokens {
    let obtained = start() - chrono::Duration::seconds(age);
    Tokens {
        id_token: None,
        id_token_expiry: None,
        access_token: Some(Secret::new(access)),
        access_token_expiry: Some(obtained + chrono::Duration::hours(1)),
        refresh_token: refresh.map(Secret::new),
        obtained_at: obtained,
        identity: None,
        granted_scope: None,
    }
}

pub(in crate::acquire) fn save(cache: &TokenCache, tokens: &Tokens) {
    cache
        .save(
            tokens,
            &cache.lock(std::time::Duration::from_secs(5)).unwrap(),
        )
        .unwrap();
}

/// Seeds `config`'s own entry (a shared login's cluster: its derived entry).
pub(in crate::acquire) fn seed(config: &Config, tokens: &Tokens) {
    save(&Source::of(config).cache, tokens);
}

/// Seeds a shared login's entry, recording `granted` as what its login holds.
pub(in crate::acquire) fn seed_login(config: &Config, tokens: &Tokens, granted: &[&str]) {
    let Source::SharedLogin { login, .. } = Source::of(config).source else {
        panic!("not a shared login's settings");
    };
    let record = login.record().unwrap();
    login.set_record(EntryAbout {
        granted: Some(granted.iter().map(|t| t.to_string()).collect()),
        ..record
    });
    save(&login, tokens);
}

pub(in crate::acquire) fn cached(config: &Config) -> Option<Tokens> {
    Source::of(config)
        .cache
        .load()
        .unwrap()
        .map(|cached| cached.tokens)
}

pub(in crate::acquire) fn login_entry(config: &Config) -> Option<crate::cache::Cached> {
    let Source::SharedLogin { login, .. } = Source::of(config).source else {
        panic!("not a shared login's settings");
    };
    login.load().unwrap()
}

pub(in crate::acquire) fn access(tokens: &Tokens) -> &str {
    tokens.access_token.as_ref().unwrap().expose()
}

/// A token answer with an access token, and a refresh token when given.
pub(in crate::acquire) fn answer(access: &str, refresh: Option<&str>) -> Answer {
    let mut body = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
    if let Some(refresh) = refresh {
        body["refresh_token"] = json!(refresh);
    }
    Answer::json(body.to_string())
}

pub(in crate::acquire) fn refused(error: &str) -> Answer {
    Answer::with(400, json!({"error": error}).to_string())
        .header("Content-Type", "application/json")
}

/// An unsigned JWT access token for `aud` (the shared login checks the audience, unverified).
pub(in crate::acquire) fn jwt_for(aud: &str) -> String {
    use base64::Engine;
    let encode = |value: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    };
    let exp = (start() + chrono::Duration::hours(1)).timestamp();
    format!(
        "{}.{}.sig",
        encode(json!({"alg": "RS256"})),
        encode(json!({"aud": aud, "exp": exp, "sub": "ada"}))
    )
}

/// The preflight's refusal where nobody is here: how the tests see that the miss logged in.
#[track_caller]
fn assert_went_on_to_log_in(outcome: anyhow::Result<Tokens>) {
    let err = outcome.unwrap_err();
    assert!(
        one_line(&err).contains("--grant-type auto will not open a browser"),
        "{}",
        one_line(&err)
    );
    assert_eq!(exit_code_of(&err), Exit::Login);
    assert!(is_transient(&err));
}

// ---- an entry of its own ----

#[test]
fn a_fresh_token_another_run_saved_is_taken_without_a_request() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("fresh", Some("rt"), 0));
    assert_eq!(
        access(&bed.miss(&config, Occasion::Expired).unwrap()),
        "fresh"
    );
    assert_eq!(bed.server.hits(TOKEN), 0);
    // A forced run takes it only when it was obtained after the run started: N parallel
    // --force-refresh runs make one request. One obtained before is refreshed.
    bed.answers(vec![answer("renewed", Some("rt2"))]);
    seed(&config, &hour_tokens("older", Some("rt"), 1));
    assert_eq!(
        access(&bed.miss(&config, Occasion::ForceRefresh).unwrap()),
        "renewed"
    );
    assert_eq!(bed.grants(), ["refresh_token"]);
}

#[test]
fn an_expired_token_is_refreshed_and_the_rotated_refresh_token_kept() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("old", Some("rt1"), 3600));
    bed.answers(vec![answer("new", Some("rt2"))]);
    let tokens = bed.miss(&config, Occasion::Expired).unwrap();
    assert_eq!(access(&tokens), "new");
    let kept = cached(&config).unwrap();
    assert_eq!(access(&kept), "new");
    assert_eq!(kept.refresh_token.unwrap().expose(), "rt2");
    assert_eq!(bed.grants(), ["refresh_token"]);
    assert!(bed.server.bodies(TOKEN)[0].contains("refresh_token=rt1"));
}

#[test]
fn without_a_refresh_token_a_grant_that_needs_nobody_runs() {
    let bed = Bed::new();
    let config = bed.config(&["--grant-type=client-credentials", "--client-secret=s"]);
    bed.answers(vec![answer("machine", None)]);
    assert_eq!(
        access(&bed.miss(&config, Occasion::Expired).unwrap()),
        "machine"
    );
    assert_eq!(bed.grants(), ["client_credentials"]);
    assert_eq!(access(&cached(&config).unwrap()), "machine");
}

#[test]
fn without_a_refresh_token_a_person_logs_in() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("old", None, 3600));
    assert_went_on_to_log_in(bed.miss(&config, Occasion::Expired));
    assert_eq!(bed.server.hits(TOKEN), 0);
    // The entry is as it was.
    assert_eq!(access(&cached(&config).unwrap()), "old");
}

#[test]
fn kubecred_login_logs_in_without_refreshing() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("fresh", Some("rt"), 1));
    assert_went_on_to_log_in(bed.miss(&config, Occasion::Login));
    assert_eq!(bed.server.hits(TOKEN), 0, "no refresh before the login");
    // A grant that needs nobody runs anew, fresh token or not.
    let machine = bed.config(&["--grant-type=client-credentials", "--client-secret=s"]);
    seed(&machine, &hour_tokens("fresh", None, 1));
    bed.answers(vec![answer("anew", None)]);
    assert_eq!(
        access(&bed.miss(&machine, Occasion::Login).unwrap()),
        "anew"
    );
    assert_eq!(bed.grants(), ["client_credentials"]);
}

#[test]
fn a_refused_refresh_token_hands_out_the_valid_token_and_is_dropped_and_noted() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    // Valid for 50 s more: less than --min-validity (60 s), so the run refreshes.
    let mut tokens = hour_tokens("still-valid", Some("rt"), 3600 - 50);
    tokens.access_token_expiry = Some(start() + chrono::Duration::seconds(50));
    seed(&config, &tokens);
    bed.answers(vec![refused("invalid_grant")]);
    let handed = bed.miss(&config, Occasion::Expired).unwrap();
    assert_eq!(access(&handed), "still-valid");
    assert!(handed.refresh_token.is_none());
    let kept = Source::of(&config).cache.load().unwrap().unwrap();
    assert!(!kept.has_refresh_token(), "never sent again");
    assert_eq!(access(&kept.tokens), "still-valid");
    let state = Source::of(&config)
        .cache
        .state(Some(kept.tokens.obtained_at));
    assert!(
        state
            .refresh_refused
            .unwrap()
            .reason
            .contains("invalid_grant")
    );
    // The next miss hands it out again from the note, with no request.
    assert_eq!(
        access(&bed.miss(&config, Occasion::Expired).unwrap()),
        "still-valid"
    );
    assert_eq!(bed.server.hits(TOKEN), 1);
    // Forced, it is not handed out: a login follows.
    assert_went_on_to_log_in(bed.miss(&config, Occasion::ForceRefresh));
}

#[test]
fn a_refused_refresh_token_with_nothing_usable_left_removes_the_entry_then_logs_in() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("expired", Some("rt"), 7200));
    bed.answers(vec![refused("invalid_grant")]);
    assert_went_on_to_log_in(bed.miss(&config, Occasion::Expired));
    assert!(cached(&config).is_none(), "a dead entry is removed");
}

#[test]
fn another_refusal_fails_the_miss_and_leaves_the_entry_as_it_was() {
    let bed = Bed::new();
    let config = bed.config(&[]);
    seed(&config, &hour_tokens("old", Some("rt"), 3600));
    bed.answers(vec![
        Answer::with(400, "{\"error\":\"invalid_client\"}")
            .header("Content-Type", "application/json"),
    ]);
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    let kept = Source::of(&config).cache.load().unwrap().unwrap();
    assert!(kept.has_refresh_token());
    assert_eq!(access(&kept.tokens), "old");
}

#[test]
fn a_failed_login_holds_the_next_off_unless_forced() {
    let bed = Bed::new();
    let config = bed.config(&["--grant-type=device-code"]);
    let cache = Source::of(&config).cache;
    let lock = cache.lock(std::time::Duration::from_secs(5)).unwrap();
    cache.update_state(&lock, |state| {
        state.login_failed = Some(crate::cache::Note::new(
            "access_denied",
            start() - chrono::Duration::seconds(5),
        ));
    });
    drop(lock);
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert!(
        one_line(&err).starts_with("a login for this cluster failed 5s ago (access_denied); not opening another browser for 25s"),
        "{}",
        one_line(&err)
    );
    assert_eq!(bed.server.hits("/.well-known/openid-configuration"), 0);
}

// ---- a shared login's cluster ----

pub(in crate::acquire) const A: &str = "https://a.example";
const B: &str = "https://b.example";

pub(in crate::acquire) fn cluster(bed: &Bed, target: &str, more: &[&str]) -> Config {
    let resource = format!("--resource={target}");
    let mut flags = vec!["--shared-login", resource.as_str()];
    flags.extend(more);
    bed.config(&flags)
}

#[test]
fn a_clusters_token_is_derived_from_the_login_which_keeps_its_rotated_refresh_token() {
    let bed = Bed::new();
    let config = cluster(&bed, A, &[]);
    seed_login(&config, &hour_tokens("login", Some("rt1"), 3600), &[A]);
    let derived = jwt_for(A);
    bed.answers(vec![answer(&derived, Some("rt2"))]);
    let tokens = bed.miss(&config, Occasion::Expired).unwrap();
    assert_eq!(access(&tokens), derived);
    assert!(
        tokens.refresh_token.is_none(),
        "the derived entry renews nothing"
    );
    assert_eq!(access(&cached(&config).unwrap()), derived);
    let login = login_entry(&config).unwrap();
    assert_eq!(login.tokens.refresh_token.unwrap().expose(), "rt2");
    assert_eq!(login.about.granted.as_deref(), Some(&[A.to_string()][..]));
    let body = &bed.server.bodies(TOKEN)[0];
    assert!(
        body.contains("grant_type=refresh_token")
            && body.contains("resource=https%3A%2F%2Fa.example"),
        "{body}"
    );
}

#[test]
fn a_target_the_login_was_not_granted_is_refused_without_a_request() {
    let bed = Bed::new();
    let config = cluster(&bed, B, &[]);
    seed_login(&config, &hour_tokens("login", Some("rt"), 0), &[A]);
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert!(
        one_line(&err)
            .contains("was not granted resource https://b.example (it holds https://a.example)"),
        "{}",
        one_line(&err)
    );
    assert_eq!(
        bed.server.hits(TOKEN),
        0,
        "the login's refresh token is not spent"
    );
    // Asked for by --login-resource now: one more login, for every cluster.
    let asking = cluster(
        &bed,
        B,
        &["--login-resource=https://a.example,https://b.example"],
    );
    assert_went_on_to_log_in(bed.miss(&asking, Occasion::Expired));
}

#[test]
fn a_target_the_provider_stopped_granting_is_recorded_and_not_asked_again() {
    let bed = Bed::new();
    let config = cluster(&bed, B, &[]);
    seed_login(&config, &hour_tokens("login", Some("rt"), 3600), &[A, B]);
    bed.answers(vec![refused("invalid_target")]);
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert!(
        one_line(&err)
            .contains("refused to refresh the shared login for resource https://b.example"),
        "{}",
        one_line(&err)
    );
    let login = login_entry(&config).unwrap();
    assert_eq!(
        login.about.refused_targets.as_deref(),
        Some(&[B.to_string()][..])
    );
    assert_eq!(
        login.tokens.refresh_token.unwrap().expose(),
        "rt",
        "kept with the one sent"
    );
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert!(one_line(&err).contains("no longer serves resource https://b.example"));
    assert_eq!(bed.server.hits(TOKEN), 1, "not asked again");
}

#[test]
fn a_token_for_another_audience_is_not_cached_for_the_cluster() {
    let bed = Bed::new();
    let config = cluster(&bed, A, &[]);
    seed_login(&config, &hour_tokens("login", Some("rt1"), 3600), &[A]);
    bed.answers(vec![answer(&jwt_for("https://default"), Some("rt2"))]);
    let err = bed.miss(&config, Occasion::Expired).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    assert!(cached(&config).is_none());
    // The rotated refresh token was saved before the derived token was looked at.
    let login = login_entry(&config).unwrap();
    assert_eq!(login.tokens.refresh_token.unwrap().expose(), "rt2");
}

#[test]
fn no_shared_login_yet_means_a_login() {
    let bed = Bed::new();
    let config = cluster(&bed, A, &[]);
    assert_went_on_to_log_in(bed.miss(&config, Occasion::Expired));
    assert_eq!(bed.server.hits(TOKEN), 0);
}

#[test]
fn a_refused_shared_login_leaves_the_cluster_its_valid_token() {
    let bed = Bed::new();
    let config = cluster(&bed, A, &[]);
    seed_login(&config, &hour_tokens("login", Some("rt"), 3600), &[A]);
    let mut derived = hour_tokens(&jwt_for(A), None, 3600 - 50);
    derived.access_token_expiry = Some(start() + chrono::Duration::seconds(50));
    seed(&config, &derived);
    bed.answers(vec![refused("invalid_grant")]);
    let handed = bed.miss(&config, Occasion::Expired).unwrap();
    assert_eq!(access(&handed), jwt_for(A));
    // The login's entry stays (its other clusters' tokens are theirs), its refresh token gone.
    let login = login_entry(&config).unwrap();
    assert!(!login.has_refresh_token());
}

#[test]
fn token_exchange_derives_from_the_logins_fresh_access_token_without_a_refresh() {
    let bed = Bed::new();
    let config = cluster(&bed, A, &["--derive=token-exchange"]);
    seed_login(&config, &hour_tokens("login-access", Some("rt"), 0), &[]);
    bed.answers(vec![Answer::json(
        json!({
            "access_token": jwt_for(A),
            "issued_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_type": "N_A",
            "expires_in": 3600,
        })
        .to_string(),
    )]);
    assert_eq!(
        access(&bed.miss(&config, Occasion::Expired).unwrap()),
        jwt_for(A)
    );
    assert_eq!(
        bed.grants(),
        ["urn:ietf:params:oauth:grant-type:token-exchange"]
    );
    assert!(bed.server.bodies(TOKEN)[0].contains("subject_token=login-access"));
}
