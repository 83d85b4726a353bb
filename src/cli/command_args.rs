//! The arguments of the commands other than get-token (login, logout, status, setup, whoami,
//! convert-kubeconfig, completion), and the examples their help ends with. The token commands
//! flatten get-token's flags (`token_args.rs`) in.

use super::token_args::{CacheDirArg, TokenArgs};
use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `kubecred login`: the token settings, and what to say about the result.
#[derive(Debug, Clone, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub token: TokenArgs,

    /// Print the token's subject, issuer, audience and expiry on stderr (never the token).
    #[arg(
        long,
        env = "KUBECRED_PRINT_TOKEN_INFO",
        value_parser = BoolishValueParser::new()
    )]
    pub print_token_info: bool,

    /// Where the browser is, finish a login that kubecred started on another machine (over SSH):
    /// open this authorization URL, which that kubecred printed, take the redirect here, and
    /// print one line on stdout to paste back there. Needs no issuer or client; logs in nobody
    /// here and stores nothing. (No KUBECRED_* variable: a URL of one login, never a setting.)
    #[arg(long, value_name = "URL", conflicts_with = "print_token_info")]
    pub remote_bootstrap: Option<String>,
}

/// `kubecred logout`: the settings of one entry, or `--all`.
#[derive(Debug, Clone, Args)]
pub struct LogoutArgs {
    /// Forget every cached login under the cache directory (revoking each refresh token).
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub token: TokenArgs,
}

/// `kubecred status`: where to look, and how to print.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub cache: CacheDirArg,

    /// `table` for people, `json` for scripts.
    #[arg(
        short,
        long,
        env = "KUBECRED_OUTPUT",
        value_enum,
        default_value = "table"
    )]
    pub output: OutputArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputArg {
    Table,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

// Each example line stays under 78 columns, and a long command is continued with `\`: clap
// wraps help at the terminal's width, and a wrapped command does not survive a copy and paste.
pub(super) const SETUP_EXAMPLES: &str = "Examples:
  # Diagnose the provider, log in in a browser, print what to configure:
  kubecred setup --issuer-url=https://idp.example/realms/k8s \\
    --client-id=kubernetes > setup.txt
  # The same for the device flow, asking for refresh tokens:
  kubecred setup --issuer-url=https://idp.example --client-id=k8s \\
    --grant-type=device-code --scope=offline_access
  # And write the user, a cluster and a context into the kubeconfig:
  kubecred setup --issuer-url=https://idp.example --client-id=k8s \\
    --write-kubeconfig --server=https://api.example:6443 \\
    --cluster-certificate-authority=ca.pem
  # One login for two clusters, each token for its own API server:
  kubecred setup --issuer-url=https://idp.example --client-id=k8s \\
    --shared-login --cluster=a=https://a.example:6443 \\
    --cluster=b=https://b.example:6443";

// Per-user places the shells and man-db read, so that no root is needed; each directory is
// created first, as a new account has none of them.
pub(super) const COMPLETION_EXAMPLES: &str = "Examples:
  # bash (bash-completion 2 loads it on first use):
  mkdir -p ~/.local/share/bash-completion/completions
  kubecred completion bash \\
    > ~/.local/share/bash-completion/completions/kubecred
  # zsh: a directory of your own on fpath, set in ~/.zshrc before compinit:
  #   fpath=(~/.zfunc $fpath); autoload -Uz compinit && compinit
  mkdir -p ~/.zfunc && kubecred completion zsh > ~/.zfunc/_kubecred
  # fish:
  mkdir -p ~/.config/fish/completions
  kubecred completion fish > ~/.config/fish/completions/kubecred.fish
  # PowerShell, in $PROFILE:
  kubecred completion powershell | Out-String | Invoke-Expression";

pub(super) const MAN_EXAMPLES: &str = "Examples:
  # man finds ~/.local/share/man by itself when ~/.local/bin is on PATH:
  mkdir -p ~/.local/share/man/man1
  kubecred man > ~/.local/share/man/man1/kubecred.1";

pub(super) const WHOAMI_EXAMPLES: &str = "Examples:
  # Who the current kubeconfig context's kubecred user is:
  kubecred whoami
  # Why the cluster says 401: evaluate its AuthenticationConfiguration here:
  kubecred whoami --context=prod --authentication-config=authn.yaml
  # With explicit settings instead of the kubeconfig:
  kubecred whoami --issuer-url=https://idp.example --client-id=k8s";

/// `kubecred setup`: the settings flags of get-token, the name of the user to configure, and
/// where to write it.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub token: TokenArgs,

    /// Name of the kubeconfig user in the printed configuration.
    #[arg(long, value_name = "NAME", default_value = "oidc")]
    pub user_name: String,

    /// Also write the printed kubeconfig user into the kubeconfig (a backup beside it first);
    /// with --server, a cluster and a context too, made the current context (with --cluster,
    /// each cluster and a context, the first made current). Without either, the current
    /// context (if any) is pointed at the user.
    #[arg(long)]
    pub write_kubeconfig: bool,

    /// kubeconfig file to write [default: the one kubectl writes new entries to: the first
    /// existing file of $KUBECONFIG, else its last; else ~/.kube/config].
    #[arg(long, value_name = "PATH", requires = "write_kubeconfig")]
    pub kubeconfig: Option<PathBuf>,

    /// The cluster's API server URL: write a cluster and a context for it (with --write-kubeconfig).
    #[arg(long, value_name = "URL", requires = "write_kubeconfig")]
    pub server: Option<String>,

    /// PEM file of the CA that signed the API server's certificate, embedded in the written
    /// cluster (not the identity provider's: that is --certificate-authority).
    #[arg(long, value_name = "PATH", requires = "server")]
    pub cluster_certificate_authority: Option<PathBuf>,

    /// Name of the written cluster and context [default: the --user-name].
    #[arg(long, value_name = "NAME", requires = "server")]
    pub context_name: Option<String>,

    /// With --shared-login: a cluster that shares the one login; repeatable. TARGET [default:
    /// SERVER, an API server's URL being the usual audience] is what the cluster's tokens are
    /// for, of the --target-kind. Setup prints an AuthenticationConfiguration for each cluster
    /// that accepts its own TARGET's audience only, and a kubeconfig: the user (whose login asks
    /// for every cluster's target, --login-resource or --login-scope for scopes, unless --derive
    /// token-exchange names the target on each exchange instead) and a cluster
    /// (TARGET in its client.authentication.k8s.io/exec extension) and context for each;
    /// --write-kubeconfig writes them, the first context made the current one.
    #[arg(
        long = "cluster",
        value_name = "NAME=SERVER[,TARGET]",
        conflicts_with_all = ["server", "context_name"]
    )]
    pub clusters: Vec<String>,

    /// What each --cluster's TARGET is [default: resource].
    #[arg(long, value_enum, value_name = "KIND", requires = "clusters")]
    pub target_kind: Option<TargetKindArg>,
}

/// What a `setup --cluster` TARGET names, and so its cluster extension key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetKindArg {
    /// An RFC 8707 resource (extension key `resource`): oidc-provider, Authelia; with --derive
    /// token-exchange, the exchange's `resource`. The token's audience is the resource.
    Resource,
    /// An audience (extension key `audience`): Auth0; with --derive token-exchange, the
    /// exchange's `audience` (Keycloak, pinniped's supervisor). The token's audience is it.
    Audience,
    /// A scope the provider derives the audience from (extension key `targetScope`): Entra ID's
    /// `api://NAME/.default`, a Keycloak client scope with an audience mapper. The token's
    /// audience is the scope without its last path segment (`api://NAME`), or the scope itself.
    Scope,
}

pub(super) const CONVERT_EXAMPLES: &str = "Examples:
  # See what would change, then do it:
  kubecred convert-kubeconfig --dry-run
  kubecred convert-kubeconfig
  # One file, one user:
  kubecred convert-kubeconfig --kubeconfig=dev.yaml --user=oidc";

/// `kubecred convert-kubeconfig`: which files and users, and whether to write.
#[derive(Debug, Clone, Args)]
pub struct ConvertArgs {
    /// kubeconfig file to convert [default: the files of $KUBECONFIG, else ~/.kube/config; each
    /// user is rewritten in the file that defines it].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Convert only this user; repeatable [default: every user kubecred can take over].
    #[arg(long = "user", value_name = "NAME")]
    pub users: Vec<String>,

    /// Show what would change and write nothing: no file, no backup, no token.
    #[arg(long)]
    pub dry_run: bool,
}

/// `kubecred whoami`: settings flags (with --issuer-url), or the kubeconfig's exec stanza.
#[derive(Debug, Clone, Args)]
pub struct WhoamiArgs {
    /// Settings as for get-token. Without --issuer-url (flag or KUBECRED_ISSUER_URL) the settings
    /// are those of the kubeconfig context's kubecred exec stanza (args, env, cluster extension),
    /// exactly as kubectl would run it, and these flags are not used.
    #[command(flatten)]
    pub token: TokenArgs,

    /// kubeconfig file to read [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// kubeconfig context to read [default: its current-context].
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// The cluster's AuthenticationConfiguration (kube-apiserver --authentication-config): show
    /// the user it makes of the claims, or the rule that rejects them and its message.
    #[arg(long, value_name = "FILE")]
    pub authentication_config: Option<PathBuf>,
}
