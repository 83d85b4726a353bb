//! The parts of an interactive login that touch the user: the browser, the loopback listener
//! that receives the authorization-code redirect, the paste fallback on stdin, the password
//! grant's prompts, and the device-flow display. (The cool-down that stops a failed login from
//! opening browser tabs again and again is the token path's policy: `acquire/cooldown.rs`.)
//!
//! The OAuth protocol itself (PKCE, state, nonce, token exchange, device polling) lives in
//! `grants/`, on top of these pieces. Everything here writes to stderr only: stdout carries
//! the ExecCredential and nothing else. Every wait here ends at a deadline the caller passes.
//!
//! The authorization code arrives in one of two ways, and the modules depend on each other in one
//! direction only: `wait` (whichever comes first, until the deadline) uses `listener` (binds,
//! serves, hands over the callbacks) and `paste` (reads lines); `listener` and `wait` use
//! `callback` (what a callback or a pasted line means); `callback` uses only `relay_line`, and
//! `paste` and `relay_line` use no sibling.
//! `progress` is the spinner (time left, on a terminal) that `grants/` shows while a person is
//! awaited and nothing reads stdin. `prompt` asks the password grant's questions (the user name,
//! the password), each answered by one line of the terminal; it uses no sibling.
//!
//! Where no terminal is (an IDE, a dashboard): `desktop` says whether a person's desktop is in
//! this session (and `browser` asks it before it opens anything); `device_page` puts a device
//! login's code in the browser (the provider's complete link, or a page of ours served by
//! `listener`); `notify` raises the one desktop notification of a failure.
//!
//! A relayed login (SSH without a browser) has two sides: the remote kubecred waits as above,
//! and takes a pasted relay line (`relay_line`: the format, read by `callback`) as well;
//! `bootstrap` is the other side, `kubecred login --remote-bootstrap` where the browser is,
//! which takes the redirect on its own listener and prints that line (it uses `listener`,
//! `browser`, `wait` and `relay_line`).

pub mod bootstrap;
pub mod browser;
pub mod callback;
pub mod desktop;
pub mod device_display;
// Until the miss path calls it (a device login without a terminal): the root of its own code and
// of the listener's page serving.
#[allow(
    dead_code,
    reason = "called by the miss path once it is wired (issue 39)"
)]
pub mod device_page;
pub mod listener;
// Until the miss path calls it (a failure without a terminal).
#[allow(
    dead_code,
    reason = "called by the miss path once it is wired (issue 39)"
)]
pub mod notify;
pub mod paste;
pub mod progress;
pub mod prompt;
pub mod relay_line;
pub mod wait;
