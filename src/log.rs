//! Everything kubecred writes to stderr goes through here: verbose diagnostics (`-v`, `-vv`),
//! notices, prompts and the one error line. Never pass a secret's value here: use the `Secret`
//! newtype, whose Display prints `****`.
//!
//! Writing to stderr never fails the process. `eprintln!` panics when the write fails (a closed
//! pipe: kubectl or a wrapper went away, `2>&-`), and the release profile aborts on panic: the
//! credential would be lost, and a token obtained but not yet saved with it. [`stderr`] ignores
//! write errors instead; clippy.toml forbids `eprint!`/`eprintln!` so that no new call bypasses
//! it.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

static LEVEL: AtomicU8 = AtomicU8::new(0);

pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

pub fn enabled(level: u8) -> bool {
    LEVEL.load(Ordering::Relaxed) >= level
}

/// Writes `text` to stderr and flushes it, ignoring every error: stderr is for people, and a
/// reader that went away must not cost the credential on stdout (SIGPIPE is ignored in `main`,
/// so a closed pipe is an `EPIPE` error here, dropped).
pub fn stderr(text: std::fmt::Arguments<'_>) {
    // Unit tests: through the test harness's capture (which sees only the print macros), so
    // that passing tests stay quiet.
    #[cfg(test)]
    #[allow(clippy::disallowed_macros)]
    {
        eprint!("{text}");
        return;
    }
    #[allow(unreachable_code)]
    let mut handle = std::io::stderr().lock();
    let _ = handle.write_fmt(text);
    let _ = handle.flush();
}

/// `debug!(1, "...")` prints at `-v`, `debug!(2, ...)` at `-vv`.
#[macro_export]
macro_rules! debug {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            $crate::log::stderr(format_args!("kubecred: {}\n", format_args!($($arg)*)));
        }
    };
}

/// A message the user should always see on stderr (a warning or a login prompt).
pub fn notice(message: impl std::fmt::Display) {
    stderr(format_args!("kubecred: {message}\n"));
}

/// The one error line of a failed run.
pub fn error_line(message: impl std::fmt::Display) {
    stderr(format_args!("kubecred: error: {message}\n"));
}
