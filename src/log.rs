//! Verbose diagnostics on stderr (`-v`, `-vv`). Never pass a secret's value here: use the
//! `Secret` newtype, whose Display prints `****`.

use std::sync::atomic::{AtomicU8, Ordering};

static LEVEL: AtomicU8 = AtomicU8::new(0);

pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

pub fn enabled(level: u8) -> bool {
    LEVEL.load(Ordering::Relaxed) >= level
}

/// `debug!(1, "...")` prints at `-v`, `debug!(2, ...)` at `-vv`.
#[macro_export]
macro_rules! debug {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            eprintln!("kubecred: {}", format_args!($($arg)*));
        }
    };
}

/// A message the user should always see on stderr (a warning or a login prompt).
pub fn notice(message: impl std::fmt::Display) {
    eprintln!("kubecred: {message}");
}
