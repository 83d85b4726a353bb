//! Reading a kubeconfig the way kubectl does, for `kubecred whoami`: the files of `--kubeconfig`,
//! else `$KUBECONFIG` (a path list), else `~/.kube/config`; merged as client-go merges them (the
//! first file that sets `current-context`, or names a context or user, wins); then the current
//! context's user's `exec` stanza, which must run kubecred. `whoami` reuses that stanza's `args`
//! and `env` — and with `provideClusterInfo`, the cluster's `client.authentication.k8s.io/exec`
//! extension — so it sees the settings kubectl would run kubecred with.
//!
//! Only `whoami` reads a kubeconfig; `get-token` gets everything from kubectl.

use crate::error::{Exit, fail};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The name under which client-go passes a cluster's extension to exec plugins.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// What `whoami` needs from the current context: how kubectl runs kubecred there.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecStanza {
    pub context: String,
    pub user: String,
    pub api_version: Option<String>,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The cluster's server URL and exec extension, when the stanza sets `provideClusterInfo`.
    pub cluster: Option<(Option<String>, Option<serde_json::Value>)>,
}

#[derive(Deserialize, Default)]
struct File {
    #[serde(default, rename = "current-context")]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Vec<Named<ContextBody>>,
    #[serde(default)]
    users: Vec<Named<UserBody>>,
    #[serde(default)]
    clusters: Vec<Named<ClusterBody>>,
}

#[derive(Deserialize, Clone)]
struct Named<T> {
    name: String,
    #[serde(
        alias = "context",
        alias = "user",
        alias = "cluster",
        alias = "extension"
    )]
    body: Option<T>,
}

#[derive(Deserialize, Clone)]
struct ContextBody {
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Deserialize, Clone)]
struct UserBody {
    #[serde(default)]
    exec: Option<ExecBody>,
}

#[derive(Deserialize, Clone)]
struct ExecBody {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    command: String,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<Vec<EnvVar>>,
    #[serde(default, rename = "provideClusterInfo")]
    provide_cluster_info: bool,
}

#[derive(Deserialize, Clone)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Deserialize, Clone)]
struct ClusterBody {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    extensions: Vec<Named<serde_json::Value>>,
}

/// The kubeconfig files kubectl would read: `explicit`, else `$KUBECONFIG`, else ~/.kube/config.
pub fn paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    vec![home.join(".kube").join("config")]
}

/// The kubecred exec stanza of `context` (default: the current context) in `files`.
pub fn exec_stanza(files: &[PathBuf], context: Option<&str>) -> anyhow::Result<ExecStanza> {
    let shown = files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let mut loaded = Vec::new();
    for path in files {
        match std::fs::read_to_string(path) {
            Ok(text) => loaded.push(serde_norway::from_str::<File>(&text).map_err(|err| {
                fail(
                    Exit::Input,
                    format!("the kubeconfig {} is not valid YAML: {err}", path.display()),
                )
            })?),
            // kubectl skips listed files that do not exist.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(fail(
                    Exit::Input,
                    format!("cannot read the kubeconfig {}: {err}", path.display()),
                ));
            }
        }
    }
    if loaded.is_empty() {
        // Every file is missing: say so, rather than that the (absent) file names no context.
        let missing = match files {
            [one] => format!("the kubeconfig {} does not exist", one.display()),
            _ => format!("none of the kubeconfig files {shown} exists"),
        };
        return Err(fail(
            Exit::Input,
            format!(
                "{missing}; pass --kubeconfig with an existing file, or the settings flags (--issuer-url, --client-id)"
            ),
        ));
    }
    resolve(&loaded, context).map_err(|reason| {
        fail(
            Exit::Input,
            format!("{reason} (kubeconfig {shown}); pass --context, --kubeconfig, or the settings flags (--issuer-url, --client-id)"),
        )
    })
}

fn resolve(files: &[File], context: Option<&str>) -> Result<ExecStanza, String> {
    let context_name = match context {
        Some(name) => name.to_string(),
        None => files
            .iter()
            .find_map(|f| f.current_context.clone().filter(|c| !c.is_empty()))
            .ok_or("no current-context is set")?,
    };
    let context_body = files
        .iter()
        .flat_map(|f| &f.contexts)
        .find(|c| c.name == context_name)
        .and_then(|c| c.body.clone())
        .ok_or_else(|| format!("there is no context {context_name:?}"))?;
    let user_body = files
        .iter()
        .flat_map(|f| &f.users)
        .find(|u| u.name == context_body.user)
        .and_then(|u| u.body.clone())
        .ok_or_else(|| {
            format!(
                "the context {context_name:?} names the user {:?}, which is not defined",
                context_body.user
            )
        })?;
    let exec = user_body.exec.ok_or_else(|| {
        format!(
            "the user {:?} of context {context_name:?} has no exec stanza",
            context_body.user
        )
    })?;
    let program = Path::new(&exec.command)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !(program.starts_with("kubecred") || program.starts_with("kubectl-kubecred")) {
        return Err(format!(
            "the user {:?} of context {context_name:?} runs {:?}, not kubecred",
            context_body.user, exec.command
        ));
    }
    let cluster = if exec.provide_cluster_info {
        let body = files
            .iter()
            .flat_map(|f| &f.clusters)
            .find(|c| c.name == context_body.cluster)
            .and_then(|c| c.body.clone());
        Some(match body {
            Some(body) => {
                let extension = body
                    .extensions
                    .into_iter()
                    .find(|e| e.name == EXEC_EXTENSION)
                    .and_then(|e| e.body);
                (body.server, extension)
            }
            None => (None, None),
        })
    } else {
        None
    };
    Ok(ExecStanza {
        context: context_name,
        user: context_body.user,
        api_version: exec.api_version,
        command: exec.command,
        args: exec.args.unwrap_or_default(),
        env: exec
            .env
            .unwrap_or_default()
            .into_iter()
            .map(|v| (v.name, v.value))
            .collect(),
        cluster,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> File {
        serde_norway::from_str(text).unwrap()
    }

    const CONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://api.example
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {issuerURL: "https://idp.example"}
contexts:
- name: dev
  context: {cluster: c1, user: sso}
- name: other
  context: {cluster: c1, user: token-user}
users:
- name: sso
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /usr/local/bin/kubecred
      args: [get-token, --client-id=k]
      env: [{name: KUBECRED_SCOPE, value: groups}]
      provideClusterInfo: true
- name: token-user
  user: {token: abc}
"#;

    #[test]
    fn the_current_contexts_kubecred_stanza() {
        let stanza = resolve(&[parse(CONFIG)], None).unwrap();
        assert_eq!(stanza.context, "dev");
        assert_eq!(stanza.args, ["get-token", "--client-id=k"]);
        assert_eq!(
            stanza.env,
            [("KUBECRED_SCOPE".to_string(), "groups".to_string())]
        );
        let (server, extension) = stanza.cluster.unwrap();
        assert_eq!(server.as_deref(), Some("https://api.example"));
        assert_eq!(extension.unwrap()["issuerURL"], "https://idp.example");
    }

    #[test]
    fn the_first_file_wins_and_errors_say_what_is_missing() {
        let first = parse("current-context: other\n");
        assert!(
            resolve(&[first, parse(CONFIG)], None)
                .unwrap_err()
                .contains("has no exec stanza")
        );
        assert!(
            resolve(&[parse(CONFIG)], Some("nope"))
                .unwrap_err()
                .contains("no context \"nope\"")
        );
        assert!(
            resolve(&[parse("{}")], None)
                .unwrap_err()
                .contains("no current-context")
        );
        let foreign = CONFIG.replace("/usr/local/bin/kubecred", "kubelogin");
        assert!(
            resolve(&[parse(&foreign)], None)
                .unwrap_err()
                .contains("not kubecred")
        );
    }

    #[test]
    fn kubeconfig_files_that_do_not_exist_are_named_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-config");
        let err = exec_stanza(std::slice::from_ref(&missing), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the kubeconfig {} does not exist; pass --kubeconfig with an existing file, or the settings flags (--issuer-url, --client-id)",
                missing.display()
            )
        );
        let two = [missing.clone(), dir.path().join("other")];
        assert!(
            exec_stanza(&two, None)
                .unwrap_err()
                .to_string()
                .starts_with("none of the kubeconfig files ")
        );
        // One missing beside one that exists: kubectl skips it, and so does kubecred.
        let present = dir.path().join("config");
        std::fs::write(&present, CONFIG).unwrap();
        exec_stanza(&[missing, present], None).unwrap();
    }
}
