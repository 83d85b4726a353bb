//! Shows the user a login URL: always printed on stderr first, then opened in a browser unless
//! `--skip-open-browser`.
//!
//! A browser launcher must never write to kubecred's stdout, which carries the ExecCredential
//! JSON and nothing else. So a launcher we run gets stdin from /dev/null and our *stderr* as its
//! stdout. The `webbrowser` crate is used only where it starts no child processes with our stdout
//! (macOS and Windows); on Linux and the BSDs it would run text-mode browsers such as lynx in the
//! foreground with our stdout, so there we run `xdg-open` ourselves, or in WSL `wslview`, then the
//! Windows side's `cmd.exe`, `powershell.exe` or `explorer.exe` (recent WSL distributions lack
//! wslview), each given the URL so that its `&` and `%` reach the browser intact.
//! We never wait for a launcher to finish: some stay attached as long as the browser runs.
//! Whether a browser can open at all in this session is the run's [`Presence`]'s to say (no
//! person's desktop here, or [`no_launcher_for`] it): `--grant-type auto` then takes the device
//! flow.

use super::Presence;
use super::desktop::Desktop;
use crate::config::BrowserChoice;
use crate::debug;
use crate::error::{Exit, fail};
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
pub fn open(url: &str, choice: &BrowserChoice, presence: &Presence) -> anyhow::Result<bool> {
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
        BrowserChoice::System => match open_with_system_browser(url, presence) {
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
pub fn open_quietly(url: &str, choice: &BrowserChoice, presence: &Presence) {
    if !is_web_url(url) {
        return;
    }
    let opened = match choice {
        BrowserChoice::Skip => return,
        BrowserChoice::Command(words) => {
            open_with_command(words, url).map_err(|err| crate::error::one_line(&err))
        }
        BrowserChoice::System => open_with_system_browser(url, presence),
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
/// failure is reported, while the login goes on without waiting for it. `explorer.exe` exits
/// with 1 even when it opened the URL: its status is not reported.
fn reap_in_background(mut child: Child, program: String) {
    std::thread::spawn(move || match child.wait() {
        Ok(status) if status.success() || program.ends_with("explorer.exe") => {}
        Ok(status) => notice(format!(
            "the browser launcher {program} exited with {status}; open the URL above by hand"
        )),
        Err(err) => debug!(1, "waiting for the browser launcher {program}: {err}"),
    });
}

/// Why no browser can open on `desktop`, if none can: no launcher installed there.
pub fn no_launcher_for(desktop: &Desktop) -> Option<String> {
    platform::no_launcher_for(desktop)
}

#[cfg(any(target_os = "macos", windows))]
mod platform {
    /// LaunchServices and the shell open URLs wherever there is a desktop.
    pub fn no_launcher_for(_desktop: &super::Desktop) -> Option<String> {
        None
    }
}

#[cfg(any(target_os = "macos", windows))]
fn open_with_system_browser(url: &str, _presence: &Presence) -> Result<(), String> {
    // macOS: LaunchServices, no child process. Windows: the browser is started with its
    // output discarded (the crate's default `suppress_output`).
    webbrowser::open(url).map_err(|err| err.to_string())
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use super::Desktop;
    use crate::env_vars;
    use std::path::PathBuf;

    /// A program that opens a URL in a browser, and how it takes the URL.
    pub struct Launcher {
        pub program: &'static str,
        /// Where WSL mounts it when the Windows PATH is not appended to ours
        /// (`appendWindowsPath=false` in wsl.conf).
        windows_path: Option<&'static str>,
        pub arguments: fn(&str) -> Vec<String>,
    }

    /// The launchers to try on `desktop`, in order: in WSL `wslview`, then the Windows side's
    /// `cmd.exe`, `powershell.exe` and `explorer.exe`, then `xdg-open` when a display is set too
    /// (WSLg); on a display, `xdg-open`.
    pub fn launchers(desktop: &Desktop) -> Vec<Launcher> {
        let mut launchers = Vec::new();
        if *desktop == Desktop::Wsl {
            launchers.extend([
                // wslu's launcher: the Windows default browser, the URL as one argument.
                Launcher {
                    program: "wslview",
                    windows_path: None,
                    arguments: |url| vec![url.into()],
                },
                Launcher {
                    program: "cmd.exe",
                    windows_path: Some("/mnt/c/Windows/System32/cmd.exe"),
                    arguments: |url| vec!["/c".into(), "start".into(), for_cmd(url)],
                },
                Launcher {
                    program: "powershell.exe",
                    windows_path: Some(
                        "/mnt/c/Windows/System32/WindowsPowerShell/v1.0/powershell.exe",
                    ),
                    arguments: |url| {
                        vec![
                            "-NoProfile".into(),
                            "-NonInteractive".into(),
                            "-EncodedCommand".into(),
                            for_powershell(url),
                        ]
                    },
                },
                // explorer takes its command line as it is: a URL has no blanks or quotes.
                Launcher {
                    program: "explorer.exe",
                    windows_path: Some("/mnt/c/Windows/explorer.exe"),
                    arguments: |url| vec![url.into()],
                },
            ]);
        }
        let display_set = [env_vars::DISPLAY, env_vars::WAYLAND_DISPLAY]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
        if matches!(desktop, Desktop::Display(_)) || display_set {
            launchers.push(Launcher {
                program: "xdg-open",
                windows_path: None,
                arguments: |url| vec![url.into()],
            });
        }
        launchers
    }

    impl Launcher {
        /// Where the program is: on PATH, else at its place on the Windows drive.
        pub fn find(&self) -> Option<PathBuf> {
            let on_path = std::env::var_os(env_vars::PATH).and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(self.program))
                    .find(|candidate| is_executable(candidate))
            });
            on_path.or_else(|| {
                self.windows_path
                    .map(PathBuf::from)
                    .filter(|path| is_executable(path))
            })
        }

        pub fn is_windows_program(&self) -> bool {
            self.program.ends_with(".exe")
        }
    }

    fn is_executable(path: &std::path::Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }

    /// Why no browser can open on `desktop`: none of its launchers is installed.
    pub fn no_launcher_for(desktop: &Desktop) -> Option<String> {
        let launchers = launchers(desktop);
        if launchers.iter().all(|launcher| launcher.find().is_none()) {
            let names: Vec<&str> = launchers.iter().map(|l| l.program).collect();
            return Some(format!(
                "no browser launcher installed: {}",
                names.join(", ")
            ));
        }
        None
    }

    /// The URL as one word of a `cmd.exe /c` command line, which WSL passes on as it is (a URL
    /// has no blanks or quotes to make it quote the word). cmd expands `%NAME%` first, whatever
    /// the quoting, and a caret cannot escape a `%` there; but `%^` breaks the name (`%^3A%` names
    /// no variable) and the caret is then removed. Its other metacharacters (`&` would end the
    /// command, `|` `<` `>` `^` `(` `)`) are escaped with a caret.
    pub fn for_cmd(url: &str) -> String {
        let mut word = String::with_capacity(url.len() + 16);
        for c in url.chars() {
            match c {
                '%' => word.push_str("%^"),
                '&' | '|' | '<' | '>' | '^' | '(' | ')' => {
                    word.push('^');
                    word.push(c);
                }
                _ => word.push(c),
            }
        }
        word
    }

    /// `Start-Process 'URL'` as `-EncodedCommand` takes it (base64 of UTF-16LE): no quoting rule
    /// of WSL, of the Windows command line or of PowerShell's parser touches the URL; inside the
    /// single quotes PowerShell expands nothing (`$`, backtick), and a quote is doubled.
    pub fn for_powershell(url: &str) -> String {
        use base64::Engine;
        let script = format!("Start-Process '{}'", url.replace('\'', "''"));
        let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
        base64::engine::general_purpose::STANDARD.encode(utf16)
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
fn open_with_system_browser(url: &str, presence: &Presence) -> Result<(), String> {
    // Without a graphical session xdg-open falls back to text browsers, which would take over
    // the terminal (and stdin, where the user may paste). An SSH session, typically.
    let desktop = presence
        .desktop()
        .map_err(|no_desktop| no_desktop.0.clone())?;
    let launchers = platform::launchers(desktop);
    for launcher in &launchers {
        let Some(path) = launcher.find() else {
            continue;
        };
        let mut command = Command::new(&path);
        command
            .args((launcher.arguments)(url))
            .stdin(Stdio::null())
            .stdout(Stdio::from(io::stderr()));
        // From a Linux directory cmd.exe complains that UNC paths are not supported: start the
        // Windows programs in their own (Windows) directory.
        if launcher.is_windows_program()
            && let Some(dir) = path.parent()
        {
            command.current_dir(dir);
        }
        match command.spawn() {
            Ok(child) => {
                debug!(1, "opening the login URL with {}", path.display());
                reap_in_background(child, launcher.program.to_string());
                return Ok(());
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(format!("{}: {err}", launcher.program)),
        }
    }
    let names: Vec<&str> = launchers.iter().map(|l| l.program).collect();
    Err(format!("{} is not installed", names.join(" or ")))
}

#[cfg(not(any(unix, windows)))]
mod platform {
    pub fn no_launcher_for(_desktop: &super::Desktop) -> Option<String> {
        Some("kubecred does not know how to open a browser on this platform".into())
    }
}

#[cfg(not(any(unix, windows)))]
fn open_with_system_browser(_url: &str, _presence: &Presence) -> Result<(), String> {
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
        open(URL, &noisy, &Presence::of_this_run(false)).unwrap();
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
                "presence::browser::tests::child_process_opens_a_noisy_browser",
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
        let err = open(URL, &missing, &Presence::of_this_run(false)).unwrap_err();
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
        open(URL, &BrowserChoice::Skip, &Presence::of_this_run(false)).unwrap();
        open("file:///etc/passwd", &never, &Presence::of_this_run(false)).unwrap();
        open("--help", &never, &Presence::of_this_run(false)).unwrap();
    }

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn the_url_survives_cmd_and_powershell() {
        use base64::Engine;
        let url = "https://idp.example/auth?a=1&b=%3A%2F&c=(x)^|<y>&d='q'";
        // cmd.exe /c: every metacharacter escaped, every % made %^ (no %NAME% can form).
        assert_eq!(
            platform::for_cmd(url),
            "https://idp.example/auth?a=1^&b=%^3A%^2F^&c=^(x^)^^^|^<y^>^&d='q'"
        );
        // PowerShell: a single-quoted string (quotes doubled), base64 of UTF-16LE.
        let encoded = platform::for_powershell(url);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let units: Vec<u16> = bytes
            .chunks(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        assert_eq!(
            String::from_utf16(&units).unwrap(),
            "Start-Process 'https://idp.example/auth?a=1&b=%3A%2F&c=(x)^|<y>&d=''q'''"
        );
    }
}
