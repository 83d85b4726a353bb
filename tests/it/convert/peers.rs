//! `convert-kubeconfig` faithful to what the peers run: one test per kind of unfaithfulness
//! found by converting the peers' own fixtures and documented flag sets through the binary
//! (each of them failed before kubecred read stanzas as the peers read them):
//!
//! - a login carried only to the stanza whose login it is: int128/kubelogin's cache entry is
//!   named by the stanza's settings, and another stanza (another user name, other scopes or
//!   parameters) gets nothing, never another user's login;
//! - the redirect URI kubelogin sent, `http://localhost:PORT`, is what the converted stanza
//!   sends, at the provider's authorization request and code exchange;
//! - nothing silently changes meaning: client credentials keep their token and send their
//!   audience, Azure's booleans and variables mean what they mean to Azure, relative paths stay
//!   relative to where kubectl runs the plugin;
//! - stanzas the peers run are converted: `~`, global flags before the subcommand, pflag's
//!   `=true`, `localhost:PORT`, the password grant without a user name, Azure's `-v 5`;
//! - the smaller things: the refresh token of an access-token stanza, `KUBECACHEDIR` in a
//!   stanza's env, a keyring named as the store it is, a dry run that says what the real run
//!   does.

use super::*;

/// A kubeconfig of `users` (YAML list items) with a cluster for the test bed.
fn kubeconfig_of(env: &TestEnv, bed: &Testbed, users: &str) -> PathBuf {
    let path = env.dir.path().join("config");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testbed\n  cluster: {{server: '{}', certificate-authority-data: {}}}\nusers:\n{users}",
            bed.api_server, bed.ca_data
        ),
    )
    .unwrap();
    path
}

/// A user running int128/kubelogin with `args` (what follows `kubelogin`) and `env`.
fn kubelogin_user(name: &str, args: &[String], env: &[(&str, &str)]) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let env: Vec<String> = env
        .iter()
        .map(|(n, v)| format!("{{name: {n}, value: '{v}'}}"))
        .collect();
    format!(
        "- name: {name}\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubelogin\n      args: [{}]\n      env: [{}]\n",
        args.join(", "),
        env.join(", ")
    )
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The exec stanza of `user` as kubectl reads the kubeconfig.
fn exec_of(env: &TestEnv, bin: &Path, kubeconfig: &Path, user: &str) -> Value {
    let view: Value = serde_json::from_str(
        &kubectl(
            env,
            bin,
            kubeconfig,
            &["config", "view", "--raw", "-o", "json"],
        )
        .success()
        .stdout(),
    )
    .unwrap();
    view["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == user)
        .unwrap_or_else(|| panic!("no user {user}"))["user"]["exec"]
        .clone()
}

fn args_of(exec: &Value) -> Vec<String> {
    exec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// The report's line for `user`.
fn line_of(report: &str, user: &str) -> String {
    report
        .lines()
        .find(|line| line.contains(&format!(" \"{user}\"")))
        .unwrap_or_else(|| panic!("no line for {user} in\n{report}"))
        .to_string()
}

#[test]
fn a_login_is_carried_only_to_the_stanza_it_belongs_to() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let alice = tokens_of_a_login(&env, &bed, "email");
    let dev = strings(&[
        "get-token",
        &format!("--oidc-issuer-url={}", bed.issuer),
        "--oidc-client-id=kubecred",
    ]);
    let mut bob = dev.clone();
    bob.push("--username=bob".into());
    let mut admin = dev.clone();
    admin.extend(strings(&[
        "--oidc-extra-scope=groups",
        "--oidc-auth-request-extra-params=prompt=login",
    ]));
    // kubelogin has one login in its cache: alice's, of the `dev` stanza.
    let cache = env.home().join(".kube/cache/oidc-login");
    write_kubelogin_entry(&cache, &kubelogin_entry_name(&dev, &env.home()), &alice);
    let kubeconfig = kubeconfig_of(
        &env,
        &bed,
        &[
            kubelogin_user("dev", &dev, &[]),
            kubelogin_user("bob", &bob, &[]),
            kubelogin_user("admin", &admin, &[]),
        ]
        .concat(),
    );
    let report = convert(&env, &bin, &["--kubeconfig", kubeconfig.to_str().unwrap()])
        .run()
        .success()
        .stdout();
    assert!(
        line_of(&report, "dev").contains("carried the ID token (valid until "),
        "{report}"
    );
    for other in ["bob", "admin"] {
        assert!(
            line_of(&report, other).ends_with(&format!(
                "tokens not carried: kubelogin's cache {} holds no login for this stanza's settings (kubelogin 1.31 and later would log in again too); the first kubectl call logs in",
                cache.display()
            )),
            "{report}"
        );
    }
    // kubecred's cache holds one login: dev's.
    assert_eq!(
        cache_token_files(&env.home().join(".cache/kubecred")).len(),
        1
    );
}

#[test]
fn a_converted_kubelogin_stanza_sends_the_redirect_uri_kubelogin_sent() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let kubelogin = strings(&[
        "get-token",
        &format!("--oidc-issuer-url={}", bed.issuer),
        "--oidc-client-id=kubecred",
        "--listen-address=127.0.0.1:0",
    ]);
    let kubeconfig = kubeconfig_of(&env, &bed, &kubelogin_user("kl", &kubelogin, &[]));
    convert(&env, &bin, &["--kubeconfig", kubeconfig.to_str().unwrap()])
        .run()
        .success();
    let args = args_of(&exec_of(&env, &bin, &kubeconfig, "kl"));
    bed.reset_stats();
    // The converted stanza, run as kubectl runs it, logs in through the browser ($BROWSER).
    let run = env
        .client(&kubecred_bin())
        .args(&args)
        .env("BROWSER", browser_command())
        .run()
        .success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    let received = bed.redirect_uris_received();
    assert_eq!(received.len(), 2, "{received:?}");
    let sent = &received[0].1;
    let port = sent.strip_prefix("http://localhost:");
    assert!(
        port.is_some_and(|port| port.parse::<u16>().is_ok()),
        "kubelogin's redirect URI is http://localhost:PORT, no path: {sent}"
    );
    assert_eq!(received[1], ("/token".to_string(), sent.clone()));
}

#[test]
fn what_kubectl_got_before_is_what_it_gets_after() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let issuer = format!("--oidc-issuer-url={}", bed.issuer);
    let cc = |extra: &[&str]| {
        let mut args = strings(&[
            "get-token",
            &issuer,
            &format!("--oidc-client-id={CC_CLIENT}"),
            &format!("--oidc-client-secret={CC_SECRET}"),
            "--grant-type=client-credentials",
        ]);
        args.extend(strings(extra));
        args
    };
    let azure = |args: &str| {
        args.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let users = [
        // kubelogin's client credentials: the access token asked for, and the audience in the
        // token request; or, by default, the ID token (with openid).
        kubelogin_user(
            "cc-access",
            &cc(&[
                "--oidc-use-access-token",
                &format!("--oidc-auth-request-extra-params=audience={RESOURCE}"),
            ]),
            &[],
        ),
        kubelogin_user("cc-id", &cc(&[]), &[]),
        // Go's spellings of true.
        kubelogin_user(
            "az-legacy",
            &azure("get-token --server-id S --client-id C --tenant-id T --legacy=TRUE"),
            &[],
        ),
        kubelogin_user(
            "az-pop",
            &azure("get-token --login interactive --server-id S --client-id C --tenant-id T --pop-enabled=True --pop-claims u=x"),
            &[],
        ),
        // Azure reads AAD_SERVICE_PRINCIPAL_CLIENT_ID over --client-id, in every mode.
        kubelogin_user(
            "az-env",
            &azure("get-token --login workloadidentity --server-id S --client-id from-flag"),
            &[
                ("AAD_SERVICE_PRINCIPAL_CLIENT_ID", "from-env"),
                ("AZURE_TENANT_ID", "T"),
                ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"),
            ],
        ),
        // Relative to where kubectl runs the plugin, for kubelogin and for kubecred alike.
        kubelogin_user(
            "relative",
            &strings(&[
                "get-token",
                &issuer,
                "--oidc-client-id=kubecred",
                "--local-server-cert=tls/cert.pem",
                "--local-server-key=tls/key.pem",
            ]),
            &[],
        ),
    ]
    .concat();
    let kubeconfig = kubeconfig_of(&env, &bed, &users);
    let report = convert(&env, &bin, &["--kubeconfig", kubeconfig.to_str().unwrap()])
        .run()
        .success()
        .never_shows(&[CC_SECRET])
        .stdout();
    assert!(line_of(&report, "az-legacy").contains("AAD v1"), "{report}");
    assert!(
        line_of(&report, "az-pop").contains("proof-of-possession"),
        "{report}"
    );
    let exec = |user: &str| args_of(&exec_of(&env, &bin, &kubeconfig, user));
    assert!(exec("cc-id").contains(&"--use-access-token=false".to_string()));
    // kubelogin's client credentials hand kubectl the ID token a provider issues with openid:
    // so does the converted stanza, verified.
    bed.configure(serde_json::json!({
        "clientCredentialsIdToken": true,
        "apiAudiences": ["kubecred", CC_CLIENT],
    }));
    kubectl(
        &env,
        &bin,
        &kubeconfig,
        &["--cluster", "testbed", "--user", "cc-id", "auth", "whoami"],
    )
    .success()
    .stdout_contains(CC_CLIENT);
    assert!(exec("az-env").contains(&"--client-id=from-env".to_string()));
    let relative = exec("relative");
    assert!(
        relative.contains(&"--local-server-cert=tls/cert.pem".to_string()),
        "{relative:?}"
    );
    // The access-token stanza, run: its token request carries the audience and openid.
    bed.reset_stats();
    let stanza = exec_of(&env, &bin, &kubeconfig, "cc-access");
    let mut run = env.client(&kubecred_bin());
    run.args(args_of(&stanza));
    for var in stanza["env"].as_array().into_iter().flatten() {
        run.env(
            var["name"].as_str().unwrap(),
            var["value"].as_str().unwrap(),
        );
    }
    run.run().success();
    let token_request = bed
        .requests()
        .into_iter()
        .find(|request| request["path"] == "/token")
        .unwrap();
    assert_eq!(
        token_request["form"]["audience"],
        serde_json::json!([RESOURCE])
    );
    assert_eq!(
        token_request["form"]["scope"],
        serde_json::json!(["openid"])
    );
}

#[test]
fn stanzas_the_peers_run_are_converted() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let home = env.home();
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    std::fs::copy(&bed.ca_file, home.join(".kube/ca.crt")).unwrap();
    let issuer = format!("--oidc-issuer-url={}", bed.issuer);
    let base = |extra: &[&str]| {
        let mut args = strings(&["get-token", &issuer, "--oidc-client-id=kubecred"]);
        args.extend(strings(extra));
        args
    };
    let azure = |args: &str| {
        args.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let users = [
        // int128/kubelogin's own "HomedirExpansion" and "AccessToken" fixtures.
        kubelogin_user(
            "homedir",
            &base(&[
                "--certificate-authority",
                "~/.kube/ca.crt",
                "--local-server-cert",
                "~/.kube/oidc-server.crt",
                "--local-server-key",
                "~/.kube/oidc-server.key",
                "--token-cache-dir",
                "~/.kube/oidc-cache",
            ]),
            &[],
        ),
        kubelogin_user("access", &base(&["--oidc-use-access-token=true"]), &[]),
        kubelogin_user("listen", &base(&["--listen-address=localhost:8000"]), &[]),
        kubelogin_user("password", &base(&["--grant-type=password"]), &[]),
        kubelogin_user("reneg", &base(&["--tls-renegotiation-once"]), &[]),
        format!(
            "- name: verbose\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubectl\n      args: [oidc-login, -v1, get-token, '{issuer}', --oidc-client-id=kubecred]\n"
        ),
        kubelogin_user(
            "az-verbose",
            &azure("get-token -v 5 --logtostderr --server-id S --client-id C --tenant-id T"),
            &[],
        ),
        kubelogin_user(
            "az-ropc-legacy",
            &azure("get-token --login ropc --server-id S --client-id C --tenant-id T --username u --legacy"),
            &[],
        ),
    ]
    .concat();
    let kubeconfig = kubeconfig_of(&env, &bed, &users);
    let report = convert(&env, &bin, &["--kubeconfig", kubeconfig.to_str().unwrap()])
        .run()
        .success()
        .stdout();
    for user in [
        "homedir",
        "access",
        "listen",
        "password",
        "verbose",
        "az-verbose",
        "az-ropc-legacy",
    ] {
        assert!(
            line_of(&report, user).starts_with(&format!("  converted \"{user}\" (")),
            "{report}"
        );
    }
    assert!(
        line_of(&report, "reneg").contains(
            "stays with int128/kubelogin: --tls-renegotiation-once: its provider asks for TLS renegotiation"
        ),
        "{report}"
    );
    assert!(
        report.contains("dropped --legacy: Azure's kubelogin ignores it with --login ropc"),
        "{report}"
    );
    let exec = |user: &str| args_of(&exec_of(&env, &bin, &kubeconfig, user));
    let homedir = exec("homedir");
    for expected in [
        format!(
            "--certificate-authority={}",
            home.join(".kube/ca.crt").display()
        ),
        format!(
            "--local-server-cert={}",
            home.join(".kube/oidc-server.crt").display()
        ),
        "--redirect-url=https://localhost".into(),
    ] {
        assert!(homedir.contains(&expected), "{expected} in {homedir:?}");
    }
    assert!(exec("access").contains(&"--use-access-token".to_string()));
    assert!(exec("listen").contains(&"--listen-address=localhost:8000".to_string()));
    let password = exec("password");
    assert!(password.contains(&"--grant-type=password".to_string()));
    assert!(!password.iter().any(|a| a.starts_with("--username")));
    assert!(exec("verbose").contains(&"-v".to_string()));
    assert!(exec("az-verbose").contains(&"-v".to_string()));
}

#[test]
fn the_refresh_token_the_cache_place_the_store_and_the_dry_run_are_right() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let issuer = format!("--oidc-issuer-url={}", bed.issuer);
    let base = |extra: &[&str]| {
        let mut args = strings(&["get-token", &issuer, "--oidc-client-id=kubecred"]);
        args.extend(strings(extra));
        args
    };
    let default_cache = env.home().join(".kube/cache/oidc-login");
    // --oidc-use-access-token: kubelogin's entry holds the (opaque) access token in the ID
    // token's place; its refresh token is carried.
    let access = base(&["--oidc-use-access-token"]);
    write_kubelogin_entry(
        &default_cache,
        &kubelogin_entry_name(&access, &env.home()),
        &("an-opaque-access-token".into(), "rt-access".into()),
    );
    // KUBECACHEDIR in the stanza's env moves kubelogin's cache.
    let moved_cache = env.dir.path().join("elsewhere");
    let moved = base(&["--oidc-extra-scope=profile"]);
    let moved_entry = write_kubelogin_entry(
        &moved_cache.join("oidc-login"),
        &kubelogin_entry_name(&moved, &env.home()),
        &(String::new(), "rt-moved".into()),
    );
    // A stanza whose settings cache nothing: the dry run must not promise what the real run
    // then leaves.
    let uncached = base(&["--oidc-extra-scope=email"]);
    write_kubelogin_entry(
        &default_cache,
        &kubelogin_entry_name(&uncached, &env.home()),
        &(String::new(), "rt-uncached".into()),
    );
    let users = [
        kubelogin_user("access", &access, &[]),
        kubelogin_user(
            "moved",
            &moved,
            &[("KUBECACHEDIR", moved_cache.to_str().unwrap())],
        ),
        kubelogin_user("uncached", &uncached, &[("KUBECRED_CACHE_STORAGE", "none")]),
        // kubelogin's keyring (and a cache directory holding only its lock files, here none):
        // the keyring is what the line names, not the disk cache.
        kubelogin_user(
            "keyring",
            &base(&[
                "--token-cache-storage=keyring",
                &format!(
                    "--token-cache-dir={}",
                    env.dir.path().join("locks-only").display()
                ),
            ]),
            &[],
        ),
    ]
    .concat();
    let kubeconfig = kubeconfig_of(&env, &bed, &users);
    let path = kubeconfig.to_str().unwrap().to_string();
    let dry = convert(&env, &bin, &["--dry-run", "--kubeconfig", &path])
        .run()
        .success()
        .stdout();
    let real = convert(&env, &bin, &["--kubeconfig", &path])
        .run()
        .success()
        .never_shows(&["rt-access", "rt-moved"])
        .stdout();
    let into = format!(" into {}", env.home().join(".cache/kubecred").display());
    assert!(
        line_of(&real, "access").ends_with(&format!(
            "carried the refresh token from {}{into} (the first kubectl call refreshes)",
            default_cache
                .join(kubelogin_entry_name(&access, &env.home()))
                .display()
        )),
        "{real}"
    );
    assert!(
        line_of(&real, "moved").contains(&format!(
            "carried the refresh token from {}{into}",
            moved_entry.display()
        )),
        "{real}"
    );
    assert!(
        line_of(&real, "uncached").ends_with("tokens not carried: its settings cache nothing (--cache-storage none); the first kubectl call logs in"),
        "{real}"
    );
    let keyring = line_of(&real, "keyring");
    assert!(
        keyring.contains("keyring") && !keyring.contains("kubelogin's cache"),
        "{keyring}"
    );
    // The dry run said the same of every user.
    let as_done = |report: &str, user: &str| {
        line_of(report, user)
            .replace("would convert", "converted")
            .replace("would carry", "carried")
    };
    for user in ["access", "moved", "uncached", "keyring"] {
        assert_eq!(as_done(&dry, user), as_done(&real, user), "{user}");
    }
}
