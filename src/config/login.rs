//! The login settings: the loopback listener (`--listen-address`, or the port the redirect URI
//! names, or the defaults) and the redirect URI it is reached by (`--redirect-url` as written,
//! kubelogin's `--oidc-redirect-url-hostname`, or the default), the browser, PKCE, the
//! authorization request's extra parameters and the login's time limits, and what a login
//! without a terminal may do (the hold-off, desktop notifications).

use super::kubelogin::KubeloginSettings;
use super::{
    BrowserChoice, CallbackTls, DEFAULT_AUTH_TIMEOUT, DEFAULT_LISTEN_ADDRESSES,
    DEFAULT_LOGIN_COOLDOWN, DEFAULT_LOGIN_HOLDOFF, DEFAULT_NOTIFY, DEFAULT_REDIRECT_URL,
    Environment, Grant, LoginSettings, Notify, RedirectUri, duration_or, input, split_pairs,
};
use crate::cli::{NotifyArg, TokenArgs};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use url::Url;

/// The browser, the loopback listener, PKCE, the authorization request's extra parameters and
/// the login's time limits.
pub(super) fn resolve_login(
    args: &TokenArgs,
    env: &Environment,
    kubelogin: &KubeloginSettings,
    grant: Grant,
    notify_in_extension: Option<String>,
) -> anyhow::Result<LoginSettings> {
    let callback_tls = match (&args.local_server_cert, &args.local_server_key) {
        (Some(cert), Some(key)) => Some(CallbackTls {
            cert: cert.clone(),
            key: key.clone(),
        }),
        (None, None) => None,
        _ => {
            return Err(input(
                "--local-server-cert and --local-server-key go together: give both (the certificate and its key) or neither",
            ));
        }
    };
    let redirect = resolve_redirect_url(args, kubelogin, callback_tls.is_some(), grant)?;
    let listen_addresses = if !args.listen_address.is_empty() {
        args.listen_address
            .iter()
            .map(|raw| parse_listen_address(raw))
            .collect::<anyhow::Result<Vec<_>>>()?
    } else if let Some(port) = redirect
        .written_port()
        .filter(|_| grant != Grant::AuthcodeKeyboard)
    {
        // The redirect URI names its port: the provider sends the browser there and nowhere
        // else, so the listener is there (or the login fails at once when it is taken).
        vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)]
    } else {
        DEFAULT_LISTEN_ADDRESSES
            .iter()
            .map(|raw| parse_listen_address(raw))
            .collect::<anyhow::Result<Vec<_>>>()?
    };

    let auth_params = args
        .auth_params
        .iter()
        .flat_map(|value| split_pairs(value))
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(input(format!("--auth-param {pair:?} is not KEY=VALUE"))),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;

    Ok(LoginSettings {
        redirect,
        listen_addresses,
        callback_tls,
        // --pkce, when given, wins over kubelogin's --oidc-pkce-method.
        pkce: args.pkce.or(kubelogin.pkce),
        browser: resolve_browser(args, env)?,
        auth_timeout: duration_or(&args.auth_timeout, "--auth-timeout", DEFAULT_AUTH_TIMEOUT)?,
        cooldown: duration_or(
            &args.login_cooldown,
            "--login-cooldown",
            DEFAULT_LOGIN_COOLDOWN,
        )?,
        holdoff: duration_or(
            &args.login_holdoff,
            "--login-holdoff",
            DEFAULT_LOGIN_HOLDOFF,
        )?,
        notify: resolve_notify(args, notify_in_extension)?,
        auth_params,
        login_hint: args.login_hint.clone(),
        prompt: args.prompt.clone(),
    })
}

/// `--notify` (or `KUBECRED_NOTIFY`), else the cluster extension's `notify` (`"never"` or
/// `"failures"`: `from_extension`, `ext.string("notify")?` where the extension is read), else
/// `failures`.
pub(super) fn resolve_notify(
    args: &TokenArgs,
    from_extension: Option<String>,
) -> anyhow::Result<Notify> {
    if let Some(arg) = args.notify {
        return Ok(match arg {
            NotifyArg::Never => Notify::Never,
            NotifyArg::Failures => Notify::Failures,
        });
    }
    match from_extension.as_deref() {
        None => Ok(DEFAULT_NOTIFY),
        Some("never") => Ok(Notify::Never),
        Some("failures") => Ok(Notify::Failures),
        Some(other) => Err(input(format!(
            "cluster extension {}: notify {other:?} is neither \"never\" nor \"failures\"; fix the kubeconfig cluster's extensions",
            super::CLUSTER_EXTENSION
        ))),
    }
}

fn parse_listen_address(raw: &str) -> anyhow::Result<SocketAddr> {
    // `localhost:PORT`, as kubelogin takes it (Go listens on the name's first address, IPv4's).
    let localhost_port = raw
        .strip_prefix("localhost:")
        .and_then(|port| port.parse::<u16>().ok());
    if let Some(port) = localhost_port {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let addr: SocketAddr = raw.parse().map_err(|_| {
        input(format!(
            "--listen-address {raw:?} is not an IP:port or localhost:port (e.g. 127.0.0.1:8000, [::1]:0, localhost:8000)"
        ))
    })?;
    if !addr.ip().is_loopback() {
        return Err(input(format!(
            "--listen-address {raw} is not a loopback address; the login listener binds only to loopback"
        )));
    }
    Ok(addr)
}

/// `--redirect-url` as written; else the default with kubelogin's `--oidc-redirect-url-hostname`
/// as host; else the default. It is sent as it is (`RedirectUri`): only a port goes into one
/// that names none. It must be on a loopback host (the listener receives it), http — or https
/// when the listener serves TLS (`--local-server-cert`); for `authcode-keyboard`, where the
/// person copies the code, any absolute URI the provider has registered.
fn resolve_redirect_url(
    args: &TokenArgs,
    kubelogin: &KubeloginSettings,
    tls: bool,
    grant: Grant,
) -> anyhow::Result<RedirectUri> {
    let scheme = if tls { "https" } else { "http" };
    let default = || {
        let text = DEFAULT_REDIRECT_URL.replacen("http", scheme, 1);
        RedirectUri::parse(&text).expect("the default redirect URL parses")
    };
    match (&args.redirect_url, &kubelogin.redirect_host) {
        (Some(raw), _) => {
            let uri = RedirectUri::parse(raw)
                .map_err(|why| input(format!("--redirect-url {raw:?} {why}")))?;
            if grant == Grant::AuthcodeKeyboard {
                return Ok(uri);
            }
            if uri.url().scheme() != scheme || !is_loopback_host(uri.url()) {
                let why = if tls {
                    "https on localhost or a loopback address: with --local-server-cert the listener serves https"
                } else {
                    "http on localhost or a loopback address (https needs --local-server-cert and --local-server-key)"
                };
                return Err(input(format!("--redirect-url {raw} must be {why}")));
            }
            if uri.written_port() == Some(0) {
                return Err(input(format!(
                    "--redirect-url {raw} names port 0: leave the port out, and the listener's goes in"
                )));
            }
            Ok(uri)
        }
        // kubelogin's way to change only the host of the default redirect URL.
        (None, Some(host)) => {
            let mut url = default().url().clone();
            if url.set_host(Some(host)).is_err() || !is_loopback_host(&url) {
                return Err(input(format!(
                    "--oidc-redirect-url-hostname {host:?} must be localhost or a loopback address"
                )));
            }
            // The host as given (the parse's is lower-cased, an IP address rewritten), in the
            // default's text.
            let text = format!("{scheme}://{host}{}", url.path());
            RedirectUri::parse(&text).map_err(|why| {
                input(format!(
                    "--oidc-redirect-url-hostname {host:?}: {text} {why}"
                ))
            })
        }
        (None, None) => Ok(default()),
    }
}

/// `--skip-open-browser`, else `--browser-command`, else `$BROWSER`, else the system browser.
fn resolve_browser(args: &TokenArgs, env: &Environment) -> anyhow::Result<BrowserChoice> {
    if args.skip_open_browser.unwrap_or(false) {
        return Ok(BrowserChoice::Skip);
    }
    let command = args
        .browser_command
        .as_deref()
        .or(env.browser.as_deref())
        .filter(|command| !command.trim().is_empty());
    let Some(command) = command else {
        return Ok(BrowserChoice::System);
    };
    let words = shlex::split(command)
        .filter(|words| !words.is_empty())
        .ok_or_else(|| input(format!("browser command {command:?} cannot be parsed")))?;
    Ok(BrowserChoice::Command(words))
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

#[cfg(test)]
mod tests;
