//! The browser login's plumbing: the loopback listener that receives the authorization-code
//! redirect, what a callback or a pasted line means, the paste fallback on stdin, the wait for
//! whichever comes first, and the relayed login's line. The OAuth protocol itself (PKCE, state,
//! nonce, token exchange) lives in `grants/`, on top of these pieces; the person's side (who is
//! here, the browser, the terminal's prompts and spinner, the device code's display, desktop
//! notifications) is `presence/`'s. Everything here writes to stderr only: stdout carries the
//! ExecCredential and nothing else. Every wait here ends at a deadline the caller passes.
//!
//! The modules depend on each other in one direction only: `wait` (whichever comes first, until
//! the deadline) uses `listener` (binds, serves, hands over the callbacks) and `paste` (reads
//! lines); `listener` and `wait` use `callback` (what a callback or a pasted line means);
//! `callback` uses only `relay_line` (the relayed login's line: an SSH session's remote side
//! takes it pasted), and `paste` and `relay_line` use no sibling. The listener also serves one
//! page at a secret path (`serve_one_page`), which `presence/device_page.rs` puts a device
//! login's code on.

pub mod callback;
pub mod listener;
pub mod paste;
pub mod relay_line;
pub mod wait;
