//! `kubecred setup`: wire a new identity provider to a cluster without reading source code.
//! Three steps: diagnose the provider before logging in (`diagnose.rs`: one `ok`/`warn` line
//! each on stderr, stopping at the first problem with its cause and fix); log in as `kubecred
//! login` does and show the token's claims as a table on stderr; then print on stdout what to
//! configure (`advice.rs`): the API server, RBAC, kubectl and kuberc — and with
//! `--write-kubeconfig`, write the kubectl part into the kubeconfig (`write.rs`): the same typed
//! exec stanza (`kubeconfig::ExecStanza`) that sections 4 and 5 print.
//!
//! With `--shared-login --cluster`s (`clusters.rs`), one login serves every cluster: setup logs
//! in for the first, derives each other cluster's token from that login as get-token will, and
//! advises each API server apart (its own audience only, checked against its own token); the
//! kubeconfig is one user and a cluster (its target in its extension) and context for each.
//!
//! The advice goes to stdout because it is the command's product (`kubecred setup … > setup.txt`);
//! setup is never what a kubeconfig runs, so stdout carries no ExecCredential here. It is checked
//! before it is printed: the generated AuthenticationConfiguration is evaluated against the
//! token's own claims (`authn_config`), and its user is the one the RBAC section binds.

mod advice;
mod cloud;
mod clusters;
mod diagnose;
mod write;

use super::claims_table;
use crate::acquire;
use crate::authn_config::{self, AuthenticatedUser, AuthenticationConfiguration};
use crate::cli::{SetupArgs, TokenArgs};
use crate::clock::Clock;
use crate::commands::command_on_path::ExecCommand;
use crate::config::{Config, TokenKind};
use crate::error::{Exit, fail};
use crate::kubeconfig::ExecStanza;
use crate::tokens::Tokens;
use anyhow::Context;
use serde_json::{Map, Value};
use std::fmt::Write;

/// Runs setup; `resolve` makes get-token's settings of a cluster (the first `--cluster`'s, or
/// the command line's), as the command's dispatch resolves them.
pub(super) fn run(
    args: &SetupArgs,
    resolve: &dyn Fn(&TokenArgs) -> anyhow::Result<Config>,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    // What --cluster and --write-kubeconfig need is checked before anything else happens.
    let shared = clusters::parse(args)?;
    let write_to = write::prepare(args, shared.as_ref())?;
    let config = &resolve(shared.as_ref().map_or(&args.token, |s| &s.list[0].token))?;
    let command = crate::commands::command_on_path::for_kubeconfig().map_err(|err| {
        fail(
            Exit::Input,
            format!("cannot find this binary's path for the printed kubeconfig: {err}; run kubecred setup from an installed kubecred"),
        )
    })?;
    if cloud::is_cloud(config) && shared.is_none() {
        return cloud::run(args, config, command, write_to, clock);
    }
    let diagnosis = diagnose::run(config, clock)?;
    let (tokens, claims) = log_in(config, &diagnosis, clock)?;
    let user_args = shared.as_ref().map_or(&args.token, |s| &s.user);
    let inputs = inputs_of(
        user_args,
        &args.user_name,
        &command,
        config,
        &claims,
        &tokens,
    );
    let servers = api_servers(&inputs, shared.as_ref(), resolve, clock)?;
    report_users(&servers);
    let exec = advice::exec_stanza(&inputs, shared.is_some());
    let mut out = Sections::default();
    api_server_sections(&mut out, &servers, shared.is_some());
    kubectl_sections(&mut out, &inputs, &exec, shared.as_ref());
    if let Some(target) = write_to {
        let written = target.write(&exec, clock)?;
        crate::log::stderr(format_args!("{written}"));
    }
    Ok(Some(out.0))
}

/// Logs in as `kubecred login` does and shows what the token carries, and what the provider
/// held back.
fn log_in(
    config: &Config,
    diagnosis: &diagnose::Diagnosis,
    clock: &dyn Clock,
) -> anyhow::Result<(Tokens, Map<String, Value>)> {
    crate::log::stderr(format_args!(
        "kubecred: logging in to {} as client {}\n",
        config.issuer_as_given, config.client.id
    ));
    let tokens = acquire::login(config, clock)?;
    let claims = claims_table::of_credential(config, &tokens)?;
    let kind = match config.token_kind {
        TokenKind::IdToken => "ID token",
        TokenKind::AccessToken => "access token",
    };
    crate::log::stderr(format_args!(
        "kubecred: logged in; the {kind} kubectl will send carries:\n"
    ));
    crate::log::stderr(format_args!(
        "{}",
        claims_table::render(&claims, clock.now())
    ));
    warn_of_what_was_held_back(config, &tokens, diagnosis)?;
    Ok((tokens, claims))
}

/// A warning for each thing the provider held back: a scope asked for, a refresh token where a
/// person logs in (with the likely fix).
fn warn_of_what_was_held_back(
    config: &Config,
    tokens: &Tokens,
    diagnosis: &diagnose::Diagnosis,
) -> anyhow::Result<()> {
    let left_out = scopes_left_out(config, tokens);
    if !left_out.is_empty() {
        crate::log::stderr(format_args!(
            "  warn  the provider granted the scope {:?}, without {} that was asked for: what those scopes bring (claims, refresh tokens) is missing; allow them for this client at the provider\n",
            tokens
                .granted_scope
                .as_deref()
                .unwrap_or_default()
                .join(" "),
            left_out.join(", ")
        ));
    }
    if config.grant.is_user_login() && !acquire::login_renews(config, tokens)? {
        let hint = if left_out.contains(&"offline_access") {
            "the provider did not grant offline_access; allow offline access (refresh tokens) for this client at the provider"
        } else if diagnosis.offline_access_listed {
            "add --scope=offline_access (the provider lists it)"
        } else {
            "allow refresh tokens for this client at the provider"
        };
        crate::log::stderr(format_args!(
            "  warn  no refresh token was issued: every expiry means a new login; {hint}\n"
        ));
    }
    Ok(())
}

/// The scopes asked for that the provider did not grant. RFC 6749 §3.3: the provider may grant
/// less than asked, and says so in `scope`. `openid` is left out of the comparison: the ID
/// token shows it was granted, and some providers (Google) do not echo it.
fn scopes_left_out<'a>(config: &'a Config, tokens: &Tokens) -> Vec<&'a str> {
    match &tokens.granted_scope {
        Some(granted) => config
            .scopes
            .iter()
            .filter(|s| *s != "openid" && !granted.contains(s))
            .map(String::as_str)
            .collect(),
        None => Vec::new(),
    }
}

/// Each cluster's API server side, each checked against the token it will be sent: the first
/// cluster's is made from the login's (`inputs`), each other `--cluster`'s from its token
/// derived from that login as get-token will derive it.
fn api_servers(
    inputs: &advice::Inputs,
    shared: Option<&clusters::Clusters>,
    resolve: &dyn Fn(&TokenArgs) -> anyhow::Result<Config>,
    clock: &dyn Clock,
) -> anyhow::Result<Vec<ApiServer>> {
    let first_name = shared.map(|shared| shared.list[0].name.as_str());
    let first = api_server(inputs, first_name, clock);
    let first = match first_name {
        Some(name) => first.with_context(|| about(name))?,
        None => first?,
    };
    if !first.issuer.starts_with("https://") {
        crate::log::stderr(format_args!(
            "  warn  kube-apiserver accepts only https issuers; {} is not one (fine for a local test provider only)\n",
            first.issuer
        ));
    }
    let mut servers = vec![first];
    for cluster in shared.iter().flat_map(|s| &s.list[1..]) {
        let server = derived_api_server(inputs, cluster, resolve, clock)
            .with_context(|| about(&cluster.name))?;
        servers.push(server);
    }
    Ok(servers)
}

/// The API server side of a `--cluster` after the first, made from its token derived from the
/// login as get-token will derive it.
fn derived_api_server(
    inputs: &advice::Inputs,
    cluster: &clusters::SharedCluster,
    resolve: &dyn Fn(&TokenArgs) -> anyhow::Result<Config>,
    clock: &dyn Clock,
) -> anyhow::Result<ApiServer> {
    let config = resolve(&cluster.token)?;
    let tokens = acquire::tokens(&config, clock)?;
    let claims = claims_table::of_credential(&config, &tokens)?;
    let (args, user_name) = (inputs.args, inputs.user_name);
    let inputs = inputs_of(args, user_name, &inputs.command, &config, &claims, &tokens);
    api_server(&inputs, Some(&cluster.name), clock)
}

/// Says on stderr whom each API server will see, with the configuration setup prints.
fn report_users(servers: &[ApiServer]) {
    for server in servers {
        let user = &server.user;
        crate::log::stderr(format_args!(
            "kubecred: {}with the configuration below, kube-apiserver sees you as {:?}{}\n",
            server
                .cluster
                .as_ref()
                .map(|name| format!("cluster {name:?}: "))
                .unwrap_or_default(),
            user.username,
            if user.groups.is_empty() {
                String::new()
            } else {
                format!(" in groups {}", user.groups.join(", "))
            }
        ));
    }
}

/// An error about one of several clusters names it.
fn about(cluster: &str) -> String {
    format!("cluster {cluster:?}")
}

/// What setup prints on stdout: sections, each a title and what to do with its body.
#[derive(Default)]
struct Sections(String);

impl Sections {
    fn add(&mut self, title: &str, body: &str) {
        let _ = write!(self.0, "# ==== {title} ====\n{body}\n");
    }
}

/// Sections 1 to 3, each API server's: its AuthenticationConfiguration, its flags for older
/// clusters, and the RBAC for the user it sees (once when every cluster sees the same user).
fn api_server_sections(out: &mut Sections, servers: &[ApiServer], shared: bool) {
    for server in servers {
        out.add(
            &format!(
                "1. API server{} (Kubernetes 1.30+; v1 since 1.34): save as a file, pass --authentication-config=FILE",
                server.of_cluster()
            ),
            &server.authn_yaml,
        );
    }
    for server in servers {
        out.add(
            &format!(
                "2. API server{}, older clusters: kube-apiserver flags instead of 1. (not both)",
                server.of_cluster()
            ),
            &server.legacy,
        );
    }
    let same_user = servers.windows(2).all(|pair| {
        (&pair[0].user.username, &pair[0].user.groups)
            == (&pair[1].user.username, &pair[1].user.groups)
    });
    if same_user {
        let title = if shared {
            "3. RBAC: kubectl apply -f this on each cluster (as a cluster admin)"
        } else {
            "3. RBAC: kubectl apply -f this (as a cluster admin)"
        };
        let user = &servers[0].user;
        out.add(title, &advice::rbac(&user.username, &user.groups));
        return;
    }
    for server in servers {
        out.add(
            &format!(
                "3. RBAC{}: kubectl apply -f this there (as a cluster admin)",
                server.of_cluster()
            ),
            &advice::rbac(&server.user.username, &server.user.groups),
        );
    }
}

/// Sections 4 to 6, kubectl's: the user that runs kubecred, as a command and as YAML (with
/// `--cluster`s, a cluster and context for each), and kuberc's credential plugin policy.
fn kubectl_sections(
    out: &mut Sections,
    inputs: &advice::Inputs,
    exec: &ExecStanza,
    shared: Option<&clusters::Clusters>,
) {
    match shared {
        None => {
            out.add(
                "4. kubectl: a kubeconfig user that runs kubecred, for the current context",
                &advice::set_credentials_command(inputs, exec, false),
            );
            out.add(
                "5. kubeconfig: the same user as YAML",
                &advice::kubeconfig_user(inputs, exec),
            );
        }
        Some(shared) => {
            out.add(
                "4. kubectl: a kubeconfig user that runs kubecred, shared by the clusters",
                &advice::set_credentials_command(inputs, exec, true),
            );
            out.add(
                "5. kubeconfig: the same user as YAML, and a cluster and context for each cluster",
                &format!(
                    "{}{}",
                    advice::kubeconfig_user(inputs, exec),
                    clusters::kubeconfig_yaml(&shared.list, inputs.user_name)
                ),
            );
        }
    }
    out.add(
        "6. kubectl 1.35+ with a credential plugin policy in kuberc: allow kubecred",
        &advice::kuberc(&inputs.command),
    );
}

/// What the advice for the cluster of `config` is made from: the user's settings (`args`), the
/// cluster's token and the claims of it.
fn inputs_of<'a>(
    args: &'a TokenArgs,
    user_name: &'a str,
    command: &ExecCommand,
    config: &'a Config,
    claims: &'a Map<String, Value>,
    tokens: &Tokens,
) -> advice::Inputs<'a> {
    advice::Inputs {
        args,
        user_name,
        command: command.clone(),
        claims,
        signing_alg: signing_alg(config, tokens),
        client_id: &config.client.id,
        ca_pems: &config.http.tls.extra_ca_pems,
        request_headers: &config.http.request_headers,
        user_login: config.grant.is_user_login(),
        target_audience: config
            .shared_login
            .as_ref()
            .map(|shared| shared.target.audience()),
    }
}

/// The `alg` of the JWS header of the token kubectl will send.
fn signing_alg(config: &Config, tokens: &Tokens) -> Option<String> {
    let (token, _) = tokens
        .credential(config.token_kind)
        .expect("of_credential found the credential");
    crate::tokens::unverified_jwt_segment(token.expose(), 0)
        .and_then(|header| header.get("alg")?.as_str().map(String::from))
}

/// One cluster's API server side: its AuthenticationConfiguration and flags, and the user it
/// makes of the token they were made from.
struct ApiServer {
    /// The `--cluster`'s name; `None` for setup's one cluster.
    cluster: Option<String>,
    issuer: String,
    authn_yaml: String,
    legacy: String,
    user: AuthenticatedUser,
}

impl ApiServer {
    /// A section title's words for the cluster (" of cluster \"a\""), for each `--cluster`.
    fn of_cluster(&self) -> String {
        self.cluster
            .as_ref()
            .map(|name| format!(" of cluster {name:?}"))
            .unwrap_or_default()
    }
}

/// The API server's side for the token of `inputs`, checked: the generated configuration must
/// accept the token it was made from.
fn api_server(
    inputs: &advice::Inputs,
    cluster: Option<&str>,
    clock: &dyn Clock,
) -> anyhow::Result<ApiServer> {
    let choice = advice::ClaimChoice::of(inputs);
    let authn_yaml = advice::authentication_configuration(inputs, &choice);
    let authn = AuthenticationConfiguration::parse(&authn_yaml)
        .map_err(|reason| fail(Exit::Input, format!("kubecred generated an AuthenticationConfiguration that {reason}; please report this")))?;
    let user = authn_config::evaluate(&authn, inputs.claims, clock.now()).map_err(|rejection| {
        fail(
            Exit::Provider,
            format!("the token cannot be mapped to a Kubernetes user: {rejection}"),
        )
    })?;
    Ok(ApiServer {
        cluster: cluster.map(String::from),
        legacy: advice::legacy_flags(inputs, &choice),
        issuer: choice.issuer,
        authn_yaml,
        user,
    })
}
