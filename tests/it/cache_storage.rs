//! The token cache: private files, corrupt entries, `none`, `logout`, and (inside
//! scripts/test.sh's private D-Bus session) the OS keyring in `keyring` and `auto` storage.

use crate::support::*;
use std::os::unix::fs::PermissionsExt;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn cache_files_are_private() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = env.cc_args(&bed);
    args.push("--cache-storage=disk".into());
    env.kubecred_owned(&args).run().success();
    let files = cache_token_files(&env.cache_dir());
    assert_eq!(files.len(), 1);
    assert_eq!(mode(&env.cache_dir()), 0o700);
    assert_eq!(mode(files[0].parent().unwrap()), 0o700);
    assert_eq!(mode(&files[0]), 0o600);
}

#[test]
fn a_corrupt_entry_is_a_miss_and_is_replaced() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args).run().success();
    let file = cache_token_files(&env.cache_dir()).remove(0);
    std::fs::write(&file, b"{\"truncated\": ").unwrap();
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.token_requests("client_credentials"), 2);
    // Replaced by a good entry: the next run is a hit.
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.token_requests("client_credentials"), 2);
    assert!(serde_json::from_slice::<serde_json::Value>(&std::fs::read(&file).unwrap()).is_ok());
}

#[test]
fn storage_none_asks_the_provider_every_time() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = env.cc_args(&bed);
    args.push("--cache-storage=none".into());
    for _ in 0..2 {
        env.kubecred_owned(&args).run().success();
    }
    assert_eq!(bed.token_requests("client_credentials"), 2);
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

#[test]
fn logout_forgets_the_entry() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args).run().success();
    let mut logout = args.clone();
    logout[0] = "logout".into();
    env.kubecred_owned(&logout)
        .run()
        .success()
        .stderr_contains("forgot");
    assert!(cache_token_files(&env.cache_dir()).is_empty());
    env.kubecred_owned(&args).run().success();
    assert_eq!(bed.token_requests("client_credentials"), 2);
}

#[test]
fn min_validity_and_force_refresh_bypass_the_cache() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args).run().success();
    env.kubecred_owned(&args)
        .arg("--force-refresh")
        .run()
        .success();
    assert_eq!(bed.token_requests("client_credentials"), 2);
    // The test bed's tokens live 600s: asking for 20 minutes of validity forces a new one.
    env.kubecred_owned(&args)
        .arg("--min-validity=20m")
        .run()
        .success();
    assert_eq!(bed.token_requests("client_credentials"), 3);
}

#[test]
fn keyring_storage_keeps_nothing_on_disk() {
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    let bed = Testbed::start();
    let mut args = env.cc_args(&bed);
    args.push("--cache-storage=keyring".into());
    let first = env.kubecred_owned(&args).run().success();
    assert!(cache_token_files(&env.cache_dir()).is_empty());
    let second = env.kubecred_owned(&args).run().success();
    assert_eq!(first.token(), second.token());
    assert_eq!(
        bed.token_requests("client_credentials"),
        1,
        "the second run is a keyring hit"
    );
    let mut logout = args.clone();
    logout[0] = "logout".into();
    env.kubecred_owned(&logout).run().success();
    env.kubecred_owned(&args).run().success();
    assert_eq!(
        bed.token_requests("client_credentials"),
        2,
        "logout removed the keyring entry"
    );
}

#[test]
fn keyring_storage_without_a_keyring_is_a_clear_error() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = env.cc_args(&bed);
    args.push("--cache-storage=keyring".into());
    env.kubecred_owned(&args)
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .run()
        .failure(5)
        .stderr_contains("--cache-storage disk");
    assert_eq!(
        bed.total_token_requests(),
        0,
        "fails before asking the provider"
    );
}

#[test]
fn auto_storage_puts_the_refresh_token_in_the_keyring_and_refreshes_from_it() {
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let mut args = authcode_args(&bed);
    args.push("--cache-storage=auto".into());
    env.kubecred_owned(&args).run().success();
    let files = cache_token_files(&env.cache_dir());
    assert_eq!(files.len(), 1);
    let entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let text = entry.to_string();
    assert!(
        text.contains("id_token"),
        "short-lived tokens stay on disk: {text}"
    );
    assert!(
        !text.contains("\"refresh_token\":\""),
        "the refresh token is not on disk: {text}"
    );
    expire_cached_tokens(&env.cache_dir());
    env.kubecred_owned(&args).run().success();
    let stats = bed.stats();
    assert_eq!(stats["token"]["refresh_token"], 1, "{stats}");
    assert_eq!(stats["token"]["authorization_code"], 1, "{stats}");
}

#[test]
fn a_keyring_that_refuses_the_entry_says_so_and_the_login_is_still_handed_out() {
    if !have(Need::Keyctl) {
        return;
    }
    // An access token larger than a kernel keyring key takes (32767 bytes).
    let large = "a".repeat(40_000);
    let bed =
        Testbed::start_with(serde_json::json!({"tokenResponsePatch": {"access_token": large}}));
    let env = TestEnv::new();
    let (args, secret) = env.cc_args_secret_in_env(&bed);
    // A kernel session keyring of its own, and no D-Bus session (the test environment passes
    // none): the kernel keyring is the one store, and it refuses the entry.
    let run = env
        .client(std::path::Path::new("keyctl"))
        .args(["session", "-"])
        .arg(kubecred_bin())
        .args(&args)
        .arg("--cache-storage=keyring")
        .arg(format!("--cache-dir={}", env.cache_dir().display()))
        .env("KUBECRED_CLIENT_SECRET", &secret)
        .run()
        .success();
    assert_eq!(run.token(), large);
    let line = run.only_kubecred_line();
    assert!(
        line.starts_with(
            "kubecred: warning: the new token is handed out but not cached: the kernel keyring refused the cache entry (too large: over 32767 bytes, the most a kernel keyring key holds; Secret Service: "
        ),
        "{line}"
    );
    assert!(line.contains("use --cache-storage auto"), "{line}");
    assert!(!line.contains("Keychain") && !line.contains("Credential Manager"));
    let stderr = run.stderr();
    assert!(!stderr.contains(&large[..64]), "no token on stderr");
}

#[test]
fn the_keyring_fall_back_is_said_once_for_a_conversion_of_several_users() {
    // Two kubeconfig users with tokens to carry (an ID token of the password grant, a refresh
    // token), with `auto` storage and no keyring in reach: both refresh tokens go to their files.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let issuer = bed.issuer.clone();
    let id_token = env
        .kubecred_owned(&[
            "get-token".into(),
            format!("--issuer-url={issuer}"),
            "--client-id=kubecred-password".into(),
            "--grant-type=password".into(),
            "--username=alice".into(),
            "--cache-storage=none".into(),
        ])
        .env("KUBECRED_PASSWORD", "testbed-alice-password")
        .run()
        .success()
        .token();
    let user = |name: &str, scopes: &str| {
        serde_json::json!({"name": name, "user": {"auth-provider": {"name": "oidc", "config": {
            "idp-issuer-url": issuer,
            "client-id": "kubecred-password",
            "extra-scopes": scopes,
            "id-token": id_token,
            "refresh-token": format!("refresh-of-{name}"),
        }}}})
    };
    let kubeconfig = env.dir.path().join("kubeconfig");
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://api.example"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "ada"}}],
        "current-context": "c",
        "users": [user("ada", "profile"), user("bob", "groups")],
    });
    std::fs::write(&kubeconfig, config.to_string()).unwrap();
    let run = env
        .client(&kubecred_bin())
        .arg("convert-kubeconfig")
        .env("KUBECONFIG", &kubeconfig)
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .run()
        .success()
        .never_shows(&["refresh-of-ada", "refresh-of-bob"])
        .stdout_contains("  converted \"ada\" (auth-provider oidc): carried the ID token")
        .stdout_contains("  converted \"bob\" (auth-provider oidc): carried the ID token");
    let stderr = run.stderr();
    let fall_backs: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("keeping the refresh token in the private file"))
        .collect();
    assert_eq!(fall_backs.len(), 1, "{stderr}");
    assert!(
        fall_backs[0].starts_with("kubecred: no OS keyring is reachable ("),
        "{}",
        fall_backs[0]
    );
    // Both refresh tokens are in their files all the same.
    let files = cache_token_files(&env.home().join(".cache/kubecred"));
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"refresh_token\":\"refresh-of-"), "{text}");
    }
}
