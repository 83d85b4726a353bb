//! Everything kubecred does so that an int128/kubelogin stanza runs unchanged once `command:`
//! says `kubecred`: the command-line rewrite (a leading `oidc-login`, kubelogin's numeric `-v`),
//! the kubelogin-only flags (defined here, flattened into `get-token`'s flags by `cli.rs`), and
//! what those flags mean ([`resolve`], called by `Config::resolve`).
//!
//! kubelogin's names for flags kubecred has too (`--oidc-issuer-url` and the like) are aliases
//! on kubecred's own flags in `cli.rs` (`--local-server-cert` and `--local-server-key` are
//! kubecred's flags under kubelogin's names). The flags here are hidden from `--help`: they exist
//! only for compatibility, and each is mapped or ignored with a notice — never silently dropped
//! when dropping it could weaken or misdirect a login.

use crate::error::{fail, Exit};
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
    fn other_command_lines_pass_unchanged() {
        let argv: Vec<OsString> = ["kubecred", "get-token", "-v1"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(rewrite_argv(argv.clone()), argv);
    }
}
