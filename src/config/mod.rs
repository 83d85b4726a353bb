//! Resolves settings into one plain [`Config`]: command-line flags first, then their
//! `KUBECRED_*` environment variables (clap merges those two), then the cluster's
//! `client.authentication.k8s.io/exec` extension (keys in camelCase), then defaults.
//!
//! This module owns the domain's settings types ([`Grant`], [`CacheStorage`],
//! [`ClientAuthMethod`], …): clap's types stop here. [`Config::resolve`] calls one small resolver
//! per group of settings, and each default is applied once, here.
//!
//! Resolution is cheap on purpose — it runs on the cache-hit path: it parses strings and reads
//! the few small files named by flags (client secret, CA bundles), and touches no network.

mod cloud;
mod environment;
mod extension;
mod federation;
mod kubelogin;
mod login;
mod redirect_uri;
mod request_targets;
mod settings;
mod shared_login;
#[cfg(test)]
mod tests;

pub use cloud::{
    CloudExchange, CloudSettings, CloudTarget, DEFAULT_GOOGLE_SCOPES, DEFAULT_GOOGLE_STS_URL,
    GOOGLE_ISSUER, GcloudArgs, GoogleSettings, GoogleSource, WorkforceSettings,
};
pub use environment::Environment;
pub use extension::CLUSTER_EXTENSION;
pub use federation::{
    CredentialSource, PasswordSettings, PasswordSource, PrivateKeyPem, PrivateKeySettings,
    SecretOnCommandLine, SubjectTokenSettings, TOKEN_TYPE_JWT, secret_flags_on_command_line,
};
pub use login::is_loopback_host;
use login::resolve_login;
pub use redirect_uri::RedirectUri;
pub use request_targets::RequestTargets;
pub use settings::*;
pub use shared_login::{Derive, SharedLogin, Target};

use crate::cli::{CacheDirArg, CacheStorageArg, ClientAuthMethodArg, GrantTypeArg, TokenArgs};
use crate::error::{Exit, fail};
use crate::exec_credential::ExecInfo;
use crate::secret::Secret;
use base64::Engine;
use extension::Extension;
use kubelogin::KubeloginSettings;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

impl Config {
    /// Whether the configured grant yields a new token without a person: what a token renews
    /// by when it has no refresh token, in the foreground and the background alike.
    pub fn grant_needs_no_person(&self) -> bool {
        match self.grant {
            Grant::ClientCredentials | Grant::TokenExchange | Grant::Google => true,
            Grant::Password => self
                .password
                .as_ref()
                .is_some_and(|password| !password.needs_a_person()),
            // A login needs a person; a federated token is the subject token itself, renewed
            // by whoever rotates its file.
            Grant::Authcode
            | Grant::AuthcodeKeyboard
            | Grant::DeviceCode
            | Grant::FederatedToken => false,
        }
    }

    pub fn resolve(args: &TokenArgs, env: &Environment, exec: ExecInfo) -> anyhow::Result<Config> {
        let ext = Extension(exec.cluster_config());
        let kubelogin = kubelogin::resolve(&args.kubelogin)?;
        let (requested, grant_is_automatic) = resolve_grant(args, &ext)?;
        // A cloud's token derived from the shared kubecred login: the settings are the shared
        // login's, whose own grant is a person's (`auto`), and `--scope` names the cloud's scopes.
        let from_a_login = cloud::from_a_login(&args.clouds, requested);
        let (grant, grant_is_automatic) = match from_a_login {
            true => (Grant::Authcode, true),
            false => (requested, grant_is_automatic),
        };
        let (issuer, issuer_as_given) = resolve_issuer(args, &ext, grant)?;
        let client = resolve_client(args, env, &ext, grant)?;
        let mut request = resolve_token_request(args, &ext, grant)?;
        let cloud = cloud::resolve(&args.clouds, env, &ext, requested, &request.scopes)?;
        if from_a_login {
            request.scopes = vec!["openid".to_string()];
        }
        let http = resolve_http(args, env, &ext, &kubelogin)?;
        let login = resolve_login(args, env, &kubelogin, grant, ext.string("notify")?)?;
        check_token_request_params(&login, &request, grant)?;
        let cache = resolve_cache(args, env, &login, &http)?;
        let account = args.account.clone().or(ext.string("account")?);
        let shared_login = match from_a_login {
            true => {
                let target = cloud::target(&args.clouds, &args.scopes)?;
                Some(shared_login::for_a_cloud(
                    args,
                    &ext,
                    Target::Cloud(target),
                )?)
            }
            false => shared_login::resolve(
                args,
                &ext,
                grant,
                request.token_kind,
                request.audience.clone(),
                request.resource.clone(),
            )?,
        };
        // A shared login's target is its own business (`shared_login.rs`): never sent as the
        // plain --audience/--resource, and the token handed out is the access token.
        let (token_kind, audience, resource) = match &shared_login {
            Some(_) => (TokenKind::AccessToken, None, None),
            None => (request.token_kind, request.audience, request.resource),
        };
        Ok(Config {
            issuer,
            issuer_as_given,
            client,
            scopes: request.scopes,
            grant,
            grant_is_automatic,
            token_endpoint: federation::resolve_token_endpoint(&args.federation, grant)?,
            subject: federation::resolve_subject(&args.federation, grant)?,
            password: federation::resolve_password(
                &args.federation,
                env,
                kubelogin.password.as_ref(),
                grant,
            )?,
            secrets_on_command_line: env.secrets_on_command_line.clone(),
            token_kind,
            audience,
            resource,
            shared_login,
            http,
            cache,
            force_refresh: args.force_refresh.unwrap_or(false),
            min_validity: resolve_min_validity(args, &ext)?,
            refresh_ahead: resolve_refresh_ahead(args, &ext)?,
            login,
            exec,
            verbose: resolve_verbosity(args, env),
            account,
            cloud,
        })
    }
}

/// What `kubecred login --remote-bootstrap` reads: the login settings (browser, listener
/// addresses, time limit) and the verbosity. The side of a relayed login where the browser is
/// talks to no provider, so it needs no issuer and no client, and reads nothing else.
pub fn resolve_relay_side(
    args: &TokenArgs,
    env: &Environment,
) -> anyhow::Result<(LoginSettings, u8)> {
    let kubelogin = kubelogin::resolve(&args.kubelogin)?;
    Ok((
        resolve_login(args, env, &kubelogin, Grant::Authcode, None)?,
        resolve_verbosity(args, env),
    ))
}

fn input(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::Input, message)
}

/// The identity provider: `--issuer-url`, or the extension's `issuerURL`.
/// The issuer, parsed, and as it was written (trimmed): `Url` adds a `/` to a bare host
/// (`https://idp:8443` becomes `https://idp:8443/`), which is not what the user typed.
fn resolve_issuer(
    args: &TokenArgs,
    ext: &Extension,
    grant: Grant,
) -> anyhow::Result<(Url, String)> {
    if grant == Grant::Google {
        // Google's credentials say where their tokens come from: the entry is recorded under
        // Google's own issuer, which is never asked.
        if args.issuer_url.is_some() {
            return Err(input(
                "--grant-type google takes Google's own credentials and no --issuer-url: leave it out",
            ));
        }
        let google = Url::parse(cloud::GOOGLE_ISSUER).expect("a URL");
        return Ok((google, cloud::GOOGLE_ISSUER.to_string()));
    }
    let raw = args
        .issuer_url
        .clone()
        .or(ext.string("issuerURL")?)
        .ok_or_else(|| {
            input("no issuer URL: pass --issuer-url, set KUBECRED_ISSUER_URL, or add issuerURL to the cluster extension")
        })?;
    Ok((parse_issuer(&raw)?, raw.trim().to_string()))
}

/// The issuer must be HTTPS, except on loopback where a local test or dev IdP runs plain http,
/// and must not carry a user name or password: those would be sent to every endpoint and shown
/// in messages, and the provider authenticates the client by its own means. Messages about a bad
/// issuer never repeat the password.
fn parse_issuer(raw: &str) -> anyhow::Result<Url> {
    let shown = crate::text::redact_userinfo(raw.trim());
    let url = Url::parse(raw.trim())
        .map_err(|err| {
            input(format!(
                "issuer URL {shown:?} is not a URL: {err}; write it as the provider names it, e.g. https://idp.example.com/realms/main"
            ))
        })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(input(format!(
            "issuer URL {} contains a user name or password (user:password@); remove it: kubecred authenticates with --client-id and the client secret",
            crate::text::display_url(&url)
        )));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback_host(&url) => {}
        _ => {
            return Err(input(format!(
                "issuer URL {shown} must use https (plain http is allowed only on loopback addresses)"
            )));
        }
    }
    Ok(url)
}

/// The client ID and how the client authenticates (a secret from the flag, the environment or
/// a file; a private key; an assertion). `federated-token` talks to no provider: no client.
fn resolve_client(
    args: &TokenArgs,
    env: &Environment,
    ext: &Extension,
    grant: Grant,
) -> anyhow::Result<ClientSettings> {
    let id = args
        .client_id
        .clone()
        .or(ext.string("clientID")?)
        .filter(|id| !id.is_empty());
    let id = match (id, grant) {
        (Some(id), _) => id,
        // federated-token talks to no provider; a token exchange may be anonymous (Google's STS
        // takes no client at all).
        (None, Grant::FederatedToken | Grant::TokenExchange | Grant::Google) => String::new(),
        (None, _) => {
            return Err(input(
                "no client ID: pass --client-id, set KUBECRED_CLIENT_ID, or add clientID to the cluster extension",
            ));
        }
    };
    let secret = client_secret(args)?;
    let method = args.client_auth_method.map(|method| match method {
        ClientAuthMethodArg::Auto => ClientAuthMethod::Auto,
        ClientAuthMethodArg::Basic => ClientAuthMethod::Basic,
        ClientAuthMethodArg::Post => ClientAuthMethod::Post,
    });
    let auth = federation::resolve_client_auth(&args.federation, env, secret, method)?;
    check_client_auth(&id, &auth, grant)?;
    Ok(ClientSettings { id, auth })
}

/// The client secret from `--client-secret` (or its variable), else `--client-secret-file`.
fn client_secret(args: &TokenArgs) -> anyhow::Result<Option<Secret>> {
    Ok(match (&args.client_secret, &args.client_secret_file) {
        // An empty secret is a mistake (an unset variable expanded in a script), never a secret:
        // sent as one, it fails at the provider with a less helpful message, or not at all.
        (Some(secret), _) if secret.trim().is_empty() => {
            return Err(input(
                "the client secret from --client-secret (or KUBECRED_CLIENT_SECRET) is empty; pass the secret, or leave it out for a public client",
            ));
        }
        (Some(secret), _) => Some(Secret::new(secret.clone())),
        (None, Some(path)) => {
            let raw = std::fs::read_to_string(path).map_err(|err| {
                input(format!(
                    "reading the client secret file {}: {err}",
                    path.display()
                ))
            })?;
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                return Err(input(format!(
                    "the client secret file {} is empty",
                    path.display()
                )));
            }
            Some(Secret::new(trimmed))
        }
        (None, None) => None,
    })
}

/// The client authentication `grant` can use with the client `id`.
fn check_client_auth(id: &str, auth: &ClientAuth, grant: Grant) -> anyhow::Result<()> {
    if grant == Grant::ClientCredentials && matches!(auth, ClientAuth::None) {
        return Err(input(
            "client-credentials needs client authentication: pass --client-secret-file (or set KUBECRED_CLIENT_SECRET), --client-private-key-file, or a client assertion (--client-assertion-file/-env/-source)",
        ));
    }
    if id.is_empty() && !matches!(auth, ClientAuth::None) {
        return Err(input(
            "client authentication needs a client ID: pass --client-id or set KUBECRED_CLIENT_ID",
        ));
    }
    if grant == Grant::DeviceCode
        && matches!(
            auth,
            ClientAuth::PrivateKeyJwt(_) | ClientAuth::Assertion(_)
        )
    {
        // Every poll of the device flow would reuse one assertion (and its jti).
        return Err(input(
            "--grant-type device-code authenticates with a client secret or none; a private key or client assertion is not supported with it",
        ));
    }
    if grant == Grant::Google && (!id.is_empty() || !matches!(auth, ClientAuth::None)) {
        return Err(input(
            "--grant-type google takes Google's own credentials: drop --client-id and the client secret, key or assertion",
        ));
    }
    if grant == Grant::FederatedToken && !matches!(auth, ClientAuth::None) {
        return Err(input(
            "--grant-type federated-token sends no request to a provider: drop the client secret, key or assertion",
        ));
    }
    Ok(())
}

/// The grant: `--grant-type`, else the extension's `grantType`, else `auto` (a browser login);
/// the flag says whether `auto` chose it.
fn resolve_grant(args: &TokenArgs, ext: &Extension) -> anyhow::Result<(Grant, bool)> {
    let requested = match args.grant_type {
        Some(grant) => grant,
        None => match ext.string("grantType")? {
            Some(name) => <GrantTypeArg as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
                input(format!(
                    "cluster extension grantType {name:?} is not one of auto, authcode, authcode-keyboard, device-code, client-credentials, token-exchange, federated-token, password, google"
                ))
            })?,
            None => GrantTypeArg::Auto,
        },
    };
    Ok(match requested {
        // A browser login suits people; CI picks its non-interactive grant explicitly.
        GrantTypeArg::Auto => (Grant::Authcode, true),
        GrantTypeArg::Authcode => (Grant::Authcode, false),
        GrantTypeArg::AuthcodeKeyboard => (Grant::AuthcodeKeyboard, false),
        GrantTypeArg::DeviceCode => (Grant::DeviceCode, false),
        GrantTypeArg::ClientCredentials => (Grant::ClientCredentials, false),
        GrantTypeArg::TokenExchange => (Grant::TokenExchange, false),
        GrantTypeArg::FederatedToken => (Grant::FederatedToken, false),
        GrantTypeArg::Password => (Grant::Password, false),
        GrantTypeArg::Google => (Grant::Google, false),
    })
}

/// What is asked of the provider: the grant, the scopes, which token to print, and the
/// `audience` / `resource` parameters.
struct TokenRequest {
    scopes: Vec<String>,
    token_kind: TokenKind,
    audience: Option<String>,
    resource: Option<String>,
}

fn resolve_token_request(
    args: &TokenArgs,
    ext: &Extension,
    grant: Grant,
) -> anyhow::Result<TokenRequest> {
    let use_access_token = match args.use_access_token {
        Some(given) => Some(given),
        None => ext.bool("useAccessToken")?,
    };
    // Grants without a user print the access token unless told otherwise: client credentials
    // may print the ID token the provider issues with `openid` (int128/kubelogin's default),
    // token exchange and the federated token have none (the exchange returns the issued token
    // as `access_token`, whatever its type).
    let token_kind = match (use_access_token, grant) {
        (Some(true), _) => TokenKind::AccessToken,
        (Some(false), Grant::ClientCredentials) => TokenKind::IdToken,
        (Some(false), _) if grant.is_user_login() => TokenKind::IdToken,
        (Some(false), _) => {
            return Err(input(format!(
                "--use-access-token=false asks for an ID token, which --grant-type {} does not give; leave it out",
                grant.name()
            )));
        }
        (None, _) if grant.is_user_login() => TokenKind::IdToken,
        (None, _) => TokenKind::AccessToken,
    };
    let mut scopes = Vec::new();
    if token_kind == TokenKind::IdToken || grant.is_user_login() {
        scopes.push("openid".to_string());
    }
    let given_scopes = if args.scopes.is_empty() {
        ext.string_list("scopes")?.unwrap_or_default()
    } else {
        args.scopes.clone()
    };
    for scope in given_scopes.iter().flat_map(|s| s.split_whitespace()) {
        if !scopes.iter().any(|have| have == scope) {
            scopes.push(scope.to_string());
        }
    }

    Ok(TokenRequest {
        scopes,
        token_kind,
        audience: args.audience.clone().or(ext.string("audience")?),
        resource: args.resource.clone().or(ext.string("resource")?),
    })
}

/// `--auth-param`s go with the client credentials token request (it has no authorization
/// request): none may be a parameter the request sets itself.
fn check_token_request_params(
    login: &LoginSettings,
    request: &TokenRequest,
    grant: Grant,
) -> anyhow::Result<()> {
    if grant != Grant::ClientCredentials {
        return Ok(());
    }
    const SET_BY_KUBECRED: [&str; 6] = [
        "grant_type",
        "scope",
        "client_id",
        "client_secret",
        "client_assertion",
        "client_assertion_type",
    ];
    for (name, _) in &login.auth_params {
        let taken = SET_BY_KUBECRED.contains(&name.as_str())
            || (name == "audience" && request.audience.is_some())
            || (name == "resource" && request.resource.is_some());
        if taken {
            return Err(input(format!(
                "--auth-param {name}=…: the client credentials request sets {name} itself (with client credentials the --auth-params go with the token request); use its own setting"
            )));
        }
    }
    Ok(())
}

/// The extra CAs (files, base64 from flags or the extension), TLS verification, the timeout,
/// the proxy variables and the request headers.
fn resolve_http(
    args: &TokenArgs,
    env: &Environment,
    ext: &Extension,
    kubelogin: &KubeloginSettings,
) -> anyhow::Result<HttpSettings> {
    let mut extra_ca_pems = Vec::new();
    for path in &args.certificate_authority {
        let pem = std::fs::read(path)
            .map_err(|err| input(format!("reading the CA file {}: {err}", path.display())))?;
        extra_ca_pems.push(pem);
    }
    let ca_data = args
        .certificate_authority_data
        .iter()
        .map(|data| (data.clone(), "--certificate-authority-data"))
        .chain(
            ext.string("certificateAuthorityData")?
                .map(|data| (data, "the cluster extension's certificateAuthorityData")),
        );
    for (data, source) in ca_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|err| input(format!("{source} is not base64: {err}")))?;
        extra_ca_pems.push(pem);
    }
    Ok(HttpSettings {
        tls: TlsSettings {
            extra_ca_pems,
            insecure_skip_verify: args.insecure_skip_tls_verify.unwrap_or(false),
        },
        timeout: duration_or(&args.http_timeout, "--http-timeout", DEFAULT_HTTP_TIMEOUT)?,
        proxy: env.proxy.clone(),
        request_headers: resolve_request_headers(args, kubelogin)?,
    })
}

/// `--request-header` (and kubelogin's `--oidc-request-header`): NAME=VALUE, several pairs joined
/// by commas split as `--auth-param` splits them. A value is never echoed: it may be an API key.
fn resolve_request_headers(
    args: &TokenArgs,
    kubelogin: &KubeloginSettings,
) -> anyhow::Result<Vec<RequestHeader>> {
    args.request_headers
        .iter()
        .chain(&kubelogin.request_headers)
        .flat_map(|value| split_pairs(value))
        .map(parse_request_header)
        .collect()
}

/// Headers kubecred writes itself, to frame a request or to speak to a proxy: a second one
/// would corrupt the request.
const HEADERS_NOT_TO_SET: [&str; 10] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

fn parse_request_header(pair: &str) -> anyhow::Result<RequestHeader> {
    let Some((name, value)) = pair.split_once('=') else {
        let hint = if pair.contains(':') {
            " (NAME=VALUE, not NAME: VALUE)"
        } else {
            ""
        };
        return Err(input(format!(
            "--request-header takes NAME=VALUE{hint}; the one given has no '='"
        )));
    };
    let name = name.trim();
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(is_token_char) {
        return Err(input(format!(
            "--request-header {:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)",
            crate::text::printable_brief(name, 60)
        )));
    }
    if HEADERS_NOT_TO_SET.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(input(format!(
            "--request-header {name}: kubecred writes this header itself (it frames the request or speaks to a proxy); drop it"
        )));
    }
    let value = value.trim();
    if !value.chars().all(|c| c == '\t' || (' '..='~').contains(&c)) {
        return Err(input(format!(
            "--request-header {name}: the value has characters a header cannot carry (printable ASCII only)"
        )));
    }
    Ok(RequestHeader {
        name: name.to_string(),
        value: Secret::new(value),
    })
}

/// The cache directory and storage, and the lock wait (which covers the lock holder's work: a
/// login and a few HTTP requests).
fn resolve_cache(
    args: &TokenArgs,
    env: &Environment,
    login: &LoginSettings,
    http: &HttpSettings,
) -> anyhow::Result<CacheSettings> {
    let dir = match (&args.cache.cache_dir, &env.user_cache_dir) {
        (None, Some(dir)) => dir.clone(),
        _ => resolve_cache_dir(&args.cache)?,
    };
    let storage = match args.cache_storage {
        None | Some(CacheStorageArg::Auto) => CacheStorage::Auto,
        Some(CacheStorageArg::Disk) => CacheStorage::Disk,
        Some(CacheStorageArg::Keyring) => CacheStorage::Keyring,
        Some(CacheStorageArg::None) => CacheStorage::None,
    };
    let lock_timeout = duration_or(
        &args.lock_timeout,
        "--lock-timeout",
        default_lock_timeout(login.auth_timeout, http.timeout),
    )?;
    Ok(CacheSettings {
        dir,
        storage,
        lock_timeout,
    })
}

/// `--cache-dir`, or the per-user cache directory (`~/.cache/kubecred` on Linux). Also all that
/// `status` and `logout --all` resolve, so that they work without an issuer or a client.
pub fn resolve_cache_dir(arg: &CacheDirArg) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &arg.cache_dir {
        return Ok(dir.clone());
    }
    directories::ProjectDirs::from("", "", "kubecred")
        .map(|dirs| dirs.cache_dir().to_path_buf())
        .ok_or_else(|| input("cannot find a home directory for the token cache; pass --cache-dir"))
}

/// The lock wait when --lock-timeout is not given: the holder may run discovery, a whole login,
/// the code exchange and a JWKS fetch, each bounded, and a little more for the cache writes.
pub fn default_lock_timeout(auth_timeout: Duration, http_timeout: Duration) -> Duration {
    auth_timeout
        .saturating_add(http_timeout.saturating_mul(3))
        .saturating_add(LOCK_TIMEOUT_SLACK)
}

fn resolve_min_validity(args: &TokenArgs, ext: &Extension) -> anyhow::Result<Duration> {
    let default = match ext.string("minValidity")? {
        Some(raw) => crate::duration::parse(&raw)
            .map_err(|err| input(format!("cluster extension minValidity: {err}")))?,
        None => DEFAULT_MIN_VALIDITY,
    };
    duration_or(&args.min_validity, "--min-validity", default)
}

/// `--refresh-ahead`, else the extension's `refreshAhead`, else a quarter of the lifetime.
fn resolve_refresh_ahead(args: &TokenArgs, ext: &Extension) -> anyhow::Result<RefreshAhead> {
    let (raw, source) = match (&args.refresh_ahead, ext.string("refreshAhead")?) {
        (Some(raw), _) => (raw.clone(), "--refresh-ahead"),
        (None, Some(raw)) => (raw, "cluster extension refreshAhead"),
        (None, None) => return Ok(DEFAULT_REFRESH_AHEAD),
    };
    parse_refresh_ahead(raw.trim()).map_err(|err| input(format!("{source}: {err}")))
}

/// `0` (off), a percentage (`25%`, 1 to 99) or a duration (`10m`).
fn parse_refresh_ahead(raw: &str) -> Result<RefreshAhead, String> {
    if let Some(number) = raw.strip_suffix('%') {
        return match number.trim().parse::<u8>() {
            Ok(0) => Ok(RefreshAhead::Off),
            Ok(share @ 1..=99) => Ok(RefreshAhead::Share(share)),
            _ => Err(format!(
                "{raw:?} is not a share of the lifetime from 1% to 99% (or 0 to turn it off)"
            )),
        };
    }
    match crate::duration::parse(raw)? {
        Duration::ZERO => Ok(RefreshAhead::Off),
        before => Ok(RefreshAhead::Before(before)),
    }
}

/// `-v`/`-vv`, else `KUBECRED_VERBOSE`.
fn resolve_verbosity(args: &TokenArgs, env: &Environment) -> u8 {
    if args.verbose > 0 {
        return args.verbose;
    }
    env.verbose
        .as_deref()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One `--auth-param` (or `--request-header`) value as pairs. A value may hold commas
/// (`acr_values=a,b`); only when every comma-separated piece is itself KEY=VALUE (`a=1,b=2`, as
/// kubelogin's `--oidc-auth-request-extra-params` takes them) is it split.
fn split_pairs(value: &str) -> Vec<&str> {
    let pieces: Vec<&str> = value.split(',').collect();
    let all_pairs = pieces.iter().all(|piece| {
        piece
            .split_once('=')
            .is_some_and(|(key, _)| !key.is_empty())
    });
    if pieces.len() > 1 && all_pairs {
        pieces
    } else {
        vec![value]
    }
}

fn duration_or(raw: &Option<String>, flag: &str, default: Duration) -> anyhow::Result<Duration> {
    match raw {
        Some(raw) => crate::duration::parse(raw).map_err(|err| input(format!("{flag}: {err}"))),
        None => Ok(default),
    }
}
