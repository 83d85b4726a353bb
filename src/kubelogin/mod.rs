//! Everything kubecred does so that an int128/kubelogin stanza runs unchanged once `command:`
//! says `kubecred`: the command-line rewrite (a leading `oidc-login`, global flags before
//! `get-token`, kubelogin's numeric `-v`),
//! the kubelogin-only flags (defined here, flattened into `get-token`'s flags by `cli/token_args.rs`), and
//! what those flags mean ([`resolve`], called by `Config::resolve`).
//!
//! kubelogin's names for flags kubecred has too (`--oidc-issuer-url` and the like) are aliases
//! on kubecred's own flags in `cli/token_args.rs` (`--local-server-cert` and `--local-server-key` are
//! kubecred's flags under kubelogin's names). The flags here are hidden from `--help`: they exist
//! only for compatibility, and each is mapped or ignored with a notice — never silently dropped
//! when dropping it could weaken or misdirect a login (klog's logging flags, which only steer
//! kubelogin's own log, are dropped by the rewrite).
//!
//! For `convert-kubeconfig`, a stanza is read exactly as kubelogin reads it
//! (`command_line.rs`, on `crate::pflag`), written as kubecred's flags (`to_kubecred.rs`), and its
//! login found under the name kubelogin gives it in its cache (`token_cache.rs`).

pub mod command_line;
pub mod to_kubecred;
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

    /// kubelogin's TLS renegotiation settings (`--tls-renegotiation-once`, `-freely`): rustls
    /// never renegotiates, which only makes a connection to a provider that asks for it fail,
    /// never less safe. Ignored with a notice; `convert-kubeconfig` leaves such a stanza with
    /// kubelogin.
    #[arg(
        long,
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub tls_renegotiation_once: Option<bool>,

    /// See `tls_renegotiation_once`.
    #[arg(
        long,
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub tls_renegotiation_freely: Option<bool>,

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
        if self.tls_renegotiation_once == Some(true) {
            names.push("--tls-renegotiation-once");
        }
        if self.tls_renegotiation_freely == Some(true) {
            names.push("--tls-renegotiation-freely");
        }
        names
    }
}

/// Why kubecred does without one of kubelogin's flags.
pub fn why_ignored(flag: &str) -> &'static str {
    if flag.starts_with("--tls-renegotiation") {
        "kubecred's TLS (rustls) never renegotiates, so a provider that asks for it fails the login"
    } else {
        "kubecred's callback page says the login is done"
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
    for flag in flags.ignored_given() {
        crate::log::notice(format!(
            "ignoring kubelogin's {flag}: {}",
            why_ignored(flag)
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
/// kubelogin's global flags before its subcommand (`oidc-login -v1 get-token …`) go after it,
/// klog's logging flags are dropped, and kubelogin's numeric verbosity (`-v1`, `--v=2`, `-v 1`)
/// becomes `-v`/`-vv`. Command lines that do not start with `oidc-login` pass unchanged.
pub fn rewrite_argv(mut argv: Vec<OsString>) -> Vec<OsString> {
    if argv.get(1).and_then(|arg| arg.to_str()) != Some(KUBELOGIN_SUBCOMMAND) {
        return argv;
    }
    argv.remove(1);
    move_subcommand_first(&mut argv);
    drop_logging_flags(&mut argv);
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

/// cobra finds the subcommand among flags before it; clap wants it first.
fn move_subcommand_first(argv: &mut Vec<OsString>) {
    let Some(words) = argv[1..]
        .iter()
        .map(|word| word.to_str().map(String::from))
        .collect::<Option<Vec<String>>>()
    else {
        return;
    };
    if let Some(at) = crate::pflag::subcommand_at(&words, &command_line::root_flags())
        && at > 0
    {
        let subcommand = argv.remove(1 + at);
        argv.insert(1, subcommand);
    }
}

/// klog's flags other than `-v` only steer kubelogin's log (files, headers): dropped, with
/// their values.
fn drop_logging_flags(argv: &mut Vec<OsString>) {
    let mut kept = Vec::with_capacity(argv.len());
    let mut rest = std::mem::take(argv).into_iter();
    while let Some(word) = rest.next() {
        let logging = word.to_str().and_then(|text| {
            let name = text.strip_prefix("--")?;
            let (name, inline) = match name.split_once('=') {
                Some((name, _)) => (name, true),
                None => (name, false),
            };
            command_line::KLOG_FLAGS
                .iter()
                .find(|flag| flag.name == name && flag.name != "v")
                .map(|flag| !inline && !flag.boolean)
        });
        match logging {
            Some(takes_next) => {
                if takes_next {
                    rest.next();
                }
            }
            None if word == "--" => {
                kept.push(word);
                kept.extend(rest.by_ref());
            }
            None => kept.push(word),
        }
    }
    *argv = kept;
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
    fn global_flags_before_the_subcommand_and_logging_flags_are_rewritten() {
        let rewritten = |line: &str| -> Vec<String> {
            let argv = line.split_whitespace().map(OsString::from).collect();
            rewrite_argv(argv)
                .into_iter()
                .map(|w| w.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            rewritten("kubecred oidc-login -v1 get-token --oidc-issuer-url=https://i"),
            ["kubecred", "get-token", "-v", "--oidc-issuer-url=https://i"]
        );
        assert_eq!(
            rewritten(
                "kubecred oidc-login -v 2 --logtostderr get-token --log_dir /tmp --skip_headers=true --oidc-client-id=c"
            ),
            ["kubecred", "get-token", "-vv", "--oidc-client-id=c"]
        );
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
