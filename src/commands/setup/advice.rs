//! What `setup` tells the operator and the user to configure, built from the token it just
//! obtained: the API server's `AuthenticationConfiguration` (issuer, audiences and the claim
//! mappings this token supports) and the legacy `--oidc-*` flags; RBAC bindings for the user and
//! its groups; the kubectl side (a `kubectl config set-credentials` command, the same user as
//! kubeconfig YAML, running this very binary by the name it has on PATH); and the kuberc
//! allowlist entry for kubectl 1.35+.
//!
//! Every YAML string is written as a JSON string literal (valid YAML, and nothing in a claim can
//! break out of it); shell words are quoted with `shlex`. Sections start with a `# ====` line so
//! that each can be cut out (the tests do).

use crate::cli::TokenArgs;
use crate::command_on_path::ExecCommand;
use clap::ValueEnum;
use serde_json::{Map, Value};
use std::fmt::Write;
use std::path::Path;

/// The prefix the generated configuration puts before usernames and groups from the provider,
/// so that they can never collide with `system:` names or another provider's.
pub const PREFIX: &str = "oidc:";

/// What the advice is built from.
pub struct Inputs<'a> {
    pub args: &'a TokenArgs,
    /// Name of the kubeconfig user to create.
    pub user_name: &'a str,
    /// How a kubeconfig runs this binary (`command_on_path`): the exec `command`.
    pub command: ExecCommand,
    pub claims: &'a Map<String, Value>,
    /// The `alg` of the token's JWS header.
    pub signing_alg: Option<String>,
    pub client_id: &'a str,
    pub ca_pems: &'a [Vec<u8>],
    pub user_login: bool,
}

/// The claims the generated configuration maps, chosen from what the token carries.
pub struct ClaimChoice {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub username_claim: &'static str,
    pub groups_claim: Option<&'static str>,
}

impl ClaimChoice {
    pub fn of(inputs: &Inputs) -> ClaimChoice {
        let claims = inputs.claims;
        let issuer = claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let token_audiences: Vec<String> = match claims.get("aud") {
            Some(Value::String(aud)) => vec![aud.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => vec![],
        };
        // An ID token's audience is this client; an access token's are the APIs it is for.
        let audiences = if token_audiences.iter().any(|a| a == inputs.client_id) {
            vec![inputs.client_id.to_string()]
        } else {
            token_audiences
        };
        // email only when it is a string that kube-apiserver will accept (email_verified absent
        // or true); otherwise the stable subject.
        let email_usable = claims.get("email").is_some_and(Value::is_string)
            && matches!(claims.get("email_verified"), None | Some(Value::Bool(true)));
        let groups_present = matches!(
            claims.get("groups"),
            Some(Value::Array(_) | Value::String(_))
        );
        ClaimChoice {
            issuer,
            audiences,
            username_claim: if email_usable { "email" } else { "sub" },
            groups_claim: groups_present.then_some("groups"),
        }
    }
}

/// The AuthenticationConfiguration for kube-apiserver's `--authentication-config`.
pub fn authentication_configuration(inputs: &Inputs, choice: &ClaimChoice) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "apiVersion: apiserver.config.k8s.io/v1");
    let _ = writeln!(out, "kind: AuthenticationConfiguration");
    let _ = writeln!(out, "jwt:");
    let _ = writeln!(out, "- issuer:");
    let _ = writeln!(out, "    url: {}", q(&choice.issuer));
    let _ = writeln!(out, "    audiences:");
    for audience in &choice.audiences {
        let _ = writeln!(out, "    - {}", q(audience));
    }
    if choice.audiences.len() > 1 {
        let _ = writeln!(out, "    audienceMatchPolicy: MatchAny");
    }
    if !inputs.ca_pems.is_empty() {
        let _ = writeln!(
            out,
            "    # The CA that signed the provider's certificate (from --certificate-authority)."
        );
        let _ = writeln!(out, "    certificateAuthority: |");
        for pem in inputs.ca_pems {
            for line in String::from_utf8_lossy(pem)
                .lines()
                .filter(|l| !l.trim().is_empty())
            {
                let _ = writeln!(out, "      {}", line.trim());
            }
        }
    }
    let _ = writeln!(out, "  claimMappings:");
    let _ = writeln!(out, "    username:");
    let _ = writeln!(out, "      claim: {}", choice.username_claim);
    let _ = writeln!(out, "      prefix: {}", q(PREFIX));
    match choice.groups_claim {
        Some(claim) => {
            let _ = writeln!(out, "    groups:");
            let _ = writeln!(out, "      claim: {claim}");
            let _ = writeln!(out, "      prefix: {}", q(PREFIX));
        }
        None => {
            let _ = writeln!(
                out,
                "    # The token has no groups claim: ask the provider to add one (a groups scope or"
            );
            let _ = writeln!(
                out,
                "    # mapper) to bind roles to groups instead of single users."
            );
        }
    }
    let _ = writeln!(out, "    uid:");
    let _ = writeln!(out, "      claim: sub");
    let _ = writeln!(
        out,
        "  # Optional: refuse tokens that lack something, with a message for the API server's log."
    );
    let _ = writeln!(out, "  # claimValidationRules:");
    let _ = writeln!(
        out,
        "  # - expression: \"claims.?email_verified.orValue(true) == true\""
    );
    let _ = writeln!(out, "  #   message: the email address must be verified");
    let _ = writeln!(out, "  userValidationRules:");
    let _ = writeln!(
        out,
        "  - expression: \"!user.username.startsWith('system:')\""
    );
    let _ = writeln!(
        out,
        "    message: \"usernames from the identity provider must not start with system:\""
    );
    out
}

/// The pre-1.30 kube-apiserver flags for the same mapping (one audience only).
pub fn legacy_flags(inputs: &Inputs, choice: &ClaimChoice) -> String {
    let mut flags = vec![
        format!("--oidc-issuer-url={}", choice.issuer),
        format!(
            "--oidc-client-id={}",
            choice
                .audiences
                .first()
                .map(String::as_str)
                .unwrap_or(inputs.client_id)
        ),
        format!("--oidc-username-claim={}", choice.username_claim),
        format!("--oidc-username-prefix={PREFIX}"),
    ];
    if let Some(claim) = choice.groups_claim {
        flags.push(format!("--oidc-groups-claim={claim}"));
        flags.push(format!("--oidc-groups-prefix={PREFIX}"));
    }
    if !inputs.ca_pems.is_empty() {
        flags.push("--oidc-ca-file=/etc/kubernetes/pki/oidc-ca.pem   # the CA bundle passed to --certificate-authority".into());
    }
    match inputs.signing_alg.as_deref() {
        Some("RS256") | None => {}
        Some(alg) => flags.push(format!(
            "--oidc-signing-algs={alg}   # the flags accept only RS256 unless told"
        )),
    }
    flags.iter().map(|f| format!("{f}\n")).collect()
}

/// ClusterRoleBindings (read-only `view`) for the user and, when the token has them, its groups.
pub fn rbac(username: &str, groups: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Read-only access to start with; use edit or admin (or a Role in one namespace) as needed."
    );
    let _ = writeln!(
        out,
        "# kubectl create clusterrolebinding {} --clusterrole=view --user={}",
        rbac_name(username),
        shell(username)
    );
    binding(&mut out, username, "User");
    for group in groups {
        let _ = writeln!(out, "---");
        let _ = writeln!(
            out,
            "# Or for everyone in the group: kubectl create clusterrolebinding {} --clusterrole=view --group={}",
            rbac_name(group),
            shell(group)
        );
        binding(&mut out, group, "Group");
    }
    out
}

fn binding(out: &mut String, subject: &str, kind: &str) {
    let _ = writeln!(out, "apiVersion: rbac.authorization.k8s.io/v1");
    let _ = writeln!(out, "kind: ClusterRoleBinding");
    let _ = writeln!(out, "metadata:");
    let _ = writeln!(out, "  name: {}", q(&rbac_name(subject)));
    let _ = writeln!(out, "roleRef:");
    let _ = writeln!(out, "  apiGroup: rbac.authorization.k8s.io");
    let _ = writeln!(out, "  kind: ClusterRole");
    let _ = writeln!(out, "  name: view");
    let _ = writeln!(out, "subjects:");
    let _ = writeln!(out, "- apiGroup: rbac.authorization.k8s.io");
    let _ = writeln!(out, "  kind: {kind}");
    let _ = writeln!(out, "  name: {}", q(subject));
}

/// A valid object name for a subject: lowercase alphanumerics, `-` and `.`, at most 253.
fn rbac_name(subject: &str) -> String {
    let name: String = subject
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = format!("{}-view", name.trim_matches(|c| c == '-' || c == '.'));
    name.chars().take(253).collect()
}

/// `get-token` and the settings given to setup, as a kubeconfig `args` list. Paths become
/// absolute (kubectl runs the plugin from wherever it is). A client secret given as a value is
/// never written out, nor are request headers' values (an API key): the stanza gets a
/// placeholder in `env` instead (see [`exec_env`]).
pub fn exec_args(args: &TokenArgs) -> Vec<String> {
    let mut out = vec!["get-token".to_string()];
    // An empty value is a switch, printed alone: get-token refuses `--use-access-token=true`.
    let mut flag = |name: &str, value: Option<String>| match value {
        Some(value) if value.is_empty() => out.push(format!("--{name}")),
        Some(value) => out.push(format!("--{name}={value}")),
        None => {}
    };
    let path = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let enum_name = |v: &dyn Fn() -> Option<clap::builder::PossibleValue>| {
        v().map(|p| p.get_name().to_string())
    };
    flag("issuer-url", args.issuer_url.clone());
    flag("client-id", args.client_id.clone());
    flag(
        "client-secret-file",
        args.client_secret_file.as_deref().map(path),
    );
    for scope in &args.scopes {
        flag("scope", Some(scope.clone()));
    }
    flag(
        "grant-type",
        args.grant_type
            .and_then(|g| enum_name(&|| g.to_possible_value())),
    );
    flag("use-access-token", args.use_access_token.then(String::new));
    flag("audience", args.audience.clone());
    flag("resource", args.resource.clone());
    flag(
        "client-auth-method",
        args.client_auth_method
            .and_then(|m| enum_name(&|| m.to_possible_value())),
    );
    flag("cache-dir", args.cache.cache_dir.as_deref().map(path));
    flag(
        "cache-storage",
        args.cache_storage
            .and_then(|s| enum_name(&|| s.to_possible_value())),
    );
    for ca in &args.certificate_authority {
        flag("certificate-authority", Some(path(ca)));
    }
    for data in &args.certificate_authority_data {
        flag("certificate-authority-data", Some(data.clone()));
    }
    flag(
        "insecure-skip-tls-verify",
        args.insecure_skip_tls_verify.then(String::new),
    );
    flag("min-validity", args.min_validity.clone());
    flag("refresh-ahead", args.refresh_ahead.clone());
    flag("http-timeout", args.http_timeout.clone());
    flag("lock-timeout", args.lock_timeout.clone());
    flag("redirect-url", args.redirect_url.clone());
    for address in &args.listen_address {
        flag("listen-address", Some(address.clone()));
    }
    flag("pkce", args.pkce.map(|b| b.to_string()));
    flag("browser-command", args.browser_command.clone());
    flag(
        "skip-open-browser",
        args.skip_open_browser.then(String::new),
    );
    flag("auth-timeout", args.auth_timeout.clone());
    flag("login-cooldown", args.login_cooldown.clone());
    for param in &args.auth_params {
        flag("auth-param", Some(param.clone()));
    }
    flag(
        "local-server-cert",
        args.local_server_cert.as_deref().map(path),
    );
    flag(
        "local-server-key",
        args.local_server_key.as_deref().map(path),
    );
    flag("account", args.account.clone());
    flag("login-hint", args.login_hint.clone());
    flag("prompt", args.prompt.clone());
    let ci = &args.federation;
    let source = |s: Option<crate::cli::CiTokenSourceArg>| {
        s.and_then(|s| enum_name(&|| s.to_possible_value()))
    };
    flag(
        "subject-token-file",
        ci.subject_token_file.as_deref().map(path),
    );
    flag("subject-token-env", ci.subject_token_env.clone());
    flag("subject-token-source", source(ci.subject_token_source));
    flag("subject-token-audience", ci.subject_token_audience.clone());
    flag("subject-token-type", ci.subject_token_type.clone());
    flag("requested-token-type", ci.requested_token_type.clone());
    flag("token-endpoint", ci.token_endpoint.clone());
    flag(
        "client-private-key-file",
        ci.client_private_key_file.as_deref().map(path),
    );
    flag("client-key-id", ci.client_key_id.clone());
    flag(
        "client-assertion-file",
        ci.client_assertion_file.as_deref().map(path),
    );
    flag("client-assertion-env", ci.client_assertion_env.clone());
    flag(
        "client-assertion-source",
        source(ci.client_assertion_source),
    );
    flag(
        "client-assertion-audience",
        ci.client_assertion_audience.clone(),
    );
    flag(
        "gitlab-id-token-variable",
        ci.gitlab_id_token_variable.clone(),
    );
    flag("username", ci.username.clone());
    flag("password-file", ci.password_file.as_deref().map(path));
    out
}

/// The stanza's `env`: placeholders for a client secret given as a value, and for the request
/// headers' values (each header's name, its value to be filled in).
pub fn exec_env(args: &TokenArgs) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    if args.client_secret.is_some() {
        env.push((
            "KUBECRED_CLIENT_SECRET",
            "<the client secret; better: --client-secret-file>".to_string(),
        ));
    }
    let header_names: Vec<String> = args
        .request_headers
        .iter()
        .map(|header| match header.split_once('=') {
            Some((name, _)) => format!("{}=<its value>", name.trim()),
            None => "<NAME=VALUE>".to_string(),
        })
        .collect();
    if !header_names.is_empty() {
        env.push(("KUBECRED_REQUEST_HEADER", header_names.join(",")));
    }
    env
}

/// Why the stanza runs the command it does, as `#` comment lines; nothing for plain `kubecred`.
pub fn command_note(command: &ExecCommand) -> String {
    match command {
        ExecCommand::Name => String::new(),
        ExecCommand::KubectlPluginName => "\
# kubectl-kubecred: the only name kubecred has on PATH (krew links no `kubecred`). That link
# survives `kubectl krew upgrade`; the versioned file behind it does not.
"
        .to_string(),
        ExecCommand::Path(_) => "\
# command: this binary's path, as kubecred is not on PATH. Put it on PATH and write
# `kubecred` instead, so that moving or upgrading it does not break this kubeconfig.
"
        .to_string(),
    }
}

/// `kubectl config set-credentials` for the user, then pointing the current context at it.
pub fn set_credentials_command(inputs: &Inputs, interactive_mode: &str) -> String {
    let mut words = vec![
        "kubectl".to_string(),
        "config".into(),
        "set-credentials".into(),
        shell(inputs.user_name),
        "--exec-api-version=client.authentication.k8s.io/v1beta1".into(),
        shell(&format!("--exec-command={}", inputs.command.as_command())),
    ];
    for arg in exec_args(inputs.args) {
        words.push(shell(&format!("--exec-arg={arg}")));
    }
    for (name, value) in exec_env(inputs.args) {
        words.push(shell(&format!("--exec-env={name}={value}")));
    }
    words.push(format!("--exec-interactive-mode={interactive_mode}"));
    format!(
        "# kubectl 1.30+ (--exec-interactive-mode); with an older kubectl, use the YAML of 5.\n{}{}\nkubectl config set-context --current --user={}\n",
        command_note(&inputs.command),
        words.join(" \\\n    "),
        shell(inputs.user_name)
    )
}

/// The same user as kubeconfig YAML (merge it into ~/.kube/config, or keep it as its own file
/// in $KUBECONFIG).
pub fn kubeconfig_user(inputs: &Inputs, interactive_mode: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "apiVersion: v1");
    let _ = writeln!(out, "kind: Config");
    let _ = writeln!(out, "users:");
    let _ = writeln!(out, "- name: {}", q(inputs.user_name));
    let _ = writeln!(out, "  user:");
    let _ = writeln!(out, "    exec:");
    let _ = writeln!(
        out,
        "      # v1beta1: the widest client support (client-go 1.11+, the Python and JavaScript clients)."
    );
    let _ = writeln!(
        out,
        "      apiVersion: client.authentication.k8s.io/v1beta1"
    );
    for line in command_note(&inputs.command).lines() {
        let _ = writeln!(out, "      {line}");
    }
    let _ = writeln!(out, "      command: {}", q(&inputs.command.as_command()));
    let _ = writeln!(out, "      args:");
    for arg in exec_args(inputs.args) {
        let _ = writeln!(out, "      - {}", q(&arg));
    }
    let env = exec_env(inputs.args);
    if !env.is_empty() {
        let _ = writeln!(out, "      env:");
        for (name, value) in env {
            let _ = writeln!(out, "      - name: {name}");
            let _ = writeln!(out, "        value: {}", q(&value));
        }
    }
    let _ = writeln!(out, "      interactiveMode: {interactive_mode}");
    let _ = writeln!(out, "      provideClusterInfo: false");
    out
}

/// kuberc (kubectl 1.35+): let kubectl run kubecred when the policy is an allowlist. A bare
/// name is looked up on PATH by kubectl, as the kubeconfig's command is.
pub fn kuberc(command: &ExecCommand) -> String {
    let command = command.as_command();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# ~/.kube/kuberc (or $KUBERC). If yours says credentialPluginPolicy: DenyAll, kubectl runs no"
    );
    let _ = writeln!(
        out,
        "# credential plugin at all; switch it to Allowlist with this entry."
    );
    let _ = writeln!(
        out,
        "# kubectl 1.36+: kubectl kuberc set --section credentialplugin --policy Allowlist --allowlist-entry command={}",
        shell(&command)
    );
    let _ = writeln!(out, "apiVersion: kubectl.config.k8s.io/v1beta1");
    let _ = writeln!(out, "kind: Preference");
    let _ = writeln!(out, "credentialPluginPolicy: Allowlist");
    let _ = writeln!(out, "credentialPluginAllowlist:");
    let _ = writeln!(out, "- command: {}   # kubectl 1.36+", q(&command));
    let _ = writeln!(out, "# kubectl 1.35 names the field `name` instead:");
    let _ = writeln!(out, "# - name: {}", q(&command));
    out
}

/// A string as a YAML scalar: a JSON string literal, which YAML reads as the same string.
fn q(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn shell(word: &str) -> String {
    shlex::try_quote(word)
        .map(|w| w.into_owned())
        .unwrap_or_else(|_| format!("'{word}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rbac_names_are_valid_object_names() {
        assert_eq!(
            rbac_name("oidc:Alice@Example.org"),
            "oidc-alice-example.org-view"
        );
        assert_eq!(rbac_name("oidc:dev ops"), "oidc-dev-ops-view");
    }

    #[test]
    fn yaml_strings_cannot_break_out() {
        assert_eq!(q("a\"b\nc: d"), r#""a\"b\nc: d""#);
    }

    /// Flags the printed stanza leaves out on purpose: secrets given as values (the stanza gets
    /// an `env` placeholder instead), one-off switches, and kubelogin's hidden aliases.
    const NOT_PRINTED: [&str; 5] = [
        "client-secret",
        "request-header",
        "force-refresh",
        "verbose",
        "help",
    ];

    /// Every get-token flag a setup run was given reaches the printed `args`: a flag added to
    /// `TokenArgs` and forgotten in `exec_args` fails here.
    #[test]
    fn every_setting_setup_was_given_is_printed() {
        use clap::CommandFactory;
        let command = crate::cli::Cli::command();
        let get_token = command.find_subcommand("get-token").unwrap();
        let mut argv = vec!["kubecred".to_string(), "get-token".to_string()];
        let mut expected = Vec::new();
        for arg in get_token.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || NOT_PRINTED.contains(&long) {
                continue;
            }
            if !arg.get_action().takes_values() {
                argv.push(format!("--{long}"));
            } else {
                let value = match arg.get_possible_values().first() {
                    Some(possible) => possible.get_name().to_string(),
                    None => "/abs/value".to_string(),
                };
                argv.push(format!("--{long}={value}"));
            }
            expected.push(long.to_string());
        }
        let crate::cli::Command::GetToken(args) =
            <crate::cli::Cli as clap::Parser>::try_parse_from(&argv)
                .unwrap()
                .command
        else {
            unreachable!()
        };
        let printed = exec_args(&args);
        for long in expected {
            assert!(
                printed
                    .iter()
                    .any(|a| *a == format!("--{long}") || a.starts_with(&format!("--{long}="))),
                "--{long} was given to setup but is not in the printed args: {printed:?}"
            );
        }
        // And get-token reads back what was printed.
        let mut again = vec!["kubecred".to_string()];
        again.extend(printed);
        <crate::cli::Cli as clap::Parser>::try_parse_from(&again).unwrap();
    }
}
