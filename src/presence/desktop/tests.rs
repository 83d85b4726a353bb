//! Each OS's rule of `desktop.rs` on injected facts (the environment, which display places
//! answer, the session's attributes), and the live check of a socket that answers or not.

use super::*;
use std::cell::RefCell;
use std::path::PathBuf;

/// An environment of these variables (empty values count as unset, as `var` reads them).
fn env(pairs: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let pairs = pairs.to_vec();
    move |name| {
        pairs
            .iter()
            .find(|(key, value)| *key == name && !value.is_empty())
            .map(|(_, value)| value.to_string())
    }
}

/// The Linux/BSD rule with these variables, where exactly the places in `answering` answer;
/// also every place asked, in order.
fn free_unix(
    pairs: &[(&'static str, &'static str)],
    answering: &[DisplayPlace],
) -> (Result<Desktop, NoDesktop>, Vec<DisplayPlace>) {
    let asked = RefCell::new(Vec::new());
    let decided = decide_free_unix(&env(pairs), &|place| {
        asked.borrow_mut().push(place.clone());
        answering.contains(place)
    });
    (decided, asked.into_inner())
}

fn socket(path: &str) -> DisplayPlace {
    DisplayPlace::Socket(PathBuf::from(path))
}

const SSH: (&str, &str) = ("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.20 22");

#[test]
fn without_a_display_there_is_no_desktop_and_ssh_is_named() {
    let (decided, asked) = free_unix(&[], &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "no graphical session: DISPLAY and WAYLAND_DISPLAY unset".into()
        ))
    );
    assert!(asked.is_empty());
    let (decided, _) = free_unix(&[SSH, ("DISPLAY", "")], &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "an SSH session, DISPLAY and WAYLAND_DISPLAY unset".into()
        ))
    );
}

#[test]
fn an_x_display_counts_when_its_socket_answers() {
    let x0 = socket("/tmp/.X11-unix/X0");
    let (decided, asked) = free_unix(&[("DISPLAY", ":0.0")], std::slice::from_ref(&x0));
    assert_eq!(decided, Ok(Desktop::Display("DISPLAY=:0.0".into())));
    assert_eq!(asked, [x0]);
    // A variable left behind by an X server that is gone.
    let (decided, _) = free_unix(&[("DISPLAY", ":7")], &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "DISPLAY=:7 does not answer (no X server at /tmp/.X11-unix/X7)".into()
        ))
    );
}

#[test]
fn a_wayland_display_is_under_xdg_runtime_dir_or_its_own_path() {
    let runtime = ("XDG_RUNTIME_DIR", "/run/user/1000");
    let place = socket("/run/user/1000/wayland-0");
    let (decided, asked) = free_unix(
        &[("WAYLAND_DISPLAY", "wayland-0"), runtime],
        std::slice::from_ref(&place),
    );
    assert_eq!(
        decided,
        Ok(Desktop::Display("WAYLAND_DISPLAY=wayland-0".into()))
    );
    assert_eq!(asked, [place]);
    let own = socket("/run/wl/sock");
    let (decided, _) = free_unix(&[("WAYLAND_DISPLAY", "/run/wl/sock")], &[own]);
    assert!(decided.is_ok());
    let (decided, asked) = free_unix(&[("WAYLAND_DISPLAY", "wayland-0")], &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "WAYLAND_DISPLAY=wayland-0 is set but XDG_RUNTIME_DIR, where its socket is, is not"
                .into()
        ))
    );
    assert!(asked.is_empty());
}

#[test]
fn a_stale_wayland_display_leaves_the_x_one_and_both_reasons_are_said() {
    let pairs = [
        ("WAYLAND_DISPLAY", "wayland-1"),
        ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ("DISPLAY", ":1"),
    ];
    let (decided, _) = free_unix(&pairs, &[socket("/tmp/.X11-unix/X1")]);
    assert_eq!(decided, Ok(Desktop::Display("DISPLAY=:1".into())));
    let (decided, asked) = free_unix(&pairs, &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "WAYLAND_DISPLAY=wayland-1 does not answer (no compositor at /run/user/1000/wayland-1); \
             DISPLAY=:1 does not answer (no X server at /tmp/.X11-unix/X1)"
                .into()
        ))
    );
    assert_eq!(asked.len(), 2);
}

#[test]
fn over_ssh_only_a_forwarded_x_display_counts() {
    // sshd's X11 forwarding: a TCP port on loopback.
    let forwarded = DisplayPlace::Tcp("127.0.0.1:6010".parse().unwrap());
    let (decided, asked) = free_unix(&[SSH, ("DISPLAY", "localhost:10.0")], &[forwarded]);
    assert_eq!(
        decided,
        Ok(Desktop::Display("DISPLAY=localhost:10.0".into()))
    );
    assert_eq!(asked.len(), 1, "the IPv4 address answered first: {asked:?}");
    // This machine's own screen is not the SSH user's, and is not even asked.
    let (decided, asked) = free_unix(
        &[
            ("SSH_CLIENT", "192.0.2.10 50022 22"),
            ("DISPLAY", ":0"),
            ("WAYLAND_DISPLAY", "wayland-0"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ],
        &[
            socket("/tmp/.X11-unix/X0"),
            socket("/run/user/1000/wayland-0"),
        ],
    );
    let why = decided.unwrap_err().0;
    assert!(
        why.contains("WAYLAND_DISPLAY=wayland-0 is this machine's screen, not the SSH user's"),
        "{why}"
    );
    assert!(
        why.contains(
            "an SSH session, and DISPLAY=:0 is this machine's screen, not a forwarded display"
        ),
        "{why}"
    );
    assert!(asked.is_empty(), "{asked:?}");
}

#[test]
fn wsl_is_the_windows_desktop_unless_reached_over_ssh() {
    let (decided, asked) = free_unix(&[("WSL_DISTRO_NAME", "Ubuntu")], &[]);
    assert_eq!(decided, Ok(Desktop::Wsl));
    assert!(asked.is_empty());
    let (decided, _) = free_unix(&[("WSL_DISTRO_NAME", "Ubuntu"), SSH], &[]);
    assert_eq!(
        decided,
        Err(NoDesktop(
            "an SSH session, DISPLAY and WAYLAND_DISPLAY unset".into()
        ))
    );
}

#[test]
fn x_display_names_are_read_as_x_reads_them() {
    use std::net::SocketAddr;
    let tcp = |text: &str| DisplayPlace::Tcp(text.parse::<SocketAddr>().unwrap());
    let cases: [(&str, Vec<DisplayPlace>); 9] = [
        (":0", vec![socket("/tmp/.X11-unix/X0")]),
        (":12.3", vec![socket("/tmp/.X11-unix/X12")]),
        ("unix:1", vec![socket("/tmp/.X11-unix/X1")]),
        ("unix/:2", vec![socket("/tmp/.X11-unix/X2")]),
        (
            "localhost:10.0",
            vec![tcp("127.0.0.1:6010"), tcp("[::1]:6010")],
        ),
        ("tcp/127.0.0.1:11", vec![tcp("127.0.0.1:6011")]),
        ("[::1]:3", vec![tcp("[::1]:6003")]),
        (
            "workstation.example:0",
            vec![DisplayPlace::Remote("workstation.example:6000".into())],
        ),
        (
            "/private/tmp/com.apple.launchd.AbC/org.xquartz:0",
            vec![socket("/private/tmp/com.apple.launchd.AbC/org.xquartz:0")],
        ),
    ];
    for (display, places) in cases {
        assert_eq!(x_display_places(display), Ok(places), "{display}");
    }
    for bad in ["foo", ":", ":x", "host:70000"] {
        assert_eq!(
            x_display_places(bad),
            Err(format!("DISPLAY={bad} is not an X display name")),
            "{bad}"
        );
    }
}

#[test]
fn macos_wants_a_gui_session_that_is_not_remote() {
    let gui = MacSession {
        graphic_access: true,
        remote: false,
    };
    assert_eq!(decide_macos(&env(&[]), Some(gui)), Ok(Desktop::Aqua));
    let why = |vars: &[(&'static str, &'static str)], session| {
        decide_macos(&env(vars), session).unwrap_err().0
    };
    assert_eq!(
        why(&[SSH], Some(gui)),
        "an SSH session: a browser would open on this machine's screen"
    );
    assert_eq!(
        why(
            &[],
            Some(MacSession {
                graphic_access: false,
                remote: false
            })
        ),
        "no GUI login session (a launchd daemon, a background session, cron)"
    );
    assert_eq!(
        why(
            &[],
            Some(MacSession {
                graphic_access: true,
                remote: true
            })
        ),
        "a remote login session: a browser would open on this machine's screen"
    );
    assert_eq!(
        why(&[], None),
        "the login session could not be read (SessionGetInfo failed)"
    );
}

#[test]
fn windows_wants_an_interactive_session_that_is_not_ssh() {
    let desk = WindowsSession {
        id: Some(1),
        visible_station: Some(true),
    };
    assert_eq!(decide_windows(&env(&[]), desk), Ok(Desktop::Interactive));
    let why = |vars: &[(&'static str, &'static str)], session| {
        decide_windows(&env(vars), session).unwrap_err().0
    };
    // OpenSSH for Windows sets SSH_CLIENT and SSH_CONNECTION (no SSH_TTY without a pty).
    assert_eq!(
        why(&[("SSH_CLIENT", "192.0.2.10 50022 22")], desk),
        "an SSH session: a browser would open on this machine's screen"
    );
    assert_eq!(
        why(
            &[],
            WindowsSession {
                id: Some(0),
                visible_station: Some(true)
            }
        ),
        "a service's session (session 0), which has no desktop"
    );
    assert_eq!(
        why(
            &[],
            WindowsSession {
                id: Some(2),
                visible_station: Some(false)
            }
        ),
        "a window station without a desktop (a service or a scheduled task)"
    );
    assert!(
        why(
            &[],
            WindowsSession {
                id: None,
                visible_station: Some(true)
            }
        )
        .starts_with("the session could not be read")
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_display_socket_answers_only_while_someone_listens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wayland-test");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    assert!(platform::answers(&DisplayPlace::Socket(path.clone())));
    drop(listener);
    // The file stays behind, as a crashed compositor's does: nobody answers.
    assert!(path.exists());
    assert!(!platform::answers(&DisplayPlace::Socket(path)));
    assert!(!platform::answers(&DisplayPlace::Socket(
        dir.path().join("absent")
    )));
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = tcp.local_addr().unwrap();
    assert!(platform::answers(&DisplayPlace::Tcp(address)));
    drop(tcp);
    assert!(!platform::answers(&DisplayPlace::Tcp(address)));
}
