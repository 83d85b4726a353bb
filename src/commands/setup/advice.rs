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

use super::super::stanza::{exec_args, kubecred_stanza};
use crate::cli::TokenArgs;
use crate::commands::command_on_path::ExecCommand;
use crate::config::RequestHeader;
use crate::exec_credential::V1BETA1;
use crate::kubeconfig::{EnvVar, ExecStanza};
use serde_json::{Map, Value};
use std::fmt::Write;

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
    /// The `--request-header`s as `config` split and checked them (`A=1,B=2` is two).
    pub request_headers: &'a [RequestHeader],
    pub user_login: bool,
    /// The audience a `--shared-login` cluster's tokens are derived for (its target's): the
    /// only one its API server may accept, whatever else the token carries.
    pub target_audience: Option<&'a str>,
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
        // An ID token's audience is this client; an access token's are the APIs it is for. A
        // shared login's cluster accepts its own target's alone: another cluster's token (the
        // same login's) must not be good here.
        let audiences = if let Some(target) = inputs.target_audience {
            vec![target.to_string()]
        } else if token_audiences.iter().any(|a| a == inputs.client_id) {
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

/// The stanza's `env`: placeholders for a client secret given as a value, and for the request
/// headers' values (each header's name, its value to be filled in), one pair per header.
pub fn exec_env(args: &TokenArgs, request_headers: &[RequestHeader]) -> Vec<EnvVar> {
    let mut env = Vec::new();
    if args.client_secret.is_some() {
        env.push(EnvVar::new(
            "KUBECRED_CLIENT_SECRET",
            "<the client secret; better: --client-secret-file>",
        ));
    }
    let placeholders: Vec<String> = request_headers
        .iter()
        .map(|header| format!("{}=<its value>", header.name))
        .collect();
    if !placeholders.is_empty() {
        env.push(EnvVar::new(
            "KUBECRED_REQUEST_HEADER",
            placeholders.join(","),
        ));
    }
    env
}

/// The kubeconfig user's exec stanza that sections 4 and 5 print and `--write-kubeconfig`
/// writes: v1beta1 (the widest client support), this binary by its name on PATH, the settings
/// setup was given, placeholders for what must not be printed; the cluster's info only where
/// the clusters carry settings in their extension (`cluster_info`: each `--cluster`'s target).
pub fn exec_stanza(inputs: &Inputs, cluster_info: bool) -> ExecStanza {
    ExecStanza {
        provide_cluster_info: Some(cluster_info),
        ..kubecred_stanza(
            V1BETA1,
            inputs.command.as_command(),
            exec_args(inputs.args),
            exec_env(inputs.args, inputs.request_headers),
            inputs.user_login,
        )
    }
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

/// `kubectl config set-credentials` for the user of `exec`, then pointing the current context
/// at it — or, for `--cluster`s (`clusters`), where their entries are: kubectl config cannot
/// set a cluster's extensions.
pub fn set_credentials_command(inputs: &Inputs, exec: &ExecStanza, clusters: bool) -> String {
    let mut words = vec![
        "kubectl".to_string(),
        "config".into(),
        "set-credentials".into(),
        shell(inputs.user_name),
    ];
    if let Some(api_version) = &exec.api_version {
        words.push(shell(&format!("--exec-api-version={api_version}")));
    }
    words.push(shell(&format!("--exec-command={}", exec.command)));
    for arg in &exec.args {
        words.push(shell(&format!("--exec-arg={arg}")));
    }
    for var in &exec.env {
        words.push(shell(&format!(
            "--exec-env={}={}",
            var.name,
            var.value.expose()
        )));
    }
    if let Some(mode) = exec.interactive_mode {
        words.push(format!("--exec-interactive-mode={}", mode.as_str()));
    }
    let then = if clusters {
        "# The clusters carry their targets in an extension, which kubectl config cannot set:\n# take the clusters and contexts from the YAML of 5 (or run setup with --write-kubeconfig).\n".to_string()
    } else {
        format!(
            "kubectl config set-context --current --user={}\n",
            shell(inputs.user_name)
        )
    };
    format!(
        "# kubectl 1.30+ (--exec-interactive-mode); with an older kubectl, use the YAML of 5.\n{}{}\n{then}",
        command_note(&inputs.command),
        words.join(" \\\n    "),
    )
}

/// The user of `exec` as kubeconfig YAML (merge it into ~/.kube/config, or keep it as its own
/// file in $KUBECONFIG): the typed stanza field by field, in its serde order, with comments
/// that say why (a test reads it back as the same stanza).
pub fn kubeconfig_user(inputs: &Inputs, exec: &ExecStanza) -> String {
    let ExecStanza {
        api_version,
        command,
        args,
        env,
        interactive_mode,
        provide_cluster_info,
        install_hint,
    } = exec;
    let mut out = String::new();
    let _ = writeln!(out, "apiVersion: v1");
    let _ = writeln!(out, "kind: Config");
    let _ = writeln!(out, "users:");
    let _ = writeln!(out, "- name: {}", q(inputs.user_name));
    let _ = writeln!(out, "  user:");
    let _ = writeln!(out, "    exec:");
    if let Some(api_version) = api_version {
        if api_version == V1BETA1 {
            let _ = writeln!(
                out,
                "      # v1beta1: the widest client support (client-go 1.11+, the Python and JavaScript clients)."
            );
        }
        let _ = writeln!(out, "      apiVersion: {}", scalar(api_version));
    }
    for line in command_note(&inputs.command).lines() {
        let _ = writeln!(out, "      {line}");
    }
    let _ = writeln!(out, "      command: {}", q(command));
    if !args.is_empty() {
        let _ = writeln!(out, "      args:");
        for arg in args {
            let _ = writeln!(out, "      - {}", q(arg));
        }
    }
    if !env.is_empty() {
        let _ = writeln!(out, "      env:");
        for var in env {
            let _ = writeln!(out, "      - name: {}", scalar(&var.name));
            let _ = writeln!(out, "        value: {}", q(var.value.expose()));
        }
    }
    if let Some(mode) = interactive_mode {
        if *mode == crate::kubeconfig::InteractiveMode::IfAvailable {
            let _ = writeln!(
                out,
                "      # In a terminal: the browser (or the device flow over SSH). IDEs and dashboards"
            );
            let _ = writeln!(
                out,
                "      # (Lens, Headlamp, VS Code, k9s, Terraform) use this user unchanged: on your desktop"
            );
            let _ = writeln!(
                out,
                "      # the browser opens, and a failure raises a desktop notification (--notify)."
            );
        }
        let _ = writeln!(out, "      interactiveMode: {}", mode.as_str());
    }
    if let Some(provide) = provide_cluster_info {
        let _ = writeln!(out, "      provideClusterInfo: {provide}");
    }
    if let Some(hint) = install_hint {
        let _ = writeln!(out, "      installHint: {}", q(hint));
    }
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

/// A name or version (`KUBECRED_CLIENT_SECRET`, `client.authentication.k8s.io/v1beta1`) as it
/// reads best: plain when YAML reads it as that same string, else quoted ([`q`]).
fn scalar(text: &str) -> String {
    let plain = text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-'))
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n" | "~"
        );
    if plain { text.to_string() } else { q(text) }
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
        assert_eq!(scalar("KUBECRED_CLIENT_SECRET"), "KUBECRED_CLIENT_SECRET");
        assert_eq!(scalar("on"), "\"on\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
    }

    /// A shared login's cluster accepts its own target's audience alone, even where the token
    /// also names the client (which would be every cluster's).
    #[test]
    fn a_shared_login_cluster_accepts_its_target_alone() {
        let args = TokenArgs::default();
        let claims: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "iss": "https://idp.example",
            "aud": ["k8s", "https://b.example"],
            "sub": "alice",
        }))
        .unwrap();
        let inputs = |target_audience| Inputs {
            args: &args,
            user_name: "oidc",
            command: ExecCommand::Name,
            claims: &claims,
            signing_alg: None,
            client_id: "k8s",
            ca_pems: &[],
            request_headers: &[],
            user_login: true,
            target_audience,
        };
        assert_eq!(ClaimChoice::of(&inputs(None)).audiences, ["k8s"]);
        let shared = inputs(Some("https://b.example"));
        let choice = ClaimChoice::of(&shared);
        assert_eq!(choice.audiences, ["https://b.example"]);
        let yaml = authentication_configuration(&shared, &choice);
        assert!(
            yaml.contains("    audiences:\n    - \"https://b.example\"\n  claimMappings:"),
            "{yaml}"
        );
        assert!(legacy_flags(&shared, &choice).contains("--oidc-client-id=https://b.example\n"));
    }

    /// Section 5 is the typed stanza written out with comments: read back, it is the same
    /// stanza, whatever the command, the grant and the placeholders.
    #[test]
    fn the_printed_user_reads_back_as_the_stanza() {
        let mut args = TokenArgs {
            issuer_url: Some("https://idp.example/realms/a b".into()),
            client_id: Some("k8s".into()),
            scopes: vec!["groups".into(), "\"quoted\": yes".into()],
            ..Default::default()
        };
        let claims = Map::new();
        for (command, user_login, secret) in [
            (ExecCommand::Name, true, false),
            (ExecCommand::KubectlPluginName, false, true),
            (
                ExecCommand::Path("/opt/kube cred/kubecred".into()),
                true,
                true,
            ),
        ] {
            args.client_secret = secret.then(|| "s3cret".to_string());
            args.request_headers = vec!["X-Api-Key=abc".into()];
            let inputs = Inputs {
                args: &args,
                user_name: "ada: admin",
                command,
                claims: &claims,
                signing_alg: None,
                client_id: "k8s",
                ca_pems: &[],
                request_headers: &[RequestHeader {
                    name: "X-Api-Key".into(),
                    value: crate::secret::Secret::new("abc"),
                }],
                user_login,
                target_audience: None,
            };
            let stanza = exec_stanza(&inputs, user_login);
            let printed = kubeconfig_user(&inputs, &stanza);
            assert!(
                !printed.contains("s3cret") && !printed.contains("abc"),
                "{printed}"
            );
            let value: serde_norway::Value = serde_norway::from_str(&printed).unwrap();
            assert_eq!(value["users"][0]["name"], "ada: admin");
            let read: ExecStanza =
                serde_norway::from_value(value["users"][0]["user"]["exec"].clone()).unwrap();
            assert_eq!(read, stanza, "{printed}");
            assert_eq!(value["users"][0]["user"], stanza.as_user_body());
        }
    }
}
