//! `setup --shared-login --cluster NAME=SERVER[,TARGET]`: the clusters that share one login,
//! each with its own target (`config/shared_login.rs` says what a target is). From the flags
//! this module makes get-token's settings for each cluster ([`SharedCluster::token`]: the user's
//! settings and the cluster's target, as get-token resolves them when kubectl runs it with the
//! cluster's extension), the user's settings ([`Clusters::user`]: every cluster's target asked
//! for by the one login, no target of its own), and the kubeconfig entries of each cluster and
//! context, which setup prints and `--write-kubeconfig` writes alike.

use crate::cli::{DeriveArg, SetupArgs, TargetKindArg, TokenArgs};
use crate::config::CLUSTER_EXTENSION;
use crate::error::{Exit, fail};
use serde_norway::{Mapping, Value};

/// One `--cluster`.
#[derive(Debug, Clone)]
pub(super) struct SharedCluster {
    pub name: String,
    pub server: String,
    /// The target as written (a resource, an audience or a scope, by the `--target-kind`).
    pub target: String,
    /// The cluster extension's key for the target: `resource`, `audience` or `targetScope`.
    pub key: &'static str,
    /// get-token's settings for this cluster: the user's, and this cluster's target.
    pub token: TokenArgs,
}

/// The `--cluster`s, and the settings of the one user they share.
#[derive(Debug, Clone)]
pub(super) struct Clusters {
    pub list: Vec<SharedCluster>,
    /// The user's settings: setup's, with every cluster's target asked for by the login.
    pub user: TokenArgs,
}

/// Checks that `server`, given as `flag`, is an https URL: kubectl sends credentials to an API
/// server only over TLS.
pub(super) fn check_server(flag: &str, server: &str) -> anyhow::Result<()> {
    let url = url::Url::parse(server).map_err(|err| {
        fail(
            Exit::Input,
            format!("{flag} {server:?} is not a URL: {err}; write it as https://HOST:PORT"),
        )
    })?;
    if url.scheme() != "https" {
        return Err(fail(
            Exit::Input,
            format!(
                "{flag} {server} must be https: kubectl sends credentials to an API server only over TLS"
            ),
        ));
    }
    Ok(())
}

fn input(message: String) -> anyhow::Error {
    fail(Exit::Input, message)
}

/// The `--cluster`s of `args`, checked before anything else happens; `None` without any. With
/// `--shared-login` and no `--cluster`, the one cluster's target must be given as get-token
/// takes it (`--resource`, `--audience` or `--target-scope`): setup's single-cluster flow.
pub(super) fn parse(args: &SetupArgs) -> anyhow::Result<Option<Clusters>> {
    check_cluster_flags(args)?;
    if args.clusters.is_empty() {
        return Ok(None);
    }
    let kind = args.target_kind.unwrap_or(TargetKindArg::Resource);
    let given = each_cluster(&args.clusters)?;
    let user = user_settings(&args.token, kind, &given);
    let list = given
        .into_iter()
        .map(|(name, server, target)| SharedCluster::new(&user, kind, name, server, target))
        .collect();
    Ok(Some(Clusters { list, user }))
}

/// Whether `--cluster`s and `--shared-login` go with each other and with the flags that name a
/// target: a shared login needs its clusters (or, for one cluster, its target), a `--cluster`
/// needs `--shared-login`, and its target is the only one.
fn check_cluster_flags(args: &SetupArgs) -> anyhow::Result<()> {
    let token = &args.token;
    let shared = token.shared_login == Some(true);
    let own_target =
        token.resource.is_some() || token.audience.is_some() || token.target_scope.is_some();
    if args.clusters.is_empty() {
        if shared && !own_target {
            return Err(input(
                "setup --shared-login needs the clusters that share the login: --cluster=NAME=SERVER[,TARGET] for each (or, for one cluster, its --resource, --audience or --target-scope)".into(),
            ));
        }
        return Ok(());
    }
    if !shared {
        return Err(input(
            "--cluster names a cluster that shares one login with the others: add --shared-login"
                .into(),
        ));
    }
    if own_target {
        return Err(input(
            "with --cluster, each cluster's target is the TARGET of its --cluster=NAME=SERVER,TARGET (of the --target-kind): drop --resource, --audience and --target-scope".into(),
        ));
    }
    Ok(())
}

/// Each `--cluster` as its name, server and target; no two with the same name or target.
fn each_cluster(clusters: &[String]) -> anyhow::Result<Vec<(String, String, String)>> {
    let mut parsed: Vec<(String, String, String)> = Vec::new();
    for given in clusters {
        let (name, server, target) = split(given)?;
        if parsed.iter().any(|(other, ..)| *other == name) {
            return Err(input(format!(
                "--cluster {name} is given twice: each cluster needs a name of its own"
            )));
        }
        if let Some((other, ..)) = parsed.iter().find(|(.., t)| *t == target) {
            return Err(input(format!(
                "the clusters {other} and {name} have the same target {target}: each API server must accept its own audience only, or a token for one is good for the other; give each --cluster its own TARGET"
            )));
        }
        parsed.push((name, server, target));
    }
    Ok(parsed)
}

/// The user's settings: `token`, with what the one login asks for. Derived by refresh, a token
/// is for a target the login was granted: the login asks for every cluster's, after what was
/// given for it already. An exchange names the target itself, and the login asks for the
/// --login-resources given alone (`SharedLogin`).
fn user_settings(
    token: &TokenArgs,
    kind: TargetKindArg,
    clusters: &[(String, String, String)],
) -> TokenArgs {
    let mut user = token.clone();
    if token.derive != Some(DeriveArg::TokenExchange) {
        let asked = match kind {
            TargetKindArg::Scope => &mut user.login_scopes,
            _ => &mut user.login_resources,
        };
        for (.., target) in clusters {
            if !asked.contains(target) {
                asked.push(target.clone());
            }
        }
    }
    user
}

/// `NAME=SERVER[,TARGET]`, TARGET defaulting to SERVER.
fn split(given: &str) -> anyhow::Result<(String, String, String)> {
    let usage = || {
        input(format!(
            "--cluster {given:?} is not NAME=SERVER[,TARGET] (a name, the API server's https URL, and optionally the target its tokens are for)"
        ))
    };
    let (name, rest) = given.split_once('=').ok_or_else(usage)?;
    let name = name.trim();
    if name.is_empty() {
        return Err(usage());
    }
    let (server, target) = match rest.split_once(',') {
        Some((server, target)) => (server.trim(), target.trim()),
        None => (rest.trim(), rest.trim()),
    };
    if server.is_empty() || target.is_empty() {
        return Err(usage());
    }
    // get-token splits --login-resource and --login-scope lists at commas.
    if target.contains(',') {
        return Err(input(format!(
            "--cluster {name}: the target {target:?} holds a comma, which the user's --login-resource (--login-scope) list would split"
        )));
    }
    check_server(&format!("--cluster {name}"), server)?;
    Ok((name.to_string(), server.to_string(), target.to_string()))
}

impl SharedCluster {
    /// The cluster `name` at `server`, whose target (of the `kind`) is `target`: get-token's
    /// settings for it are the user's and that target.
    fn new(
        user: &TokenArgs,
        kind: TargetKindArg,
        name: String,
        server: String,
        target: String,
    ) -> SharedCluster {
        let mut token = user.clone();
        let (slot, key) = match kind {
            TargetKindArg::Resource => (&mut token.resource, "resource"),
            TargetKindArg::Audience => (&mut token.audience, "audience"),
            TargetKindArg::Scope => (&mut token.target_scope, "targetScope"),
        };
        *slot = Some(target.clone());
        SharedCluster {
            name,
            server,
            target,
            key,
            token,
        }
    }

    /// The kubeconfig cluster: its server, and its target in kubecred's extension (kubectl
    /// hands it to get-token, as `provideClusterInfo: true` asks).
    pub fn cluster_entry(&self) -> Value {
        let mut settings = Mapping::new();
        settings.insert(self.key.into(), self.target.as_str().into());
        let mut extension = Mapping::new();
        extension.insert("name".into(), CLUSTER_EXTENSION.into());
        extension.insert("extension".into(), Value::Mapping(settings));
        let mut body = Mapping::new();
        body.insert("server".into(), self.server.as_str().into());
        body.insert(
            "extensions".into(),
            Value::Sequence(vec![Value::Mapping(extension)]),
        );
        Value::Mapping(body)
    }
}

/// A kubeconfig context of `cluster` and `user`.
pub(super) fn context_entry(cluster: &str, user: &str) -> Value {
    let mut context = Mapping::new();
    context.insert("cluster".into(), cluster.into());
    context.insert("user".into(), user.into());
    Value::Mapping(context)
}

/// The clusters and a context of each for `user`, the first current, as kubeconfig YAML to
/// follow the user's `users:` (section 5).
pub(super) fn kubeconfig_yaml(clusters: &[SharedCluster], user: &str) -> String {
    let named = |name: &str, key: &str, body: Value| {
        let mut entry = Mapping::new();
        entry.insert("name".into(), name.into());
        entry.insert(key.into(), body);
        Value::Mapping(entry)
    };
    let mut doc = Mapping::new();
    doc.insert(
        "clusters".into(),
        Value::Sequence(
            clusters
                .iter()
                .map(|c| named(&c.name, "cluster", c.cluster_entry()))
                .collect(),
        ),
    );
    doc.insert(
        "contexts".into(),
        Value::Sequence(
            clusters
                .iter()
                .map(|c| named(&c.name, "context", context_entry(&c.name, user)))
                .collect(),
        ),
    );
    if let Some(first) = clusters.first() {
        doc.insert("current-context".into(), first.name.as_str().into());
    }
    serde_norway::to_string(&Value::Mapping(doc)).expect("plain strings serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn setup_args(extra: &[&str]) -> anyhow::Result<SetupArgs> {
        let mut argv = vec![
            "kubecred",
            "setup",
            "--issuer-url=https://idp.example",
            "--client-id=k8s",
        ];
        argv.extend(extra);
        match crate::cli::Cli::try_parse_from(argv)?.command {
            crate::cli::Command::Setup(args) => Ok(args),
            _ => unreachable!("a setup command line"),
        }
    }

    fn parse_line(extra: &[&str]) -> anyhow::Result<Option<Clusters>> {
        parse(&setup_args(extra)?)
    }

    fn error(extra: &[&str]) -> String {
        crate::error::one_line(&parse_line(extra).unwrap_err())
    }

    #[test]
    fn each_cluster_gets_its_target_and_the_login_asks_for_all() {
        let clusters = parse_line(&[
            "--shared-login",
            "--login-resource=https://extra.example",
            "--cluster=a=https://a.example:6443",
            "--cluster=b=https://b.example:6443,https://b.example/api",
        ])
        .unwrap()
        .unwrap();
        let [a, b] = &clusters.list[..] else {
            panic!("{clusters:?}")
        };
        assert_eq!(
            (a.name.as_str(), a.server.as_str(), a.target.as_str()),
            ("a", "https://a.example:6443", "https://a.example:6443")
        );
        assert_eq!(b.target, "https://b.example/api");
        assert_eq!(
            clusters.user.login_resources,
            [
                "https://extra.example",
                "https://a.example:6443",
                "https://b.example/api"
            ]
        );
        assert_eq!(clusters.user.resource, None);
        assert_eq!(a.token.resource.as_deref(), Some("https://a.example:6443"));
        assert_eq!(b.token.resource.as_deref(), Some("https://b.example/api"));
        assert_eq!(b.token.login_resources, clusters.user.login_resources);
        assert_eq!((a.key, b.key), ("resource", "resource"));
    }

    #[test]
    fn the_target_kind_picks_the_setting_and_the_extension_key() {
        let clusters = parse_line(&[
            "--shared-login",
            "--target-kind=scope",
            "--cluster=a=https://a.example,api://a/.default",
        ])
        .unwrap()
        .unwrap();
        let a = &clusters.list[0];
        assert_eq!(a.key, "targetScope");
        assert_eq!(a.token.target_scope.as_deref(), Some("api://a/.default"));
        assert_eq!(
            (a.token.resource.as_ref(), a.token.audience.as_ref()),
            (None, None)
        );
        assert_eq!(clusters.user.login_scopes, ["api://a/.default"]);
        assert!(clusters.user.login_resources.is_empty());
        let clusters = parse_line(&[
            "--shared-login",
            "--target-kind=audience",
            "--cluster=a=https://a.example,a-aud",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(clusters.list[0].key, "audience");
        assert_eq!(clusters.list[0].token.audience.as_deref(), Some("a-aud"));
        assert_eq!(clusters.user.login_resources, ["a-aud"]);
    }

    #[test]
    fn an_exchange_names_the_target_and_the_login_asks_for_none() {
        let clusters = parse_line(&[
            "--shared-login",
            "--derive=token-exchange",
            "--target-kind=audience",
            "--cluster=a=https://a.example,a-aud",
            "--cluster=b=https://b.example,b-aud",
        ])
        .unwrap()
        .unwrap();
        assert!(clusters.user.login_resources.is_empty());
        assert_eq!(clusters.list[1].token.audience.as_deref(), Some("b-aud"));
        assert_eq!(
            clusters.list[1].token.derive,
            Some(DeriveArg::TokenExchange)
        );
    }

    #[test]
    fn clusters_need_the_shared_login_and_it_needs_a_target() {
        assert!(error(&["--cluster=a=https://a.example"]).contains("add --shared-login"),);
        assert!(error(&["--shared-login"]).contains("--cluster=NAME=SERVER[,TARGET] for each"));
        // The single-cluster flow: the one target as get-token takes it.
        assert!(
            parse_line(&["--shared-login", "--resource=https://a"])
                .unwrap()
                .is_none()
        );
        assert!(parse_line(&[]).unwrap().is_none());
        assert!(
            error(&[
                "--shared-login",
                "--resource=https://x",
                "--cluster=a=https://a.example"
            ])
            .contains("drop --resource")
        );
        // --target-kind means nothing without a --cluster.
        assert!(setup_args(&["--shared-login", "--target-kind=scope"]).is_err());
    }

    #[test]
    fn a_malformed_or_clashing_cluster_is_named() {
        let shared = |cluster: &str| error(&["--shared-login", &format!("--cluster={cluster}")]);
        assert!(shared("https://a.example").contains("is not NAME=SERVER[,TARGET]"));
        assert!(shared("=https://a.example").contains("is not NAME=SERVER[,TARGET]"));
        assert!(shared("a=https://a.example,").contains("is not NAME=SERVER[,TARGET]"));
        assert!(shared("a=http://a.example").contains("must be https"));
        assert!(shared("a=https://a.example,x,y").contains("holds a comma"));
        let twice = error(&[
            "--shared-login",
            "--cluster=a=https://a.example",
            "--cluster=a=https://b.example",
        ]);
        assert!(twice.contains("--cluster a is given twice"), "{twice}");
        let same = error(&[
            "--shared-login",
            "--cluster=a=https://a.example,t",
            "--cluster=b=https://b.example,t",
        ]);
        assert!(same.contains("a and b have the same target t"), "{same}");
    }

    #[test]
    fn the_printed_clusters_are_what_is_written() {
        let clusters = parse_line(&[
            "--shared-login",
            "--cluster=a: x=https://a.example",
            "--cluster=b=https://b.example,https://b/api",
        ])
        .unwrap()
        .unwrap();
        let yaml = kubeconfig_yaml(&clusters.list, "oidc");
        let doc: Value = serde_norway::from_str(&yaml).unwrap();
        for (i, cluster) in clusters.list.iter().enumerate() {
            assert_eq!(doc["clusters"][i]["name"], cluster.name.as_str());
            assert_eq!(doc["clusters"][i]["cluster"], cluster.cluster_entry());
            assert_eq!(
                doc["contexts"][i]["context"],
                context_entry(&cluster.name, "oidc")
            );
        }
        assert_eq!(
            doc["clusters"][1]["cluster"]["extensions"][0]["extension"]["resource"],
            "https://b/api"
        );
        assert_eq!(
            doc["clusters"][1]["cluster"]["extensions"][0]["name"],
            CLUSTER_EXTENSION
        );
        assert_eq!(doc["current-context"], "a: x");
    }
}
