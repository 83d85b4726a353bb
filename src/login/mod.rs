//! The parts of an interactive login that touch the user: the browser, the loopback listener
//! that receives the authorization-code redirect, the paste fallback on stdin, and the
//! device-flow display. (The cool-down that stops a failed login from opening browser tabs again
//! and again is the token path's policy: `acquire/cooldown.rs`.)
//!
//! The OAuth protocol itself (PKCE, state, nonce, token exchange, device polling) lives in
//! `grants/`, on top of these pieces. Everything here writes to stderr only: stdout carries
//! the ExecCredential and nothing else. Every wait here ends at a deadline the caller passes.
//!
//! The authorization code arrives in one of two ways, and the modules depend on each other in one
//! direction only: `wait` (whichever comes first, until the deadline) uses `listener` (binds,
//! serves, hands over the callbacks) and `paste` (reads lines); `listener` and `wait` use
//! `callback` (what a callback or a pasted line means); `callback` and `paste` use no sibling.

pub mod browser;
pub mod callback;
pub mod device_display;
pub mod listener;
pub mod paste;
pub mod wait;

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
