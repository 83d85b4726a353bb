//! `NO_PROXY`: the hosts a request reaches directly, matched the way curl matches them
//! (<https://curl.se/libcurl/c/CURLOPT_NOPROXY.html>, lib/noproxy.c), and the exception lists
//! of the Windows and macOS proxy settings.
//!
//! Why our own matcher rather than reqwest's (hyper-util's): hyper-util's differs from curl's
//! where it matters for a corporate `NO_PROXY` — a `*` anywhere in the list turns every proxy
//! off (curl: only a value that is `*` alone), trailing dots are not ignored — and it could not
//! tell `-v` which entry matched. curl's rules, as kept here:
//!
//! - The value `*` alone matches every host.
//! - Entries are separated by commas; blanks around them are ignored.
//! - A host name entry matches that name and every name below it, case-insensitively:
//!   `example.com` and `.example.com` both match `example.com` and `www.example.com`, never
//!   `notexample.com`. One leading and one trailing dot of the entry, and a trailing dot of the
//!   host, are ignored. The port of the URL does not matter.
//! - An IP address entry matches that address; with `/BITS` (CIDR) the network. An IPv6 entry is
//!   written without brackets (`::1`). IP entries match only hosts written as IP addresses,
//!   and name entries only names: nothing is resolved.
//!
//! Where curl's reading makes an entry match nothing, kubecred gives it the meaning other tools
//! give it, so that what curl sends direct, kubecred does too, and an entry that curl would
//! silently ignore does what its author meant:
//!
//! - `host:port` (or `[v6]:port`) matches that host on that port only, as Go and Python read it
//!   (curl compares the whole entry with the host name, which has no port);
//! - `*.example.com` is `.example.com` (the Windows spelling; curl takes the `*` literally);
//! - `[::1]` with brackets is `::1`;
//! - blanks also separate entries (curl stops reading at a blank that is not before a comma);
//! - `/0` matches every address of its family (curl compares the address alone).

// The system settings' lists are read on Windows and macOS only; their parsers are plain code,
// built and tested on every platform.
#![cfg_attr(not(any(windows, target_os = "macos")), allow(dead_code))]

use ipnet::IpNet;
use std::net::IpAddr;
use url::{Host, Url};

/// The hosts that go direct: `NO_PROXY`, and the exceptions of the system proxy settings.
#[derive(Debug, Clone, Default)]
pub struct NoProxy {
    /// The value was `*`: every host goes direct.
    everything: bool,
    rules: Vec<Rule>,
}

/// One entry, with the text it was read from (for `-v`: "NO_PROXY matches … (entry .corp)").
#[derive(Debug, Clone)]
struct Rule {
    pattern: Pattern,
    port: Option<u16>,
    written: String,
}

#[derive(Debug, Clone)]
enum Pattern {
    /// A host name and the names below it; lower case, without leading or trailing dots.
    Domain(String),
    /// An IP address (a network of one) or a network.
    Network(IpNet),
    /// A pattern of the system settings with `*` standing for any characters (`10.*`,
    /// `*.corp.example`, `*internal*`), matched against the whole host; lower case.
    Wildcard(String),
    /// Host names without a dot (Windows' `<local>`, macOS's "Exclude simple hostnames").
    SimpleHostNames,
}

/// What a request's host is, as the URL spells it.
enum Target {
    Name(String),
    Ip(IpAddr),
}

impl NoProxy {
    /// Reads a `NO_PROXY` value.
    pub fn parse(value: &str) -> NoProxy {
        let value = value.trim();
        if value == "*" {
            return NoProxy {
                everything: true,
                rules: Vec::new(),
            };
        }
        let rules = value
            .split(|c: char| c == ',' || c.is_ascii_whitespace())
            .filter(|entry| !entry.is_empty())
            .filter_map(Rule::from_no_proxy_entry)
            .collect();
        NoProxy {
            everything: false,
            rules,
        }
    }

    /// Reads an exception list of the system settings: `;`- or comma-separated patterns with
    /// `*` wildcards (Windows' `ProxyOverride`, macOS's `ExceptionsList`), `<local>`, and
    /// macOS's short networks (`169.254/16`).
    pub fn parse_system_exceptions(value: &str) -> NoProxy {
        let rules = value
            .split(|c: char| c == ';' || c == ',' || c.is_ascii_whitespace())
            .filter(|entry| !entry.is_empty())
            .filter_map(Rule::from_system_entry)
            .collect();
        NoProxy {
            everything: false,
            rules,
        }
    }

    /// Host names without a dot go direct (macOS's "Exclude simple hostnames").
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    pub fn with_simple_host_names(mut self, written: &str) -> NoProxy {
        self.rules.push(Rule {
            pattern: Pattern::SimpleHostNames,
            port: None,
            written: written.to_string(),
        });
        self
    }

    /// The entry that sends `url` direct (`*` for the value `*`), if one does.
    pub fn matching_entry(&self, url: &Url) -> Option<&str> {
        if self.everything {
            return Some("*");
        }
        let target = match url.host()? {
            Host::Domain(name) => {
                let name = name.strip_suffix('.').unwrap_or(name);
                Target::Name(name.to_ascii_lowercase())
            }
            Host::Ipv4(ip) => Target::Ip(IpAddr::V4(ip)),
            Host::Ipv6(ip) => Target::Ip(IpAddr::V6(ip)),
        };
        let port = url.port_or_known_default();
        self.rules
            .iter()
            .find(|rule| {
                rule.port.is_none_or(|wanted| Some(wanted) == port) && rule.matches(&target)
            })
            .map(|rule| rule.written.as_str())
    }
}

impl Rule {
    fn from_no_proxy_entry(entry: &str) -> Option<Rule> {
        let written = entry.to_string();
        let (host, port) = split_port(entry);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Some(network) = parse_network(host) {
            return Some(Rule {
                pattern: Pattern::Network(network),
                port,
                written,
            });
        }
        let name = host.strip_prefix("*.").unwrap_or(host);
        let name = name.strip_suffix('.').unwrap_or(name);
        let name = name.strip_prefix('.').unwrap_or(name);
        if name.is_empty() {
            return None;
        }
        Some(Rule {
            pattern: Pattern::Domain(name.to_ascii_lowercase()),
            port,
            written,
        })
    }

    fn from_system_entry(entry: &str) -> Option<Rule> {
        let written = entry.to_string();
        if entry.eq_ignore_ascii_case("<local>") {
            return Some(Rule {
                pattern: Pattern::SimpleHostNames,
                port: None,
                written,
            });
        }
        // Windows lets an entry carry a scheme ("https://*.corp"); it says nothing about hosts.
        let entry = entry.split_once("://").map_or(entry, |(_, rest)| rest);
        let host = entry.trim_start_matches('[').trim_end_matches(']');
        if let Some(network) = parse_network(host).or_else(|| parse_short_network(host)) {
            return Some(Rule {
                pattern: Pattern::Network(network),
                port: None,
                written,
            });
        }
        Some(Rule {
            pattern: Pattern::Wildcard(host.to_ascii_lowercase()),
            port: None,
            written,
        })
    }

    fn matches(&self, target: &Target) -> bool {
        match (&self.pattern, target) {
            (Pattern::Domain(domain), Target::Name(name)) => {
                name == domain
                    || name
                        .strip_suffix(domain.as_str())
                        .is_some_and(|above| above.ends_with('.'))
            }
            // An address of the other family is in no network of this one.
            (Pattern::Network(network), Target::Ip(ip)) => network.contains(ip),
            (Pattern::Wildcard(pattern), Target::Name(name)) => wildcard_match(pattern, name),
            (Pattern::Wildcard(pattern), Target::Ip(ip)) => {
                wildcard_match(pattern, &ip.to_string())
            }
            (Pattern::SimpleHostNames, Target::Name(name)) => !name.contains('.'),
            _ => false,
        }
    }
}

/// `host:port` → (`host`, port); `[v6]:port` likewise. An IPv6 address without brackets has
/// no port (its colons are its own).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (host, port);
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

/// `10.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`: an address is the network of itself alone. The
/// address is read by std, as curl's `inet_pton` reads it (ipnet's own parser would take
/// `010.0.0.1`).
fn parse_network(text: &str) -> Option<IpNet> {
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(bits)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().ok()?;
    match bits {
        None => Some(IpNet::from(address)),
        Some(bits) => IpNet::new(address, bits.parse().ok()?).ok(),
    }
}

/// macOS writes networks with the octets it needs only: `169.254/16`, `10/8`.
fn parse_short_network(text: &str) -> Option<IpNet> {
    let (octets, bits) = text.split_once('/')?;
    let mut parts: Vec<&str> = octets.split('.').collect();
    if parts.len() >= 4 || parts.iter().any(|part| part.parse::<u8>().is_err()) {
        return None;
    }
    parts.resize(4, "0");
    parse_network(&format!("{}/{bits}", parts.join(".")))
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters (both lower
/// case).
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let (pattern, text) = (pattern.as_bytes(), text.as_bytes());
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and how much of the text it has taken so far.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_at, taken)) = star {
            p = star_at + 1;
            t = taken + 1;
            star = Some((star_at, taken + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bypassed(no_proxy: &str, url: &str) -> bool {
        NoProxy::parse(no_proxy)
            .matching_entry(&Url::parse(url).unwrap())
            .is_some()
    }

    /// The examples of curl's documentation (CURLOPT_NOPROXY, curl.1's NO_PROXY) and the cases of
    /// its lib/noproxy.c, each as curl decides it.
    #[test]
    fn curls_documented_rules() {
        // "ample.com would match ample.com, ample.com:80, and www.ample.com, but not
        // www.example.com or ample.com.org."
        for url in [
            "https://ample.com/",
            "http://ample.com:80/",
            "https://ample.com:8443/",
            "https://www.ample.com/",
        ] {
            assert!(bypassed("ample.com", url), "{url}");
        }
        for url in ["https://www.example.com/", "https://ample.com.org/"] {
            assert!(!bypassed("ample.com", url), "{url}");
        }
        // A leading dot is ignored: .example.com matches the domain itself and below.
        assert!(bypassed(".example.com", "https://example.com/"));
        assert!(bypassed(".example.com", "https://idp.example.com/"));
        assert!(!bypassed(".example.com", "https://notexample.com/"));
        // Trailing dots, of the entry and of the host, are ignored; case does not matter.
        assert!(bypassed("example.com.", "https://www.example.com/"));
        assert!(bypassed("example.com", "https://www.example.com./"));
        assert!(bypassed("EXAMPLE.com", "https://Idp.Example.COM/"));
        // "*" alone is every host; "*" among other entries is no wildcard.
        assert!(bypassed("*", "https://anything.example/"));
        assert!(bypassed(" * ", "https://10.1.2.3/"));
        assert!(!bypassed("other.example,*", "https://anything.example/"));
        // Comma-separated, blanks around entries ignored, empty entries skipped.
        assert!(bypassed("a.example , ,b.example", "https://b.example/"));
        // IPs: exact, CIDR (since curl 7.86), IPv6 without brackets.
        assert!(bypassed("192.168.1.10", "https://192.168.1.10/"));
        assert!(!bypassed("192.168.1.10", "https://192.168.1.11/"));
        assert!(bypassed("192.168.0.0/16", "https://192.168.44.7/"));
        assert!(!bypassed("192.168.0.0/16", "https://192.169.0.1/"));
        assert!(bypassed("example.com,::1,localhost", "https://[::1]:8443/"));
        assert!(bypassed("fd00::/8", "https://[fd12:3456::1]/"));
        assert!(!bypassed("fd00::/8", "https://[fe80::1]/"));
        // IP entries match IP hosts only, names match names only: nothing is resolved.
        assert!(!bypassed("127.0.0.1", "https://localhost/"));
        assert!(!bypassed("localhost", "https://127.0.0.1/"));
        assert!(bypassed("localhost", "http://localhost:8080/"));
        // A network that does not parse matches nothing (curl: bits over 32 are rejected).
        assert!(!bypassed("10.0.0.0/33", "https://10.0.0.1/"));
        // Nor does an address with a leading zero, which inet_pton refuses.
        assert!(!bypassed("010.0.0.0/8", "https://10.0.0.1/"));
        assert!(!bypassed("", "https://example.com/"));
    }

    /// Entries curl reads as matching nothing, read as other tools read them.
    #[test]
    fn entries_curl_ignores_mean_what_their_authors_meant() {
        // host:port: that port only.
        assert!(bypassed("idp.corp:8443", "https://idp.corp:8443/"));
        assert!(!bypassed("idp.corp:8443", "https://idp.corp/"));
        assert!(bypassed("10.0.0.1:443", "https://10.0.0.1/"));
        assert!(bypassed("[::1]:8443", "https://[::1]:8443/"));
        assert!(!bypassed("[::1]:8443", "https://[::1]:9443/"));
        // *.example.com is .example.com.
        assert!(bypassed("*.example.com", "https://idp.example.com/"));
        assert!(bypassed("*.example.com", "https://example.com/"));
        // Brackets around IPv6, blanks as separators, /0 as "every address of the family".
        assert!(bypassed("[::1]", "https://[::1]/"));
        assert!(bypassed("a.example b.example", "https://b.example/"));
        assert!(bypassed("0.0.0.0/0", "https://203.0.113.9/"));
        assert!(!bypassed("0.0.0.0/0", "https://[2001:db8::1]/"));
    }

    #[test]
    fn the_matching_entry_is_named_as_written() {
        let no_proxy = NoProxy::parse("localhost, .Corp.example ,10.0.0.0/8");
        let entry = |url: &str| {
            no_proxy
                .matching_entry(&Url::parse(url).unwrap())
                .map(str::to_string)
        };
        assert_eq!(
            entry("https://idp.corp.example/").as_deref(),
            Some(".Corp.example")
        );
        assert_eq!(entry("https://10.2.3.4/").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(entry("https://idp.example/"), None);
    }

    #[test]
    fn system_exception_lists() {
        // Windows' ProxyOverride: ';'-separated, wildcards anywhere, <local>.
        let windows = NoProxy::parse_system_exceptions("*.corp.example;10.*;<local>;*internal*");
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(
            windows
                .matching_entry(&url("https://idp.corp.example/"))
                .is_some()
        );
        assert!(
            windows
                .matching_entry(&url("https://10.20.30.40/"))
                .is_some()
        );
        assert!(windows.matching_entry(&url("https://intranet/")).is_some());
        assert!(
            windows
                .matching_entry(&url("https://my-internal-idp.example/"))
                .is_some()
        );
        assert!(
            windows
                .matching_entry(&url("https://idp.example/"))
                .is_none()
        );
        assert!(windows.matching_entry(&url("https://110.1.1.1/")).is_none());
        // A plain system entry is that host only (WinINet compares the whole host).
        let exact = NoProxy::parse_system_exceptions("idp.example");
        assert!(exact.matching_entry(&url("https://idp.example/")).is_some());
        assert!(
            exact
                .matching_entry(&url("https://www.idp.example/"))
                .is_none()
        );
        // macOS's ExceptionsList: short networks.
        let mac = NoProxy::parse_system_exceptions("*.local, 169.254/16, 10/8");
        assert!(mac.matching_entry(&url("https://169.254.3.4/")).is_some());
        assert!(mac.matching_entry(&url("https://10.9.8.7/")).is_some());
        assert!(mac.matching_entry(&url("https://printer.local/")).is_some());
        assert!(mac.matching_entry(&url("https://169.255.0.1/")).is_none());
        // "Exclude simple hostnames".
        let simple = NoProxy::parse("idp.example").with_simple_host_names("simple host names");
        assert_eq!(
            simple.matching_entry(&url("https://gateway/")),
            Some("simple host names")
        );
        assert!(
            simple
                .matching_entry(&url("https://idp.example/"))
                .is_some()
        );
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("a*c", "abbbc"));
        assert!(wildcard_match("*.corp", "x.y.corp"));
        assert!(!wildcard_match("*.corp", "corp"));
        assert!(wildcard_match("*a*b*", "xxaxxbxx"));
        assert!(!wildcard_match("a*b", "ac"));
    }
}
