//! kubectl's kubeconfig, read and written as kubectl does, for the commands that deal with it
//! (`whoami`, `setup --write-kubeconfig`, `convert-kubeconfig`); `get-token` gets everything
//! from kubectl and never reads one.
//!
//! [`Kubeconfig`] is the set of files kubectl reads — `--kubeconfig`, else each of
//! `$KUBECONFIG` (a path list, duplicates once), else `.kube/config` in the home directory
//! client-go finds, which on Windows is not `HOME` alone ([`paths`]) — each parsed
//! as an editable [`edit::Document`], and merged as client-go merges them: the first file that
//! defines a context, user or cluster, or sets `current-context`, wins. An edit goes where
//! kubectl would put it: into the file that defines the entry, else the file kubectl writes new
//! entries to (the first file that exists, else the last one named, created when written). The
//! changed files are written together or not at all ([`Kubeconfig::write`], `file_replace.rs`:
//! a 0600 backup beside each, atomic, mode and owner kept), each edited in place where its
//! layout allows (`edit.rs`). `exec.rs` is the typed exec stanza every command reads and writes.
//!
//! [`Kubeconfig::context_exec`] is what `whoami` reads: a context's (by default the current
//! one's) user's exec stanza, which must run kubecred, and with `provideClusterInfo` the
//! cluster's server and `client.authentication.k8s.io/exec` extension — so that it sees the
//! settings kubectl would run kubecred with.

pub mod edit;
pub mod exec;

pub use edit::{Layout, Section};
pub use exec::{EnvVar, ExecStanza, InteractiveMode};

use crate::env_vars;
use crate::error::{Exit, fail};
use crate::fs::file_replace::{self, Replacement};
use chrono::{DateTime, Utc};
use edit::Document;
use serde_norway::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The name under which client-go passes a cluster's extension to exec plugins.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// The kubeconfig files kubectl would read: `explicit`, else `$KUBECONFIG`, else ~/.kube/config.
pub fn paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    paths_in(explicit, &|name| std::env::var_os(name), cfg!(windows))
}

/// [`paths`] in the environment whose variables `var` answers, on Windows or elsewhere.
fn paths_in(
    explicit: Option<&Path>,
    var: &dyn Fn(&str) -> Option<OsString>,
    windows: bool,
) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(list) = var(env_vars::KUBECONFIG).filter(|v| !v.is_empty()) {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    vec![home_dir(var, windows).join(".kube").join("config")]
}

/// The home directory of kubectl's `.kube/config`, as client-go's `homedir.HomeDir()` finds it:
/// `HOME` (unset, kubectl reads a relative `.kube/config`, and so does kubecred); on Windows,
/// where `HOME` is seldom set, [`windows_home_dir`].
fn home_dir(var: &dyn Fn(&str) -> Option<OsString>, windows: bool) -> PathBuf {
    if windows {
        return windows_home_dir(var);
    }
    var(env_vars::HOME).map(PathBuf::from).unwrap_or_default()
}

/// client-go's `homedir.HomeDir()` on Windows: of `%HOME%`, `%HOMEDRIVE%%HOMEPATH%` and
/// `%USERPROFILE%`, the first that holds a `.kube\config`; else, with `%USERPROFILE%` before
/// `%HOMEDRIVE%%HOMEPATH%` (where other tools write credentials), the first writable directory,
/// else the first that exists, else the first set.
fn windows_home_dir(var: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    let home = set(env_vars::HOME);
    let drive_and_path = match (set(env_vars::HOMEDRIVE), set(env_vars::HOMEPATH)) {
        (Some(mut drive), Some(path)) => {
            drive.push(path);
            Some(drive)
        }
        _ => None,
    };
    let profile = set(env_vars::USERPROFILE);
    let in_order = |order: [&Option<OsString>; 3]| -> Vec<PathBuf> {
        order.into_iter().flatten().map(PathBuf::from).collect()
    };
    let preferred = in_order([&home, &profile, &drive_and_path]);
    let writable = |dir: &&PathBuf| {
        std::fs::metadata(dir).is_ok_and(|meta| meta.is_dir() && !meta.permissions().readonly())
    };
    in_order([&home, &drive_and_path, &profile])
        .into_iter()
        .find(|dir| dir.join(".kube").join("config").exists())
        .or_else(|| preferred.iter().find(writable).cloned())
        .or_else(|| preferred.iter().find(|dir| dir.exists()).cloned())
        .or_else(|| preferred.first().cloned())
        .unwrap_or_default()
}

/// kubectl's set of kubeconfig files, each parsed; see the module's description.
#[derive(Debug)]
pub struct Kubeconfig {
    files: Vec<File>,
    /// Index of the file new entries go to.
    new_entries: usize,
}

/// One file of the set.
#[derive(Debug)]
pub struct File {
    pub path: PathBuf,
    /// Why there is no such file (kubectl skips it; new entries may create it), if there is not.
    pub missing: Option<std::io::Error>,
    doc: Document,
}

impl File {
    /// The entries of a section: name and body.
    pub fn entries(&self, section: Section) -> Vec<(String, Option<&Value>)> {
        self.doc.entries(section)
    }
}

/// Why the files cannot be used; each command words it with its own next step.
#[derive(Debug)]
pub enum LoadError {
    /// A file exists but cannot be read.
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A file is not a kubeconfig kubectl could read (the reason, for one line).
    Invalid { path: PathBuf, reason: String },
}

/// A file the edits change: which (index into [`Kubeconfig::files`]), how it is written, and
/// once written, the file written (a link followed) and its backup.
#[derive(Debug)]
pub struct Change {
    pub file: usize,
    pub layout: Layout,
    pub written: Option<file_replace::Written>,
}

/// A context's kubecred exec stanza (`whoami`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextExec {
    pub context: String,
    pub user: String,
    pub exec: ExecStanza,
    /// The cluster's server URL and exec extension, when the stanza sets `provideClusterInfo`.
    pub cluster: Option<(Option<String>, Option<serde_json::Value>)>,
}

impl Kubeconfig {
    /// Reads and parses every file of `paths` (a path listed twice once); a missing one is an
    /// empty document. Nothing is changed.
    pub fn load(paths: &[PathBuf]) -> Result<Kubeconfig, LoadError> {
        let mut files: Vec<File> = Vec::new();
        for path in paths {
            if files.iter().any(|f| f.path == *path) {
                continue;
            }
            let (text, missing) = match std::fs::read_to_string(path) {
                Ok(text) => (text, None),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    (String::new(), Some(err))
                }
                Err(error) => {
                    return Err(LoadError::Unreadable {
                        path: path.clone(),
                        error,
                    });
                }
            };
            let doc = Document::parse(&text).map_err(|reason| LoadError::Invalid {
                path: path.clone(),
                reason,
            })?;
            files.push(File {
                path: path.clone(),
                missing,
                doc,
            });
        }
        // kubectl's rule for new entries: the first file that exists, else the last one named.
        let new_entries = files
            .iter()
            .position(|f| f.missing.is_none())
            .unwrap_or(files.len().saturating_sub(1));
        Ok(Kubeconfig { files, new_entries })
    }

    /// The files, in kubectl's order (missing ones included).
    pub fn files(&self) -> &[File] {
        &self.files
    }

    /// The file that defines `name` in `section` (the first, as kubectl reads them).
    pub fn defined_in(&self, section: Section, name: &str) -> Option<usize> {
        self.files
            .iter()
            .position(|f| f.doc.entries(section).iter().any(|(n, _)| n == name))
    }

    /// The body of the entry `name` of `section` as kubectl sees it: its first definition's.
    pub fn entry(&self, section: Section, name: &str) -> Option<&Value> {
        self.files.iter().find_map(|f| {
            f.doc
                .entries(section)
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, body)| body)
        })?
    }

    /// The current context: the first file's that sets one.
    pub fn current_context(&self) -> Option<&str> {
        self.files.iter().find_map(|f| f.doc.current_context())
    }

    /// Sets the body of the entry `name` of `section` where kubectl reads it (the file that
    /// defines it), else adds it to the file new entries go to.
    pub fn set_entry(&mut self, section: Section, name: &str, body: Value) {
        let file = self.defined_in(section, name).unwrap_or(self.new_entries);
        self.files[file].doc.set_entry(section, name, body);
    }

    /// Sets `current-context` in the file whose value kubectl reads (the first that sets one),
    /// else in the file new entries go to.
    pub fn set_current_context(&mut self, name: &str) {
        let file = self
            .files
            .iter()
            .position(|f| f.doc.current_context().is_some())
            .unwrap_or(self.new_entries);
        self.files[file].doc.set_current_context(name);
    }

    /// The files the edits change, and how each would be written; nothing is written.
    pub fn changes(&self) -> Vec<Change> {
        self.rendered()
            .into_iter()
            .map(|(file, _, layout)| Change {
                file,
                layout,
                written: None,
            })
            .collect()
    }

    /// Writes every changed file, or none (`file_replace::replace_all`); the backups are named
    /// after `now` (`<file>.before-kubecred-20261125T101500Z`).
    pub fn write(&self, now: DateTime<Utc>) -> Result<Vec<Change>, file_replace::Failure> {
        let rendered = self.rendered();
        let replacements: Vec<Replacement> = rendered
            .iter()
            .map(|(file, text, _)| Replacement {
                path: self.files[*file].path.clone(),
                content: text.clone().into_bytes(),
            })
            .collect();
        if replacements.is_empty() {
            return Ok(Vec::new());
        }
        let stamp = now.format("%Y%m%dT%H%M%SZ").to_string();
        let written = file_replace::replace_all(&replacements, &stamp)?;
        // `replace_all` answers in the order it was given.
        Ok(rendered
            .into_iter()
            .zip(written)
            .map(|((file, _, layout), written)| Change {
                file,
                layout,
                written: Some(written),
            })
            .collect())
    }

    /// Each changed file's index, new text and layout.
    fn rendered(&self) -> Vec<(usize, String, Layout)> {
        self.files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.doc.changed())
            .map(|(index, f)| {
                let (text, layout) = f.doc.render();
                (index, text, layout)
            })
            .collect()
    }

    /// The kubecred exec stanza of `context` (default: the current context); the error says
    /// what is missing, for one line.
    pub fn context_exec(&self, context: Option<&str>) -> Result<ContextExec, String> {
        let context_name = match context {
            Some(name) => name.to_string(),
            None => self
                .current_context()
                .ok_or("no current-context is set")?
                .to_string(),
        };
        let context_body = self
            .entry(Section::Contexts, &context_name)
            .ok_or_else(|| format!("there is no context {context_name:?}"))?;
        let text = |body: &Value, key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let user = text(context_body, "user");
        let cluster = text(context_body, "cluster");
        let user_body = self.entry(Section::Users, &user).ok_or_else(|| {
            format!("the context {context_name:?} names the user {user:?}, which is not defined")
        })?;
        let exec = user_body
            .get("exec")
            .filter(|e| !e.is_null())
            .ok_or_else(|| {
                format!("the user {user:?} of context {context_name:?} has no exec stanza")
            })?;
        let exec: ExecStanza = serde_norway::from_value(exec.clone()).map_err(|err| {
            format!(
                "the exec stanza of user {user:?} (context {context_name:?}) cannot be read: {err}"
            )
        })?;
        let program = Path::new(&exec.command)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !(program.starts_with("kubecred") || program.starts_with("kubectl-kubecred")) {
            return Err(format!(
                "the user {user:?} of context {context_name:?} runs {:?}, not kubecred",
                exec.command
            ));
        }
        let cluster = exec.provide_cluster_info.unwrap_or(false).then(|| {
            match self.entry(Section::Clusters, &cluster) {
                Some(body) => {
                    let server = body.get("server").and_then(Value::as_str).map(String::from);
                    let extension = match body.get("extensions") {
                        Some(Value::Sequence(extensions)) => extensions
                            .iter()
                            .find(|e| e.get("name").and_then(Value::as_str) == Some(EXEC_EXTENSION))
                            .and_then(|e| e.get("extension"))
                            .and_then(|e| serde_json::to_value(e).ok()),
                        _ => None,
                    };
                    (server, extension)
                }
                None => (None, None),
            }
        });
        Ok(ContextExec {
            context: context_name,
            user,
            exec,
            cluster,
        })
    }
}

/// The kubecred exec stanza of `context` (default: the current context) in the kubeconfig
/// `files` (`whoami`); the error says what is missing and what to pass instead.
pub fn read_context_exec(files: &[PathBuf], context: Option<&str>) -> anyhow::Result<ContextExec> {
    let shown = files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let kubeconfig = Kubeconfig::load(files).map_err(|err| {
        let message = match err {
            LoadError::Unreadable { path, error } => {
                format!("cannot read the kubeconfig {}: {error}", path.display())
            }
            LoadError::Invalid { path, reason } => {
                format!("the kubeconfig {} is not valid: {reason}", path.display())
            }
        };
        fail(Exit::Input, message)
    })?;
    if kubeconfig.files.iter().all(|f| f.missing.is_some()) {
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
    kubeconfig.context_exec(context).map_err(|reason| {
        fail(
            Exit::Input,
            format!("{reason} (kubeconfig {shown}); pass --context, --kubeconfig, or the settings flags (--issuer-url, --client-id)"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set of files with these texts, as if loaded.
    fn set(texts: &[&str]) -> Kubeconfig {
        let files = texts
            .iter()
            .enumerate()
            .map(|(i, text)| File {
                path: PathBuf::from(format!("/kube/{i}")),
                missing: None,
                doc: Document::parse(text).unwrap(),
            })
            .collect();
        Kubeconfig {
            files,
            new_entries: 0,
        }
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

    /// An environment of these variables alone.
    fn variables(pairs: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_os_str().to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(given, _)| given == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn kubectls_own_config_is_in_home_and_kubeconfig_lists_others() {
        let home = Path::new("/home/u");
        let profile = Path::new("/profile");
        let env = variables(&[("HOME", home), ("USERPROFILE", profile)]);
        assert_eq!(
            paths_in(None, &env, false),
            [home.join(".kube").join("config")]
        );
        let list = std::env::join_paths(["/a/one", "/b/two"]).unwrap();
        let env = variables(&[("HOME", home), ("KUBECONFIG", Path::new(&list))]);
        assert_eq!(
            paths_in(None, &env, false),
            [PathBuf::from("/a/one"), PathBuf::from("/b/two")]
        );
        let explicit = Path::new("/given");
        assert_eq!(paths_in(Some(explicit), &env, true), [explicit]);
    }

    /// client-go's `homedir.HomeDir()` on Windows, where HOME is seldom set: the first home
    /// that holds a `.kube\config`, else the first writable, existing or set one.
    #[test]
    fn on_windows_kubectls_config_is_found_where_client_go_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let made = |name: &str, with_config: bool| {
            let home = dir.path().join(name);
            std::fs::create_dir_all(home.join(".kube")).unwrap();
            if with_config {
                std::fs::write(home.join(".kube").join("config"), "").unwrap();
            }
            home
        };
        let config = |home: &Path| vec![home.join(".kube").join("config")];
        let windows = |pairs: &[(&str, &Path)]| paths_in(None, &variables(pairs), true);
        let profile = made("profile", true);
        let drive = dir.path().join("drive");
        let drive_path = made("drive/path", false);
        let absent = dir.path().join("absent");
        // No HOME: the profile's, not a relative .kube\config.
        assert_eq!(windows(&[("USERPROFILE", &profile)]), config(&profile));
        assert_eq!(windows(&[]), config(Path::new("")));
        // The first that holds one, HOMEDRIVE + HOMEPATH before USERPROFILE.
        let both = [
            ("HOME", absent.as_path()),
            ("HOMEDRIVE", &drive),
            ("HOMEPATH", Path::new("/path")),
            ("USERPROFILE", &profile),
        ];
        assert_eq!(windows(&both), config(&profile));
        std::fs::write(drive_path.join(".kube").join("config"), "").unwrap();
        assert_eq!(windows(&both), config(&drive_path));
        // HOMEDRIVE without HOMEPATH names nothing.
        assert_eq!(
            windows(&[("HOMEDRIVE", &drive_path), ("USERPROFILE", &profile)]),
            config(&profile)
        );
        // None holds one: the first writable directory (USERPROFILE before HOMEDRIVE +
        // HOMEPATH), else the first that exists, else the first set.
        let bare_profile = made("bare-profile", false);
        let bare_drive = made("bare-drive/path", false);
        let bare = [
            ("HOME", absent.as_path()),
            ("HOMEDRIVE", &dir.path().join("bare-drive")),
            ("HOMEPATH", Path::new("/path")),
            ("USERPROFILE", &bare_profile),
        ];
        assert_eq!(windows(&bare), config(&bare_profile));
        let read_only = |dir: &Path, on: bool| {
            let mut permissions = std::fs::metadata(dir).unwrap().permissions();
            permissions.set_readonly(on);
            std::fs::set_permissions(dir, permissions).unwrap();
        };
        read_only(&bare_profile, true);
        assert_eq!(windows(&bare), config(&bare_drive));
        read_only(&bare_drive, true);
        assert_eq!(windows(&bare), config(&bare_profile));
        read_only(&bare_profile, false);
        read_only(&bare_drive, false);
        assert_eq!(
            windows(&[("HOME", &absent), ("USERPROFILE", &dir.path().join("gone"))]),
            config(&absent)
        );
    }

    #[test]
    fn the_current_contexts_kubecred_stanza() {
        let found = set(&[CONFIG]).context_exec(None).unwrap();
        assert_eq!(found.context, "dev");
        assert_eq!(found.exec.args, ["get-token", "--client-id=k"]);
        assert_eq!(found.exec.env, [EnvVar::new("KUBECRED_SCOPE", "groups")]);
        let (server, extension) = found.cluster.unwrap();
        assert_eq!(server.as_deref(), Some("https://api.example"));
        assert_eq!(extension.unwrap()["issuerURL"], "https://idp.example");
    }

    #[test]
    fn the_first_file_wins_and_errors_say_what_is_missing() {
        let first = "current-context: other\n";
        assert!(
            set(&[first, CONFIG])
                .context_exec(None)
                .unwrap_err()
                .contains("has no exec stanza")
        );
        assert!(
            set(&[CONFIG])
                .context_exec(Some("nope"))
                .unwrap_err()
                .contains("no context \"nope\"")
        );
        assert!(
            set(&["{}"])
                .context_exec(None)
                .unwrap_err()
                .contains("no current-context")
        );
        let foreign = CONFIG.replace("/usr/local/bin/kubecred", "kubelogin");
        assert!(
            set(&[&foreign])
                .context_exec(None)
                .unwrap_err()
                .contains("not kubecred")
        );
    }

    #[test]
    fn kubeconfig_files_that_do_not_exist_are_named_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-config");
        let err = read_context_exec(std::slice::from_ref(&missing), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the kubeconfig {} does not exist; pass --kubeconfig with an existing file, or the settings flags (--issuer-url, --client-id)",
                missing.display()
            )
        );
        let two = [missing.clone(), dir.path().join("other")];
        assert!(
            read_context_exec(&two, None)
                .unwrap_err()
                .to_string()
                .starts_with("none of the kubeconfig files ")
        );
        // One missing beside one that exists: kubectl skips it, and so does kubecred.
        let present = dir.path().join("config");
        std::fs::write(&present, CONFIG).unwrap();
        read_context_exec(&[missing, present], None).unwrap();
    }

    #[test]
    fn edits_go_where_kubectl_reads_or_writes_each_entry_and_are_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let first = dir.path().join("first");
        let second = dir.path().join("second");
        std::fs::write(&first, "users:\n- name: a\n  user: {token: x}\n").unwrap();
        std::fs::write(
            &second,
            "current-context: c\nusers:\n- name: b\n  user: {token: y}\n",
        )
        .unwrap();
        let paths = [
            missing.clone(),
            first.clone(),
            second.clone(),
            first.clone(),
        ];
        let mut kubeconfig = Kubeconfig::load(&paths).unwrap();
        assert_eq!(
            kubeconfig.files().len(),
            3,
            "a path listed twice is read once"
        );
        assert_eq!(kubeconfig.current_context(), Some("c"));
        let body = |token: &str| -> Value {
            serde_norway::from_str(&format!("{{token: {token}}}")).unwrap()
        };
        kubeconfig.set_entry(Section::Users, "b", body("z"));
        kubeconfig.set_entry(Section::Users, "new", body("n"));
        kubeconfig.set_current_context("d");
        assert_eq!(kubeconfig.entry(Section::Users, "b"), Some(&body("z")));
        let planned: Vec<usize> = kubeconfig.changes().iter().map(|c| c.file).collect();
        assert_eq!(
            planned,
            [1, 2],
            "the new user in the first file that exists"
        );
        assert!(!missing.exists());

        let now = DateTime::parse_from_rfc3339("2026-11-25T10:15:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let changes = kubeconfig.write(now).unwrap();
        assert_eq!(changes.len(), 2);
        let backup = changes[0].written.as_ref().unwrap().backup.clone().unwrap();
        assert_eq!(
            backup,
            dir.path().join("first.before-kubecred-20261125T101500Z")
        );
        let again = Kubeconfig::load(&paths).unwrap();
        assert_eq!(again.entry(Section::Users, "new"), Some(&body("n")));
        assert_eq!(again.entry(Section::Users, "b"), Some(&body("z")));
        assert_eq!(again.current_context(), Some("d"));
        assert_eq!(again.defined_in(Section::Users, "b"), Some(2));
    }

    #[test]
    fn a_broken_file_is_named_before_anything_is_changed() {
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("broken");
        std::fs::write(&broken, "users: {a: 1}\n").unwrap();
        match Kubeconfig::load(std::slice::from_ref(&broken)) {
            Err(LoadError::Invalid { path, reason }) => {
                assert_eq!(path, broken);
                assert!(reason.contains("users is not a list"), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
