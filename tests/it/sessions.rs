//! Sessions against the real test provider: `kubecred status` lists every cached entry (table
//! and JSON) without a token in it, `--account` keeps separate entries, and `kubecred logout`
//! revokes the refresh token (RFC 7009: the provider's introspection then calls it inactive),
//! leaves no copy of a token under the cache dir, and still forgets the entry when the provider
//! cannot be reached; without a match it lists the issuer's cached logins and how they differ.
//! The issuer is shown as it was written, byte for byte, everywhere.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

const CONFIDENTIAL_CLIENT: &str = "kubecred-confidential";
const CONFIDENTIAL_SECRET: &str = "testbed-confidential-secret";

/// Every file under `dir`, recursively, as text (lossy: a token is ASCII).
fn every_file_text(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(every_file_text(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    found
}

/// `kubecred <args>` in the test's world and cache dir, without the token commands'
/// `--cache-storage` that `TestEnv::kubecred` adds (status, completion and man have none).
pub(crate) fn kubecred_plain(env: &TestEnv, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(kubecred_bin());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .env("KUBECRED_CACHE_DIR", env.cache_dir())
        .stdin(std::process::Stdio::null())
        .args(args);
    cmd
}

fn status_json(env: &TestEnv) -> Value {
    let run = kubecred_plain(env, &["status", "--output=json"])
        .run()
        .success();
    serde_json::from_str(&run.stdout()).unwrap_or_else(|err| panic!("{err}\n{}", run.stdout()))
}

#[test]
fn two_accounts_keep_two_entries_and_status_lists_both_then_logout_all_forgets_them() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut tokens = Vec::new();
    for account in ["ci-a", "ci-b"] {
        let mut args = env.cc_args(&bed);
        args.push(format!("--account={account}"));
        tokens.push(env.kubecred_owned(&args).run().success().token());
    }
    // Separate entries: each account got its own token request and its own file.
    assert_eq!(bed.token_requests("client_credentials"), 2);
    assert_eq!(cache_token_files(&env.cache_dir()).len(), 2);
    // The account also comes from the environment, and reads its own entry (a cache hit).
    let mut again = env.kubecred_owned(&env.cc_args(&bed));
    again.env("KUBECRED_ACCOUNT", "ci-b");
    assert_eq!(again.run().success().token(), tokens[1]);
    assert_eq!(bed.token_requests("client_credentials"), 2);

    let table = kubecred_plain(&env, &["status"]).run().success();
    let text = table.stdout();
    for needle in [
        "ISSUER",
        "ACCOUNT",
        "EXPIRES",
        &bed.issuer,
        CC_CLIENT,
        "ci-a",
        "ci-b",
    ] {
        assert!(text.contains(needle), "{needle:?} missing\n{text}");
    }
    let status = status_json(&env);
    let entries = status["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{status}");
    let mut accounts: Vec<&str> = entries
        .iter()
        .map(|e| e["account"].as_str().unwrap())
        .collect();
    accounts.sort();
    assert_eq!(accounts, ["ci-a", "ci-b"]);
    for entry in entries {
        // As it was written on the command line: no `/` the user never typed.
        assert_eq!(entry["issuer"].as_str(), Some(bed.issuer.as_str()));
        assert_eq!(entry["client_id"], CC_CLIENT);
        assert_eq!(entry["grant"], "client-credentials");
        assert_eq!(entry["storage"], "file");
        assert_eq!(entry["refresh_token"], false);
        assert_eq!(entry["expired"], false);
        assert!(entry["access_token_expires"].is_string(), "{entry}");
    }
    for token in &tokens {
        assert!(!text.contains(token.as_str()) && !status.to_string().contains(token.as_str()));
    }

    let logout = env.kubecred(&["logout", "--all"]).run().success();
    assert_eq!(
        logout.stderr().matches("logged out of").count(),
        2,
        "{}",
        logout.stderr()
    );
    assert!(logout.stdout().is_empty());
    assert_eq!(status_json(&env)["entries"], Value::Array(vec![]));
    assert!(cache_token_files(&env.cache_dir()).is_empty());
    kubecred_plain(&env, &["status"])
        .run()
        .success()
        .stdout_contains("no cached logins");
}

/// Asks the provider whether `token` is still active (RFC 7662), as the confidential client.
fn introspect(bed: &Testbed, token: &str) -> bool {
    let answer: Value = reqwest::blocking::Client::new()
        .post(format!("{}/token/introspection", bed.issuer))
        .basic_auth(CONFIDENTIAL_CLIENT, Some(CONFIDENTIAL_SECRET))
        .form(&[("token", token), ("token_type_hint", "refresh_token")])
        .send()
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.json())
        .expect("introspection");
    answer["active"].as_bool().expect("active in the answer")
}

#[test]
fn logout_revokes_the_refresh_token_and_leaves_no_copy_of_any_token() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let settings = |command: &str| -> Vec<String> {
        let mut args = authcode_args(&bed);
        args[0] = command.into();
        args.retain(|a| !a.starts_with("--client-id"));
        args.push(format!("--client-id={CONFIDENTIAL_CLIENT}"));
        args.push(format!("--client-secret={CONFIDENTIAL_SECRET}"));
        args
    };
    let id_token = env
        .kubecred_owned(&settings("get-token"))
        .run()
        .success()
        .token();
    let files = cache_token_files(&env.cache_dir());
    assert_eq!(files.len(), 1);
    let entry: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let refresh_token = entry["refresh"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let access_token = entry["access_token"].as_str().unwrap().to_string();
    assert!(introspect(&bed, &refresh_token), "active before logout");
    let status = status_json(&env);
    assert_eq!(status["entries"][0]["subject"], "alice@testbed.example");
    assert_eq!(status["entries"][0]["refresh_token"], true);
    // The column says what it shows: the name the token gives (here its email; its `sub` is
    // "alice"), not a SUBJECT one would take for the `sub` claim.
    let table = kubecred_plain(&env, &["status"]).run().success().stdout();
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "ISSUER", "CLIENT", "SCOPES", "ACCOUNT", "USER", "AUDIENCE", "STORAGE", "EXPIRES",
            "REFRESH"
        ],
        "{table}"
    );
    assert!(table.contains("  alice@testbed.example  "), "{table}");

    env.kubecred_owned(&settings("logout"))
        .run()
        .success()
        .stderr_contains("the refresh token is revoked")
        .never_shows(&[&refresh_token, &id_token, &access_token]);
    assert_eq!(bed.stats()["revocation"], 1);
    assert!(!introspect(&bed, &refresh_token), "revoked at the provider");
    for (path, text) in every_file_text(&env.cache_dir()) {
        for token in [&refresh_token, &id_token, &access_token] {
            assert!(
                !text.contains(token.as_str()),
                "{} keeps a token",
                path.display()
            );
        }
    }
    // A second logout finds nothing, and says so.
    env.kubecred_owned(&settings("logout"))
        .run()
        .success()
        .stderr_contains(&format!(
            "no cached login for {} ({CONFIDENTIAL_CLIENT}), nor any other for that issuer",
            bed.issuer
        ));
}

/// A provider whose discovery lists only confidential clients' methods for revocation may take
/// a public client's all the same (Keycloak does): logout still asks, and the token is revoked.
#[test]
fn logout_asks_to_revoke_where_discovery_lists_no_public_client_method() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"discoveryPatch": {
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "private_key_jwt"]
    }}));
    let env = TestEnv::new();
    let args = authcode_args(&bed);
    env.kubecred_owned(&args).run().success();
    let files = cache_token_files(&env.cache_dir());
    let entry: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let refresh_token = entry["refresh"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let mut logout = args.clone();
    logout[0] = "logout".into();
    env.kubecred_owned(&logout)
        .run()
        .success()
        .stderr_contains("forgot the cached login; the refresh token is revoked");
    assert_eq!(bed.stats()["revocation"], 1);
    assert!(!introspect(&bed, &refresh_token), "revoked at the provider");
}

#[test]
fn a_failed_revocation_is_a_warning_and_the_entry_still_goes() {
    let env = TestEnv::new();
    // An entry (in the documented version-2 format) whose provider is gone: a closed port.
    let tokens = env.cache_dir().join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let key = "a".repeat(64);
    std::fs::write(
        tokens.join(format!("{key}.json")),
        r#"{"v":2,"about":{"issuer":"http://127.0.0.1:9/","client_id":"kubecred","grant":"authcode","subject":"bob"},
           "id_token":"id-token-of-bob","id_token_expiry":"2099-01-01T00:00:00Z",
           "obtained_at":"2026-01-01T00:00:00Z","refresh":{"in":"entry","refresh_token":"refresh-token-of-bob"}}"#,
    )
    .unwrap();
    kubecred_plain(&env, &["status"])
        .run()
        .success()
        .stdout_contains("bob");
    let run = env
        .kubecred(&["logout", "--all", "--http-timeout=5s"])
        .run()
        .success()
        .stderr_contains("warning: revoking the refresh token failed")
        .stderr_contains("the cached login is forgotten all the same")
        .never_shows(&["refresh-token-of-bob", "id-token-of-bob"]);
    assert!(run.stdout().is_empty());
    for (path, text) in every_file_text(&env.cache_dir()) {
        assert!(
            !text.contains("token-of-bob"),
            "{} keeps a token",
            path.display()
        );
    }
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

#[test]
fn keyring_entries_are_listed_from_their_index_and_logout_all_removes_them() {
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    let bed = Testbed::start();
    let mut args = env.cc_args(&bed);
    args.push("--cache-storage=keyring".into());
    let token = env.kubecred_owned(&args).run().success().token();
    // Nothing with a token on disk; the secret-free index names the entry.
    for (path, text) in every_file_text(&env.cache_dir()) {
        assert!(!text.contains(&token), "{} holds the token", path.display());
    }
    let mut plain = kubecred_plain(&env, &["status", "-o", "json"]);
    for passthrough in ["DBUS_SESSION_BUS_ADDRESS", "KUBECRED_TEST_KEYRING"] {
        if let Ok(value) = std::env::var(passthrough) {
            plain.env(passthrough, value);
        }
    }
    let status: Value = serde_json::from_str(&plain.run().success().stdout()).unwrap();
    let entry = &status["entries"][0];
    assert_eq!(entry["storage"], "keyring", "{status}");
    assert_eq!(entry["keyring_store"], "secret-service", "{status}");
    assert_eq!(entry["client_id"], CC_CLIENT);

    env.kubecred(&["logout", "--all"])
        .run()
        .success()
        .stderr_contains("logged out of");
    // The keyring item is gone: the same settings ask the provider again.
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.token_requests("client_credentials"), 2);
}

/// `kubecred <command>` with the client-credentials settings against `issuer`.
fn cc_command(env: &TestEnv, bed: &Testbed, command: &str, issuer: &str) -> std::process::Command {
    let mut args = env.cc_args(bed);
    args[0] = command.into();
    args[1] = format!("--issuer-url={issuer}");
    env.kubecred_owned(&args)
}

#[test]
fn login_status_whoami_and_logout_show_the_issuer_byte_for_byte() {
    let bed = Testbed::start();
    // As the provider names itself (no slash), and with a slash it accepts too.
    for issuer in [bed.issuer.clone(), format!("{}/", bed.issuer)] {
        let env = TestEnv::new();
        let other = if issuer.ends_with('/') {
            bed.issuer.clone()
        } else {
            format!("{issuer}/")
        };
        let shows_only = |text: &str, what: &str| {
            assert!(text.contains(&issuer), "{what} lacks {issuer:?}:\n{text}");
            let without_issuer = text.replace(&issuer, "");
            assert!(
                !without_issuer.contains(&bed.issuer),
                "{what} shows the issuer otherwise than {issuer:?} (as {other:?}?):\n{text}"
            );
        };
        let login = cc_command(&env, &bed, "login", &issuer).run().success();
        assert!(
            login
                .stderr()
                .contains(&format!("logged in to {issuer} as ")),
            "{}",
            login.stderr()
        );
        shows_only(&login.stderr(), "login");

        let table = kubecred_plain(&env, &["status"]).run().success().stdout();
        let row = table.lines().nth(1).unwrap_or_default();
        assert!(row.starts_with(&format!("{issuer}  ")), "{table}");
        shows_only(&table, "status");
        assert_eq!(status_json(&env)["entries"][0]["issuer"], issuer.as_str());

        // whoami's heading names the settings' issuer (its claims table then shows the token's
        // own `iss`, which is the provider's spelling).
        let whoami = cc_command(&env, &bed, "whoami", &issuer)
            .run()
            .success()
            .stdout();
        let heading = whoami
            .lines()
            .find(|line| line.starts_with("Claims of the"))
            .unwrap_or_else(|| panic!("{whoami}"));
        assert!(
            heading.ends_with(&format!("gets from {issuer} (client {CC_CLIENT}):")),
            "{whoami}"
        );

        let logout = cc_command(&env, &bed, "logout", &issuer).run().success();
        assert!(
            logout.stderr().contains(&format!(
                "logged out of {issuer} ({CC_CLIENT}): forgot the cached login"
            )),
            "{}",
            logout.stderr()
        );
        shows_only(&logout.stderr(), "logout");
    }
}

#[test]
fn logout_without_a_match_lists_the_issuers_cached_logins_and_how_they_differ() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // Two cached logins of one issuer and client, apart only by their scopes and account.
    let login = |extra: &[&str]| {
        let mut args = env.cc_args(&bed);
        args.extend(extra.iter().map(|a| a.to_string()));
        env.kubecred_owned(&args).run().success();
    };
    login(&["--scope=email"]);
    login(&["--scope=email,groups", "--account=admin"]);
    let status = status_json(&env);
    let mut scopes: Vec<String> = status["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["scopes"].to_string())
        .collect();
    scopes.sort();
    assert_eq!(
        scopes,
        [r#"["email","groups"]"#, r#"["email"]"#],
        "{status}"
    );
    let table = kubecred_plain(&env, &["status"]).run().success().stdout();
    assert!(
        table.starts_with("ISSUER") && table.contains("SCOPES") && table.contains("email groups"),
        "status tells them apart:\n{table}"
    );

    let mut logout = env.cc_args(&bed);
    logout[0] = "logout".into();
    logout.push("--scope=profile".into());
    let run = env.kubecred_owned(&logout).run().success();
    let stderr = run.stderr();
    for line in [
        format!(
            "kubecred: no cached login for {} ({CC_CLIENT}) with these settings; the cached logins for that issuer differ from them:",
            bed.issuer
        ),
        r#"scopes "email" (here "profile")"#.to_string(),
        r#"scopes "email groups" (here "profile"); account "admin" (here none)"#.to_string(),
        "kubecred: to log out of one, repeat the settings it was logged in with; to log out of every cached login, run kubecred logout --all".to_string(),
    ] {
        assert!(stderr.contains(&line), "{line:?} missing:\n{stderr}");
    }
    // Nothing was forgotten.
    assert_eq!(cache_token_files(&env.cache_dir()).len(), 2);
    // With the login's own settings, it goes.
    logout.pop();
    logout.push("--scope=email".into());
    env.kubecred_owned(&logout)
        .run()
        .success()
        .stderr_contains("logged out of");
    assert_eq!(cache_token_files(&env.cache_dir()).len(), 1);
}

/// Each place `text` names `issuer` followed by a `/` it was not written with (a `/` that ends
/// the URL there: not one that starts a path).
fn slash_added_after(text: &str, issuer: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            line.match_indices(issuer).any(|(at, _)| {
                let rest = &line[at + issuer.len()..];
                rest.strip_prefix('/').is_some_and(|after| {
                    after.is_empty() || after.starts_with([' ', ';', ')', ',', ':'])
                })
            })
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn discovery_messages_and_verbose_lines_name_the_issuer_as_written() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // The test bed's issuer is a bare host (`http://127.0.0.1:PORT`), which `Url` writes with
    // a `/`; kubecred's lines must not.
    assert!(!bed.issuer.ends_with('/'), "{}", bed.issuer);
    let mut args = env.cc_args(&bed);
    args.push("-v".into());
    for _ in 0..2 {
        // The first fetches discovery, the second reads it from the cache ("using the cached
        // discovery document of …").
        args.push("--force-refresh".into());
        let run = env.kubecred_owned(&args).run().success();
        let added = slash_added_after(&run.stderr(), &bed.issuer);
        assert!(added.is_empty(), "{added:#?}\n{}", run.stderr());
    }
    // A discovery document that names another issuer: the error names the one given.
    let port = bed.issuer.rsplit(':').next().unwrap();
    let elsewhere = format!("http://localhost:{port}");
    let mut args = env.cc_args(&bed);
    args[1] = format!("--issuer-url={elsewhere}");
    let run = env.kubecred_owned(&args).run().failure(3);
    assert_eq!(
        run.stderr().lines().last().unwrap(),
        format!(
            "kubecred: error: the OpenID discovery document of {elsewhere} names the issuer {}; set --issuer-url to exactly that (tokens carry it in iss)",
            bed.issuer
        )
    );
}
