//! The kubeconfig samples stay true: kubectl loads each one, and kubecred accepts every exec
//! stanza in it — its arguments and `KUBECRED_*` environment parse with kubecred's own clap
//! definitions (a misspelt flag or variable fails), and the settings resolve as `get-token` would
//! resolve them (values, the cluster extension kubectl would hand over, grant requirements).

use crate::support::manual::{read, section};
use crate::support::*;
use kubecred::cli::{Cli, Command};
use kubecred::config::{Config, Environment};
use kubecred::exec_credential::ExecInfo;
use serde_json::{Value, json};

/// The provider samples docs/providers.md promises and links; each file must exist (a rename would
/// break the link).
const PROVIDERS: &[&str] = &[
    "dex.yaml",
    "keycloak.yaml",
    "okta.yaml",
    "entra-id.yaml",
    "google.yaml",
    "auth0.yaml",
    "gitlab.yaml",
    "authentik.yaml",
];

#[test]
fn every_sample_loads_in_kubectl_and_its_settings_resolve() {
    let env = TestEnv::new();
    let dir = repo_root().join("kubeconfig-samples");
    let providers = read("docs/providers.md");
    let reference = read("docs/reference/settings.md");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml"),
            "{}: kubeconfig-samples/ holds only .yaml kubeconfigs",
            path.display()
        );
        files.push(path);
    }
    files.sort();
    for provider in PROVIDERS {
        assert!(
            files.iter().any(|f| f.ends_with(provider)),
            "kubeconfig-samples/{provider} is missing"
        );
    }

    for provider in PROVIDERS {
        assert!(
            providers.contains(&format!("(../kubeconfig-samples/{provider})")),
            "docs/providers.md does not link kubeconfig-samples/{provider}"
        );
    }

    // docs/providers.md says "every file in kubeconfig-samples/": its table lists every one.
    let table = section(&providers, "## kubeconfig samples");
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(
            table.contains(&format!("| [`{name}`](../kubeconfig-samples/{name}) |")),
            "docs/providers.md's kubeconfig samples table does not list {name}"
        );
    }

    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.starts_with("# "),
            "{name}: a sample starts with comments saying what it is for and how to set up the provider"
        );
        let run = env
            .kubectl(path, &["config", "view", "-o", "json"])
            .run()
            .success();
        let config: Value = serde_json::from_str(&run.stdout()).unwrap();
        let users = config["users"].as_array().unwrap();
        assert!(!users.is_empty(), "{name}: no users");
        for user in users {
            check_exec_stanza(&name, &config, user, &reference);
        }
    }
}

/// One user's exec stanza: kubecred, get-token, arguments and environment that parse, settings
/// that resolve with the cluster extension of every context that uses this user.
fn check_exec_stanza(file: &str, config: &Value, user: &Value, reference: &str) {
    let user_name = user["name"].as_str().unwrap();
    let at = format!("{file}: user {user_name}");
    let exec = &user["user"]["exec"];
    assert_eq!(exec["command"], "kubecred", "{at}");
    let api_version = exec["apiVersion"].as_str().unwrap();
    assert!(
        api_version == V1 || api_version == V1BETA1,
        "{at}: {api_version}"
    );

    let mut argv = vec!["kubecred".to_string()];
    argv.extend(
        exec["args"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: no args"))
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    // `KUBECRED_<FLAG>` is `--<flag>` (a test in cli/mod.rs keeps every flag's variable so): parsing
    // the variables as flags checks their names and values with the same definitions.
    let mut verbose = None;
    for var in exec["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap();
        let value = var["value"].as_str().unwrap();
        if name == "KUBECRED_VERBOSE" {
            // Not a flag's variable: `-v` counts, the variable holds the level.
            verbose = Some(value.to_string());
            continue;
        }
        // Others (HTTPS_PROXY, SSL_CERT_FILE, …) are the environment's business, not kubecred's.
        let Some(flag) = name.strip_prefix("KUBECRED_") else {
            continue;
        };
        let flag = flag.to_lowercase().replace('_', "-");
        argv.push(format!("--{flag}={value}"));
    }
    let cli = Cli::try_parse_command_line(argv.clone())
        .unwrap_or_else(|err| panic!("{at}: {argv:?}: {err}"));
    let Command::GetToken(args) = cli.command else {
        panic!("{at}: the exec stanza must run `kubecred get-token`")
    };
    let provide_cluster_info = exec["provideClusterInfo"].as_bool().unwrap_or(false);
    let mut resolved = 0;
    for context in config["contexts"].as_array().unwrap() {
        if context["context"]["user"] != user_name {
            continue;
        }
        let cluster_name = &context["context"]["cluster"];
        let cluster = config["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| &c["name"] == cluster_name)
            .unwrap_or_else(|| panic!("{at}: no cluster {cluster_name}"));
        let extension = cluster["cluster"]["extensions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == "client.authentication.k8s.io/exec")
            .map(|e| e["extension"].clone());
        if let Some(Value::Object(keys)) = &extension {
            assert!(
                provide_cluster_info,
                "{at}: the cluster has a kubecred extension but the stanza lacks provideClusterInfo: true"
            );
            for key in keys.keys() {
                assert!(
                    reference.contains(&format!("| `{key}` |")),
                    "{at}: extension key {key} is not one of the Settings reference's extension keys"
                );
            }
        }
        // What kubectl puts in KUBERNETES_EXEC_INFO for this stanza.
        let mut spec = json!({"interactive": false});
        if provide_cluster_info {
            spec["cluster"] = json!({
                "server": cluster["cluster"]["server"],
                "config": extension,
            });
        }
        let info = json!({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec});
        let exec_info = || ExecInfo::parse(Some(&info.to_string())).unwrap();
        let env = Environment {
            verbose: verbose.clone(),
            ..Environment::default()
        };
        // A confidential client's secret comes from the job's environment, never the sample:
        // asking for exactly that is the one refusal allowed, and with it the settings resolve.
        let resolved_with_env_secret = match Config::resolve(&args, &env, exec_info()) {
            Err(err) if format!("{err:#}").contains("KUBECRED_CLIENT_SECRET") => {
                let mut with_secret = args.clone();
                with_secret.client_secret = Some("from-the-job-environment".into());
                Config::resolve(&with_secret, &env, exec_info())
            }
            other => other,
        };
        if let Err(err) = resolved_with_env_secret {
            panic!("{at} in context {}: {err:#}", context["name"]);
        }
        resolved += 1;
    }
    assert!(resolved > 0, "{at}: no context uses this user");
}

#[test]
fn a_misspelt_flag_in_a_sample_would_fail() {
    // The check above is only worth something if kubecred refuses what it does not know.
    for argv in [
        &["kubecred", "get-token", "--isuer-url=https://idp.example"][..],
        &["kubecred", "get-token", "--grant-type=device"][..],
    ] {
        assert!(Cli::try_parse_command_line(argv).is_err(), "{argv:?}");
    }
}

/// The code spans of a provider section's "**kubecred**" item: the settings it quotes.
fn quoted_settings(section_text: &str) -> Vec<String> {
    let item = section_text
        .split("\n- ")
        .find(|item| item.starts_with("**kubecred**"))
        .unwrap_or_default();
    crate::troubleshooting::code_spans(&item.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[test]
fn the_providers_page_quotes_the_samples_settings() {
    let page = read("docs/providers.md");
    let mut problems = Vec::new();
    let mut checked = 0;
    for provider in PROVIDERS {
        let link = format!("(../kubeconfig-samples/{provider})");
        let Some(section_text) = page
            .split("\n## ")
            .skip(1)
            .find(|part| part.contains(&link) && !part.starts_with("kubeconfig samples"))
        else {
            problems.push(format!("no section of docs/providers.md links {provider}"));
            continue;
        };
        let sample = read(&format!("kubeconfig-samples/{provider}"));
        let settings = quoted_settings(section_text);
        if settings.len() < 3 {
            problems.push(format!("{provider}: its section quotes {settings:?}"));
        }
        for setting in settings {
            checked += 1;
            if !sample.contains(&setting) {
                problems.push(format!(
                    "{provider}: the page says `{setting}`, the sample does not"
                ));
            }
        }
    }
    assert!(checked > 20, "checked {checked} settings");
    assert!(problems.is_empty(), "{problems:#?}");
    // The check can fail.
    assert_eq!(
        quoted_settings("x\n- **kubecred**: `--a=1`\n  `--b=2`\n- **API server**: `c`"),
        ["--a=1", "--b=2"]
    );
}
