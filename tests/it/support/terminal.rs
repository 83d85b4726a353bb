//! A kubecred run in a terminal: its stdin a real pseudo-terminal the test holds the other end
//! of, its stderr read line by line as it comes (the paste fallback, the device flow an SSH
//! session gets by itself).

use crate::support::*;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use url::Url;

/// How long kubecred may take to print the login URL (discovery on loopback).
pub const URL_WAIT: Duration = Duration::from_secs(30);
/// How long a `browser.mjs` run may take on a loaded machine (it gives up by itself after 60 s).
const BROWSER_WAIT: Duration = Duration::from_secs(90);

/// Signs in as alice in headless Chromium and returns the callback URL the provider redirected
/// to, which never reached kubecred (`browser.mjs --action copy`): the address bar of a browser
/// on another machine, which the person copies to paste it into kubecred.
pub fn copy_callback_url(login_url: &Url) -> Url {
    let mut browser = Command::new("node")
        .arg(repo_root().join("tests/support/browser.mjs"))
        .args(["--action", "copy", "--login", "alice"])
        .arg(login_url.as_str())
        .env("TESTBED_BROWSER_TIMEOUT", "60")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting node tests/support/browser.mjs");
    let deadline = Instant::now() + BROWSER_WAIT;
    while browser.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = browser.kill();
            let output = browser.wait_with_output().unwrap();
            panic!(
                "browser.mjs --action copy ran longer than {BROWSER_WAIT:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = browser.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.lines().count() == 1,
        "browser.mjs --action copy: {:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Url::parse(stdout.trim()).unwrap_or_else(|err| panic!("{stdout}: {err}"))
}

/// A pseudo-terminal (POSIX `posix_openpt`, through the `libc` crate), so that
/// `stdin.is_terminal()` is true in kubecred while its stdout and stderr stay pipes the test
/// reads. No process sits in between (as with `script`), so nothing depends on how such a relay
/// treats its own stdin.
mod pty {
    use std::ffi::CStr;
    use std::fs::{File, OpenOptions};
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::OpenOptionsExt;

    /// A new pseudo-terminal: (the test's end, the terminal for kubecred's stdin). Both are
    /// opened close-on-exec, as std always does, and with `O_NOCTTY`, so no other test's child
    /// inherits them and neither becomes the test process's controlling terminal.
    pub fn open() -> (File, File) {
        // SAFETY: posix_openpt returns a new descriptor (or -1), which `File` then owns; the
        // other calls take that open descriptor, and `name` is a writable buffer of the length
        // passed, which ptsname_r NUL-terminates on success.
        let (master, name) = unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            let master = File::from_raw_fd(fd);
            assert_eq!(libc::grantpt(fd), 0, "grantpt");
            assert_eq!(libc::unlockpt(fd), 0, "unlockpt");
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(
                libc::ptsname_r(fd, name.as_mut_ptr(), name.len()),
                0,
                "ptsname_r"
            );
            let name = CStr::from_ptr(name.as_ptr())
                .to_str()
                .expect("a pty name")
                .to_string();
            (master, name)
        };
        let terminal = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(&name)
            .unwrap_or_else(|err| panic!("opening {name}: {err}"));
        (master, terminal)
    }
}

/// What kubecred's stdin is.
#[derive(Clone, Copy, PartialEq)]
pub enum Stdin {
    /// A terminal: what kubectl passes with `interactiveMode: IfAvailable` in a terminal.
    Terminal,
    /// A pipe (that the test keeps open, and may write into).
    Pipe,
}

/// A kubecred run in progress, with its stderr read line by line as it comes. Dropping it kills
/// kubecred, so a failed assertion never leaves it waiting.
pub struct Running {
    command: String,
    child: Child,
    /// The terminal's other end, or the pipe into kubecred's stdin.
    input: Box<dyn Write + Send>,
    lines: mpsc::Receiver<String>,
    /// Everything kubecred wrote to stderr so far, a prompt without its line's end included.
    stderr_raw: Arc<Mutex<Vec<u8>>>,
    /// Everything the terminal echoed so far (what a person would see of their typing).
    echo: Arc<Mutex<Vec<u8>>>,
    stderr_seen: String,
    stderr_reader: Option<JoinHandle<()>>,
    stdout_reader: Option<JoinHandle<Vec<u8>>>,
}

impl Running {
    pub fn start(mut cmd: Command, stdin: Stdin, interactive: bool) -> Running {
        cmd.env("KUBERNETES_EXEC_INFO", exec_info(V1, interactive))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (input, terminal): (Option<File>, Option<File>) = match stdin {
            Stdin::Terminal => {
                let (master, terminal) = pty::open();
                cmd.stdin(terminal.try_clone().unwrap());
                (Some(master), Some(terminal))
            }
            Stdin::Pipe => {
                cmd.stdin(Stdio::piped());
                (None, None)
            }
        };
        let command = format!("{cmd:?}");
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|err| panic!("running {command}: {err}"));
        // Only kubecred holds the terminal now: once it exits, reading our end fails (EIO) and
        // the echo drain below ends.
        drop(cmd);
        drop(terminal);
        let echo = Arc::new(Mutex::new(Vec::new()));
        let input: Box<dyn Write + Send> = match input {
            Some(master) => {
                // The terminal echoes what is typed; read the echo so it can never fill up.
                let mut terminal = master.try_clone().unwrap();
                let echo = Arc::clone(&echo);
                std::thread::spawn(move || {
                    let mut chunk = [0u8; 4096];
                    while let Ok(n @ 1..) = terminal.read(&mut chunk) {
                        echo.lock().unwrap().extend_from_slice(&chunk[..n]);
                    }
                });
                Box::new(master)
            }
            None => Box::new(child.stdin.take().unwrap()),
        };
        let (sender, lines) = mpsc::channel();
        let stderr_raw = Arc::new(Mutex::new(Vec::new()));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let raw = Arc::clone(&stderr_raw);
        let stderr_reader = std::thread::spawn(move || {
            // Line by line as they come, and what comes as it comes (a prompt has no line end).
            let mut line = Vec::new();
            loop {
                let chunk = match stderr.fill_buf() {
                    Ok([]) | Err(_) => break,
                    Ok(chunk) => chunk.to_vec(),
                };
                stderr.consume(chunk.len());
                raw.lock().unwrap().extend_from_slice(&chunk);
                for byte in chunk {
                    if byte != b'\n' {
                        line.push(byte);
                        continue;
                    }
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    let text = String::from_utf8_lossy(&std::mem::take(&mut line)).into_owned();
                    if sender.send(text).is_err() {
                        return;
                    }
                }
            }
            if !line.is_empty() {
                let _ = sender.send(String::from_utf8_lossy(&line).into_owned());
            }
        });
        let mut stdout = child.stdout.take().unwrap();
        let stdout_reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stdout.read_to_end(&mut bytes);
            bytes
        });
        Running {
            command,
            child,
            input,
            lines,
            stderr_raw,
            echo,
            stderr_seen: String::new(),
            stderr_reader: Some(stderr_reader),
            stdout_reader: Some(stdout_reader),
        }
    }

    /// Kills kubecred and fails the test, showing what it said.
    #[track_caller]
    pub fn abort(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.stderr_seen.push_str(&line);
            self.stderr_seen.push('\n');
        }
        panic!(
            "{why}\ncommand: {}\n--- stderr ---\n{}",
            self.command, self.stderr_seen
        );
    }

    /// The first stderr line from now on that contains `needle`.
    #[track_caller]
    pub fn stderr_line_with(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stderr_seen.push_str(&line);
                    self.stderr_seen.push('\n');
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.abort(&format!("no {needle:?} on stderr within {within:?}"))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.abort(&format!("stderr ended without {needle:?}"))
                }
            }
        }
    }

    /// Waits until kubecred has written `prompt` on stderr (a prompt ends no line, so
    /// [`Running::stderr_line_with`] would not see it yet).
    #[track_caller]
    pub fn wait_for_prompt(&mut self, prompt: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !String::from_utf8_lossy(&self.stderr_raw.lock().unwrap()).contains(prompt) {
            if Instant::now() >= deadline {
                let raw = String::from_utf8_lossy(&self.stderr_raw.lock().unwrap()).into_owned();
                self.abort(&format!(
                    "no prompt {prompt:?} on stderr within {within:?}; so far: {raw}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the terminal has echoed of the typing so far.
    pub fn echoed(&self) -> String {
        String::from_utf8_lossy(&self.echo.lock().unwrap()).into_owned()
    }

    /// The authorization URL kubecred prints (`--skip-open-browser`).
    #[track_caller]
    pub fn login_url(&mut self) -> Url {
        let line = self.stderr_line_with("open this URL in a browser to log in: ", URL_WAIT);
        let start = line.find("http").expect("a URL on the line");
        Url::parse(line[start..].trim()).unwrap_or_else(|err| panic!("{line}: {err}"))
    }

    /// kubecred has not exited and asked the provider for nothing: the callback the browser was
    /// sent to did not reach its listener.
    #[track_caller]
    pub fn assert_still_waiting(&mut self, bed: &Testbed) {
        if let Ok(Some(status)) = self.child.try_wait() {
            self.abort(&format!("kubecred ended before the paste: {status}"));
        }
        let requests = bed.total_token_requests();
        if requests != 0 {
            self.abort(&format!(
                "{requests} token request(s) before the paste: the callback reached kubecred"
            ));
        }
    }

    /// Types `text` and Enter (or writes that line into the pipe).
    pub fn paste(&mut self, text: &str) {
        self.input
            .write_all(format!("{text}\n").as_bytes())
            .and_then(|()| self.input.flush())
            .expect("writing to kubecred's stdin");
    }

    /// Waits for kubecred to exit (killing it after `within`) and returns the whole run for
    /// the usual assertions.
    #[track_caller]
    pub fn finish(mut self, within: Duration) -> Run {
        let deadline = Instant::now() + within;
        let status = loop {
            match self.child.try_wait().expect("waiting for kubecred") {
                Some(status) => break status,
                None if Instant::now() >= deadline => {
                    self.abort(&format!("kubecred did not exit within {within:?}"))
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        self.stderr_reader.take().unwrap().join().unwrap();
        while let Ok(line) = self.lines.try_recv() {
            self.stderr_seen.push_str(&line);
            self.stderr_seen.push('\n');
        }
        let stdout = self.stdout_reader.take().unwrap().join().unwrap();
        Run {
            command: self.command.clone(),
            output: Output {
                status,
                stdout,
                stderr: std::mem::take(&mut self.stderr_seen).into_bytes(),
            },
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
