//! Everything kubecred does with int128/kubelogin's command lines. A kubelogin `get-token` line
//! has one reader, `command_line.rs` (on `crate::peers::pflag`): every flag kubelogin has, read and
//! held as kubelogin reads and holds it.
//!
//! Run as it is once `command:` says `kubecred` ([`rewrite_argv`]): a leading `oidc-login` is
//! dropped and the rest read by that reader, leniently — the words go on to kubecred's parser
//! as kubelogin holds them, global flags before `get-token` included, kubelogin's numeric `-v`
//! as a count, klog's logging flags (which only steer kubelogin's own log) dropped, and what
//! the reader does not take (kubecred's own flags) as it is. kubelogin's names for flags kubecred
//! has too (`--oidc-issuer-url` and the like) are aliases on kubecred's own flags in
//! `cli/token_args.rs` (`--local-server-cert` and `--local-server-key` are kubecred's flags
//! under kubelogin's names); the kubelogin-only flags are `cli/kubelogin_flags.rs`'s (flattened into
//! `get-token`'s flags, hidden from `--help`: they exist only for compatibility), and what they
//! mean is `config/kubelogin.rs`'s: each is mapped or ignored with a notice ([`why_ignored`]) —
//! never silently dropped when dropping it could weaken or misdirect a login.
//!
//! For `convert-kubeconfig`, the same reader reads a stanza strictly, as kubelogin would run it
//! or refuse it; `to_kubecred.rs` writes it as kubecred's flags, and `token_cache.rs` names
//! its login as each release of kubelogin names it in its cache.

pub mod command_line;
pub mod to_kubecred;
pub mod token_cache;

use std::ffi::OsString;

/// kubelogin's subcommand: its stanzas read `args: [oidc-login, get-token, ...]` because kubelogin
/// runs as the kubectl plugin `kubectl oidc-login`.
const KUBELOGIN_SUBCOMMAND: &str = "oidc-login";

/// Why kubecred does without one of kubelogin's flags.
pub fn why_ignored(flag: &str) -> &'static str {
    if flag.starts_with("--tls-renegotiation") {
        "kubecred's TLS (rustls) never renegotiates, so a provider that asks for it fails the login"
    } else {
        "kubecred's callback page says the login is done"
    }
}

/// Rewrites a kubelogin command line (program name first) for kubecred's parser, reading it with
/// the one reader of kubelogin lines (`command_line.rs`), in this process's environment (see
/// [`rewrite_argv_in`]). Command lines that do not start with `oidc-login` pass unchanged.
pub fn rewrite_argv(argv: Vec<OsString>) -> Vec<OsString> {
    rewrite_argv_in(argv, &|name| std::env::var(name).ok())
}

/// [`rewrite_argv`] in the environment `env` answers (its `HOME`, for `~`): a leading
/// `oidc-login` is dropped, kubelogin's subcommand found among the global flags before it
/// (`oidc-login -v1 get-token …`), and `get-token`'s words read as kubelogin reads them and
/// given to kubecred's parser as kubelogin holds them: a switch's Go spelling as `true` or
/// `false`, a `stringSlice` one word per CSV field, `~` expanded, an `int` in decimal,
/// kubelogin's numeric verbosity (`-v1`, `--v=2`, `-v 1`) as `-v`/`-vv`, klog's logging flags
/// dropped, `--oidc-redirect-url-authcode-keyboard` as the redirect URI it wins over.
/// Leniently: a word kubelogin would refuse or does not know goes on as it is, for kubecred's
/// parser to take (its own flags, `-vv`) or refuse.
pub fn rewrite_argv_in(
    mut argv: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<OsString> {
    if argv.get(1).and_then(|arg| arg.to_str()) != Some(KUBELOGIN_SUBCOMMAND) {
        return argv;
    }
    argv.remove(1);
    if argv[1..].iter().any(|word| word.to_str().is_none()) {
        return argv;
    }
    let mut argv = argv.into_iter();
    let mut out: Vec<OsString> = argv.next().into_iter().collect();
    let words = argv.filter_map(|word| word.into_string().ok()).collect();
    out.extend(for_kubecred(words, env).into_iter().map(OsString::from));
    out
}

/// What follows `oidc-login`, as kubecred's words: the subcommand first.
fn for_kubecred(mut words: Vec<String>, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let Some(subcommand) = command_line::take_subcommand(&mut words) else {
        return words;
    };
    let get_token = subcommand == "get-token";
    let mut out = Vec::with_capacity(words.len() + 1);
    out.push(subcommand);
    if !get_token {
        out.extend(words);
        return out;
    }
    let home = || {
        env(crate::env_vars::HOME)
            .or_else(|| env("USERPROFILE"))
            .unwrap_or_default()
    };
    // Words already given on or taken: shorthands of one word (`-hv1`) share it.
    let mut done = 0;
    let mut last = None;
    for read in crate::peers::pflag::read(&words, &command_line::GET_TOKEN_TABLE) {
        if !take(&read.item, &home, &mut out, &mut last) {
            let from = done.max(read.words.start);
            out.extend(words[from..read.words.end].iter().cloned());
        }
        done = done.max(read.words.end);
    }
    out.extend(last);
    out
}

/// Puts one thing kubelogin reads into kubecred's words, as kubelogin holds it (`last`: a word
/// that goes after all the others, so that it wins over them). `false`: its words go on as
/// they are.
fn take(
    item: &crate::peers::pflag::Item,
    home: &dyn Fn() -> String,
    out: &mut Vec<String>,
    last: &mut Option<String>,
) -> bool {
    use crate::peers::pflag::Item;
    use command_line::Holds;
    let (name, value) = match item {
        Item::Flag { name, value } => (*name, *value),
        // A logging flag without its value is as harmless as with it.
        Item::Refused {
            name: Some(name), ..
        } => return command_line::holds(name) == Holds::Logging,
        _ => return false,
    };
    let holds = command_line::holds(name);
    match holds {
        Holds::Logging => true,
        // kubelogin's -v takes a number; ours counts (`-v`, `-vv` go on as they are).
        Holds::Verbosity => match value.parse::<u32>() {
            Ok(0) => true,
            Ok(1) => {
                out.push("-v".into());
                true
            }
            Ok(_) => {
                out.push("-vv".into());
                true
            }
            Err(_) => false,
        },
        _ if name == "help" => false,
        // kubelogin 1.33 and 1.34 send it over --oidc-redirect-url, unless it is empty.
        _ if name == "oidc-redirect-url-authcode-keyboard" => {
            if !value.is_empty() {
                *last = Some(flag_word("redirect-url", value));
            }
            true
        }
        // Held as given: no need to ask.
        Holds::AsGiven => {
            out.push(flag_word(name, value));
            true
        }
        _ => match command_line::held(holds, name, value, home) {
            Ok(values) if !values.is_empty() => {
                out.extend(values.iter().map(|value| flag_word(name, value)));
                true
            }
            _ => false,
        },
    }
}

/// `--name=value` (without `format!`'s machinery: this runs on a cache hit).
fn flag_word(name: &str, value: &str) -> String {
    let mut word = String::with_capacity(name.len() + value.len() + 3);
    word.push_str("--");
    word.push_str(name);
    word.push('=');
    word.push_str(value);
    word
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_kubelogin_line_goes_to_kubecred_as_kubelogin_holds_it() {
        let rewritten = |line: &str| -> Vec<String> {
            let argv = line.split_whitespace().map(OsString::from).collect();
            let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
            rewrite_argv_in(argv, &env)
                .into_iter()
                .map(|w| w.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            rewritten(
                "kubecred oidc-login get-token --oidc-client-id -x --oidc-extra-scope=email,profile --certificate-authority=~/.kube/ca.crt --authentication-timeout-sec=0x3c --oidc-use-access-token=T --listen-address localhost:8000"
            ),
            [
                "kubecred",
                "get-token",
                // A value is the next word, whatever it looks like.
                "--oidc-client-id=-x",
                "--oidc-extra-scope=email",
                "--oidc-extra-scope=profile",
                "--certificate-authority=/home/ada/.kube/ca.crt",
                "--authentication-timeout-sec=60",
                "--oidc-use-access-token=true",
                "--listen-address=localhost:8000",
            ]
        );
        // What the reader does not take goes on as it is: kubecred's own flags and -vv, a value
        // kubelogin would refuse; --oidc-redirect-url-authcode-keyboard wins over the redirect
        // URL, as in kubelogin 1.33 and 1.34.
        assert_eq!(
            rewritten(
                "kubecred oidc-login get-token --oidc-redirect-url-authcode-keyboard=urn:x --cache-storage keyring -vv --oidc-use-pkce=yes --oidc-redirect-url=http://localhost"
            ),
            [
                "kubecred",
                "get-token",
                "--cache-storage",
                "keyring",
                "-vv",
                "--oidc-use-pkce=yes",
                "--oidc-redirect-url=http://localhost",
                "--redirect-url=urn:x",
            ]
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
