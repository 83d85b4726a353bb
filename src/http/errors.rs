//! Why a request to the provider failed, in one line with the next step.
//!
//! The cause is found by walking the error's source chain and matching types — reqwest's
//! `is_timeout`, rustls's certificate errors, `std::io::ErrorKind`, and our own resolver's
//! [`DnsError`] — never by searching the text of a dependency's message, whose wording may change
//! in any release. Only the innermost message is ever quoted, as detail.

use super::dns::DnsError;
use super::proxy::probe::{ProxyProblem, socks_reply_meaning};
use std::error::Error as StdError;
use std::io;

/// What went wrong with a request, as far as the user can do something about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkFailure {
    Timeout,
    /// The host name does not resolve.
    Dns,
    /// Nothing listens at the address.
    Refused,
    /// The connection was reset or closed mid-way.
    Dropped {
        detail: String,
    },
    /// The certificate chains to no CA we trust.
    UntrustedCertificate,
    /// The certificate is for another host name.
    CertificateForAnotherName {
        detail: String,
    },
    /// The certificate has expired (or is not valid yet: a wrong clock either way).
    CertificateOutOfDate,
    /// Another certificate problem, or a failed TLS handshake.
    Tls {
        detail: String,
    },
    /// Something else; the detail says what.
    Other {
        detail: String,
    },
    /// A proxy between us and the provider failed the request (`proxy/probe.rs` asked it why).
    Proxy {
        /// "the proxy http://127.0.0.1:3128 (from HTTPS_PROXY)", without credentials.
        proxy: String,
        /// The variable or settings to fix ("HTTPS_PROXY").
        origin: String,
        /// `host:port` the tunnel was for.
        target: String,
        problem: ProxyProblem,
    },
}

impl NetworkFailure {
    /// Classifies an error by the types in its source chain.
    pub fn of(err: &(dyn StdError + 'static)) -> NetworkFailure {
        let chain: Vec<&(dyn StdError + 'static)> =
            std::iter::successors(Some(err), next).collect();
        let detail = innermost(&chain);
        let is_timeout = chain.iter().any(|e| {
            reqwest_error(*e).is_some_and(reqwest::Error::is_timeout)
                || io_kind(*e) == Some(io::ErrorKind::TimedOut)
        });
        if is_timeout {
            return NetworkFailure::Timeout;
        }
        if chain.iter().any(|e| e.is::<DnsError>()) {
            return NetworkFailure::Dns;
        }
        if let Some(tls) = chain.iter().find_map(|e| e.downcast_ref::<rustls::Error>()) {
            return classify_tls(tls, detail);
        }
        // The server (or something on the way) closed the connection before a whole answer.
        if chain.iter().any(|e| {
            e.downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_incomplete_message)
        }) {
            return NetworkFailure::Dropped { detail };
        }
        match chain.iter().find_map(|e| io_kind(*e)) {
            Some(io::ErrorKind::ConnectionRefused) => NetworkFailure::Refused,
            Some(
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof,
            ) => NetworkFailure::Dropped { detail },
            _ => NetworkFailure::Other { detail },
        }
    }

    /// The sentence for the user: what happened and what to try.
    pub fn explain(&self) -> String {
        match self {
            NetworkFailure::Timeout => {
                "timed out; check the network or proxy settings, or raise --http-timeout".into()
            }
            NetworkFailure::Dns => {
                "the host name does not resolve; check the URL and your DNS or VPN".into()
            }
            NetworkFailure::Refused => {
                "connection refused: nothing is listening there; check the URL and that the provider is up".into()
            }
            NetworkFailure::Dropped { detail } => format!(
                "the connection was dropped ({detail}); a proxy or firewall may be in the way"
            ),
            NetworkFailure::UntrustedCertificate => {
                "the server's TLS certificate is signed by an authority this machine does not trust; \
                 pass --certificate-authority with the CA that signed it"
                    .into()
            }
            NetworkFailure::CertificateForAnotherName { detail } => format!(
                "the server's TLS certificate is not valid for this host name ({detail}); check the URL"
            ),
            NetworkFailure::CertificateOutOfDate => {
                "the server's TLS certificate has expired (or this machine's clock is wrong)".into()
            }
            NetworkFailure::Tls { detail } => format!(
                "the server's TLS certificate was rejected ({detail}); pass --certificate-authority if it uses a private CA"
            ),
            NetworkFailure::Other { detail } => detail.clone(),
            NetworkFailure::Proxy {
                proxy,
                origin,
                target,
                problem,
            } => explain_proxy_problem(proxy, origin, target, problem),
        }
    }

    /// Whether the same request may succeed when tried again a moment later (`retry.rs`): a
    /// connection that timed out, was refused, dropped or failed otherwise may (a provider
    /// restarting, a network blip). A host name that does not resolve and a certificate that is
    /// refused get the same answer a second later, and retrying them would only delay the error
    /// by seconds and end it in "after 4 attempts" (curl's `--retry` leaves them alone too); nor
    /// is a proxy that refused our password or the destination asked again.
    pub fn may_pass_later(&self) -> bool {
        match self {
            NetworkFailure::Timeout
            | NetworkFailure::Refused
            | NetworkFailure::Dropped { .. }
            | NetworkFailure::Other { .. } => true,
            NetworkFailure::Dns
            | NetworkFailure::UntrustedCertificate
            | NetworkFailure::CertificateForAnotherName { .. }
            | NetworkFailure::CertificateOutOfDate
            | NetworkFailure::Tls { .. } => false,
            NetworkFailure::Proxy { problem, .. } => problem.may_pass_later(),
        }
    }
}

/// "407 Proxy Authentication Required": a status with its reason phrase.
fn status_text(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .map(|code| code.to_string())
        .unwrap_or_else(|_| status.to_string())
}

/// The sentence for a proxy's failure: the proxy (never its credentials), what it answered,
/// and the setting to check.
fn explain_proxy_problem(
    proxy: &str,
    origin: &str,
    target: &str,
    problem: &ProxyProblem,
) -> String {
    let credentials_example = if proxy.starts_with("the SOCKS proxy") {
        "socks5h://USER:PASSWORD@HOST:PORT"
    } else {
        "http://USER:PASSWORD@HOST:PORT"
    };
    // Credentials go into a variable; the system settings have no place for them that kubecred
    // reads.
    let settable = if super::proxy::is_a_variable(origin) {
        origin
    } else {
        "HTTPS_PROXY"
    };
    match problem {
        ProxyProblem::DoesNotResolve => {
            format!("{proxy}: its host name does not resolve; check {origin}")
        }
        ProxyProblem::Refused => format!(
            "{proxy} refused the connection: nothing is listening there; check {origin} and that the proxy is running"
        ),
        ProxyProblem::Unreachable => {
            format!("{proxy} is unreachable (no answer); check {origin}, and the network or VPN")
        }
        ProxyProblem::Tls { explained } => format!("{proxy}: {explained}"),
        ProxyProblem::AuthenticationRequired {
            status,
            credentials_given,
        } => {
            let answered = status_text(*status);
            if *credentials_given {
                format!(
                    "{proxy} answered {answered}: it refused the user name and password; check them in {origin}"
                )
            } else {
                format!(
                    "{proxy} answered {answered}: it wants a user name and password; give them in {settable} as {credentials_example} (kubecred does no NTLM or Kerberos proxy login)"
                )
            }
        }
        ProxyProblem::Answered { status } => {
            let described = status_text(*status);
            match status {
                // The proxy itself failed to reach the destination: tinyproxy answers 500,
                // squid 503, most others 502 or 504. Not a refusal to ask anyone about.
                500..=599 => format!(
                    "{proxy} could not reach {target} (it answered {described}); check the issuer URL, and whether {target} should be in NO_PROXY"
                ),
                _ => format!(
                    "{proxy} refused the tunnel to {target} ({described}); ask the proxy's administrators to allow it, or add the host to NO_PROXY if it is reachable without the proxy"
                ),
            }
        }
        ProxyProblem::SocksNeedsCredentials => format!(
            "{proxy} wants a user name and password; give them in {settable} as {credentials_example}"
        ),
        ProxyProblem::SocksRefusedCredentials => {
            format!("{proxy} refused the user name and password; check them in {origin}")
        }
        ProxyProblem::SocksNoAcceptableMethod => format!(
            "{proxy} accepts none of the logins kubecred offers (none, or a user name and password); check {origin}"
        ),
        ProxyProblem::SocksCouldNotConnect { reply } => format!(
            "{proxy} could not connect to {target} ({}); check the issuer URL, and whether {target} should be in NO_PROXY",
            socks_reply_meaning(*reply)
        ),
        ProxyProblem::NotThisKindOfProxy => format!(
            "{proxy} does not answer as that kind of proxy; check the scheme (http://, https://, socks5://, socks5h://) in {origin}"
        ),
    }
}

/// One line that says why a request failed, with a next step where there is one. Takes any
/// error so that errors which wrap a reqwest error (oauth2's) can use it too. Never includes the
/// URL's query (it could carry a code), the request body, or the response body.
pub fn describe(err: &(dyn StdError + 'static)) -> String {
    NetworkFailure::of(err).explain()
}

fn classify_tls(err: &rustls::Error, detail: String) -> NetworkFailure {
    use rustls::CertificateError as Cert;
    match err {
        rustls::Error::InvalidCertificate(cert) => match cert {
            Cert::UnknownIssuer => NetworkFailure::UntrustedCertificate,
            Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
                NetworkFailure::CertificateForAnotherName { detail }
            }
            Cert::Expired
            | Cert::ExpiredContext { .. }
            | Cert::NotValidYet
            | Cert::NotValidYetContext { .. } => NetworkFailure::CertificateOutOfDate,
            _ => NetworkFailure::Tls { detail },
        },
        _ => NetworkFailure::Tls { detail },
    }
}

/// The next error of a chain. An `io::Error` that wraps another error (tokio-rustls reports a
/// certificate problem as `InvalidData` around the rustls error) yields that error itself: its
/// own `source()` would skip past it.
fn next<'a>(err: &&'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    let err: &'a (dyn StdError + 'static) = *err;
    if let Some(inner) = err.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
        return Some(inner);
    }
    err.source()
}

/// A reqwest error in the chain, also as oauth2 hands it over (boxed: another type to downcast).
fn reqwest_error<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a reqwest::Error> {
    err.downcast_ref::<reqwest::Error>()
        .or_else(|| err.downcast_ref::<Box<reqwest::Error>>().map(|b| &**b))
}

fn io_kind(err: &(dyn StdError + 'static)) -> Option<io::ErrorKind> {
    err.downcast_ref::<io::Error>().map(io::Error::kind)
}

/// The most specific message in an error chain (reqwest's top level says only "error sending
/// request for url (...)"), on one line.
fn innermost(chain: &[&(dyn StdError + 'static)]) -> String {
    chain
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// An error with a source, as reqwest and hyper wrap theirs.
    #[derive(Debug)]
    struct Wrapped(&'static str, Box<dyn StdError + Send + Sync>);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.1)
        }
    }

    fn wrapped(inner: impl StdError + Send + Sync + 'static) -> Wrapped {
        Wrapped(
            "error sending request for url (https://idp.example/token)",
            Box::new(Wrapped("client error (Connect)", Box::new(inner))),
        )
    }

    fn class(inner: impl StdError + Send + Sync + 'static) -> NetworkFailure {
        NetworkFailure::of(&wrapped(inner))
    }

    #[test]
    fn io_errors_by_kind() {
        let io = |kind| io::Error::new(kind, "whatever the OS says");
        assert_eq!(
            class(io(io::ErrorKind::ConnectionRefused)),
            NetworkFailure::Refused
        );
        assert_eq!(class(io(io::ErrorKind::TimedOut)), NetworkFailure::Timeout);
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::UnexpectedEof,
        ] {
            assert_eq!(
                class(io(kind)),
                NetworkFailure::Dropped {
                    detail: "whatever the OS says".into()
                }
            );
        }
    }

    #[test]
    fn dns_failures_by_our_resolvers_type() {
        let err = DnsError::new("idp.invalid", io::Error::other("no such host"));
        assert_eq!(class(err), NetworkFailure::Dns);
        assert!(NetworkFailure::Dns.explain().contains("does not resolve"));
    }

    #[test]
    fn certificate_errors_by_rustls_variant() {
        use rustls::CertificateError as Cert;
        let cert = |e| rustls::Error::InvalidCertificate(e);
        // As hyper-rustls hands it over: inside an io::Error of kind InvalidData.
        let in_io = |e| io::Error::new(io::ErrorKind::InvalidData, e);
        assert_eq!(
            class(in_io(cert(Cert::UnknownIssuer))),
            NetworkFailure::UntrustedCertificate
        );
        assert!(matches!(
            class(in_io(cert(Cert::NotValidForName))),
            NetworkFailure::CertificateForAnotherName { .. }
        ));
        assert_eq!(
            class(in_io(cert(Cert::Expired))),
            NetworkFailure::CertificateOutOfDate
        );
        assert!(matches!(
            class(in_io(cert(Cert::BadSignature))),
            NetworkFailure::Tls { .. }
        ));
        assert!(matches!(
            class(in_io(rustls::Error::HandshakeNotComplete)),
            NetworkFailure::Tls { .. }
        ));
    }

    #[test]
    fn a_message_that_merely_looks_like_a_class_is_not_one() {
        // The old text search took these for a refused connection and a DNS failure.
        let err = io::Error::other("connection refused by policy; dns error upstream");
        assert_eq!(
            class(err),
            NetworkFailure::Other {
                detail: "connection refused by policy; dns error upstream".into()
            }
        );
    }

    #[test]
    fn every_proxy_problem_names_the_proxy_and_the_setting_to_check() {
        let problems = [
            ProxyProblem::DoesNotResolve,
            ProxyProblem::Refused,
            ProxyProblem::Unreachable,
            ProxyProblem::Tls {
                explained: NetworkFailure::UntrustedCertificate.explain(),
            },
            ProxyProblem::AuthenticationRequired {
                status: 407,
                credentials_given: true,
            },
            ProxyProblem::AuthenticationRequired {
                status: 407,
                credentials_given: false,
            },
            ProxyProblem::Answered { status: 403 },
            ProxyProblem::Answered { status: 502 },
            ProxyProblem::SocksNeedsCredentials,
            ProxyProblem::SocksRefusedCredentials,
            ProxyProblem::SocksNoAcceptableMethod,
            ProxyProblem::SocksCouldNotConnect { reply: 5 },
            ProxyProblem::NotThisKindOfProxy,
        ];
        for origin in ["HTTPS_PROXY", "the Windows proxy settings"] {
            for problem in &problems {
                let text = NetworkFailure::Proxy {
                    proxy: format!("the proxy http://proxy.corp:3128 (from {origin})"),
                    origin: origin.into(),
                    target: "idp.example:443".into(),
                    problem: problem.clone(),
                }
                .explain();
                assert!(!text.contains('\n'), "{text}");
                assert!(
                    text.starts_with("the proxy http://proxy.corp:3128 (from "),
                    "{text}"
                );
                // What to do: the setting, NO_PROXY, or the issuer URL.
                assert!(
                    [
                        "check",
                        "give them in",
                        "NO_PROXY",
                        "issuer URL",
                        "--certificate-authority"
                    ]
                    .iter()
                    .any(|next| text.contains(next)),
                    "{text}"
                );
            }
        }
        // Credentials are asked for in a variable, even when the system settings named the proxy.
        let wanted = explain_proxy_problem(
            "the proxy http://proxy.corp:3128 (from the Windows proxy settings)",
            "the Windows proxy settings",
            "idp.example:443",
            &ProxyProblem::AuthenticationRequired {
                status: 407,
                credentials_given: false,
            },
        );
        assert!(
            wanted.contains("give them in HTTPS_PROXY as http://USER:PASSWORD@HOST:PORT"),
            "{wanted}"
        );
        assert!(
            explain_proxy_problem(
                "p",
                "ALL_PROXY",
                "t",
                &ProxyProblem::SocksCouldNotConnect { reply: 4 }
            )
            .contains("(host unreachable)")
        );
        // tinyproxy answers 500 when it cannot connect to the destination: it could not reach
        // it, it did not refuse the tunnel.
        for status in [500, 502, 503, 504] {
            let text = explain_proxy_problem(
                "the proxy p",
                "HTTPS_PROXY",
                "idp.example:443",
                &ProxyProblem::Answered { status },
            );
            assert!(
                text.contains("could not reach idp.example:443 (it answered 5"),
                "{text}"
            );
        }
        assert!(
            explain_proxy_problem(
                "the proxy p",
                "HTTPS_PROXY",
                "idp.example:443",
                &ProxyProblem::Answered { status: 403 }
            )
            .contains("refused the tunnel to idp.example:443 (403 Forbidden)")
        );
    }

    #[test]
    fn explanations_are_one_line_with_a_next_step() {
        for failure in [
            NetworkFailure::Timeout,
            NetworkFailure::Dns,
            NetworkFailure::Refused,
            NetworkFailure::UntrustedCertificate,
            NetworkFailure::CertificateOutOfDate,
        ] {
            let text = failure.explain();
            assert!(!text.contains('\n'), "{text}");
            assert!(text.contains("check") || text.contains("pass") || text.contains("wrong"));
        }
    }
}
