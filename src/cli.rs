//! The command line, and only the command line: clap types, every flag documented where it is
//! defined, each with its `KUBECRED_<FLAG_NAME>` environment variable and, where int128/kubelogin
//! has one, kubelogin's name as an alias so that a kubelogin user only changes `command:`.
//!
//! Nothing outside this module, `kubelogin.rs` (kubelogin's own flags, flattened in here) and
//! `config/` sees these types: `Config::resolve` turns them, the exec info and the cluster
//! extension into one plain struct with the domain's own types.

mod fast_get_token;
mod federation;
mod usage_error;

pub use federation::{CiTokenSourceArg, FederationArgs};
pub use usage_error::usage_error_line;

use crate::kubelogin::{self, KubeloginFlags};
use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// What `--version` prints after the name: the version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KUBECRED_GIT_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "kubecred",
    version = VERSION,
    about = "Kubernetes exec credential plugin for OpenID Connect and OAuth 2.0 identity providers",
    long_about = "Kubernetes exec credential plugin for OpenID Connect and OAuth 2.0 identity providers.\n\n\
        kubectl runs `kubecred get-token` from a kubeconfig `exec` stanza; kubecred prints one \
        ExecCredential on stdout, answering from its cache when it can. Also runs as a kubectl \
        plugin: installed as `kubectl-kubecred` on PATH, `kubectl kubecred status` works.",
    // pflag semantics, as kubectl and kubelogin: a single-valued flag given twice takes the later
    // value, so a wrapper or a kubeconfig `args` list can append an override. Repeatable flags
    // (--scope, --certificate-authority, ...) still accumulate. Propagated to every subcommand.
    args_override_self = true,
    after_help = "Examples:\n  kubecred login --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred status\n  kubecred logout --all\n  source <(kubecred completion bash)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print an ExecCredential for kubectl (the command a kubeconfig `exec` stanza runs).
    #[command(
        after_help = "Example (what kubectl runs; see README for the kubeconfig stanza):\n  \
        kubecred get-token --issuer-url https://idp.example --client-id kubernetes"
    )]
    GetToken(TokenArgs),
    /// Log in now, even during a login cool-down, and cache the result (prints nothing on stdout).
    #[command(after_help = "Examples:\n  \
        kubecred login --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred login --issuer-url https://idp.example --client-id kubernetes \\\n      \
        --account admin --prompt select_account")]
    Login(LoginArgs),
    /// Forget the cached login for these settings, or every one (--all), revoking its refresh token.
    #[command(after_help = "Examples:\n  \
        kubecred logout --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred logout --all")]
    Logout(LogoutArgs),
    /// List the cached logins (never a token): issuer, client, scopes, account, subject, expiry.
    #[command(after_help = "Examples:\n  kubecred status\n  kubecred status --output json")]
    Status(StatusArgs),
    /// Check a provider, log in, show the token's claims, and print the cluster and kubectl configuration.
    #[command(after_help = SETUP_EXAMPLES)]
    Setup(SetupArgs),
    /// Show the claims of the token kubectl would send, and the user a cluster would make of them.
    #[command(after_help = WHOAMI_EXAMPLES)]
    Whoami(WhoamiArgs),
    /// Switch a kubeconfig's OIDC users (auth-provider oidc, kubelogin) to kubecred, tokens included.
    #[command(after_help = CONVERT_EXAMPLES)]
    ConvertKubeconfig(ConvertArgs),
    /// Print a shell completion script on stdout.
    #[command(after_help = COMPLETION_EXAMPLES)]
    Completion {
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print the man page (roff) on stdout.
    #[command(after_help = MAN_EXAMPLES)]
    Man,
    /// The background renewal a cache hit starts (refresh-ahead); not for people. Hidden from
    /// help, completions and the man page.
    #[command(name = RENEW_AHEAD, hide = true)]
    RenewAhead(RenewAheadArgs),
}

/// The name of the hidden background-renewal command.
const RENEW_AHEAD: &str = "renew-ahead";

/// `kubecred renew-ahead`: get-token's settings, and the lock the hit hands down.
#[derive(Debug, Clone, Args)]
pub struct RenewAheadArgs {
    /// The descriptor of the entry's locked lock file, inherited from the hit that started this
    /// run (unix); checked to be that file. Without it, the lock is taken without waiting.
    #[arg(long, value_name = "FD")]
    pub lock_fd: Option<i32>,

    #[command(flatten)]
    pub token: TokenArgs,
}

/// The arguments of the background renewal of the get-token run whose command line is `argv`
/// (program name first, as the process got it): `renew-ahead [--lock-fd=FD] <get-token's
/// arguments>`. `None` when `argv` does not run get-token.
pub fn renewal_arguments(argv: Vec<OsString>, lock_fd: Option<i32>) -> Option<Vec<OsString>> {
    let argv = kubelogin::rewrite_argv(argv);
    let words = get_token_words(&argv)?;
    let mut args = vec![OsString::from(RENEW_AHEAD)];
    args.extend(lock_fd.map(|fd| OsString::from(format!("--lock-fd={fd}"))));
    args.extend(words.iter().cloned());
    Some(args)
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

/// `--cache-dir`, defined once for the token commands and for `status`. The group's id is the
/// field's name where it is flattened (the get-token flag table is generated from it).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "cache")]
pub struct CacheDirArg {
    /// Directory for cached tokens, discovery documents and locks [default: the user cache dir].
    #[arg(
        long,
        env = "KUBECRED_CACHE_DIR",
        alias = "token-cache-dir",
        value_name = "DIR"
    )]
    pub cache_dir: Option<PathBuf>,
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

// ---- setup and whoami (commands/setup, commands/whoami) ----

// Each example line stays under 78 columns, and a long command is continued with `\`: clap
// wraps help at the terminal's width, and a wrapped command does not survive a copy and paste.
const SETUP_EXAMPLES: &str = "Examples:
  # Diagnose the provider, log in in a browser, print what to configure:
  kubecred setup --issuer-url=https://idp.example/realms/k8s \\
    --client-id=kubernetes > setup.txt
  # The same for the device flow, asking for refresh tokens:
  kubecred setup --issuer-url=https://idp.example --client-id=k8s \\
    --grant-type=device-code --scope=offline_access
  # And write the user, a cluster and a context into the kubeconfig:
  kubecred setup --issuer-url=https://idp.example --client-id=k8s \\
    --write-kubeconfig --server=https://api.example:6443 \\
    --cluster-certificate-authority=ca.pem";

// Per-user places the shells and man-db read, so that no root is needed; each directory is
// created first, as a new account has none of them.
const COMPLETION_EXAMPLES: &str = "Examples:
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

const MAN_EXAMPLES: &str = "Examples:
  # man finds ~/.local/share/man by itself when ~/.local/bin is on PATH:
  mkdir -p ~/.local/share/man/man1
  kubecred man > ~/.local/share/man/man1/kubecred.1";

const WHOAMI_EXAMPLES: &str = "Examples:
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
    /// with --server, a cluster and a context too, made the current context. Without --server,
    /// the current context (if any) is pointed at the user.
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
}

const CONVERT_EXAMPLES: &str = "Examples:
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

/// How to obtain a token. kubelogin's `--grant-type` values are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GrantTypeArg {
    /// Browser login (authorization code + PKCE); CI jobs choose their grant explicitly.
    Auto,
    /// Authorization code + PKCE through a browser and a loopback listener.
    Authcode,
    /// Authorization code + PKCE; print the URL and read the pasted code (interactive sessions).
    AuthcodeKeyboard,
    /// OAuth 2.0 device authorization grant (RFC 8628).
    DeviceCode,
    /// OAuth 2.0 client credentials (a confidential client, no user).
    ClientCredentials,
    /// RFC 8693 token exchange of a subject token (a CI job's or pod's JWT) at the token endpoint.
    TokenExchange,
    /// The subject token itself is the credential (the cluster trusts its issuer directly).
    FederatedToken,
    /// Resource owner password credentials (deprecated by OAuth 2.0 Security BCP; last resort).
    Password,
}

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
}

/// Where cached tokens live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CacheStorageArg {
    /// Short-lived tokens on disk; the refresh token in the OS keyring when one is reachable.
    Auto,
    /// Everything in a private file under the cache directory.
    Disk,
    /// Everything in the OS keyring; an error when none is reachable.
    Keyring,
    /// No cache: every run obtains a new token.
    None,
}

/// How the client authenticates to the token endpoint when it has a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientAuthMethodArg {
    /// `client_secret_basic` unless discovery says the provider only takes `client_secret_post`.
    Auto,
    /// HTTP Basic authentication (`client_secret_basic`).
    Basic,
    /// The secret in the form body (`client_secret_post`).
    Post,
}

/// On/off flags take `KUBECRED_FORCE_REFRESH=1` (or true/yes/on, and 0/false/no/off) from the
/// environment: clap alone would take only `true` and `false` there.
#[derive(Debug, Clone, Default, Args)]
pub struct TokenArgs {
    /// Issuer URL of the OpenID Provider (HTTPS, or http on a loopback address).
    #[arg(
        long,
        env = "KUBECRED_ISSUER_URL",
        alias = "oidc-issuer-url",
        value_name = "URL"
    )]
    pub issuer_url: Option<String>,

    /// OAuth 2.0 client ID.
    #[arg(
        long,
        env = "KUBECRED_CLIENT_ID",
        alias = "oidc-client-id",
        value_name = "ID"
    )]
    pub client_id: Option<String>,

    /// Client secret (prefer --client-secret-file or the environment: arguments are visible in `ps`).
    #[arg(
        long,
        env = "KUBECRED_CLIENT_SECRET",
        alias = "oidc-client-secret",
        value_name = "SECRET",
        hide_env_values = true,
        conflicts_with = "client_secret_file"
    )]
    pub client_secret: Option<String>,

    /// File holding the client secret (surrounding whitespace is trimmed).
    #[arg(long, env = "KUBECRED_CLIENT_SECRET_FILE", value_name = "PATH")]
    pub client_secret_file: Option<PathBuf>,

    /// Scope to request; repeatable or comma-separated. `openid` is always added for OIDC logins.
    #[arg(
        long = "scope",
        env = "KUBECRED_SCOPE",
        alias = "oidc-extra-scope",
        value_delimiter = ',',
        value_name = "SCOPE"
    )]
    pub scopes: Vec<String>,

    /// How to obtain a token [default: auto].
    #[arg(long, env = "KUBECRED_GRANT_TYPE", value_enum, value_name = "GRANT")]
    pub grant_type: Option<GrantTypeArg>,

    /// Print the access token instead of the ID token (the default for client-credentials).
    #[arg(
        long,
        env = "KUBECRED_USE_ACCESS_TOKEN",
        alias = "oidc-use-access-token",
        value_parser = BoolishValueParser::new()
    )]
    pub use_access_token: bool,

    /// `audience` parameter for the token request (Auth0, Keycloak and others).
    #[arg(long, env = "KUBECRED_AUDIENCE", value_name = "AUDIENCE")]
    pub audience: Option<String>,

    /// `resource` parameter (RFC 8707 resource indicator) for the authorization and token requests.
    #[arg(long, env = "KUBECRED_RESOURCE", value_name = "URI")]
    pub resource: Option<String>,

    /// How the client secret is sent to the token endpoint [default: auto].
    #[arg(
        long,
        env = "KUBECRED_CLIENT_AUTH_METHOD",
        value_enum,
        value_name = "METHOD"
    )]
    pub client_auth_method: Option<ClientAuthMethodArg>,

    #[command(flatten)]
    pub cache: CacheDirArg,

    /// Where cached tokens live [default: auto].
    #[arg(
        long,
        env = "KUBECRED_CACHE_STORAGE",
        alias = "token-cache-storage",
        value_enum,
        value_name = "STORAGE"
    )]
    pub cache_storage: Option<CacheStorageArg>,

    /// PEM file of extra CA certificates to trust for the identity provider; repeatable (not
    /// comma-separated: a path may contain commas).
    #[arg(long, env = "KUBECRED_CERTIFICATE_AUTHORITY", value_name = "PATH")]
    pub certificate_authority: Vec<PathBuf>,

    /// Base64-encoded PEM CA certificates to trust for the identity provider; repeatable or
    /// comma-separated.
    #[arg(
        long,
        env = "KUBECRED_CERTIFICATE_AUTHORITY_DATA",
        value_delimiter = ',',
        value_name = "BASE64"
    )]
    pub certificate_authority_data: Vec<String>,

    /// Do not verify the identity provider's TLS certificate (dangerous: prints a warning).
    #[arg(
        long,
        env = "KUBECRED_INSECURE_SKIP_TLS_VERIFY",
        value_parser = BoolishValueParser::new()
    )]
    pub insecure_skip_tls_verify: bool,

    /// Ignore a cached token: refresh, or log in again, now.
    #[arg(
        long,
        env = "KUBECRED_FORCE_REFRESH",
        value_parser = BoolishValueParser::new()
    )]
    pub force_refresh: bool,

    /// A cached token with less life than this left is refreshed (e.g. 90s, 5m) [default: 60s].
    #[arg(long, env = "KUBECRED_MIN_VALIDITY", value_name = "DURATION")]
    pub min_validity: Option<String>,

    /// Once a cached token has less than this left (a duration, 10m, or a share of its
    /// lifetime, 25%), hand it out and renew it in the background: a refresh token, client
    /// credentials, token exchange or a password from the environment or a file, never a login;
    /// 0 turns it off [default: 25%].
    #[arg(long, env = "KUBECRED_REFRESH_AHEAD", value_name = "DURATION|PERCENT")]
    pub refresh_ahead: Option<String>,

    /// Timeout of each request to the identity provider [default: 30s].
    #[arg(long, env = "KUBECRED_HTTP_TIMEOUT", value_name = "DURATION")]
    pub http_timeout: Option<String>,

    /// How long to wait for another kubecred working on the same token
    /// [default: auth timeout + 3 × HTTP timeout + 10s, as the lock holder may run discovery, a
    /// login, a code exchange and a JWKS fetch].
    #[arg(long, env = "KUBECRED_LOCK_TIMEOUT", value_name = "DURATION")]
    pub lock_timeout: Option<String>,

    /// Redirect URI for browser logins; its port is replaced by the listener's [default: http://localhost:PORT/callback].
    #[arg(
        long,
        env = "KUBECRED_REDIRECT_URL",
        alias = "oidc-redirect-url",
        value_name = "URL"
    )]
    pub redirect_url: Option<String>,

    /// Loopback address:port for the login listener, tried in order; repeatable. Port 0 = any free port
    /// [default: 127.0.0.1:8000, 127.0.0.1:18000].
    #[arg(
        long,
        env = "KUBECRED_LISTEN_ADDRESS",
        value_delimiter = ',',
        value_name = "ADDRESS"
    )]
    pub listen_address: Vec<String>,

    /// Use PKCE (S256); `--pkce=false` turns it off [default: true unless discovery says it is unsupported].
    #[arg(
        long,
        env = "KUBECRED_PKCE",
        alias = "oidc-use-pkce",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub pkce: Option<bool>,

    /// Command that opens the login URL, run directly with the URL as its last argument
    /// (its stdout goes to stderr) [default: $BROWSER, then the system browser].
    #[arg(long, env = "KUBECRED_BROWSER_COMMAND", value_name = "COMMAND")]
    pub browser_command: Option<String>,

    /// Do not open a browser: print the login URL on stderr.
    #[arg(
        long,
        env = "KUBECRED_SKIP_OPEN_BROWSER",
        value_parser = BoolishValueParser::new()
    )]
    pub skip_open_browser: bool,

    /// Upper bound on a whole interactive login [default: 180s].
    #[arg(
        long,
        env = "KUBECRED_AUTH_TIMEOUT",
        alias = "authentication-timeout-sec",
        value_name = "DURATION"
    )]
    pub auth_timeout: Option<String>,

    /// After a login fails or is abandoned, fail at once for this long instead of opening another
    /// browser tab (`login` and --force-refresh bypass it) [default: 30s].
    #[arg(long, env = "KUBECRED_LOGIN_COOLDOWN", value_name = "DURATION")]
    pub login_cooldown: Option<String>,

    /// Extra authorization request parameter KEY=VALUE; repeatable. A value may contain commas
    /// (`acr_values=a,b`); one holding several KEY=VALUE pairs joined by commas (`a=1,b=2`,
    /// kubelogin's form) is split into them.
    #[arg(
        long = "auth-param",
        env = "KUBECRED_AUTH_PARAM",
        alias = "oidc-auth-request-extra-params",
        value_name = "KEY=VALUE"
    )]
    pub auth_params: Vec<String>,

    /// Header NAME=VALUE sent on every request to the identity provider (discovery, keys, token,
    /// device authorization, revocation) and on no other; repeatable, or several pairs joined by
    /// commas. For providers and gateways that want one: `Origin=http://localhost` (Entra ID
    /// single-page apps), an API key. Values are never shown.
    #[arg(
        long = "request-header",
        env = "KUBECRED_REQUEST_HEADER",
        value_name = "NAME=VALUE",
        hide_env_values = true
    )]
    pub request_headers: Vec<String>,

    /// PEM certificate (chain) for the login callback: the loopback listener then serves https,
    /// for providers that accept only https redirect URIs (with --local-server-key).
    #[arg(long, env = "KUBECRED_LOCAL_SERVER_CERT", value_name = "PATH")]
    pub local_server_cert: Option<PathBuf>,

    /// PEM private key of --local-server-cert.
    #[arg(long, env = "KUBECRED_LOCAL_SERVER_KEY", value_name = "PATH")]
    pub local_server_key: Option<PathBuf>,

    /// Name of an account at this provider: each account keeps its own cache entry, so several
    /// logins to one provider (work, admin) live side by side. Also the cluster extension's `account`.
    #[arg(long, env = "KUBECRED_ACCOUNT", value_name = "NAME")]
    pub account: Option<String>,

    /// `login_hint` for the authorization request (e.g. the user's email).
    #[arg(long, env = "KUBECRED_LOGIN_HINT", value_name = "HINT")]
    pub login_hint: Option<String>,

    /// `prompt` for the authorization request (none, login, consent, select_account).
    #[arg(long, env = "KUBECRED_PROMPT", value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// More detail on stderr (-v, -vv); secrets are always redacted. Also KUBECRED_VERBOSE=N.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Token exchange, federated token, client assertions and the password grant.
    #[command(flatten)]
    pub federation: FederationArgs,

    /// int128/kubelogin's own flags, hidden: accepted so that a kubelogin stanza runs unchanged
    /// (see kubelogin.rs).
    #[command(flatten)]
    pub kubelogin: KubeloginFlags,
}

impl Cli {
    /// Parses a command line (program name first) the way the binary does. A kubelogin stanza
    /// migrated by changing only `command:` still starts with `oidc-login`: that word is dropped,
    /// and kubelogin's numeric verbosity (`-v1`, `--v=2`, `-v 1`) becomes `-v`/`-vv`.
    pub fn try_parse_command_line<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let argv = kubelogin::rewrite_argv(argv.into_iter().map(Into::into).collect());
        if let Some(cli) = parse_get_token_alone(&argv) {
            return Ok(cli);
        }
        // Run as a kubectl plugin (`kubectl kubecred ...` runs `kubectl-kubecred` from PATH):
        // the same commands; help and errors name the command the user typed.
        let invoked_as = argv.first().map(std::path::Path::new);
        let as_plugin = invoked_as
            .and_then(|path| path.file_stem())
            .is_some_and(|name| name == KUBECTL_PLUGIN_NAME);
        if as_plugin {
            use clap::{CommandFactory, FromArgMatches};
            let matches = Cli::command()
                .bin_name("kubectl kubecred")
                .try_get_matches_from(argv)?;
            return Cli::from_arg_matches(&matches);
        }
        Cli::try_parse_from(argv)
    }
}

/// A kubeconfig stanza's command line (program name first; a leading `oidc-login` and kubelogin's
/// `-v1` rewritten as for the binary) as `get-token`'s settings, read from the words alone: no
/// `KUBECRED_*` variable of this process fills a flag the stanza does not give
/// (`convert-kubeconfig` writes the stanza's settings out again). `Ok(None)` when the line does
/// not run get-token.
pub fn parse_stanza_get_token(argv: Vec<OsString>) -> Result<Option<TokenArgs>, clap::Error> {
    parse_stanza_get_token_in(argv, &|_| None)
}

/// [`parse_stanza_get_token`] in an explicit environment: each flag the words do not give is
/// taken from its `KUBECRED_*` variable as `var` answers it — the environment kubectl gives the
/// plugin (a stanza's `env` over this process's) for `whoami` and `convert-kubeconfig`, with no
/// variable set in this process. The value counts as `--flag=VALUE` (a switch: given when the
/// value is on, as clap reads it), so that what clap accepts and refuses is unchanged.
pub fn parse_stanza_get_token_in(
    mut argv: Vec<OsString>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<TokenArgs>, clap::Error> {
    use clap::builder::TypedValueParser;
    use clap::parser::ValueSource;
    use clap::{ArgAction, CommandFactory, FromArgMatches};
    argv = kubelogin::rewrite_argv(argv);
    if get_token_words(&argv).is_none() {
        return Ok(None);
    }
    let words_alone = stanza_command().try_get_matches_from(&argv)?;
    let given = words_alone.subcommand_matches("get-token");
    // Built, so that a refused value's error can name its flag.
    let mut definition = Cli::command();
    definition.build();
    let get_token = definition
        .find_subcommand("get-token")
        .expect("get-token is defined");
    for arg in get_token.get_arguments() {
        let (Some(variable), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let id = arg.get_id().as_str();
        if given.and_then(|m| m.value_source(id)) == Some(ValueSource::CommandLine) {
            continue;
        }
        let Some(value) = variable.to_str().and_then(var) else {
            continue;
        };
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            if BoolishValueParser::new().parse_ref(get_token, Some(arg), &value)? {
                argv.push(format!("--{long}").into());
            }
        } else {
            let mut word = OsString::from(format!("--{long}="));
            word.push(&value);
            argv.push(word);
        }
    }
    let matches = stanza_command().try_get_matches_from(argv)?;
    match Cli::from_arg_matches(&matches)?.command {
        Command::GetToken(args) => Ok(Some(args)),
        _ => Ok(None),
    }
}

/// The command line definition with get-token's flags reading no environment variable.
fn stanza_command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommand("get-token", |sub| sub.mut_args(|arg| arg.env(None)))
}

pub use crate::command_on_path::KUBECTL_PLUGIN_NAME;

/// kubectl runs `get-token` on every command, so its plain command lines are read without clap
/// (see fast_get_token.rs). Anything else returns `None`, and the full parser runs: help,
/// `--version`, every error and every unusual line come from clap, unchanged.
fn parse_get_token_alone(argv: &[OsString]) -> Option<Cli> {
    let words = get_token_words(argv)?;
    let variables = fast_get_token::KubecredVariables::of_process();
    let args = fast_get_token::parse(words, |name| variables.get(name))?;
    Some(Cli {
        command: Command::GetToken(args),
    })
}

/// The words after `get-token`, when `argv` (rewritten from kubelogin's) runs get-token.
fn get_token_words(argv: &[OsString]) -> Option<&[OsString]> {
    (argv.get(1)?.to_str()? == "get-token").then(|| &argv[2..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap wraps help at the terminal's width: an example line longer than a narrow terminal
    /// would be cut in the middle of a command, and a pasted half fails.
    #[test]
    fn every_example_line_fits_a_narrow_terminal() {
        let mut command = Cli::command();
        for sub in command.get_subcommands_mut() {
            let help = sub
                .get_after_long_help()
                .or(sub.get_after_help())
                .map(|text| text.to_string())
                .unwrap_or_default();
            let Some(examples) = help.split("Examples:").nth(1) else {
                continue;
            };
            for line in examples.lines() {
                assert!(
                    line.chars().count() <= 78,
                    "{}: {line:?} is longer than 78 columns; continue it with \\",
                    sub.get_name()
                );
            }
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_reads_its_kubecred_environment_variable() {
        let command = Cli::command();
        let get_token = command.find_subcommand("get-token").unwrap();
        for arg in get_token.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(long, "help" | "verbose") {
                continue; // -v is counted; KUBECRED_VERBOSE is read in config.rs
            }
            if arg.is_hide_set() {
                assert_eq!(arg.get_env(), None, "hidden kubelogin flag --{long}");
                continue; // kubelogin compatibility only: no KUBECRED_* name
            }
            let expected = format!("KUBECRED_{}", long.to_uppercase().replace('-', "_"));
            assert_eq!(
                arg.get_env().and_then(|v| v.to_str()),
                Some(expected.as_str()),
                "--{long}"
            );
        }
    }

    #[test]
    fn kubelogin_names_are_accepted() {
        let cli = Cli::try_parse_from([
            "kubecred",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "--oidc-client-secret=s3cret",
            "--oidc-extra-scope=email,groups",
            "--oidc-extra-scope=profile",
            "--oidc-use-access-token",
            "--token-cache-dir=/tmp/x",
            "--token-cache-storage=disk",
            "--grant-type=authcode-keyboard",
        ])
        .unwrap();
        let Command::GetToken(args) = cli.command else {
            panic!("get-token expected")
        };
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.client_id.as_deref(), Some("k8s"));
        assert_eq!(args.scopes, ["email", "groups", "profile"]);
        assert!(args.use_access_token);
        assert_eq!(args.cache_storage, Some(CacheStorageArg::Disk));
        assert_eq!(args.grant_type, Some(GrantTypeArg::AuthcodeKeyboard));
    }

    fn token_args(argv: &[&str]) -> TokenArgs {
        match Cli::try_parse_command_line(argv).unwrap().command {
            Command::GetToken(args) => args,
            _ => panic!("get-token expected"),
        }
    }

    #[test]
    fn a_kubelogin_stanza_parses_unchanged() {
        let args = token_args(&[
            "kubecred",
            "oidc-login",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "--oidc-use-pkce",
            "--oidc-pkce-method=S256",
            "--authentication-timeout-sec=300",
            "--oidc-redirect-url-hostname=127.0.0.1",
            "--oidc-auth-request-extra-params=acr_values=a,b",
            "--open-url-after-authentication=https://done.example",
            "--tls-renegotiation=never",
            "--certificate-authority=/etc/ca,with,commas.pem",
            "-v1",
        ]);
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.pkce, Some(true));
        assert_eq!(args.kubelogin.oidc_pkce_method.as_deref(), Some("S256"));
        assert_eq!(args.auth_timeout.as_deref(), Some("300"));
        assert_eq!(
            args.kubelogin.oidc_redirect_url_hostname.as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(args.auth_params, ["acr_values=a,b"]);
        assert_eq!(
            args.kubelogin.ignored_given(),
            ["--open-url-after-authentication", "--tls-renegotiation"]
        );
        assert_eq!(
            args.certificate_authority,
            [PathBuf::from("/etc/ca,with,commas.pem")]
        );
        assert_eq!(args.verbose, 1);
    }

    #[test]
    fn only_a_leading_oidc_login_is_dropped() {
        // Not kubelogin's: nothing is rewritten, and a stray oidc-login stays an error.
        assert!(Cli::try_parse_command_line(["kubecred", "get-token", "oidc-login"]).is_err());
        assert!(Cli::try_parse_command_line(["kubecred", "get-token", "-v1"]).is_err());
        let args = token_args(&["kubecred", "get-token", "-vv"]);
        assert_eq!(args.verbose, 2);
        let argv = ["kubecred", "oidc-login"].map(OsString::from);
        let err = Cli::try_parse_command_line(argv.clone()).unwrap_err();
        assert!(usage_error_line(&err, &argv).starts_with("a command is required"));
    }

    #[test]
    fn kubelogins_numeric_verbosity_becomes_a_count() {
        let verbose = |extra: &[&str]| {
            let mut argv = vec!["kubecred", "oidc-login", "get-token"];
            argv.extend_from_slice(extra);
            token_args(&argv).verbose
        };
        assert_eq!(verbose(&[]), 0);
        assert_eq!(verbose(&["-v0"]), 0);
        assert_eq!(verbose(&["-v1"]), 1);
        assert_eq!(verbose(&["--v=4"]), 2);
        assert_eq!(verbose(&["-v", "1"]), 1);
        assert_eq!(verbose(&["--v", "2"]), 2);
        assert_eq!(verbose(&["-v"]), 1);
        assert_eq!(verbose(&["-vv"]), 2);
    }

    #[test]
    fn comma_splitting_only_where_values_cannot_hold_commas() {
        let args = token_args(&[
            "kubecred",
            "get-token",
            "--scope=email,groups",
            "--listen-address=127.0.0.1:1,127.0.0.1:2",
            "--certificate-authority-data=QQ==,Qg==",
            "--auth-param=acr_values=a,b",
            "--certificate-authority=a,b.pem",
        ]);
        assert_eq!(args.scopes, ["email", "groups"]);
        assert_eq!(args.listen_address.len(), 2);
        assert_eq!(args.certificate_authority_data, ["QQ==", "Qg=="]);
        assert_eq!(args.auth_params, ["acr_values=a,b"]);
        assert_eq!(args.certificate_authority, [PathBuf::from("a,b.pem")]);
    }

    #[test]
    fn on_off_environment_variables_take_1_yes_and_true() {
        let on_off = [
            "use_access_token",
            "insecure_skip_tls_verify",
            "force_refresh",
            "skip_open_browser",
        ];
        for (value, expected) in [
            ("1", true),
            ("yes", true),
            ("true", true),
            ("0", false),
            ("off", false),
        ] {
            for id in on_off {
                // A variable no other test reads, so setting it races with nothing.
                let var = format!("KUBECRED_TEST_{}_{value}", id.to_uppercase());
                // SAFETY: a variable of this test alone; no other thread reads or writes it.
                unsafe { std::env::set_var(&var, value) };
                let command = Cli::command().mut_subcommand("get-token", |sub| {
                    sub.mut_arg(id, |arg| arg.env(&*var.clone().leak()))
                });
                let matches = command
                    .try_get_matches_from(["kubecred", "get-token"])
                    .unwrap_or_else(|err| panic!("{var}={value}: {err}"));
                let sub = matches.subcommand_matches("get-token").unwrap();
                assert_eq!(sub.get_flag(id), expected, "{var}={value}");
            }
        }
        let var = "KUBECRED_TEST_PKCE";
        // SAFETY: a variable of this test alone; no other thread reads or writes it.
        unsafe { std::env::set_var(var, "no") };
        let command = Cli::command()
            .mut_subcommand("get-token", |sub| sub.mut_arg("pkce", |arg| arg.env(var)));
        let matches = command
            .try_get_matches_from(["kubecred", "get-token"])
            .unwrap();
        let sub = matches.subcommand_matches("get-token").unwrap();
        assert_eq!(sub.get_one::<bool>("pkce"), Some(&false));
    }

    #[test]
    fn the_get_token_fast_path_parses_as_the_full_parser_does() {
        let cases: &[&[&str]] = &[
            &[
                "kubecred",
                "get-token",
                "--issuer-url=https://idp",
                "--client-id=k",
            ],
            &[
                "kubecred",
                "get-token",
                "--issuer-url",
                "https://idp",
                "--scope=a,b",
                "--scope",
                "c",
            ],
            &[
                "kubecred",
                "get-token",
                "-vv",
                "--pkce=false",
                "--listen-address=127.0.0.1:0",
            ],
            &[
                "kubecred",
                "get-token",
                "--auth-param=acr_values=a,b",
                "--force-refresh",
            ],
            &[
                "kubecred",
                "get-token",
                "--oidc-issuer-url=https://idp",
                "--oidc-pkce-method=S256",
            ],
            &[
                "kubecred",
                "oidc-login",
                "get-token",
                "--oidc-client-id=k",
                "-v1",
            ],
            &[
                "kubecred",
                "get-token",
                "--grant-type=device-code",
                "--cache-storage=keyring",
            ],
            &["kubecred", "get-token", "--username=u"],
            // Everything the full parser refuses, or answers with help, goes to it.
            &["kubecred", "get-token", "--help"],
            &["kubecred", "get-token", "-h"],
            &["kubecred", "get-token", "--version"],
            &["kubecred", "get-token", "--nope"],
            &["kubecred", "get-token", "--scope"],
            &["kubecred", "get-token", "--grant-type=magic"],
            &["kubecred", "get-token", "stray"],
            // pflag semantics: the later value of a single-valued flag wins, in both parsers;
            // repeatable flags still accumulate.
            &["kubecred", "get-token", "--issuer-url=a", "--issuer-url=b"],
            &[
                "kubecred",
                "get-token",
                "--client-id=a",
                "--grant-type=authcode",
                "--scope=x",
                "--client-id",
                "b",
                "--grant-type=device-code",
                "--scope=y",
                "--pkce=false",
                "--pkce",
                "--use-access-token",
                "--use-access-token",
            ],
            &[
                "kubecred",
                "get-token",
                "--account=a",
                "--account=b",
                "-v",
                "-v",
            ],
        ];
        for argv in cases {
            let argv = kubelogin::rewrite_argv(argv.iter().map(OsString::from).collect());
            let full = Cli::try_parse_from(argv.clone()).ok();
            let fast = parse_get_token_alone(&argv);
            assert_eq!(
                fast.as_ref().map(|cli| format!("{cli:?}")),
                full.as_ref().map(|cli| format!("{cli:?}")),
                "{argv:?}"
            );
        }
        // And the fast path is the one taken for what kubectl runs.
        let argv: Vec<OsString> = ["kubecred", "get-token", "--issuer-url=https://idp"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(parse_get_token_alone(&argv).is_some());
        assert!(fast_get_token::parse(&argv[2..], |_| None).is_some());
        assert!(parse_get_token_alone(&argv[..1]).is_none());
        let later = token_args(&[
            "kubecred",
            "get-token",
            "--client-id=a",
            "--scope=x",
            "--client-id=b",
            "--scope=y",
            "--pkce=false",
            "--pkce",
        ]);
        assert_eq!(later.client_id.as_deref(), Some("b"));
        assert_eq!(later.scopes, ["x", "y"]);
        assert_eq!(later.pkce, Some(true));
    }

    #[test]
    fn a_stanza_is_read_from_its_words_alone() {
        let get_token = stanza_command();
        let get_token = get_token.find_subcommand("get-token").unwrap();
        for arg in get_token.get_arguments() {
            assert_eq!(
                arg.get_env(),
                None,
                "--{:?} reads a variable",
                arg.get_long()
            );
        }
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let args = parse_stanza_get_token(argv(&[
            "kubecred",
            "oidc-login",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "-v1",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.verbose, 1);
        assert!(
            parse_stanza_get_token(argv(&["kubecred", "status"]))
                .unwrap()
                .is_none()
        );
        assert!(parse_stanza_get_token(argv(&["kubecred", "get-token", "--nope"])).is_err());
    }

    #[test]
    fn pkce_takes_an_optional_bool() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["kubecred", "get-token"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::GetToken(args) => args.pkce,
                _ => unreachable!(),
            }
        };
        assert_eq!(parse(&[]), None);
        assert_eq!(parse(&["--pkce"]), Some(true));
        assert_eq!(parse(&["--pkce=false"]), Some(false));
    }
}
