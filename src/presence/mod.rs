//! The person kubecred may ask: whether one is here and how to reach them — a terminal
//! (prompts, the spinner, the device code's text), a desktop (the browser, a device login's page,
//! notifications) — decided from the session (`desktop`: a display that answers, SSH, WSL,
//! macOS's GUI session, Windows' interactive session; `browser`: a launcher). Everything here
//! writes to stderr only, or to the desktop; never to stdout.

pub mod browser;
pub mod desktop;
pub mod device_display;
pub mod device_page;
pub mod notify;
pub mod progress;
pub mod prompt;

use std::io::{self, IsTerminal};

/// Whether a person may be at a terminal: stdin or stderr is one (kubectl hands the plugin its
/// stderr always, its stdin only in interactive mode). Callers without one (an IDE, a
/// dashboard, CI) get the desktop's ways instead (`desktop.rs`), or none.
pub fn terminal_attached() -> bool {
    io::stdin().is_terminal() || io::stderr().is_terminal()
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn stdin_is_never_interactive_unless_client_go_says_so() {
        assert!(!super::stdin_is_interactive(false));
    }
}
