//! The kubeconfig samples stay true: kubectl loads each one, and kubecred accepts the arguments
//! of every exec stanza in it.

use crate::support::*;

#[test]
fn every_sample_loads_in_kubectl_and_its_arguments_parse() {
    let env = TestEnv::new();
    let dir = repo_root().join("kubeconfig-samples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let run = env
            .kubectl(&path, &["config", "view", "-o", "json"])
            .run()
            .success();
        let config: serde_json::Value = serde_json::from_str(&run.stdout()).unwrap();
        for user in config["users"].as_array().unwrap() {
            let exec = &user["user"]["exec"];
            assert_eq!(exec["command"], "kubecred", "{}", path.display());
            let args: Vec<String> = exec["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            let argv = std::iter::once("kubecred".to_string()).chain(args);
            if let Err(err) = kubecred::cli::Cli::try_parse_command_line(argv) {
                panic!("{}: {err}", path.display());
            }
            seen += 1;
        }
    }
    assert!(
        seen >= 4,
        "expected at least four exec stanzas, found {seen}"
    );
}
