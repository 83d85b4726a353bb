//! `kubecred setup`: wire a new identity provider to a cluster without reading source code.
//! Three steps: diagnose the provider before logging in (`diagnose.rs`: one `ok`/`warn` line
//! each on stderr, stopping at the first problem with its cause and fix); log in as `kubecred
//! login` does and show the token's claims as a table on stderr; then print on stdout what to
//! configure (`advice.rs`): the API server, RBAC, kubectl and kuberc — and with
//! `--write-kubeconfig`, write the kubectl part into the kubeconfig (`write.rs`): the same typed
//! exec stanza (`kubeconfig::ExecStanza`) that sections 4 and 5 print.
//!
//! The advice goes to stdout because it is the command's product (`kubecred setup … > setup.txt`);
//! setup is never what a kubeconfig runs, so stdout carries no ExecCredential here. It is checked
//! before it is printed: the generated AuthenticationConfiguration is evaluated against the
//! token's own claims (`authn_config`), and its user is the one the RBAC section binds.

mod advice;
mod diagnose;
mod write;

use super::claims_table;
use crate::acquire;
use crate::authn_config::{self, AuthenticationConfiguration};
use crate::cli::SetupArgs;
use crate::clock::Clock;
use crate::config::{Config, TokenKind};
use crate::error::{Exit, fail};
use std::fmt::Write;

pub(super) fn run(
    args: &SetupArgs,
    config: &Config,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    // What --write-kubeconfig needs is checked before anything else happens.
    let write_to = write::prepare(args)?;
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
    if config.grant.is_user_login() && tokens.refresh_token.is_none() {
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

    let (token, _) = tokens
        .credential(config.token_kind)
        .expect("of_credential found the credential");
    let signing_alg = crate::tokens::unverified_jwt_segment(token.expose(), 0)
        .and_then(|header| header.get("alg")?.as_str().map(String::from));
    let command = crate::command_on_path::for_kubeconfig().map_err(|err| {
        fail(
            Exit::Input,
            format!("cannot find this binary's path for the printed kubeconfig: {err}; run kubecred setup from an installed kubecred"),
        )
    })?;
    let inputs = advice::Inputs {
        args: &args.token,
        user_name: &args.user_name,
        command,
        claims: &claims,
        signing_alg,
        client_id: &config.client.id,
        ca_pems: &config.http.tls.extra_ca_pems,
        request_headers: &config.http.request_headers,
        user_login: config.grant.is_user_login(),
    };
    let choice = advice::ClaimChoice::of(&inputs);
    if !choice.issuer.starts_with("https://") {
        crate::log::stderr(format_args!(
            "  warn  kube-apiserver accepts only https issuers; {} is not one (fine for a local test provider only)\n",
            choice.issuer
        ));
    }
    let authn_yaml = advice::authentication_configuration(&inputs, &choice);
    // The generated configuration must accept the token it was made from.
    let authn = AuthenticationConfiguration::parse(&authn_yaml)
        .map_err(|reason| fail(Exit::Input, format!("kubecred generated an AuthenticationConfiguration that {reason}; please report this")))?;
    let user = authn_config::evaluate(&authn, &claims, clock.now()).map_err(|rejection| {
        fail(
            Exit::Provider,
            format!("the token cannot be mapped to a Kubernetes user: {rejection}"),
        )
    })?;
    crate::log::stderr(format_args!(
        "kubecred: with the configuration below, kube-apiserver sees you as {:?}{}\n",
        user.username,
        if user.groups.is_empty() {
            String::new()
        } else {
            format!(" in groups {}", user.groups.join(", "))
        }
    ));

    let exec = advice::exec_stanza(&inputs);
    let mut out = String::new();
    let mut section = |title: &str, body: &str| {
        let _ = write!(out, "# ==== {title} ====\n{body}\n");
    };
    section(
        "1. API server (Kubernetes 1.30+; v1 since 1.34): save as a file, pass --authentication-config=FILE",
        &authn_yaml,
    );
    section(
        "2. API server, older clusters: kube-apiserver flags instead of 1. (not both)",
        &advice::legacy_flags(&inputs, &choice),
    );
    section(
        "3. RBAC: kubectl apply -f this (as a cluster admin)",
        &advice::rbac(&user.username, &user.groups),
    );
    section(
        "4. kubectl: a kubeconfig user that runs kubecred, for the current context",
        &advice::set_credentials_command(&inputs, &exec),
    );
    section(
        "5. kubeconfig: the same user as YAML",
        &advice::kubeconfig_user(&inputs, &exec),
    );
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
