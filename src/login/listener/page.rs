//! The HTTP side of the login listener: one request head read (bounded in size; the caller
//! bounds the time), routed (the redirect path, or something else such as a favicon; or the one
//! page of a device flow), and answered with a small page that loads nothing and says what
//! happened. No I/O but the reading of the head: `route` is what the fuzz targets call.

use super::{PageContext, Site};
use crate::login::callback::{ExpectedResponse, StateRule, Verdict, classify};
use crate::text::html_escape;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A request head (request line and headers) larger than this is not a browser's callback.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// The whole HTTP answer to a request head, and the verdict to hand over (`None`: not a
/// callback at all, such as a favicon).
pub(super) fn answer(head: &str, page: &PageContext) -> (Vec<u8>, Option<Verdict>) {
    let (expected, callback_path, relaying) = match &page.site {
        Site::Login {
            expected,
            callback_path,
            relaying,
        } => (expected, callback_path, *relaying),
        Site::OnePage { path, host, answer } => return (one_page(head, path, host, answer), None),
    };
    let verdict = match route(head, callback_path, expected) {
        Route::BadRequest => {
            let html = html_page(
                "400 Bad Request",
                "Bad request",
                "This is kubecred's login listener.",
            );
            return (html, None);
        }
        Route::NotTheCallback => {
            // Favicons and the like: not a callback, no notice.
            let html = html_page(
                "404 Not Found",
                "Not found",
                "This is kubecred's login listener.",
            );
            return (html, None);
        }
        Route::Callback(verdict) => verdict,
    };
    let html = match &verdict {
        Verdict::Code(_) if relaying => html_page(
            "200 OK",
            "Signed in: one more step",
            "Signed in at the identity provider. Return to the terminal where you ran \
             <code>kubecred login --remote-bootstrap</code>: it shows one line to paste into the \
             kubecred waiting on the remote machine, which finishes the login there. \
             Nothing was stored on this machine.",
        ),
        Verdict::Code(_) => html_page(
            "200 OK",
            "Logged in",
            "Logged in. You may close this tab and return to your terminal.",
        ),
        Verdict::Refused(_) => html_page(
            "400 Bad Request",
            "Login callback refused",
            "kubecred refused this callback: it does not carry the state of the login in progress \
             (it may belong to another login, or be a forgery). Return to your terminal.",
        ),
        Verdict::Denied { error, description } => {
            let detail = description
                .as_deref()
                .map(|text| format!(" ({})", html_escape(text)))
                .unwrap_or_default();
            html_page(
                "200 OK",
                "Login failed",
                &format!(
                    "The identity provider refused the login: {}{detail}. Return to your terminal for what to do next.",
                    html_escape(error)
                ),
            )
        }
        // Relay lines only: a callback is never one.
        Verdict::Incomplete | Verdict::Unusable(_) => html_page(
            "400 Bad Request",
            "Login callback incomplete",
            "This callback carries neither a code nor an error. Return to your terminal.",
        ),
        Verdict::WrongIssuer(_) => html_page(
            "400 Bad Request",
            "Login response refused",
            "kubecred refused this login response: it does not name the identity provider the login went to. Return to your terminal.",
        ),
    };
    (html, Some(verdict))
}

/// `answer` to a GET of `path` asked for by `host` (its `Host` header), "not found" to anything
/// else. The path is compared in constant time (it is the page's secret).
fn one_page(head: &str, path: &str, host: &str, answer: &[u8]) -> Vec<u8> {
    let not_found = || {
        html_page(
            "404 Not Found",
            "Not found",
            "This is kubecred's login page.",
        )
    };
    let Some((method, target)) = parse_request_line(head) else {
        return html_page(
            "400 Bad Request",
            "Bad request",
            "This is kubecred's login page.",
        );
    };
    let host_header = head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("host")
            .then(|| value.trim())
    });
    if method == "GET" && host_header == Some(host) && same_bytes(target, path) {
        answer.to_vec()
    } else {
        not_found()
    }
}

/// Compares in constant time, so the page's timing says nothing about its path.
fn same_bytes(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// Reads up to the blank line that ends the request head, at most [`MAX_REQUEST_HEAD`] bytes.
/// A GET has no body, so this is the whole request. The caller bounds the time.
pub(super) async fn read_request_head<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before a full request",
            ));
        }
        head.extend_from_slice(&chunk[..read]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(String::from_utf8_lossy(&head).into_owned());
        }
        if head.len() > MAX_REQUEST_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
}

/// What a request to the listener is.
pub(crate) enum Route {
    /// Not an HTTP/1 request line with an origin-form target.
    BadRequest,
    /// Another method or path (a favicon, say).
    NotTheCallback,
    /// A GET of the redirect path: what its query amounts to.
    Callback(Verdict),
}

/// Judges a request head (no I/O: the fuzz targets call it too).
pub(crate) fn route(head: &str, callback_path: &str, expected: &ExpectedResponse) -> Route {
    let Some((method, target)) = parse_request_line(head) else {
        return Route::BadRequest;
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != callback_path {
        return Route::NotTheCallback;
    }
    Route::Callback(classify(
        url::form_urlencoded::parse(query.as_bytes()),
        expected,
        StateRule::Required,
    ))
}

/// `GET /callback?code=... HTTP/1.1` → ("GET", "/callback?code=..."); origin-form targets only.
pub(super) fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let mut parts = head.lines().next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return None;
    }
    Some((method, target))
}

/// A complete small HTML answer. `body` must already be escaped.
fn html_page(status: &str, title: &str, body: &str) -> Vec<u8> {
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>{body}</p></body></html>\n"
    );
    http_answer(status, &page)
}

/// The whole HTTP answer carrying the HTML document `page` (its text escaped by the caller).
pub(crate) fn http_answer(status: &str, page: &str) -> Vec<u8> {
    // The page loads nothing, and with the code in its URL it must not be cached or leak it in
    // a Referer; the CSP makes any markup that slipped through the escaping inert.
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n{page}",
        page.len()
    )
    .into_bytes()
}
