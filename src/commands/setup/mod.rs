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
mod clusters;
mod diagnose;
mod write;

use super::claims_table;
use crate::acquire;
use crate::authn_config::{self, AuthenticatedUser, AuthenticationConfiguration};
use crate::cache::{Entries, TokenCache};
use crate::cli::{SetupArgs, TokenArgs};
use crate::clock::Clock;
use crate::command_on_path::ExecCommand;
use crate::config::{Config, TokenKind};
use crate::error::{Exit, fail};
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
    let diagnosis = diagnose::run(config, clock)?;

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
    // RFC 6749 §3.3: the provider may grant less than asked, and says so in `scope`. `openid`
    // is left out of the comparison: the ID token shows it was granted, and some providers
    // (Google) do not echo it.
    let left_out: Vec<&str> = match &tokens.granted_scope {
        Some(granted) => config
            .scopes
            .iter()
            .filter(|s| *s != "openid" && !granted.contains(s))
            .map(String::as_str)
            .collect(),
        None => Vec::new(),
    };
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
    // A shared login hands out the cluster's token alone; its refresh token is the login
    // entry's, where every other cluster's token will be derived from.
    let refresh_token_issued = match Entries::of(config).login {
        None => tokens.refresh_token.is_some(),
        Some(login) => TokenCache::new(login)
            .load()?
            .is_some_and(|login| login.has_refresh_token()),
    };
    if config.grant.is_user_login() && !refresh_token_issued {
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

    let command = crate::command_on_path::for_kubeconfig().map_err(|err| {
        fail(
            Exit::Input,
            format!("cannot find this binary's path for the printed kubeconfig: {err}; run kubecred setup from an installed kubecred"),
        )
    })?;
    let user_args = shared.as_ref().map_or(&args.token, |s| &s.user);
    let inputs = inputs_of(
        user_args,
        &args.user_name,
        &command,
        config,
        &claims,
        &tokens,
    );
    // An error about one of several clusters names it.
    let about = |name: &str| format!("cluster {name:?}");
    let first = api_server(&inputs, clock);
    let first = match &shared {
        Some(shared) => first.with_context(|| about(&shared.list[0].name))?,
        None => first?,
    };
    if !first.issuer.starts_with("https://") {
        crate::log::stderr(format_args!(
            "  warn  kube-apiserver accepts only https issuers; {} is not one (fine for a local test provider only)\n",
            first.issuer
        ));
    }

    // Each other cluster's token is derived from the login as get-token will derive it, and
    // its API server's configuration checked against that token.
    let mut servers = vec![first];
    for cluster in shared.iter().flat_map(|s| &s.list[1..]) {
        let server = (|| {
            let config = resolve(&cluster.token)?;
            let tokens = acquire::tokens(&config, clock)?;
            let claims = claims_table::of_credential(&config, &tokens)?;
            let inputs = inputs_of(
                user_args,
                &args.user_name,
                &command,
                &config,
                &claims,
                &tokens,
            );
            api_server(&inputs, clock)
        })()
        .with_context(|| about(&cluster.name))?;
        servers.push(server);
    }
    let names: Vec<Option<&str>> = match &shared {
        Some(shared) => shared.list.iter().map(|c| Some(c.name.as_str())).collect(),
        None => vec![None],
    };
    for (name, server) in names.iter().zip(&servers) {
        let user = &server.user;
        crate::log::stderr(format_args!(
            "kubecred: {}with the configuration below, kube-apiserver sees you as {:?}{}\n",
            name.map(|name| format!("cluster {name:?}: "))
                .unwrap_or_default(),
            user.username,
            if user.groups.is_empty() {
                String::new()
            } else {
                format!(" in groups {}", user.groups.join(", "))
            }
        ));
    }

    let exec = advice::exec_stanza(&inputs, shared.is_some());
    let mut out = String::new();
    let mut section = |title: &str, body: &str| {
        let _ = write!(out, "# ==== {title} ====\n{body}\n");
    };
    // A cluster's name in a section's title ("of cluster \"a\""), for each --cluster.
    let of = |name: &Option<&str>| {
        name.map(|name| format!(" of cluster {name:?}"))
            .unwrap_or_default()
    };
    for (name, server) in names.iter().zip(&servers) {
        section(
            &format!(
                "1. API server{} (Kubernetes 1.30+; v1 since 1.34): save as a file, pass --authentication-config=FILE",
                of(name)
            ),
            &server.authn_yaml,
        );
    }
    for (name, server) in names.iter().zip(&servers) {
        section(
            &format!(
                "2. API server{}, older clusters: kube-apiserver flags instead of 1. (not both)",
                of(name)
            ),
            &server.legacy,
        );
    }
    let same_user = servers.windows(2).all(|pair| {
        (&pair[0].user.username, &pair[0].user.groups)
            == (&pair[1].user.username, &pair[1].user.groups)
    });
    if same_user {
        let title = match &shared {
            Some(_) => "3. RBAC: kubectl apply -f this on each cluster (as a cluster admin)",
            None => "3. RBAC: kubectl apply -f this (as a cluster admin)",
        };
        let user = &servers[0].user;
        section(title, &advice::rbac(&user.username, &user.groups));
    } else {
        for (name, server) in names.iter().zip(&servers) {
            section(
                &format!(
                    "3. RBAC{}: kubectl apply -f this there (as a cluster admin)",
                    of(name)
                ),
                &advice::rbac(&server.user.username, &server.user.groups),
            );
        }
    }
    match &shared {
        None => {
            section(
                "4. kubectl: a kubeconfig user that runs kubecred, for the current context",
                &advice::set_credentials_command(&inputs, &exec, false),
            );
            section(
                "5. kubeconfig: the same user as YAML",
                &advice::kubeconfig_user(&inputs, &exec),
            );
        }
        Some(shared) => {
            section(
                "4. kubectl: a kubeconfig user that runs kubecred, shared by the clusters",
                &advice::set_credentials_command(&inputs, &exec, true),
            );
            section(
                "5. kubeconfig: the same user as YAML, and a cluster and context for each cluster",
                &format!(
                    "{}{}",
                    advice::kubeconfig_user(&inputs, &exec),
                    clusters::kubeconfig_yaml(&shared.list, &args.user_name)
                ),
            );
        }
    }
    section(
        "6. kubectl 1.35+ with a credential plugin policy in kuberc: allow kubecred",
        &advice::kuberc(&inputs.command),
    );
    if let Some(target) = write_to {
        let written = target.write(&exec, clock)?;
        crate::log::stderr(format_args!("{written}"));
    }
    Ok(Some(out))
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
    issuer: String,
    authn_yaml: String,
    legacy: String,
    user: AuthenticatedUser,
}

/// The API server's side for the token of `inputs`, checked: the generated configuration must
/// accept the token it was made from.
fn api_server(inputs: &advice::Inputs, clock: &dyn Clock) -> anyhow::Result<ApiServer> {
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
        legacy: advice::legacy_flags(inputs, &choice),
        issuer: choice.issuer,
        authn_yaml,
        user,
    })
}
