//! Questions a person answers at the terminal with one line, for `--grant-type password`: the
//! user name (echoed) and the password (not). Each reads the terminal on stdin, which
//! `acquire::preflight_login` made sure is one and ours to read, up to its Enter and not a byte
//! further, so that the next question gets the next line; each gives up at the login's deadline.
//!
//! `paste.rs`'s reader is not for this: its thread goes on reading for a wait that takes any
//! line, and left behind by the user name it took the line typed at the password prompt. Nor is
//! `rpassword::prompt_password` alone: it waits for ever. rpassword still edits the password
//! line (backspace, Ctrl-U, Ctrl-W, arrow keys, UTF-8), reading through [`TerminalBytes`],
//! which waits at most until the deadline; the terminal's mode is ours to set and to put back:
//! echo off while the password is typed, and as it was afterwards, on a timeout or Ctrl-C too.

use std::io;
use std::time::Instant;

/// A line that is no user name and no password: reading stops there.
const MAX_LINE_BYTES: usize = 4096;

/// The next line typed, echoed as the terminal echoes it, trimmed. `TimedOut` at the
/// deadline, `UnexpectedEof` when the terminal closed (Ctrl-D) before a line.
pub fn line(deadline: Instant) -> io::Result<String> {
    platform::line(deadline)
}

/// The next line typed, not echoed, as typed (spaces included). `TimedOut` at the deadline,
/// `Interrupted` at Ctrl-C, `UnexpectedEof` at Ctrl-D or when the terminal closed before a line.
pub fn hidden_line(deadline: Instant) -> io::Result<String> {
    platform::hidden_line(deadline)
}

#[cfg(unix)]
mod platform {
    use super::MAX_LINE_BYTES;
    use std::io::{self, Read};
    use std::os::fd::{AsFd, AsRawFd};
    use std::time::Instant;

    /// Ctrl-C as a byte: what the terminal sends instead of SIGINT while its signals are off.
    const CTRL_C: u8 = 0x03;

    pub fn line(deadline: Instant) -> io::Result<String> {
        read_line(&mut TerminalBytes::new(io::stdin(), deadline))
    }

    pub fn hidden_line(deadline: Instant) -> io::Result<String> {
        read_hidden_line(io::stdin(), deadline)
    }

    /// Bytes up to the line's end, one `read` each: whatever is typed after it stays in the
    /// terminal for the next reader.
    pub(super) fn read_line(input: &mut impl Read) -> io::Result<String> {
        let mut bytes = Vec::new();
        let mut byte = [0u8];
        loop {
            if input.read(&mut byte)? == 0 {
                if bytes.is_empty() {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                break;
            }
            if byte[0] == b'\n' {
                break;
            }
            if bytes.len() == MAX_LINE_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the line is too long",
                ));
            }
            bytes.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&bytes).trim().to_string())
    }

    /// The password line of the terminal `terminal`, with its echo off meanwhile.
    pub(super) fn read_hidden_line<T: AsFd + 'static>(
        terminal: T,
        deadline: Instant,
    ) -> io::Result<String> {
        let _mode = NoEcho::set(&terminal)?;
        let config = rpassword::ConfigBuilder::new()
            .input_reader(TerminalBytes::new(terminal, deadline))
            .output_discard()
            .build();
        rpassword::read_password_with_config(config)
    }

    /// A terminal read one byte at a time, each read waiting at most until the deadline
    /// (`TimedOut` then). Ctrl-C, which arrives as a byte while the terminal's signals are off,
    /// is `Interrupted`: the reader's caller puts the terminal back (rpassword would raise
    /// SIGINT first, which ends the process with the echo still off).
    pub(super) struct TerminalBytes<T> {
        terminal: T,
        deadline: Instant,
    }

    impl<T: AsFd> TerminalBytes<T> {
        pub(super) fn new(terminal: T, deadline: Instant) -> Self {
            TerminalBytes { terminal, deadline }
        }

        /// Waits until a byte can be read or the deadline passes.
        fn wait_readable(&self) -> io::Result<()> {
            loop {
                let left = self.deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                let mut poll = libc::pollfd {
                    fd: self.terminal.as_fd().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let millis = left.as_millis().clamp(1, i32::MAX as u128) as i32;
                // SAFETY: one pollfd, valid for the call; the descriptor is open (we hold it).
                match unsafe { libc::poll(&mut poll, 1, millis) } {
                    0 => continue,
                    n if n > 0 => return Ok(()),
                    _ => {
                        let err = io::Error::last_os_error();
                        if err.kind() != io::ErrorKind::Interrupted {
                            return Err(err);
                        }
                    }
                }
            }
        }
    }

    impl<T: AsFd> Read for TerminalBytes<T> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if buf.is_empty() {
                return Ok(0);
            }
            loop {
                self.wait_readable()?;
                let fd = self.terminal.as_fd().as_raw_fd();
                // SAFETY: reads at most one byte into `buf`, which holds at least one.
                let read = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 1) };
                if read < 0 {
                    let err = io::Error::last_os_error();
                    match err.kind() {
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                        _ => return Err(err),
                    }
                }
                if read == 1 && buf[0] == CTRL_C {
                    return Err(io::ErrorKind::Interrupted.into());
                }
                return Ok(read as usize);
            }
        }
    }

    /// The terminal with echo, line editing and signals off (rpassword edits the line and
    /// Ctrl-C is a byte), as rpassword sets it; put back as it was when dropped, through a
    /// descriptor of its own (the reader's is gone by then). Changed at once (`TCSANOW`), never
    /// flushing what was typed ahead.
    struct NoEcho {
        terminal: std::os::fd::OwnedFd,
        before: libc::termios,
    }

    impl NoEcho {
        fn set(terminal: &impl AsFd) -> io::Result<NoEcho> {
            let terminal = terminal.as_fd().try_clone_to_owned()?;
            let fd = terminal.as_raw_fd();
            let mut before = std::mem::MaybeUninit::<libc::termios>::uninit();
            // SAFETY: tcgetattr fills the termios it is given, or fails and we return.
            if unsafe { libc::tcgetattr(fd, before.as_mut_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: tcgetattr succeeded, so it wrote the whole struct.
            let before = unsafe { before.assume_init() };
            let mut hidden = before;
            hidden.c_lflag &= !(libc::ECHO | libc::ICANON | libc::ECHONL | libc::ISIG);
            hidden.c_cc[libc::VMIN] = 1;
            hidden.c_cc[libc::VTIME] = 0;
            // SAFETY: a termios from tcgetattr, changed in its flags only.
            if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &hidden) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(NoEcho { terminal, before })
        }
    }

    impl Drop for NoEcho {
        fn drop(&mut self) {
            // SAFETY: the termios read from this terminal before it was changed.
            unsafe { libc::tcsetattr(self.terminal.as_raw_fd(), libc::TCSANOW, &self.before) };
        }
    }
}

/// Elsewhere (Windows) a console read cannot be given a deadline as simply: each read runs on a
/// thread of its own that reads one line and ends, and the wait for it is bounded. Past the
/// deadline the thread stays blocked (and, for the password, the console's echo off) until the
/// process ends, which it then does: the login failed.
#[cfg(not(unix))]
mod platform {
    use super::MAX_LINE_BYTES;
    use std::io::{self, BufRead, Read};
    use std::sync::mpsc;
    use std::time::Instant;

    pub fn line(deadline: Instant) -> io::Result<String> {
        within(deadline, || {
            let mut line = String::new();
            let mut stdin = io::stdin().lock().take(MAX_LINE_BYTES as u64 + 1);
            if stdin.read_line(&mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if line.len() > MAX_LINE_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the line is too long",
                ));
            }
            Ok(line.trim().to_string())
        })
    }

    pub fn hidden_line(deadline: Instant) -> io::Result<String> {
        within(deadline, rpassword::read_password)
    }

    fn within(
        deadline: Instant,
        read: impl FnOnce() -> io::Result<String> + Send + 'static,
    ) -> io::Result<String> {
        let (sender, answer) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(read());
        });
        let left = deadline.saturating_duration_since(Instant::now());
        answer
            .recv_timeout(left)
            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
    }
}

#[cfg(target_os = "linux")]
#[cfg(test)]
mod tests {
    use super::platform::{TerminalBytes, read_hidden_line, read_line};
    use std::fs::{File, OpenOptions};
    use std::io::{self, Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::{Duration, Instant};

    /// A pseudo-terminal: (the end a person types into, the terminal kubecred reads).
    fn terminal() -> (File, File) {
        // SAFETY: posix_openpt returns a new descriptor (or -1), which `File` then owns;
        // ptsname_r writes a NUL-terminated name into the buffer of the length given.
        let (person, name) = unsafe {
            use std::os::fd::FromRawFd;
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(fd >= 0, "posix_openpt: {}", io::Error::last_os_error());
            let person = File::from_raw_fd(fd);
            assert_eq!(libc::grantpt(fd), 0);
            assert_eq!(libc::unlockpt(fd), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
            let name = std::ffi::CStr::from_ptr(name.as_ptr());
            (person, name.to_str().unwrap().to_string())
        };
        let terminal = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(name)
            .unwrap();
        (person, terminal)
    }

    /// What the terminal echoed so far (without waiting for more).
    fn echoed(person: &File) -> String {
        let mut person = person.try_clone().unwrap();
        let flags = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&person), libc::F_GETFL) };
        unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&person),
                libc::F_SETFL,
                flags | libc::O_NONBLOCK,
            )
        };
        let mut echo = Vec::new();
        let mut chunk = [0u8; 256];
        while let Ok(n @ 1..) = person.read(&mut chunk) {
            echo.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&echo).into_owned()
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[test]
    fn each_line_goes_to_the_question_that_asked_for_it() {
        let (mut person, terminal) = terminal();
        // Typed ahead, all at once: the user name, a password, another line.
        person.write_all(b"carol\nPW A\nPWB\n").unwrap();
        let name = read_line(&mut TerminalBytes::new(
            terminal.try_clone().unwrap(),
            soon(),
        ));
        assert_eq!(name.unwrap(), "carol");
        let password = read_hidden_line(terminal.try_clone().unwrap(), soon()).unwrap();
        assert_eq!(password, "PW A");
        let next = read_line(&mut TerminalBytes::new(terminal, soon()));
        assert_eq!(next.unwrap(), "PWB");
    }

    #[test]
    fn the_password_is_not_echoed_and_the_terminal_is_put_back() {
        let (mut person, terminal) = terminal();
        let reader = std::thread::spawn({
            let terminal = terminal.try_clone().unwrap();
            move || read_hidden_line(terminal, soon())
        });
        // Typed once the echo is off: the mode changes before the first read.
        std::thread::sleep(Duration::from_millis(300));
        person.write_all(b"s3cret\x7fT\n").unwrap();
        assert_eq!(reader.join().unwrap().unwrap(), "s3creT");
        assert!(!echoed(&person).contains("s3cre"), "{}", echoed(&person));
        // Echo and line editing are back: a line typed now is echoed.
        person.write_all(b"visible\n").unwrap();
        let line = read_line(&mut TerminalBytes::new(terminal, soon())).unwrap();
        assert_eq!(line, "visible");
        std::thread::sleep(Duration::from_millis(100));
        assert!(echoed(&person).contains("visible"));
    }

    #[test]
    fn a_read_ends_at_the_deadline_and_ctrl_c_ends_the_password() {
        let (mut person, terminal) = terminal();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(200);
        let silent = read_line(&mut TerminalBytes::new(
            terminal.try_clone().unwrap(),
            deadline,
        ));
        assert_eq!(silent.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_millis(200);
        let silent = read_hidden_line(terminal.try_clone().unwrap(), deadline);
        assert_eq!(silent.unwrap_err().kind(), io::ErrorKind::TimedOut);

        let reader = std::thread::spawn({
            let terminal = terminal.try_clone().unwrap();
            move || read_hidden_line(terminal, soon())
        });
        std::thread::sleep(Duration::from_millis(300));
        person.write_all(b"half\x03").unwrap();
        let interrupted = reader.join().unwrap();
        assert_eq!(interrupted.unwrap_err().kind(), io::ErrorKind::Interrupted);
        // The terminal's signals are back: Ctrl-C is no byte to read any more.
        person.write_all(b"next\n").unwrap();
        assert_eq!(
            read_line(&mut TerminalBytes::new(terminal, soon())).unwrap(),
            "next"
        );
    }
}
