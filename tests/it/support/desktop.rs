//! A person's desktop for one test, as an IDE or a dashboard meets it: an X server (Debian's
//! Xvfb, on its own display number and no TCP), a session D-Bus of its own (a socket in the
//! test's private directory), a real notification daemon on both (Debian's dunst, whose
//! history says what it received), and an `xdg-open` first on PATH that records each URL it
//! is given (the tabs) and opens it in the scripted headless browser (tests/support/browser.mjs,
//! the way a person signs in at the test provider). Everything is stopped and removed when the
//! [`DesktopSession`] is dropped.
//!
//! And a way to run a program as such a caller runs kubectl: stdin `/dev/null`, stdout and
//! stderr captured, in a new session with no controlling terminal ([`as_a_caller_without_a_terminal`]).
//!
//! Self-contained (std, libc, tempfile, serde_json): kubecred's own unit tests include it too
//! (`presence/notify.rs`), so there is one desktop harness.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long each piece gets to come up.
const START_LIMIT: Duration = Duration::from_secs(20);

/// What the scripted browser does with a tab (browser.mjs `--action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowserAction {
    /// Signs in and approves (the login form, consent, the device flow's pages).
    Approve,
    /// Opens the page and leaves: a tab nobody completes.
    Ignore,
    /// Cancels the sign-in.
    Deny,
}

/// One notification the daemon received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub appname: String,
    pub summary: String,
    pub body: String,
}

/// The desktop session. Dropping it stops the browsers its `xdg-open` started, dunst, the bus
/// and the X server, and removes its directory.
pub struct DesktopSession {
    /// `:N`, the X server's display.
    pub display: String,
    /// The session bus's address (`unix:path=…` in the private directory).
    pub bus_address: String,
    // Dropped in this order: dunst before its bus and display, the directory last.
    dunst: Stopped,
    bus: Stopped,
    xvfb: Stopped,
    dir: tempfile::TempDir,
}

/// A child process stopped (and reaped) when dropped, also when a test panics half-way: asked
/// to end first (SIGTERM: Xvfb then removes its socket in /tmp/.X11-unix), killed if it has not
/// within a few seconds.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: a signal to a child of this process, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let asked = Instant::now();
            while asked.elapsed() < Duration::from_secs(3) {
                if matches!(self.0.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl DesktopSession {
    /// Starts the X server, the bus and dunst, and writes the `xdg-open` stand-in; `None`
    /// (after one line saying so, or a panic under CI) where Xvfb, dbus-daemon or dunst is
    /// missing.
    pub fn start() -> Option<DesktopSession> {
        if let Some(missing) = ["Xvfb", "dbus-daemon", "dunst", "dunstctl", "busctl"]
            .into_iter()
            .find(|program| !on_path(program))
        {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(
                !ci,
                "{missing} is missing; CI must provide it (scripts/system-deps.sh)"
            );
            skipped(&format!(
                "needs {missing}; run scripts/test.sh, which installs it"
            ));
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("kubecred-desktop-")
            .tempdir()
            .unwrap();
        for sub in ["bin", "config/dunst", "runtime"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        set_mode(&dir.path().join("runtime"), 0o700);
        let (xvfb, display) = start_x_server();
        let (bus, bus_address) = start_bus(dir.path());
        let dunst = start_dunst(dir.path(), &display, &bus_address);
        let session = DesktopSession {
            display,
            bus_address,
            dunst,
            bus,
            xvfb,
            dir,
        };
        session.write_xdg_open();
        session.set_browser_action(BrowserAction::Approve);
        Some(session)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// PATH with this desktop's `xdg-open` first.
    pub fn path_with_xdg_open(&self) -> String {
        format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// The environment a program on this desktop gets: the display, the bus, a private
    /// runtime and config directory, and PATH with the `xdg-open` stand-in first.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("DISPLAY".into(), self.display.clone()),
            ("DBUS_SESSION_BUS_ADDRESS".into(), self.bus_address.clone()),
            (
                "XDG_RUNTIME_DIR".into(),
                self.path("runtime").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                self.path("config").display().to_string(),
            ),
            ("PATH".into(), self.path_with_xdg_open()),
        ]
    }

    /// Puts this desktop's environment on `command`.
    pub fn apply(&self, command: &mut Command) {
        for (name, value) in self.env() {
            command.env(name, value);
        }
    }

    /// What the scripted browser does with the next tabs.
    pub fn set_browser_action(&self, action: BrowserAction) {
        let word = match action {
            BrowserAction::Approve => "approve",
            BrowserAction::Ignore => "ignore",
            BrowserAction::Deny => "deny",
        };
        std::fs::write(self.path("browser-action"), word).unwrap();
    }

    /// Every URL `xdg-open` was given, oldest first: the tabs opened.
    pub fn tabs(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("tabs"))
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// What the scripted browsers wrote on stderr (for a failing test's message).
    pub fn browser_log(&self) -> String {
        std::fs::read_to_string(self.path("browser.log")).unwrap_or_default()
    }

    /// Every notification dunst received so far (those on screen are closed into its history
    /// first), oldest first.
    pub fn notifications(&self) -> Vec<Received> {
        let status = dunstctl(&self.display, &self.bus_address, &["close-all"])
            .status()
            .unwrap();
        assert!(status.success(), "dunstctl close-all: {status}");
        let output = dunstctl(&self.display, &self.bus_address, &["history"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "dunstctl history: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let history: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
                panic!(
                    "dunstctl history: {err}: {}",
                    String::from_utf8_lossy(&output.stdout)
                )
            });
        let text = |entry: &serde_json::Value, key: &str| {
            entry[key]["data"].as_str().unwrap_or_default().to_string()
        };
        let mut received: Vec<(i64, Received)> = history["data"][0]
            .as_array()
            .into_iter()
            .flatten()
            .map(|entry| {
                (
                    entry["id"]["data"].as_i64().unwrap_or_default(),
                    Received {
                        appname: text(entry, "appname"),
                        summary: text(entry, "summary"),
                        body: text(entry, "body"),
                    },
                )
            })
            .collect();
        received.sort_by_key(|(id, _)| *id);
        received.into_iter().map(|(_, r)| r).collect()
    }

    /// `xdg-open URL`, as a desktop has it: notes the URL in `tabs` and opens it in the
    /// scripted browser, with the action `browser-action` names, in a session of its own
    /// (`browsers` gets its id, to stop it with the desktop) holding none of the caller's
    /// output, and returns at once, as xdg-open does while the browser runs.
    fn write_xdg_open(&self) {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let script = format!(
            "#!/bin/sh\n\
             # The test desktop's xdg-open (tests/it/support/desktop.rs).\n\
             printf '%s\\n' \"$1\" >> '{tabs}'\n\
             TESTBED_BROWSER_ACTION=$(cat '{action}') \\\n\
               setsid node '{browser}' \"$1\" < /dev/null > /dev/null 2>> '{log}' &\n\
             echo $! >> '{browsers}'\n",
            tabs = self.path("tabs").display(),
            action = self.path("browser-action").display(),
            browser = repo.join("tests/support/browser.mjs").display(),
            log = self.path("browser.log").display(),
            browsers = self.path("browsers").display(),
        );
        let xdg_open = self.path("bin/xdg-open");
        std::fs::write(&xdg_open, script).unwrap();
        set_mode(&xdg_open, 0o755);
    }
}

impl Drop for DesktopSession {
    fn drop(&mut self) {
        // Each browser is the leader of its own session (setsid): its Chromium goes with it.
        let browsers = std::fs::read_to_string(self.path("browsers")).unwrap_or_default();
        for pid in browsers
            .lines()
            .filter_map(|line| line.trim().parse::<i32>().ok())
        {
            // SAFETY: a signal to a process group this desktop started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

/// `dunstctl ARGS` for the dunst of this display and bus.
fn dunstctl(display: &str, bus_address: &str, args: &[&str]) -> Command {
    let mut command = Command::new("dunstctl");
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DISPLAY", display)
        .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
        .stdin(Stdio::null());
    command
}

/// dunst on this display and bus, with a configuration of its own (a long history, nothing of
/// the developer's); waits until it answers on the bus.
fn start_dunst(dir: &Path, display: &str, bus_address: &str) -> Stopped {
    let config = dir.join("config/dunst/dunstrc");
    std::fs::write(&config, "[global]\n    history_length = 100\n").unwrap();
    let log = dir.join("dunst.log");
    let dunst = Stopped(
        Command::new("dunst")
            .arg("-config")
            .arg(&config)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("DISPLAY", display)
            .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_RUNTIME_DIR", dir.join("runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting dunst"),
    );
    let started = Instant::now();
    loop {
        let answered = dunstctl(display, bus_address, &["debug"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if answered {
            return dunst;
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "dunst did not answer on the session bus: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Xvfb on a free display (it picks the number and says it on `-displayfd`), listening on its
/// unix socket only; waits until it does.
fn start_x_server() -> (Stopped, String) {
    let mut child = Stopped(
        Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                "1024x768x24",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting Xvfb"),
    );
    let number = read_first_line(&mut child.0, "Xvfb's display number");
    let display = format!(":{}", number.trim());
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{}", number.trim()));
    let started = Instant::now();
    while !socket.exists() {
        assert!(
            started.elapsed() < START_LIMIT,
            "{} never appeared",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, display)
}

/// A session bus of its own, listening on a socket in `dir` only.
fn start_bus(dir: &Path) -> (Stopped, String) {
    let mut child = Stopped(
        Command::new("dbus-daemon")
            .arg("--session")
            .arg("--nofork")
            .arg(format!(
                "--address=unix:path={}",
                dir.join("runtime/bus").display()
            ))
            .arg("--print-address=1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting dbus-daemon"),
    );
    let address = read_first_line(&mut child.0, "the session bus's address");
    (child, address.trim().to_string())
}

/// The first line `child` writes on its stdout (the pipe stays open: the rest is not read).
fn read_first_line(child: &mut Child, what: &str) -> String {
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = sender.send(line);
        // Keep reading so the writer never blocks on a full pipe.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = receiver
        .recv_timeout(START_LIMIT)
        .unwrap_or_else(|_| panic!("{what} did not come within {START_LIMIT:?}"));
    assert!(!line.trim().is_empty(), "{what}: nothing was written");
    line
}

/// Runs `command` as an IDE, a dashboard or a tool such as Terraform runs kubectl: stdin
/// `/dev/null`, stdout and stderr captured, and in a new session (`setsid`), so that it has no
/// controlling terminal even when the test runner has one (`/dev/tty` cannot be opened).
pub fn as_a_caller_without_a_terminal(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Says on stderr why a test did nothing.
#[allow(clippy::disallowed_macros)]
fn skipped(why: &str) {
    eprintln!("skipped: {why}");
}
