//! The person kubecred may ask, and how to reach them: decided once per run into one value,
//! [`Presence`] — a terminal (stdin or stderr; stdin ours to read), a person's desktop (SSH, WSL,
//! a display that answers, macOS's GUI session, Windows' interactive session: `desktop`), a
//! browser launcher (`browser`) — that the login's preflight, the grant, the device code's
//! placement and the desktop notification rule all read. The cheap facts (is a descriptor a
//! terminal) are read when the value is made; the probes (a display's socket, the launchers on
//! PATH) on first use, once, so a caller that decides on a cheap fact first never probes.
//!
//! The decisions made from it are functions of the value (here, and `login_step.rs`'s
//! preflight, `grants/mod.rs`'s choice of login for `--grant-type auto`), each tested as a table of
//! callers — a terminal, an SSH terminal, an IDE on a desktop, one without a launcher, CI — on
//! facts given to [`Presence::given`], with no display or terminal needed.
//!
//! The rest of the folder reaches the person: `browser` opens URLs, `device_display` prints a
//! device code (and its QR code), `device_page` puts a device code in the browser where no
//! terminal shows it, `notify` raises a desktop notification, `prompt` asks the password grant's
//! questions on the terminal, `progress` is the spinner while a person is awaited. Everything here
//! writes to stderr only, or to the desktop; never to stdout.

pub mod browser;
pub mod desktop;
pub mod device_display;
pub mod device_page;
pub mod notify;
pub mod progress;
pub mod prompt;

use crate::config::BrowserChoice;
use desktop::{Desktop, NoDesktop};
use std::io::{self, IsTerminal};
use std::sync::OnceLock;

/// Who is here to be asked, decided once per run (see the module comment).
#[derive(Debug)]
pub struct Presence {
    /// stdin or stderr is a terminal: a person may be reading this run's stderr (kubectl hands
    /// the plugin its stderr always, its stdin only in interactive mode).
    terminal: bool,
    /// stderr itself is a terminal: what may be redrawn there (the spinner).
    stderr: bool,
    /// stdin is ours to read a pasted code or a password from: client-go said the session is
    /// interactive, stdin is a terminal, and this process is in its foreground.
    stdin: bool,
    /// A person's desktop in this session, probed on first use.
    desktop: OnceLock<Result<Desktop, NoDesktop>>,
    /// Why the system browser cannot open on the desktop (no launcher installed), probed on
    /// first use; `None`: one can.
    no_launcher: OnceLock<Option<String>>,
}

/// Where a device login's code reaches the person ([`Presence::code_display`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeDisplay {
    /// On stderr only: a person reads the terminal, or chose it (`--skip-open-browser`), or no
    /// browser can open here.
    Stderr,
    /// On stderr, and the verification page opened in the browser for convenience (a failure
    /// to open is no error: the code is on screen).
    StderrAndBrowser,
    /// No terminal shows it: in the browser only (the provider's complete link, or a local page
    /// with the code); a browser that does not open fails the login.
    BrowserOnly,
}

impl Presence {
    /// This run's presence: the terminal facts now, the desktop and launchers when first asked.
    /// `exec_interactive`: client-go's `spec.interactive` (it handed us its stdin).
    pub fn of_this_run(exec_interactive: bool) -> Presence {
        let stderr = io::stderr().is_terminal();
        Presence {
            terminal: stdin_is_a_terminal() || stderr,
            stderr,
            stdin: stdin_is_interactive(exec_interactive),
            desktop: OnceLock::new(),
            no_launcher: OnceLock::new(),
        }
    }

    /// Nobody: the background renewal's, which never asks a person (its stdio is the null
    /// device, and it runs only grants that need nobody).
    pub fn nobody() -> Presence {
        Presence {
            terminal: false,
            stderr: false,
            stdin: false,
            desktop: OnceLock::from(Err(NoDesktop("the background renewal asks nobody".into()))),
            no_launcher: OnceLock::new(),
        }
    }

    /// A presence of stated facts, for the decision tables' tests: nothing is probed.
    #[cfg(test)]
    pub fn given(
        terminal: bool,
        stdin: bool,
        desktop: Result<Desktop, NoDesktop>,
        no_launcher: Option<&str>,
    ) -> Presence {
        Presence {
            terminal,
            stderr: terminal,
            stdin,
            desktop: OnceLock::from(desktop),
            no_launcher: OnceLock::from(no_launcher.map(str::to_string)),
        }
    }

    /// Whether the desktop was probed yet (the tests of the cheap checks' order).
    #[cfg(test)]
    pub fn desktop_probed(&self) -> bool {
        self.desktop.get().is_some()
    }

    /// Whether a person may be at a terminal reading this run's stderr.
    pub fn terminal(&self) -> bool {
        self.terminal
    }

    /// Whether stderr itself is a terminal, where a line may be redrawn (the spinner).
    pub fn stderr(&self) -> bool {
        self.stderr
    }

    /// Whether stdin is ours to read (a pasted code, a password): see [`stdin_is_interactive`].
    pub fn stdin(&self) -> bool {
        self.stdin
    }

    /// A person's desktop in this session, or why there is none (probed once, on first ask).
    pub fn desktop(&self) -> Result<&Desktop, &NoDesktop> {
        self.desktop.get_or_init(desktop::probe).as_ref()
    }

    /// Why no browser can open as `choice` says, if none can: `--skip-open-browser`; for the
    /// system browser, no person's desktop here or no launcher installed. A `--browser-command`
    /// always can (it is the user's to say).
    pub fn browser_cannot_open(&self, choice: &BrowserChoice) -> Option<String> {
        match choice {
            BrowserChoice::Skip => Some("--skip-open-browser".into()),
            BrowserChoice::Command(_) => None,
            BrowserChoice::System => self.system_browser_cannot_open(),
        }
    }

    /// Why the system browser cannot open here, if it cannot (no desktop, no launcher).
    pub fn system_browser_cannot_open(&self) -> Option<String> {
        match self.desktop() {
            Err(no_desktop) => Some(no_desktop.0.clone()),
            Ok(desktop) => self
                .no_launcher
                .get_or_init(|| browser::no_launcher_for(desktop))
                .clone(),
        }
    }

    /// Where a device login's code goes for a person to see it, given the browser setting.
    /// With a terminal: on stderr, and the browser too where one can open. Without one: the
    /// browser only where one can open; where none can, stderr (said by the caller's own rules:
    /// `--skip-open-browser` chose it).
    pub fn code_display(&self, choice: &BrowserChoice) -> CodeDisplay {
        if self.browser_cannot_open(choice).is_some() {
            CodeDisplay::Stderr
        } else if self.terminal {
            CodeDisplay::StderrAndBrowser
        } else {
            CodeDisplay::BrowserOnly
        }
    }
}

/// Whether stdin is a terminal: what a command a person runs (`login`, `whoami`) takes for
/// client-go's `spec.interactive`, which no client-go set for it.
pub fn stdin_is_a_terminal() -> bool {
    io::stdin().is_terminal()
}

/// Whether kubecred may read stdin: client-go sets `spec.interactive` only when it passed its
/// own stdin to the plugin, and a pipe is not a person who could paste anything.
fn stdin_is_interactive(exec_interactive: bool) -> bool {
    exec_interactive && stdin_is_a_terminal() && stdin_may_be_read_without_stopping()
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
pub(crate) mod callers;

#[cfg(test)]
mod tests {
    use super::callers::*;
    use super::*;

    #[test]
    fn stdin_is_never_interactive_unless_client_go_says_so() {
        assert!(!stdin_is_interactive(false));
        assert!(!Presence::of_this_run(false).stdin());
    }

    /// Where a device code goes, per caller and browser setting.
    #[test]
    fn the_device_code_reaches_each_caller_where_it_looks() {
        use CodeDisplay::*;
        let system = BrowserChoice::System;
        let skip = BrowserChoice::Skip;
        let command = BrowserChoice::Command(vec!["open-it".into()]);
        let table = [
            // caller, --browser-command / system / --skip-open-browser
            (
                "terminal on a desktop",
                terminal_on_a_desktop(),
                [StderrAndBrowser, StderrAndBrowser, Stderr],
            ),
            (
                "SSH terminal",
                ssh_terminal(),
                [StderrAndBrowser, Stderr, Stderr],
            ),
            (
                "IDE on a desktop",
                ide_on_a_desktop(),
                [BrowserOnly, BrowserOnly, Stderr],
            ),
            (
                "IDE, no launcher",
                ide_without_a_launcher(),
                [BrowserOnly, Stderr, Stderr],
            ),
            ("CI", ci(), [BrowserOnly, Stderr, Stderr]),
        ];
        for (caller, presence, expected) in table {
            let got = [&command, &system, &skip].map(|choice| presence.code_display(choice));
            assert_eq!(got, expected, "{caller}");
        }
    }

    #[test]
    fn the_system_browser_says_why_it_cannot_open() {
        assert_eq!(terminal_on_a_desktop().system_browser_cannot_open(), None);
        assert_eq!(
            ssh_terminal().system_browser_cannot_open().as_deref(),
            Some("an SSH session, DISPLAY and WAYLAND_DISPLAY unset")
        );
        assert_eq!(
            ide_without_a_launcher()
                .system_browser_cannot_open()
                .as_deref(),
            Some("no browser launcher installed: xdg-open")
        );
    }
}
