//! `kubecred whoami`: the claims of the token kubectl would get — from the settings flags, or,
//! without `--issuer-url`, from the current kubeconfig context's kubecred `exec` stanza (its args,
//! env and cluster extension, as kubectl would run it) — and, with `--authentication-config`,
//! the user kube-apiserver would make of them, or the rule that rejects them and its message.
//!
//! The token itself is never printed. The token is the one `get-token` would print: the cached
//! one while fresh, else a refresh or a login, as `get-token` does. The report goes to stdout
//! (this is not the exec path); a rejection is a failure: its rule on the one error line, the
//! claims above it on stderr, nothing on stdout.

use super::claims_table;
use super::stanza::{self, Unresolved};
use crate::acquire;
use crate::authn_config::{self, AuthenticationConfiguration};
use crate::cli::WhoamiArgs;
use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Exit, fail};
use crate::exec_credential::{ClusterInfo, ExecInfo, V1, V1BETA1};
use crate::kubeconfig;
use std::ffi::OsString;
use std::fmt::Write;

pub(super) fn run(
    args: &WhoamiArgs,
    argv: &[OsString],
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    // Read first: a file with a mistake is reported before any login.
    let authn = args
        .authentication_config
        .as_deref()
        .map(AuthenticationConfiguration::load)
        .transpose()?;
    let (config, source) = settings(args, argv)?;
    let tokens = acquire::tokens(&config, clock)?;
    // A cloud's token: the cluster asks the cloud whose it is, and kubecred knows the answer.
    if let Some(who) = crate::clouds::who_sees(&config, &tokens) {
        return Ok(Some(format!(
            "{source}\nThe cluster sees the token kubectl gets as: {}\n",
            who?
        )));
    }
    let claims = claims_table::of_credential(&config, &tokens)?;
    let now = clock.now();

    let mut report = String::new();
    let _ = writeln!(report, "{source}");
    let _ = writeln!(
        report,
        "Claims of the {} kubectl gets from {} (client {}):",
        match config.token_kind {
            crate::config::TokenKind::IdToken => "ID token",
            crate::config::TokenKind::AccessToken => "access token",
        },
        config.issuer_as_given,
        config.client.id
    );
    report.push_str(&claims_table::render(&claims, now));

    let (Some(authn), Some(file)) = (authn, args.authentication_config.as_deref()) else {
        report.push_str(
            "\nPass --authentication-config FILE (the cluster's AuthenticationConfiguration) to see \
             the user kube-apiserver makes of these claims.\n",
        );
        return Ok(Some(report));
    };
    let file = file.display();
    match authn_config::evaluate(&authn, &claims, now) {
        Ok(user) => {
            let _ = writeln!(
                report,
                "\nkube-apiserver with {file} (jwt[{}]) authenticates this token as:",
                user.authenticator
            );
            report.push_str(&render_user(&user));
            Ok(Some(report))
        }
        Err(rejection) => {
            crate::log::stderr(format_args!("{report}"));
            Err(fail(
                Exit::Input,
                format!(
                    "kube-apiserver with {file} would reject this token (401 Unauthorized): {rejection}"
                ),
            ))
        }
    }
}

/// The settings to use (`command_line`: this run's), and a line saying where they came from.
fn settings(args: &WhoamiArgs, command_line: &[OsString]) -> anyhow::Result<(Config, String)> {
    if args.token.issuer_url.is_some() || args.token.grant_type.is_some() {
        let config = super::resolve(&args.token, super::Run::ByPerson, command_line)?;
        return Ok((config, "Settings: from the command line".into()));
    }
    let files = kubeconfig::paths(args.kubeconfig.as_deref());
    let found = kubeconfig::read_context_exec(&files, args.context.as_deref())?;
    // The stanza's env over this process's, as kubectl gives it to kubecred (read, not set).
    let whose = format!(
        "the exec args of user {:?} (context {:?})",
        found.user, found.context
    );
    let config = stanza::resolve(&found.exec.args, &found.exec.env, exec_info(&found)).map_err(
        |refused| match refused {
            Unresolved::NotGetToken => fail(
                Exit::Input,
                format!("{whose} do not run `kubecred get-token`"),
            ),
            Unresolved::Usage(line) => fail(Exit::Input, format!("{whose} do not parse: {line}")),
            Unresolved::Settings(err) => err,
        },
    )?;
    crate::log::set_level(config.verbose);
    let source = format!(
        "Settings: kubeconfig context {:?}, user {:?} (exec {})",
        found.context, found.user, found.exec.command
    );
    Ok((config, source))
}

/// What kubectl would put in KUBERNETES_EXEC_INFO for this stanza (a person runs whoami, so a
/// terminal on stdin makes the session interactive, as with `login`).
fn exec_info(stanza: &kubeconfig::ContextExec) -> ExecInfo {
    ExecInfo {
        api_version: if stanza.exec.api_version.as_deref() == Some(V1) {
            V1
        } else {
            V1BETA1
        },
        interactive: crate::presence::stdin_is_a_terminal(),
        // A person runs whoami: no client re-run to recognise (401 recovery).
        from_client: false,
        cluster: stanza
            .cluster
            .clone()
            .map(|(server, config)| ClusterInfo { server, config }),
    }
}

fn render_user(user: &authn_config::AuthenticatedUser) -> String {
    let mut groups = user.groups.clone();
    // kube-apiserver adds it to every authenticated user.
    groups.push("system:authenticated".into());
    let mut rows = vec![("username", user.username.clone())];
    if !user.uid.is_empty() {
        rows.push(("uid", user.uid.clone()));
    }
    rows.push(("groups", groups.join(", ")));
    for (key, values) in &user.extra {
        rows.push(("extra", format!("{key}: {}", values.join(", "))));
    }
    rows.iter()
        .map(|(label, value)| {
            format!(
                "  {label:<8}  {}\n",
                crate::text::printable_brief(value, 240)
            )
        })
        .collect()
}
