//! Every environment variable kubecred reads, in one place.
//!
//! Each command-line flag also reads `KUBECRED_<FLAG_NAME>` (defined next to the flag in
//! `cli.rs`; a test there checks the naming). The variables below are the ones read elsewhere.

/// Set by client-go: apiVersion, `spec.interactive` and, with `provideClusterInfo`, the cluster.
pub const KUBERNETES_EXEC_INFO: &str = "KUBERNETES_EXEC_INFO";

/// Verbosity when no `-v` is given: `0`, `1` or `2`.
pub const KUBECRED_VERBOSE: &str = "KUBECRED_VERBOSE";

/// The conventional browser override (a command, run with the URL as its last argument).
pub const BROWSER: &str = "BROWSER";

/// Whether a graphical session exists (Linux/BSD), so that `xdg-open` can open a browser.
pub const DISPLAY: &str = "DISPLAY";
pub const WAYLAND_DISPLAY: &str = "WAYLAND_DISPLAY";

/// Set inside WSL, where `wslview` opens the Windows browser.
pub const WSL_DISTRO_NAME: &str = "WSL_DISTRO_NAME";

/// The password of `--grant-type password` (instead of --password-file or a prompt).
pub const KUBECRED_PASSWORD: &str = "KUBECRED_PASSWORD";

/// A PEM private key for `private_key_jwt` (instead of --client-private-key-file).
pub const KUBECRED_CLIENT_PRIVATE_KEY: &str = "KUBECRED_CLIENT_PRIVATE_KEY";

/// GitHub Actions: where and with what to request the job's ID token
/// (`permissions: id-token: write`).
pub const ACTIONS_ID_TOKEN_REQUEST_URL: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
pub const ACTIONS_ID_TOKEN_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/// Any non-empty value turns colour off (<https://no-color.org>); see `login/progress.rs`.
pub const NO_COLOR: &str = "NO_COLOR";
