//! A spinner with the time left, on stderr, while a person is awaited (a browser login or a
//! device-flow approval), so that a terminal that seems stuck says what it waits for.
//!
//! Shown only when stderr is a terminal (never in a log file or a pipe, where `\r` redraws are
//! noise), never on stdout, and never while the user may be typing a pasted code (a redraw would
//! garble the echoed line): the callers start it only when nothing reads stdin. Colour only on a
//! terminal, and never when `NO_COLOR` is set to anything non-empty (<https://no-color.org>).
//! The drawing thread stops at the deadline or when the [`Spinner`] is dropped, and clears its
//! line; it never outlives the wait it decorates by more than one tick.

use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK: Duration = Duration::from_millis(120);

/// Whether output to a terminal may be coloured: `NO_COLOR` (any non-empty value) says no.
pub fn colour_allowed(is_terminal: bool, no_color: Option<&str>) -> bool {
    is_terminal && no_color.is_none_or(str::is_empty)
}

/// One line of the spinner: frame, what is awaited, time left (whole seconds).
pub fn frame_line(tick: usize, label: &str, left: Duration, colour: bool) -> String {
    let frame = FRAMES[tick % FRAMES.len()];
    let left = crate::duration::display_whole_seconds(left);
    if colour {
        // Cyan frame, dim remainder: readable on light and dark terminals.
        format!("\r\x1b[2K\x1b[36m{frame}\x1b[0m {label} \x1b[2m({left} left)\x1b[0m")
    } else {
        format!("\r\x1b[2K{frame} {label} ({left} left)")
    }
}

/// A running spinner; dropping it stops the thread and clears the line.
pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts a spinner until `deadline`, if stderr is a terminal (as `presence` found it);
    /// otherwise does nothing.
    pub fn start(label: &str, deadline: Instant, presence: &super::Presence) -> Spinner {
        let idle = Spinner {
            stop: None,
            thread: None,
        };
        if !presence.stderr() {
            return idle;
        }
        let colour = colour_allowed(
            true,
            std::env::var(crate::env_vars::NO_COLOR).ok().as_deref(),
        );
        let label = crate::text::printable_brief(label, 100).into_owned();
        let (stop, stopped) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || {
                let mut tick = 0;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let line = frame_line(tick, &label, left, colour);
                    let _ = std::io::stderr().lock().write_all(line.as_bytes());
                    tick += 1;
                    match stopped.recv_timeout(TICK) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        _ => break,
                    }
                }
                let _ = std::io::stderr().lock().write_all(b"\r\x1b[2K");
            });
        match spawned {
            Ok(thread) => Spinner {
                stop: Some(stop),
                thread: Some(thread),
            },
            Err(_) => idle,
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        assert!(colour_allowed(true, None));
        assert!(colour_allowed(true, Some("")));
        assert!(!colour_allowed(true, Some("1")));
        assert!(!colour_allowed(false, None));
    }

    #[test]
    fn a_frame_says_what_is_awaited_and_the_time_left() {
        let plain = frame_line(
            0,
            "Waiting for the browser login",
            Duration::from_secs(95),
            false,
        );
        assert!(
            plain.starts_with("\r\x1b[2K⠋ Waiting for the browser login ("),
            "{plain:?}"
        );
        assert!(plain.ends_with(" left)"), "{plain:?}");
        assert!(!plain[1..].contains("\x1b[3"), "no colour: {plain:?}");
        let coloured = frame_line(1, "x", Duration::from_secs(5), true);
        assert!(coloured.contains("\x1b[36m⠙"), "{coloured:?}");
    }

    #[test]
    fn without_a_terminal_nothing_is_started() {
        // The test harness captures stderr: not a terminal.
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return;
        }
        let spinner = Spinner::start(
            "x",
            Instant::now() + Duration::from_secs(60),
            &super::super::Presence::of_this_run(false),
        );
        assert!(spinner.thread.is_none());
    }
}
