//! `kubecred setup` for a managed cluster's cloud (`--grant-type google`, and the clouds' tokens
//! derived from the shared login): no provider to diagnose and no API server to configure — the
//! cluster already trusts its cloud — so setup gets the token as kubectl will, says whom the
//! cluster sees (`clouds::who_sees`), and prints (with `--write-kubeconfig`, writes) the
//! kubeconfig user that runs kubecred, the same typed stanza the OIDC setup prints.

use super::{Sections, advice, write};
use crate::acquire;
use crate::cli::SetupArgs;
use crate::clock::Clock;
use crate::commands::command_on_path::ExecCommand;
use crate::config::Config;
use serde_json::Map;

/// Whether `config`'s token is a cloud's: setup takes this path for it.
pub(super) fn is_cloud(config: &Config) -> bool {
    config.cloud.is_some()
        || config
            .shared_login
            .as_ref()
            .is_some_and(|shared| matches!(shared.target, crate::config::Target::Cloud(_)))
}

/// Setup for a cloud's token (see the module comment).
pub(super) fn run(
    args: &SetupArgs,
    config: &Config,
    command: ExecCommand,
    write_to: Option<write::Target>,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    crate::log::stderr(format_args!(
        "kubecred: getting the token kubectl will get ({})\n",
        source(config)
    ));
    let tokens = acquire::login(config, clock)?;
    if let Some(who) = crate::clouds::who_sees(config, &tokens) {
        crate::log::stderr(format_args!(
            "kubecred: the cluster sees this token as {}\n",
            who?
        ));
    }
    let claims = Map::new();
    let inputs = advice::Inputs {
        args: &args.token,
        user_name: &args.user_name,
        command,
        claims: &claims,
        signing_alg: None,
        client_id: &config.client.id,
        ca_pems: &[],
        request_headers: &config.http.request_headers,
        user_login: config.grant.is_user_login(),
        target_audience: None,
    };
    let exec = advice::exec_stanza(&inputs, false);
    let mut out = Sections::default();
    out.add(
        "1. kubectl: a kubeconfig user that runs kubecred, for the current context",
        &advice::set_credentials_command(&inputs, &exec, false),
    );
    out.add(
        "2. kubeconfig: the same user as YAML",
        &advice::kubeconfig_user(&inputs, &exec),
    );
    out.add(
        "3. kubectl 1.35+ with a credential plugin policy in kuberc: allow kubecred",
        &advice::kuberc(&inputs.command),
    );
    if let Some(target) = write_to {
        let written = target.write(&exec, clock)?;
        crate::log::stderr(format_args!("{written}"));
    }
    Ok(Some(out.0))
}

/// Where the token comes from, in a phrase.
fn source(config: &Config) -> String {
    match &config.shared_login {
        Some(shared) => format!(
            "the {}, for the kubecred login at {}",
            shared.target.describe(),
            config.issuer_as_given
        ),
        None => format!("--grant-type {}", config.grant.name()),
    }
}
