//! The library example `examples/token_file_plugin.rs` works as an exec plugin: the real kubectl
//! runs it against the HTTPS API stand-in with a token kubecred obtained, through both exec
//! apiVersions, with the token file named in the argument or in the cluster extension; and it
//! fails the way kubecred does (one line, nothing on stdout) on a token without an expiry.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The example's binary, which `cargo test` builds (as scripts/test.sh and CI run it) beside the
/// test binary: target/<profile>/examples. Not built here: a cargo run inside the tests would
/// rebuild kubecred's own binary under the feet of the tests running it (`cargo build` and
/// `cargo test` keep apart artifacts). A run of only this test binary (`cargo test --test it`)
/// uses what the last full `cargo test` built, or skips when there is none (fails under CI).
fn token_file_plugin() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let plugin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/token_file_plugin");
    if plugin.exists() {
        return Some(plugin);
    }
    assert!(
        !is_ci(),
        "{} is missing: CI runs a full `cargo test`",
        plugin.display()
    );
    skipped("needs examples/token_file_plugin built; run `cargo test` (it builds the examples)");
    None
}

/// A kubeconfig like the harness writes, with the example as the exec command.
fn kubeconfig_running_the_example(
    plugin: &Path,
    env: &TestEnv,
    bed: &Testbed,
    api_version: &'static str,
    args: Vec<String>,
    extension: Option<Value>,
) -> PathBuf {
    let mut spec = KubeconfigSpec::new(api_version, vec!["get-token".into()]);
    if let Some(extension) = extension {
        spec.provide_cluster_info = true;
        spec.cluster_extension = Some(extension);
    }
    let path = env.kubeconfig(bed, spec);
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let exec = &mut config["users"][0]["user"]["exec"];
    exec["command"] = json!(plugin);
    exec["args"] = json!(args);
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

fn whoami(env: &TestEnv, kubeconfig: &Path) -> String {
    let run = env
        .kubectl(kubeconfig, &["auth", "whoami", "-o", "json"])
        .run()
        .success();
    let review: Value = serde_json::from_str(&run.stdout()).unwrap();
    review["status"]["userInfo"]["username"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn token_file_plugin_serves_kubectl_from_a_token_file() {
    let Some(plugin) = token_file_plugin() else {
        return;
    };
    let bed = Testbed::start();
    let env = TestEnv::new();
    // A real token from the provider, as another tool would have left it in a file.
    let token = env
        .kubecred_owned(&env.cc_args(&bed))
        .run()
        .success()
        .token();
    let token_file = env.dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let file_arg = token_file.display().to_string();

    for api_version in [V1, V1BETA1] {
        let kubeconfig = kubeconfig_running_the_example(
            &plugin,
            &env,
            &bed,
            api_version,
            vec![file_arg.clone()],
            None,
        );
        assert_eq!(whoami(&env, &kubeconfig), CC_CLIENT, "{api_version}");
    }
    // The token file named by the cluster extension (provideClusterInfo) instead.
    let extension = json!({"tokenFile": file_arg});
    let kubeconfig =
        kubeconfig_running_the_example(&plugin, &env, &bed, V1, vec![], Some(extension));
    assert_eq!(whoami(&env, &kubeconfig), CC_CLIENT);
    assert_eq!(bed.stats()["api"]["unauthorized"], 0);

    // Run directly: the apiVersion of KUBERNETES_EXEC_INFO is echoed, the expiry is the JWT's.
    let run = Command::new(&plugin)
        .arg(&token_file)
        .env("KUBERNETES_EXEC_INFO", exec_info(V1, false))
        .run()
        .success();
    let credential = run.credential();
    assert_eq!(credential["apiVersion"], V1);
    assert_eq!(credential["status"]["token"], token.as_str());
    let exp = jwt_claims(&token)["exp"].as_i64().unwrap();
    let expiry = chrono::DateTime::from_timestamp(exp, 0).unwrap();
    assert_eq!(
        credential["status"]["expirationTimestamp"],
        expiry.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
}

#[test]
fn token_file_plugin_fails_in_one_line_without_a_usable_token() {
    let Some(plugin) = token_file_plugin() else {
        return;
    };
    let env = TestEnv::new();
    let not_a_jwt = env.dir.path().join("opaque");
    std::fs::write(&not_a_jwt, "opaque-token-value").unwrap();
    let missing = env.dir.path().join("missing");
    for (args, says) in [
        (
            vec![not_a_jwt.display().to_string()],
            "is not a JWT with an exp claim",
        ),
        (
            vec![missing.display().to_string()],
            "reading the token file",
        ),
        (vec![], "no token file"),
    ] {
        let run = Command::new(&plugin)
            .args(&args)
            .env_remove("KUBERNETES_EXEC_INFO")
            .stdin(Stdio::null())
            .run();
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "{args:?}: {}",
            run.stderr()
        );
        assert_eq!(run.stdout(), "", "{args:?}");
        let stderr = run.stderr();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("opaque-token-value"), "{stderr}");
    }
}
