//! The callers of the decision tables' tests, as the facts each one's session gives: who runs
//! kubectl, and what is there to reach a person through. Shared by every table (`presence`,
//! `acquire`'s preflight and notifications, `grants`' choice of login), so that a row means the
//! same caller everywhere.

use super::Presence;
use super::desktop::{Desktop, NoDesktop};

/// kubectl in a terminal on a workstation: stdin and stderr are the terminal, a display answers.
pub fn terminal_on_a_desktop() -> Presence {
    Presence::given(true, true, Ok(Desktop::Display("DISPLAY=:0".into())), None)
}

/// kubectl in a terminal over SSH: no desktop of the person's here.
pub fn ssh_terminal() -> Presence {
    Presence::given(
        true,
        true,
        Err(NoDesktop(
            "an SSH session, DISPLAY and WAYLAND_DISPLAY unset".into(),
        )),
        None,
    )
}

/// kubectl with a terminal on stderr only (`interactiveMode: Never`, a pipe on stdin).
pub fn terminal_without_stdin() -> Presence {
    Presence::given(true, false, Ok(Desktop::Display("DISPLAY=:0".into())), None)
}

/// An IDE or a dashboard on a person's desktop: no terminal, a display and a launcher.
pub fn ide_on_a_desktop() -> Presence {
    Presence::given(
        false,
        false,
        Ok(Desktop::Display("DISPLAY=:0".into())),
        None,
    )
}

/// An IDE on a desktop where no browser launcher is installed.
pub fn ide_without_a_launcher() -> Presence {
    Presence::given(
        false,
        false,
        Ok(Desktop::Display("DISPLAY=:0".into())),
        Some("no browser launcher installed: xdg-open"),
    )
}

/// A CI job, a cron job, a service, a container: no terminal, no desktop.
pub fn ci() -> Presence {
    Presence::given(
        false,
        false,
        Err(NoDesktop(
            "no graphical session: DISPLAY and WAYLAND_DISPLAY unset".into(),
        )),
        None,
    )
}
