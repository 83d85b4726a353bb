//! Waiting for the authorization code: from the browser's redirect to the login listener or from
//! a line pasted on stdin, whichever comes first, until the login's deadline.
//!
//! The sources only deliver: `listener.rs` hands over each callback it answered, `paste.rs` each
//! line typed. What they mean is `callback.rs`'s to say. This module takes them as they arrive
//! and ends at the first code, the first provider error for this login, or the deadline; a
//! callback or a line that is not this login's is refused with a notice and the wait goes on, so
//! a web page or a stray paste cannot end it.

use crate::debug;
use crate::error::{Exit, fail};
use crate::login::callback::{
    AuthorizationResponse, ExpectedResponse, Origin, StateRule, Verdict, interpret_pasted, settle,
};
use crate::login::listener::{CallbackListener, Serving};
use crate::login::paste::{PasteSource, Pasted};

use std::time::{Duration, Instant};

/// The prompt of [`read_code`].
pub const CODE_PROMPT: &str =
    "kubecred: paste the code (or the whole URL the browser was sent to): ";

/// Serves the login callback on `listener` until the callback for this login arrives, and
/// returns its response (the code). The sockets close when it returns.
///
/// A callback whose `state` is missing or wrong is answered with 400 and ignored: it did not
/// come from the login we started (another tab, or a forgery), and a web page must not be able
/// to end our wait. The provider's error with the right state ends the login. `paste` accepts
/// the redirect URL (or the bare code) typed on stdin, for SSH sessions where the browser runs
/// on another machine and its redirect to localhost cannot reach us.
pub fn for_code(
    listener: CallbackListener,
    paste: Option<PasteSource>,
    expected: impl Into<ExpectedResponse>,
    deadline: Instant,
) -> anyhow::Result<AuthorizationResponse> {
    let expected = expected.into();
    let redirect = listener.redirect_uri().to_string();
    let listener = listener.serve(expected.clone())?;
    let sources = Sources::Browser {
        listener,
        paste,
        redirect,
    };
    wait(sources, &expected, deadline)
}

/// Asks for the code on stderr and reads it from `source` until `deadline`, for
/// `--grant-type authcode-keyboard`. A pasted URL must carry this login's state if it carries
/// one; a line that is not usable is explained and asked for again.
pub fn read_code(
    source: impl Into<Option<PasteSource>>,
    expected: impl Into<ExpectedResponse>,
    deadline: Instant,
) -> anyhow::Result<AuthorizationResponse> {
    let Some(source) = source.into() else {
        return Err(fail(
            Exit::Login,
            "cannot ask for the login code: stdin is not an interactive terminal \
             (kubectl passes it only with interactiveMode IfAvailable or Always on a TTY); use --grant-type device-code or authcode",
        ));
    };
    wait(Sources::Keyboard(source), &expected.into(), deadline)
}

/// Where the code of one login can come from.
enum Sources {
    /// `authcode`: the browser's redirect, and stdin while the session is interactive.
    Browser {
        listener: Serving,
        paste: Option<PasteSource>,
        /// Where the browser is sent back to (the listener's redirect URI), for the timeout.
        redirect: String,
    },
    /// `authcode-keyboard`: only what the user pastes, asked for line by line.
    Keyboard(PasteSource),
}

/// What came first.
enum Arrival {
    Callback(Verdict),
    Line(String),
    StdinClosed,
    Deadline,
}

/// Feeds whatever arrives first through `callback.rs` until it yields the code or an error, or
/// the deadline passes. Without a listener (`authcode-keyboard`) the user is prompted for each
/// line, a pasted URL needs this login's state only if it carries one, and the end of stdin ends
/// the login; with a listener it only ends the paste. The sockets close when this returns.
fn wait(
    mut sources: Sources,
    expected: &ExpectedResponse,
    deadline: Instant,
) -> anyhow::Result<AuthorizationResponse> {
    let budget = deadline.saturating_duration_since(Instant::now());
    let keyboard = matches!(sources, Sources::Keyboard(_));
    let rule = if keyboard {
        StateRule::IfPresent
    } else {
        StateRule::Required
    };
    let mut prompt_due = keyboard;
    // Whether anything came to the callback address at all: if nothing did, the browser never
    // got there, which the timeout's message says (a closed tab, or a redirect URI the provider
    // refused on a page of its own).
    let mut browser_came_back = false;
    loop {
        if prompt_due {
            crate::log::stderr(format_args!("{CODE_PROMPT}"));
            prompt_due = false;
        }
        let (verdict, origin) = match next_arrival(&mut sources, deadline) {
            Arrival::Callback(verdict) => {
                browser_came_back = true;
                (Some(verdict), Origin::Browser)
            }
            Arrival::Line(line) => {
                prompt_due = keyboard;
                let verdict = interpret_pasted(&line, expected, rule);
                (verdict, Origin::Paste)
            }
            Arrival::StdinClosed => match &mut sources {
                Sources::Browser { paste, .. } => {
                    debug!(1, "stdin closed; waiting for the browser only");
                    *paste = None;
                    continue;
                }
                Sources::Keyboard(_) => {
                    crate::log::stderr(format_args!("\n"));
                    return Err(fail(
                        Exit::Login,
                        "stdin closed before a login code was pasted; run `kubecred login` in a terminal to log in",
                    ));
                }
            },
            Arrival::Deadline => return Err(timed_out(&sources, budget, browser_came_back)),
        };
        if let Some(response) = verdict.map(|v| settle(v, origin)).transpose()?.flatten() {
            return Ok(response);
        }
    }
}

/// Waits for whichever source delivers first, until `deadline`. Pasted lines are looked at
/// before each turn of the listener, which serves connections as they come for a short slice
/// at most, so neither source holds the other up.
fn next_arrival(sources: &mut Sources, deadline: Instant) -> Arrival {
    loop {
        let pasted = match sources {
            Sources::Browser { paste: None, .. } => Pasted::NothingYet,
            Sources::Browser {
                paste: Some(paste), ..
            } => paste.try_line(),
            // Nothing else to watch: wait on stdin alone.
            Sources::Keyboard(paste) => paste.line_before(deadline),
        };
        match pasted {
            Pasted::Line(line) => return Arrival::Line(line),
            Pasted::Closed => return Arrival::StdinClosed,
            Pasted::NothingYet => {}
        }
        if Instant::now() >= deadline {
            return Arrival::Deadline;
        }
        if let Sources::Browser { listener, .. } = &mut *sources
            && let Some(verdict) = listener.next_callback(deadline)
        {
            return Arrival::Callback(verdict);
        }
    }
}

/// The error at the deadline. With a listener, what to do depends on whether the browser ever
/// came back: a provider never sends it to a redirect URI that is not registered for the client,
/// but shows its own error page, so kubecred hears nothing; the message says where to look.
fn timed_out(sources: &Sources, budget: Duration, browser_came_back: bool) -> anyhow::Error {
    let budget = crate::duration::display_whole_seconds(budget);
    let next = "run `kubecred login` to try again, pass a longer --auth-timeout, \
                or use --grant-type device-code if the browser cannot reach this machine";
    match sources {
        Sources::Browser { redirect, .. } if !browser_came_back => fail(
            Exit::Login,
            format!(
                "no login completed within {budget} (--auth-timeout): the browser never came back to {redirect}; \
                 if its tab shows the provider's error about the redirect URI, register that address for the client \
                 (or pass --redirect-url with one that is), else {next}",
            ),
        ),
        Sources::Browser { .. } => fail(
            Exit::Login,
            format!("no login completed within {budget} (--auth-timeout); {next}"),
        ),
        Sources::Keyboard(_) => {
            crate::log::stderr(format_args!("\n")); // Ends the prompt's line.
            fail(
                Exit::Login,
                format!(
                    "no login code was pasted within {budget} (--auth-timeout); run `kubecred login` to try again, or pass a longer --auth-timeout",
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests;
