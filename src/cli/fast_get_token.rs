//! get-token's command line read without clap, for the cache hit.
//!
//! kubectl runs `kubecred get-token` before its requests, and a hit costs little more than
//! starting a process, so the parse is a large share of it: building clap's command for
//! get-token's flags (each with its help text and environment variable) and matching against it
//! added about a third to a hit's instructions when this parser came in (DECISIONS.md, "What
//! keeps the cache hit fast"). This parser reads the plain command lines a kubeconfig holds
//! (`--flag=value`, `--flag value`, `--switch`, `--switch=false`, `-v`) and the flags' `KUBECRED_*` variables, and
//! returns `None` for anything else: help, an unknown flag, a value clap would refuse, an empty
//! value, conflicting flags. The caller then runs clap, so every message and every unusual case
//! is clap's own.
//!
//! clap's definition (`token_args.rs`) stays the one source of truth: the table of flags this parser
//! reads (`fast_get_token/flags.rs`) is generated from it by the test
//! `the_flag_table_is_generated_from_clap`, which rewrites the file and fails when it was out of
//! date, so nobody keeps rows in step by hand. The other tests compare both parsers on every flag,
//! alias and variable and on thousands of generated command lines.

mod flags;

use super::TokenArgs;
use clap::ValueEnum;
use clap::builder::{BoolishValueParser, TypedValueParser};
use flags::{CONFLICTS, FLAGS, VERBOSE};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Parses get-token's arguments (those after `get-token`), reading each flag's variable through
/// `env` ([`KubecredVariables`] in the binary); `None` leaves the command line to clap.
pub(super) fn parse(
    args: &[OsString],
    env: impl Fn(&str) -> Option<OsString>,
) -> Option<TokenArgs> {
    let mut parsed = TokenArgs::default();
    // Which rows the command line gave: their variables are then not read, as in clap.
    let mut given = [false; FLAGS.len()];
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.starts_with('-')) {
            // -v, -vv: verbose is the only flag with a short name (checked in the tests).
            if shorts.is_empty() || shorts.bytes().any(|b| b != b'v') {
                return None;
            }
            given[VERBOSE] = true;
            for _ in shorts.bytes() {
                store(&FLAGS[VERBOSE], &mut parsed, "true")?;
            }
            continue;
        }
        // Neither a positional argument nor `--` belongs to get-token: clap refuses them.
        let body = arg.strip_prefix("--")?;
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let row = FLAGS
            .iter()
            .position(|flag| flag.long == name || flag.aliases.contains(&name))?;
        given[row] = true;
        let flag = &FLAGS[row];
        let value = match (flag.takes, inline) {
            (Takes::Count, None) => "true",
            // clap would say -v takes no value.
            (Takes::Count, Some(_)) => return None,
            (Takes::OptionalBool, Some(value)) => value,
            // clap would take the next word as the value unless it is a flag: only a next long
            // flag (or none) keeps this plain.
            (Takes::OptionalBool, None) => match rest.as_slice().first() {
                None => "true",
                Some(next) if next.to_str()?.starts_with("--") => "true",
                Some(_) => return None,
            },
            (Takes::Value | Takes::Values { .. }, Some(value)) => value,
            (Takes::Value | Takes::Values { .. }, None) => {
                let next = rest.next()?.to_str()?;
                // clap reads a word starting with `-` as the next flag (or `-` as a value).
                if next.starts_with('-') {
                    return None;
                }
                next
            }
        };
        store(flag, &mut parsed, value)?;
    }
    let mut name = EnvVarName::new();
    let mut present = given;
    for (row, flag) in FLAGS.iter().enumerate() {
        if given[row] || !flag.env {
            continue;
        }
        let Some(value) = env(name.of(flag.long)?) else {
            continue;
        };
        store(flag, &mut parsed, value.to_str()?)?;
        present[row] = true;
    }
    let both_present = |(one, other): &(&str, &str)| {
        let present_row = |long: &str| FLAGS.iter().zip(present).any(|(f, p)| p && f.long == long);
        present_row(one) && present_row(other)
    };
    if CONFLICTS.iter().any(both_present) {
        return None;
    }
    Some(parsed)
}

/// Stores one occurrence's value; an empty value is left to clap, whose rules for it differ
/// from one value type to another.
fn store(flag: &Flag, parsed: &mut TokenArgs, value: &str) -> Option<()> {
    if value.is_empty() {
        return None;
    }
    match flag.takes {
        Takes::Values { split: true } => value
            .split(',')
            .try_for_each(|part| (flag.store)(parsed, part)),
        _ => (flag.store)(parsed, value),
    }
}

/// What a flag takes on the command line, as its clap action and value count say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// One value, `--flag=v` or `--flag v`; given again, the later value wins.
    Value,
    /// One value per occurrence, accumulated; `split` also splits each value at commas.
    Values { split: bool },
    /// `--flag` alone means true; `--flag=BOOL` says which (clap's boolish words: 1, no, on, …,
    /// which take in Go's `t`, `F`, `TRUE`, … too); so does its variable.
    OptionalBool,
    /// `--flag` or `-v`, `-vv`: counted. No variable.
    Count,
}

/// Stores one value in its field (a switch alone or a count is given "true"); `None` where clap would
/// refuse the value.
type Store = fn(&mut TokenArgs, &str) -> Option<()>;

/// One of get-token's flags: its names, what it takes, and where its value goes.
struct Flag {
    long: &'static str,
    aliases: &'static [&'static str],
    /// Whether it reads `KUBECRED_<LONG>` (kubelogin's hidden flags and -v do not).
    env: bool,
    takes: Takes,
    store: Store,
}

fn text(slot: &mut Option<String>, value: &str) -> Option<()> {
    *slot = Some(value.to_owned());
    Some(())
}

fn path(slot: &mut Option<PathBuf>, value: &str) -> Option<()> {
    *slot = Some(PathBuf::from(value));
    Some(())
}

fn add_text(list: &mut Vec<String>, value: &str) -> Option<()> {
    list.push(value.to_owned());
    Some(())
}

fn add_path(list: &mut Vec<PathBuf>, value: &str) -> Option<()> {
    list.push(PathBuf::from(value));
    Some(())
}

/// A `ValueEnum` value exactly as clap's own parser for it matches one (case-sensitive).
fn choice<E: ValueEnum>(slot: &mut Option<E>, value: &str) -> Option<()> {
    *slot = Some(E::from_str(value, false).ok()?);
    Some(())
}

/// `--pkce` alone (given "true") or `--pkce=BOOL`.
fn optional_bool(slot: &mut Option<bool>, value: &str) -> Option<()> {
    *slot = Some(boolish(value)?);
    Some(())
}

/// `-v`, `-vv`, `--verbose`: one more each time.
fn count(slot: &mut u8) -> Option<()> {
    *slot = slot.checked_add(1)?;
    Some(())
}

/// clap's own boolish parser, the one the switches and `--pkce` are defined with.
fn boolish(value: &str) -> Option<bool> {
    let command = clap::Command::new("get-token");
    BoolishValueParser::new()
        .parse_ref(&command, None, OsStr::new(value))
        .ok()
}

/// This process's `KUBECRED_*` variables, read in one pass over the environment, for the
/// lookups of [`parse`]: it asks for one variable per flag, about fifty, and each
/// `std::env::var_os` is a `getenv` that compares every entry of the environment again, so the
/// cost grew with the user's environment times the number of flags (bench/RESULTS.md).
pub(super) struct KubecredVariables(Vec<(OsString, OsString)>);

impl KubecredVariables {
    pub(super) fn of_process() -> KubecredVariables {
        let ours = |(name, _): &(OsString, OsString)| {
            let prefix = b"KUBECRED_".as_slice();
            name.as_encoded_bytes()
                .get(..prefix.len())
                .is_some_and(|start| same_name(start, prefix))
        };
        KubecredVariables(std::env::vars_os().filter(ours).collect())
    }

    /// What `std::env::var_os(name)` gives for a name that starts with `KUBECRED_` (the first
    /// of equal names).
    pub(super) fn get(&self, name: &str) -> Option<OsString> {
        let found = self
            .0
            .iter()
            .find(|(variable, _)| same_name(variable.as_encoded_bytes(), name.as_bytes()));
        found.map(|(_, value)| value.clone())
    }
}

/// Whether two variable names are the same name: Windows compares them regardless of case
/// (`var_os("KUBECRED_X")` finds `kubecred_x` there), unix byte for byte.
fn same_name(one: &[u8], other: &[u8]) -> bool {
    if cfg!(windows) {
        one.eq_ignore_ascii_case(other)
    } else {
        one == other
    }
}

/// `KUBECRED_<LONG>` built in place: the hit reads about fifty of them.
struct EnvVarName {
    buffer: [u8; 64],
}

impl EnvVarName {
    fn new() -> EnvVarName {
        EnvVarName { buffer: [0; 64] }
    }

    fn of(&mut self, long: &str) -> Option<&str> {
        const PREFIX: &[u8] = b"KUBECRED_";
        let name = self.buffer.get_mut(..PREFIX.len() + long.len())?;
        let (prefix, rest) = name.split_at_mut(PREFIX.len());
        prefix.copy_from_slice(PREFIX);
        for (to, from) in rest.iter_mut().zip(long.bytes()) {
            *to = if from == b'-' {
                b'_'
            } else {
                from.to_ascii_uppercase()
            };
        }
        std::str::from_utf8(name).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::Takes::{Count, OptionalBool, Value, Values};
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::builder::ValueRange;
    use clap::{ArgAction, CommandFactory, FromArgMatches};
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};

    /// The tests that set variables take turns (each case sets and removes its own).
    static VARIABLES: Mutex<()> = Mutex::new(());

    /// A flag's variable as the tests set it, so that the process's own `KUBECRED_*` play no part.
    fn test_variable(name: &OsStr) -> String {
        let name = name.to_str().unwrap();
        format!(
            "KUBECRED_FASTTEST_{}",
            name.strip_prefix("KUBECRED_").unwrap()
        )
    }

    /// clap's get-token (from the whole `Cli`, as the binary builds it), reading the test names.
    fn clap_get_token() -> clap::Command {
        // clap keeps only `'static` names: each test name is made (and leaked) once.
        static TEST_NAMES: LazyLock<HashMap<String, &'static str>> = LazyLock::new(|| {
            let variables = FLAGS.iter().filter(|flag| flag.env).map(variable_of);
            let renamed = |name: String| {
                let test_name = test_variable(OsStr::new(&name));
                (name, &*Box::leak(test_name.into_boxed_str()))
            };
            variables.map(renamed).collect()
        });
        let mut command = Cli::command().mut_subcommand("get-token", |sub| {
            sub.mut_args(|arg| {
                let name = arg.get_env().and_then(OsStr::to_str);
                match name.and_then(|name| TEST_NAMES.get(name)) {
                    Some(test_name) => arg.env(*test_name),
                    None => arg,
                }
            })
        });
        command.build();
        command
    }

    /// Both parsers on get-token's `args` with `vars` (`KUBECRED_*` name, value) set. The fast
    /// one may decline (false); whatever it answers must be clap's answer (true).
    fn compare(args: &[&str], vars: &[(&str, &str)]) -> bool {
        let full = {
            let _turn = VARIABLES
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            for (name, value) in vars {
                // SAFETY: a variable of this test alone; no other thread reads or writes it.
                unsafe { std::env::set_var(test_variable(OsStr::new(name)), value) };
            }
            let argv = ["kubecred", "get-token"].iter().chain(args);
            let matches = clap_get_token().try_get_matches_from(argv);
            for (name, _) in vars {
                // SAFETY: a variable of this test alone; no other thread reads or writes it.
                unsafe { std::env::remove_var(test_variable(OsStr::new(name))) };
            }
            matches.map(|matches| Cli::from_arg_matches(&matches).unwrap())
        };
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let lookup = |name: &str| {
            let found = vars.iter().rev().find(|(var, _)| *var == name);
            found.map(|(_, value)| OsString::from(value))
        };
        let Some(fast) = parse(&args, lookup) else {
            return false;
        };
        match full {
            Ok(Cli {
                command: Command::GetToken(full),
            }) => assert_eq!(
                format!("{fast:?}"),
                format!("{full:?}"),
                "{args:?} with {vars:?}"
            ),
            Ok(other) => panic!("{args:?}: clap parsed {other:?}"),
            Err(err) => panic!("{args:?} with {vars:?}: fast parse of what clap refuses: {err}"),
        }
        true
    }

    fn variable_of(flag: &Flag) -> String {
        EnvVarName::new().of(flag.long).unwrap().to_owned()
    }

    /// Values for a flag: its clap possible values (names and aliases) or a few plain words.
    fn samples(flag: &Flag) -> Vec<String> {
        let command = clap_get_token();
        let get_token = command.find_subcommand("get-token").unwrap();
        let arg = get_token
            .get_arguments()
            .find(|arg| arg.get_long() == Some(flag.long))
            .unwrap();
        let possible: Vec<String> = arg
            .get_possible_values()
            .iter()
            .flat_map(|value| value.get_name_and_aliases().map(str::to_owned))
            .collect();
        match flag.takes {
            OptionalBool => [
                "true", "false", "1", "no", "OFF", "Yes", "t", "F", "TRUE", "False",
            ]
            .map(String::from)
            .to_vec(),
            Count => Vec::new(),
            _ if !possible.is_empty() => possible,
            _ => ["x", "https://idp.example/a,b", "a b=c"]
                .map(String::from)
                .to_vec(),
        }
    }

    /// Where the generated table lives.
    fn flag_table_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/fast_get_token/flags.rs")
    }

    /// The table `flags.rs` holds, rendered from clap's definition of get-token: one row per
    /// flag, in `TokenArgs` order. Panics on a flag whose shape the parse cannot read, naming it:
    /// teach `parse` that shape (and this generator) first.
    fn render_flag_table() -> String {
        let mut command = Cli::command();
        command.build();
        let get_token = command.find_subcommand("get-token").unwrap();
        assert!(get_token.get_subcommands().next().is_none());
        for group in get_token.get_groups() {
            // The groups clap's derive makes of the flattened structs restrict nothing.
            assert!(group.clone().is_multiple() && !group.is_required_set());
        }
        let mut rows = String::new();
        let mut verbose = None;
        let mut conflicts = Vec::new();
        let args = get_token
            .get_arguments()
            .filter(|arg| !matches!(arg.get_action(), ArgAction::Help));
        for (row, arg) in args.enumerate() {
            let long = arg.get_long().expect("the fast parse reads long flags");
            let (takes, setter) = shape_of(arg, long);
            if takes == Count {
                assert!(verbose.is_none(), "--{long}: a second counted flag");
                verbose = Some(row);
            }
            let mut aliases = arg.get_all_aliases().unwrap_or_default();
            aliases.sort_unstable();
            let env = match arg.get_env() {
                None => false,
                Some(name) => {
                    let expected = EnvVarName::new().of(long).unwrap().to_owned();
                    assert_eq!(name.to_str(), Some(expected.as_str()), "--{long}");
                    true
                }
            };
            let field = field_of(get_token, arg);
            let store = match setter {
                "count" => format!("|a, _| count(&mut a.{field})"),
                _ => format!("|a, v| {setter}(&mut a.{field}, v)"),
            };
            rows.push_str(&format!(
                "    Flag {{ long: {long:?}, aliases: &{aliases:?}, env: {env}, takes: {takes:?}, store: {store} }},\n"
            ));
            for other in get_token.get_arg_conflicts_with(arg) {
                let other = other.get_long().unwrap();
                conflicts.push(if long < other {
                    (long, other)
                } else {
                    (other, long)
                });
            }
        }
        conflicts.sort_unstable();
        conflicts.dedup();
        let verbose = verbose.expect("get-token has -v");
        let conflicts: Vec<String> = conflicts.iter().map(|pair| format!("{pair:?}")).collect();
        let source = format!(
            "//! get-token's flags for the cache hit's parse (fast_get_token.rs), GENERATED from clap's\n\
             //! definition (cli/token_args.rs) by the test `the_flag_table_is_generated_from_clap`.\n\
             //! Do not edit: change the flag there and run `cargo test`, which rewrites this file.\n\
             //! (A flag removed or renamed there leaves a row here that no longer compiles: delete\n\
             //! that row, then run `cargo test`.)\n\n\
             use super::Takes::{{Count, OptionalBool, Value, Values}};\n\
             use super::{{add_path, add_text, choice, count, optional_bool, path, text, Flag}};\n\n\
             /// Every flag of get-token, in `TokenArgs` order.\n\
             pub(super) const FLAGS: &[Flag] = &[\n{rows}];\n\n\
             /// The row of `--verbose`, the flag `-v` counts.\n\
             pub(super) const VERBOSE: usize = {verbose};\n\n\
             /// Pairs of flags clap refuses together (`conflicts_with`), by long name.\n\
             pub(super) const CONFLICTS: &[(&str, &str)] = &[{}];\n",
            conflicts.join(", ")
        );
        rustfmt(&source)
    }

    /// What a flag takes and the setter that stores its value, from its clap definition.
    fn shape_of(arg: &clap::Arg, long: &str) -> (Takes, &'static str) {
        use std::any::TypeId;
        assert!(
            !arg.is_positional() && !arg.is_global_set() && !arg.is_last_set(),
            "--{long}"
        );
        assert!(
            !arg.is_ignore_case_set() && !arg.is_require_equals_set(),
            "--{long}"
        );
        assert!(!arg.is_allow_hyphen_values_set() && !arg.is_allow_negative_numbers_set());
        assert!(
            !arg.is_required_set() && !arg.is_exclusive_set(),
            "--{long}"
        );
        let counted = matches!(arg.get_action(), ArgAction::Count);
        assert_eq!(
            arg.get_short(),
            counted.then_some('v'),
            "--{long}: short names"
        );
        let value = arg.get_value_parser().type_id();
        let values = arg.get_num_args().unwrap();
        let one = ValueRange::new(1);
        let plain = values == one && arg.get_default_values().is_empty();
        let delimiter = arg.get_value_delimiter();
        let enumerated = !arg.get_possible_values().is_empty() && value != TypeId::of::<bool>();
        let shape = match arg.get_action() {
            ArgAction::Count => Some((Count, "count")),
            ArgAction::SetTrue => panic!(
                "--{long}: get-token's on/off flags take a value too (`--{long}=false`, as Go's pflag does): define it like --force-refresh"
            ),
            ArgAction::Set if value == TypeId::of::<bool>() && values == ValueRange::new(0..=1) => {
                Some((OptionalBool, "optional_bool"))
            }
            ArgAction::Set if plain && delimiter.is_none() => {
                if enumerated {
                    Some((Value, "choice"))
                } else if value == TypeId::of::<String>() {
                    Some((Value, "text"))
                } else if value == TypeId::of::<std::path::PathBuf>() {
                    Some((Value, "path"))
                } else {
                    None
                }
            }
            ArgAction::Append if plain && matches!(delimiter, None | Some(',')) => {
                let takes = Values {
                    split: delimiter.is_some(),
                };
                if value == TypeId::of::<String>() {
                    Some((takes, "add_text"))
                } else if value == TypeId::of::<std::path::PathBuf>() {
                    Some((takes, "add_path"))
                } else {
                    None
                }
            }
            _ => None,
        };
        shape.unwrap_or_else(|| {
            panic!("--{long}: a shape the fast parse cannot read; teach parse() and this generator")
        })
    }

    /// The field of `TokenArgs` an argument fills: its id (the field's name), behind the group of
    /// the flattened struct it is in (each such group's id is the field's name in `TokenArgs`).
    fn field_of(get_token: &clap::Command, arg: &clap::Arg) -> String {
        let id = arg.get_id();
        let groups: Vec<&str> = get_token
            .get_groups()
            .filter(|group| group.get_args().any(|member| member == id))
            .map(|group| group.get_id().as_str())
            .collect();
        match groups.as_slice() {
            [] => id.to_string(),
            [group] => format!("{group}.{id}"),
            _ => panic!("{id} is in several groups: {groups:?}"),
        }
    }

    /// `source` as `cargo fmt` leaves it, so that the generated file passes `cargo fmt --check`.
    fn rustfmt(source: &str) -> String {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new("rustfmt")
            .args(["--edition", "2024", "--emit", "stdout"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("rustfmt (rustup component add rustfmt)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(source.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "rustfmt refused the generated table:\n{source}"
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// The sourcegen check (rust-analyzer's pattern): the committed table is what clap's
    /// definition renders to. When it is not, the file is rewritten and the test fails, so a flag
    /// added, renamed or changed in cli/ reaches the fast parse by running `cargo test` once
    /// and committing the result.
    #[test]
    fn the_flag_table_is_generated_from_clap() {
        let path = flag_table_path();
        let rendered = render_flag_table();
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != rendered {
            std::fs::write(&path, &rendered).unwrap();
            panic!(
                "{} was out of date with clap's definition of get-token and has been \
                 regenerated: review the change, commit it and run the tests again",
                path.display()
            );
        }
        // The table the parser was compiled with is the one rendered (not a stale build).
        assert_eq!(FLAGS.len(), rendered.matches("    Flag {").count());
        assert_eq!(FLAGS[VERBOSE].takes, Count);
    }

    #[test]
    fn every_flag_and_alias_parses_as_clap_parses() {
        for flag in FLAGS {
            let names = std::iter::once(flag.long).chain(flag.aliases.iter().copied());
            for name in names {
                let long = format!("--{name}");
                let mut forms: Vec<Vec<String>> = Vec::new();
                if matches!(flag.takes, Count | OptionalBool) {
                    forms.push(vec![long.clone()]);
                    forms.push(vec![long.clone(), long.clone(), "--account=a".into()]);
                }
                let values = match flag.takes {
                    Count => Vec::new(),
                    _ => samples(flag),
                };
                for value in &values {
                    forms.push(vec![format!("{long}={value}")]);
                    if flag.takes != OptionalBool {
                        forms.push(vec![long.clone(), value.clone()]);
                    }
                    // Given twice: the later value wins, or both are kept.
                    forms.push(vec![
                        format!("{long}={}", values[0]),
                        format!("{long}={value}"),
                    ]);
                }
                for form in &forms {
                    let args: Vec<&str> = form.iter().map(String::as_str).collect();
                    assert!(compare(&args, &[]), "the fast parse declined {args:?}");
                }
            }
        }
        for short in [&["-v"][..], &["-vv"], &["-v", "-vvv", "--verbose"]] {
            assert!(compare(short, &[]), "{short:?}");
        }
        assert!(compare(&[], &[]), "no flags at all");
    }

    #[test]
    fn every_variable_parses_as_clap_parses() {
        for flag in FLAGS.iter().filter(|flag| flag.env) {
            let variable = variable_of(flag);
            for value in samples(flag) {
                let vars = [(variable.as_str(), value.as_str())];
                assert!(compare(&[], &vars), "{vars:?}");
                // The command line wins over the variable.
                let given = match flag.takes {
                    OptionalBool => format!("--{}", flag.long),
                    _ => format!("--{}={value}", flag.long),
                };
                assert!(compare(&[given.as_str()], &vars), "{given} {vars:?}");
            }
        }
    }

    #[test]
    fn the_variables_read_in_one_pass_are_what_var_os_reads() {
        let _turn = VARIABLES
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        #[cfg(unix)]
        let not_utf8 = std::os::unix::ffi::OsStringExt::from_vec(vec![b'x', 0xff]);
        #[cfg(windows)]
        let not_utf8 = std::os::windows::ffi::OsStringExt::from_wide(&[u16::from(b'x'), 0xd800]);
        let set: Vec<(&str, OsString)> = vec![
            ("KUBECRED_FASTTEST_ONE_PASS", "a".into()),
            // A name that starts with another's is another variable.
            ("KUBECRED_FASTTEST_ONE_PASS_LONGER", "b=c".into()),
            ("KUBECRED_FASTTEST_ONE_PASS_EMPTY", "".into()),
            ("KUBECRED_FASTTEST_ONE_PASS_NOT_UTF8", not_utf8),
            // Found by its upper-case name on Windows only, as var_os finds it.
            ("kubecred_fasttest_one_pass_lower", "d".into()),
        ];
        for (name, value) in &set {
            // SAFETY: a variable of this test alone; no other thread reads or writes it.
            unsafe { std::env::set_var(name, value) };
        }
        let read = KubecredVariables::of_process();
        let looked_up = [
            "KUBECRED_FASTTEST_ONE_PASS_UNSET",
            "KUBECRED_FASTTEST_ONE_PASS_LOWER",
            "KUBECRED_",
        ];
        let names = set.iter().map(|(name, _)| *name).chain(looked_up);
        // The flags' variables: upper case, `KUBECRED_` first.
        let names = names.filter(|name| name.starts_with("KUBECRED_"));
        for name in names {
            assert_eq!(read.get(name), std::env::var_os(name), "{name}");
        }
        assert_eq!(read.get("KUBECRED_FASTTEST_ONE_PASS"), Some("a".into()));
        for (name, _) in &set {
            // SAFETY: a variable of this test alone; no other thread reads or writes it.
            unsafe { std::env::remove_var(name) };
        }
    }

    #[test]
    fn what_the_fast_parse_leaves_to_clap() {
        type Variables<'a> = &'a [(&'a str, &'a str)];
        let declined: &[(&[&str], Variables)] = &[
            (&["--help"], &[]),
            (&["-h"], &[]),
            (&["--version"], &[]),
            (&["--nope"], &[]),
            (&["stray"], &[]),
            (&["--", "--issuer-url=x"], &[]),
            (&["--issuer-url"], &[]),
            (&["--issuer-url", "-v"], &[]),
            (&["--issuer-url="], &[]),
            (&["--grant-type=magic"], &[]),
            (&["--force-refresh=maybe"], &[]),
            (&["--pkce", "no"], &[]),
            (&["-vx"], &[]),
            (&["--client-secret=s", "--client-secret-file=f"], &[]),
            (
                &["--client-secret-file=f"],
                &[("KUBECRED_CLIENT_SECRET", "s")],
            ),
            (&[], &[("KUBECRED_ISSUER_URL", "")]),
            (&[], &[("KUBECRED_FORCE_REFRESH", "maybe")]),
            (&[], &[("KUBECRED_GRANT_TYPE", "Device-Code")]),
        ];
        for (args, vars) in declined {
            assert!(!compare(args, vars), "{args:?} {vars:?} should go to clap");
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let not_unicode = OsString::from_vec(vec![b'-', b'-', 0xff]);
            assert!(parse(&[not_unicode], |_| None).is_none());
        }
    }

    /// A small deterministic generator (xorshift64): the same cases on every run.
    struct Cases(u64);

    impl Cases {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % bound as u64) as usize
        }

        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.below(from.len())]
        }
    }

    #[test]
    fn generated_command_lines_parse_as_clap_parses() {
        const VALUES: &[&str] = &[
            "x",
            "a,b",
            "a,,b",
            "",
            "-x",
            "--y",
            "-",
            "true",
            "NO",
            "1",
            "magic",
            "=",
            "k=v",
            "authcode",
            "device-code",
            "disk",
            "post",
            "gitlab",
        ];
        const OTHERS: &[&str] = &[
            "-v",
            "-vv",
            "-h",
            "-x",
            "-",
            "--",
            "stray",
            "--help",
            "--nope=1",
            "--verbose",
        ];
        let mut cases = Cases(0x6b75_6265_6372_6564);
        let (mut total, mut taken) = (0, 0);
        for _ in 0..2000 {
            let mut words: Vec<String> = Vec::new();
            for _ in 0..cases.below(5) {
                let flag = &FLAGS[cases.below(FLAGS.len())];
                let names: Vec<&str> = std::iter::once(flag.long)
                    .chain(flag.aliases.iter().copied())
                    .collect();
                let name = cases.pick(&names);
                match cases.below(8) {
                    0 => words.push(cases.pick(OTHERS).into()),
                    1 | 2 => {
                        words.push(format!("--{name}"));
                        words.push(cases.pick(VALUES).into());
                    }
                    3 => words.push(format!("--{name}")),
                    _ => words.push(format!("--{name}={}", cases.pick(VALUES))),
                }
            }
            let mut vars: Vec<(String, &str)> = Vec::new();
            for _ in 0..cases.below(3) {
                let flag = &FLAGS[cases.below(FLAGS.len())];
                if flag.env {
                    vars.push((variable_of(flag), cases.pick(VALUES)));
                }
            }
            let args: Vec<&str> = words.iter().map(String::as_str).collect();
            let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            total += 1;
            taken += usize::from(compare(&args, &vars));
        }
        // Not vacuous: a good share of the cases takes the fast parse.
        assert!(
            taken * 5 > total,
            "only {taken} of {total} cases parsed fast"
        );
    }
}
