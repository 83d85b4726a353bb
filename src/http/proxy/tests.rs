//! Tests of proxy selection: which variable wins, what a request's route is, and unusable
//! settings refused before any request without showing their credentials.

use super::*;
use crate::error::{exit_code_of, one_line};

fn environment(variables: &[(&'static str, &str)]) -> ProxyEnvironment {
    ProxyEnvironment {
        variables: variables
            .iter()
            .map(|(name, value)| (*name, Secret::new(*value)))
            .collect(),
        system_settings: false,
    }
}

fn proxies(variables: &[(&'static str, &str)]) -> Proxies {
    Proxies::read(&environment(variables)).unwrap()
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

fn through(proxies: &Proxies, target: &str) -> Option<String> {
    match proxies.route(&url(target)) {
        Route::Through(proxy) => Some(format!("{proxy} from {}", proxy.origin)),
        _ => None,
    }
}

#[test]
fn the_variable_for_the_scheme_then_all_proxy_lower_case_first() {
    let set = proxies(&[
        ("HTTPS_PROXY", "http://upper:3128"),
        ("https_proxy", "http://lower:3128"),
        ("ALL_PROXY", "socks5h://all:1080"),
    ]);
    assert_eq!(
        through(&set, "https://idp.example/").as_deref(),
        Some("http://lower:3128 from https_proxy")
    );
    assert_eq!(
        through(&set, "http://127.0.0.1:8080/").as_deref(),
        Some("socks5h://all:1080 from ALL_PROXY")
    );
    let upper_only = proxies(&[("HTTPS_PROXY", "proxy.corp:3128")]);
    assert_eq!(
        through(&upper_only, "https://idp.example/").as_deref(),
        Some("http://proxy.corp:3128 from HTTPS_PROXY")
    );
    // An empty variable is an unset one.
    let empty = proxies(&[("https_proxy", ""), ("HTTPS_PROXY", "http://p:1")]);
    assert_eq!(
        through(&empty, "https://idp.example/").as_deref(),
        Some("http://p:1 from HTTPS_PROXY")
    );
    assert!(!proxies(&[("NO_PROXY", "*")]).any());
}

#[test]
fn default_ports_and_credentials_kept_apart_from_the_name() {
    let set = proxies(&[
        ("HTTPS_PROXY", "http://alice:p%40ss@proxy.corp"),
        ("HTTP_PROXY", "socks5://[::1]"),
    ]);
    let Route::Through(https) = set.route(&url("https://idp.example/")) else {
        panic!("a proxy expected")
    };
    assert_eq!(https.to_string(), "http://proxy.corp:80");
    let (user, password) = https.credentials.as_ref().unwrap();
    assert_eq!((user.as_str(), password.expose()), ("alice", "p@ss"));
    assert!(!format!("{https:?} {}", https.named()).contains("p@ss"));
    // reqwest gets the credentials, and the port explicitly.
    assert_eq!(
        set.proxy_url_for(&url("https://idp.example/"))
            .unwrap()
            .as_str(),
        "http://alice:p%40ss@proxy.corp/"
    );
    let Route::Through(socks) = set.route(&url("http://localhost:8080/")) else {
        panic!("a proxy expected")
    };
    assert_eq!(socks.to_string(), "socks5://[::1]:1080");
    assert_eq!(
        socks.named(),
        "the SOCKS proxy socks5://[::1]:1080 (from HTTP_PROXY)"
    );
}

#[test]
fn no_proxy_sends_matching_hosts_direct_and_says_which_entry() {
    let set = proxies(&[
        ("HTTPS_PROXY", "http://proxy.corp:3128"),
        ("no_proxy", "localhost,.corp.example"),
    ]);
    match set.route(&url("https://idp.corp.example/")) {
        Route::Bypassed { entry, list } => {
            assert_eq!((entry, list), (".corp.example", "no_proxy"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        set.route(&url("https://idp.corp.example/")).describe(),
        "direct: no_proxy matches its host (entry .corp.example)"
    );
    assert!(through(&set, "https://idp.example/").is_some());
    assert!(set.proxy_url_for(&url("https://localhost:8443/")).is_none());
    // No proxy for the scheme: direct, whatever NO_PROXY says.
    assert!(matches!(
        set.route(&url("http://127.0.0.1/")),
        Route::Direct
    ));
}

#[test]
fn unusable_settings_fail_at_once_naming_the_variable_never_the_password() {
    for (value, expected) in [
        (
            "ftp://alice:hunter2@proxy.corp:21",
            "names a ftp proxy, which kubecred cannot use",
        ),
        (
            "http://alice:hunter2@proxy.corp:99999",
            "is not a proxy URL",
        ),
        ("alice:hunter2@proxy.corp:notaport", "is not a proxy URL"),
        ("http://", "is not a proxy URL"),
    ] {
        let err = Proxies::read(&environment(&[("HTTPS_PROXY", value)])).unwrap_err();
        let line = one_line(&err);
        assert_eq!(exit_code_of(&err), Exit::Input, "{line}");
        assert!(line.starts_with("HTTPS_PROXY="), "{line}");
        assert!(line.contains(expected), "{value}: {line}");
        assert!(!line.contains("hunter2"), "{line}");
    }
    // ALL_PROXY serves both schemes: named once as what it is.
    let err = Proxies::read(&environment(&[("ALL_PROXY", "gopher://proxy:70")])).unwrap_err();
    assert!(one_line(&err).starts_with("ALL_PROXY=gopher://proxy:70 names a gopher proxy"));
}

#[test]
fn shown_without_credentials_with_or_without_a_scheme() {
    assert_eq!(
        without_credentials("http://alice:pw@proxy:3128/x"),
        "http://****@proxy:3128/x"
    );
    assert_eq!(
        without_credentials("alice:pw@proxy:3128"),
        "****@proxy:3128"
    );
    assert_eq!(without_credentials("proxy:3128"), "proxy:3128");
}

#[test]
fn the_system_settings_only_when_no_variable_names_a_proxy() {
    let windows = || {
        Some(system::windows_settings(
            true,
            Some("http=web.corp:80;https=secure.corp:8443"),
            Some("*.corp.example;<local>"),
            None,
        ))
    };
    let allowed = ProxyEnvironment {
        system_settings: true,
        ..environment(&[("NO_PROXY", "idp.example")])
    };
    let set = Proxies::read_with(&allowed, windows).unwrap();
    assert_eq!(
        through(&set, "https://login.example/").as_deref(),
        Some("http://secure.corp:8443 from the Windows proxy settings")
    );
    // Both lists send hosts direct: NO_PROXY and the system's exceptions.
    assert!(through(&set, "https://idp.example/").is_none());
    assert_eq!(
        set.route(&url("https://idp.corp.example/")).describe(),
        "direct: the exceptions of the Windows proxy settings match its host (entry *.corp.example)"
    );
    assert!(through(&set, "https://idp.corp.example/").is_none());
    assert!(through(&set, "https://intranet/").is_none());
    // A variable wins over the system; a test's config reads no system settings.
    let variable = ProxyEnvironment {
        system_settings: true,
        ..environment(&[("HTTPS_PROXY", "http://env:3128")])
    };
    let set = Proxies::read_with(&variable, windows).unwrap();
    assert_eq!(
        through(&set, "https://login.example/").as_deref(),
        Some("http://env:3128 from HTTPS_PROXY")
    );
    let set = Proxies::read_with(&environment(&[]), windows).unwrap();
    assert!(!set.any());
}
