//! The background renewal of refresh-ahead, held to the foreground's standard, through the real
//! binary against the test provider: one detached renewal for many hits; never a login (a
//! refresh token the keyring lost means nothing to do); never a failure kubectl sees while the
//! cached token is valid (a refused refresh token is sent once, dropped, and the token handed
//! out); a back-off after a failure (a few attempts, not one per hit); no handle of kubectl's
//! held; `renew-ahead` refused unless it is handed the entry's lock.

use crate::sessions::kubecred_plain;
use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits until no renewal holds the entry's lock and none of this test's renewals is still a
/// process: a renewal that went on (for a login, say) would be both.
fn wait_for_renewals_to_end(env: &TestEnv) {
    wait_until(
        "the background renewal to end",
        Duration::from_secs(30),
        || !an_entry_lock_is_held(&env.cache_dir()) && renewal_processes(&env.cache_dir()) == 0,
    );
}

/// Running `kubecred renew-ahead` processes whose command line names `cache_dir`.
fn renewal_processes(cache_dir: &Path) -> usize {
    let cache_dir = cache_dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(" renew-ahead ") && cmdline.contains(&cache_dir))
        .count()
}

fn status_json(env: &TestEnv) -> Value {
    let run = kubecred_plain(env, &["status", "--output=json"])
        .run()
        .success();
    serde_json::from_str(&run.stdout()).unwrap_or_else(|err| panic!("{err}\n{}", run.stdout()))
}

fn status_table(env: &TestEnv) -> String {
    kubecred_plain(env, &["status"]).run().success().stdout()
}

/// A browser login whose tokens live `ttl` seconds, with a window that opens a second after it
/// and `--min-validity=5s`; returns the arguments (browser launches logged to `log`) and the
/// ID token.
fn logged_in(env: &TestEnv, bed: &Testbed, storage: &str, log: &Path) -> (Vec<String>, String) {
    let mut args = authcode_args(bed);
    args.extend([
        format!("--cache-storage={storage}"),
        "--min-validity=5s".into(),
        "--refresh-ahead=59s".into(),
    ]);
    let token = env
        .kubecred_owned(&args)
        .env("TESTBED_BROWSER_LOG", log)
        .run()
        .success()
        .token();
    assert_eq!(browser_launches(log), 1);
    std::thread::sleep(Duration::from_millis(1500));
    (args, token)
}

/// A hit in the window: exit 0, the cached token, nothing on stderr.
#[track_caller]
fn window_hit(env: &TestEnv, args: &[String], log: &Path, token: &str) {
    let hit = env
        .kubecred_owned(args)
        .env("TESTBED_BROWSER_LOG", log)
        .run()
        .success();
    assert_eq!(hit.token(), token);
    assert_eq!(
        hit.stderr(),
        "",
        "nothing of the background on kubectl's stderr"
    );
}

/// Client credentials whose 60 s tokens (the test bed's `clientCredentialsTtl`) are in the
/// refresh-ahead window a second after they are issued (`--refresh-ahead=59s`,
/// `--min-validity=5s`): the arguments and the cached token, once the window is open.
fn cc_in_the_window(env: &TestEnv, bed: &Testbed) -> (Vec<String>, String) {
    let mut args = env.cc_args(bed);
    args.extend(["--min-validity=5s".into(), "--refresh-ahead=59s".into()]);
    let token = env.kubecred_owned(&args).run().success().token();
    std::thread::sleep(Duration::from_millis(1500));
    (args, token)
}

#[test]
fn a_window_hit_whose_refresh_token_the_keyring_lost_starts_no_login() {
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"idTokenTtl": 60}));
    let log = env.dir.path().join("browser.log");
    let (args, token) = logged_in(&env, &bed, "auto", &log);
    let entry = entry_bytes(&env.cache_dir());
    let key = cache_token_files(&env.cache_dir())[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // Deleted by hand from the Secret Service: the entry still says it is there.
    let cleared = std::process::Command::new("secret-tool")
        .args([
            "clear",
            "service",
            "kubecred",
            "username",
            &format!("{key}:refresh"),
        ])
        .status()
        .expect("secret-tool (Debian's libsecret-tools; scripts/test.sh installs it)");
    assert!(cleared.success());
    bed.reset_stats();

    for _ in 0..5 {
        window_hit(&env, &args, &log, &token);
        wait_for_renewals_to_end(&env);
    }
    let stats = bed.stats();
    assert_eq!(browser_launches(&log), 1, "no browser from the background");
    assert_eq!(stats["authorization"], 0, "{stats}");
    assert_eq!(stats["device_authorization"], 0, "{stats}");
    assert_eq!(bed.total_token_requests(), 0, "{stats}");
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    // Said where a person looks, and the next hits leave it at that.
    let failed = &status_json(&env)["entries"][0]["renewal_failed"];
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("refresh token is not in the OS keyring reachable here"),
        "{failed}"
    );
    assert_eq!(failed["attempts"], 1, "one renewal for five hits: {failed}");
    assert_eq!(failed["retry_at"], Value::Null, "{failed}");
    assert!(
        status_table(&env).contains("not retried in the background for this token"),
        "{}",
        status_table(&env)
    );
    env.kubecred_owned(&with_flag(&args, "-v"))
        .run()
        .success()
        .stderr_contains("not again for this token");

    // Another session, where no Secret Service is reachable at all (an SSH login whose keyring is
    // the desktop's): the same, without a word on stderr.
    let other = TestEnv::new();
    let mut moved = args.clone();
    moved.retain(|arg| !arg.starts_with("--cache-dir"));
    moved.push(format!("--cache-dir={}", env.cache_dir().display()));
    let hit = other
        .kubecred_owned(&moved)
        .env("TESTBED_BROWSER_LOG", &log)
        .run()
        .success();
    assert_eq!(hit.token(), token);
    assert_eq!(hit.stderr(), "");
    wait_for_renewals_to_end(&env);
    assert_eq!(browser_launches(&log), 1);
    assert_eq!(bed.total_token_requests(), 0);
}

#[test]
fn a_window_hit_without_a_reachable_keyring_starts_no_login() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"idTokenTtl": 60}));
    let env = TestEnv::new();
    let log = env.dir.path().join("browser.log");
    let (args, token) = logged_in(&env, &bed, "disk", &log);
    // What an entry written where a keyring was (the kernel keyring of an earlier SSH session)
    // says: its refresh token is in a keyring store, and not in the file. None is reachable here.
    let file = &cache_token_files(&env.cache_dir())[0];
    let mut entry: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(entry["refresh"]["in"], "entry", "{entry}");
    entry["refresh"] = json!({"in": "keyring", "store": "keyutils"});
    std::fs::write(file, serde_json::to_vec(&entry).unwrap()).unwrap();
    let entry = entry_bytes(&env.cache_dir());
    bed.reset_stats();

    for _ in 0..5 {
        window_hit(&env, &args, &log, &token);
        wait_for_renewals_to_end(&env);
    }
    assert_eq!(browser_launches(&log), 1, "no browser from the background");
    assert_eq!(bed.stats()["authorization"], 0);
    assert_eq!(bed.total_token_requests(), 0);
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    assert_eq!(
        status_json(&env)["entries"][0]["renewal_failed"]["attempts"],
        1
    );
}

#[test]
fn hits_keep_answering_while_a_refused_refresh_token_s_token_is_valid() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"idTokenTtl": 60}));
    let env = TestEnv::new();
    let log = env.dir.path().join("browser.log");
    let (args, token) = logged_in(&env, &bed, "disk", &log);
    bed.configure(json!({"refreshError": "invalid_grant"}));
    bed.reset_stats();

    // Twenty hits in the window, each one after the renewals before it are over.
    for _ in 0..20 {
        window_hit(&env, &args, &log, &token);
        std::thread::sleep(Duration::from_millis(150));
    }
    wait_for_renewals_to_end(&env);
    let stats = bed.stats();
    assert_eq!(
        stats["token"]["refresh_token"], 1,
        "the refused refresh token is sent once: {stats}"
    );
    assert_eq!(stats["authorization"], 0, "{stats}");
    assert_eq!(browser_launches(&log), 1, "no browser from the background");
    // Through kubectl too, with no cool-down and no failure while the token is valid.
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    for _ in 0..3 {
        env.kubectl(&kubeconfig, &["auth", "whoami"])
            .env("TESTBED_BROWSER_LOG", &log)
            .run()
            .success()
            .stdout_contains("alice");
    }
    assert_eq!(bed.stats()["token"]["refresh_token"], 1);
    // The entry dropped the dead refresh token; status says why a login will be needed.
    let status = status_json(&env);
    let entry = &status["entries"][0];
    assert_eq!(entry["refresh_token"], false, "{entry}");
    assert!(
        entry["refresh_refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("invalid_grant"),
        "{entry}"
    );
    assert!(
        status_table(&env).contains("refused the refresh token"),
        "{}",
        status_table(&env)
    );
}

#[test]
fn after_an_outage_renewals_back_off_instead_of_one_per_hit() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    let (args, token) = cc_in_the_window(&env, &bed);
    bed.configure(json!({"tokenError": "temporarily_unavailable"}));
    bed.reset_stats();

    // The first hit's renewal fails after its retries (503 is worth a retry).
    env.kubecred_owned(&args).run().success();
    wait_for_renewals_to_end(&env);
    let one_attempt = bed.token_requests("client_credentials");
    assert!(one_attempt >= 1);
    let failed = &status_json(&env)["entries"][0]["renewal_failed"];
    assert_eq!(failed["attempts"], 1, "{failed}");
    assert!(failed["retry_at"].is_string(), "retried later: {failed}");

    // Twenty hits before the back-off runs out: none starts a renewal.
    let hits: Vec<_> = (0..20).map(|_| env.kubecred_owned(&args)).collect();
    for stdout in run_all_at_once(hits) {
        assert!(stdout.contains(&token));
    }
    wait_for_renewals_to_end(&env);
    assert_eq!(bed.token_requests("client_credentials"), one_attempt);
    env.kubecred_owned(&with_flag(&args, "-v"))
        .run()
        .success()
        .stderr_contains("the next try after");

    // The provider is back: after the back-off, a hit's renewal succeeds and the note goes.
    bed.configure(json!({"tokenError": null}));
    let retry_at: chrono::DateTime<chrono::Utc> = serde_json::from_value(
        status_json(&env)["entries"][0]["renewal_failed"]["retry_at"].clone(),
    )
    .unwrap();
    let wait = (retry_at - chrono::Utc::now()).to_std().unwrap_or_default();
    std::thread::sleep(wait + Duration::from_millis(200));
    env.kubecred_owned(&args).run().success();
    wait_for_renewals_to_end(&env);
    assert_ne!(
        env.kubecred_owned(&with_flag(&args, "--refresh-ahead=0"))
            .run()
            .success()
            .token(),
        token,
        "renewed"
    );
    assert_eq!(
        status_json(&env)["entries"][0]["renewal_failed"],
        Value::Null
    );
}

#[test]
fn a_refused_client_is_asked_once_for_these_tokens() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    let (args, token) = cc_in_the_window(&env, &bed);
    let entry = entry_bytes(&env.cache_dir());
    bed.configure(json!({"tokenError": "invalid_client"}));
    bed.reset_stats();
    for _ in 0..20 {
        let hit = env.kubecred_owned(&args).run().success();
        assert_eq!(hit.token(), token);
        assert_eq!(hit.stderr(), "");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_renewals_to_end(&env);
    assert_eq!(bed.token_requests("client_credentials"), 1);
    assert_eq!(entry_bytes(&env.cache_dir()), entry, "the entry changed");
    assert!(
        status_table(&env).contains("not retried in the background for this token"),
        "{}",
        status_table(&env)
    );
    // When the token is too short for a hit, the foreground asks and says what is wrong.
    env.kubecred_owned(&with_flag(&args, "--min-validity=59s"))
        .run()
        .failure(3)
        .stderr_contains("invalid_client");
    // Fixed: the foreground's new token clears the note.
    bed.configure(json!({"tokenError": null}));
    env.kubecred_owned(&with_flag(&args, "--min-validity=59s"))
        .run()
        .success();
    assert_eq!(
        status_json(&env)["entries"][0]["renewal_failed"],
        Value::Null
    );
}

#[test]
fn twenty_hits_in_the_window_start_one_renewal_that_outlives_kubectl() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    let (args, first) = cc_in_the_window(&env, &bed);
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    let entry = entry_bytes(&env.cache_dir());

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
    assert_eq!(renewal_processes(&env.cache_dir()), 1, "one renewal");
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
fn the_renewal_holds_no_descriptor_of_kubectl_s() {
    let bed = Testbed::start_with(json!({"clientCredentialsTtl": 60}));
    let env = TestEnv::new();
    let (args, _) = cc_in_the_window(&env, &bed);
    bed.configure(json!({"tokenDelayMs": 8000}));
    // The hit gets a pipe on descriptor 5 without close-on-exec, as a careless caller leaves
    // one: the renewal must not keep it open (a reader of that pipe would wait for it).
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg("exec 5>&1; exec \"$@\" >/dev/null 2>/dev/null </dev/null")
        .arg("sh")
        .arg(kubecred_bin());
    command.args(&args).args([
        format!("--cache-dir={}", env.cache_dir().display()),
        "--cache-storage=disk".into(),
    ]);
    command
        .env_clear()
        .env("HOME", env.home())
        .env("PATH", std::env::var("PATH").unwrap());
    let started = Instant::now();
    let run = run_bounded(&mut command, Duration::from_secs(30));
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "reading the pipe to its end waited for the renewal: {:?}",
        started.elapsed()
    );
    assert_eq!(
        renewal_processes(&env.cache_dir()),
        1,
        "the renewal still runs"
    );
    wait_for_renewals_to_end(&env);
}

#[test]
fn renew_ahead_refuses_a_descriptor_that_is_not_the_entry_lock() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args).run().success();
    let mut renew = args.clone();
    renew[0] = "renew-ahead".into();
    for fd in ["0", "2", "9"] {
        env.kubecred_owned(&with_flag(&renew, &format!("--lock-fd={fd}")))
            .run()
            .failure(2)
            .stderr_contains("is not this entry's lock")
            .stderr_contains("not a command to run by hand");
    }
    // A file that is open, but another one.
    let other = env.dir.path().join("other");
    std::fs::write(&other, b"").unwrap();
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg("exec \"$@\" 7<\"$OTHER\"")
        .arg("sh")
        .arg(kubecred_bin())
        .args(with_flag(&renew, "--lock-fd=7"))
        .args([
            format!("--cache-dir={}", env.cache_dir().display()),
            "--cache-storage=disk".into(),
        ])
        .env_clear()
        .env("OTHER", &other)
        .env("HOME", env.home());
    run_bounded(&mut command, Duration::from_secs(10))
        .failure(2)
        .stderr_contains("not the lock file");
    assert_eq!(
        bed.token_requests("client_credentials"),
        1,
        "nothing renewed"
    );
}
