//! The line a relayed login hands back: `kubecred login --remote-bootstrap` takes the browser's
//! redirect on the machine where the browser is and prints this line; the person pastes it into
//! the kubecred waiting on the remote machine, which exchanges the code itself.
//!
//! ```text
//! kubecred-relay:v1?state=…&code=…&redirect_uri=http%3A%2F%2Flocalhost%3A49152%2Fcallback&iss=…
//! ```
//!
//! The prefix names the format and its version, so a kubecred that meets a later version says
//! so instead of misreading it, and a later kubecred can keep reading this one. The parameters are
//! form-encoded as in the redirect itself: `state` (the remote checks it is its own login's),
//! `code` (one-time, useless without the PKCE verifier, which never leaves the remote),
//! `redirect_uri` (the one the code was issued for: the laptop's listener may sit on another port
//! than the remote's, RFC 8252 §7.3, and the exchange must repeat it), and `iss` when the
//! provider sent one (RFC 9207; the remote checks it). An `error` with its description relays the
//! provider's refusal. Nothing else is carried, and unknown parameters are ignored, so that a
//! later v1 may add one that older readers can do without.
//!
//! This module only writes and reads the line; `callback.rs` says what it means for the login in
//! progress.

use crate::secret::Secret;
use std::borrow::Cow;
use url::Url;

/// What every relay line starts with.
pub const PREFIX: &str = "kubecred-relay:";
/// The version this kubecred writes and reads.
const VERSION: &str = "v1";
/// The parameters a line carries that the login reads (others are ignored).
const CARRIED: [&str; 6] = [
    "state",
    "code",
    "iss",
    "error",
    "error_description",
    "redirect_uri",
];

/// The line for an authorization response received at `redirect_uri`.
pub fn render(state: &str, code: &Secret, redirect_uri: &Url, iss: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("state", state)
        .append_pair("code", code.expose())
        .append_pair("redirect_uri", redirect_uri.as_str());
    if let Some(iss) = iss {
        query.append_pair("iss", iss);
    }
    format!("{PREFIX}{VERSION}?{}", query.finish())
}

/// A relay line read back: the authorization response's parameters, and the redirect URI the
/// code was issued for.
#[derive(Debug)]
pub struct Relayed {
    /// `state`, `code`, `iss`, `error`, `error_description`, as the redirect had them.
    pub params: Vec<(String, String)>,
    /// `None` when the line has none (which `callback.rs` refuses).
    pub redirect_uri: Option<String>,
}

impl Relayed {
    /// The parameters in the shape `callback::classify` reads.
    pub fn pairs(&self) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
        self.params
            .iter()
            .map(|(name, value)| (Cow::Borrowed(name.as_str()), Cow::Borrowed(value.as_str())))
    }
}

/// What a pasted line is, if it is a relay line at all (`None`: it is not).
pub fn parse(line: &str) -> Option<Result<Relayed, String>> {
    let rest = line.trim().strip_prefix(PREFIX)?;
    let (version, query) = rest.split_once('?').unwrap_or((rest, ""));
    if version != VERSION {
        let shown = crate::text::printable_brief(version, 20);
        return Some(Err(format!(
            "it is a relay line of version {shown:?}, and this kubecred reads {VERSION}; run the same kubecred version on both machines"
        )));
    }
    let mut params = Vec::new();
    let mut redirect_uri = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if !CARRIED.contains(&name.as_ref()) {
            continue;
        }
        if name == "redirect_uri" {
            // The first occurrence wins, as for the other parameters (`classify`).
            redirect_uri.get_or_insert_with(|| value.into_owned());
        } else {
            params.push((name.into_owned(), value.into_owned()));
        }
    }
    Some(Ok(Relayed {
        params,
        redirect_uri,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect() -> Url {
        Url::parse("http://localhost:49152/callback").unwrap()
    }

    #[test]
    fn a_rendered_line_reads_back_whole() {
        let line = render(
            "st&ate",
            &Secret::new("c/o+de=1"),
            &redirect(),
            Some("https://idp.example/realm"),
        );
        assert!(line.starts_with("kubecred-relay:v1?state=st%26ate&code=c%2Fo%2Bde%3D1&"));
        assert!(!line.contains(' '), "one word, easy to copy: {line}");
        let relayed = parse(&format!("  {line}  ")).unwrap().unwrap();
        assert_eq!(
            relayed.params,
            [
                ("state".to_string(), "st&ate".to_string()),
                ("code".into(), "c/o+de=1".into()),
                ("iss".into(), "https://idp.example/realm".into()),
            ]
        );
        assert_eq!(
            relayed.redirect_uri.as_deref(),
            Some("http://localhost:49152/callback")
        );
        let without_iss = render("s", &Secret::new("c"), &redirect(), None);
        let relayed = parse(&without_iss).unwrap().unwrap();
        assert!(relayed.params.iter().all(|(name, _)| name != "iss"));
    }

    #[test]
    fn other_lines_are_not_relay_lines() {
        for line in [
            "http://localhost:8000/callback?code=c&state=s",
            "4/0AbC",
            "kubecred-relay",
            "",
        ] {
            assert!(parse(line).is_none(), "{line}");
        }
    }

    #[test]
    fn another_version_is_named_not_misread() {
        let err = parse("kubecred-relay:v2?state=s&code=c")
            .unwrap()
            .unwrap_err();
        assert!(err.contains("version \"v2\""), "{err}");
        assert!(
            err.contains("same kubecred version on both machines"),
            "{err}"
        );
        let err = parse("kubecred-relay:state=s").unwrap().unwrap_err();
        assert!(err.contains("version \"state=s\""), "{err}");
    }

    #[test]
    fn unknown_parameters_are_dropped_and_the_first_of_each_wins() {
        let relayed = parse(
            "kubecred-relay:v1?state=s&session_state=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb&redirect_uri=http%3A%2F%2Fevil%2F&code=c",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            relayed.params,
            [
                ("state".to_string(), "s".to_string()),
                ("code".into(), "c".into())
            ]
        );
        assert_eq!(
            relayed.redirect_uri.as_deref(),
            Some("http://127.0.0.1:1/cb")
        );
        let bare = parse("kubecred-relay:v1").unwrap().unwrap();
        assert!(bare.params.is_empty() && bare.redirect_uri.is_none());
    }
}
