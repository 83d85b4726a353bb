//! `kubecred setup` against the real OpenID Provider: the diagnostics, the claims table, and
//! configuration that works — the printed kubeconfig user loaded by the real kubectl and used
//! against the API stand-in, the `set-credentials` command run by a shell, the
//! AuthenticationConfiguration read back by `whoami`. And each provider problem stopped before
//! the login with its cause and fix: a refused port, no discovery document, another issuer,
//! an untrusted TLS certificate.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The body of the stdout section whose title starts with `number.`.
fn section(stdout: &str, number: u32) -> String {
    let marker = format!("# ==== {number}. ");
    let start = stdout
        .find(&marker)
        .unwrap_or_else(|| panic!("no section {number} in\n{stdout}"));
    let body = &stdout[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("# ==== ").unwrap_or(body.len());
    body[..end].to_string()
}

fn setup_args(bed: &Testbed, secret_file: &Path) -> Vec<String> {
    vec![
        "setup".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={CC_CLIENT}"),
        format!("--client-secret-file={}", secret_file.display()),
        "--grant-type=client-credentials".into(),
        format!("--resource={RESOURCE}"),
        "--user-name=ci-bot".into(),
    ]
}

fn secret_file(env: &TestEnv) -> PathBuf {
    let path = env.dir.path().join("cc-secret");
    std::fs::write(&path, CC_SECRET).unwrap();
    path
}

/// Adds the API stand-in as the cluster of a context for user `ci-bot`, and uses it.
fn use_testbed_cluster(env: &TestEnv, bed: &Testbed, kubeconfig: &Path) {
    for step in [
        vec![
            "config",
            "set-cluster",
            "testbed",
            "--server",
            &bed.api_server,
        ],
        vec![
            "config",
            "set-context",
            "testbed",
            "--cluster=testbed",
            "--user=ci-bot",
        ],
        vec!["config", "use-context", "testbed"],
    ] {
        env.kubectl(kubeconfig, &step).run().success();
    }
}

fn kubectl_json(env: &TestEnv, kubeconfig: &Path, args: &[&str]) -> Value {
    let run = env.kubectl(kubeconfig, args).run().success();
    serde_json::from_str(&run.stdout()).unwrap()
}

#[test]
fn setup_prints_a_placeholder_for_every_request_header_it_was_given() {
    // `A=1,B=2` is two headers, as get-token reads it: the copied configuration must name both.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let mut args = setup_args(&bed, &secret);
    args.push("--request-header=X-Api-Key=key-7f3a,X-Tenant=tenant-2c".into());
    args.push("--request-header=X-Region=eu-1".into());
    let run = env
        .kubecred_owned(&args)
        .run()
        .success()
        .never_shows(&["key-7f3a", "tenant-2c"]);
    let kubeconfig = env.dir.path().join("generated-kubeconfig.yaml");
    std::fs::write(&kubeconfig, section(&run.stdout(), 5)).unwrap();
    let view = kubectl_json(&env, &kubeconfig, &["config", "view", "-o", "json"]);
    assert_eq!(
        view["users"][0]["user"]["exec"]["env"],
        json!([{
            "name": "KUBECRED_REQUEST_HEADER",
            "value": "X-Api-Key=<its value>,X-Tenant=<its value>,X-Region=<its value>",
        }])
    );
}

#[test]
fn setup_diagnoses_logs_in_and_prints_configuration_that_works() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let run = env
        .kubecred_owned(&setup_args(&bed, &secret))
        .run()
        .success()
        .never_shows(&[CC_SECRET])
        .stderr_contains("  ok    discovery: ")
        .stderr_contains("  ok    clock: in step")
        .stderr_contains("  ok    client credentials: grant listed")
        .stderr_contains(&format!("  audience      {RESOURCE}"))
        .stderr_contains(&format!("  issuer        {}", bed.issuer))
        .stderr_contains("  expiry        ")
        .stderr_contains("kube-apiserver sees you as \"oidc:");
    let stdout = run.stdout();

    // 5: the kubeconfig user, loaded by kubectl, then used against the API stand-in.
    let kubeconfig = env.dir.path().join("generated-kubeconfig.yaml");
    std::fs::write(&kubeconfig, section(&stdout, 5)).unwrap();
    let view = kubectl_json(
        &env,
        &kubeconfig,
        &["config", "view", "--raw", "-o", "json"],
    );
    let exec = &view["users"][0]["user"]["exec"];
    assert_eq!(view["users"][0]["name"], "ci-bot");
    assert_eq!(exec["apiVersion"], V1BETA1);
    assert_eq!(exec["interactiveMode"], "Never");
    // Not on PATH here: the binary's path as it was run, with the reason beside it.
    let binary = kubecred_bin();
    assert_eq!(exec["command"], json!(binary.display().to_string()));
    assert!(
        section(&stdout, 5).contains("# command: this binary's path, as kubecred is not on PATH"),
        "{stdout}"
    );
    let args: Vec<&str> = exec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "get-token");
    assert!(
        args.contains(&format!("--client-secret-file={}", secret.display()).as_str()),
        "{args:?}"
    );
    assert!(
        args.iter().any(|a| a.starts_with("--cache-dir=")),
        "{args:?}"
    );
    use_testbed_cluster(&env, &bed, &kubeconfig);
    let ca = format!("--certificate-authority={}", bed.ca_file.display());
    bed.reset_stats();
    env.kubectl(&kubeconfig, &[&ca, "auth", "whoami"])
        .run()
        .success()
        .stdout_contains(CC_CLIENT);
    // setup's login is the one kubectl used: answered from the cache.
    assert_eq!(bed.total_token_requests(), 0);

    // 4: the set-credentials command, run by a shell, makes the same user.
    let by_command = env.dir.path().join("by-command.yaml");
    std::fs::write(&by_command, "apiVersion: v1\nkind: Config\n").unwrap();
    let script =
        section(&stdout, 4).replace("kubectl config set-context --current --user=ci-bot\n", "");
    let status = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("KUBECONFIG", &by_command)
        .env("PATH", std::env::var("PATH").unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
    let made = kubectl_json(
        &env,
        &by_command,
        &["config", "view", "--raw", "-o", "json"],
    );
    assert_eq!(made["users"][0]["user"]["exec"]["args"], exec["args"]);
    assert_eq!(made["users"][0]["user"]["exec"]["command"], exec["command"]);

    // 1: the AuthenticationConfiguration parses, and maps this token as setup said.
    let authn = env.dir.path().join("authn.yaml");
    std::fs::write(&authn, section(&stdout, 1)).unwrap();
    let mut whoami = setup_args(&bed, &secret);
    whoami[0] = "whoami".into();
    whoami.retain(|a| !a.starts_with("--user-name"));
    whoami.push(format!("--authentication-config={}", authn.display()));
    env.kubecred_owned(&whoami)
        .run()
        .success()
        .stdout_contains("authenticates this token as:")
        .stdout_contains(&format!("  username  oidc:{CC_CLIENT}"));

    // 2, 3, 6: flags, RBAC and kuberc name the same issuer, user and binary.
    assert!(section(&stdout, 2).contains(&format!("--oidc-issuer-url={}\n", bed.issuer)));
    assert!(section(&stdout, 3).contains(&format!("name: \"oidc:{CC_CLIENT}\"")));
    let kuberc = section(&stdout, 6);
    assert!(
        kuberc.contains("credentialPluginPolicy: Allowlist"),
        "{kuberc}"
    );
    assert!(
        kuberc.contains(&format!("- command: \"{}\"", binary.display())),
        "{kuberc}"
    );
}

#[test]
fn setup_with_a_browser_login_shows_the_users_claims() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = authcode_args(&bed);
    args[0] = "setup".into();
    args.push("--scope=groups".into());
    let run = env
        .kubecred_owned(&args)
        .run()
        .success()
        .stderr_contains("  ok    browser login: ")
        .stderr_contains("  ok    PKCE: S256 listed")
        .stderr_contains("  warn  the provider lists the offline_access scope")
        .stderr_contains("  subject       alice")
        .stderr_contains("  email         alice@testbed.example (verified)")
        .stderr_contains("  groups        developers")
        .stderr_contains("  audience      kubecred");
    let stdout = run.stdout();
    let authn = section(&stdout, 1);
    assert!(
        authn.contains("      claim: email\n") && authn.contains("      claim: groups\n"),
        "{authn}"
    );
    let rbac = section(&stdout, 3);
    assert!(
        rbac.contains("name: \"oidc:alice@testbed.example\"")
            && rbac.contains("name: \"oidc:developers\""),
        "{rbac}"
    );
    assert!(section(&stdout, 5).contains("interactiveMode: IfAvailable"));
}

/// setup with these settings fails before any login, with this text on its error line.
fn fails_before_login(bed: &Testbed, issuer: &str, extra: &[&str], expected: &[&str]) {
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let mut args = setup_args(bed, &secret);
    args[1] = format!("--issuer-url={issuer}");
    args.extend(extra.iter().map(|s| s.to_string()));
    bed.reset_stats();
    let run = env.kubecred_owned(&args).run().failure(3);
    let line = run
        .stderr()
        .lines()
        .find(|l| l.starts_with("kubecred: error:"))
        .unwrap()
        .to_string();
    for text in expected {
        assert!(line.contains(text), "{text:?} in {line}");
    }
    assert_eq!(
        bed.total_token_requests(),
        0,
        "no login after a failed check"
    );
}

#[test]
fn setup_names_the_cause_and_the_fix_of_each_provider_problem() {
    let bed = Testbed::start();
    // Nothing listens on the port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    fails_before_login(
        &bed,
        &format!("http://127.0.0.1:{port}"),
        &[],
        &["connection refused", "check the URL"],
    );
    // No discovery document at that URL.
    fails_before_login(
        &bed,
        &format!("{}/realms/nope", bed.issuer),
        &[],
        &[
            "HTTP 404",
            "no OpenID discovery document",
            "set --issuer-url to the provider's issuer",
        ],
    );
    // The provider calls itself by another name than the one given.
    let other_name = bed.issuer.replace("127.0.0.1", "localhost");
    fails_before_login(
        &bed,
        &other_name,
        &[],
        &[
            &format!("names the issuer {}", bed.issuer),
            "set --issuer-url to exactly that",
        ],
    );
}

#[test]
fn setup_explains_an_untrusted_certificate_and_passes_the_ca_on() {
    let bed = Testbed::start_with(json!({"idpTls": true}));
    fails_before_login(
        &bed,
        &bed.issuer,
        &[],
        &[
            "not trust",
            "--certificate-authority=FILE",
            "--certificate-authority-data=BASE64",
        ],
    );
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let mut args = setup_args(&bed, &secret);
    args.push(format!("--certificate-authority={}", bed.ca_file.display()));
    let run = env.kubecred_owned(&args).run().success();
    let authn = section(&run.stdout(), 1);
    assert!(
        authn.contains("certificateAuthority: |\n      -----BEGIN CERTIFICATE-----"),
        "{authn}"
    );
}

/// A new user's password login: every setting the run needed (here --username) is in the
/// printed kubeconfig, whose args then log in on their own (the password from the environment,
/// as the printed env names it).
#[test]
fn setup_with_the_password_grant_prints_args_that_log_in() {
    let bed = Testbed::start_with(json!({"apiAudiences": ["kubecred-password"]}));
    let env = TestEnv::new();
    let password = "testbed-alice-password";
    let run = env
        .kubecred_owned(&[
            "setup".into(),
            format!("--issuer-url={}", bed.issuer),
            "--client-id=kubecred-password".into(),
            "--grant-type=password".into(),
            "--username=alice".into(),
        ])
        .env("KUBECRED_PASSWORD", password)
        .run()
        .success()
        .never_shows(&[password]);
    let kubeconfig = env.dir.path().join("generated-kubeconfig.yaml");
    std::fs::write(&kubeconfig, section(&run.stdout(), 5)).unwrap();
    let view = kubectl_json(
        &env,
        &kubeconfig,
        &["config", "view", "--raw", "-o", "json"],
    );
    let args: Vec<String> = view["users"][0]["user"]["exec"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(args.contains(&"--username=alice".to_string()), "{args:?}");
    let again = TestEnv::new();
    again
        .kubecred_owned(&args)
        .env("KUBECRED_PASSWORD", password)
        .run()
        .success();
}

/// A package manager's layout in the test's directory: this kubecred copied to `versioned`,
/// linked from `link` (both relative to the layout's root); the PATH that finds the link and
/// kubectl.
#[cfg(unix)]
fn package_layout(env: &TestEnv, versioned: &str, link: &str) -> (PathBuf, String) {
    let root = env.dir.path().join("packages");
    let file = root.join(versioned);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::copy(kubecred_bin(), &file).unwrap();
    let link = root.join(link);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let kubectl_dir = kubectl_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        link.parent().unwrap().display(),
        kubectl_dir.display()
    );
    (root, path)
}

/// [`setup_args`] with the test's cache, for a run outside `TestEnv::kubecred` (which adds it).
fn setup_args_with_cache(env: &TestEnv, bed: &Testbed, secret: &Path) -> Vec<String> {
    let mut args = setup_args(bed, secret);
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    args.push("--cache-storage=disk".into());
    args
}

/// What setup printed for kubectl: the set-credentials command (4), the YAML user's command
/// (5) and the kuberc entry (6).
fn printed_commands(stdout: &str) -> (String, String, String) {
    let yaml = section(stdout, 5);
    let command = yaml
        .lines()
        .find_map(|line| line.trim().strip_prefix("command: "))
        .unwrap_or_else(|| panic!("no command in\n{yaml}"))
        .to_string();
    (section(stdout, 4), command, section(stdout, 6))
}

/// Runs the kubeconfig user of section 5 against the API stand-in with `path` as PATH.
fn printed_user_works(env: &TestEnv, bed: &Testbed, stdout: &str, path: &str) {
    let kubeconfig = env.dir.path().join("printed-user.yaml");
    std::fs::write(&kubeconfig, section(stdout, 5)).unwrap();
    use_testbed_cluster(env, bed, &kubeconfig);
    let ca = format!("--certificate-authority={}", bed.ca_file.display());
    env.kubectl(&kubeconfig, &[&ca, "auth", "whoami"])
        .env("PATH", path)
        .run()
        .success()
        .stdout_contains(CC_CLIENT);
}

/// krew installs the binary in a versioned store and links only `kubectl-kubecred` onto PATH;
/// `krew upgrade` deletes the store directory. setup, run as the plugin, prints the link's name
/// (which that PATH runs) and explains it, never the store path.
#[cfg(unix)]
#[test]
fn setup_under_krew_prints_the_plugin_name_on_path_and_no_store_path() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let (root, path) = package_layout(
        &env,
        "krew/store/kubecred/v0.1.0/kubecred",
        "krew/bin/kubectl-kubecred",
    );
    let args = setup_args_with_cache(&env, &bed, &secret);
    let run = std::process::Command::new(kubectl_bin())
        .env_clear()
        .env("PATH", &path)
        .env("HOME", env.home())
        .arg("kubecred")
        .args(&args)
        .run()
        .success();
    let stdout = run.stdout();
    let (set_credentials, command, kuberc) = printed_commands(&stdout);
    assert_eq!(command, "\"kubectl-kubecred\"");
    assert!(
        set_credentials.contains("--exec-command=kubectl-kubecred'"),
        "{set_credentials}"
    );
    assert!(
        kuberc.contains("- command: \"kubectl-kubecred\""),
        "{kuberc}"
    );
    assert!(
        stdout.contains("(krew links no `kubecred`)"),
        "the stanza says why:\n{stdout}"
    );
    for path_part in ["store", &root.display().to_string()] {
        assert!(
            !stdout.contains(path_part),
            "{path_part:?} printed:\n{stdout}"
        );
    }
    // The name exists on that PATH, and kubectl runs the printed user with it.
    printed_user_works(&env, &bed, &stdout, &path);
}

/// Homebrew's layout: the binary in a versioned Cellar directory, linked as `bin/kubecred`.
#[cfg(unix)]
#[test]
fn setup_under_homebrew_prints_kubecred_not_the_cellar_path() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let secret = secret_file(&env);
    let (_, path) = package_layout(
        &env,
        "brew/Cellar/kubecred/0.1.0/bin/kubecred",
        "brew/bin/kubecred",
    );
    let args = setup_args_with_cache(&env, &bed, &secret);
    let run = std::process::Command::new("kubecred")
        .env_clear()
        .env("PATH", &path)
        .env("HOME", env.home())
        .args(&args)
        .run()
        .success();
    let stdout = run.stdout();
    let (set_credentials, command, _) = printed_commands(&stdout);
    assert_eq!(command, "\"kubecred\"");
    assert!(
        set_credentials.contains("--exec-command=kubecred'"),
        "{set_credentials}"
    );
    assert!(!stdout.contains("Cellar"), "{stdout}");
    assert!(
        !stdout.contains("# command"),
        "no note for the plain name:\n{stdout}"
    );
    printed_user_works(&env, &bed, &stdout, &path);
}

/// The body of the stdout section whose title starts with `title`.
fn titled_section(stdout: &str, title: &str) -> String {
    let marker = format!("# ==== {title}");
    let start = stdout
        .find(&marker)
        .unwrap_or_else(|| panic!("no section {title:?} in\n{stdout}"));
    let body = &stdout[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("# ==== ").unwrap_or(body.len());
    body[..end].to_string()
}

/// The audiences an AuthenticationConfiguration's one JWT authenticator accepts, as printed.
fn printed_audiences(authn: &str) -> Vec<String> {
    let list = &authn[authn.find("    audiences:\n").expect(authn) + "    audiences:\n".len()..];
    list.lines()
        .map_while(|line| line.strip_prefix("    - "))
        .map(|quoted| serde_json::from_str(quoted).unwrap())
        .collect()
}

/// `setup --shared-login` with two `--cluster`s: one browser login, each cluster's token derived
/// from it; each API server's configuration accepts its own cluster's token and refuses the
/// other's; the printed kubeconfig (one user, a cluster with its target and a context each)
/// loads in kubectl, whose contexts reach the tokens setup cached (both clusters are the API
/// stand-in, told which audience to accept), and --write-kubeconfig writes the same.
#[test]
fn setup_with_a_shared_login_advises_each_cluster_apart() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    // alpha's target is its server (the default), beta's its own.
    let alpha = bed.api_server.as_str();
    let (beta_server, beta) = (bed.api_server.as_str(), "https://beta.testbed.example/api");
    let written = env.dir.path().join("written.yaml");
    let mut args = authcode_args(&bed);
    args[0] = "setup".into();
    args.extend([
        "--shared-login".into(),
        format!("--cluster=alpha={alpha}"),
        format!("--cluster=beta={beta_server},{beta}"),
        "--write-kubeconfig".into(),
        format!("--kubeconfig={}", written.display()),
    ]);
    let run = env
        .kubecred_owned(&args)
        .run()
        .success()
        .stderr_contains("kubecred: cluster \"alpha\": with the configuration below, kube-apiserver sees you as \"oidc:")
        .stderr_contains("kubecred: cluster \"beta\": with the configuration below, kube-apiserver sees you as \"oidc:");
    let stdout = run.stdout();
    // The login's refresh token is the login entry's, not in the first cluster's token.
    assert!(
        !run.stderr().contains("no refresh token was issued"),
        "{}",
        run.stderr()
    );

    // Each API server accepts its own target's audience, and only that.
    let authn_of =
        |name: &str| titled_section(&stdout, &format!("1. API server of cluster \"{name}\""));
    assert_eq!(printed_audiences(&authn_of("alpha")), [alpha]);
    assert_eq!(printed_audiences(&authn_of("beta")), [beta]);
    assert!(
        titled_section(&stdout, "2. API server of cluster \"beta\"")
            .contains(&format!("--oidc-client-id={beta}\n"))
    );

    // The printed kubeconfig, as kubectl reads it.
    let printed = env.dir.path().join("printed.yaml");
    std::fs::write(&printed, section(&stdout, 5)).unwrap();
    let view = kubectl_json(&env, &printed, &["config", "view", "-o", "json"]);
    let exec = &view["users"][0]["user"]["exec"];
    assert_eq!(view["users"][0]["name"], "oidc");
    assert_eq!(exec["provideClusterInfo"], true);
    let exec_args: Vec<&str> = exec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(exec_args.contains(&"--shared-login"), "{exec_args:?}");
    let login_resources: Vec<&str> = exec_args
        .iter()
        .filter_map(|a| a.strip_prefix("--login-resource="))
        .collect();
    assert_eq!(login_resources, [alpha, beta]);
    assert!(
        !exec_args.iter().any(|a| a.starts_with("--resource")),
        "the target is each cluster's: {exec_args:?}"
    );
    let extension_of = |view: &Value, name: &str| {
        let cluster = view["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no cluster {name} in {view}"))
            .clone();
        let extension = cluster["cluster"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "client.authentication.k8s.io/exec")
            .unwrap_or_else(|| panic!("no kubecred extension in {cluster}"))
            .clone();
        (
            cluster["cluster"]["server"].clone(),
            extension["extension"].clone(),
        )
    };
    assert_eq!(
        extension_of(&view, "alpha"),
        (json!(alpha), json!({"resource": alpha}))
    );
    assert_eq!(
        extension_of(&view, "beta"),
        (json!(beta_server), json!({"resource": beta}))
    );
    assert_eq!(view["current-context"], "alpha");

    // Each cluster's context reaches the token setup derived for it (no request to the
    // provider), which its own configuration accepts and the other cluster's refuses.
    let authn_file = |name: &str| {
        let path = env.dir.path().join(format!("authn-{name}.yaml"));
        std::fs::write(&path, authn_of(name)).unwrap();
        path
    };
    let (alpha_authn, beta_authn) = (authn_file("alpha"), authn_file("beta"));
    bed.reset_stats();
    for (context, own, other) in [
        ("alpha", &alpha_authn, &beta_authn),
        ("beta", &beta_authn, &alpha_authn),
    ] {
        let whoami = |authn: &Path| {
            env.kubecred_owned(&[
                "whoami".into(),
                format!("--kubeconfig={}", printed.display()),
                format!("--context={context}"),
                format!("--authentication-config={}", authn.display()),
            ])
            .run()
        };
        whoami(own)
            .success()
            .stdout_contains("authenticates this token as:")
            .stdout_contains("  username  oidc:");
        let refused = whoami(other).failure(1).stderr();
        assert!(
            refused.contains("would reject this token"),
            "{context}: {refused}"
        );
    }
    assert_eq!(
        bed.total_token_requests(),
        0,
        "setup cached each cluster's token"
    );

    // The real kubectl hands each context's cluster extension to kubecred: an API server that
    // accepts beta's audience alone lets beta's context in, from the cache, and not alpha's.
    bed.configure(json!({"apiAudiences": [beta]}));
    let ca = format!("--certificate-authority={}", bed.ca_file.display());
    env.kubectl(&printed, &[&ca, "--context=beta", "auth", "whoami"])
        .run()
        .success()
        .stdout_contains("Username    alice");
    assert_eq!(
        bed.total_token_requests(),
        0,
        "beta's token came from the cache"
    );
    let refused = env
        .kubectl(&printed, &[&ca, "--context=alpha", "auth", "whoami"])
        .run();
    assert!(!refused.output.status.success());
    refused.stderr_contains("Unauthorized");

    // --write-kubeconfig wrote the same user, clusters and contexts, the first one current.
    let contexts = env
        .kubectl(&written, &["config", "get-contexts", "-o", "name"])
        .run()
        .success()
        .stdout();
    assert_eq!(contexts.lines().collect::<Vec<_>>(), ["alpha", "beta"]);
    let wrote = kubectl_json(&env, &written, &["config", "view", "-o", "json"]);
    assert_eq!(wrote["current-context"], "alpha");
    assert_eq!(
        wrote["users"][0]["user"]["exec"],
        view["users"][0]["user"]["exec"]
    );
    assert_eq!(extension_of(&wrote, "alpha"), extension_of(&view, "alpha"));
    assert_eq!(extension_of(&wrote, "beta"), extension_of(&view, "beta"));
    for context in wrote["contexts"].as_array().unwrap() {
        assert_eq!(context["context"]["user"], "oidc");
        assert_eq!(context["context"]["cluster"], context["name"]);
    }
}
