//! Reading what the user pastes on stdin: the authorization code, or the whole URL the browser was
//! sent to after logging in.
//!
//! This is the way out for SSH sessions: the browser runs on the user's own machine, so its
//! redirect to `http://localhost:PORT/...` cannot reach kubecred on the remote one. The failed
//! page's address bar still holds the code, and pasting that URL finishes the login. It is also
//! the whole of `--grant-type authcode-keyboard`. Stdin is read only when client-go handed it to
//! us (`spec.interactive`) and it is a terminal: otherwise it belongs to someone else.
//!
//! This module only reads lines. What a line means is `callback.rs`'s to say, and `wait.rs`
//! waits for it alongside the browser.

use std::io::{self, BufRead, Read};
use std::sync::mpsc;
use std::time::Instant;

/// A longer line is not a URL anyone pasted; reading it in pieces keeps memory bounded.
const MAX_LINE_BYTES: u64 = 64 * 1024;

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
    /// Reads the process's stdin. Call only when the run's presence says it may
    /// (`crate::presence::Presence::stdin`).
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
    pub(crate) fn line_before(&self, deadline: Instant) -> Pasted {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Pasted::Line(line),
            Err(mpsc::RecvTimeoutError::Timeout) => Pasted::NothingYet,
            Err(mpsc::RecvTimeoutError::Disconnected) => Pasted::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::time::Duration;

    #[test]
    fn lines_come_trimmed_then_the_source_closes() {
        let source = PasteSource::from_reader(Cursor::new("  4/0AbC  \n\nsecond\r\n"));
        let soon = Instant::now() + Duration::from_secs(5);
        for want in ["4/0AbC", "", "second"] {
            match source.line_before(soon) {
                Pasted::Line(line) => assert_eq!(line, want),
                _ => panic!("expected the line {want:?}"),
            }
        }
        assert!(matches!(source.line_before(soon), Pasted::Closed));
    }

    #[test]
    fn a_silent_reader_gives_nothing_until_the_deadline() {
        let (reader, _writer) = io::pipe().unwrap();
        let source = PasteSource::from_reader(io::BufReader::new(reader));
        assert!(matches!(source.try_line(), Pasted::NothingYet));
        let started = Instant::now();
        let deadline = started + Duration::from_millis(100);
        assert!(matches!(source.line_before(deadline), Pasted::NothingYet));
        assert!(Instant::now() >= deadline);
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
