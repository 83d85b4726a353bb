//! Shows the user a login URL: always printed on stderr first, then opened in a browser unless
//! `--skip-open-browser`.
//!
//! A browser launcher must never write to kubecred's stdout, which carries the ExecCredential
//! JSON and nothing else. So a launcher we run gets stdin from /dev/null and our *stderr* as its
//! stdout. The `webbrowser` crate is used only where it starts no child processes with our stdout
//! (macOS and Windows); on Linux and the BSDs it would run text-mode browsers such as lynx in the
//! foreground with our stdout, so there we run `xdg-open` (or WSL's `wslview`) ourselves.
//! We never wait for a launcher to finish: some stay attached as long as the browser runs.

use crate::config::BrowserChoice;
use crate::debug;
#[cfg(all(unix, not(target_os = "macos")))]
use crate::env_vars;
use crate::error::{fail, Exit};
use crate::log::notice;
use crate::text::printable;
use std::io;
use std::process::{Child, Command, Stdio};
use url::Url;

/// Prints `url` on stderr and opens it as `choice` says.
///
/// A `--browser-command` that cannot be started is an error (the setting is wrong); the system
/// browser failing to open is only a notice, since the URL is on screen and the login completes
/// just as well when the user opens it by hand.
///
/// Returns whether a browser (or the user's launcher) was started, so that a caller with no
/// other way for the login to complete can fail at once instead of waiting for nothing.
pub fn open(url: &str, choice: &BrowserChoice) -> anyhow::Result<bool> {
    let shown = printable(url);
    if *choice == BrowserChoice::Skip {
        notice(format!("open this URL in a browser to log in: {shown}"));
        return Ok(false);
    }
    notice(format!(
        "opening the browser to log in; if it does not open, visit {shown}"
    ));
    // The URL comes from the provider's metadata: make sure a launcher receives a web address,
    // not something it would take for an option (`--...`) or a local file.
    if !is_web_url(url) {
        notice(
            "not opening a browser for a URL that is not http(s); open it by hand if you trust it",
        );
        return Ok(false);
    }
    match choice {
        BrowserChoice::Skip => Ok(false),
        BrowserChoice::Command(words) => open_with_command(words, url).map(|()| true),
        BrowserChoice::System => match open_with_system_browser(url) {
            Ok(()) => Ok(true),
            Err(why) => {
                notice(format!(
                    "could not open a browser ({why}); open the URL above by hand"
                ));
                Ok(false)
            }
        },
    }
}

/// Opens the device flow's verification page when a browser is at hand, and says nothing when
/// none is: the URL and the code are on screen already, and the device flow's usual home is a
/// machine without a browser (SSH), where a failure is expected, not news. `-v` tells what
/// happened.
pub fn open_quietly(url: &str, choice: &BrowserChoice) {
    if !is_web_url(url) {
        return;
    }
    let opened = match choice {
        BrowserChoice::Skip => return,
        BrowserChoice::Command(words) => {
            open_with_command(words, url).map_err(|err| crate::error::one_line(&err))
        }
        BrowserChoice::System => open_with_system_browser(url),
    };
    if let Err(why) = opened {
        debug!(1, "not opening a browser for the device login: {why}");
    }
}

fn is_web_url(url: &str) -> bool {
    Url::parse(url).is_ok_and(|parsed| matches!(parsed.scheme(), "http" | "https"))
}

/// Runs `words[0]` with `words[1..]` and the URL as the last argument, without a shell.
fn open_with_command(words: &[String], url: &str) -> anyhow::Result<()> {
    let Some((program, arguments)) = words.split_first() else {
        return Err(fail(
            Exit::Input,
            "the browser command is empty; fix --browser-command or $BROWSER",
        ));
    };
    match spawn_launcher(program, arguments, url) {
        Ok(child) => {
            reap_in_background(child, program.clone());
            Ok(())
        }
        Err(err) => {
            let why = if err.kind() == io::ErrorKind::NotFound {
                "no such program".to_string()
            } else {
                err.to_string()
            };
            Err(fail(
                Exit::Input,
                format!(
                    "cannot run the browser command {program:?} ({why}); fix --browser-command or $BROWSER, \
                     or pass --skip-open-browser and open the printed URL yourself"
                ),
            ))
        }
    }
}

/// Starts a launcher whose stdout is our stderr and whose stdin is empty.
fn spawn_launcher(program: &str, arguments: &[String], url: &str) -> io::Result<Child> {
    Command::new(program)
        .args(arguments)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()))
        .spawn()
}

/// Waits for the launcher on a detached thread, so that it leaves no zombie process and a
/// failure is reported, while the login goes on without waiting for it.
fn reap_in_background(mut child: Child, program: String) {
    std::thread::spawn(move || match child.wait() {
        Ok(status) if status.success() => {}
        Ok(status) => notice(format!(
            "the browser launcher {program} exited with {status}; open the URL above by hand"
        )),
        Err(err) => debug!(1, "waiting for the browser launcher {program}: {err}"),
    });
}

#[cfg(any(target_os = "macos", windows))]
fn open_with_system_browser(url: &str) -> Result<(), String> {
    // macOS: LaunchServices, no child process. Windows: the browser is started with its
    // output discarded (the crate's default `suppress_output`).
    webbrowser::open(url).map_err(|err| err.to_string())
}

#[cfg(all(unix, not(target_os = "macos")))]
fn open_with_system_browser(url: &str) -> Result<(), String> {
    // Read here rather than in env_vars.rs for now: they describe the desktop session, not kubecred.
    let is_set = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
    let mut launchers = Vec::new();
    if is_set(env_vars::WSL_DISTRO_NAME) {
        // wslview (wslu) opens the Windows default browser.
        launchers.push("wslview");
    }
    if is_set(env_vars::DISPLAY) || is_set(env_vars::WAYLAND_DISPLAY) {
        launchers.push("xdg-open");
    }
    if launchers.is_empty() {
        // Without a graphical session xdg-open falls back to text browsers, which would take
        // over the terminal (and stdin, where the user may paste). An SSH session, typically.
        return Err(
            "there is no graphical session here: DISPLAY and WAYLAND_DISPLAY are unset".into(),
        );
    }
    for launcher in &launchers {
        match spawn_launcher(launcher, &[], url) {
            Ok(child) => {
                debug!(1, "opening the login URL with {launcher}");
                reap_in_background(child, launcher.to_string());
                return Ok(());
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(format!("{launcher}: {err}")),
        }
    }
    Err(format!("{} is not installed", launchers.join(" or ")))
}

#[cfg(not(any(unix, windows)))]
fn open_with_system_browser(_url: &str) -> Result<(), String> {
    Err("kubecred does not know how to open a browser on this platform".into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::error::exit_code_of;
    use std::process::Command;

    const CHILD_MARKER: &str = "KUBECRED_TEST_BROWSER_CHILD";
    const URL: &str = "https://idp.example/authorize?client_id=k&state=s";

    /// The child half of [`a_browser_commands_stdout_goes_to_stderr`], which runs it: opens a
    /// "browser" that writes to its stdout.
    #[test]
    #[ignore = "the child half of a_browser_commands_stdout_goes_to_stderr, run by it"]
    fn child_process_opens_a_noisy_browser() {
        assert!(
            std::env::var_os(CHILD_MARKER).is_some(),
            "the child half of a_browser_commands_stdout_goes_to_stderr, run by it"
        );
        let noisy = BrowserChoice::Command(vec![
            "sh".into(),
            "-c".into(),
            "echo BROWSER-NOISE; echo \"url=$0\"".into(),
        ]);
        open(URL, &noisy).unwrap();
        // The launcher runs detached; give it time to write before this process exits (the
        // parent's pipes stay open until the launcher exits anyway).
        std::thread::sleep(std::time::Duration::from_millis(300));
    }

    #[test]
    fn a_browser_commands_stdout_goes_to_stderr() {
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "--ignored",
                "login::browser::tests::child_process_opens_a_noisy_browser",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_MARKER, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "stdout: {stdout}\nstderr: {stderr}"
        );
        assert!(!stdout.contains("BROWSER-NOISE"), "stdout: {stdout}");
        assert!(stderr.contains("BROWSER-NOISE"), "stderr: {stderr}");
        assert!(
            stderr.contains(&format!("url={URL}")),
            "the URL is the last argument: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "opening the browser to log in; if it does not open, visit {URL}"
            )),
            "stderr: {stderr}"
        );
    }

    #[test]
    fn a_missing_browser_command_names_it_and_suggests_skipping() {
        let missing = BrowserChoice::Command(vec![
            "/nonexistent/kubecred-browser".into(),
            "--new-tab".into(),
        ]);
        let err = open(URL, &missing).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        let message = err.to_string();
        assert!(
            message.contains("\"/nonexistent/kubecred-browser\""),
            "{message}"
        );
        assert!(message.contains("--skip-open-browser"), "{message}");
    }

    #[test]
    fn skip_and_non_web_urls_start_nothing() {
        // A command that would fail the test by failing to spawn, were it run.
        let never = BrowserChoice::Command(vec!["/nonexistent/never-run".into()]);
        open(URL, &BrowserChoice::Skip).unwrap();
        open("file:///etc/passwd", &never).unwrap();
        open("--help", &never).unwrap();
    }
}
