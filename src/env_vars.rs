//! Every environment variable kubecred reads, in one place.
//!
//! Each command-line flag also reads `KUBECRED_<FLAG_NAME>` (defined next to the flag in
//! `cli/`; a test in `cli/mod.rs` checks the naming). The variables below are the ones read elsewhere.

/// Set by client-go: apiVersion, `spec.interactive` and, with `provideClusterInfo`, the cluster.
pub const KUBERNETES_EXEC_INFO: &str = "KUBERNETES_EXEC_INFO";

/// Verbosity when no `-v` is given: `0`, `1` or `2`.
pub const KUBECRED_VERBOSE: &str = "KUBECRED_VERBOSE";

/// The conventional browser override (a command, run with the URL as its last argument).
pub const BROWSER: &str = "BROWSER";

/// Whether a graphical session exists (Linux/BSD), so that `xdg-open` can open a browser and a
/// notification can be shown (`presence/desktop.rs` asks the display's socket whether it answers).
pub const DISPLAY: &str = "DISPLAY";
pub const WAYLAND_DISPLAY: &str = "WAYLAND_DISPLAY";

/// Where a Wayland compositor's socket is, when `WAYLAND_DISPLAY` names no path
/// (`presence/desktop.rs`).
pub const XDG_RUNTIME_DIR: &str = "XDG_RUNTIME_DIR";

/// Set inside WSL, where `wslview` or the Windows side's `cmd.exe`, `powershell.exe` or
/// `explorer.exe` open the Windows browser.
pub const WSL_DISTRO_NAME: &str = "WSL_DISTRO_NAME";

/// Set by sshd in a remote session (OpenSSH for Windows too): a browser started here would open
/// on this machine's screen, if it has one, not the user's (`presence/desktop.rs`).
pub const SSH_SESSION: [&str; 3] = ["SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"];

/// The per-user cache directory's place (unix: `$XDG_CACHE_HOME/kubecred`, else
/// `$HOME/.cache/kubecred`; macOS: `$HOME/Library/Caches/kubecred`), as the `directories`
/// crate reads them for this process; read by `config` for a kubeconfig stanza whose `env` sets
/// them (`convert-kubeconfig`, `whoami`). `HOME` also holds kubectl's `.kube/config` (below).
pub const HOME: &str = "HOME";
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";

/// kubectl's kubeconfig files (`whoami`, `setup --write-kubeconfig`, `convert-kubeconfig`):
/// the path list in `KUBECONFIG`, else `.kube/config` in the home directory client-go finds —
/// `HOME`, and on Windows the first of `HOME`, `HOMEDRIVE` + `HOMEPATH` and `USERPROFILE` that
/// holds one (`kubeconfig/mod.rs`). int128/kubelogin's `~` is `HOME`, else `USERPROFILE`, in a
/// stanza's environment (`kubelogin/command_line.rs`).
pub const KUBECONFIG: &str = "KUBECONFIG";
pub const HOMEDRIVE: &str = "HOMEDRIVE";
pub const HOMEPATH: &str = "HOMEPATH";
pub const USERPROFILE: &str = "USERPROFILE";

/// int128/kubelogin's cache directory (`$KUBECACHEDIR/oidc-login`), read in a stanza's
/// environment by `convert-kubeconfig` to find kubelogin's tokens.
pub const KUBECACHEDIR: &str = "KUBECACHEDIR";

/// Where programs are looked for (the browser launchers).
pub const PATH: &str = "PATH";

/// The password of `--grant-type password` (instead of --password-file or a prompt).
pub const KUBECRED_PASSWORD: &str = "KUBECRED_PASSWORD";

/// A PEM private key for `private_key_jwt` (instead of --client-private-key-file).
pub const KUBECRED_CLIENT_PRIVATE_KEY: &str = "KUBECRED_CLIENT_PRIVATE_KEY";

/// GitHub Actions: where and with what to request the job's ID token
/// (`permissions: id-token: write`).
pub const ACTIONS_ID_TOKEN_REQUEST_URL: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
pub const ACTIONS_ID_TOKEN_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/// Any non-empty value turns colour off (<https://no-color.org>); see `presence/progress.rs`.
pub const NO_COLOR: &str = "NO_COLOR";

/// The proxy for https URLs, for http URLs (issuers on loopback), for both, and the hosts that go
/// direct; each lower case first, as curl reads them (curl takes `http_proxy` only in lower case,
/// a precaution for CGI scripts that does not apply to a credential plugin). Read into
/// `config::ProxyEnvironment` and used by `http/proxy.rs` when a client is built.
pub const HTTPS_PROXY: [&str; 2] = ["https_proxy", "HTTPS_PROXY"];
pub const HTTP_PROXY: [&str; 2] = ["http_proxy", "HTTP_PROXY"];
pub const ALL_PROXY: [&str; 2] = ["all_proxy", "ALL_PROXY"];
pub const NO_PROXY: [&str; 2] = ["no_proxy", "NO_PROXY"];

/// Every proxy variable, in the order they are read.
pub const PROXY_VARIABLES: [[&str; 2]; 4] = [HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY];

/// Google's Application Default Credentials, as google-auth reads them (`clouds/google`): the
/// credential file, gcloud's configuration directory (where its ADC file is), gcloud's named
/// configuration, the metadata server's host, whether to skip the metadata probe, and whether an
/// external account may run its executable. Windows: `APPDATA` holds gcloud's directory.
pub const GOOGLE_APPLICATION_CREDENTIALS: &str = "GOOGLE_APPLICATION_CREDENTIALS";
pub const CLOUDSDK_CONFIG: &str = "CLOUDSDK_CONFIG";
pub const CLOUDSDK_ACTIVE_CONFIG_NAME: &str = "CLOUDSDK_ACTIVE_CONFIG_NAME";
pub const GCE_METADATA_HOST: &str = "GCE_METADATA_HOST";
pub const NO_GCE_CHECK: &str = "NO_GCE_CHECK";
pub const GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES: &str =
    "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES";
pub const APPDATA: &str = "APPDATA";

/// The variables that change which Google credentials `--grant-type google` takes: part of its
/// cache key (their names and values; no file is read for the key), read with the settings.
pub const GOOGLE_KEY_VARIABLES: [&str; 4] = [
    GOOGLE_APPLICATION_CREDENTIALS,
    CLOUDSDK_CONFIG,
    CLOUDSDK_ACTIVE_CONFIG_NAME,
    GCE_METADATA_HOST,
];
