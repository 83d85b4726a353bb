//! The side of a relayed login where the browser is: `kubecred login --remote-bootstrap '<URL>'`.
//!
//! A kubecred on a machine without a browser (an SSH session) prints its authorization URL and
//! this command. Run where a browser is, it checks that the URL is an authorization request
//! with a loopback redirect, listens on loopback here (on the redirect's own port when it is
//! free, else on another: RFC 8252 §7.3 has the provider accept any port on a loopback redirect
//! URI of a native client), points the URL's `redirect_uri` at that listener, opens the browser,
//! and, once the redirect with this login's `state` arrives, prints the relay line
//! (`relay_line.rs`) for the person to paste into the remote kubecred.
//!
//! It talks to no provider and exchanges nothing: the PKCE verifier stays on the remote machine,
//! which redeems the code itself, so no token ever exists here, and nothing is written here.
//! The `iss` parameter is handed on for the remote to check, since only it knows the issuer.

use crate::config::{LoginSettings, RedirectUri};
use crate::error::{Exit, fail};
use crate::login::callback::ExpectedResponse;
use crate::login::listener::CallbackListener;
use crate::login::{relay_line, wait};
use crate::presence::{browser, progress};
use crate::text::printable_brief;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;
use url::Url;

/// Takes the browser's part of the login whose authorization URL is `bootstrap`, and returns
/// the relay line to print (on stdout, alone: the person copies it).
pub fn relay(bootstrap: &str, login: &LoginSettings) -> anyhow::Result<String> {
    let deadline = Instant::now() + login.auth_timeout;
    let request = AuthorizationRequest::parse(bootstrap)?;
    // Bound without its port, the redirect URI takes the bound one: its own where that is free
    // (then it is the very text the remote sent), another otherwise.
    let listener = CallbackListener::bind(
        &listen_addresses(request.redirect.written_port(), &login.listen_addresses),
        &request.redirect.without_port(),
    )?
    .relaying(&request.redirect);
    let redirect = listener.redirect_uri().clone();
    let url = if redirect == request.redirect {
        request.url.clone()
    } else {
        crate::log::notice(format!(
            "{} is in use here, so the browser is sent to {redirect} instead (the provider must accept any port on a loopback redirect URI, as RFC 8252 §7.3 asks of it)",
            request.redirect
        ));
        request.with_redirect(&redirect)
    };
    // Not opened: browser::open has said to open the URL by hand (here: the redirect must
    // reach this machine's listener).
    let presence = crate::presence::Presence::of_this_run(false);
    browser::open(url.as_str(), &login.browser, &presence)?;
    let spinner =
        progress::Spinner::start("waiting for the login in the browser", deadline, &presence);
    let response = wait::for_code(
        listener,
        None,
        ExpectedResponse::from(request.state.as_str()),
        deadline,
    );
    drop(spinner); // Cleared before any message about the outcome.
    let response = response?;
    crate::log::notice(
        "signed in; paste this line into the kubecred waiting on the remote machine (it holds a one-time code that only that kubecred can redeem):",
    );
    Ok(relay_line::render(
        &request.state,
        &response.code,
        &redirect,
        response.iss.as_deref(),
    ))
}

/// Where to listen: the port the redirect URI names first (so that the URI stays what the
/// remote sent, for providers that hold a client to exact ports; as written, not as `Url` reads
/// it, which forgets a scheme's default port), then the configured addresses, then any free port.
fn listen_addresses(written_port: Option<u16>, configured: &[SocketAddr]) -> Vec<SocketAddr> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let own_port = written_port
        .filter(|port| *port != 0)
        .map(|port| SocketAddr::new(loopback, port));
    let any_port = SocketAddr::new(loopback, 0);
    let mut addresses: Vec<SocketAddr> = Vec::new();
    for address in own_port.into_iter().chain(configured.iter().copied()) {
        if !addresses.contains(&address) {
            addresses.push(address);
        }
    }
    if !addresses.iter().any(|address| address.port() == 0) {
        addresses.push(any_port);
    }
    addresses
}

/// The authorization request the remote kubecred printed, checked to be one this machine can
/// take the redirect of.
#[derive(Debug)]
struct AuthorizationRequest {
    url: Url,
    state: String,
    /// Its `redirect_uri`, as the remote wrote it: http on a loopback host.
    redirect: RedirectUri,
}

impl AuthorizationRequest {
    fn parse(bootstrap: &str) -> anyhow::Result<AuthorizationRequest> {
        let shown = printable_brief(bootstrap.trim(), 200);
        let refuse = |why: String| {
            fail(
                Exit::Input,
                format!(
                    "--remote-bootstrap {shown:?} {why}; give it the whole authorization URL the remote kubecred printed, in single quotes"
                ),
            )
        };
        let url = web_url(bootstrap.trim()).map_err(refuse)?;
        let param = |name: &str| query_param(&url, name);
        check_parameters(param).map_err(refuse)?;
        let redirect =
            loopback_redirect(&param("redirect_uri").unwrap_or_default()).map_err(refuse)?;
        if param("code_challenge").is_none() {
            crate::debug!(
                1,
                "the authorization URL carries no PKCE challenge: its code is redeemable without a verifier"
            );
        }
        Ok(AuthorizationRequest {
            state: param("state").unwrap_or_default(),
            url,
            redirect,
        })
    }

    /// The URL with its `redirect_uri` pointing at `redirect` (every other parameter kept, in
    /// order).
    fn with_redirect(&self, redirect: &RedirectUri) -> Url {
        let pairs: Vec<(String, String)> = self
            .url
            .query_pairs()
            .map(|(name, value)| {
                let value = if name == "redirect_uri" {
                    redirect.as_str().to_string()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        let mut url = self.url.clone();
        url.query_pairs_mut().clear().extend_pairs(pairs);
        url
    }
}

/// `text` as a URL a browser may be sent to with a code: https, or http on a loopback address.
/// The error is why not, as a phrase.
fn web_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|err| format!("is not a URL ({err})"))?;
    let web = match url.scheme() {
        "https" => true,
        "http" => crate::config::is_loopback_host(&url),
        _ => false,
    };
    if !web {
        return Err("is not an https URL (plain http only on a loopback address)".into());
    }
    Ok(url)
}

/// The first value of the query parameter `name`, decoded.
fn query_param(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// The parameters of an authorization code request with nothing that gives the code away.
/// The error is why not, as a phrase.
fn check_parameters(param: impl Fn(&str) -> Option<String>) -> Result<(), String> {
    // A verifier in the URL would let anyone who sees it redeem the code; `plain` makes the
    // challenge the verifier itself. Neither may leave the machine that started the login.
    if param("code_verifier").is_some() {
        return Err(
            "carries a code_verifier, which must never leave the machine that started the login"
                .into(),
        );
    }
    if param("code_challenge_method").is_some_and(|method| method != "S256") {
        return Err(
            "uses a PKCE method other than S256, whose challenge would give the code away".into(),
        );
    }
    let missing: Vec<&str> = ["response_type", "client_id", "redirect_uri", "state"]
        .into_iter()
        .filter(|name| param(name).is_none_or(|value| value.is_empty()))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "is not a whole authorization request: it has no {} (was it cut at an `&` by the shell?)",
            missing.join(", ")
        ));
    }
    if param("response_type").as_deref() != Some("code") {
        return Err("is not an authorization code request (response_type is not code)".into());
    }
    Ok(())
}

/// The request's `redirect_uri`, one this machine can take: http on a loopback address. The
/// error is why not, as a phrase.
fn loopback_redirect(raw: &str) -> Result<RedirectUri, String> {
    let shown = printable_brief(raw, 200).into_owned();
    let redirect = RedirectUri::parse(raw)
        .map_err(|_| format!("names the redirect_uri {shown:?}, which is not a URL"))?;
    if !crate::config::is_loopback_host(redirect.url()) {
        return Err(format!(
            "names the redirect_uri {shown}, which is not a loopback address: only a redirect to a listener on this machine's loopback can be taken here (RFC 8252 §7.3)"
        ));
    }
    if redirect.url().scheme() != "http" {
        return Err(format!(
            "names the redirect_uri {shown}, an https one: the listener here has no certificate; open the URL itself instead and paste the address the browser ends on into the remote kubecred"
        ));
    }
    Ok(redirect)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "https://idp.example/auth?response_type=code&client_id=kubecred&state=st4te\
        &redirect_uri=http%3A%2F%2Flocalhost%3A8000%2Fcallback&scope=openid&nonce=n\
        &code_challenge=abc&code_challenge_method=S256";

    fn refusal(url: &str) -> String {
        let err = AuthorizationRequest::parse(url).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), Exit::Input);
        crate::error::one_line(&err)
    }

    #[test]
    fn an_authorization_request_is_read_and_redirected_here() {
        let request = AuthorizationRequest::parse(&format!("  {GOOD}\n")).unwrap();
        assert_eq!(request.state, "st4te");
        assert_eq!(request.redirect.as_str(), "http://localhost:8000/callback");
        let moved =
            request.with_redirect(&RedirectUri::parse("http://localhost:49152/callback").unwrap());
        assert_eq!(
            moved.as_str(),
            GOOD.replace("%3A8000", "%3A49152"),
            "only the redirect_uri changes, in place"
        );
    }

    #[test]
    fn what_is_not_an_authorization_request_is_refused_saying_why() {
        assert!(refusal("not a url").contains("is not a URL"));
        assert!(refusal("ftp://idp.example/auth?x").contains("is not an https URL"));
        assert!(refusal("http://idp.example/auth?x").contains("is not an https URL"));
        // Cut at the first `&` by an unquoted shell command.
        let cut = refusal("https://idp.example/auth?response_type=code");
        assert!(
            cut.contains("it has no client_id, redirect_uri, state (was it cut at an `&`"),
            "{cut}"
        );
        assert!(cut.ends_with("in single quotes"), "{cut}");
        let implicit = GOOD.replace("response_type=code", "response_type=token");
        assert!(refusal(&implicit).contains("response_type is not code"));
    }

    #[test]
    fn a_redirect_that_cannot_come_here_is_refused() {
        let remote = GOOD.replace("localhost%3A8000", "app.example");
        assert!(
            refusal(&remote).contains("http://app.example/callback, which is not a loopback"),
            "{}",
            refusal(&remote)
        );
        let https = GOOD.replace("http%3A%2F%2Flocalhost", "https%3A%2F%2Flocalhost");
        assert!(refusal(&https).contains("an https one"));
    }

    #[test]
    fn a_verifier_or_a_plain_challenge_is_refused() {
        let verifier = format!("{GOOD}&code_verifier=secret");
        assert!(refusal(&verifier).contains("carries a code_verifier"));
        let plain = GOOD.replace("code_challenge_method=S256", "code_challenge_method=plain");
        assert!(refusal(&plain).contains("other than S256"));
    }

    #[test]
    fn the_redirects_own_port_is_tried_first_then_the_configured_then_any() {
        let configured: Vec<SocketAddr> = vec!["127.0.0.1:8000".parse().unwrap()];
        let written_port = |text: &str| RedirectUri::parse(text).unwrap().written_port();
        let redirect = written_port("http://localhost:8000/callback");
        let addresses = listen_addresses(redirect, &configured);
        assert_eq!(
            addresses,
            ["127.0.0.1:8000", "127.0.0.1:0"].map(|a| a.parse::<SocketAddr>().unwrap())
        );
        // No port in the redirect (authcode-keyboard's default): no port 80.
        let portless = written_port("http://localhost/callback");
        assert_eq!(
            listen_addresses(portless, &[]),
            ["127.0.0.1:0".parse::<SocketAddr>().unwrap()]
        );
        // The port as written: the scheme's default (which Url forgets), leading zeros.
        assert_eq!(
            listen_addresses(written_port("http://localhost:80/callback"), &[]),
            ["127.0.0.1:80", "127.0.0.1:0"].map(|a| a.parse::<SocketAddr>().unwrap())
        );
        assert_eq!(
            listen_addresses(written_port("http://localhost:08000/callback"), &[]),
            ["127.0.0.1:8000", "127.0.0.1:0"].map(|a| a.parse::<SocketAddr>().unwrap())
        );
    }

    #[test]
    fn a_port_written_with_a_leading_zero_is_listened_on_and_sent_as_written() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let remote_text = format!("http://localhost:0{port}/callback");
        let url = GOOD.replace("localhost%3A8000", &format!("localhost%3A0{port}"));
        let request = AuthorizationRequest::parse(&url).unwrap();
        assert_eq!(request.redirect.as_str(), remote_text);
        let listener = CallbackListener::bind(
            &listen_addresses(request.redirect.written_port(), &[]),
            &request.redirect.without_port(),
        )
        .unwrap()
        .relaying(&request.redirect);
        assert_eq!(listener.local_addresses()[0].port(), port);
        assert_eq!(listener.redirect_uri(), &request.redirect, "byte for byte");
    }
}
