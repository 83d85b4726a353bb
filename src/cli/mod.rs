//! The command line, and only the command line: clap types, every flag documented where it is
//! defined, each with its `KUBECRED_<FLAG_NAME>` environment variable and, where int128/kubelogin
//! has one, kubelogin's name as an alias so that a kubelogin user only changes `command:`.
//!
//! Nothing outside this module, `kubelogin.rs` (kubelogin's own flags, flattened in here) and
//! `config/` sees these types: `Config::resolve` turns them, the exec info and the cluster
//! extension into one plain struct with the domain's own types.
//!
//! Here: the commands (`Cli`, `Command`) and the parse. get-token's flags, which every token
//! command flattens in, are in `token_args.rs` (the CI grants' in `federation.rs`); the other
//! commands' arguments in `command_args.rs`; get-token's plain command lines are read without
//! clap by `fast_get_token.rs`; a command line clap refused becomes one line in `usage_error.rs`.

mod clouds;
mod command_args;
mod fast_get_token;
mod federation;
mod kubelogin_flags;
mod token_args;
mod usage_error;
mod version;

pub use clouds::{CloudArgs, GoogleSourceArg};
pub use command_args::{
    ConvertArgs, LoginArgs, LogoutArgs, OutputArg, SetupArgs, ShellArg, StatusArgs, TargetKindArg,
    WhoamiArgs,
};
pub use federation::{CiTokenSourceArg, FederationArgs};
pub use kubelogin_flags::KubeloginFlags;
pub use token_args::{
    CacheDirArg, CacheStorageArg, ClientAuthMethodArg, DeriveArg, GrantTypeArg, NotifyArg,
    TokenArgs,
};
pub use usage_error::{usage_error_line, usage_error_line_in};
pub use version::{LONG_VERSION, VERSION};

use crate::peers::kubelogin;
use clap::{Args, Parser, Subcommand};
use command_args::{
    COMPLETION_EXAMPLES, CONVERT_EXAMPLES, MAN_EXAMPLES, SETUP_EXAMPLES, WHOAMI_EXAMPLES,
};
use std::ffi::OsString;

#[derive(Debug, Parser)]
#[command(
    name = "kubecred",
    version = VERSION,
    long_version = LONG_VERSION,
    about = "Kubernetes exec credential plugin for OpenID Connect and OAuth 2.0 identity providers",
    long_about = "Kubernetes exec credential plugin for OpenID Connect and OAuth 2.0 identity providers.\n\n\
        kubectl runs `kubecred get-token` from a kubeconfig `exec` stanza; kubecred prints one \
        ExecCredential on stdout, answering from its cache when it can. Also runs as a kubectl \
        plugin: installed as `kubectl-kubecred` on PATH, `kubectl kubecred status` works.\n\n\
        The manual, a page per task: https://OWNER.github.io/kubecred/",
    // pflag semantics, as kubectl and kubelogin: a single-valued flag given twice takes the later
    // value, so a wrapper or a kubeconfig `args` list can append an override. Repeatable flags
    // (--scope, --certificate-authority, ...) still accumulate. Propagated to every subcommand.
    args_override_self = true,
    after_help = "Examples:\n  kubecred login --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred status\n  kubecred logout --all\n  source <(kubecred completion bash)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print an ExecCredential for kubectl (the command a kubeconfig `exec` stanza runs).
    #[command(after_help = "Example (what kubectl runs; the kubeconfig stanza: \
        https://OWNER.github.io/kubecred/kubeconfig.html):\n  \
        kubecred get-token --issuer-url https://idp.example --client-id kubernetes")]
    GetToken(TokenArgs),
    /// Log in now, even during a login cool-down, and cache the result (prints nothing on stdout);
    /// or, with --remote-bootstrap, take here the browser's part of a login started elsewhere.
    #[command(after_help = "Examples:\n  \
        kubecred login --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred login --issuer-url https://idp.example --client-id kubernetes \\\n      \
        --account admin --prompt select_account\n  \
        # on your laptop, for a login kubecred started over SSH:\n  \
        kubecred login --remote-bootstrap 'https://idp.example/auth?...'")]
    Login(LoginArgs),
    /// Forget the cached login for these settings, or every one (--all), revoking its refresh token.
    #[command(after_help = "Examples:\n  \
        kubecred logout --issuer-url https://idp.example --client-id kubernetes\n  \
        kubecred logout --all")]
    Logout(LogoutArgs),
    /// List the cached logins (never a token): issuer, client, scopes, account, subject, expiry.
    #[command(after_help = "Examples:\n  kubecred status\n  kubecred status --output json")]
    Status(StatusArgs),
    /// Check a provider, log in, show the token's claims, and print the cluster and kubectl configuration.
    #[command(after_help = SETUP_EXAMPLES)]
    Setup(SetupArgs),
    /// Show the claims of the token kubectl would send, and the user a cluster would make of them.
    #[command(after_help = WHOAMI_EXAMPLES)]
    Whoami(WhoamiArgs),
    /// Switch a kubeconfig's OIDC users (auth-provider oidc, kubelogin) to kubecred, tokens included.
    #[command(after_help = CONVERT_EXAMPLES)]
    ConvertKubeconfig(ConvertArgs),
    /// Print a shell completion script on stdout.
    #[command(after_help = COMPLETION_EXAMPLES)]
    Completion {
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print the man page (roff) on stdout.
    #[command(after_help = MAN_EXAMPLES)]
    Man,
    /// Print the version, the commit, the target, the build date and the compiler, as --version does.
    #[command(after_help = "Example:\n  kubecred version")]
    Version,
    /// The background renewal a cache hit starts (refresh-ahead); not for people. Hidden from
    /// help, completions and the man page.
    #[command(name = RENEW_AHEAD, hide = true)]
    RenewAhead(RenewAheadArgs),
}

/// The name of the hidden background-renewal command.
const RENEW_AHEAD: &str = "renew-ahead";

/// `kubecred renew-ahead`: get-token's settings, and the lock the hit hands down.
#[derive(Debug, Clone, Args)]
pub struct RenewAheadArgs {
    /// The descriptor of the entry's locked lock file, inherited from the hit that started this
    /// run (unix); checked to be that file. Without it, the lock is taken without waiting.
    #[arg(long, value_name = "FD")]
    pub lock_fd: Option<i32>,

    #[command(flatten)]
    pub token: TokenArgs,
}

/// The arguments of the background renewal of the get-token run whose command line is `argv`
/// (program name first, as the process got it): `renew-ahead [--lock-fd=FD] <get-token's
/// arguments>`. `None` when `argv` does not run get-token.
pub fn renewal_arguments(argv: Vec<OsString>, lock_fd: Option<i32>) -> Option<Vec<OsString>> {
    let argv = kubelogin::rewrite_argv(argv);
    let words = get_token_words(&argv)?;
    let mut args = vec![OsString::from(RENEW_AHEAD)];
    args.extend(lock_fd.map(|fd| OsString::from(format!("--lock-fd={fd}"))));
    args.extend(words.iter().cloned());
    Some(args)
}

impl Cli {
    /// Parses a command line (program name first) the way the binary does. A kubelogin stanza
    /// migrated by changing only `command:` still starts with `oidc-login`: what follows is read
    /// as kubelogin reads it (`kubelogin::rewrite_argv`: its global flags before `get-token`,
    /// its numeric verbosity `-v1`, `--v=2`, `-v 1` as `-v`/`-vv`, …).
    pub fn try_parse_command_line<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let argv = kubelogin::rewrite_argv(argv.into_iter().map(Into::into).collect());
        if let Some(cli) = parse_get_token_alone(&argv) {
            return Ok(cli);
        }
        // Run as a kubectl plugin: the same commands; help and errors name the command the
        // user typed.
        if as_kubectl_plugin(&argv) {
            use clap::{CommandFactory, FromArgMatches};
            let matches = Cli::command()
                .bin_name("kubectl kubecred")
                .try_get_matches_from(argv)?;
            return Cli::from_arg_matches(&matches);
        }
        Cli::try_parse_from(argv)
    }
}

/// A kubeconfig stanza's command line (program name first; a kubelogin line after
/// `oidc-login` read as for the binary, `kubelogin::rewrite_argv`) as `get-token`'s settings,
/// read from the words alone: no `KUBECRED_*` variable of this process fills a flag the stanza
/// does not give (`convert-kubeconfig` writes the stanza's settings out again). `Ok(None)` when
/// the line does not run get-token.
pub fn parse_stanza_get_token(argv: Vec<OsString>) -> Result<Option<TokenArgs>, clap::Error> {
    parse_stanza_get_token_in(argv, &|_| None)
}

/// [`parse_stanza_get_token`] in an explicit environment: each flag the words do not give is
/// taken from its `KUBECRED_*` variable as `var` answers it — the environment kubectl gives the
/// plugin (a stanza's `env` over this process's) for `whoami` and `convert-kubeconfig`, with no
/// variable set in this process. The value counts as `--flag=VALUE` (a switch: given when the
/// value is on, as clap reads it), so that what clap accepts and refuses is unchanged. A
/// kubelogin line's `~` is its `HOME`.
pub fn parse_stanza_get_token_in(
    mut argv: Vec<OsString>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<TokenArgs>, clap::Error> {
    use clap::builder::TypedValueParser;
    use clap::parser::ValueSource;
    use clap::{ArgAction, CommandFactory, FromArgMatches};
    argv = kubelogin::rewrite_argv_in(argv, &|name| var(name)?.into_string().ok());
    if get_token_words(&argv).is_none() {
        return Ok(None);
    }
    let words_alone = stanza_command().try_get_matches_from(&argv)?;
    let given = words_alone.subcommand_matches("get-token");
    // Built, so that a refused value's error can name its flag.
    let mut definition = Cli::command();
    definition.build();
    let get_token = definition
        .find_subcommand("get-token")
        .expect("get-token is defined");
    for arg in get_token.get_arguments() {
        let (Some(variable), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let id = arg.get_id().as_str();
        if given.and_then(|m| m.value_source(id)) == Some(ValueSource::CommandLine) {
            continue;
        }
        let Some(value) = variable.to_str().and_then(var) else {
            continue;
        };
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            if clap::builder::BoolishValueParser::new().parse_ref(get_token, Some(arg), &value)? {
                argv.push(format!("--{long}").into());
            }
        } else {
            let mut word = OsString::from(format!("--{long}="));
            word.push(&value);
            argv.push(word);
        }
    }
    let matches = stanza_command().try_get_matches_from(argv)?;
    match Cli::from_arg_matches(&matches)?.command {
        Command::GetToken(args) => Ok(Some(args)),
        _ => Ok(None),
    }
}

/// The command line definition with get-token's flags reading no environment variable.
fn stanza_command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommand("get-token", |sub| sub.mut_args(|arg| arg.env(None)))
}

/// The binary's own name.
pub const PROGRAM_NAME: &str = "kubecred";

/// The file name kubectl looks for on PATH for `kubectl kubecred` (`.exe` on Windows).
pub const KUBECTL_PLUGIN_NAME: &str = "kubectl-kubecred";

/// Whether `argv` (program name first) runs this binary as the kubectl plugin: `kubectl
/// kubecred ...` runs `kubectl-kubecred` from PATH.
fn as_kubectl_plugin(argv: &[OsString]) -> bool {
    argv.first()
        .and_then(|path| std::path::Path::new(path).file_stem())
        .is_some_and(|name| name == KUBECTL_PLUGIN_NAME)
}

/// kubectl runs `get-token` on every command, so its plain command lines are read without clap
/// (see fast_get_token.rs). Anything else returns `None`, and the full parser runs: help,
/// `--version`, every error and every unusual line come from clap, unchanged.
fn parse_get_token_alone(argv: &[OsString]) -> Option<Cli> {
    let words = get_token_words(argv)?;
    let variables = fast_get_token::KubecredVariables::of_process();
    let args = fast_get_token::parse(words, |name| variables.get(name))?;
    Some(Cli {
        command: Command::GetToken(args),
    })
}

/// The words after `get-token`, when `argv` (rewritten from kubelogin's) runs get-token.
fn get_token_words(argv: &[OsString]) -> Option<&[OsString]> {
    (argv.get(1)?.to_str()? == "get-token").then(|| &argv[2..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::path::PathBuf;

    /// clap wraps help at the terminal's width: an example line longer than a narrow terminal
    /// would be cut in the middle of a command, and a pasted half fails.
    #[test]
    fn every_example_line_fits_a_narrow_terminal() {
        let mut command = Cli::command();
        for sub in command.get_subcommands_mut() {
            let help = sub
                .get_after_long_help()
                .or(sub.get_after_help())
                .map(|text| text.to_string())
                .unwrap_or_default();
            let Some(examples) = help.split("Examples:").nth(1) else {
                continue;
            };
            for line in examples.lines() {
                assert!(
                    line.chars().count() <= 78,
                    "{}: {line:?} is longer than 78 columns; continue it with \\",
                    sub.get_name()
                );
            }
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_reads_its_kubecred_environment_variable() {
        let command = Cli::command();
        let get_token = command.find_subcommand("get-token").unwrap();
        for arg in get_token.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(long, "help" | "verbose") {
                continue; // -v is counted; KUBECRED_VERBOSE is read in config.rs
            }
            if arg.is_hide_set() {
                assert_eq!(arg.get_env(), None, "hidden kubelogin flag --{long}");
                continue; // kubelogin compatibility only: no KUBECRED_* name
            }
            let expected = format!("KUBECRED_{}", long.to_uppercase().replace('-', "_"));
            assert_eq!(
                arg.get_env().and_then(|v| v.to_str()),
                Some(expected.as_str()),
                "--{long}"
            );
        }
    }

    #[test]
    fn kubelogin_names_are_accepted() {
        let cli = Cli::try_parse_from([
            "kubecred",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "--oidc-client-secret=s3cret",
            "--oidc-extra-scope=email,groups",
            "--oidc-extra-scope=profile",
            "--oidc-use-access-token",
            "--token-cache-dir=/tmp/x",
            "--token-cache-storage=disk",
            "--grant-type=authcode-keyboard",
        ])
        .unwrap();
        let Command::GetToken(args) = cli.command else {
            panic!("get-token expected")
        };
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.client_id.as_deref(), Some("k8s"));
        assert_eq!(args.scopes, ["email", "groups", "profile"]);
        assert_eq!(args.use_access_token, Some(true));
        assert_eq!(args.cache_storage, Some(CacheStorageArg::Disk));
        assert_eq!(args.grant_type, Some(GrantTypeArg::AuthcodeKeyboard));
    }

    fn token_args(argv: &[&str]) -> TokenArgs {
        match Cli::try_parse_command_line(argv).unwrap().command {
            Command::GetToken(args) => args,
            _ => panic!("get-token expected"),
        }
    }

    #[test]
    fn a_kubelogin_stanza_parses_unchanged() {
        let args = token_args(&[
            "kubecred",
            "oidc-login",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "--oidc-use-pkce",
            "--oidc-pkce-method=S256",
            "--authentication-timeout-sec=300",
            "--oidc-redirect-url-hostname=127.0.0.1",
            "--oidc-auth-request-extra-params=acr_values=a,b",
            "--open-url-after-authentication=https://done.example",
            "--tls-renegotiation-once",
            "--oidc-use-access-token=true",
            "--certificate-authority=/etc/ca,with,commas.pem",
            "-v1",
        ]);
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.pkce, Some(true));
        assert_eq!(args.kubelogin.oidc_pkce_method.as_deref(), Some("S256"));
        assert_eq!(args.auth_timeout.as_deref(), Some("300"));
        assert_eq!(
            args.kubelogin.oidc_redirect_url_hostname.as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(args.auth_params, ["acr_values=a,b"]);
        assert_eq!(
            args.kubelogin.ignored_given(),
            [
                "--open-url-after-authentication",
                "--tls-renegotiation-once"
            ]
        );
        assert_eq!(args.use_access_token, Some(true));
        assert_eq!(
            args.certificate_authority,
            [PathBuf::from("/etc/ca,with,commas.pem")]
        );
        assert_eq!(args.verbose, 1);
        // kubelogin's global flags before its subcommand, and pflag's `=false`.
        let args = token_args(&[
            "kubecred",
            "oidc-login",
            "-v1",
            "--logtostderr",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-use-access-token=False",
            "--insecure-skip-tls-verify=F",
        ]);
        assert_eq!(args.verbose, 1);
        assert_eq!(args.use_access_token, Some(false));
        assert_eq!(args.insecure_skip_tls_verify, Some(false));
    }

    /// Every flag int128/kubelogin's get-token has at its HEAD (and klog's, before or after the
    /// subcommand) is one kubecred's get-token takes, in each of pflag's forms: a kubelogin
    /// stanza runs once `command:` says kubecred. The table is `kubelogin::command_line`'s, the
    /// one `convert-kubeconfig` reads stanzas with.
    #[test]
    fn every_flag_kubelogin_has_is_one_kubecred_accepts() {
        use crate::peers::kubelogin::command_line::{KLOG_FLAGS, get_token_flags};
        let sample = |name: &str| match name {
            "oidc-pkce-method" => "S256",
            "grant-type" => "authcode",
            "token-cache-storage" => "disk",
            "authentication-timeout-sec" | "v" | "log_file_max_size" => "60",
            "listen-address" => "localhost:8000",
            "oidc-request-header" | "oidc-auth-request-extra-params" => "a=1,b=2",
            _ => "/x",
        };
        for flag in get_token_flags().iter().chain(&KLOG_FLAGS) {
            if flag.name == "help" {
                continue;
            }
            let forms: Vec<Vec<String>> = if flag.boolean {
                ["", "=true", "=false", "=T", "=0"]
                    .iter()
                    .map(|value| vec![format!("--{}{value}", flag.name)])
                    .collect()
            } else {
                let value = sample(flag.name);
                vec![
                    vec![format!("--{}={value}", flag.name)],
                    vec![format!("--{}", flag.name), value.to_string()],
                ]
            };
            for form in forms {
                for before in [false, true] {
                    let mut argv = vec!["kubecred".to_string(), "oidc-login".to_string()];
                    if before && KLOG_FLAGS.contains(flag) {
                        argv.extend(form.iter().cloned());
                        argv.push("get-token".into());
                    } else {
                        argv.push("get-token".into());
                        argv.extend(form.iter().cloned());
                    }
                    let parsed = Cli::try_parse_command_line(argv.iter().map(String::as_str));
                    assert!(
                        matches!(
                            parsed,
                            Ok(Cli {
                                command: Command::GetToken(_)
                            })
                        ),
                        "{argv:?}: {parsed:?}"
                    );
                }
            }
        }
    }

    /// kubecred run on a kubelogin line takes the values `convert-kubeconfig` reads in it: one
    /// reader, `kubelogin::command_line`, for both.
    #[test]
    fn a_kubelogin_line_runs_with_the_values_convert_reads() {
        use crate::peers::kubelogin::command_line::{Read, read};
        let home = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
        for line in [
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c",
            "-v1 --oidc-extra-scope=a,b get-token --oidc-client-id c --oidc-issuer-url https://i --oidc-extra-scope=\"c\",e",
            "get-token --oidc-issuer-url=https://i --oidc-client-id -dash --certificate-authority=~/ca.pem --certificate-authority=/etc/a,b.pem --authentication-timeout-sec=010 --oidc-use-access-token=F --listen-address=127.0.0.1:9000,localhost:9001 -v 2",
        ] {
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            let Read::GetToken(kubelogin) = read(&words, &home) else {
                panic!("{line}");
            };
            let mut argv = vec![OsString::from("kubecred"), OsString::from("oidc-login")];
            argv.extend(words.iter().map(OsString::from));
            let argv = crate::peers::kubelogin::rewrite_argv_in(argv, &|name| home(name));
            let Command::GetToken(kubecred) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("{line}");
            };
            assert_eq!(
                kubecred.issuer_url.as_deref(),
                Some(&*kubelogin.issuer_url),
                "{line}"
            );
            assert_eq!(
                kubecred.client_id.as_deref(),
                Some(&*kubelogin.client_id),
                "{line}"
            );
            assert_eq!(kubecred.scopes, kubelogin.extra_scopes, "{line}");
            let paths: Vec<PathBuf> = kubelogin.ca_files.iter().map(PathBuf::from).collect();
            assert_eq!(kubecred.certificate_authority, paths, "{line}");
            let timeout =
                (kubelogin.auth_timeout_sec != 180).then(|| kubelogin.auth_timeout_sec.to_string());
            assert_eq!(kubecred.auth_timeout, timeout, "{line}");
            assert_eq!(
                kubecred.use_access_token.unwrap_or(false),
                kubelogin.use_access_token,
                "{line}"
            );
            assert_eq!(
                kubecred.listen_address,
                kubelogin.listen_addresses.unwrap_or_default(),
                "{line}"
            );
            assert_eq!(u32::from(kubecred.verbose), kubelogin.verbosity, "{line}");
        }
    }

    #[test]
    fn only_a_leading_oidc_login_is_dropped() {
        // Not kubelogin's: nothing is rewritten, and a stray oidc-login stays an error.
        assert!(Cli::try_parse_command_line(["kubecred", "get-token", "oidc-login"]).is_err());
        assert!(Cli::try_parse_command_line(["kubecred", "get-token", "-v1"]).is_err());
        let args = token_args(&["kubecred", "get-token", "-vv"]);
        assert_eq!(args.verbose, 2);
        let argv = ["kubecred", "oidc-login"].map(OsString::from);
        let err = Cli::try_parse_command_line(argv.clone()).unwrap_err();
        assert!(usage_error_line(&err, &argv).starts_with("a command is required"));
    }

    #[test]
    fn kubelogins_numeric_verbosity_becomes_a_count() {
        let verbose = |extra: &[&str]| {
            let mut argv = vec!["kubecred", "oidc-login", "get-token"];
            argv.extend_from_slice(extra);
            token_args(&argv).verbose
        };
        assert_eq!(verbose(&[]), 0);
        assert_eq!(verbose(&["-v0"]), 0);
        assert_eq!(verbose(&["-v1"]), 1);
        assert_eq!(verbose(&["--v=4"]), 2);
        assert_eq!(verbose(&["-v", "1"]), 1);
        assert_eq!(verbose(&["--v", "2"]), 2);
        assert_eq!(verbose(&["-v"]), 1);
        assert_eq!(verbose(&["-vv"]), 2);
    }

    #[test]
    fn comma_splitting_only_where_values_cannot_hold_commas() {
        let args = token_args(&[
            "kubecred",
            "get-token",
            "--scope=email,groups",
            "--listen-address=127.0.0.1:1,127.0.0.1:2",
            "--certificate-authority-data=QQ==,Qg==",
            "--auth-param=acr_values=a,b",
            "--certificate-authority=a,b.pem",
        ]);
        assert_eq!(args.scopes, ["email", "groups"]);
        assert_eq!(args.listen_address.len(), 2);
        assert_eq!(args.certificate_authority_data, ["QQ==", "Qg=="]);
        assert_eq!(args.auth_params, ["acr_values=a,b"]);
        assert_eq!(args.certificate_authority, [PathBuf::from("a,b.pem")]);
    }

    #[test]
    fn on_off_environment_variables_take_1_yes_and_true() {
        let on_off = [
            "use_access_token",
            "insecure_skip_tls_verify",
            "force_refresh",
            "skip_open_browser",
        ];
        for (value, expected) in [
            ("1", true),
            ("yes", true),
            ("true", true),
            ("0", false),
            ("off", false),
        ] {
            for id in on_off {
                // A variable no other test reads, so setting it races with nothing.
                let var = format!("KUBECRED_TEST_{}_{value}", id.to_uppercase());
                // SAFETY: a variable of this test alone; no other thread reads or writes it.
                unsafe { std::env::set_var(&var, value) };
                let command = Cli::command().mut_subcommand("get-token", |sub| {
                    sub.mut_arg(id, |arg| arg.env(&*var.clone().leak()))
                });
                let matches = command
                    .try_get_matches_from(["kubecred", "get-token"])
                    .unwrap_or_else(|err| panic!("{var}={value}: {err}"));
                let sub = matches.subcommand_matches("get-token").unwrap();
                assert_eq!(sub.get_flag(id), expected, "{var}={value}");
            }
        }
        let var = "KUBECRED_TEST_PKCE";
        // SAFETY: a variable of this test alone; no other thread reads or writes it.
        unsafe { std::env::set_var(var, "no") };
        let command = Cli::command()
            .mut_subcommand("get-token", |sub| sub.mut_arg("pkce", |arg| arg.env(var)));
        let matches = command
            .try_get_matches_from(["kubecred", "get-token"])
            .unwrap();
        let sub = matches.subcommand_matches("get-token").unwrap();
        assert_eq!(sub.get_one::<bool>("pkce"), Some(&false));
    }

    #[test]
    fn the_get_token_fast_path_parses_as_the_full_parser_does() {
        let cases: &[&[&str]] = &[
            &[
                "kubecred",
                "get-token",
                "--issuer-url=https://idp",
                "--client-id=k",
            ],
            &[
                "kubecred",
                "get-token",
                "--issuer-url",
                "https://idp",
                "--scope=a,b",
                "--scope",
                "c",
            ],
            &[
                "kubecred",
                "get-token",
                "-vv",
                "--pkce=false",
                "--listen-address=127.0.0.1:0",
            ],
            &[
                "kubecred",
                "get-token",
                "--auth-param=acr_values=a,b",
                "--force-refresh",
            ],
            &[
                "kubecred",
                "get-token",
                "--oidc-issuer-url=https://idp",
                "--oidc-pkce-method=S256",
            ],
            &[
                "kubecred",
                "oidc-login",
                "get-token",
                "--oidc-client-id=k",
                "-v1",
            ],
            &[
                "kubecred",
                "get-token",
                "--grant-type=device-code",
                "--cache-storage=keyring",
            ],
            &["kubecred", "get-token", "--username=u"],
            // Everything the full parser refuses, or answers with help, goes to it.
            &["kubecred", "get-token", "--help"],
            &["kubecred", "get-token", "-h"],
            &["kubecred", "get-token", "--version"],
            &["kubecred", "get-token", "--nope"],
            &["kubecred", "get-token", "--scope"],
            &["kubecred", "get-token", "--grant-type=magic"],
            &["kubecred", "get-token", "stray"],
            // pflag semantics: the later value of a single-valued flag wins, in both parsers;
            // repeatable flags still accumulate.
            &["kubecred", "get-token", "--issuer-url=a", "--issuer-url=b"],
            &[
                "kubecred",
                "get-token",
                "--client-id=a",
                "--grant-type=authcode",
                "--scope=x",
                "--client-id",
                "b",
                "--grant-type=device-code",
                "--scope=y",
                "--pkce=false",
                "--pkce",
                "--use-access-token",
                "--use-access-token",
            ],
            &[
                "kubecred",
                "get-token",
                "--account=a",
                "--account=b",
                "-v",
                "-v",
            ],
        ];
        for argv in cases {
            let argv = kubelogin::rewrite_argv(argv.iter().map(OsString::from).collect());
            let full = Cli::try_parse_from(argv.clone()).ok();
            let fast = parse_get_token_alone(&argv);
            assert_eq!(
                fast.as_ref().map(|cli| format!("{cli:?}")),
                full.as_ref().map(|cli| format!("{cli:?}")),
                "{argv:?}"
            );
        }
        // And the fast path is the one taken for what kubectl runs.
        let argv: Vec<OsString> = ["kubecred", "get-token", "--issuer-url=https://idp"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(parse_get_token_alone(&argv).is_some());
        assert!(fast_get_token::parse(&argv[2..], |_| None).is_some());
        assert!(parse_get_token_alone(&argv[..1]).is_none());
        let later = token_args(&[
            "kubecred",
            "get-token",
            "--client-id=a",
            "--scope=x",
            "--client-id=b",
            "--scope=y",
            "--pkce=false",
            "--pkce",
        ]);
        assert_eq!(later.client_id.as_deref(), Some("b"));
        assert_eq!(later.scopes, ["x", "y"]);
        assert_eq!(later.pkce, Some(true));
    }

    #[test]
    fn a_stanza_is_read_from_its_words_alone() {
        let get_token = stanza_command();
        let get_token = get_token.find_subcommand("get-token").unwrap();
        for arg in get_token.get_arguments() {
            assert_eq!(
                arg.get_env(),
                None,
                "--{:?} reads a variable",
                arg.get_long()
            );
        }
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let args = parse_stanza_get_token(argv(&[
            "kubecred",
            "oidc-login",
            "get-token",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=k8s",
            "-v1",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(args.issuer_url.as_deref(), Some("https://idp.example"));
        assert_eq!(args.verbose, 1);
        assert!(
            parse_stanza_get_token(argv(&["kubecred", "status"]))
                .unwrap()
                .is_none()
        );
        assert!(parse_stanza_get_token(argv(&["kubecred", "get-token", "--nope"])).is_err());
    }

    #[test]
    fn pkce_takes_an_optional_bool() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["kubecred", "get-token"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::GetToken(args) => args.pkce,
                _ => unreachable!(),
            }
        };
        assert_eq!(parse(&[]), None);
        assert_eq!(parse(&["--pkce"]), Some(true));
        assert_eq!(parse(&["--pkce=false"]), Some(false));
    }
}
