//! What the user pastes on stdin: the authorization code, or the whole URL the browser was sent
//! to after logging in.
//!
//! This is the way out for SSH sessions: the browser runs on the user's own machine, so its
//! redirect to `http://localhost:PORT/...` cannot reach kubecred on the remote one. The failed
//! page's address bar still holds the code, and pasting that URL finishes the login. It is also
//! the whole of `--grant-type authcode-keyboard`. Stdin is read only when client-go handed it to
//! us (`spec.interactive`) and it is a terminal: otherwise it belongs to someone else.

use crate::error::{fail, Exit};
use crate::login::callback::{interpret_pasted, settle, Origin, StateRule};
use crate::secret::Secret;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::sync::mpsc;
use std::time::Instant;

/// The prompt of [`read_code`].
pub const CODE_PROMPT: &str = "Paste the code (or the whole URL the browser was sent to): ";

/// A longer line is not a URL anyone pasted; reading it in pieces keeps memory bounded.
const MAX_LINE_BYTES: u64 = 64 * 1024;

/// Whether kubecred may read stdin: client-go sets `spec.interactive` only when it passed its
/// own stdin to the plugin, and a pipe is not a person who could paste anything.
pub fn stdin_is_interactive(exec_interactive: bool) -> bool {
    exec_interactive && io::stdin().is_terminal() && stdin_may_be_read_without_stopping()
}

/// A background job that reads its controlling terminal is stopped by SIGTTIN: `kubectl … &`
/// in an interactive shell would freeze in the middle of a login. Only the terminal's
/// foreground process group may read it. A terminal that is not our controlling terminal
/// (tcgetpgrp fails) never stops us.
#[cfg(unix)]
fn stdin_may_be_read_without_stopping() -> bool {
    // SAFETY: both calls only query process state and take no pointers.
    let (foreground, ours) = unsafe { (libc::tcgetpgrp(0), libc::getpgrp()) };
    foreground == -1 || foreground == ours
}

#[cfg(not(unix))]
fn stdin_may_be_read_without_stopping() -> bool {
    true
}

/// Lines typed by the user, read on a background thread so that waits stay bounded by their
/// deadline. The thread may stay blocked in `read` after the login is over; the process exits
/// regardless.
#[derive(Debug)]
pub struct PasteSource {
    lines: mpsc::Receiver<String>,
}

/// One look at a [`PasteSource`].
pub(crate) enum Pasted {
    Line(String),
    NothingYet,
    /// End of input (or a read error): nothing more will come.
    Closed,
}

impl PasteSource {
    /// Reads the process's stdin. Call only when [`stdin_is_interactive`] says so.
    pub fn spawn_stdin() -> Self {
        Self::from_reader(io::BufReader::new(io::stdin()))
    }

    /// Reads lines from any reader (tests use a `Cursor`).
    pub fn from_reader<R: BufRead + Send + 'static>(reader: R) -> Self {
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = reader;
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_LINE_BYTES)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).trim().to_string();
                        if sender.send(text).is_err() {
                            break;
                        }
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
        PasteSource { lines }
    }

    /// A line if one is ready, without waiting.
    pub(crate) fn try_line(&self) -> Pasted {
        match self.lines.try_recv() {
            Ok(line) => Pasted::Line(line),
            Err(mpsc::TryRecvError::Empty) => Pasted::NothingYet,
            Err(mpsc::TryRecvError::Disconnected) => Pasted::Closed,
        }
    }

    /// The next line, waiting until `deadline` at most.
    fn line_before(&self, deadline: Instant) -> Pasted {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Pasted::Line(line),
            Err(mpsc::RecvTimeoutError::Timeout) => Pasted::NothingYet,
            Err(mpsc::RecvTimeoutError::Disconnected) => Pasted::Closed,
        }
    }
}

/// Asks for the code on stderr and reads it from `source` until `deadline`, for
/// `--grant-type authcode-keyboard`. A pasted URL must carry this login's state if it carries
/// one; a line that is not usable is explained and asked for again.
pub fn read_code(
    source: impl Into<Option<PasteSource>>,
    expected_state: &str,
    deadline: Instant,
) -> anyhow::Result<Secret> {
    let Some(source) = source.into() else {
        return Err(fail(
            Exit::Login,
            "cannot ask for the login code: stdin is not an interactive terminal \
             (kubectl passes it only with interactiveMode IfAvailable or Always on a TTY); use --grant-type device-code or authcode",
        ));
    };
    let budget = deadline.saturating_duration_since(Instant::now());
    loop {
        eprint!("{CODE_PROMPT}");
        let _ = io::stderr().flush();
        match source.line_before(deadline) {
            Pasted::Line(line) => {
                if let Some(verdict) = interpret_pasted(&line, expected_state, StateRule::IfPresent)
                {
                    if let Some(code) = settle(verdict, Origin::Paste)? {
                        return Ok(code);
                    }
                }
            }
            Pasted::Closed => {
                eprintln!();
                return Err(fail(
                    Exit::Login,
                    "stdin closed before a login code was pasted; run `kubecred login` in a terminal to log in",
                ));
            }
            Pasted::NothingYet => {
                eprintln!();
                return Err(fail(
                    Exit::Login,
                    format!(
                        "no login code was pasted within {} (--auth-timeout); run `kubecred login` to try again, or pass a longer --auth-timeout",
                        crate::duration::display_whole_seconds(budget)
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code_of;
    use std::io::Cursor;
    use std::time::Duration;

    const STATE: &str = "state-xyz";

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    fn source(text: &str) -> PasteSource {
        PasteSource::from_reader(Cursor::new(text.to_string()))
    }

    #[test]
    fn a_bare_code_is_the_code() {
        let code = read_code(source("  4/0AbC-d_e.f~g  \n"), STATE, soon()).unwrap();
        assert_eq!(code.expose(), "4/0AbC-d_e.f~g");
    }

    #[test]
    fn a_full_redirect_url_gives_its_code() {
        let url = format!("http://localhost:8000/callback?state={STATE}&code=c%3D1\n");
        assert_eq!(
            read_code(source(&url), STATE, soon()).unwrap().expose(),
            "c=1"
        );
        // authcode-keyboard: a URL without state is fine, its code is used.
        let url = "https://idp.example/oob?code=shown\n";
        assert_eq!(
            read_code(source(url), STATE, soon()).unwrap().expose(),
            "shown"
        );
    }

    #[test]
    fn a_forged_url_is_refused_and_asked_for_again() {
        let text = format!(
            "\nhttp://localhost/callback?code=evil&state=other\nnot a code\nhttp://localhost/callback?code=good&state={STATE}\n"
        );
        assert_eq!(
            read_code(source(&text), STATE, soon()).unwrap().expose(),
            "good"
        );
    }

    #[test]
    fn a_pasted_provider_error_ends_the_login() {
        let text = format!("http://localhost/callback?error=access_denied&state={STATE}\n");
        let err = read_code(source(&text), STATE, soon()).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert!(
            err.to_string()
                .contains("refused the login: access_denied;"),
            "{err}"
        );
    }

    #[test]
    fn end_of_input_and_deadline_end_the_wait() {
        let err = read_code(source(""), STATE, soon()).unwrap_err();
        assert!(err.to_string().starts_with("stdin closed before"), "{err}");

        let (reader, _writer) = io::pipe().unwrap();
        let silent = PasteSource::from_reader(io::BufReader::new(reader));
        let started = Instant::now();
        let err =
            read_code(silent, STATE, Instant::now() + Duration::from_millis(200)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert!(
            err.to_string()
                .starts_with("no login code was pasted within 1s"),
            "{err}"
        );
    }

    #[test]
    fn no_source_is_refused() {
        let err = read_code(None, STATE, soon()).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert!(
            err.to_string().contains("not an interactive terminal"),
            "{err}"
        );
    }

    #[test]
    fn stdin_is_never_interactive_unless_client_go_says_so() {
        assert!(!stdin_is_interactive(false));
    }
}
