//! Whether a person's desktop is in this session: a screen on which a browser tab opened or a
//! notification raised reaches the person who ran kubecred, whether or not a terminal is there
//! too (an IDE, a dashboard). The run's `Presence` asks it once, on first need: before a browser
//! opens (adding whether a launcher is installed), before a login without a terminal, before a
//! notification.
//!
//! - Linux and the BSDs: an X11 or Wayland display that answers (`DISPLAY`, `WAYLAND_DISPLAY`: a
//!   non-blocking connect to its socket, so a variable left behind by a display that is gone
//!   does not count), but in an SSH session only a forwarded X display (over TCP, which is how
//!   sshd forwards one): a local display there is this machine's screen, not the SSH user's.
//!   WSL (not over SSH): the Windows desktop, through the Windows browser, as `browser.rs` opens it.
//! - macOS: a GUI (Aqua) login session, not SSH: the security session's attributes
//!   (`SessionGetInfo`, Security.framework, which kubecred links already for the Keychain; no
//!   process to start, unlike `launchctl managername`): graphic access and not remote.
//! - Windows: an interactive session, not a service (session 0) or SSH (OpenSSH for Windows sets
//!   `SSH_CONNECTION`/`SSH_CLIENT`), whose window station is visible (`WSF_VISIBLE`: not a
//!   service's or a scheduled task's hidden one).
//!
//! Each OS's rule is a function of the facts it reads (the environment, whether a socket
//! answers, the session's attributes), so that every rule is tested on any OS; [`probe`] reads
//! the live facts (`Presence` asks it once per run).

use crate::env_vars;

/// A desktop where a browser tab or a notification reaches the person running kubecred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Desktop {
    /// An X11 or Wayland display that answers (Linux, the BSDs): the variable and its value,
    /// `DISPLAY=:0`.
    #[cfg(any(test, all(unix, not(target_os = "macos"))))]
    Display(String),
    /// WSL: the Windows desktop, reached through the Windows side's programs.
    #[cfg(any(test, all(unix, not(target_os = "macos"))))]
    Wsl,
    /// macOS: a GUI (Aqua) login session.
    #[cfg(any(test, target_os = "macos"))]
    Aqua,
    /// Windows: an interactive session with a visible window station.
    #[cfg(any(test, windows))]
    Interactive,
}

/// Why no person's desktop is here, worded to follow "no browser can open here (…)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoDesktop(pub String);

impl std::fmt::Display for NoDesktop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a person's desktop is in this session, read from the live facts (a display's socket
/// is asked, within a fraction of a second). `Presence::desktop` asks once per run.
pub fn probe() -> Result<Desktop, NoDesktop> {
    platform::decide()
}

/// A non-empty environment variable (an empty one is unset, as xdg-open and sshd mean it).
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The environment a rule reads: a variable's non-empty value.
pub(crate) type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Whether sshd started this session (`env_vars::SSH_SESSION`).
fn in_ssh_session(vars: Vars) -> bool {
    env_vars::SSH_SESSION
        .iter()
        .any(|name| vars(name).is_some())
}

#[cfg(any(test, all(unix, not(target_os = "macos"))))]
/// Where a display listens, to be asked whether it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DisplayPlace {
    /// A socket file: X's `/tmp/.X11-unix/X<n>`, a Wayland compositor's under
    /// `XDG_RUNTIME_DIR`, a launchd socket path in `DISPLAY`.
    Socket(std::path::PathBuf),
    /// X over TCP on a loopback address: what sshd's X11 forwarding gives (`localhost:10.0`).
    Tcp(std::net::SocketAddr),
    /// X over TCP on another host: believed, not asked (asking would need DNS, whose wait
    /// kubecred cannot bound).
    Remote(String),
}

#[cfg(any(test, all(unix, not(target_os = "macos"))))]
/// Where an X `DISPLAY` (`[protocol/][host]:number[.screen]`) listens, or why it is no display.
/// Linux's X servers also listen in the abstract namespace, which [`platform::answers`] tries
/// when the file is missing (a sandbox without `/tmp/.X11-unix`).
pub(crate) fn x_display_places(display: &str) -> Result<Vec<DisplayPlace>, String> {
    let not_a_display = || format!("DISPLAY={display} is not an X display name");
    let (protocol, rest) = match display.split_once('/') {
        // A path (a launchd socket) also holds slashes: only a short word before one is a protocol.
        Some((protocol, rest)) if !protocol.is_empty() && !protocol.contains(':') => {
            (Some(protocol), rest)
        }
        _ => (None, display),
    };
    let (host, number_and_screen) = match protocol {
        None if display.starts_with('/') => {
            // `/private/tmp/com.apple.launchd.…/org.xquartz:0`: the socket is the path itself.
            let socket = display
                .rsplit_once('.')
                .filter(|(_, screen)| screen.bytes().all(|b| b.is_ascii_digit()))
                .map_or(display, |(socket, _)| socket);
            return Ok(vec![DisplayPlace::Socket(socket.into())]);
        }
        _ => rest.rsplit_once(':').ok_or_else(not_a_display)?,
    };
    let number = number_and_screen
        .split_once('.')
        .map_or(number_and_screen, |(number, _)| number);
    let number: u16 = number.parse().map_err(|_| not_a_display())?;
    let local = matches!(protocol, Some("unix" | "local")) || host.is_empty() || host == "unix";
    if local {
        return Ok(vec![DisplayPlace::Socket(
            format!("/tmp/.X11-unix/X{number}").into(),
        )]);
    }
    let port = 6000u16.checked_add(number).ok_or_else(not_a_display)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host == "localhost" {
        use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
        return Ok(vec![
            DisplayPlace::Tcp(SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
            DisplayPlace::Tcp(SocketAddr::from((Ipv6Addr::LOCALHOST, port))),
        ]);
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_loopback() => Ok(vec![DisplayPlace::Tcp((ip, port).into())]),
        _ => Ok(vec![DisplayPlace::Remote(format!("{host}:{port}"))]),
    }
}

#[cfg(any(test, all(unix, not(target_os = "macos"))))]
/// Where a `WAYLAND_DISPLAY` listens: a path as it is, a name under `XDG_RUNTIME_DIR`.
fn wayland_place(name: &str, vars: Vars) -> Result<DisplayPlace, String> {
    if name.starts_with('/') {
        return Ok(DisplayPlace::Socket(name.into()));
    }
    match vars(env_vars::XDG_RUNTIME_DIR) {
        Some(dir) => Ok(DisplayPlace::Socket(std::path::Path::new(&dir).join(name))),
        None => Err(format!(
            "WAYLAND_DISPLAY={name} is set but XDG_RUNTIME_DIR, where its socket is, is not"
        )),
    }
}

/// The rule of Linux and the BSDs, on the facts it reads: the environment, and whether a
/// display's place answers.
#[cfg(any(test, all(unix, not(target_os = "macos"))))]
pub(crate) fn decide_free_unix(
    vars: Vars,
    answers: &dyn Fn(&DisplayPlace) -> bool,
) -> Result<Desktop, NoDesktop> {
    let ssh = in_ssh_session(vars);
    if vars(env_vars::WSL_DISTRO_NAME).is_some() && !ssh {
        return Ok(Desktop::Wsl);
    }
    let wayland = vars(env_vars::WAYLAND_DISPLAY);
    let x = vars(env_vars::DISPLAY);
    if wayland.is_none() && x.is_none() {
        return Err(NoDesktop(if ssh {
            "an SSH session, DISPLAY and WAYLAND_DISPLAY unset".into()
        } else {
            "no graphical session: DISPLAY and WAYLAND_DISPLAY unset".into()
        }));
    }
    let mut why_not = Vec::new();
    if let Some(name) = &wayland {
        match wayland_place(name, vars) {
            // Wayland is never forwarded by sshd: over SSH it is this machine's screen.
            Ok(_) if ssh => why_not.push(format!(
                "WAYLAND_DISPLAY={name} is this machine's screen, not the SSH user's"
            )),
            Ok(place) if answers(&place) => {
                return Ok(Desktop::Display(format!("WAYLAND_DISPLAY={name}")));
            }
            Ok(place) => why_not.push(format!(
                "WAYLAND_DISPLAY={name} does not answer (no compositor at {})",
                describe(&place)
            )),
            Err(why) => why_not.push(why),
        }
    }
    if let Some(display) = &x {
        match x_display_places(display) {
            Ok(places) => {
                let forwarded = |place: &DisplayPlace| !matches!(place, DisplayPlace::Socket(_));
                if ssh && !places.iter().any(forwarded) {
                    why_not.push(format!(
                        "an SSH session, and DISPLAY={display} is this machine's screen, not a forwarded display"
                    ));
                } else if places.iter().any(answers) {
                    return Ok(Desktop::Display(format!("DISPLAY={display}")));
                } else {
                    why_not.push(format!(
                        "DISPLAY={display} does not answer (no X server at {})",
                        describe(&places[0])
                    ));
                }
            }
            Err(why) => why_not.push(why),
        }
    }
    Err(NoDesktop(why_not.join("; ")))
}

#[cfg(any(test, all(unix, not(target_os = "macos"))))]
fn describe(place: &DisplayPlace) -> String {
    match place {
        DisplayPlace::Socket(path) => path.display().to_string(),
        DisplayPlace::Tcp(address) => address.to_string(),
        DisplayPlace::Remote(address) => address.clone(),
    }
}

#[cfg(any(test, target_os = "macos"))]
/// What macOS says of this process's security session (`SessionGetInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MacSession {
    /// `sessionHasGraphicAccess`: the session has a window server (the Aqua session).
    pub graphic_access: bool,
    /// `sessionIsRemote`: the session came over the network (SSH).
    pub remote: bool,
}

/// The rule of macOS: a GUI login session (`None`: the session could not be read), not SSH.
#[cfg(any(test, target_os = "macos"))]
pub(crate) fn decide_macos(vars: Vars, session: Option<MacSession>) -> Result<Desktop, NoDesktop> {
    if in_ssh_session(vars) {
        return Err(NoDesktop(
            "an SSH session: a browser would open on this machine's screen".into(),
        ));
    }
    match session {
        None => Err(NoDesktop(
            "the login session could not be read (SessionGetInfo failed)".into(),
        )),
        Some(session) if session.remote => Err(NoDesktop(
            "a remote login session: a browser would open on this machine's screen".into(),
        )),
        Some(session) if !session.graphic_access => Err(NoDesktop(
            "no GUI login session (a launchd daemon, a background session, cron)".into(),
        )),
        Some(_) => Ok(Desktop::Aqua),
    }
}

#[cfg(any(test, windows))]
/// What Windows says of this process's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowsSession {
    /// The Remote Desktop Services session id (`ProcessIdToSessionId`): 0 is the services'.
    pub id: Option<u32>,
    /// Whether the process's window station is visible (`WSF_VISIBLE`): the interactive
    /// `WinSta0`, not a service's or a scheduled task's hidden one.
    pub visible_station: Option<bool>,
}

/// The rule of Windows: an interactive session (not 0), a visible window station, not SSH.
#[cfg(any(test, windows))]
pub(crate) fn decide_windows(vars: Vars, session: WindowsSession) -> Result<Desktop, NoDesktop> {
    if in_ssh_session(vars) {
        return Err(NoDesktop(
            "an SSH session: a browser would open on this machine's screen".into(),
        ));
    }
    match session {
        WindowsSession { id: Some(0), .. } => Err(NoDesktop(
            "a service's session (session 0), which has no desktop".into(),
        )),
        WindowsSession {
            visible_station: Some(false),
            ..
        } => Err(NoDesktop(
            "a window station without a desktop (a service or a scheduled task)".into(),
        )),
        WindowsSession { id: None, .. } | WindowsSession { visible_station: None, .. } => Err(
            NoDesktop("the session could not be read (ProcessIdToSessionId or GetUserObjectInformation failed)".into()),
        ),
        _ => Ok(Desktop::Interactive),
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use super::{Desktop, DisplayPlace, NoDesktop, decide_free_unix, var};
    use std::time::Duration;

    /// How long a display on TCP (a forwarded X display) gets to accept a connection.
    const TCP_CONNECT_TIMEOUT: Duration = Duration::from_millis(300);

    pub fn decide() -> Result<Desktop, NoDesktop> {
        decide_free_unix(&var, &answers)
    }

    /// Whether a display accepts a connection, asked without waiting: a socket file is
    /// connected to without blocking (a full backlog counts: something is there), a loopback
    /// TCP port within [`TCP_CONNECT_TIMEOUT`]. The connection is closed at once.
    pub(crate) fn answers(place: &DisplayPlace) -> bool {
        match place {
            DisplayPlace::Socket(path) => {
                socket_answers(path.as_os_str().as_encoded_bytes(), false)
                    || (cfg!(target_os = "linux")
                        && path.starts_with("/tmp/.X11-unix")
                        && socket_answers(path.as_os_str().as_encoded_bytes(), true))
            }
            DisplayPlace::Tcp(address) => {
                std::net::TcpStream::connect_timeout(address, TCP_CONNECT_TIMEOUT).is_ok()
            }
            DisplayPlace::Remote(_) => true,
        }
    }

    /// A non-blocking connect to the unix socket at `path` (in Linux's abstract namespace when
    /// `abstract_name`, as X servers also listen there). std's `UnixStream::connect` blocks
    /// while a listener's backlog is full; this never waits.
    fn socket_answers(path: &[u8], abstract_name: bool) -> bool {
        // SAFETY: a zeroed sockaddr_un is valid; the path is copied within its bounds (checked
        // below), and the descriptor is closed on every path out.
        let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        address.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let offset = usize::from(abstract_name);
        if path.len() + offset >= address.sun_path.len() {
            return false;
        }
        for (slot, byte) in address.sun_path[offset..].iter_mut().zip(path) {
            *slot = *byte as libc::c_char;
        }
        // An abstract name is exactly its bytes; a path ends with its NUL.
        let length = std::mem::offset_of!(libc::sockaddr_un, sun_path)
            + offset
            + path.len()
            + usize::from(!abstract_name);
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return false;
        }
        let connected = unsafe {
            libc::connect(
                fd,
                std::ptr::addr_of!(address).cast::<libc::sockaddr>(),
                length as libc::socklen_t,
            )
        };
        let error = std::io::Error::last_os_error().raw_os_error();
        unsafe { libc::close(fd) };
        connected == 0 || matches!(error, Some(libc::EAGAIN | libc::EINPROGRESS))
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use super::{Desktop, MacSession, NoDesktop, decide_macos, var};

    // Security.framework's AuthSession.h (linked already through security-framework for the
    // Keychain): the calling process's security session and its attributes.
    const CALLER_SECURITY_SESSION: u32 = u32::MAX;
    const SESSION_HAS_GRAPHIC_ACCESS: u32 = 0x0010;
    const SESSION_IS_REMOTE: u32 = 0x1000;

    #[link(name = "Security", kind = "framework")]
    unsafe extern "C" {
        fn SessionGetInfo(session: u32, session_id: *mut u32, attributes: *mut u32) -> i32;
    }

    pub fn decide() -> Result<Desktop, NoDesktop> {
        decide_macos(&var, session())
    }

    fn session() -> Option<MacSession> {
        let (mut id, mut attributes) = (0u32, 0u32);
        // SAFETY: both out-pointers are valid for the call.
        let status = unsafe { SessionGetInfo(CALLER_SECURITY_SESSION, &mut id, &mut attributes) };
        (status == 0).then_some(MacSession {
            graphic_access: attributes & SESSION_HAS_GRAPHIC_ACCESS != 0,
            remote: attributes & SESSION_IS_REMOTE != 0,
        })
    }
}

#[cfg(windows)]
mod platform {
    use super::{Desktop, NoDesktop, WindowsSession, decide_windows, var};
    use windows_sys::Win32::System::RemoteDesktop::ProcessIdToSessionId;
    use windows_sys::Win32::System::StationsAndDesktops::{
        GetProcessWindowStation, GetUserObjectInformationW, UOI_FLAGS, USEROBJECTFLAGS,
    };
    use windows_sys::Win32::System::Threading::GetCurrentProcessId;

    /// winuser.h's flag of a visible window station (the one constant of its feature kubecred
    /// needs; the whole of `Win32_UI_WindowsAndMessaging` is not worth compiling for it).
    const WSF_VISIBLE: u32 = 1;

    pub fn decide() -> Result<Desktop, NoDesktop> {
        decide_windows(&var, session())
    }

    fn session() -> WindowsSession {
        let mut id = 0u32;
        // SAFETY: the out-pointer is valid for the call.
        let id =
            (unsafe { ProcessIdToSessionId(GetCurrentProcessId(), &mut id) } != 0).then_some(id);
        let mut flags = USEROBJECTFLAGS::default();
        let mut needed = 0u32;
        // SAFETY: the station handle is the process's own (not to be closed); the buffer is a
        // USEROBJECTFLAGS of the size passed.
        let read = unsafe {
            GetUserObjectInformationW(
                GetProcessWindowStation(),
                UOI_FLAGS,
                std::ptr::addr_of_mut!(flags).cast(),
                std::mem::size_of::<USEROBJECTFLAGS>() as u32,
                &mut needed,
            )
        };
        WindowsSession {
            id,
            visible_station: (read != 0).then_some(flags.dwFlags & WSF_VISIBLE != 0),
        }
    }
}

#[cfg(not(any(unix, windows)))]
mod platform {
    use super::{Desktop, NoDesktop};

    pub fn decide() -> Result<Desktop, NoDesktop> {
        Err(NoDesktop(
            "kubecred does not know how to find a desktop on this platform".into(),
        ))
    }
}

#[cfg(test)]
mod tests;
