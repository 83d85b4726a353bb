//! Resolves settings into one plain [`Config`]: command-line flags first, then their
//! `KUBECRED_*` environment variables (clap merges those two), then the cluster's
//! `client.authentication.k8s.io/exec` extension (keys in camelCase), then defaults.
//!
//! Resolution is cheap on purpose — it runs on the cache-hit path: it parses strings and reads
//! the few small files named by flags (client secret, CA bundles), and touches no network.

use crate::cli::{CacheStorage, ClientAuthMethod, GrantType, TokenArgs};
use crate::env_vars;
use crate::error::{fail, Exit};
use crate::exec_credential::ExecInfo;
use crate::secret::Secret;
use anyhow::Context;
use base64::Engine;
use serde_json::{Map, Value};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// Everything a run needs to know, with every default applied.
#[derive(Debug, Clone)]
pub struct Config {
    pub issuer: Url,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub client_auth: ClientAuthMethod,
    /// Final scope list, in the order given, without duplicates; `openid` first for OIDC logins.
    pub scopes: Vec<String>,
    pub grant: Grant,
    /// Which token the ExecCredential carries.
    pub token_kind: TokenKind,
    pub audience: Option<String>,
    pub resource: Option<String>,
    pub tls: TlsSettings,
    pub cache_dir: PathBuf,
    pub cache_storage: CacheStorage,
    pub force_refresh: bool,
    pub min_validity: Duration,
    pub http_timeout: Duration,
    pub lock_timeout: Duration,
    pub login: LoginSettings,
    pub exec: ExecInfo,
    pub verbose: u8,
}

/// The grant actually used (`auto` resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    Authcode,
    AuthcodeKeyboard,
    DeviceCode,
    ClientCredentials,
}

impl Grant {
    /// The name used in the cache key and in messages (kubelogin's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Grant::Authcode => "authcode",
            Grant::AuthcodeKeyboard => "authcode-keyboard",
            Grant::DeviceCode => "device-code",
            Grant::ClientCredentials => "client-credentials",
        }
    }

    /// Whether this grant logs a user in (and so asks for `openid` and yields an ID token).
    pub fn is_user_login(self) -> bool {
        self != Grant::ClientCredentials
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    IdToken,
    AccessToken,
}

#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// PEM bundles trusted in addition to the system roots, in the order given.
    pub extra_ca_pems: Vec<Vec<u8>>,
    pub insecure_skip_verify: bool,
}

/// Settings of the interactive logins (authorization code and device flow).
#[derive(Debug, Clone)]
pub struct LoginSettings {
    /// The redirect URI the user gave; its port is replaced by the listener's.
    pub redirect_url: Option<Url>,
    pub listen_addresses: Vec<SocketAddr>,
    /// `None`: use PKCE unless discovery says the provider lacks S256.
    pub pkce: Option<bool>,
    pub browser: BrowserChoice,
    pub auth_timeout: Duration,
    pub cooldown: Duration,
    pub auth_params: Vec<(String, String)>,
    pub login_hint: Option<String>,
    pub prompt: Option<String>,
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

pub const DEFAULT_MIN_VALIDITY: Duration = Duration::from_secs(60);
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(180);
pub const DEFAULT_LOGIN_COOLDOWN: Duration = Duration::from_secs(30);
/// Added to the lock wait beyond the lock holder's own bounded work (see `default_lock_timeout`).
pub const LOCK_TIMEOUT_SLACK: Duration = Duration::from_secs(10);
/// Registered-port friendly defaults, as kubelogin uses: many IdPs need exact redirect URIs.
pub const DEFAULT_LISTEN_ADDRESSES: [&str; 2] = ["127.0.0.1:8000", "127.0.0.1:18000"];

/// The name of the cluster extension that carries kubecred settings.
pub const CLUSTER_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// Reads the environment variables that are not flags (see `env_vars.rs`) so that tests can
/// resolve a config without touching the process environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub verbose: Option<String>,
    pub browser: Option<String>,
}

impl Environment {
    pub fn from_process() -> Self {
        Environment {
            verbose: std::env::var(env_vars::KUBECRED_VERBOSE).ok(),
            browser: std::env::var(env_vars::BROWSER).ok(),
        }
    }
}

impl Config {
    pub fn resolve(args: &TokenArgs, env: &Environment, exec: ExecInfo) -> anyhow::Result<Config> {
        let ext = Extension(exec.cluster_config());
        refuse_unsupported_kubelogin_flags(args)?;
        let ignored = args.kubelogin_ignored.given();
        if !ignored.is_empty() {
            crate::log::notice(format!(
                "ignoring kubelogin's {}: kubecred has no use for it",
                ignored.join(", ")
            ));
        }

        let issuer_raw = args
            .issuer_url
            .clone()
            .or(ext.string("issuerURL")?)
            .ok_or_else(|| {
                input("no issuer URL: pass --issuer-url, set KUBECRED_ISSUER_URL, or add issuerURL to the cluster extension")
            })?;
        let issuer = parse_issuer(&issuer_raw)?;

        let client_id = args
            .client_id
            .clone()
            .or(ext.string("clientID")?)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                input("no client ID: pass --client-id, set KUBECRED_CLIENT_ID, or add clientID to the cluster extension")
            })?;

        let client_secret = match (&args.client_secret, &args.client_secret_file) {
            (Some(secret), _) => Some(Secret::new(secret.clone())),
            (None, Some(path)) => {
                let raw = std::fs::read_to_string(path).with_context(|| {
                    format!("reading the client secret file {}", path.display())
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
        };

        let requested_grant = match args.grant_type {
            Some(grant) => grant,
            None => match ext.string("grantType")? {
                Some(name) => <GrantType as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
                    input(format!(
                        "cluster extension grantType {name:?} is not one of auto, authcode, authcode-keyboard, device-code, client-credentials"
                    ))
                })?,
                None => GrantType::Auto,
            },
        };
        let grant = match requested_grant {
            // A browser login suits people; CI picks its non-interactive grant explicitly.
            GrantType::Auto | GrantType::Authcode => Grant::Authcode,
            GrantType::AuthcodeKeyboard => Grant::AuthcodeKeyboard,
            GrantType::DeviceCode => Grant::DeviceCode,
            GrantType::ClientCredentials => Grant::ClientCredentials,
        };
        if grant == Grant::ClientCredentials && client_secret.is_none() {
            return Err(input(
                "client-credentials needs a client secret: pass --client-secret-file or set KUBECRED_CLIENT_SECRET",
            ));
        }

        let mut scopes = Vec::new();
        if grant.is_user_login() {
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

        let use_access_token =
            args.use_access_token || ext.bool("useAccessToken")?.unwrap_or(false);
        // Client credentials has no user, so no ID token: the access token is the credential.
        let token_kind = if use_access_token || grant == Grant::ClientCredentials {
            TokenKind::AccessToken
        } else {
            TokenKind::IdToken
        };

        let mut extra_ca_pems = Vec::new();
        for path in &args.certificate_authority {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading the CA file {}", path.display()))?;
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

        let cache_dir = match &args.cache_dir {
            Some(dir) => dir.clone(),
            None => default_cache_dir()?,
        };

        let auth_timeout = duration_or(&args.auth_timeout, "--auth-timeout", DEFAULT_AUTH_TIMEOUT)?;
        let http_timeout = duration_or(&args.http_timeout, "--http-timeout", DEFAULT_HTTP_TIMEOUT)?;
        let lock_timeout = duration_or(
            &args.lock_timeout,
            "--lock-timeout",
            default_lock_timeout(auth_timeout, http_timeout),
        )?;

        let mut listen_addresses = Vec::new();
        let raw_addresses: Vec<String> = if args.listen_address.is_empty() {
            DEFAULT_LISTEN_ADDRESSES
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            args.listen_address.clone()
        };
        for raw in raw_addresses {
            let addr: SocketAddr = raw.parse().map_err(|_| {
                input(format!(
                    "--listen-address {raw:?} is not an IP:port (e.g. 127.0.0.1:8000 or [::1]:0)"
                ))
            })?;
            if !addr.ip().is_loopback() {
                return Err(input(format!(
                    "--listen-address {raw} is not a loopback address; the login listener binds only to loopback"
                )));
            }
            listen_addresses.push(addr);
        }

        let redirect_url = match (&args.redirect_url, &args.oidc_redirect_url_hostname) {
            (Some(raw), _) => {
                let url = Url::parse(raw)
                    .map_err(|err| input(format!("--redirect-url {raw:?} is not a URL: {err}")))?;
                if url.scheme() != "http" || !is_loopback_host(&url) {
                    return Err(input(format!(
                        "--redirect-url {raw} must be http on localhost or a loopback address"
                    )));
                }
                Some(url)
            }
            // kubelogin's way to change only the host of the default redirect URL.
            (None, Some(host)) => {
                let mut url =
                    Url::parse(crate::login::loopback::DEFAULT_REDIRECT_URL).expect("it parses");
                if url.set_host(Some(host.trim())).is_err() || !is_loopback_host(&url) {
                    return Err(input(format!(
                        "--oidc-redirect-url-hostname {host:?} must be localhost or a loopback address"
                    )));
                }
                Some(url)
            }
            (None, None) => None,
        };

        let browser = if args.skip_open_browser {
            BrowserChoice::Skip
        } else if let Some(command) = args
            .browser_command
            .as_deref()
            .or(env.browser.as_deref())
            .filter(|command| !command.trim().is_empty())
        {
            let words = shlex::split(command)
                .filter(|words| !words.is_empty())
                .ok_or_else(|| input(format!("browser command {command:?} cannot be parsed")))?;
            BrowserChoice::Command(words)
        } else {
            BrowserChoice::System
        };

        let auth_params = args
            .auth_params
            .iter()
            .flat_map(|value| split_auth_params(value))
            .map(|pair| match pair.split_once('=') {
                Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
                _ => Err(input(format!("--auth-param {pair:?} is not KEY=VALUE"))),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;

        let pkce = match (
            args.pkce,
            pkce_from_method(args.oidc_pkce_method.as_deref())?,
        ) {
            (Some(pkce), _) => Some(pkce),
            (None, from_method) => from_method,
        };

        let verbose = if args.verbose > 0 {
            args.verbose
        } else {
            env.verbose
                .as_deref()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };

        Ok(Config {
            issuer,
            client_id,
            client_secret,
            client_auth: args.client_auth_method.unwrap_or(ClientAuthMethod::Auto),
            scopes,
            grant,
            token_kind,
            audience: args.audience.clone().or(ext.string("audience")?),
            resource: args.resource.clone().or(ext.string("resource")?),
            tls: TlsSettings {
                extra_ca_pems,
                insecure_skip_verify: args.insecure_skip_tls_verify,
            },
            cache_dir,
            cache_storage: args.cache_storage.unwrap_or(CacheStorage::Auto),
            force_refresh: args.force_refresh,
            min_validity: duration_or(
                &args.min_validity,
                "--min-validity",
                match ext.string("minValidity")? {
                    Some(raw) => crate::duration::parse(&raw)
                        .map_err(|err| input(format!("cluster extension minValidity: {err}")))?,
                    None => DEFAULT_MIN_VALIDITY,
                },
            )?,
            http_timeout,
            lock_timeout,
            login: LoginSettings {
                redirect_url,
                listen_addresses,
                pkce,
                browser,
                auth_timeout,
                cooldown: duration_or(
                    &args.login_cooldown,
                    "--login-cooldown",
                    DEFAULT_LOGIN_COOLDOWN,
                )?,
                auth_params,
                login_hint: args.login_hint.clone(),
                prompt: args.prompt.clone(),
            },
            exec,
            verbose,
        })
    }
}

fn input(message: impl Into<String>) -> anyhow::Error {
    fail(Exit::Input, message)
}

/// The per-user cache directory (`~/.cache/kubecred` on Linux).
fn default_cache_dir() -> anyhow::Result<PathBuf> {
    directories::ProjectDirs::from("", "", "kubecred")
        .map(|dirs| dirs.cache_dir().to_path_buf())
        .ok_or_else(|| input("cannot find a home directory for the token cache; pass --cache-dir"))
}

/// The issuer must be HTTPS, except on loopback where a local test or dev IdP runs plain http.
fn parse_issuer(raw: &str) -> anyhow::Result<Url> {
    let url = Url::parse(raw.trim())
        .map_err(|err| input(format!("issuer URL {raw:?} is not a URL: {err}")))?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback_host(&url) => {}
        _ => {
            return Err(input(format!(
                "issuer URL {raw} must use https (plain http is allowed only on loopback addresses)"
            )))
        }
    }
    Ok(url)
}

/// True for `localhost`, 127.0.0.0/8 and ::1.
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// The lock wait when --lock-timeout is not given: the holder may run discovery, a whole login,
/// the code exchange and a JWKS fetch, each bounded, and a little more for the cache writes.
pub fn default_lock_timeout(auth_timeout: Duration, http_timeout: Duration) -> Duration {
    auth_timeout
        .saturating_add(http_timeout.saturating_mul(3))
        .saturating_add(LOCK_TIMEOUT_SLACK)
}

/// kubelogin's `--oidc-pkce-method`: `auto` leaves the choice to discovery, `no` turns PKCE off,
/// `S256` on.
fn pkce_from_method(method: Option<&str>) -> anyhow::Result<Option<bool>> {
    let Some(method) = method else {
        return Ok(None);
    };
    match method.trim() {
        m if m.eq_ignore_ascii_case("auto") => Ok(None),
        m if m.eq_ignore_ascii_case("no") => Ok(Some(false)),
        m if m.eq_ignore_ascii_case("S256") => Ok(Some(true)),
        _ => Err(input(format!(
            "--oidc-pkce-method {method:?} is not one of auto, no, S256 (or use --pkce / --pkce=false)"
        ))),
    }
}

/// One `--auth-param` value as pairs. A value may hold commas (`acr_values=a,b`); only when
/// every comma-separated piece is itself KEY=VALUE (`a=1,b=2`, as kubelogin's
/// `--oidc-auth-request-extra-params` takes them) is it split.
fn split_auth_params(value: &str) -> Vec<&str> {
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

/// kubelogin flags that would change what kind of login happens: refused with the reason, never
/// ignored. Their values are not printed (`--password` holds one).
fn refuse_unsupported_kubelogin_flags(args: &TokenArgs) -> anyhow::Result<()> {
    let unsupported = &args.kubelogin_unsupported;
    if unsupported.username.is_some() || unsupported.password.is_some() {
        return Err(input(
            "--username/--password (the resource owner password grant) are not supported; \
             drop them and use --grant-type=authcode, authcode-keyboard or device-code",
        ));
    }
    if unsupported.local_server_cert.is_some() || unsupported.local_server_key.is_some() {
        return Err(input(
            "--local-server-cert/--local-server-key are not supported: the login listener serves \
             plain http on loopback; drop them and register the http://localhost:PORT/callback \
             redirect URI with the provider",
        ));
    }
    Ok(())
}

fn duration_or(raw: &Option<String>, flag: &str, default: Duration) -> anyhow::Result<Duration> {
    match raw {
        Some(raw) => crate::duration::parse(raw).map_err(|err| input(format!("{flag}: {err}"))),
        None => Ok(default),
    }
}

/// Typed reads of the cluster extension; a key of the wrong type is an error naming the key.
struct Extension<'a>(Option<&'a Map<String, Value>>);

impl Extension<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0?.get(key).filter(|value| !value.is_null())
    }

    fn type_error(key: &str, expected: &str) -> anyhow::Error {
        input(format!(
            "cluster extension {CLUSTER_EXTENSION}: {key} must be {expected}; fix the kubeconfig cluster's extensions"
        ))
    }

    fn string(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Self::type_error(key, "a string")),
        }
    }

    fn bool(&self, key: &str) -> anyhow::Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Self::type_error(key, "true or false")),
        }
    }

    /// A list of strings, or one string of items separated by spaces or commas.
    fn string_list(&self, key: &str) -> anyhow::Result<Option<Vec<String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(
                s.split([' ', ','])
                    .filter(|item| !item.is_empty())
                    .map(str::to_string)
                    .collect(),
            )),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| Self::type_error(key, "a list of strings"))
                })
                .collect::<anyhow::Result<Vec<_>>>()
                .map(Some),
            Some(_) => Err(Self::type_error(key, "a list of strings")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::error::exit_code_of;
    use clap::Parser;

    fn args(extra: &[&str]) -> TokenArgs {
        let mut argv = vec!["kubecred", "get-token"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::GetToken(args) => args,
            _ => unreachable!(),
        }
    }

    fn exec_with_extension(extension: &str) -> ExecInfo {
        ExecInfo::parse(Some(&format!(
            r#"{{"apiVersion":"client.authentication.k8s.io/v1","spec":{{"interactive":false,"cluster":{{"server":"https://k","config":{extension}}}}}}}"#
        )))
        .unwrap()
    }

    #[test]
    fn huge_durations_are_refused_not_panicked_on() {
        let err = Config::resolve(
            &args(&[
                "--issuer-url=https://idp",
                "--client-id=c",
                "--auth-timeout=18446744073709551615",
            ]),
            &Environment::default(),
            ExecInfo::absent(),
        )
        .unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        assert!(
            format!("{err:#}").starts_with("--auth-timeout: \"18446744073709551615\" is too long"),
            "{err:#}"
        );
        let exec = exec_with_extension(
            r#"{"issuerURL":"https://x","clientID":"c","minValidity":"18446744073709551615s1s"}"#,
        );
        let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("cluster extension minValidity: "),
            "{err:#}"
        );
    }

    #[test]
    fn the_lock_wait_covers_the_holders_work() {
        let base = ["--issuer-url=https://idp", "--client-id=c"];
        let resolve = |extra: &[&str]| {
            let mut argv = base.to_vec();
            argv.extend_from_slice(extra);
            Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
                .unwrap()
                .lock_timeout
        };
        // 180s + 3 × 30s + 10s
        assert_eq!(resolve(&[]), Duration::from_secs(280));
        assert_eq!(
            resolve(&["--auth-timeout=60s", "--http-timeout=5s"]),
            Duration::from_secs(85)
        );
        assert_eq!(resolve(&["--lock-timeout=7s"]), Duration::from_secs(7));
        // The longest settings still leave a wait that Instant::now() + d can hold.
        let longest = resolve(&["--auth-timeout=168h", "--http-timeout=168h"]);
        assert_eq!(longest, crate::duration::MAX * 4 + LOCK_TIMEOUT_SLACK);
        assert!(std::time::Instant::now().checked_add(longest).is_some());
    }

    #[test]
    fn kubelogin_pkce_method() {
        let base = ["--issuer-url=https://idp", "--client-id=c"];
        let resolve = |extra: &[&str]| {
            let mut argv = base.to_vec();
            argv.extend_from_slice(extra);
            Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
                .map(|config| config.login.pkce)
        };
        assert_eq!(resolve(&[]).unwrap(), None);
        assert_eq!(resolve(&["--oidc-pkce-method=auto"]).unwrap(), None);
        assert_eq!(resolve(&["--oidc-pkce-method=no"]).unwrap(), Some(false));
        assert_eq!(resolve(&["--oidc-pkce-method=S256"]).unwrap(), Some(true));
        assert_eq!(resolve(&["--oidc-use-pkce"]).unwrap(), Some(true));
        assert_eq!(
            resolve(&["--oidc-pkce-method=no", "--pkce"]).unwrap(),
            Some(true)
        );
        let err = resolve(&["--oidc-pkce-method=plain"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--oidc-pkce-method \"plain\" is not one of auto, no, S256 (or use --pkce / --pkce=false)"
        );
    }

    #[test]
    fn auth_params_keep_commas_in_values() {
        let resolve = |extra: &[&str]| {
            let mut argv = vec!["--issuer-url=https://idp", "--client-id=c"];
            argv.extend_from_slice(extra);
            Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
                .map(|config| config.login.auth_params)
        };
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            resolve(&["--auth-param=acr_values=a,b", "--auth-param=ui_locales=en"]).unwrap(),
            [pair("acr_values", "a,b"), pair("ui_locales", "en")]
        );
        // kubelogin's form: several pairs in one value.
        assert_eq!(
            resolve(&["--oidc-auth-request-extra-params=prompt=login,max_age=0"]).unwrap(),
            [pair("prompt", "login"), pair("max_age", "0")]
        );
        assert_eq!(
            resolve(&["--auth-param=resource=https://api/?a=b,c"]).unwrap(),
            [pair("resource", "https://api/?a=b,c")]
        );
        assert!(resolve(&["--auth-param=novalue"]).is_err());
    }

    #[test]
    fn a_bad_ca_names_where_it_came_from() {
        let base = ["--issuer-url=https://idp", "--client-id=c"];
        let mut argv = base.to_vec();
        argv.push("--certificate-authority-data=not base64!");
        let err =
            Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--certificate-authority-data is not base64"),
            "{err}"
        );
        let exec = exec_with_extension(
            r#"{"issuerURL":"https://x","clientID":"c","certificateAuthorityData":"not base64!"}"#,
        );
        let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the cluster extension's certificateAuthorityData is not base64"),
            "{err}"
        );
    }

    #[test]
    fn kubelogin_redirect_hostname_and_refused_flags() {
        let base = ["--issuer-url=https://idp", "--client-id=c"];
        let resolve = |extra: &[&str]| {
            let mut argv = base.to_vec();
            argv.extend_from_slice(extra);
            Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
        };
        let redirect = resolve(&["--oidc-redirect-url-hostname=127.0.0.1"])
            .unwrap()
            .login
            .redirect_url
            .unwrap();
        assert_eq!(redirect.as_str(), "http://127.0.0.1/callback");
        let redirect = resolve(&[
            "--oidc-redirect-url-hostname=127.0.0.1",
            "--redirect-url=http://localhost/cb",
        ])
        .unwrap()
        .login
        .redirect_url
        .unwrap();
        assert_eq!(redirect.as_str(), "http://localhost/cb");
        assert!(resolve(&["--oidc-redirect-url-hostname=idp.example"]).is_err());

        let err = resolve(&["--username=alice", "--password=hunter2"]).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("not supported"), "{message}");
        assert!(
            !message.contains("hunter2") && !message.contains("alice"),
            "{message}"
        );
        assert_eq!(exit_code_of(&err), Exit::Input);
        let err =
            resolve(&["--local-server-cert=/c.pem", "--local-server-key=/k.pem"]).unwrap_err();
        assert!(format!("{err:#}").contains("not supported"), "{err:#}");
        // Ignored ones resolve (with a notice on stderr).
        resolve(&[
            "--open-url-after-authentication=https://x",
            "--tls-renegotiation=once",
        ])
        .unwrap();
    }

    #[test]
    fn flags_beat_the_cluster_extension_which_beats_defaults() {
        let exec = exec_with_extension(
            r#"{"issuerURL":"https://ext.example","clientID":"ext-client","scopes":["email"],"audience":"ext-aud"}"#,
        );
        let from_ext = Config::resolve(&args(&[]), &Environment::default(), exec.clone()).unwrap();
        assert_eq!(from_ext.issuer.as_str(), "https://ext.example/");
        assert_eq!(from_ext.client_id, "ext-client");
        assert_eq!(from_ext.scopes, ["openid", "email"]);
        assert_eq!(from_ext.audience.as_deref(), Some("ext-aud"));
        assert_eq!(from_ext.min_validity, DEFAULT_MIN_VALIDITY);
        assert_eq!(from_ext.grant, Grant::Authcode);
        assert_eq!(from_ext.token_kind, TokenKind::IdToken);

        let from_flags = Config::resolve(
            &args(&[
                "--issuer-url=https://flag.example",
                "--client-id=flag",
                "--scope=groups,openid",
            ]),
            &Environment::default(),
            exec,
        )
        .unwrap();
        assert_eq!(from_flags.issuer.as_str(), "https://flag.example/");
        assert_eq!(from_flags.client_id, "flag");
        assert_eq!(from_flags.scopes, ["openid", "groups"]);
    }

    #[test]
    fn extension_type_errors_name_the_key() {
        let exec = exec_with_extension(r#"{"issuerURL":"https://x","clientID":7}"#);
        let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
        assert!(
            format!("{err:#}").contains("clientID must be a string"),
            "{err:#}"
        );
    }

    #[test]
    fn issuer_must_be_https_unless_loopback() {
        for ok in [
            "https://idp.example",
            "http://127.0.0.1:9000",
            "http://localhost:1",
            "http://[::1]:5",
        ] {
            assert!(parse_issuer(ok).is_ok(), "{ok}");
        }
        for bad in ["http://idp.example", "ftp://127.0.0.1", "not a url"] {
            assert!(parse_issuer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn client_credentials_prints_the_access_token_and_skips_openid() {
        let config = Config::resolve(
            &args(&[
                "--issuer-url=https://idp",
                "--client-id=ci",
                "--client-secret=s",
                "--grant-type=client-credentials",
                "--scope=api",
            ]),
            &Environment::default(),
            ExecInfo::absent(),
        )
        .unwrap();
        assert_eq!(config.token_kind, TokenKind::AccessToken);
        assert_eq!(config.scopes, ["api"]);
        assert!(!format!("{config:?}").contains("\"s\""));
    }

    #[test]
    fn client_credentials_without_a_secret_is_refused() {
        let err = Config::resolve(
            &args(&[
                "--issuer-url=https://idp",
                "--client-id=ci",
                "--grant-type=client-credentials",
            ]),
            &Environment::default(),
            ExecInfo::absent(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("needs a client secret"));
    }

    #[test]
    fn browser_choice() {
        let base = ["--issuer-url=https://idp", "--client-id=c"];
        let env = Environment {
            browser: Some("firefox --new-tab".into()),
            ..Default::default()
        };
        let resolve = |extra: &[&str], env: &Environment| {
            let mut argv = base.to_vec();
            argv.extend_from_slice(extra);
            Config::resolve(&args(&argv), env, ExecInfo::absent())
                .unwrap()
                .login
                .browser
        };
        assert_eq!(resolve(&[], &Environment::default()), BrowserChoice::System);
        assert_eq!(
            resolve(&[], &env),
            BrowserChoice::Command(vec!["firefox".into(), "--new-tab".into()])
        );
        assert_eq!(
            resolve(&["--browser-command=node 'my browser.mjs'"], &env),
            BrowserChoice::Command(vec!["node".into(), "my browser.mjs".into()])
        );
        assert_eq!(resolve(&["--skip-open-browser"], &env), BrowserChoice::Skip);
    }

    #[test]
    fn listen_addresses_must_be_loopback() {
        let err = Config::resolve(
            &args(&[
                "--issuer-url=https://idp",
                "--client-id=c",
                "--listen-address=0.0.0.0:8000",
            ]),
            &Environment::default(),
            ExecInfo::absent(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("not a loopback address"));
    }
}
