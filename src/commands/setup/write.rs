//! `setup --write-kubeconfig`: what setup prints for kubectl, written into the kubeconfig —
//! the user exactly as section 5 prints it; with `--server`, a cluster (its CA embedded, from
//! `--cluster-certificate-authority`) and a context of that user, made the current context;
//! without `--server`, the current context (if there is one) pointed at the user, as section 4's
//! `kubectl config set-context --current` does. So a newcomer goes from nothing to
//! `kubectl auth whoami` with one command.
//!
//! Each entry goes where kubectl would put it: into the file that already defines it, else into
//! the file kubectl writes new entries to (`--kubeconfig`; else the first existing file of
//! `$KUBECONFIG`, or its last when none exists; else `~/.kube/config`), which is created if need
//! be. The writes are convert-kubeconfig's: edited in place (`kubeconfig_edit.rs`), a 0600 backup
//! beside each file, atomic, all or none (`file_replace.rs`). Everything that can be wrong
//! (a kubeconfig that does not parse, an unreadable CA file, a server that is not a URL) is
//! found by [`prepare`], before setup logs in.

use crate::cli::SetupArgs;
use crate::clock::Clock;
use crate::error::{Exit, fail};
use crate::file_replace::{self, Replacement};
use crate::kubeconfig;
use crate::kubeconfig_edit::{Document, Layout, Section};
use base64::Engine;
use serde_norway::{Mapping, Value};
use std::path::PathBuf;

/// What to write, checked before the login.
pub(super) struct Target {
    files: Vec<File>,
    /// Index of the file new entries go to.
    default: usize,
    user_name: String,
    cluster: Option<Cluster>,
}

struct File {
    path: PathBuf,
    doc: Document,
}

struct Cluster {
    name: String,
    server: String,
    ca_pem: Option<Vec<u8>>,
}

/// The files and values `--write-kubeconfig` will use; `None` without the flag.
pub(super) fn prepare(args: &SetupArgs) -> anyhow::Result<Option<Target>> {
    if !args.write_kubeconfig {
        return Ok(None);
    }
    let input = |message: String| fail(Exit::Input, message);
    let paths = kubeconfig::paths(args.kubeconfig.as_deref());
    let mut files = Vec::new();
    let mut default = None;
    for path in &paths {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => {
                return Err(input(format!(
                    "cannot read the kubeconfig {}: {err}; fix its permissions, or pass --kubeconfig",
                    path.display()
                )));
            }
        };
        if text.is_some() && default.is_none() {
            default = Some(files.len());
        }
        let doc = Document::parse(text.as_deref().unwrap_or("")).map_err(|reason| {
            input(format!(
                "the kubeconfig {} cannot be read ({reason}); fix it, or pass --kubeconfig with another file",
                path.display()
            ))
        })?;
        files.push(File {
            path: path.clone(),
            doc,
        });
    }
    // kubectl's rule for new entries: the first file that exists, else the last one named.
    let default = default.unwrap_or(files.len().saturating_sub(1));
    let cluster = match &args.server {
        None => None,
        Some(server) => {
            let url = url::Url::parse(server).map_err(|err| {
                input(format!(
                    "--server {server:?} is not a URL: {err}; write it as https://HOST:PORT"
                ))
            })?;
            if url.scheme() != "https" {
                return Err(input(format!(
                    "--server {server} must be https: kubectl sends credentials to an API server only over TLS"
                )));
            }
            let ca_pem = match &args.cluster_certificate_authority {
                None => None,
                Some(path) => {
                    let pem = std::fs::read(path).map_err(|err| {
                        input(format!(
                            "reading the cluster CA file {}: {err}",
                            path.display()
                        ))
                    })?;
                    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                        return Err(input(format!(
                            "the cluster CA file {} holds no PEM certificate",
                            path.display()
                        )));
                    }
                    Some(pem)
                }
            };
            Some(Cluster {
                name: args
                    .context_name
                    .clone()
                    .unwrap_or_else(|| args.user_name.clone()),
                server: server.clone(),
                ca_pem,
            })
        }
    };
    Ok(Some(Target {
        files,
        default,
        user_name: args.user_name.clone(),
        cluster,
    }))
}

impl Target {
    /// Writes the user of `printed_user` (section 5's YAML) and, with `--server`, the cluster and
    /// context; the line that says what was written where.
    pub(super) fn write(mut self, printed_user: &str, clock: &dyn Clock) -> anyhow::Result<String> {
        let printed: Value = serde_norway::from_str(printed_user).map_err(|err| {
            fail(Exit::Input, format!("kubecred printed a kubeconfig user it cannot read back ({err}); please report this"))
        })?;
        let user = printed["users"][0]["user"].clone();
        let mut said = vec![format!("the user {:?}", self.user_name)];

        let file = self.file_for(Section::Users, &self.user_name.clone());
        self.files[file]
            .doc
            .set_entry(Section::Users, &self.user_name, user);
        match self.cluster.take() {
            Some(cluster) => {
                let mut body = Mapping::new();
                body.insert("server".into(), cluster.server.as_str().into());
                if let Some(pem) = &cluster.ca_pem {
                    let data = base64::engine::general_purpose::STANDARD.encode(pem);
                    body.insert("certificate-authority-data".into(), data.into());
                }
                let file = self.file_for(Section::Clusters, &cluster.name);
                self.files[file]
                    .doc
                    .set_entry(Section::Clusters, &cluster.name, Value::Mapping(body));
                let mut context = Mapping::new();
                context.insert("cluster".into(), cluster.name.as_str().into());
                context.insert("user".into(), self.user_name.as_str().into());
                let file = self.file_for(Section::Contexts, &cluster.name);
                self.files[file]
                    .doc
                    .set_entry(Section::Contexts, &cluster.name, Value::Mapping(context));
                let file = self.current_context_file();
                self.files[file].doc.set_current_context(&cluster.name);
                said.push(format!(
                    "the cluster and context {:?} (now the current context)",
                    cluster.name
                ));
            }
            None => match self.current_context() {
                Some(current) => {
                    let file = self.file_for(Section::Contexts, &current);
                    let body = self.files[file]
                        .doc
                        .entries(Section::Contexts)
                        .into_iter()
                        .find(|(name, _)| *name == current)
                        .and_then(|(_, body)| body.cloned());
                    let mut context = match body {
                        Some(Value::Mapping(context)) => context,
                        _ => Mapping::new(),
                    };
                    context.insert("user".into(), self.user_name.as_str().into());
                    self.files[file]
                        .doc
                        .set_entry(Section::Contexts, &current, Value::Mapping(context));
                    said.push(format!("the current context {current:?} now uses it"));
                }
                None => said.push(
                    "no current context: add one with kubectl config set-context, or run setup with --server"
                        .into(),
                ),
            },
        }

        let mut replacements = Vec::new();
        let mut whole = Vec::new();
        for file in self.files.iter().filter(|f| f.doc.changed()) {
            let (text, layout) = file.doc.render();
            if let Layout::Whole(reason) = layout {
                whole.push(format!(
                    "{} was written as a whole: comments and formatting are not kept ({reason})",
                    file.path.display()
                ));
            }
            replacements.push(Replacement {
                path: file.path.clone(),
                content: text.into_bytes(),
            });
        }
        let stamp = clock.now().format("%Y%m%dT%H%M%SZ").to_string();
        let written = file_replace::replace_all(&replacements, &stamp).map_err(|failure| {
            fail(
                Exit::Input,
                format!("{failure} (the login is cached: run setup again with --kubeconfig naming a file you can write)"),
            )
        })?;
        let places: Vec<String> = written
            .iter()
            .map(|w| match &w.backup {
                Some(backup) => format!("{} (backup: {})", w.path.display(), backup.display()),
                None => format!("{} (new)", w.path.display()),
            })
            .collect();
        let mut line = format!(
            "kubecred: wrote {} to {}; {}\n",
            said[0],
            places.join(", "),
            said[1..].join("; ")
        );
        for note in whole {
            line.push_str(&format!("kubecred: note: {note}\n"));
        }
        Ok(line)
    }

    /// The file that defines `name` in `section` (the first, as kubectl reads them), else the
    /// file new entries go to.
    fn file_for(&self, section: Section, name: &str) -> usize {
        self.files
            .iter()
            .position(|f| f.doc.entries(section).iter().any(|(n, _)| n == name))
            .unwrap_or(self.default)
    }

    /// The current context: the first file's that sets one.
    fn current_context(&self) -> Option<String> {
        self.files
            .iter()
            .find_map(|f| f.doc.current_context().map(String::from))
    }

    /// The file whose `current-context` kubectl reads (the first that sets one), else the file
    /// new entries go to.
    fn current_context_file(&self) -> usize {
        self.files
            .iter()
            .position(|f| f.doc.current_context().is_some())
            .unwrap_or(self.default)
    }
}
