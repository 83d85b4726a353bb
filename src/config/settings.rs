//! The settings of one run, as plain types: what [`Config::resolve`](super::Config::resolve)
//! produces and the rest of the program reads. Every field has its default applied; nothing here
//! knows about clap, the environment or the cluster extension.

use super::federation::{
    CredentialSource, PasswordSettings, PrivateKeySettings, SecretOnCommandLine,
    SubjectTokenSettings,
};
use crate::exec_credential::ExecInfo;
use crate::secret::Secret;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// Everything a run needs to know, with every default applied.
#[derive(Debug, Clone)]
pub struct Config {
    pub issuer: Url,
    /// The issuer as the user wrote it (trimmed): what `status` shows. `issuer` is its parsed
    /// form, which has a `/` after a bare host the user may never have typed.
    pub issuer_as_given: String,
    pub client: ClientSettings,
    /// Final scope list, in the order given, without duplicates; `openid` first for OIDC logins.
    pub scopes: Vec<String>,
    pub grant: Grant,
    /// True when `--grant-type auto` (or nothing) chose `grant`: without a terminal it fails
    /// fast instead of opening a browser (`acquire::preflight_login`).
    pub grant_is_automatic: bool,
    /// `--token-endpoint`: skip discovery and send token requests here (a security token
    /// service that is not an OpenID Provider, e.g. Google's STS). Grants without a user only.
    pub token_endpoint: Option<Url>,
    /// The subject token of `token-exchange` and `federated-token`.
    pub subject: Option<SubjectTokenSettings>,
    /// The user of the `password` grant.
    pub password: Option<PasswordSettings>,
    /// Flags that carried a secret on the command line (visible in `ps`); a notice names them
    /// when a grant runs.
    pub secrets_on_command_line: Vec<SecretOnCommandLine>,
    /// Which token the ExecCredential carries.
    pub token_kind: TokenKind,
    pub audience: Option<String>,
    pub resource: Option<String>,
    /// `--shared-login`: this cluster's token is derived from one login shared by every
    /// cluster (`shared_login.rs`); `audience` and `resource` are then unset.
    pub shared_login: Option<super::SharedLogin>,
    pub http: HttpSettings,
    pub cache: CacheSettings,
    pub force_refresh: bool,
    pub min_validity: Duration,
    /// When a cache hit starts a background renewal (`acquire/renew_ahead.rs`).
    pub refresh_ahead: RefreshAhead,
    pub login: LoginSettings,
    pub exec: ExecInfo,
    pub verbose: u8,
    /// `--account`: a name that keeps this login's cache entry apart from other accounts'.
    pub account: Option<String>,
    /// A cloud grant's settings (`--grant-type google`): the token comes from the cloud's own
    /// identity, not from an OpenID provider. `None` for every other grant.
    pub cloud: Option<super::CloudSettings>,
}

/// Who kubecred is at the provider.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// Empty only for `federated-token`, which talks to no provider.
    pub id: String,
    pub auth: ClientAuth,
}

impl ClientSettings {
    /// The client secret, when the client authenticates with one.
    pub fn secret(&self) -> Option<&Secret> {
        match &self.auth {
            ClientAuth::Secret { secret, .. } => Some(secret),
            _ => None,
        }
    }
}

/// How the client authenticates to the token endpoint: one way at a time, so that a secret
/// together with a private key (which would it be?) cannot even be written down.
#[derive(Debug, Clone)]
pub enum ClientAuth {
    /// A public client: `client_id` in the body only.
    None,
    /// `client_secret_basic` / `client_secret_post`.
    Secret {
        secret: Secret,
        method: ClientAuthMethod,
    },
    /// `private_key_jwt` (RFC 7523): an assertion signed with our key, one per request.
    PrivateKeyJwt(PrivateKeySettings),
    /// A JWT issued by someone else (a CI system, Kubernetes) sent as the client assertion.
    Assertion(CredentialSource),
}

/// How the secret is sent when the client authenticates with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuthMethod {
    /// `client_secret_basic` unless discovery says the provider only takes `client_secret_post`.
    Auto,
    Basic,
    Post,
}

/// The grant actually used (`auto` resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    Authcode,
    AuthcodeKeyboard,
    DeviceCode,
    ClientCredentials,
    TokenExchange,
    FederatedToken,
    Password,
    /// A Google access token from Google's own credentials (`clouds/google`).
    Google,
}

impl Grant {
    /// The name used in the cache key and in messages (kubelogin's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Grant::Authcode => "authcode",
            Grant::AuthcodeKeyboard => "authcode-keyboard",
            Grant::DeviceCode => "device-code",
            Grant::ClientCredentials => "client-credentials",
            Grant::TokenExchange => "token-exchange",
            Grant::FederatedToken => "federated-token",
            Grant::Password => "password",
            Grant::Google => "google",
        }
    }

    /// Whether this grant logs a user in (and so asks for `openid` and yields an ID token).
    pub fn is_user_login(self) -> bool {
        !matches!(
            self,
            Grant::ClientCredentials | Grant::TokenExchange | Grant::FederatedToken | Grant::Google
        )
    }

    /// Whether this grant needs a person at a browser or a terminal. `password` does only when
    /// no password is configured (see `acquire::preflight_login`).
    pub fn needs_a_person(self) -> bool {
        matches!(
            self,
            Grant::Authcode | Grant::AuthcodeKeyboard | Grant::DeviceCode
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    IdToken,
    AccessToken,
}

/// What the HTTP client needs: whom to trust, how long to wait, which proxies the environment
/// names, and the headers the provider wants.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub tls: TlsSettings,
    /// Bounds each request to the provider.
    pub timeout: Duration,
    pub proxy: ProxyEnvironment,
    /// `--request-header`: sent on every request to the provider, never elsewhere.
    pub request_headers: Vec<RequestHeader>,
}

/// The proxy variables as the environment sets them. Only read here: `http/proxy.rs` makes
/// sense of them when a client is built, never on the cache hit, so that a proxy setting
/// cannot fail a run that needs no network.
#[derive(Debug, Clone, Default)]
pub struct ProxyEnvironment {
    /// Each proxy variable that is set (`HTTPS_PROXY`, `https_proxy`, `NO_PROXY`, …), with its
    /// value: a `Secret`, since a proxy URL may carry a password.
    pub variables: Vec<(&'static str, Secret)>,
    /// Whether the system's proxy settings (Windows, macOS) are read when no variable names a
    /// proxy: a real run's; a test's resolved config reads none.
    pub system_settings: bool,
}

/// One `--request-header NAME=VALUE`, checked: a header name, a value a header can carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub name: String,
    /// Possibly an API key: never shown.
    pub value: Secret,
}

#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// PEM bundles trusted in addition to the system roots, in the order given.
    pub extra_ca_pems: Vec<Vec<u8>>,
    pub insecure_skip_verify: bool,
}

/// Where tokens are kept, and how long to wait for another kubecred working on the same one.
#[derive(Debug, Clone)]
pub struct CacheSettings {
    pub dir: PathBuf,
    pub storage: CacheStorage,
    pub lock_timeout: Duration,
}

/// Where cached tokens live (docs/tokens.md "Where tokens live").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStorage {
    /// Short-lived tokens on disk; the refresh token in the OS keyring when one is reachable.
    Auto,
    /// Everything in a private file.
    Disk,
    /// Everything in the OS keyring.
    Keyring,
    /// No cache.
    None,
}

/// Settings of the interactive logins (authorization code and device flow).
#[derive(Debug, Clone)]
pub struct LoginSettings {
    /// The redirect URI, sent as written; where it names no port, the listener's goes in.
    pub redirect: super::RedirectUri,
    /// Where the listener listens, tried in order: `--listen-address`, else the port the
    /// redirect URI names, else the defaults.
    pub listen_addresses: Vec<SocketAddr>,
    /// `--local-server-cert`/`--local-server-key`: the listener serves the callback over TLS.
    pub callback_tls: Option<CallbackTls>,
    /// `None`: use PKCE unless discovery says the provider lacks S256.
    pub pkce: Option<bool>,
    pub browser: BrowserChoice,
    pub auth_timeout: Duration,
    pub cooldown: Duration,
    /// `--login-holdoff`: after a login started without a terminal was abandoned or timed out,
    /// how long callers without a terminal open no new tab (and raise no second notification).
    pub holdoff: Duration,
    /// `--notify`: whether a failure that needs the person raises a desktop notification.
    pub notify: Notify,
    pub auth_params: Vec<(String, String)>,
    pub login_hint: Option<String>,
    pub prompt: Option<String>,
}

/// When a desktop notification is raised (`--notify`, the extension's `notify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    Never,
    /// A failure that needs the person, without a terminal, on a person's desktop.
    Failures,
}

/// The certificate and key the login listener serves https with. Read when a login starts,
/// never on the cache hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackTls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How to show the user a login URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserChoice {
    /// Print the URL on stderr only.
    Skip,
    /// Run this program (and arguments) with the URL appended.
    Command(Vec<String>),
    /// The platform's default browser.
    System,
}

/// When a cache hit hands out the cached token and renews it in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshAhead {
    Off,
    /// Once less than this percentage of the token's lifetime (its expiry minus when it was
    /// obtained) is left.
    Share(u8),
    /// Once less than this is left.
    Before(Duration),
}

/// A quarter of the lifetime: providers issue tokens for 5 minutes to 24 hours (Okta and Entra
/// one hour, Google one hour, Keycloak 5 minutes, Dex 24 hours), so a fixed window would be all
/// of a short token's life or a sliver of a long one's; a share scales with each, and leaves
/// three quarters of the lifetime untouched by renewals.
pub const DEFAULT_REFRESH_AHEAD: RefreshAhead = RefreshAhead::Share(25);
pub const DEFAULT_MIN_VALIDITY: Duration = Duration::from_secs(60);
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(180);
pub const DEFAULT_LOGIN_COOLDOWN: Duration = Duration::from_secs(30);
/// Ten minutes: a dashboard that polls every few seconds opens at most six tabs an hour that
/// nobody completes, and raises as many notifications; three default --auth-timeouts fit in
/// it, so a person who saw the tab late can still finish the next one; and a person who comes
/// back acts (`kubecred login`, a kubectl in a terminal), which is not held off at all.
pub const DEFAULT_LOGIN_HOLDOFF: Duration = Duration::from_secs(600);
pub const DEFAULT_NOTIFY: Notify = Notify::Failures;
/// Added to the lock wait beyond the lock holder's own bounded work (see `default_lock_timeout`).
pub const LOCK_TIMEOUT_SLACK: Duration = Duration::from_secs(10);
/// Registered-port friendly defaults, as kubelogin uses: many IdPs need exact redirect URIs.
pub const DEFAULT_LISTEN_ADDRESSES: [&str; 2] = ["127.0.0.1:8000", "127.0.0.1:18000"];
/// The redirect URI when the user gives none; the listener's port goes in.
/// `localhost` rather than an IP because many providers only accept `localhost` for loopback
/// redirects, and because it lets the listener serve whichever family the browser picks.
pub const DEFAULT_REDIRECT_URL: &str = "http://localhost/callback";
