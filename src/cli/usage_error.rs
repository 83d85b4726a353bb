//! The one stderr line for a command line clap refused: what was wrong and what to type instead.
//! clap's own message spreads that over several lines (the possible values, a "tip", a usage
//! block), and its first line alone loses it: `the following required arguments were not
//! provided:` names no argument. So the line is built here from the error's context: a missing
//! argument with its possible values, a bad value with the allowed ones (and the variable it
//! came from when it came from a `KUBECRED_*` variable, not the command line), and the help of
//! the command actually run (`kubectl kubecred get-token --help` when run as the kubectl plugin).

use super::{Cli, KUBECTL_PLUGIN_NAME};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, CommandFactory};
use std::ffi::OsString;

/// The line (without the `kubecred: error: ` prefix) for `err`, which parsing `argv` (the
/// process's arguments, program name first) produced.
pub fn usage_error_line(err: &clap::Error, argv: &[OsString]) -> String {
    let mut cli = Cli::command();
    // Built, as the parse built it: an argument's display (`--grant-type <GRANT>`, what the
    // error names) needs its value count, which building sets.
    cli.build();
    let program = program_name(argv);
    let sub = subcommand_run(argv, &cli);
    let help = match sub {
        Some(sub) => format!("(see {program} {} --help)", sub.get_name()),
        None => format!("(see {program} --help)"),
    };
    let arg = || {
        let shown = string(err, ContextKind::InvalidArg)?;
        sub.unwrap_or(&cli)
            .get_arguments()
            .find(|arg| arg.to_string() == shown)
    };
    let what = match err.kind() {
        // clap would print the whole help (whose first line is the description) as the "error".
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let names: Vec<&str> = cli
                .get_subcommands()
                .filter(|sub| !sub.is_hide_set())
                .map(|sub| sub.get_name())
                // `help` is clap's, added by the build; hidden commands are not for people.
                .filter(|name| *name != "help")
                .collect();
            format!("a command is required: {}", either(&names))
        }
        ErrorKind::MissingRequiredArgument => missing(err, sub, &cli, &program),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => match arg() {
            Some(arg) => invalid_value(err, arg, argv),
            None => first_line(err),
        },
        ErrorKind::TooManyValues => match (arg(), string(err, ContextKind::InvalidValue)) {
            (Some(arg), Some(value)) if !arg.get_action().takes_values() => format!(
                "{} takes no value, but was given '{value}': write {} alone to turn it on",
                flag(arg),
                flag(arg)
            ),
            _ => first_line(err),
        },
        _ => match suggestion(err) {
            // clap's "tip: a similar argument exists" is on a later line: keep it in this one.
            Some(similar) => format!("{}; did you mean '{similar}'?", first_line(err)),
            None => first_line(err),
        },
    };
    format!("{what} {help}")
}

/// `kubectl kubecred` when run as the kubectl plugin (kubectl runs `kubectl-kubecred` from
/// PATH), else `kubecred`: what the user typed, so that the help command works as written.
fn program_name(argv: &[OsString]) -> String {
    let as_plugin = argv
        .first()
        .and_then(|path| std::path::Path::new(path).file_stem())
        .is_some_and(|name| name == KUBECTL_PLUGIN_NAME);
    if as_plugin {
        "kubectl kubecred".into()
    } else {
        crate::command_on_path::PROGRAM_NAME.into()
    }
}

/// The subcommand the command line runs, if it names one (after kubelogin's `oidc-login`).
fn subcommand_run<'a>(argv: &[OsString], cli: &'a clap::Command) -> Option<&'a clap::Command> {
    let argv = crate::kubelogin::rewrite_argv(argv.to_vec());
    let name = argv.get(1)?.to_str()?;
    cli.get_subcommands()
        .find(|sub| sub.get_name() == name || sub.get_all_aliases().any(|alias| alias == name))
}

/// `kubecred completion needs <SHELL>: bash, zsh, fish or powershell`.
fn missing(
    err: &clap::Error,
    sub: Option<&clap::Command>,
    cli: &clap::Command,
    program: &str,
) -> String {
    let shown: Vec<String> = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::Strings(many)) => many.clone(),
        Some(ContextValue::String(one)) => vec![one.clone()],
        _ => return first_line(err),
    };
    let each: Vec<String> = shown
        .iter()
        .map(|shown| {
            let values = sub
                .unwrap_or(cli)
                .get_arguments()
                .find(|arg| arg.to_string() == *shown)
                .map(possible_values)
                .unwrap_or_default();
            if values.is_empty() {
                shown.clone()
            } else {
                format!("{shown}: {}", either(&values))
            }
        })
        .collect();
    let command = match sub {
        Some(sub) => format!("{program} {}", sub.get_name()),
        None => program.to_string(),
    };
    format!("{command} needs {}", each.join("; and "))
}

/// A value clap refused, with the values it takes, and where it came from when that was a
/// variable rather than the command line.
fn invalid_value(err: &clap::Error, arg: &Arg, argv: &[OsString]) -> String {
    let values = possible_values(arg);
    let Some(value) = string(err, ContextKind::InvalidValue) else {
        return first_line(err);
    };
    // `-o` with nothing after it: clap's line says a value is required; or a value whose
    // parser lists none: clap's line says why it is refused.
    if value.is_empty() || values.is_empty() {
        return if values.is_empty() {
            first_line(err)
        } else {
            format!("{}; possible values: {}", first_line(err), either(&values))
        };
    }
    let given = match from_variable(arg, &value, argv) {
        Some(variable) => format!("invalid value '{value}' in {variable} (for {})", flag(arg)),
        None => format!("invalid value '{value}' for {}", flag(arg)),
    };
    let allowed = if is_on_off(&values) {
        "it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off".into()
    } else {
        format!("possible values: {}", either(&values))
    };
    match string(err, ContextKind::SuggestedValue) {
        Some(similar) => format!("{given}; {allowed}; did you mean '{similar}'?"),
        None => format!("{given}; {allowed}"),
    }
}

/// The `KUBECRED_*` variable `value` came from, when it is set to it and the command line does
/// not give the flag (clap prefers the command line).
fn from_variable(arg: &Arg, value: &str, argv: &[OsString]) -> Option<String> {
    let variable = arg.get_env()?;
    let set = std::env::var_os(variable)?;
    let set = set.to_str()?;
    let holds = set == value
        || arg
            .get_value_delimiter()
            .is_some_and(|delimiter| set.split(delimiter).any(|one| one == value));
    let mut names = arg.get_long_and_visible_aliases().unwrap_or_default();
    names.extend(arg.get_all_aliases().unwrap_or_default());
    let on_command_line = argv
        .iter()
        .skip(1)
        .filter_map(|word| word.to_str())
        .any(|word| {
            names.iter().any(|name| {
                word.strip_prefix("--")
                    .and_then(|rest| rest.strip_prefix(name))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
            })
        });
    (holds && !on_command_line).then(|| variable.to_string_lossy().into_owned())
}

/// Every value the argument takes, hidden ones included (the on/off flags hide `yes`, `1`, …).
fn possible_values(arg: &Arg) -> Vec<String> {
    arg.get_value_parser()
        .possible_values()
        .map(|values| values.map(|value| value.get_name().to_string()).collect())
        .unwrap_or_default()
}

/// Whether these are the values of clap's on/off parser (`BoolishValueParser`).
fn is_on_off(values: &[String]) -> bool {
    ["true", "false", "1", "0", "yes", "no", "on", "off"]
        .iter()
        .all(|word| values.iter().any(|value| value == word))
}

/// `--grant-type` for a flag, `<SHELL>` for a positional argument.
fn flag(arg: &Arg) -> String {
    match arg.get_long() {
        Some(long) => format!("--{long}"),
        None => arg.to_string(),
    }
}

/// `a, b or c`.
fn either<S: AsRef<str>>(words: &[S]) -> String {
    match words {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} or {}", init.join(", "), last.as_ref())
        }
    }
}

fn string(err: &clap::Error, kind: ContextKind) -> Option<String> {
    match err.get(kind)? {
        ContextValue::String(one) => Some(one.clone()),
        _ => None,
    }
}

/// clap's own first line, without its `error: ` prefix.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    rendered
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string()
}

/// The command or flag clap found close to a misspelt one (`get-tokn` → `get-token`).
fn suggestion(err: &clap::Error) -> Option<String> {
    let value = err
        .get(ContextKind::SuggestedSubcommand)
        .or_else(|| err.get(ContextKind::SuggestedArg))?;
    match value {
        ContextValue::String(one) => Some(one.clone()),
        ContextValue::Strings(many) => many.first().cloned(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    /// The line the binary prints for `words`.
    fn line(words: &[&str]) -> String {
        let argv = argv(words);
        let err = Cli::try_parse_command_line(argv.clone()).unwrap_err();
        usage_error_line(&err, &argv)
    }

    #[test]
    fn a_missing_argument_is_named_with_its_values() {
        assert_eq!(
            line(&["kubecred", "completion"]),
            "kubecred completion needs <SHELL>: bash, zsh, fish or powershell (see kubecred completion --help)"
        );
    }

    #[test]
    fn a_bad_value_comes_with_the_allowed_ones_and_the_commands_own_help() {
        assert_eq!(
            line(&["kubecred", "get-token", "--grant-type=foo"]),
            "invalid value 'foo' for --grant-type; possible values: auto, authcode, authcode-keyboard, device-code, client-credentials, token-exchange, federated-token or password (see kubecred get-token --help)"
        );
        assert_eq!(
            line(&["kubecred", "status", "-o", "yaml"]),
            "invalid value 'yaml' for --output; possible values: table or json (see kubecred status --help)"
        );
        assert_eq!(
            line(&["kubecred", "status", "-o"]),
            "a value is required for '--output <OUTPUT>' but none was supplied; possible values: table or json (see kubecred status --help)"
        );
        assert_eq!(
            line(&["kubecred", "get-token", "--scope"]),
            "a value is required for '--scope <SCOPE>' but none was supplied (see kubecred get-token --help)"
        );
        assert_eq!(
            line(&["kubecred", "completion", "tcsh"]),
            "invalid value 'tcsh' for <SHELL>; possible values: bash, zsh, fish or powershell; did you mean 'zsh'? (see kubecred completion --help)"
        );
        assert!(
            line(&[
                "kubecred",
                "oidc-login",
                "get-token",
                "--grant-type=devicecode"
            ])
            .ends_with("; did you mean 'device-code'? (see kubecred get-token --help)")
        );
    }

    #[test]
    fn run_as_the_kubectl_plugin_the_help_is_kubectls() {
        assert_eq!(
            line(&[
                "/home/u/.krew/bin/kubectl-kubecred",
                "get-token",
                "--grant-type=x"
            ])
            .rsplit_once(" (see ")
            .unwrap()
            .1,
            "kubectl kubecred get-token --help)"
        );
        assert_eq!(
            line(&["kubectl-kubecred"]),
            "a command is required: get-token, login, logout, status, setup, whoami, convert-kubeconfig, completion or man (see kubectl kubecred --help)"
        );
    }

    #[test]
    fn a_value_from_a_variable_names_the_variable_and_the_on_off_words() {
        // A variable no other test reads: the flag is pointed at it.
        let variable = "KUBECRED_TEST_USAGE_FORCE_REFRESH";
        // SAFETY: a variable of this test alone; no other thread reads or writes it.
        unsafe { std::env::set_var(variable, "maybe") };
        let command = Cli::command().mut_subcommand("get-token", |sub| {
            sub.mut_arg("force_refresh", |arg| arg.env(variable))
        });
        let words = argv(&["kubecred", "get-token"]);
        let err = command.clone().try_get_matches_from(&words).unwrap_err();
        let arg = command
            .find_subcommand("get-token")
            .unwrap()
            .get_arguments()
            .find(|arg| arg.get_id() == "force_refresh")
            .unwrap();
        assert_eq!(
            invalid_value(&err, arg, &words),
            format!(
                "invalid value 'maybe' in {variable} (for --force-refresh); it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off"
            )
        );
        // The same word on the command line is the command line's.
        assert_eq!(
            from_variable(
                arg,
                "maybe",
                &argv(&["kubecred", "get-token", "--force-refresh=maybe"])
            ),
            None
        );
        assert_eq!(from_variable(arg, "other", &words), None);
    }

    #[test]
    fn a_switch_given_a_value_says_to_write_it_alone() {
        assert_eq!(
            line(&["kubecred", "get-token", "--force-refresh=maybe"]),
            "--force-refresh takes no value, but was given 'maybe': write --force-refresh alone to turn it on (see kubecred get-token --help)"
        );
    }

    #[test]
    fn a_misspelt_command_or_flag_keeps_clap_s_suggestion_in_the_one_line() {
        assert_eq!(
            line(&["kubecred", "get-tokn"]),
            "unrecognized subcommand 'get-tokn'; did you mean 'get-token'? (see kubecred --help)"
        );
        let flag = line(&["kubecred", "get-token", "--isuer-url=x"]);
        assert!(
            flag.ends_with("; did you mean '--issuer-url'? (see kubecred get-token --help)"),
            "{flag}"
        );
        assert_eq!(
            line(&["kubecred", "get-token", "--bogus"]),
            "unexpected argument '--bogus' found (see kubecred get-token --help)"
        );
    }

    #[test]
    fn a_missing_command_says_which_commands_there_are() {
        for words in [&["kubecred"][..], &["kubecred", "oidc-login"]] {
            assert_eq!(
                line(words),
                "a command is required: get-token, login, logout, status, setup, whoami, convert-kubeconfig, completion or man (see kubecred --help)",
                "{words:?}"
            );
        }
        let unknown = line(&["kubecred", "get-token", "--nope"]);
        assert!(unknown.contains("--nope"), "{unknown}");
        assert!(!unknown.contains('\n'), "{unknown}");
    }
}
