//! Text from outside kubecred (a provider's error description, a URL or code it sent, a reason
//! read back from our own state file) made safe to show on a terminal: control characters, which
//! could move the cursor, rewrite the screen or ring the bell, become spaces; free text is cut to
//! a length.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::{printable, printable_brief};

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
}
