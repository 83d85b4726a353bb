//! Everything kubecred does so that an int128/kubelogin stanza runs unchanged once `command:`
//! says `kubecred`: the command-line rewrite (a leading `oidc-login`, kubelogin's numeric `-v`),
//! the kubelogin-only flags (defined here, flattened into `get-token`'s flags by `cli/token_args.rs`), and
//! what those flags mean ([`resolve`], called by `Config::resolve`).
//!
//! kubelogin's names for flags kubecred has too (`--oidc-issuer-url` and the like) are aliases
//! on kubecred's own flags in `cli/token_args.rs` (`--local-server-cert` and `--local-server-key` are
//! kubecred's flags under kubelogin's names). The flags here are hidden from `--help`: they exist
//! only for compatibility, and each is mapped or ignored with a notice — never silently dropped
//! when dropping it could weaken or misdirect a login.

pub mod command_line;
pub mod token_cache;

use crate::error::{Exit, fail};
use clap::Args;
use std::ffi::OsString;

/// kubelogin's subcommand: its stanzas read `args: [oidc-login, get-token, ...]` because kubelogin
/// runs as the kubectl plugin `kubectl oidc-login`.
const KUBELOGIN_SUBCOMMAND: &str = "oidc-login";

/// kubelogin `get-token` flags that have no kubecred flag of the same meaning.
// The group's id is the field's name in `TokenArgs`: the get-token flag table is generated
// from it (cli/fast_get_token.rs).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "kubelogin")]
pub struct KubeloginFlags {
    /// kubelogin's PKCE choice: `auto` (the default), `no` (= --pkce=false), `S256` (= --pkce).
    /// --pkce, when given, wins.
    #[arg(long, hide = true, value_name = "METHOD")]
    pub oidc_pkce_method: Option<String>,

    /// kubelogin's host for the default redirect URL (`localhost` unless given); --redirect-url
    /// wins.
    #[arg(long, hide = true, value_name = "HOST")]
    pub oidc_redirect_url_hostname: Option<String>,

    /// kubelogin opens this URL after a login; kubecred's callback page says the login is done.
    /// Ignored with a notice.
    #[arg(long, hide = true, value_name = "URL")]
    pub open_url_after_authentication: Option<String>,

    /// kubelogin's TLS renegotiation setting; rustls never renegotiates, and that only makes a
    /// connection fail, never less safe. Ignored with a notice.
    #[arg(long, hide = true, value_name = "MODE")]
    pub tls_renegotiation: Option<String>,

    /// kubelogin's password for `--grant-type password` (kubecred's `--username` is the same
    /// flag). Taken, with a notice that it shows in `ps`; its value is never printed.
    #[arg(long, hide = true, value_name = "PASSWORD")]
    pub password: Option<String>,

    /// kubelogin's request headers, `NAME=VALUE` (several joined by commas): kubecred's
    /// --request-header.
    #[arg(long, hide = true, value_name = "NAME=VALUE")]
    pub oidc_request_header: Vec<String>,
}

impl KubeloginFlags {
    /// The ignored flags given, as `--name`.
    pub fn ignored_given(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.open_url_after_authentication.is_some() {
            names.push("--open-url-after-authentication");
        }
        if self.tls_renegotiation.is_some() {
            names.push("--tls-renegotiation");
        }
        names
    }
}

/// What kubelogin's flags change in kubecred's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeloginSettings {
    /// From `--oidc-pkce-method`: `None` leaves the choice to discovery.
    pub pkce: Option<bool>,
    /// From `--oidc-redirect-url-hostname`, trimmed.
    pub redirect_host: Option<String>,
    /// From `--password` (the password grant).
    pub password: Option<crate::secret::Secret>,
    /// From `--oidc-request-header`, as given (split like --request-header's).
    pub request_headers: Vec<String>,
}

/// Names the ignored flags in a notice, and maps the rest.
pub fn resolve(flags: &KubeloginFlags) -> anyhow::Result<KubeloginSettings> {
    let ignored = flags.ignored_given();
    if !ignored.is_empty() {
        crate::log::notice(format!(
            "ignoring kubelogin's {}: kubecred has no use for it",
            ignored.join(", ")
        ));
    }
    Ok(KubeloginSettings {
        pkce: pkce_from_method(flags.oidc_pkce_method.as_deref())?,
        redirect_host: flags
            .oidc_redirect_url_hostname
            .as_deref()
            .map(|host| host.trim().to_string()),
        password: flags.password.clone().map(crate::secret::Secret::new),
        request_headers: flags.oidc_request_header.clone(),
    })
}

/// What a kubelogin stanza's own flags become when `convert-kubeconfig` writes the stanza in
/// kubecred's flag names (the flags kubecred shares with kubelogin are written by their kubecred
/// names by the caller).
#[derive(Debug, Default)]
pub struct Converted {
    /// kubecred flags standing for kubelogin's meaning: `--pkce`, `--redirect-url`,
    /// `--request-header`.
    pub args: Vec<String>,
    /// The grant is the password grant (kubelogin's `auto` with `--username`).
    pub password_grant: bool,
    /// `--password`: never on a command line again (the caller puts it in the stanza's env).
    pub password: Option<crate::secret::Secret>,
    /// Flags kubecred has no use for (see [`KubeloginFlags::ignored_given`]), left out.
    pub dropped: Vec<&'static str>,
}

/// What the stanza says besides kubelogin's own flags, which decides what those mean.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    /// `--pkce` (`--oidc-use-pkce`) is given: it wins over `--oidc-pkce-method`.
    pub pkce: bool,
    /// `--redirect-url` (`--oidc-redirect-url`) is given.
    pub redirect_url: bool,
    /// The grant is `auto` (or not given).
    pub auto_grant: bool,
    /// `--username` is given.
    pub username: bool,
    /// `--local-server-cert` and `--local-server-key` are given (kubecred's names since the
    /// listener serves https): the redirect URI is kubelogin's over https.
    pub tls_callback: (bool, bool),
}

/// kubelogin's own flags as kubecred flags, for a stanza `convert-kubeconfig` rewrites. Refuses
/// what [`resolve`] refuses. Two meanings of kubelogin's are kept that running the stanza
/// unchanged under kubecred does not keep:
/// - the redirect URI: kubelogin's is `http://localhost:PORT/` (path `/`, the host from
///   `--oidc-redirect-url-hostname`), kubecred's `/callback`; the converted stanza names
///   kubelogin's, so the redirect URIs registered at the provider for kubelogin still match;
/// - `--grant-type auto` with `--username` is the password grant in kubelogin
///   (pkg/cmd/authentication.go), which kubecred's `auto` is not.
pub fn converted(flags: &KubeloginFlags, given: Given) -> anyhow::Result<Converted> {
    let mut args: Vec<String> = flags
        .oidc_request_header
        .iter()
        .map(|header| format!("--request-header={header}"))
        .collect();
    if !given.pkce {
        match pkce_from_method(flags.oidc_pkce_method.as_deref())? {
            Some(true) => args.push("--pkce".to_string()),
            Some(false) => args.push("--pkce=false".to_string()),
            None => {}
        }
    }
    let tls = match given.tls_callback {
        (true, true) => true,
        (false, false) => false,
        _ => {
            return Err(fail(
                Exit::Input,
                "--local-server-cert and --local-server-key go together: give both (the certificate and its key) or neither",
            ));
        }
    };
    if !given.redirect_url {
        let host = flags
            .oidc_redirect_url_hostname
            .as_deref()
            .map(str::trim)
            .unwrap_or("localhost");
        let scheme = if tls { "https" } else { "http" };
        let mut url = url::Url::parse(&format!("{scheme}://localhost/")).expect("a URL");
        if url.set_host(Some(host)).is_err() {
            return Err(fail(
                Exit::Input,
                format!("--oidc-redirect-url-hostname {host:?} is not a host name"),
            ));
        }
        args.push(format!("--redirect-url={url}"));
    }
    Ok(Converted {
        args,
        password_grant: given.auto_grant && given.username,
        password: flags.password.clone().map(crate::secret::Secret::new),
        dropped: flags.ignored_given(),
    })
}

/// kubelogin's `--oidc-pkce-method`: `auto` leaves the choice to discovery, `no` turns PKCE off,
/// `S256` on.
fn pkce_from_method(method: Option<&str>) -> anyhow::Result<Option<bool>> {
    let Some(method) = method else {
        return Ok(None);
    };
    match method.trim() {
        m if m.eq_ignore_ascii_case("auto") => Ok(None),
        m if m.eq_ignore_ascii_case("no") => Ok(Some(false)),
        m if m.eq_ignore_ascii_case("S256") => Ok(Some(true)),
        _ => Err(fail(
            Exit::Input,
            format!(
                "--oidc-pkce-method {method:?} is not one of auto, no, S256 (or use --pkce / --pkce=false)"
            ),
        )),
    }
}

/// Rewrites a kubelogin command line (program name first): a leading `oidc-login` is dropped,
/// and kubelogin's numeric verbosity (`-v1`, `--v=2`, `-v 1`) becomes `-v`/`-vv`. Command lines
/// that do not start with `oidc-login` pass unchanged.
pub fn rewrite_argv(mut argv: Vec<OsString>) -> Vec<OsString> {
    if argv.get(1).and_then(|arg| arg.to_str()) != Some(KUBELOGIN_SUBCOMMAND) {
        return argv;
    }
    argv.remove(1);
    let mut out = Vec::with_capacity(argv.len());
    let mut rest = argv.into_iter();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(rest.by_ref());
            break;
        }
        let inline = ["--v=", "-v="]
            .iter()
            .find_map(|prefix| text.strip_prefix(prefix))
            .or_else(|| text.strip_prefix("-v").filter(|n| n.parse::<u8>().is_ok()));
        let level = match inline {
            Some(number) => number.parse::<u8>().ok(),
            None if text == "-v" || text == "--v" => {
                // kubelogin's -v takes a number; ours counts. Only a number after it is kubelogin's.
                let next = rest.as_slice().first().and_then(|n| n.to_str());
                match next.and_then(|n| n.parse::<u8>().ok()) {
                    Some(level) => {
                        rest.next();
                        Some(level)
                    }
                    None => None,
                }
            }
            None => None,
        };
        match level {
            Some(0) => {}
            Some(1) => out.push("-v".into()),
            Some(_) => out.push("-vv".into()),
            None => out.push(arg),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code_of;

    #[test]
    fn pkce_methods() {
        assert_eq!(pkce_from_method(None).unwrap(), None);
        assert_eq!(pkce_from_method(Some("auto")).unwrap(), None);
        assert_eq!(pkce_from_method(Some("no")).unwrap(), Some(false));
        assert_eq!(pkce_from_method(Some("s256")).unwrap(), Some(true));
        let err = pkce_from_method(Some("plain")).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
    }

    #[test]
    fn kubelogins_password_is_taken_and_never_shown() {
        let flags = KubeloginFlags {
            password: Some("hunter2".into()),
            ..Default::default()
        };
        let settings = resolve(&flags).unwrap();
        assert_eq!(
            settings.password.as_ref().map(|p| p.expose()),
            Some("hunter2")
        );
        assert!(!format!("{settings:?}").contains("hunter2"));
    }

    #[test]
    fn a_converted_stanza_keeps_kubelogins_meaning() {
        let flags = KubeloginFlags {
            oidc_pkce_method: Some("no".into()),
            oidc_redirect_url_hostname: Some("127.0.0.1".into()),
            tls_renegotiation: Some("never".into()),
            password: Some("hunter2".into()),
            ..Default::default()
        };
        let given = Given {
            auto_grant: true,
            username: true,
            ..Default::default()
        };
        let converted = converted(&flags, given).unwrap();
        assert_eq!(
            converted.args,
            ["--pkce=false", "--redirect-url=http://127.0.0.1/"]
        );
        assert!(converted.password_grant);
        assert_eq!(converted.dropped, ["--tls-renegotiation"]);
        assert_eq!(
            converted.password.as_ref().map(|p| p.expose()),
            Some("hunter2")
        );
        assert!(!format!("{converted:?}").contains("hunter2"));

        // What the stanza gives itself wins; kubelogin's defaults become kubecred flags.
        let given = Given {
            pkce: true,
            redirect_url: true,
            ..Default::default()
        };
        assert!(converted_args(&flags, given).is_empty());
        assert_eq!(
            converted_args(&KubeloginFlags::default(), Given::default()),
            ["--redirect-url=http://localhost/"]
        );
        // With the listener serving TLS, kubelogin's redirect URI is https; half of it is refused.
        let tls = Given {
            tls_callback: (true, true),
            ..Default::default()
        };
        assert_eq!(
            converted_args(&KubeloginFlags::default(), tls),
            ["--redirect-url=https://localhost/"]
        );
        let half = Given {
            tls_callback: (true, false),
            ..Default::default()
        };
        assert!(super::converted(&KubeloginFlags::default(), half).is_err());
        // kubelogin's request headers become kubecred's.
        let headers = KubeloginFlags {
            oidc_request_header: vec!["Origin=https://portal.example".into()],
            ..Default::default()
        };
        assert_eq!(
            converted_args(&headers, given),
            ["--request-header=Origin=https://portal.example"]
        );
    }

    fn converted_args(flags: &KubeloginFlags, given: Given) -> Vec<String> {
        converted(flags, given).unwrap().args
    }

    #[test]
    fn other_command_lines_pass_unchanged() {
        let argv: Vec<OsString> = ["kubecred", "get-token", "-v1"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(rewrite_argv(argv.clone()), argv);
    }
}
