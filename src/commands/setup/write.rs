//! `setup --write-kubeconfig`: what setup prints for kubectl, written into the kubeconfig —
//! the user of section 5, the same typed stanza; with `--server`, a cluster (its CA embedded,
//! from `--cluster-certificate-authority`) and a context of that user, made the current context;
//! with `--shared-login --cluster`s, each cluster (its target in its extension, `clusters.rs`)
//! and a context of the user, the first made the current context; without either, the current
//! context (if there is one) pointed at the user, as section 4's `kubectl config set-context
//! --current` does. So a newcomer goes from nothing to `kubectl auth whoami` with one command.
//!
//! Each entry goes where kubectl would put it (`kubeconfig::Kubeconfig`: into the file that
//! already defines it, else the file kubectl writes new entries to, created if need be), written
//! as convert-kubeconfig writes: edited in place, a 0600 backup beside each file, atomic, all or
//! none. Everything that can be wrong (a kubeconfig that does not parse, an unreadable CA file,
//! a server that is not a URL) is found by [`prepare`], before setup logs in.

use super::clusters::{self, Clusters};
use crate::cli::SetupArgs;
use crate::clock::Clock;
use crate::error::{Exit, fail};
use crate::kubeconfig::{self, ExecStanza, Kubeconfig, Layout, LoadError, Section};
use base64::Engine;
use serde_norway::{Mapping, Value};

/// What to write, checked before the login.
pub(super) struct Target {
    kubeconfig: Kubeconfig,
    user_name: String,
    /// Each cluster's name and kubeconfig entry; a context of the user is written for each.
    clusters: Vec<(String, Value)>,
}

/// The files and values `--write-kubeconfig` will use; `None` without the flag.
pub(super) fn prepare(
    args: &SetupArgs,
    shared: Option<&Clusters>,
) -> anyhow::Result<Option<Target>> {
    if !args.write_kubeconfig {
        return Ok(None);
    }
    let input = |message: String| fail(Exit::Input, message);
    let paths = kubeconfig::paths(args.kubeconfig.as_deref());
    let kubeconfig = Kubeconfig::load(&paths).map_err(|err| match err {
        LoadError::Unreadable { path, error } => input(format!(
            "cannot read the kubeconfig {}: {error}; fix its permissions, or pass --kubeconfig",
            path.display()
        )),
        LoadError::Invalid { path, reason } => input(format!(
            "the kubeconfig {} cannot be read ({reason}); fix it, or pass --kubeconfig with another file",
            path.display()
        )),
    })?;
    let clusters = match (&args.server, shared) {
        (_, Some(shared)) => shared
            .list
            .iter()
            .map(|cluster| (cluster.name.clone(), cluster.cluster_entry()))
            .collect(),
        (None, None) => Vec::new(),
        (Some(server), None) => {
            clusters::check_server("--server", server)?;
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
            let mut body = Mapping::new();
            body.insert("server".into(), server.as_str().into());
            if let Some(pem) = &ca_pem {
                let data = base64::engine::general_purpose::STANDARD.encode(pem);
                body.insert("certificate-authority-data".into(), data.into());
            }
            let name = args
                .context_name
                .clone()
                .unwrap_or_else(|| args.user_name.clone());
            vec![(name, Value::Mapping(body))]
        }
    };
    Ok(Some(Target {
        kubeconfig,
        user_name: args.user_name.clone(),
        clusters,
    }))
}

impl Target {
    /// Writes the user of `exec` (section 5's stanza) and, with `--server` or `--cluster`s,
    /// each cluster and its context; the line that says what was written where.
    pub(super) fn write(mut self, exec: &ExecStanza, clock: &dyn Clock) -> anyhow::Result<String> {
        let mut said = vec![format!("the user {:?}", self.user_name)];
        let kubeconfig = &mut self.kubeconfig;
        kubeconfig.set_entry(Section::Users, &self.user_name, exec.as_user_body());
        let names: Vec<String> = self.clusters.iter().map(|(name, _)| name.clone()).collect();
        for (name, body) in std::mem::take(&mut self.clusters) {
            kubeconfig.set_entry(Section::Clusters, &name, body);
            let context = clusters::context_entry(&name, &self.user_name);
            kubeconfig.set_entry(Section::Contexts, &name, context);
        }
        match names.split_first() {
            Some((first, rest)) => {
                kubeconfig.set_current_context(first);
                said.push(if rest.is_empty() {
                    format!("the cluster and context {first:?} (now the current context)")
                } else {
                    format!(
                        "the clusters and contexts {} ({first:?} now the current context)",
                        names
                            .iter()
                            .map(|name| format!("{name:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
            }
            None => match kubeconfig.current_context().map(String::from) {
                Some(current) => {
                    let mut context = match kubeconfig.entry(Section::Contexts, &current) {
                        Some(Value::Mapping(context)) => context.clone(),
                        _ => Mapping::new(),
                    };
                    context.insert("user".into(), self.user_name.as_str().into());
                    kubeconfig.set_entry(Section::Contexts, &current, Value::Mapping(context));
                    said.push(format!("the current context {current:?} now uses it"));
                }
                None => said.push(
                    "no current context: add one with kubectl config set-context, or run setup with --server"
                        .into(),
                ),
            },
        }

        let written = kubeconfig.write(clock.now()).map_err(|failure| {
            fail(
                Exit::Input,
                format!("{failure} (the login is cached: run setup again with --kubeconfig naming a file you can write)"),
            )
        })?;
        let mut places = Vec::new();
        let mut whole = Vec::new();
        for change in &written {
            let Some(done) = &change.written else {
                continue;
            };
            places.push(match &done.backup {
                Some(backup) => format!("{} (backup: {})", done.path.display(), backup.display()),
                None => format!("{} (new)", done.path.display()),
            });
            if let Layout::Whole(reason) = &change.layout {
                whole.push(format!(
                    "{} was written as a whole: comments and formatting are not kept ({reason})",
                    kubeconfig.files()[change.file].path.display()
                ));
            }
        }
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
}
