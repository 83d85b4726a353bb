//! Text from outside kubecred (a provider's error description, a URL or code it sent, a reason
//! read back from our own state file) made safe to show on a terminal: control characters, which
//! could move the cursor, rewrite the screen or ring the bell, become spaces; free text is cut to
//! a length; URLs in messages lose their credentials (and, once parsed, query and fragment). And
//! made inert in markup: the login listener's pages, a notification's body.

use std::borrow::Cow;
use url::Url;

/// Text from outside (a URL or a code from the provider) made safe to print on a terminal:
/// control characters, which could move the cursor or rewrite the screen, become spaces.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect(),
    )
}

/// [`printable`], and cut to `max_chars`, for free text (an error description) that a hostile
/// sender could make long enough to flood the screen. Never for URLs the user must copy.
pub(crate) fn printable_brief(text: &str, max_chars: usize) -> Cow<'_, str> {
    if text.chars().count() <= max_chars {
        return printable(text);
    }
    let mut brief: String = printable(text).chars().take(max_chars).collect();
    brief.push('…');
    Cow::Owned(brief)
}

/// A URL as the user typed it, with any `user:password@` before the host replaced by `****@`,
/// for messages about a URL that may not even parse.
pub(crate) fn redact_userinfo(raw: &str) -> Cow<'_, str> {
    let Some(scheme_end) = raw.find("://") else {
        return raw.into();
    };
    let authority_start = scheme_end + 3;
    let authority_end = raw[authority_start..]
        .find(['/', '?', '#'])
        .map_or(raw.len(), |end| authority_start + end);
    match raw[authority_start..authority_end].rfind('@') {
        Some(at) => format!(
            "{}****{}",
            &raw[..authority_start],
            &raw[authority_start + at..]
        )
        .into(),
        None => raw.into(),
    }
}

/// A URL fit for an error message: without credentials, query or fragment.
pub(crate) fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// Escapes text for HTML (or XML-like markup: a freedesktop notification's body) element
/// content and attribute values.
pub(crate) fn html_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            html_escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn printable_removes_terminal_controls() {
        assert_eq!(printable("plain text"), "plain text");
        assert_eq!(printable("a\x1b[2Jb\nc"), "a [2Jb c");
        let long_url = format!("https://idp.example/authorize?{}", "x".repeat(2000));
        assert_eq!(printable(&long_url), long_url);
    }

    #[test]
    fn printable_brief_caps_the_length() {
        assert_eq!(printable_brief("short\n", 10), "short ");
        let long = "é".repeat(2000);
        let shown = printable_brief(&long, 300);
        assert_eq!(shown.chars().count(), 301);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn userinfo_is_redacted_even_from_urls_that_do_not_parse() {
        assert_eq!(
            redact_userinfo("https://user:pa ss@idp.example/x?y=z@w"),
            "https://****@idp.example/x?y=z@w"
        );
        assert_eq!(
            redact_userinfo("https://idp.example/a@b"),
            "https://idp.example/a@b"
        );
        assert_eq!(redact_userinfo("not a url"), "not a url");
    }

    #[test]
    fn urls_in_messages_lose_their_query_and_credentials() {
        let url = Url::parse("https://user:pw@idp.example/cb?code=abc#frag").unwrap();
        assert_eq!(display_url(&url), "https://idp.example/cb");
    }
}
