//! The one stderr line for a command line clap refused: what was wrong and what to type instead.
//! clap's own message spreads that over several lines (the possible values, a "tip", a usage
//! block), and its first line alone loses it: `the following required arguments were not
//! provided:` names no argument. [`OneLine`] is clap's hook for the wording of an error (its
//! `ErrorFormatter`): it words the error's context in one line. What the line says that clap's
//! error does not hold, [`usage_error_line`] first adds to that context, from the command line
//! and its definition:
//!
//! - `SuggestedCommand`: the command run, as typed (`kubectl kubecred get-token` when run as the
//!   kubectl plugin), whose `--help` the line ends with;
//! - `ValidValue`: the values a missing argument or an on/off flag takes (clap lists them only
//!   for a bad value of a value enum);
//! - `ValidSubcommand`: the commands for people (clap's list has aliases, hidden ones and `help`);
//! - `Custom`: the `KUBECRED_*` variable a bad value came from, when the command line did not
//!   give the flag (clap does not record where a value came from).

use super::{Cli, as_kubectl_plugin};
use crate::command_on_path::PROGRAM_NAME;
use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, Error, ErrorFormatter, ErrorKind, RichFormatter};
use clap::{Arg, CommandFactory};
use std::ffi::OsString;

/// The line (without the `kubecred: error: ` prefix) for `err`, which parsing `argv` (the
/// process's arguments, program name first) produced.
pub fn usage_error_line(err: &clap::Error, argv: &[OsString]) -> String {
    usage_error_line_in(err, argv, &|name| std::env::var_os(name))
}

/// [`usage_error_line`] for a command line parsed in an explicit environment (a kubeconfig
/// stanza's `env` over this process's, `parse_stanza_get_token_in`): a bad value that came from
/// a `KUBECRED_*` variable is named by the variable, as `var` answers it.
pub fn usage_error_line_in(
    err: &clap::Error,
    argv: &[OsString],
    var: &dyn Fn(&str) -> Option<OsString>,
) -> String {
    with_context(err, argv, Cli::command(), var)
        .render()
        .to_string()
}

/// clap's hook for the wording of an error: one line, from the error's context.
pub struct OneLine;

impl ErrorFormatter for OneLine {
    fn format_error(err: &Error<Self>) -> StyledStr {
        let values = strings(err, ContextKind::ValidValue);
        let command = text(err, ContextKind::SuggestedCommand).unwrap_or(PROGRAM_NAME);
        let (shown, value) = (
            text(err, ContextKind::InvalidArg),
            text(err, ContextKind::InvalidValue),
        );
        let what = match (err.kind(), shown, value) {
            // clap would print the whole help (whose first line is the description) as the "error".
            (
                ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
                ..,
            ) => {
                let commands = strings(err, ContextKind::ValidSubcommand);
                format!("a command is required: {}", either(&commands))
            }
            // `kubecred completion needs <SHELL>: bash, zsh, fish or powershell`.
            (ErrorKind::MissingRequiredArgument, ..) => {
                let needs = match strings(err, ContextKind::InvalidArg).as_slice() {
                    [one] if !values.is_empty() => format!("{one}: {}", either(&values)),
                    many => many.join("; and "),
                };
                format!("{command} needs {needs}")
            }
            (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(shown), Some(value))
                if !value.is_empty() && !values.is_empty() =>
            {
                invalid_value(err, flag(shown), value, &values)
            }
            // Only a switch given a value (`--force-refresh=yes`) has too many here: every flag
            // that takes a value takes one, or any number.
            (ErrorKind::TooManyValues, Some(shown), Some(value)) => {
                let flag = flag(shown);
                format!(
                    "{flag} takes no value, but was given '{value}': write {flag} alone to turn it on"
                )
            }
            // clap's own line, with what it puts on later lines: the values of a flag given
            // none (`-o`), its "tip: a similar argument exists".
            _ => {
                let mut line = clap_first_line(err);
                if !values.is_empty() {
                    line = format!("{line}; possible values: {}", either(&values));
                }
                match suggestion(err) {
                    Some(similar) => format!("{line}; did you mean '{similar}'?"),
                    None => line,
                }
            }
        };
        format!("{what} (see {command} --help)").into()
    }
}

/// `err` for [`OneLine`], with what the line says and clap's error does not hold, found in
/// `cli` (the definition `argv` was parsed with) and `argv`.
fn with_context(
    err: &clap::Error,
    argv: &[OsString],
    mut cli: clap::Command,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Error<OneLine> {
    let mut line = copied(err);
    // Built, as the parse built it: an argument's display (`--grant-type <GRANT>`, what the
    // error names) needs its value count, which building sets.
    cli.build();
    let sub = subcommand_run(argv, &cli);
    let program = if as_kubectl_plugin(argv) {
        "kubectl kubecred"
    } else {
        PROGRAM_NAME
    };
    let command = sub.map_or(program.into(), |sub| {
        format!("{program} {}", sub.get_name())
    });
    line.insert(ContextKind::SuggestedCommand, ContextValue::String(command));
    let commands = cli
        .get_subcommands()
        // `help` is clap's, added by the build; hidden commands are not for people.
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_string())
        .collect();
    line.insert(
        ContextKind::ValidSubcommand,
        ContextValue::Strings(commands),
    );
    // The one argument the error is about, a missing one included.
    let shown = match strings(err, ContextKind::InvalidArg).as_slice() {
        [one] => one.clone(),
        _ => return line,
    };
    let Some(arg) = sub
        .unwrap_or(&cli)
        .get_arguments()
        .find(|arg| arg.to_string() == shown)
    else {
        return line;
    };
    // The values it takes, where clap lists none: a missing argument's (a switch is written
    // alone: its values are not for typing), an on/off flag's.
    let lists_values = match err.kind() {
        ErrorKind::MissingRequiredArgument => arg.get_action().takes_values(),
        kind => kind == ErrorKind::ValueValidation,
    };
    let values = possible_values(arg);
    if lists_values && !values.is_empty() {
        line.insert(ContextKind::ValidValue, ContextValue::Strings(values));
    }
    if let Some(value) = text(err, ContextKind::InvalidValue)
        && let Some(variable) = from_variable(arg, value, argv, var)
    {
        line.insert(ContextKind::Custom, ContextValue::String(variable));
    }
    line
}

/// The subcommand the command line runs, if it names one (after kubelogin's `oidc-login`).
fn subcommand_run<'a>(argv: &[OsString], cli: &'a clap::Command) -> Option<&'a clap::Command> {
    let argv = crate::kubelogin::rewrite_argv(argv.to_vec());
    let name = argv.get(1)?.to_str()?;
    cli.get_subcommands()
        .find(|sub| sub.get_name() == name || sub.get_all_aliases().any(|alias| alias == name))
}

/// A value clap refused, with the values it takes, and where it came from when that was a
/// variable rather than the command line.
fn invalid_value(err: &Error<OneLine>, flag: &str, value: &str, values: &[String]) -> String {
    let given = match text(err, ContextKind::Custom) {
        Some(variable) => format!("invalid value '{value}' in {variable} (for {flag})"),
        None => format!("invalid value '{value}' for {flag}"),
    };
    let allowed = if is_on_off(values) {
        "it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off".into()
    } else {
        format!("possible values: {}", either(values))
    };
    match text(err, ContextKind::SuggestedValue) {
        Some(similar) => format!("{given}; {allowed}; did you mean '{similar}'?"),
        None => format!("{given}; {allowed}"),
    }
}

/// The `KUBECRED_*` variable `value` came from, when `var` has it set to it and the command
/// line does not give the flag (clap prefers the command line).
fn from_variable(
    arg: &Arg,
    value: &str,
    argv: &[OsString],
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<String> {
    let variable = arg.get_env()?;
    let set = var(variable.to_str()?)?;
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

/// `--grant-type` for a flag shown as `--grant-type <GRANT>`, `<SHELL>` for a positional one.
fn flag(shown: &str) -> &str {
    match shown.split_once(' ') {
        Some((flag, _)) if flag.starts_with('-') => flag,
        _ => shown,
    }
}

/// `a, b or c`.
fn either(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn text<F: ErrorFormatter>(err: &Error<F>, kind: ContextKind) -> Option<&str> {
    match err.get(kind)? {
        ContextValue::String(one) => Some(one),
        _ => None,
    }
}

fn strings<F: ErrorFormatter>(err: &Error<F>, kind: ContextKind) -> Vec<String> {
    match err.get(kind) {
        Some(ContextValue::Strings(many)) => many.clone(),
        Some(ContextValue::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// The command or flag clap found close to a misspelt one (`get-tokn` → `get-token`).
fn suggestion(err: &Error<OneLine>) -> Option<String> {
    [ContextKind::SuggestedSubcommand, ContextKind::SuggestedArg]
        .into_iter()
        .find_map(|kind| strings(err, kind).into_iter().next())
}

/// clap's own first line for `err`, without its `error: ` prefix: the wording of the kinds
/// this line words as clap does (an unknown flag, a conflict, …).
fn clap_first_line(err: &Error<OneLine>) -> String {
    let rendered = copied::<RichFormatter, _>(err).render().to_string();
    rendered
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string()
}

/// `err`'s kind and context for another formatter (clap's `Error` is not `Clone`). A value
/// parser's reason for refusing a value (the error's source, "value was not a boolean") is not
/// copied: the line lists the values the flag takes instead, and only the hidden `renew-ahead
/// --lock-fd`, which kubecred writes itself, takes values no list names.
fn copied<F: ErrorFormatter, G: ErrorFormatter>(err: &Error<G>) -> Error<F> {
    let mut copy = Error::new(err.kind());
    for (kind, value) in err.context() {
        copy.insert(kind, value.clone());
    }
    copy
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
        // A switch is written alone: its values are not for typing.
        assert_eq!(
            line(&["kubecred", "setup", "--kubeconfig=k.yaml"]),
            "kubecred setup needs --write-kubeconfig (see kubecred setup --help)"
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
            "a command is required: get-token, login, logout, status, setup, whoami, convert-kubeconfig, completion, man or version (see kubectl kubecred --help)"
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
            with_context(&err, &words, command.clone(), &|name| std::env::var_os(
                name
            ))
            .render()
            .to_string(),
            format!(
                "invalid value 'maybe' in {variable} (for --force-refresh); it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)"
            )
        );
        // The same word on the command line is the command line's.
        assert_eq!(
            from_variable(
                arg,
                "maybe",
                &argv(&["kubecred", "get-token", "--force-refresh=maybe"]),
                &|name| std::env::var_os(name)
            ),
            None
        );
        assert_eq!(
            from_variable(arg, "other", &words, &|name| std::env::var_os(name)),
            None
        );
    }

    #[test]
    fn an_on_off_flag_given_another_word_lists_the_words_it_takes() {
        assert_eq!(
            line(&["kubecred", "get-token", "--force-refresh=maybe"]),
            "invalid value 'maybe' for --force-refresh; it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)"
        );
        // A switch that takes no value says so.
        assert_eq!(
            line(&["kubecred", "login", "--print-token-info=maybe"]),
            "--print-token-info takes no value, but was given 'maybe': write --print-token-info alone to turn it on (see kubecred login --help)"
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
                "a command is required: get-token, login, logout, status, setup, whoami, convert-kubeconfig, completion, man or version (see kubecred --help)",
                "{words:?}"
            );
        }
        let unknown = line(&["kubecred", "get-token", "--nope"]);
        assert!(unknown.contains("--nope"), "{unknown}");
        assert!(!unknown.contains('\n'), "{unknown}");
    }
}
