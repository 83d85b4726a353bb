//! CI and automation against the real provider: RFC 8693 token exchange of a token from the
//! test "CI issuer" (a second signer, tests/support/ci_issuer.mjs), the GitHub Actions ID-token
//! stand-in, private_key_jwt and federated client assertions, federated tokens presented as they
//! are, the password grant, and what happens without a terminal. Every grant goes through kubectl
//! against the HTTPS API stand-in; secrets never reach stderr, even at -vv.

use crate::kubectl::whoami;
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;

const V1: &str = "client.authentication.k8s.io/v1";
const ACTIONS_REQUEST_TOKEN: &str = "testbed-actions-request-token";
const CI_SUBJECT: &str = "repo:kubecred/kubecred:ref:refs/heads/main";
const PASSWORD: &str = "testbed-alice-password";

fn admin_post(bed: &Testbed, route: &str, body: Value) -> Value {
    let ca = std::fs::read(&bed.ca_file).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap()
        .post(format!("{}/{route}", bed.admin))
        .json(&body)
        .send()
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.json())
        .unwrap_or_else(|err| panic!("test bed {route}: {err}"))
}

/// A token of the test CI issuer.
fn ci_token(bed: &Testbed, claims: Value) -> String {
    admin_post(bed, "ci/token", claims)["token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The ci-private-key client's PEM key, written to a file.
fn client_key_file(bed: &Testbed, env: &TestEnv) -> PathBuf {
    let pem: Value = reqwest::blocking::get(format!("{}/ci/client-key", bed.admin))
        .unwrap()
        .json()
        .unwrap();
    let path = env.dir.path().join("client-key.pem");
    std::fs::write(&path, pem["pem"].as_str().unwrap()).unwrap();
    path
}

/// The environment the GitHub Actions runner gives a job with `id-token: write`.
fn actions_env(bed: &Testbed) -> Vec<(String, String)> {
    vec![
        (
            "ACTIONS_ID_TOKEN_REQUEST_URL".into(),
            format!("{}/ci/actions?api-version=2.0", bed.admin),
        ),
        (
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN".into(),
            ACTIONS_REQUEST_TOKEN.into(),
        ),
    ]
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn token_exchange_of_a_subject_token_file_rereads_the_rotated_file() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let subject_file = env.dir.path().join("subject-token");
    let first = ci_token(&bed, json!({"sub": "pod-a"}));
    std::fs::write(&subject_file, &first).unwrap();
    let mut args = strings(&[
        "get-token",
        "--grant-type=token-exchange",
        "--client-id=ci-exchange",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    args.push(format!("--subject-token-file={}", subject_file.display()));
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    assert_eq!(whoami(&env, &kubeconfig), "ci:pod-a");

    // The kubelet rotates the projected token; the next grant must exchange the new one, and
    // the provider's refresh token is never used (kubecred re-exchanges).
    let second = ci_token(&bed, json!({"sub": "pod-b"}));
    std::fs::write(&subject_file, &second).unwrap();
    expire_cached_tokens(&env.cache_dir());
    assert_eq!(whoami(&env, &kubeconfig), "ci:pod-b");
    let stats = bed.stats();
    assert_eq!(stats["ci"]["exchanges"], 2, "{stats}");
    assert_eq!(stats["token"]["refresh_token"], 0, "{stats}");

    // -vv says what happened without the subject token or the issued one.
    args.push("--force-refresh".into());
    args.push("-vv".into());
    let run = env.kubecred_owned(&args).run().success();
    let issued = run.token();
    run.never_shows(&[&second, &issued])
        .stderr_contains("exchanging the subject token");
}

#[test]
fn github_actions_subject_token_with_a_private_key_jwt_client() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let key = client_key_file(&bed, &env);
    let mut args = strings(&[
        "get-token",
        "--grant-type=token-exchange",
        "--client-id=ci-private-key",
        "--subject-token-source=github-actions",
        "--subject-token-audience=testbed-exchange",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    args.push(format!("--client-private-key-file={}", key.display()));
    let mut spec = KubeconfigSpec::new(V1, args.clone());
    spec.env = actions_env(&bed);
    let kubeconfig = env.kubeconfig(&bed, spec);
    assert_eq!(whoami(&env, &kubeconfig), format!("ci:{CI_SUBJECT}"));
    let stats = bed.stats();
    assert_eq!(stats["ci"]["actions"], 1, "{stats}");
    assert_eq!(stats["ci"]["exchanges"], 1, "{stats}");

    // At -vv: neither the runtime's request token nor the issued token shows.
    args.push("--force-refresh".into());
    args.push("-vv".into());
    let mut command = env.kubecred_owned(&args);
    command.envs(actions_env(&bed));
    let run = command
        .run()
        .success()
        .stderr_contains("requesting the GitHub Actions ID token");
    let issued = run.token();
    run.never_shows(&[ACTIONS_REQUEST_TOKEN, &issued]);
    assert_eq!(bed.stats()["ci"]["actions"], 2);
}

#[test]
fn client_credentials_with_private_key_jwt_signs_a_fresh_assertion_per_request() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let key = client_key_file(&bed, &env);
    let mut args = strings(&[
        "get-token",
        "--grant-type=client-credentials",
        "--client-id=ci-private-key",
        "--resource=https://kubernetes.testbed",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    args.push(format!("--client-private-key-file={}", key.display()));
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args.clone()));
    assert_eq!(whoami(&env, &kubeconfig), "ci-private-key");
    // A second grant: oidc-provider refuses a replayed jti, so this passes only with a new one.
    args.push("--force-refresh".into());
    args.push("-vv".into());
    let run = env.kubecred_owned(&args).run().success();
    let pem = std::fs::read_to_string(&key).unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    run.never_shows(&[&body]);
    assert_eq!(bed.token_requests("client_credentials"), 2);
}

#[test]
fn a_federated_client_assertion_from_github_actions_and_from_a_file() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = strings(&[
        "get-token",
        "--grant-type=client-credentials",
        "--client-id=ci-federated",
        "--resource=https://kubernetes.testbed",
        "--client-assertion-source=github-actions",
        "--client-assertion-audience=api://TestbedTokenExchange",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    let mut spec = KubeconfigSpec::new(V1, args);
    spec.env = actions_env(&bed);
    let kubeconfig = env.kubeconfig(&bed, spec);
    assert_eq!(whoami(&env, &kubeconfig), "ci-federated");
    assert_eq!(bed.stats()["ci"]["federated_assertions"], 1);

    // Entra ID workload identity: AZURE_FEDERATED_TOKEN_FILE as --client-assertion-file.
    let env = TestEnv::new();
    let assertion = ci_token(&bed, json!({"aud": "api://TestbedTokenExchange"}));
    let file = env.dir.path().join("azure-identity-token");
    std::fs::write(&file, &assertion).unwrap();
    let mut args = strings(&[
        "get-token",
        "--grant-type=client-credentials",
        "--client-id=ci-federated",
        "--resource=https://kubernetes.testbed",
        "-vv",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    args.push(format!("--client-assertion-file={}", file.display()));
    let run = env.kubecred_owned(&args).run().success();
    let token = run.token();
    run.never_shows(&[&assertion, &token]);
    assert_eq!(bed.stats()["ci"]["federated_assertions"], 2);

    // An assertion the provider does not trust: one line naming the refusal, nothing cached.
    let env = TestEnv::new();
    std::fs::write(&file, ci_token(&bed, json!({"aud": "someone-else"}))).unwrap();
    env.kubecred_owned(&args)
        .run()
        .failure(3)
        .stderr_contains("invalid_client");
    assert!(cache_token_files(&env.cache_dir()).is_empty());
}

#[test]
fn a_federated_token_is_the_credential_without_any_provider_request() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let ci_issuer = format!("{}/ci", bed.admin);
    let mut args = strings(&[
        "get-token",
        "--grant-type=federated-token",
        "--subject-token-source=github-actions",
        "--subject-token-audience=https://kubernetes.testbed",
    ]);
    args.push(format!("--issuer-url={ci_issuer}"));
    let mut spec = KubeconfigSpec::new(V1, args.clone());
    spec.env = actions_env(&bed);
    let kubeconfig = env.kubeconfig(&bed, spec);
    assert_eq!(whoami(&env, &kubeconfig), CI_SUBJECT);
    let stats = bed.stats();
    assert_eq!(stats["discovery"], 0, "{stats}");
    assert_eq!(stats["token"]["total"], 0, "{stats}");

    // The printed expiry is the token's own exp, never later.
    let file = env.dir.path().join("ci-token");
    let token = ci_token(
        &bed,
        json!({"aud": "https://kubernetes.testbed", "ttl": 120}),
    );
    std::fs::write(&file, &token).unwrap();
    let args = vec![
        "get-token".to_string(),
        "--grant-type=federated-token".into(),
        format!("--issuer-url={ci_issuer}"),
        format!("--subject-token-file={}", file.display()),
    ];
    let run = env.kubecred_owned(&args).run().success();
    let printed = run.credential()["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let exp = jwt_claims(&token)["exp"].as_i64().unwrap();
    let printed = chrono::DateTime::parse_from_rfc3339(&printed).unwrap();
    // The token's own exp, less the printed-expiry safety margin (30 s): never later than exp.
    assert_eq!(printed.timestamp(), exp - 30);

    // Another issuer's token is refused with both names.
    let other = ci_token(&bed, json!({"iss": "https://elsewhere.example"}));
    std::fs::write(&file, &other).unwrap();
    let env = TestEnv::new();
    env.kubecred_owned(&args)
        .run()
        .failure(1)
        .stderr_contains("https://elsewhere.example");
}

#[test]
fn the_password_grant_reads_the_password_from_the_environment_or_a_file() {
    // The API stand-in accepts ID tokens of this client too.
    let bed = Testbed::start_with(json!({"apiAudiences": ["kubecred-password"]}));
    let env = TestEnv::new();
    let mut args = strings(&[
        "get-token",
        "--grant-type=password",
        "--client-id=kubecred-password",
        "--username=alice",
        "-vv",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    let mut spec = KubeconfigSpec::new(V1, args.clone());
    spec.env = vec![("KUBECRED_PASSWORD".into(), PASSWORD.into())];
    let kubeconfig = env.kubeconfig(&bed, spec);
    assert_eq!(whoami(&env, &kubeconfig), "alice");

    let env = TestEnv::new();
    let file = env.dir.path().join("password");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    args.push(format!("--password-file={}", file.display()));
    let run = env
        .kubecred_owned(&args)
        .run()
        .success()
        .stderr_contains("deprecated");
    let token = run.token();
    run.never_shows(&[PASSWORD, &token]);
    assert_eq!(bed.stats()["ci"]["passwords"], 2);
}

/// A password refused in a CI job or a script (no terminal) is held off for `--login-cooldown`
/// only: the long `--login-holdoff` stops browser tabs from storming an IDE's desktop, and a
/// password grant opens none. Here the cool-down is 0, so the next run with the right password
/// logs in at once (it was refused "not opening another browser" for ten minutes).
#[test]
fn a_refused_password_without_a_terminal_is_not_held_off_like_a_browser_login() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = strings(&[
        "get-token",
        "--grant-type=password",
        "--client-id=kubecred-password",
        "--username=alice",
        "--login-cooldown=0s",
    ]);
    args.push(format!("--issuer-url={}", bed.issuer));
    let refused = env
        .kubecred_owned(&args)
        .env("KUBECRED_PASSWORD", "not-the-password")
        .run();
    assert!(!refused.output.status.success(), "{}", refused.stderr());
    env.kubecred_owned(&args)
        .env("KUBECRED_PASSWORD", PASSWORD)
        .run()
        .success();
}

/// Without --username, the password grant asks on the terminal for the user name, then the
/// password: each line goes to the prompt that asked for it (the user name's reader once stayed
/// behind and took the password's line), the password is not echoed and reaches the provider,
/// and a prompt nobody answers ends at --auth-timeout.
#[cfg(target_os = "linux")]
#[test]
fn the_password_grant_asks_for_the_user_name_then_the_password_each_its_own_line() {
    use crate::support::terminal::{Running, Stdin};
    use std::time::Duration;
    const WAIT: Duration = Duration::from_secs(60);
    let bed = Testbed::start();
    let issuer = format!("--issuer-url={}", bed.issuer);
    let password_login = |env: &TestEnv, auth_timeout: &str| {
        let command = env.kubecred(&[
            "get-token",
            "--grant-type=password",
            "--client-id=kubecred-password",
            &issuer,
            auth_timeout,
        ]);
        Running::start(command, Stdin::Terminal, true)
    };

    let mut kubecred = password_login(&TestEnv::new(), "--auth-timeout=120s");
    kubecred.wait_for_prompt("Username: ", WAIT);
    kubecred.paste("alice");
    kubecred.wait_for_prompt("Password for alice: ", WAIT);
    kubecred.paste(PASSWORD);
    let echoed = kubecred.echoed();
    let run = kubecred.finish(WAIT).success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    assert_eq!(
        bed.stats()["ci"]["passwords"],
        1,
        "the provider took the password"
    );
    assert!(echoed.contains("alice"), "{echoed:?}");
    assert!(
        !echoed.contains(PASSWORD),
        "the password was echoed: {echoed:?}"
    );
    run.never_shows(&[PASSWORD]);

    // Nobody types the password: the prompt ends at --auth-timeout, saying so.
    let mut kubecred = password_login(&TestEnv::new(), "--auth-timeout=3s");
    kubecred.wait_for_prompt("Username: ", WAIT);
    kubecred.paste("alice");
    kubecred.finish(WAIT).failure(4).stderr_contains(
        "no password was typed within 3s (--auth-timeout); set KUBECRED_PASSWORD or pass --password-file, or pass a longer --auth-timeout",
    );
    assert_eq!(
        bed.stats()["ci"]["passwords"],
        1,
        "no second password grant"
    );
}

#[test]
fn without_a_terminal_nothing_prompts_and_the_failure_names_the_grants_that_work() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // `auto` with the system browser: stdin is /dev/null and stderr a pipe here.
    let args = vec![
        "get-token".to_string(),
        format!("--issuer-url={}", bed.issuer),
        "--client-id=kubecred".into(),
    ];
    env.kubecred_owned(&args)
        .run()
        .failure(4)
        .stderr_contains("client-credentials, token-exchange, federated-token or password");
    // The password grant with no password: at once, before any request.
    let args = vec![
        "get-token".to_string(),
        format!("--issuer-url={}", bed.issuer),
        "--client-id=kubecred-password".into(),
        "--grant-type=password".into(),
        "--username=alice".into(),
    ];
    env.kubecred_owned(&args)
        .run()
        .failure(4)
        .stderr_contains("set KUBECRED_PASSWORD or pass --password-file");
    let stats = bed.stats();
    assert_eq!(stats["discovery"], 0, "{stats}");
    assert_eq!(stats["token"]["total"], 0, "{stats}");
}

#[test]
fn login_print_token_info_shows_the_claims_never_the_token() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let subject_file = env.dir.path().join("subject-token");
    std::fs::write(&subject_file, ci_token(&bed, json!({"sub": "job-7"}))).unwrap();
    let args = vec![
        "login".to_string(),
        "--print-token-info".into(),
        "--grant-type=token-exchange".into(),
        "--client-id=ci-exchange".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--subject-token-file={}", subject_file.display()),
    ];
    let run = env.kubecred_owned(&args).run().success();
    assert_eq!(run.stdout(), "");
    let stderr = run.stderr();
    for line in [
        "token subject: ci:job-7",
        &format!("token issuer: {}", bed.issuer),
        "token audience: https://kubernetes.testbed",
        "token expires: ",
    ] {
        assert!(stderr.contains(line), "{line:?} in\n{stderr}");
    }
    // The same settings' get-token answers from the cache that login filled: that is the token.
    let mut get = args.clone();
    get[0] = "get-token".into();
    get.remove(1);
    let token = env.kubecred_owned(&get).run().success().token();
    run.never_shows(&[&token]);
}

#[test]
fn a_client_secret_on_the_command_line_gets_a_ps_notice_when_used() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    env.kubecred_owned(&env.cc_args(&bed))
        .run()
        .success()
        .stderr_contains("kubecred: --client-secret on the command line is visible to other users in `ps`; use --client-secret-file or the KUBECRED_CLIENT_SECRET environment variable");
    // kubelogin's name is named as typed, with the same advice.
    let mut kubelogin = env.cc_args(&bed);
    kubelogin[3] = format!("--oidc-client-secret={CC_SECRET}");
    kubelogin.push("--force-refresh".into());
    env.kubecred_owned(&kubelogin)
        .run()
        .success()
        .stderr_contains("kubecred: --oidc-client-secret on the command line is visible to other users in `ps`; use --client-secret-file or the KUBECRED_CLIENT_SECRET environment variable");
}

#[test]
fn a_bare_token_endpoint_skips_discovery() {
    // Google's STS is no OpenID Provider: --token-endpoint names where to exchange.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let subject_file = env.dir.path().join("subject-token");
    std::fs::write(&subject_file, ci_token(&bed, json!({"sub": "gcp-wif"}))).unwrap();
    let args = vec![
        "get-token".to_string(),
        "--grant-type=token-exchange".into(),
        "--client-id=ci-exchange".into(),
        "--requested-token-type=urn:ietf:params:oauth:token-type:access_token".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--token-endpoint={}/token", bed.issuer),
        format!("--subject-token-file={}", subject_file.display()),
    ];
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args));
    assert_eq!(whoami(&env, &kubeconfig), "ci:gcp-wif");
    let stats = bed.stats();
    assert_eq!(stats["discovery"], 0, "{stats}");
    assert_eq!(stats["ci"]["exchanges"], 1, "{stats}");
}
