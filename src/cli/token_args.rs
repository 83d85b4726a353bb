//! get-token's flags: `TokenArgs`, the settings of a token, which every token command (get-token,
//! login, logout, setup, whoami, the hidden renew-ahead) flattens in, with the value enums they
//! take. get-token's plain command lines are read from a table generated from this definition
//! (`fast_get_token/flags.rs`); the flags of the CI grants are in `federation.rs`, the clouds'
//! in `clouds.rs`, kubelogin's hidden ones in `kubelogin_flags.rs`.

use super::KubeloginFlags;
use super::clouds::CloudArgs;
use super::federation::FederationArgs;
use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `--cache-dir`, defined once for the token commands and for `status`. The group's id is the
/// field's name where it is flattened (the get-token flag table is generated from it).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "cache")]
pub struct CacheDirArg {
    /// Directory for cached tokens, discovery documents and locks [default: the user cache dir,
    /// on Linux $XDG_CACHE_HOME/kubecred or ~/.cache/kubecred].
    #[arg(
        long,
        env = "KUBECRED_CACHE_DIR",
        alias = "token-cache-dir",
        value_name = "DIR"
    )]
    pub cache_dir: Option<PathBuf>,
}

/// How to obtain a token. kubelogin's `--grant-type` values are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GrantTypeArg {
    /// A person's login: the browser (authorization code + PKCE), or where no browser can open
    /// here (SSH without a forwarded display, no graphical session) the device flow when the
    /// provider offers it, else the browser login with the code pasted. Without a terminal (a CI
    /// job, a script) it fails at once: CI jobs choose their grant explicitly.
    Auto,
    /// Authorization code + PKCE through a browser and a loopback listener.
    Authcode,
    /// Authorization code + PKCE; print the URL (opened only by a --browser-command or
    /// $BROWSER) and read the pasted code (interactive sessions).
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
    /// A Google access token for GKE from Google's own credentials (Application Default
    /// Credentials, the metadata server, or gcloud's login): no OpenID provider.
    Google,
}

/// How a --shared-login cluster's token is derived from the one login.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeriveArg {
    /// A refresh grant of the login's refresh token carrying the cluster's target (`resource`,
    /// `audience` or `scope`): RFC 8707 providers, Auth0, Entra ID, Keycloak.
    Refresh,
    /// An RFC 8693 exchange of the login's access token for one with the cluster's `audience`
    /// or `resource`: pinniped's supervisor, Keycloak, Zitadel.
    TokenExchange,
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

/// When kubecred raises a desktop notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NotifyArg {
    /// No notification: the one error line on stderr is all a failure says.
    Never,
    /// Run without a terminal on a person's desktop, a failure the person must act on (a login
    /// held back, abandoned or refused, a refused refresh with no valid token left, a setting
    /// to fix) raises one notification naming the provider, what happened and the command that
    /// fixes it.
    Failures,
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

/// On/off flags are written alone to turn them on, or with a value, `--flag=false` (or 0, no,
/// off; and true, 1, yes, on), as Go's pflag takes them: int128/kubelogin's own stanzas write
/// `--oidc-use-access-token=true`. Their `KUBECRED_*` variables take the same words.
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

    /// Print the access token instead of the ID token (the default for grants without a user,
    /// such as client-credentials, where `--use-access-token=false` prints the ID token instead).
    #[arg(
        long,
        env = "KUBECRED_USE_ACCESS_TOKEN",
        alias = "oidc-use-access-token",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub use_access_token: Option<bool>,

    /// `audience` parameter for the token request (Auth0, Keycloak and others).
    #[arg(long, env = "KUBECRED_AUDIENCE", value_name = "AUDIENCE")]
    pub audience: Option<String>,

    /// `resource` parameter (RFC 8707 resource indicator) for the authorization and token requests.
    #[arg(long, env = "KUBECRED_RESOURCE", value_name = "URI")]
    pub resource: Option<String>,

    /// A scope that names this cluster's audience to a provider that derives the audience from
    /// the scope asked for (Entra ID's `api://cluster-b/.default`, a Keycloak client scope with
    /// an audience mapper): a --shared-login cluster's target. The token must then carry
    /// --audience, or by default the scope without its `/.default`.
    #[arg(long, env = "KUBECRED_TARGET_SCOPE", value_name = "SCOPE")]
    pub target_scope: Option<String>,

    /// One login (one refresh token) for this issuer, client and account, shared by every
    /// cluster that names it: each cluster's token is derived from it for the cluster's target
    /// (--resource, --audience or --target-scope, best set in its cluster extension).
    #[arg(
        long,
        env = "KUBECRED_SHARED_LOGIN",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub shared_login: Option<bool>,

    /// How a --shared-login cluster's token is derived from the login [default: refresh].
    #[arg(long, env = "KUBECRED_DERIVE", value_enum, value_name = "HOW")]
    pub derive: Option<DeriveArg>,

    /// A resource (or audience) the --shared-login login asks for on behalf of every cluster
    /// (RFC 8707); repeatable or comma-separated. The current cluster's target is always added.
    #[arg(
        long = "login-resource",
        env = "KUBECRED_LOGIN_RESOURCE",
        value_delimiter = ',',
        value_name = "URI"
    )]
    pub login_resources: Vec<String>,

    /// A scope the --shared-login login asks for on behalf of every cluster (a Keycloak client
    /// scope); repeatable or comma-separated. The current cluster's --target-scope is always added.
    #[arg(
        long = "login-scope",
        env = "KUBECRED_LOGIN_SCOPE",
        value_delimiter = ',',
        value_name = "SCOPE"
    )]
    pub login_scopes: Vec<String>,

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
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub insecure_skip_tls_verify: Option<bool>,

    /// Ignore a cached token: refresh, or log in again, now.
    #[arg(
        long,
        env = "KUBECRED_FORCE_REFRESH",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub force_refresh: Option<bool>,

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

    /// Redirect URI for browser logins, sent exactly as written; one that names no port gets the
    /// listener's, one that names a port is listened on there (unless --listen-address says
    /// where) [default: http://localhost:PORT/callback].
    #[arg(
        long,
        env = "KUBECRED_REDIRECT_URL",
        alias = "oidc-redirect-url",
        value_name = "URL"
    )]
    pub redirect_url: Option<String>,

    /// Loopback address:port (or localhost:port) for the login listener, tried in order;
    /// repeatable. Port 0 = any free port [default: the port --redirect-url names, else
    /// 127.0.0.1:8000, 127.0.0.1:18000].
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
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub skip_open_browser: Option<bool>,

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

    /// After a browser login started without a terminal (an IDE, a dashboard) is abandoned or
    /// times out, callers without a terminal open no new tab for this long and fail at once,
    /// saying why; `kubecred login` or a kubectl in a terminal logs in at once; 0 leaves only
    /// --login-cooldown [default: 10m].
    #[arg(long, env = "KUBECRED_LOGIN_HOLDOFF", value_name = "DURATION")]
    pub login_holdoff: Option<String>,

    /// Desktop notifications: `failures` raises one (at most one per login per --login-holdoff)
    /// when kubecred, run without a terminal on a person's desktop, fails for a reason the
    /// person must act on; `never` leaves the error line alone [default: failures].
    #[arg(long, env = "KUBECRED_NOTIFY", value_enum, value_name = "WHEN")]
    pub notify: Option<NotifyArg>,

    /// Extra authorization request parameter KEY=VALUE; repeatable. A value may contain commas
    /// (`acr_values=a,b`); one holding several KEY=VALUE pairs joined by commas (`a=1,b=2`,
    /// kubelogin's form) is split into them. With client-credentials, which has no authorization
    /// request, they go with the token request (as kubelogin sends them: `audience=…`).
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

    #[command(flatten)]
    pub clouds: CloudArgs,

    /// int128/kubelogin's own flags, hidden: accepted so that a kubelogin stanza runs unchanged
    /// (see kubelogin.rs).
    #[command(flatten)]
    pub kubelogin: KubeloginFlags,
}
