//! What the device flow (RFC 8628) shows on stderr: where to go, the user code, a QR code of the
//! URL for a phone, and how long the code lasts.
//!
//! The QR code uses Unicode half blocks, two modules per character cell, so it fits a terminal.
//! It is drawn for a dark terminal: a full block shows the terminal's light foreground, so light
//! modules (and the quiet zone around the code, which scanners need) are printed as blocks and
//! dark modules as spaces.

use crate::text::printable;
use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;
use std::fmt::Write;
use std::time::Duration;

/// Prints [`render`] on stderr.
pub fn show(
    verification_uri: &str,
    user_code: &str,
    verification_uri_complete: Option<&str>,
    expires_in: Duration,
) {
    crate::log::stderr(format_args!(
        "{}",
        render(
            verification_uri,
            user_code,
            verification_uri_complete,
            expires_in
        )
    ));
}

/// The device-flow instructions, ending with a newline.
pub fn render(
    verification_uri: &str,
    user_code: &str,
    verification_uri_complete: Option<&str>,
    expires_in: Duration,
) -> String {
    // Everything here comes from the provider: no escape sequences reach the terminal.
    let code = printable(user_code);
    let mut text = String::new();
    match verification_uri_complete {
        // Asking the user to compare the code protects against being sent someone else's.
        Some(complete) => writeln!(
            text,
            "kubecred: to log in, open {} in a browser and check that it shows the code {code}",
            printable(complete)
        ),
        None => writeln!(
            text,
            "kubecred: to log in, open {} in a browser and enter the code {code}",
            printable(verification_uri)
        ),
    }
    .expect("writing to a String");
    if let Some(qr) = qr_code(verification_uri_complete.unwrap_or(verification_uri)) {
        text.push_str("kubecred: or scan this with a phone:\n");
        text.push_str(&qr);
        text.push('\n');
    }
    writeln!(
        text,
        "kubecred: the code expires in {}",
        crate::duration::in_words(expires_in)
    )
    .expect("writing to a String");
    text
}

/// The QR code of `data` in half blocks, or `None` if it does not fit in a QR code.
fn qr_code(data: &str) -> Option<String> {
    let code = QrCode::new(data.as_bytes()).ok()?;
    Some(
        code.render::<Dense1x2>()
            // Swapped on purpose: see the module comment.
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const URI: &str = "https://idp.example/device";
    const COMPLETE: &str = "https://idp.example/device?user_code=WDJB-MJHT";

    #[test]
    fn with_a_complete_uri_it_shows_that_and_the_code_to_check() {
        let text = render(URI, "WDJB-MJHT", Some(COMPLETE), Duration::from_secs(600));
        assert!(text.starts_with(&format!(
            "kubecred: to log in, open {COMPLETE} in a browser and check that it shows the code WDJB-MJHT\n"
        )));
        assert!(text.contains("kubecred: or scan this with a phone:\n"));
        assert!(
            text.ends_with("kubecred: the code expires in 10 minutes\n"),
            "{text}"
        );
    }

    #[test]
    fn without_one_it_asks_to_enter_the_code() {
        let text = render(URI, "WDJB-MJHT", None, Duration::from_secs(90));
        assert!(text.starts_with(&format!(
            "kubecred: to log in, open {URI} in a browser and enter the code WDJB-MJHT\n"
        )));
        assert!(text.ends_with("kubecred: the code expires in 1 minute\n"));
    }

    #[test]
    fn the_qr_code_is_drawn_for_a_dark_terminal() {
        let qr = qr_code(COMPLETE).unwrap();
        let lines: Vec<&str> = qr.lines().collect();
        // Half blocks: each text line holds two module rows; all lines are equally wide.
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|line| line.chars().count() == width));
        assert!(
            qr.chars()
                .all(|c| matches!(c, ' ' | '▀' | '▄' | '█' | '\n'))
        );
        // The quiet zone is light, so drawn with full blocks: the first line is all blocks and
        // so are the first columns of every line (but the last, when it holds one module row).
        assert!(lines[0].chars().all(|c| c == '█'), "{}", lines[0]);
        let full_lines = &lines[..lines.len() - 1];
        assert!(
            full_lines.iter().all(|line| line.starts_with("████")),
            "{qr}"
        );
        // Finder patterns are dark: the top-left one starts right after the 4-module quiet zone.
        let top_of_finder = lines[2].chars().nth(4).unwrap();
        assert!(top_of_finder == ' ' || top_of_finder == '▀', "{qr}");
    }

    #[test]
    fn provider_text_cannot_inject_terminal_controls() {
        let text = render(
            "https://idp.example/\x1b[2J",
            "AB\x07CD",
            None,
            Duration::from_secs(5),
        );
        assert!(!text.contains('\x1b') && !text.contains('\x07'));
        assert!(text.contains("enter the code AB CD\n"));
        assert!(text.ends_with("kubecred: the code expires in 5 seconds\n"));
    }
}
