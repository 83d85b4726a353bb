//! Which proxy a request to the provider goes through, decided per request the way curl decides
//! it, and said at `-v`.
//!
//! The environment first: `https_proxy`/`HTTPS_PROXY` for https URLs, `http_proxy`/`HTTP_PROXY`
//! for http ones (issuers on loopback), `all_proxy`/`ALL_PROXY` for both, the lower-case name
//! first as curl reads them; `no_proxy`/`NO_PROXY` lists the hosts that go direct
//! (`no_proxy.rs`). A proxy is `http://`, `https://` (TLS to the proxy), `socks4://`,
//! `socks4a://`, `socks5://` (names resolved here) or `socks5h://` (names resolved by the proxy,
//! as `ssh -D` needs), with an optional `USER:PASSWORD@` (percent-encoded); without a scheme it
//! is `http://`, without a port the scheme's (80, 443, SOCKS 1080). When no proxy variable is
//! set, the Windows or macOS system settings (`system.rs`). Loopback is not exempt, as in curl:
//! `NO_PROXY=localhost,127.0.0.1` sends a local provider direct.
//!
//! A setting that cannot work — a scheme kubecred does not know, a URL that does not parse —
//! fails when the client is built, before any request, naming the variable: no retry could make
//! it work. Its credentials are never shown.
//!
//! Why not reqwest's own proxy support (it reads the same variables): its `NO_PROXY` matching is
//! not curl's (see `no_proxy.rs`), it drops a proxy whose scheme it does not know without a word
//! (the request then goes direct), and it cannot say which proxy a request used, for `-v` and
//! for the error. So the route of each request is decided here, and reqwest is handed only the
//! proxy to use (`reqwest::Proxy::custom`); the tunnel itself (CONNECT, SOCKS) is reqwest's.
//! When it fails, `probe.rs` asks the proxy what went wrong.

mod no_proxy;
pub(super) mod probe;
mod system;

use crate::config::ProxyEnvironment;
use crate::env_vars;
use crate::error::{Exit, fail};
use crate::secret::Secret;
use no_proxy::NoProxy;
use std::fmt;
use url::Url;

/// The kinds of proxy reqwest can go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Http,
    /// An HTTP proxy spoken to over TLS.
    Https,
    Socks4,
    /// SOCKS4 with the host name resolved by the proxy.
    Socks4a,
    Socks5,
    /// SOCKS5 with the host name resolved by the proxy (`ssh -D`, a jump host's DNS).
    Socks5h,
}

impl ProxyKind {
    fn from_scheme(scheme: &str) -> Option<ProxyKind> {
        Some(match scheme {
            "http" => ProxyKind::Http,
            "https" => ProxyKind::Https,
            "socks4" => ProxyKind::Socks4,
            "socks4a" => ProxyKind::Socks4a,
            "socks5" => ProxyKind::Socks5,
            "socks5h" => ProxyKind::Socks5h,
            _ => return None,
        })
    }

    pub fn scheme(self) -> &'static str {
        match self {
            ProxyKind::Http => "http",
            ProxyKind::Https => "https",
            ProxyKind::Socks4 => "socks4",
            ProxyKind::Socks4a => "socks4a",
            ProxyKind::Socks5 => "socks5",
            ProxyKind::Socks5h => "socks5h",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            ProxyKind::Http => 80,
            ProxyKind::Https => 443,
            _ => 1080,
        }
    }

    pub fn is_socks(self) -> bool {
        !matches!(self, ProxyKind::Http | ProxyKind::Https)
    }
}

/// One proxy, and where it was set.
#[derive(Clone)]
pub struct Proxy {
    pub kind: ProxyKind,
    /// As a URL spells it (an IPv6 address in brackets).
    pub host: String,
    pub port: u16,
    /// User name and password, percent-decoded.
    pub credentials: Option<(String, Secret)>,
    /// What reqwest connects through, credentials included.
    url: Url,
    /// The variable it came from (`HTTPS_PROXY`), or the system settings.
    pub origin: &'static str,
}

impl Proxy {
    /// "the proxy http://127.0.0.1:3128 (from HTTPS_PROXY)": for every message about it.
    pub fn named(&self) -> String {
        let what = if self.kind.is_socks() {
            "the SOCKS proxy"
        } else {
            "the proxy"
        };
        format!("{what} {self} (from {})", self.origin)
    }
}

/// `scheme://host:port`, never the credentials.
impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.kind.scheme(), self.host, self.port)
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Proxy({self} from {})", self.origin)
    }
}

/// The proxies of one run: for https and http URLs, and the hosts that go direct.
#[derive(Debug, Default)]
pub struct Proxies {
    https: Option<Proxy>,
    http: Option<Proxy>,
    /// `NO_PROXY` (with the name it was read from), and the system settings' exceptions.
    no_proxy: Vec<(NoProxy, &'static str)>,
}

/// How one request goes out.
#[derive(Debug, Clone, Copy)]
pub enum Route<'a> {
    /// No proxy is set for the URL's scheme.
    Direct,
    /// A proxy is set, but this entry of that list sends the host direct.
    Bypassed {
        entry: &'a str,
        list: &'static str,
    },
    Through(&'a Proxy),
}

impl Proxies {
    /// Reads the proxy variables (and, when none is set and `proxy.system_settings` allows it,
    /// the system's settings). An unusable setting is an input error naming it.
    pub fn read(proxy: &ProxyEnvironment) -> anyhow::Result<Proxies> {
        Self::read_with(proxy, system::read)
    }

    fn read_with(
        proxy: &ProxyEnvironment,
        system: impl FnOnce() -> Option<system::SystemSettings>,
    ) -> anyhow::Result<Proxies> {
        let first_set = |names: &[&'static str; 2]| {
            names.iter().find_map(|name| {
                proxy
                    .variables
                    .iter()
                    .find(|(set, value)| set == name && !value.expose().trim().is_empty())
                    .map(|(name, value)| (*name, value.expose()))
            })
        };
        let mut no_proxy = Vec::new();
        if let Some((name, value)) = first_set(&env_vars::NO_PROXY) {
            no_proxy.push((NoProxy::parse(value), name));
        }
        let https = first_set(&env_vars::HTTPS_PROXY).or(first_set(&env_vars::ALL_PROXY));
        let http = first_set(&env_vars::HTTP_PROXY).or(first_set(&env_vars::ALL_PROXY));
        if https.is_some() || http.is_some() {
            return Ok(Proxies {
                https: https.map(|(name, value)| parse(value, name)).transpose()?,
                http: http.map(|(name, value)| parse(value, name)).transpose()?,
                no_proxy,
            });
        }
        if !proxy.system_settings {
            return Ok(Proxies::default());
        }
        let Some(settings) = system() else {
            return Ok(Proxies::default());
        };
        if let Some(script) = &settings.auto_config {
            crate::debug!(
                1,
                "{} name a proxy auto-config script ({}), which kubecred does not run; set HTTPS_PROXY if requests must go through a proxy",
                settings.origin,
                crate::text::printable_brief(script, 200)
            );
        }
        if !settings.names_a_proxy() {
            return Ok(Proxies::default());
        }
        let origin = settings.origin;
        let https = settings.https.as_ref().or(settings.socks.as_ref());
        let http = settings.http.as_ref().or(settings.socks.as_ref());
        no_proxy.push((settings.exceptions, origin));
        Ok(Proxies {
            https: https.map(|value| parse(value, origin)).transpose()?,
            http: http.map(|value| parse(value, origin)).transpose()?,
            no_proxy,
        })
    }

    /// Whether any request could go through a proxy.
    pub fn any(&self) -> bool {
        self.https.is_some() || self.http.is_some()
    }

    /// How a request to `url` goes out.
    pub fn route(&self, url: &Url) -> Route<'_> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        };
        let Some(proxy) = proxy else {
            return Route::Direct;
        };
        for (list, name) in &self.no_proxy {
            if let Some(entry) = list.matching_entry(url) {
                return Route::Bypassed { entry, list: name };
            }
        }
        Route::Through(proxy)
    }

    /// The proxy URL (credentials included) for reqwest's connector, or none: direct.
    pub fn proxy_url_for(&self, url: &Url) -> Option<Url> {
        match self.route(url) {
            Route::Through(proxy) => Some(proxy.url.clone()),
            _ => None,
        }
    }
}

impl Route<'_> {
    /// The `-v` line's end: "through the proxy … (from HTTPS_PROXY)", "direct: NO_PROXY
    /// matches (entry .corp)".
    pub fn describe(&self) -> String {
        match self {
            Route::Direct => "direct (no proxy is set for it)".into(),
            Route::Bypassed { entry, list } => {
                let entry = crate::text::printable_brief(entry, 100);
                if is_a_variable(list) {
                    format!("direct: {list} matches its host (entry {entry})")
                } else {
                    format!("direct: the exceptions of {list} match its host (entry {entry})")
                }
            }
            Route::Through(proxy) => format!("through {}", proxy.named()),
        }
    }
}

/// Whether a setting came from a variable (`HTTPS_PROXY`), rather than from the system settings
/// ("the Windows proxy settings"): messages then name it as such, and credentials can go there.
pub fn is_a_variable(origin: &str) -> bool {
    !origin.contains(' ')
}

/// Reads one proxy setting, as curl does: no scheme means `http://`, no port the scheme's.
fn parse(raw: &str, origin: &'static str) -> anyhow::Result<Proxy> {
    let raw = raw.trim();
    let shown = || format!("{origin}={}", without_credentials(raw));
    let with_scheme = if raw.contains("://") {
        raw.to_string()
    } else {
        format!("http://{raw}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|err| {
        fail(
            Exit::Input,
            format!(
                "{} is not a proxy URL ({err}); write it as http://HOST:PORT (or https://, socks5://, socks5h://), or unset it",
                shown()
            ),
        )
    })?;
    let kind = ProxyKind::from_scheme(url.scheme()).ok_or_else(|| {
        fail(
            Exit::Input,
            format!(
                "{} names a {} proxy, which kubecred cannot use; use an http://, https://, socks4://, socks4a://, socks5:// or socks5h:// proxy, or unset it",
                shown(),
                crate::text::printable_brief(url.scheme(), 40)
            ),
        )
    })?;
    let host = match url.host() {
        Some(url::Host::Domain(name)) if !name.is_empty() => name.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        _ => {
            return Err(fail(
                Exit::Input,
                format!(
                    "{} names no proxy host; write it as {}://HOST:PORT, or unset it",
                    shown(),
                    kind.scheme()
                ),
            ));
        }
    };
    let port = url.port().unwrap_or(kind.default_port());
    // Explicit for every kind: the connector's default port is not always the scheme's.
    let _ = url.set_port(Some(port));
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let credentials = (!url.username().is_empty() || url.password().is_some()).then(|| {
        (
            decode(url.username()),
            Secret::new(decode(url.password().unwrap_or(""))),
        )
    });
    url.set_path("");
    url.set_query(None);
    url.set_fragment(None);
    Ok(Proxy {
        kind,
        host,
        port,
        credentials,
        url,
        origin,
    })
}

/// A proxy setting as the user wrote it, with any `USER:PASSWORD@` replaced by `****@`, also
/// without a scheme (`user:pw@proxy:3128`, which curl reads as http).
fn without_credentials(raw: &str) -> String {
    let shown = if raw.contains("://") {
        crate::text::redact_userinfo(raw).into_owned()
    } else {
        let redacted = crate::text::redact_userinfo(&format!("http://{raw}")).into_owned();
        redacted["http://".len()..].to_string()
    };
    crate::text::printable_brief(&shown, 200).into_owned()
}

#[cfg(test)]
mod tests;
