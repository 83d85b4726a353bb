//! The proxy settings of the system, read when no proxy variable is set: on Windows the
//! per-user Internet settings (`HKCU\…\Internet Settings`: `ProxyEnable`, `ProxyServer`,
//! `ProxyOverride`), on macOS the network settings (`SCDynamicStoreCopyProxies`: the HTTPS,
//! HTTP and SOCKS proxies, the exception list, "Exclude simple hostnames"). Elsewhere there are
//! none: Linux desktops keep theirs in the environment.
//!
//! Why not reqwest's `system-proxy` feature (hyper-util): it reads only the `host:port` form of
//! Windows' `ProxyServer` (not `http=…;https=…`, which is what the settings app writes when
//! the protocols differ), ignores `<local>`, and on macOS ignores the exception list, so a host
//! the user excluded would still go through the proxy. The platform reads below only copy the
//! values out (Windows' registry through Microsoft's `windows-registry`, macOS's store through
//! `system-configuration`); what they mean is decided by [`windows_settings`] and
//! [`macos_settings`], which are plain code tested on every platform.
//!
//! A proxy auto-config script (PAC, WPAD) is not run: kubecred has no JavaScript engine, and a
//! credential plugin should not fetch and run code from the network. `-v` says when the system
//! uses one; `HTTPS_PROXY` then names the proxy.

// What the platform calls copy out is read by plain code, built and tested on every platform,
// used on Windows and macOS.
#![cfg_attr(not(any(windows, target_os = "macos")), allow(dead_code))]

use super::no_proxy::NoProxy;

/// The system's proxies as text (`host:port`, possibly `scheme://host:port`), before they are
/// read like a proxy variable.
#[derive(Debug, Clone, Default)]
pub struct SystemSettings {
    /// Where they come from, for messages ("the Windows proxy settings").
    pub origin: &'static str,
    pub https: Option<String>,
    pub http: Option<String>,
    /// A SOCKS proxy for every request that has no HTTP(S) proxy, with its scheme.
    pub socks: Option<String>,
    pub exceptions: NoProxy,
    /// The system names a proxy auto-config script (or WPAD), which kubecred does not run.
    pub auto_config: Option<String>,
}

impl SystemSettings {
    pub fn names_a_proxy(&self) -> bool {
        self.https.is_some() || self.http.is_some() || self.socks.is_some()
    }
}

#[cfg_attr(not(windows), allow(dead_code))]
pub const WINDOWS_ORIGIN: &str = "the Windows proxy settings";
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub const MACOS_ORIGIN: &str = "the macOS proxy settings";

/// The Internet settings' values, as the registry holds them. `server` is `host:port` for
/// every protocol, or `http=host:port;https=host:port;socks=host:port` per protocol (WinINet
/// takes a `socks=` proxy to be SOCKS version 4); `overrides` is the exception list.
#[cfg_attr(not(windows), allow(dead_code))]
pub fn windows_settings(
    enabled: bool,
    server: Option<&str>,
    overrides: Option<&str>,
    auto_config_url: Option<&str>,
) -> SystemSettings {
    let mut settings = SystemSettings {
        origin: WINDOWS_ORIGIN,
        auto_config: auto_config_url
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(str::to_string),
        ..SystemSettings::default()
    };
    let server = server.map(str::trim).filter(|s| !s.is_empty());
    let (true, Some(server)) = (enabled, server) else {
        return settings;
    };
    if server.contains('=') {
        for entry in server.split(';').map(str::trim) {
            let Some((protocol, address)) = entry.split_once('=') else {
                continue;
            };
            let address = address.trim();
            if address.is_empty() {
                continue;
            }
            match protocol.trim().to_ascii_lowercase().as_str() {
                "https" => settings.https = Some(address.to_string()),
                "http" => settings.http = Some(address.to_string()),
                "socks" => settings.socks = Some(with_scheme("socks4", address)),
                _ => {}
            }
        }
    } else {
        settings.https = Some(server.to_string());
        settings.http = Some(server.to_string());
    }
    settings.exceptions = overrides
        .map(NoProxy::parse_system_exceptions)
        .unwrap_or_default();
    settings
}

/// One protocol's entry of the macOS settings: enabled, the host, the port.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub struct MacProxy {
    pub enabled: bool,
    pub host: Option<String>,
    pub port: Option<u16>,
}

#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
impl MacProxy {
    fn address(&self) -> Option<String> {
        let host = self
            .host
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty());
        match (self.enabled, host) {
            (true, Some(host)) => Some(match self.port {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            }),
            _ => None,
        }
    }
}

/// The values of `SCDynamicStoreCopyProxies`. macOS's SOCKS proxy speaks SOCKS5.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn macos_settings(
    https: &MacProxy,
    http: &MacProxy,
    socks: &MacProxy,
    exceptions: &[String],
    exclude_simple_host_names: bool,
    auto_config_url: Option<&str>,
) -> SystemSettings {
    let mut list = NoProxy::parse_system_exceptions(&exceptions.join(";"));
    if exclude_simple_host_names {
        list = list.with_simple_host_names("Exclude simple hostnames");
    }
    SystemSettings {
        origin: MACOS_ORIGIN,
        https: https.address(),
        http: http.address(),
        socks: socks
            .address()
            .map(|address| with_scheme("socks5", &address)),
        exceptions: list,
        auto_config: auto_config_url.map(str::to_string),
    }
}

fn with_scheme(scheme: &str, address: &str) -> String {
    if address.contains("://") {
        address.to_string()
    } else {
        format!("{scheme}://{address}")
    }
}

/// The system's proxy settings, where the platform has any.
pub fn read() -> Option<SystemSettings> {
    platform::read()
}

#[cfg(windows)]
mod platform {
    use super::{SystemSettings, windows_settings};
    use windows_registry::CURRENT_USER;

    const KEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Internet Settings";

    pub fn read() -> Option<SystemSettings> {
        // A key or value that is missing, or not of its type, is a setting that is not made.
        let key = CURRENT_USER.open(KEY).ok();
        let string = |name: &str| key.as_ref()?.get_string(name).ok();
        let enabled = key
            .as_ref()
            .and_then(|key| key.get_u32("ProxyEnable").ok())
            .is_some_and(|enabled| enabled != 0);
        Some(windows_settings(
            enabled,
            string("ProxyServer").as_deref(),
            string("ProxyOverride").as_deref(),
            string("AutoConfigURL").as_deref(),
        ))
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use super::{MacProxy, SystemSettings, macos_settings};
    use system_configuration::core_foundation::array::CFArray;
    use system_configuration::core_foundation::base::{CFType, TCFType};
    use system_configuration::core_foundation::dictionary::CFDictionary;
    use system_configuration::core_foundation::number::CFNumber;
    use system_configuration::core_foundation::string::{CFString, CFStringRef};
    use system_configuration::dynamic_store::SCDynamicStoreBuilder;
    use system_configuration::sys::schema_definitions as keys;

    type Proxies = CFDictionary<CFString, CFType>;

    fn number(proxies: &Proxies, key: CFStringRef) -> Option<i64> {
        proxies
            .find(key)
            .and_then(|value| value.downcast::<CFNumber>())
            .and_then(|number| number.to_i64())
    }

    fn text(proxies: &Proxies, key: CFStringRef) -> Option<String> {
        proxies
            .find(key)
            .and_then(|value| value.downcast::<CFString>())
            .map(|text| text.to_string())
    }

    fn proxy(
        proxies: &Proxies,
        enable: CFStringRef,
        host: CFStringRef,
        port: CFStringRef,
    ) -> MacProxy {
        MacProxy {
            enabled: number(proxies, enable) == Some(1),
            host: text(proxies, host),
            port: number(proxies, port).and_then(|port| u16::try_from(port).ok()),
        }
    }

    fn exceptions(proxies: &Proxies) -> Vec<String> {
        // SAFETY: the key is one of the framework's constant strings.
        let key = unsafe { keys::kSCPropNetProxiesExceptionsList };
        let Some(list) = proxies.find(key).and_then(|v| v.downcast::<CFArray>()) else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|item| {
                // SAFETY: an element of a CFArray is a CF object; wrapping it under the get
                // rule retains it for as long as the wrapper lives.
                let value = unsafe { CFType::wrap_under_get_rule(*item) };
                value.downcast::<CFString>().map(|s| s.to_string())
            })
            .collect()
    }

    pub fn read() -> Option<SystemSettings> {
        let store = SCDynamicStoreBuilder::new("kubecred").build()?;
        let proxies = store.get_proxies()?;
        // SAFETY: the keys are the framework's constant strings, valid for the process's life.
        let settings = unsafe {
            let https = proxy(
                &proxies,
                keys::kSCPropNetProxiesHTTPSEnable,
                keys::kSCPropNetProxiesHTTPSProxy,
                keys::kSCPropNetProxiesHTTPSPort,
            );
            let http = proxy(
                &proxies,
                keys::kSCPropNetProxiesHTTPEnable,
                keys::kSCPropNetProxiesHTTPProxy,
                keys::kSCPropNetProxiesHTTPPort,
            );
            let socks = proxy(
                &proxies,
                keys::kSCPropNetProxiesSOCKSEnable,
                keys::kSCPropNetProxiesSOCKSProxy,
                keys::kSCPropNetProxiesSOCKSPort,
            );
            let simple = number(&proxies, keys::kSCPropNetProxiesExcludeSimpleHostnames) == Some(1);
            let auto_config = (number(&proxies, keys::kSCPropNetProxiesProxyAutoConfigEnable)
                == Some(1))
            .then(|| text(&proxies, keys::kSCPropNetProxiesProxyAutoConfigURLString))
            .flatten();
            macos_settings(
                &https,
                &http,
                &socks,
                &exceptions(&proxies),
                simple,
                auto_config.as_deref(),
            )
        };
        Some(settings)
    }
}

#[cfg(not(any(windows, target_os = "macos")))]
mod platform {
    use super::SystemSettings;

    pub fn read() -> Option<SystemSettings> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn bypassed(settings: &SystemSettings, url: &str) -> bool {
        settings
            .exceptions
            .matching_entry(&Url::parse(url).unwrap())
            .is_some()
    }

    #[test]
    fn windows_one_proxy_for_every_protocol() {
        let settings = windows_settings(
            true,
            Some("proxy.corp:8080"),
            Some("*.corp.example;<local>"),
            None,
        );
        assert_eq!(settings.https.as_deref(), Some("proxy.corp:8080"));
        assert_eq!(settings.http.as_deref(), Some("proxy.corp:8080"));
        assert!(bypassed(&settings, "https://idp.corp.example/"));
        assert!(bypassed(&settings, "https://intranet/"));
        assert!(!bypassed(&settings, "https://idp.example/"));
    }

    #[test]
    fn windows_a_proxy_per_protocol() {
        let settings = windows_settings(
            true,
            Some("http=web.corp:80; https=secure.corp:8443;ftp=ftp.corp:21;socks=socks.corp:1080"),
            None,
            None,
        );
        assert_eq!(settings.https.as_deref(), Some("secure.corp:8443"));
        assert_eq!(settings.http.as_deref(), Some("web.corp:80"));
        assert_eq!(settings.socks.as_deref(), Some("socks4://socks.corp:1080"));
        // Only a SOCKS proxy: that one, for everything.
        let socks_only = windows_settings(true, Some("socks=socks.corp:1080"), None, None);
        assert!(socks_only.https.is_none() && socks_only.names_a_proxy());
    }

    #[test]
    fn windows_disabled_or_auto_config_only() {
        let off = windows_settings(false, Some("proxy.corp:8080"), None, None);
        assert!(!off.names_a_proxy());
        let pac = windows_settings(false, None, None, Some("http://wpad.corp/proxy.pac"));
        assert!(!pac.names_a_proxy());
        assert_eq!(
            pac.auto_config.as_deref(),
            Some("http://wpad.corp/proxy.pac")
        );
    }

    #[test]
    fn macos_proxies_exceptions_and_simple_host_names() {
        let on = |host: &str, port| MacProxy {
            enabled: true,
            host: Some(host.into()),
            port: Some(port),
        };
        let settings = macos_settings(
            &on("secure.corp", 3128),
            &MacProxy::default(),
            &on("socks.corp", 1080),
            &["*.local".into(), "169.254/16".into()],
            true,
            None,
        );
        assert_eq!(settings.https.as_deref(), Some("secure.corp:3128"));
        assert_eq!(settings.http, None);
        assert_eq!(settings.socks.as_deref(), Some("socks5://socks.corp:1080"));
        assert!(bypassed(&settings, "https://printer.local/"));
        assert!(bypassed(&settings, "https://169.254.1.1/"));
        assert!(bypassed(&settings, "https://gateway/"));
        assert!(!bypassed(&settings, "https://idp.example/"));
        // A proxy that is set up but switched off is no proxy.
        let off = MacProxy {
            enabled: false,
            ..on("secure.corp", 3128)
        };
        assert!(off.address().is_none());
    }
}
