//! The `kubecred` binary, the one kubectl starts on every command: it answers `get-token` from
//! the cache, and hands every other run to `kubecred-full`, installed beside it, by replacing
//! itself with it (exec: same argv[0], arguments, environment, terminal and exit code; on
//! Windows a child whose exit code it passes on). binaries.rs finds it.
//!
//! Why two binaries: the loader maps and relocates the whole binary before `main`, and a cache
//! hit touches code spread across it. With every command linked in (clap, the HTTP and TLS
//! stack, the keyring clients, the login flows), `kubecred` was 7 MB with about 6,000
//! relocations, and a hit took 1.26× the time of `cat` reading the entry; the front is about
//! 1 MB and a hit takes about what `cat` does (bench/RESULTS.md). A miss pays one more exec,
//! about a millisecond, on top of a network round trip or a login.
//!
//! The front runs kubecred-full's own hit code, so the two cannot disagree: the table parse of
//! get-token's command line (cli/fast_get_token.rs, held to clap's definition by its tests), the
//! same settings ([`commands::get_token_settings`]), cache key and entry reader, and the same
//! 401 judgement and hand-out stamp ([`acquire::front_hit`]). It hands over everything else:
//! - anything but a plain get-token line: other commands, help, `--version`, usage errors;
//! - `--force-refresh`, `keyring` or `none` storage, a missing, expiring, corrupt or foreign
//!   entry, settings that do not resolve, a client's re-run after a 401;
//! - any run with something to say on stderr (`-v`, a notice): the front holds stderr back
//!   ([`log::hold_back`]) and kubecred-full says it, once.
//!
//! The front neither stamps nor saves before it knows it answers (reading an entry may tighten
//! a loose file to 0600, as any read does), so kubecred-full judges the state the front found:
//! a stamp set before a hand-over would look like this client's re-run after a 401. A front
//! started in kubecred-full's place (a copy or link of `kubecred`) sees the hand-over marker
//! ([`HANDED_OVER`]) and fails with one line instead of exec'ing itself for ever.
//! tests/it/binaries.rs checks these, and that the front links none of the code only a miss
//! needs.

use crate::binaries::{sibling, FULL_BINARY, HANDED_OVER, MAIN_BINARY};
use crate::error::Exit;
use crate::{acquire, commands, log};

/// The whole `kubecred` process: the exit code.
pub fn run() -> u8 {
    if std::env::var_os(HANDED_OVER).is_some() {
        // A front handed this run over to "kubecred-full", and that is a front too: stop here,
        // or the two would exec each other for ever.
        let me = std::env::current_exe().unwrap_or_else(|_| FULL_BINARY.into());
        log::error_line(format_args!(
            "{} is a copy of {MAIN_BINARY}, not {FULL_BINARY}; install the {FULL_BINARY} binary \
             built with {MAIN_BINARY} in its place (`cargo install --path .` installs both)",
            me.display()
        ));
        return Exit::Input as u8;
    }
    log::hold_back();
    let answer = answer_from_cache();
    log::stop_holding_back();
    if let Some(document) = answer {
        return crate::entry::print_document(&document);
    }
    let err = hand_over();
    // Only when kubecred-full could not be started (on unix, a successful exec never returns).
    let command = match std::env::args_os().nth(1) {
        Some(word) => format!("{MAIN_BINARY} {}", word.to_string_lossy()),
        None => MAIN_BINARY.to_string(),
    };
    log::error_line(format_args!(
        "{command} runs {FULL_BINARY}, which could not be started: {err}; install \
         {FULL_BINARY} in the same directory as {MAIN_BINARY} (`cargo install --path .` installs \
         both)"
    ));
    Exit::Input as u8
}

/// The ExecCredential when this run is a plain get-token whose fresh credential is in its entry
/// file, and there is nothing to say on stderr; `None` hands the run over.
fn answer_from_cache() -> Option<String> {
    let args = crate::cli::plain_get_token_args(std::env::args_os())?;
    let config = commands::get_token_settings(&args).ok()?;
    // kubecred-full's hit logs at -v: let it.
    if log::enabled(1) {
        return None;
    }
    acquire::front_hit(&config, &crate::clock::SystemClock, || !log::withheld())
}

/// Runs this process's command line in `kubecred-full` instead. On unix the process becomes
/// kubecred-full, and this returns only when that cannot start; elsewhere it runs it as a child
/// and exits with its code.
fn hand_over() -> String {
    let full = match sibling(FULL_BINARY) {
        Ok(path) => path,
        Err(err) => return err.to_string(),
    };
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| MAIN_BINARY.into());
    let mut child = std::process::Command::new(&full);
    child.args(args).env(HANDED_OVER, &argv0);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // argv[0] stays what the user ran, so that help and errors name `kubecred` (or
        // `kubectl kubecred`), as they would have before the hand-over.
        let err = child.arg0(argv0).exec();
        format!("{}: {err}", full.display())
    }
    #[cfg(not(unix))]
    {
        // argv[0] goes by HANDED_OVER alone: a child's argv[0] is its own path.
        match child.status() {
            Ok(status) => std::process::exit(status.code().unwrap_or(Exit::Input as i32)),
            Err(err) => format!("{}: {err}", full.display()),
        }
    }
}
