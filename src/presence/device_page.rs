//! The device flow without a terminal: the code goes where the person looks, the browser. With
//! the provider's `verification_uri_complete` (the code in the link), the browser opens on it;
//! without one, on a page kubecred serves on 127.0.0.1 that shows the code, its QR code (of the
//! verification URI, for a phone) and the link to the provider's page where the code is
//! entered. Never a code shown only on a stderr nobody reads.
//!
//! The page is served by the login listener's machinery (`listener::serve_one_page`: one
//! request per connection, bounded in size, time and number) on a thread of its own, until the
//! login's deadline or until the [`DevicePage`] guard is dropped (the flow ended), whichever is
//! first; then its socket closes.
//!
//! Who else can read the code: any local user can connect to 127.0.0.1, so the page is at an
//! unguessable path (128 random bits from the OS's generator, oauth2's `CsrfToken` as the
//! login's `state` is made) and anything else is "not found"; it answers only to the Host
//! header of its own address (a web page that rebinds a DNS name to 127.0.0.1 gets nothing);
//! and it must not be cached or leak its address in a Referer (`listener::http_answer`). What
//! cannot be avoided: the page's address is on the browser launcher's command line while it
//! starts (`ps` shows it to local users for that moment; a browser started by it may keep it),
//! as the login's authorization URL is; the code itself is on no command line. A one-time page
//! would not close that gap (whoever reads the address first wins either way) and would lose
//! the code on a reload, so the page stays until the login ends.

use super::browser;
use crate::config::BrowserChoice;
use crate::debug;
use crate::login::listener::{bind_page_socket, http_answer, serve_one_page};
use crate::text::{html_escape, printable};
use qrcode::QrCode;
use qrcode::render::svg;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What the browser was given for a device login; while it lives, the local page (if any) is
/// served. Dropping it ends the page at once.
#[derive(Debug)]
pub struct DevicePage {
    /// The local page's address, when there is one.
    url: Option<String>,
    opened: bool,
    /// Dropped to end the page.
    stop: Option<oneshot::Sender<()>>,
    serving: Option<JoinHandle<()>>,
}

impl DevicePage {
    /// Whether a browser (or the user's `--browser-command`) was started: where it was not,
    /// nobody sees the code without a terminal, and the caller had better fail at once.
    pub fn opened(&self) -> bool {
        self.opened
    }

    /// The local page's address (`http://127.0.0.1:PORT/device/<secret>`), `None` where the
    /// browser went to the provider's `verification_uri_complete` instead.
    #[cfg(test)]
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

impl Drop for DevicePage {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(serving) = self.serving.take() {
            // Ends within a turn of its runtime: the stop is seen at once.
            let _ = serving.join();
        }
    }
}

/// Shows a device login in the browser: `verification_uri_complete` where the provider gave
/// one, else a local page with `user_code`, its QR code and `verification_uri`, served until
/// `deadline` (the login's) or until the returned guard is dropped. The browser is opened as
/// `choice` says (`browser::open`, which also prints the address on stderr).
pub fn show_in_browser(
    verification_uri: &str,
    user_code: &str,
    verification_uri_complete: Option<&str>,
    deadline: Instant,
    choice: &BrowserChoice,
    presence: &super::Presence,
) -> anyhow::Result<DevicePage> {
    if let Some(complete) = verification_uri_complete {
        return Ok(DevicePage {
            url: None,
            opened: browser::open(complete, choice, presence)?,
            stop: None,
            serving: None,
        });
    }
    let socket = bind_page_socket()?;
    let secret = oauth2::CsrfToken::new_random_len(16);
    let path = format!("/device/{}", secret.secret());
    let url = format!("http://{}{path}", socket.local_addr()?);
    let expires_in = deadline.saturating_duration_since(Instant::now());
    let answer = http_answer(
        "200 OK",
        &page_html(verification_uri, user_code, expires_in),
    );
    let (stop, stopped) = oneshot::channel();
    let serving = std::thread::Builder::new()
        .name("kubecred-device-page".into())
        .spawn(move || match serve_one_page(socket, path, answer) {
            Ok(mut serving) => serving.serve_until(deadline, stopped),
            Err(err) => debug!(1, "cannot serve the device login page: {err}"),
        })?;
    let mut page = DevicePage {
        url: Some(url),
        opened: false,
        stop: Some(stop),
        serving: Some(serving),
    };
    page.opened = browser::open(page.url.as_deref().unwrap_or_default(), choice, presence)?;
    Ok(page)
}

/// The page: the code, the link to the provider's page, the QR code of that link, how long the
/// code lasts. Everything from the provider is escaped; a link that is not http(s) is shown
/// as text, never made a link.
fn page_html(verification_uri: &str, user_code: &str, expires_in: Duration) -> String {
    let code = html_escape(&printable(user_code));
    let uri = html_escape(&printable(verification_uri));
    let link = if is_web_url(verification_uri) {
        format!("<a id=\"verification-uri\" href=\"{uri}\">{uri}</a>")
    } else {
        format!("<span id=\"verification-uri\">{uri}</span>")
    };
    let qr = qr_svg(verification_uri)
        .map(|svg| format!("<p>Or scan this with a phone, and enter the code there:</p>\n{svg}\n"))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>kubecred: your login code</title></head><body>\n\
         <h1>Log in with this code</h1>\n\
         <p>kubecred is logging you in. Open the identity provider's page and enter this code there:</p>\n\
         <h2><code id=\"user-code\">{code}</code></h2>\n\
         <p>{link}</p>\n{qr}\
         <p>The code expires in {}. kubecred serves this page on this computer only, until the login ends.</p>\n\
         </body></html>\n",
        crate::duration::in_words(expires_in)
    )
}

fn is_web_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|parsed| matches!(parsed.scheme(), "http" | "https"))
}

/// The QR code of `data` as an inline SVG element (without the XML declaration, which has no
/// place in HTML), or `None` if it does not fit in a QR code.
fn qr_svg(data: &str) -> Option<String> {
    let code = QrCode::new(data.as_bytes()).ok()?;
    let image = code
        .render::<svg::Color>()
        .min_dimensions(240, 240)
        .quiet_zone(true)
        .build();
    let start = image.find("<svg")?;
    Some(image[start..].to_string())
}

#[cfg(test)]
mod tests;
