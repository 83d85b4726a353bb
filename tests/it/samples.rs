//! The kubeconfig samples stay true: kubectl loads each one, and kubecred accepts the arguments
//! of every exec stanza in it and resolves them into settings (with the cluster extension as
//! kubectl would pass it), so a sample cannot hold a conflicting or missing setting.

use crate::support::*;
use kubecred::config::{Config, Environment};
use kubecred::exec_credential::ExecInfo;

/// Samples whose settings are completed by the job's environment, and what resolving them
/// without it must ask for.
const NEEDS_ENVIRONMENT: [(&str, &str); 2] = [
    (
        "client-credentials-secret-from-env.yaml",
        "KUBECRED_CLIENT_SECRET",
    ),
    ("ci-client-credentials.yaml", "KUBECRED_CLIENT_SECRET"),
];

#[test]
fn every_sample_loads_in_kubectl_and_its_settings_resolve() {
    let env = TestEnv::new();
    let dir = repo_root().join("kubeconfig-samples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let run = env
            .kubectl(&path, &["config", "view", "-o", "json"])
            .run()
            .success();
        let config: serde_json::Value = serde_json::from_str(&run.stdout()).unwrap();
        for user in config["users"].as_array().unwrap() {
            let exec = &user["user"]["exec"];
            assert_eq!(exec["command"], "kubecred", "{name}");
            let args: Vec<String> = exec["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            // The stanza's KUBECRED_<FLAG> variables, as the flags they stand for.
            let from_env = exec["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|var| {
                    let flag = var["name"].as_str()?.strip_prefix("KUBECRED_")?;
                    let value = var["value"].as_str()?;
                    Some(format!(
                        "--{}={value}",
                        flag.to_lowercase().replace('_', "-")
                    ))
                });
            let argv = std::iter::once("kubecred".to_string())
                .chain(args)
                .chain(from_env);
            let cli = kubecred::cli::Cli::try_parse_command_line(argv)
                .unwrap_or_else(|err| panic!("{name}: {err}"));
            let kubecred::cli::Command::GetToken(token_args) = cli.command else {
                panic!("{name}: the exec stanza runs get-token")
            };
            // The cluster extension, as kubectl passes it with provideClusterInfo.
            let extension = config["clusters"][0]["cluster"]["extensions"]
                .as_array()
                .and_then(|all| all.first())
                .map(|ext| ext["extension"].clone());
            let exec_info = serde_json::json!({
                "apiVersion": "client.authentication.k8s.io/v1",
                "spec": {"interactive": false, "cluster": {"config": extension}},
            });
            let exec_info = ExecInfo::parse(Some(&exec_info.to_string())).unwrap();
            let resolved = Config::resolve(&token_args, &Environment::default(), exec_info);
            match NEEDS_ENVIRONMENT.iter().find(|(file, _)| *file == name) {
                Some((_, variable)) => {
                    let err = format!("{:#}", resolved.unwrap_err());
                    assert!(err.contains(variable), "{name}: {err}");
                }
                None => {
                    resolved.unwrap_or_else(|err| panic!("{name}: {err:#}"));
                }
            }
            seen += 1;
        }
    }
    assert!(
        seen >= 12,
        "expected at least twelve exec stanzas, found {seen}"
    );
}
