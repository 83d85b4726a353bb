//! A redirect URI exactly as it was written: by the user (`--redirect-url`), by a peer's stanza
//! that `convert-kubeconfig` rewrote, or by kubecred's default. Providers compare the
//! `redirect_uri` of a request with the registered ones byte for byte (Okta, Keycloak without
//! wildcards): `http://localhost:8000` and `http://localhost:8000/` are two URIs to them. A
//! parsed `Url` writes a bare host with a `/` path, so the text is kept and sent; the parse is
//! for the checks (scheme, host, the path the listener answers on). The port is the one thing
//! kubecred may write into it: where the text names none, the listener's port goes in its place,
//! nothing else changes.

use std::fmt;
use url::Url;

/// A redirect URI: the text as written, and its parse.
#[derive(Clone, PartialEq, Eq)]
pub struct RedirectUri {
    text: String,
    url: Url,
    /// Where the authority (`host[:port]`) ends in `text`: a port goes there. `None` for a URI
    /// without one (`urn:ietf:wg:oauth:2.0:oob`, for a code the person copies).
    authority_end: Option<usize>,
    /// The port written in the text (`:8000`), if any; the default port of the scheme counts
    /// when written (`http://localhost:80/`), though `Url` forgets it.
    written_port: Option<u16>,
    /// Where the written port's `:` is in `text`: the port runs from there to `authority_end`.
    /// Kept rather than worked out from the number, which may have been written otherwise
    /// (`:08000` is the port 8000, six characters long).
    port_start: Option<usize>,
}

impl RedirectUri {
    /// Reads `text` as an absolute URI, with no user name or password where it has a host. The
    /// error is a phrase saying what is wrong with it.
    pub fn parse(text: &str) -> Result<RedirectUri, String> {
        let url = Url::parse(text).map_err(|err| format!("is not a URL ({err})"))?;
        // The parse drops these (around the URL, or tabs and newlines anywhere), so the text
        // sent would not be the URL checked.
        if text
            .chars()
            .any(|c| c.is_ascii_whitespace() || c.is_ascii_control())
        {
            return Err("holds a space or a control character, which a URL may not".into());
        }
        let Some(after_scheme) = text.find("://").map(|at| at + 3) else {
            if url.cannot_be_a_base() && url.scheme() != "http" && url.scheme() != "https" {
                return Ok(RedirectUri {
                    text: text.to_string(),
                    url,
                    authority_end: None,
                    written_port: None,
                    port_start: None,
                });
            }
            return Err("is not a URL with a host (scheme://host/…)".into());
        };
        // Where the parse ends it: a `\` is a `/` to it (and to browsers) in a web URL, and part
        // of the authority in a URL of another scheme (`com.example.app://…`).
        let web = matches!(
            url.scheme(),
            "http" | "https" | "ws" | "wss" | "ftp" | "file"
        );
        let ends: &[char] = if web {
            &['/', '?', '#', '\\']
        } else {
            &['/', '?', '#']
        };
        let authority_len = text[after_scheme..]
            .find(ends)
            .unwrap_or(text.len() - after_scheme);
        let authority = &text[after_scheme..after_scheme + authority_len];
        if authority.contains('@') {
            return Err("names a user or password, which a redirect URI may not".into());
        }
        let host_end = if authority.starts_with('[') {
            authority.find(']').map_or(authority.len(), |at| at + 1)
        } else {
            authority.find(':').unwrap_or(authority.len())
        };
        let written_port = match authority[host_end..].strip_prefix(':') {
            None => None,
            Some(digits) => Some(
                digits
                    .parse::<u16>()
                    .map_err(|_| format!("names the port {digits:?}, which is not one"))?,
            ),
        };
        // `http:///localhost` is read as `http://localhost`, but the host is not where a port
        // would go in the text: no host written, none taken.
        if url.host().is_none() || host_end == 0 {
            return Err("has no host".into());
        }
        Ok(RedirectUri {
            text: text.to_string(),
            url,
            authority_end: Some(after_scheme + authority_len),
            written_port,
            port_start: written_port.map(|_| after_scheme + host_end),
        })
    }

    /// The text, as written: what is sent.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parse, for checks (scheme, host, path): never to be sent.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The port the text names, if it names one.
    pub fn written_port(&self) -> Option<u16> {
        self.written_port
    }

    /// The same text without its port (`http://localhost/callback`).
    pub fn without_port(&self) -> RedirectUri {
        let (Some(start), Some(end)) = (self.port_start, self.authority_end) else {
            return self.clone();
        };
        let mut text = self.text.clone();
        text.replace_range(start..end, "");
        RedirectUri::parse(&text).expect("a redirect URI without its port is one")
    }

    /// The same text with `port` as its port: in place of the one written, or put where the
    /// authority ends. Nothing else changes: no slash is added, nothing is re-encoded. A URI
    /// without a host has no port to take.
    pub fn with_port(&self, port: u16) -> RedirectUri {
        if self.written_port == Some(port) {
            return self.clone();
        }
        let bare = self.without_port();
        let Some(end) = bare.authority_end else {
            return bare;
        };
        let mut text = bare.text.clone();
        text.insert_str(end, &format!(":{port}"));
        RedirectUri::parse(&text).expect("a redirect URI with a port is one")
    }
}

impl fmt::Display for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedirectUri({:?})", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> RedirectUri {
        RedirectUri::parse(text).unwrap()
    }

    #[test]
    fn the_text_is_kept_and_only_the_port_is_written_into_it() {
        // kubelogin's default and MSAL's: no path, no slash.
        let bare = uri("http://localhost");
        assert_eq!(bare.as_str(), "http://localhost");
        assert_eq!(bare.url().path(), "/");
        assert_eq!(bare.written_port(), None);
        assert_eq!(bare.with_port(8000).as_str(), "http://localhost:8000");
        let slash = uri("http://localhost/");
        assert_eq!(slash.with_port(8000).as_str(), "http://localhost:8000/");
        assert_eq!(
            uri("http://localhost/callback").with_port(18000).as_str(),
            "http://localhost:18000/callback"
        );
        assert_eq!(
            uri("http://[::1]?x=1").with_port(9).as_str(),
            "http://[::1]:9?x=1"
        );
        // A written port: kept as written, replaced only when asked.
        let named = uri("https://localhost:8443/callback");
        assert_eq!(named.written_port(), Some(8443));
        assert_eq!(
            named.with_port(8443).as_str(),
            "https://localhost:8443/callback"
        );
        assert_eq!(
            named.with_port(9000).as_str(),
            "https://localhost:9000/callback"
        );
        assert_eq!(named.without_port().as_str(), "https://localhost/callback");
        // The scheme's default port, written, is a port (Url would drop it).
        assert_eq!(uri("http://127.0.0.1:80/cb").written_port(), Some(80));
        // Case and encoding as written.
        assert_eq!(
            uri("http://LOCALHOST:8000/Call%62ack").as_str(),
            "http://LOCALHOST:8000/Call%62ack"
        );
    }

    #[test]
    fn what_is_not_a_redirect_uri_says_why() {
        // A URN is a redirect URI (for a code the person copies): it has no port.
        let oob = uri("urn:ietf:wg:oauth:2.0:oob");
        assert_eq!(oob.with_port(8000).as_str(), "urn:ietf:wg:oauth:2.0:oob");
        assert!(
            RedirectUri::parse("http:localhost")
                .unwrap_err()
                .contains("host")
        );
        assert!(
            RedirectUri::parse("not a url")
                .unwrap_err()
                .contains("not a URL")
        );
        assert!(
            RedirectUri::parse("http://u:p@localhost/")
                .unwrap_err()
                .contains("user")
        );
        assert!(
            RedirectUri::parse("http://localhost:/cb")
                .unwrap_err()
                .contains("port")
        );
        assert!(RedirectUri::parse("http://localhost:99999/").is_err());
        assert!(
            RedirectUri::parse("http://localhost/cb ")
                .unwrap_err()
                .contains("space")
        );
        assert!(
            RedirectUri::parse("http:///localhost/cb")
                .unwrap_err()
                .contains("host")
        );
    }

    #[test]
    fn a_port_written_with_leading_zeros_is_kept_as_written_and_taken_out_whole() {
        let zeros = uri("http://localhost:08000/callback");
        assert_eq!(zeros.written_port(), Some(8000));
        // Its own port: the text as written, not the number printed again.
        assert_eq!(
            zeros.with_port(8000).as_str(),
            "http://localhost:08000/callback"
        );
        assert_eq!(zeros.without_port().as_str(), "http://localhost/callback");
        assert_eq!(
            zeros.with_port(9000).as_str(),
            "http://localhost:9000/callback"
        );
        assert_eq!(
            uri("http://[::1]:0080").without_port().as_str(),
            "http://[::1]"
        );
        assert_eq!(
            uri("http://127.0.0.1:000?x").with_port(7).as_str(),
            "http://127.0.0.1:7?x"
        );
        // The authority ends where the parse ends it: `\` is a `/` in a web URL.
        let backslash = uri("http://localhost\\cb:81");
        assert_eq!(backslash.written_port(), None);
        assert_eq!(backslash.with_port(9).as_str(), "http://localhost:9\\cb:81");
    }
}
