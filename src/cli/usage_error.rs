//! The one stderr line for a command line clap refused: what was wrong and what to type instead.
//! clap's own message spreads that over several lines (the possible values, a "tip", a usage
//! block), and its first line alone loses it: `the following required arguments were not
//! provided:` names no argument. So the line is worded here from clap's own error context (its
//! kind, the argument, the value, clap's suggestion), with what kubecred knows beside it: the
//! values an argument takes (clap lists them only for a bad value of a value enum), the commands
//! for people, the command run as typed (`kubectl kubecred get-token` as the kubectl plugin),
//! whose `--help` the line ends with, and the `KUBECRED_*` variable a bad value came from when the
//! command line did not give the flag (clap does not record where a value came from). The kinds
//! it has no words of its own for keep clap's first line, its reason included (`--lock-fd=x`:
//! "invalid digit found in string").

use super::PROGRAM_NAME;
use super::{Cli, as_kubectl_plugin};
use clap::error::{ContextKind, ContextValue, ErrorKind};
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
    let mut cli = Cli::command();
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
    let shown = strings(err, ContextKind::InvalidArg);
    // The one argument the error is about, a missing one included.
    let arg = match shown.as_slice() {
        [one] => sub
            .unwrap_or(&cli)
            .get_arguments()
            .find(|arg| arg.to_string() == *one),
        _ => None,
    };
    let what = match (err.kind(), shown.as_slice()) {
        // clap would print the whole help (whose first line is the description) as the "error".
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _) => {
            format!("a command is required: {}", either(&commands(&cli)))
        }
        (ErrorKind::MissingRequiredArgument, _) => {
            format!("{command} needs {}", needs(&shown, arg))
        }
        (ErrorKind::InvalidValue | ErrorKind::ValueValidation, _) => {
            bad_value(err, arg, argv, var).unwrap_or_else(|| clap_line(err))
        }
        // Only a switch given a value (`--print-token-info=yes`) has too many here: every flag
        // that takes a value takes one, or any number.
        (ErrorKind::TooManyValues, [shown]) => {
            match strings(err, ContextKind::InvalidValue).first() {
                Some(value) => format!(
                    "{flag} takes no value, but was given '{value}': write {flag} alone to turn it on",
                    flag = flag(shown)
                ),
                None => clap_line(err),
            }
        }
        _ => clap_line(err),
    };
    format!("{what} (see {command} --help)")
}

/// The subcommand the command line runs, if it names one (after kubelogin's `oidc-login`).
fn subcommand_run<'a>(argv: &[OsString], cli: &'a clap::Command) -> Option<&'a clap::Command> {
    let argv = crate::peers::kubelogin::rewrite_argv(argv.to_vec());
    let name = argv.get(1)?.to_str()?;
    cli.get_subcommands()
        .find(|sub| sub.get_name() == name || sub.get_all_aliases().any(|alias| alias == name))
}

/// The commands for people: clap's list has aliases, hidden ones and its own `help`.
fn commands(cli: &clap::Command) -> Vec<String> {
    cli.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_string())
        .collect()
}

/// What a missing argument is: `<SHELL>: bash, zsh, fish or powershell` when it is the only one
/// and takes values (a switch is written alone: its values are not for typing).
fn needs(shown: &[String], arg: Option<&Arg>) -> String {
    let values = arg
        .filter(|arg| arg.get_action().takes_values())
        .map(possible_values)
        .unwrap_or_default();
    match shown {
        [one] if !values.is_empty() => format!("{one}: {}", either(&values)),
        many => many.join("; and "),
    }
}

/// A value refused by an argument that lists the values it takes, with them, and where it came
/// from when that was a variable rather than the command line. `None` where clap's line says it
/// better: no value given (`-o`: "a value is required"), or values no list names.
fn bad_value(
    err: &clap::Error,
    arg: Option<&Arg>,
    argv: &[OsString],
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<String> {
    let (arg, value) = (arg?, strings(err, ContextKind::InvalidValue).pop()?);
    let values = possible_values(arg);
    if values.is_empty() || (value.is_empty() && err.kind() == ErrorKind::InvalidValue) {
        return None;
    }
    let flag = flag(&arg.to_string()).to_string();
    let given = match from_variable(arg, &value, argv, var) {
        Some(variable) => format!("invalid value '{value}' in {variable} (for {flag})"),
        None => format!("invalid value '{value}' for {flag}"),
    };
    let allowed = if is_on_off(arg) {
        "it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off".into()
    } else {
        format!("possible values: {}", either(&values))
    };
    Some(format!(
        "{given}; {allowed}{}",
        did_you_mean(err, ContextKind::SuggestedValue)
    ))
}

/// clap's own first line for `err` (its reason for a refused value included), without its
/// `error: ` prefix, with what clap puts on later lines: the values of a flag given none
/// (`-o`), its "tip: a similar argument exists".
fn clap_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let mut line = rendered
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string();
    let values = strings(err, ContextKind::ValidValue);
    if !values.is_empty() {
        line = format!("{line}; possible values: {}", either(&values));
    }
    line + &did_you_mean(err, ContextKind::SuggestedSubcommand)
        + &did_you_mean(err, ContextKind::SuggestedArg)
}

/// `; did you mean 'get-token'?` when clap found a `kind` close to what was typed.
fn did_you_mean(err: &clap::Error, kind: ContextKind) -> String {
    match strings(err, kind).first() {
        Some(similar) => format!("; did you mean '{similar}'?"),
        None => String::new(),
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
    let variable = arg.get_env()?.to_str()?;
    let set = var(variable)?.into_string().ok()?;
    let delimiter = arg.get_value_delimiter();
    let holds = set == value || delimiter.is_some_and(|d| set.split(d).any(|one| one == value));
    let names: Vec<&str> = arg
        .get_long()
        .into_iter()
        .chain(arg.get_all_aliases().unwrap_or_default())
        .collect();
    let gives_flag = |word: &str| {
        let rest = word.strip_prefix("--").unwrap_or_default();
        names
            .iter()
            .filter_map(|name| rest.strip_prefix(name))
            .any(|after| after.is_empty() || after.starts_with('='))
    };
    let on_command_line = argv
        .iter()
        .skip(1)
        .filter_map(|word| word.to_str())
        .any(gives_flag);
    (holds && !on_command_line).then(|| variable.to_string())
}

/// Every value the argument takes, hidden ones included (the on/off flags hide `yes`, `1`, …).
fn possible_values(arg: &Arg) -> Vec<String> {
    arg.get_value_parser()
        .possible_values()
        .map(|values| values.map(|value| value.get_name().to_string()).collect())
        .unwrap_or_default()
}

/// Whether the argument is an on/off flag (`BoolishValueParser`'s, whose many words are hidden).
fn is_on_off(arg: &Arg) -> bool {
    arg.get_value_parser().type_id() == std::any::TypeId::of::<bool>()
}

/// `--grant-type` for a flag shown as `--grant-type <GRANT>` (`--verbose` for `--verbose...`),
/// `<SHELL>` for a positional one.
fn flag(shown: &str) -> &str {
    match shown.split_once(' ') {
        Some((flag, _)) if flag.starts_with('-') => flag,
        _ => shown.trim_end_matches("..."),
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

/// What clap's error holds under `kind`: its one string, or its list.
fn strings(err: &clap::Error, kind: ContextKind) -> Vec<String> {
    match err.get(kind) {
        Some(ContextValue::Strings(many)) => many.clone(),
        Some(ContextValue::String(one)) => vec![one.clone()],
        _ => Vec::new(),
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
            "invalid value 'foo' for --grant-type; possible values: auto, authcode, authcode-keyboard, device-code, client-credentials, token-exchange, federated-token, password or google (see kubecred get-token --help)"
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
        // The environment is handed over, as for a kubeconfig stanza's `env`: nothing is set in
        // this process.
        let variable = "KUBECRED_FORCE_REFRESH";
        let env = |name: &str| (name == variable).then(|| OsString::from("maybe"));
        let words = argv(&["kubecred", "get-token"]);
        let err = crate::cli::parse_stanza_get_token_in(words.clone(), &env).unwrap_err();
        assert_eq!(
            usage_error_line_in(&err, &words, &env),
            format!(
                "invalid value 'maybe' in {variable} (for --force-refresh); it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)"
            )
        );
        let command = Cli::command();
        let arg = command
            .find_subcommand("get-token")
            .unwrap()
            .get_arguments()
            .find(|arg| arg.get_id() == "force_refresh")
            .unwrap();
        // The same word on the command line is the command line's.
        assert_eq!(
            from_variable(
                arg,
                "maybe",
                &argv(&["kubecred", "get-token", "--force-refresh=maybe"]),
                &env
            ),
            None
        );
        assert_eq!(from_variable(arg, "other", &words, &env), None);
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
    fn a_value_refused_for_a_reason_no_list_names_keeps_clap_s_reason() {
        for (words, expected) in [
            (
                &["kubecred", "renew-ahead", "--lock-fd=x"],
                "invalid value 'x' for '--lock-fd <FD>': invalid digit found in string (see kubecred renew-ahead --help)",
            ),
            (
                &["kubecred", "renew-ahead", "--lock-fd="],
                "invalid value '' for '--lock-fd <FD>': cannot parse integer from empty string (see kubecred renew-ahead --help)",
            ),
            // An on/off flag given an empty word is told the words it takes, as for any other.
            (
                &["kubecred", "get-token", "--pkce="],
                "invalid value '' for --pkce; it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)",
            ),
            // A counted flag is named as it is typed.
            (
                &["kubecred", "login", "--verbose=2"],
                "--verbose takes no value, but was given '2': write --verbose alone to turn it on (see kubecred login --help)",
            ),
        ] {
            assert_eq!(line(words), expected, "{words:?}");
        }
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
