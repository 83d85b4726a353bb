//! The manual's promises against the binary, beside its error lines (`troubleshooting.rs`): the
//! Settings reference names get-token's flags and their defaults as clap defines them (it is
//! generated, `settings_reference.rs`; this reads what was committed), every "(the default)" is
//! clap's default, `get-token --help` says what `auto` does, README's Quick start binds the
//! username `setup` configures, a figure in the benchmark prose (docs/benchmarks.md, README's
//! From source, ARCHITECTURE.md, DECISIONS.md) is one bench/RESULTS.md holds, the cache directory without
//! `HOME` is where docs/settings.md says, the exit codes page lists kubecred's exit codes, and
//! every relative link and anchor of README.md and docs/ resolves.

use crate::sessions::kubecred_plain;
use crate::support::manual::{self, read, section};
use crate::support::*;
use crate::troubleshooting::{cells, code_spans};
use clap::CommandFactory;
use kubecred::cli::Cli;

/// The rows of the first table in `text` whose header row starts with `header`.
fn table_rows(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with(header));
    assert!(lines.next().is_some(), "no table headed {header:?}");
    lines
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .map(cells)
        .collect()
}

fn get_token_command() -> clap::Command {
    Cli::command()
        .find_subcommand("get-token")
        .expect("get-token")
        .clone()
}

/// `[default: X]` of an argument's help, when it says one.
fn documented_default(arg: &clap::Arg) -> Option<String> {
    let help = [arg.get_long_help(), arg.get_help()]
        .into_iter()
        .flatten()
        .map(|text| text.to_string())
        .find(|text| text.contains("[default: "))?;
    let rest = &help[help.find("[default: ")? + "[default: ".len()..];
    Some(rest[..rest.find(']')?].to_string())
}

/// A flag as README writes it (`--auth-param KEY=VALUE`, `--pkce[=false]`, `-vv`): its name.
fn flag_name(span: &str) -> Option<String> {
    if span == "-v" || span == "-vv" {
        return Some("-v".into());
    }
    let name: String = span
        .strip_prefix("--")?
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    Some(format!("--{name}"))
}

#[test]
fn the_settings_table_names_get_tokens_flags_and_defaults_as_clap_does() {
    let reference = read("docs/reference/settings.md");
    let rows = table_rows(
        section(&reference, "## get-token's settings"),
        "| flag | default |",
    );
    let command = get_token_command();
    let visible: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && arg.get_id() != "help")
        .collect();
    let name_of = |arg: &clap::Arg| match (arg.get_long(), arg.get_short()) {
        (Some(long), _) if arg.get_id() != "verbose" => format!("--{long}"),
        (_, Some(short)) => format!("-{short}"),
        (Some(long), None) => format!("--{long}"),
        (None, None) => arg.get_id().to_string(),
    };
    let mut problems = Vec::new();
    let mut documented = Vec::new();
    for row in &rows {
        let flags: Vec<String> = code_spans(&row[0])
            .iter()
            .filter_map(|span| flag_name(span))
            .collect();
        assert!(!flags.is_empty(), "a row without a flag: {row:?}");
        for flag in &flags {
            let Some(arg) = visible.iter().find(|arg| &name_of(arg) == flag) else {
                problems.push(format!(
                    "the Settings reference has {flag}, which get-token lacks"
                ));
                continue;
            };
            documented.push(flag.clone());
            // A default clap's help states as values (not as prose) is in the page's cell.
            if let Some(default) = documented_default(arg) {
                let parts: Vec<&str> = default.split(", ").collect();
                if parts.iter().all(|part| !part.contains(' ')) {
                    for part in parts {
                        if !row[1].contains(&format!("`{part}`")) {
                            problems.push(format!(
                                "{flag}: clap's default is {default}, the Settings reference says {:?}",
                                row[1]
                            ));
                        }
                    }
                }
            }
        }
    }
    for arg in &visible {
        let name = name_of(arg);
        if !documented.contains(&name) {
            problems.push(format!("get-token {name} is not in the Settings reference"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The get-token argument a `--name` (or kubelogin alias) names, hidden ones included.
fn get_token_arg<'a>(command: &'a clap::Command, name: &str) -> Option<&'a clap::Arg> {
    let name = name.strip_prefix("--")?;
    command.get_arguments().find(|arg| {
        arg.get_long() == Some(name)
            || arg
                .get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

/// The flags a migration table's cells name: `--flag`, `--flag=value`, `--flag VALUE`.
fn named_flags(cell: &str) -> Vec<(String, Option<String>)> {
    code_spans(cell)
        .iter()
        .flat_map(|span| {
            span.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|word| word.starts_with("--"))
        .map(|word| match word.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (word, None),
        })
        .collect()
}

#[test]
fn the_migration_tables_name_flags_and_values_kubecred_takes() {
    let readme = read("docs/switching.md");
    let command = get_token_command();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (header, left_is_ours) in [
        ("| kubelogin | kubecred |", true),
        ("| Azure kubelogin | kubecred |", false),
    ] {
        for row in table_rows(&readme, header) {
            // int128/kubelogin's own names are accepted by kubecred's parser; Azure's are not
            // (convert-kubeconfig translates them).
            let mut flags = named_flags(&row[1]);
            if left_is_ours {
                flags.extend(named_flags(&row[0]));
            }
            for (flag, value) in flags {
                checked += 1;
                let Some(arg) = get_token_arg(&command, &flag) else {
                    // kubelogin's `--v=2` is read before clap (kubelogin.rs): ask the parser.
                    let word = match &value {
                        Some(value) => format!("{flag}={value}"),
                        None => flag.clone(),
                    };
                    let argv = ["kubecred", "oidc-login", "get-token", word.as_str()];
                    if !(left_is_ours && Cli::try_parse_command_line(argv).is_ok()) {
                        problems.push(format!("{header}: {flag} is no get-token flag"));
                    }
                    continue;
                };
                let allowed: Vec<String> = arg
                    .get_possible_values()
                    .iter()
                    .flat_map(|v| {
                        v.get_name_and_aliases()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .collect();
                if let Some(value) = value
                    && !allowed.is_empty()
                    && !allowed.contains(&value)
                {
                    problems.push(format!("{header}: {flag}={value}: it takes {allowed:?}"));
                }
            }
        }
    }
    assert!(checked > 40, "checked only {checked} flags");
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(get_token_arg(&command, "--oidc-issuer-url").is_some());
    assert!(get_token_arg(&command, "--login").is_none());
}

/// The manual's "(the default)" claims: "`--flag=value` (the default" in text, and in a table whose
/// first header is "`--flag`", a row "`value` (the default)". Each must be clap's default.
fn default_claims(readme: &str) -> Vec<(String, String)> {
    let mut claims = Vec::new();
    let mut table_flag: Option<String> = None;
    let mut in_table = false;
    for line in readme.lines() {
        if !line.starts_with('|') {
            in_table = false;
            table_flag = None;
        } else if !in_table {
            // A table's header row: is its first column a flag's values?
            in_table = true;
            let first = cells(line).into_iter().next().unwrap_or_default();
            table_flag = code_spans(&first)
                .into_iter()
                .next()
                .filter(|span| span.starts_with("--") && first == format!("`{span}`"));
            continue;
        }
        for marker in ["` (the default", "` (default)"] {
            for (at, _) in line.match_indices(marker) {
                let Some(open) = line[..at].rfind('`') else {
                    continue;
                };
                let span = &line[open + 1..at];
                if let Some((flag, value)) =
                    span.split_once('=').filter(|(f, _)| f.starts_with("--"))
                {
                    claims.push((flag.to_string(), value.to_string()));
                } else if let Some(flag) = &table_flag
                    && line.starts_with(&format!("| `{span}`"))
                {
                    claims.push((flag.clone(), span.to_string()));
                }
            }
        }
    }
    claims
}

#[test]
fn every_default_the_manual_names_is_clap_s() {
    let readme = manual::all_text();
    let claims = default_claims(&readme);
    assert!(claims.len() >= 2, "found only {claims:?}");
    let command = get_token_command();
    let mut problems = Vec::new();
    for (flag, value) in &claims {
        let Some(arg) = command.get_arguments().find(|arg| {
            arg.get_long()
                .is_some_and(|long| format!("--{long}") == *flag)
        }) else {
            problems.push(format!(
                "the manual says {value} is the default of {flag}, which get-token lacks"
            ));
            continue;
        };
        if documented_default(arg).as_deref() != Some(value) {
            problems.push(format!(
                "the manual says {value} is the default of {flag}; clap says {:?}",
                documented_default(arg)
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The check reads what it must: a wrong claim is one.
    assert_eq!(
        default_claims("take `--grant-type=authcode` (the default) here"),
        [("--grant-type".to_string(), "authcode".to_string())]
    );
    assert_eq!(
        default_claims("| `--cache-storage` | x |\n|---|---|\n| `disk` (default) | y |\n"),
        [("--cache-storage".to_string(), "disk".to_string())]
    );
}

#[test]
fn get_token_help_says_what_auto_does() {
    let env = TestEnv::new();
    let help = kubecred_plain(&env, &["get-token", "--help"])
        .run()
        .success()
        .stdout();
    let auto: String = help
        .split("- auto:")
        .nth(1)
        .and_then(|rest| rest.split("- authcode:").next())
        .expect("--grant-type's auto in get-token --help")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for promise in [
        "the browser",
        "no browser can open here",
        "the device flow when the provider offers it",
        "the code pasted",
        "Without a terminal (a CI job, a script) it fails at once",
    ] {
        assert!(auto.contains(promise), "{promise:?} missing from: {auto}");
    }
}

/// `setup`'s printed configuration for the test bed's client-credentials client.
fn setup_output(env: &TestEnv, bed: &Testbed) -> String {
    env.kubecred_owned(&[
        "setup".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={CC_CLIENT}"),
        "--grant-type=client-credentials".into(),
        format!("--resource={RESOURCE}"),
    ])
    .env("KUBECRED_CLIENT_SECRET", CC_SECRET)
    .run()
    .success()
    .stdout()
}

/// The value of `--name=` in `text`, up to the next backtick, space or line end.
fn value_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(name)? + name.len();
    let rest = &text[start..];
    Some(&rest[..rest.find(['`', ' ', '\n']).unwrap_or(rest.len())])
}

#[test]
fn quick_start_binds_the_username_setup_configures() {
    let readme = read("README.md");
    let quick_start = section(&readme, "## Quick start");
    let prefix = value_of(quick_start, "--oidc-username-prefix=")
        .expect("Quick start gives the API server a username prefix");
    let user = value_of(quick_start, "--clusterrole=view --user=")
        .expect("Quick start binds a role to a user");
    assert!(
        user.starts_with(prefix),
        "Quick start binds {user}, but the API server it sets up calls users {prefix}…"
    );

    let bed = Testbed::start();
    let env = TestEnv::new();
    let printed = setup_output(&env, &bed);
    assert!(
        printed.contains(&format!("--oidc-username-prefix={prefix}\n")),
        "setup configures another prefix than Quick start's {prefix}:\n{printed}"
    );
    let bound = value_of(&printed, "--clusterrole=view --user=")
        .expect("setup prints a ClusterRoleBinding command");
    assert!(
        bound.starts_with(prefix),
        "setup binds {bound}, not a {prefix} user:\n{printed}"
    );
}

/// A figure in prose: a number and what it counts.
#[derive(Debug, Clone, PartialEq)]
struct Figure {
    text: String,
    value: f64,
    decimals: usize,
    unit: &'static str,
}

/// Units a benchmark figure comes with, longest first ("" is a bare number).
const UNITS: &[&str] = &[
    "relative relocations",
    "minor page faults",
    "page faults",
    "instructions",
    "relocations",
    "faults",
    "bytes",
    "MiB",
    "KiB",
    "MB",
    "KB",
    "ms",
    "µs",
    "×",
    "%",
    "k",
];

/// The figures of `text`: numbers followed by one of [`UNITS`] (a range `1.1–2.2×` gives its
/// first number the unit of the second), or, with `bare`, numbers without one.
fn figures(text: &str, bare: bool) -> Vec<Figure> {
    let chars: Vec<char> = text.chars().collect();
    let mut found: Vec<Figure> = Vec::new();
    let mut i = 0;
    let mut range_start: Option<usize> = None;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (matches!(chars[j], ',' | '.')
                    && chars.get(j + 1).is_some_and(char::is_ascii_digit)))
        {
            j += 1;
        }
        let number: String = chars[i..j].iter().filter(|&&c| c != ',').collect();
        let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
        let rest: String = chars[j..].iter().take(24).collect();
        let spaced = rest.strip_prefix(' ').unwrap_or(&rest);
        let unit = UNITS.iter().copied().find(|unit| {
            let after = if ["×", "%", "k"].contains(unit) {
                rest.strip_prefix(unit)
            } else {
                spaced.strip_prefix(unit)
            };
            after.is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
        });
        let gap = if unit.is_some_and(|unit| !rest.starts_with(unit)) {
            " "
        } else {
            ""
        };
        let figure = Figure {
            text: format!(
                "{}{gap}{}",
                chars[i..j].iter().collect::<String>(),
                unit.unwrap_or("")
            ),
            value: number.parse().unwrap_or(f64::NAN),
            decimals,
            unit: unit.unwrap_or(""),
        };
        if let Some(first) = range_start.take()
            && unit.is_some()
            && found[first].unit.is_empty()
        {
            found[first].unit = figure.unit;
            found[first].text.push_str(figure.unit);
        }
        if chars.get(j) == Some(&'–') && unit.is_none() {
            range_start = Some(found.len());
        }
        if unit.is_some() || bare || range_start == Some(found.len()) {
            found.push(figure);
        }
        i = j;
    }
    if !bare {
        // A range's first number whose second had no unit either.
        found.retain(|figure| !figure.unit.is_empty());
    }
    found
}

fn rounds_to(value: f64, decimals: usize, shown: f64) -> bool {
    let scale = 10f64.powi(decimals as i32);
    ((value * scale).round() - shown * scale).abs() < 1e-6
}

/// Whether bench/RESULTS.md (its `figures`, bare ones included) holds `figure`, as written
/// there or rounded to the figure's precision, in the figure's unit.
fn results_hold(figure: &Figure, results: &[Figure]) -> bool {
    let same = |units: &[&str], scale: f64| {
        results
            .iter()
            .filter(|r| units.contains(&r.unit))
            .any(|r| rounds_to(r.value / scale, figure.decimals, figure.value))
    };
    match figure.unit {
        "ms" => same(&["ms"], 1.0),
        // Ratios: RESULTS gives them with × or bare in a round's range "(1.12–2.16)".
        "×" => same(&["×", ""], 1.0),
        "%" => same(&["%"], 1.0),
        "k" => same(&["", "instructions"], 1000.0),
        "MB" => same(&["", "bytes"], 1e6),
        "MiB" => same(&["KiB"], 1024.0),
        "KiB" => same(&["KiB"], 1.0),
        "instructions" | "bytes" | "relocations" | "relative relocations" => same(
            &[
                "",
                "instructions",
                "bytes",
                "relocations",
                "relative relocations",
            ],
            1.0,
        ),
        "faults" | "page faults" | "minor page faults" => same(&["", "faults"], 1.0),
        _ => false,
    }
}

/// The figures of `prose` that bench/RESULTS.md does not hold.
fn figures_not_in_results(prose: &str, results: &str) -> Vec<String> {
    let held = figures(results, true);
    figures(prose, false)
        .into_iter()
        .filter(|figure| !results_hold(figure, &held))
        .map(|figure| figure.text)
        .collect()
}

#[test]
fn benchmark_figures_in_prose_are_the_ones_bench_results_holds() {
    let results = read("bench/RESULTS.md");
    let readme = read("README.md");
    let benchmarks = read("docs/benchmarks.md");
    let architecture = read("ARCHITECTURE.md");
    let decisions = read("DECISIONS.md");
    let from_source = readme
        .lines()
        .skip_while(|line| !line.starts_with("- **From source**"))
        .take_while(|line| !line.starts_with("  (ring's"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut problems = Vec::new();
    for (place, prose) in [
        (
            "docs/benchmarks.md",
            section(&benchmarks, "# Benchmarks").to_string(),
        ),
        ("README, From source", from_source),
        (
            "ARCHITECTURE, Figures",
            section(&architecture, "## Figures").to_string(),
        ),
        (
            "DECISIONS, The cache hit",
            section(&decisions, "## The cache hit").to_string(),
        ),
    ] {
        assert!(
            !figures(&prose, false).is_empty(),
            "{place}: no figures read"
        );
        for figure in figures_not_in_results(&prose, &results) {
            problems.push(format!("{place}: {figure} is not in bench/RESULTS.md"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_figure_check_can_fail() {
    let results =
        "kubecred 144896 instructions, 0.66 ms, 2.02× (1.12–2.16), 3200 KiB, 10679896 bytes";
    let prose = "145k instructions; 0.66 ms; 2.0×, rounds 1.1–2.2×; 3.1 MiB; a 10.7 MB binary; \
                 547k against 726k; about 40% of it; 25 µs; 0.8 ms";
    assert_eq!(
        figures_not_in_results(prose, results),
        ["547k", "726k", "40%", "25 µs", "0.8 ms"]
    );
    // A commit name or "2-core" is no figure.
    assert!(figures("at commit 2beea4f on a 2-core machine", false).is_empty());
}

#[test]
fn without_home_the_cache_dir_is_under_the_password_databases_home() {
    // docs/settings.md: `--cache-dir`'s default with HOME unset.
    let settings = read("docs/settings.md");
    let cache_dir = settings
        .split("\n- ")
        .find(|item| item.starts_with("`--cache-dir`"))
        .expect("--cache-dir's default in docs/settings.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        cache_dir
            .contains("`HOME` unset or empty, the home directory comes from the password database"),
        "{cache_dir:?}"
    );

    let uid = run_bounded(
        std::process::Command::new("id").arg("-u"),
        std::time::Duration::from_secs(10),
    )
    .success()
    .stdout();
    let entry = run_bounded(
        std::process::Command::new("getent").args(["passwd", uid.trim()]),
        std::time::Duration::from_secs(10),
    )
    .success()
    .stdout();
    let home = entry
        .trim()
        .split(':')
        .nth(5)
        .expect("a passwd entry's home");
    for home_variable in [None, Some("")] {
        // `status` only reads: nothing is written to the real home.
        let mut status = std::process::Command::new(kubecred_bin());
        status
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .args(["status", "--output=json"]);
        if let Some(value) = home_variable {
            status.env("HOME", value);
        }
        let run = status.run().success();
        let answer: serde_json::Value = serde_json::from_str(&run.stdout()).unwrap();
        assert_eq!(
            answer["cache_dir"].as_str(),
            Some(format!("{home}/.cache/kubecred").as_str()),
            "HOME {home_variable:?}"
        );
    }
}

/// The Markdown files of the manual: README.md and every page under docs/.
fn manual_files() -> Vec<String> {
    fn walk(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                walk(&path, &format!("{prefix}{name}/"), out);
            } else if name.ends_with(".md") {
                out.push(format!("{prefix}{name}"));
            }
        }
    }
    let mut files = vec!["README.md".to_string()];
    walk(&repo_root().join("docs"), "docs/", &mut files);
    files.sort();
    files
}

/// The targets of a Markdown text's inline links, `[text](target)`, outside fenced code and
/// code spans.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in manual::outside_fences(text) {
        // Code spans hold examples, not links.
        let prose: String = line
            .split('`')
            .enumerate()
            .map(|(index, piece)| if index % 2 == 0 { piece } else { "" })
            .collect();
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// What is wrong with the relative links of `file` (`text`): targets that do not exist, and
/// anchors that are no heading of their page.
fn broken_links(file: &str, text: &str) -> Vec<String> {
    let dir = std::path::Path::new(file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let mut broken = Vec::new();
    for target in link_targets(text) {
        let scheme = target
            .split_once(':')
            .is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphabetic()));
        if scheme || target.is_empty() {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            std::path::PathBuf::from(file)
        } else {
            let mut resolved = std::path::PathBuf::new();
            for part in dir.join(path).components() {
                match part {
                    std::path::Component::ParentDir => {
                        if !resolved.pop() {
                            broken.push(format!("{file}: {target} leaves the repository"));
                        }
                    }
                    std::path::Component::CurDir => {}
                    other => resolved.push(other),
                }
            }
            resolved
        };
        let on_disk = repo_root().join(&resolved);
        if !on_disk.exists() {
            broken.push(format!("{file}: {target}: no {}", resolved.display()));
            continue;
        }
        if let Some(anchor) = anchor {
            let page = std::fs::read_to_string(&on_disk).unwrap_or_default();
            if !manual::anchors(&page).iter().any(|a| a == anchor) {
                broken.push(format!(
                    "{file}: {target}: {} has no heading #{anchor}",
                    resolved.display()
                ));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_of_the_manual_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in manual_files() {
        let text = read(&file);
        checked += link_targets(&text).len();
        broken.extend(broken_links(&file, &text));
    }
    assert!(checked > 150, "read only {checked} links");
    assert!(broken.is_empty(), "{broken:#?}");
    // The check can fail: a missing file, a missing anchor, a link in code is no link.
    assert_eq!(
        broken_links(
            "docs/x.md",
            "[a](nowhere.md) [b](../README.md#no-such-heading) [c](../README.md#install) `[d](e.md)`\n"
        ),
        [
            "docs/x.md: nowhere.md: no docs/nowhere.md",
            "docs/x.md: ../README.md#no-such-heading: README.md has no heading #no-such-heading",
        ]
    );
}

#[test]
fn every_page_is_one_click_from_readme_and_in_the_site() {
    let readme = read("README.md");
    let summary = read("docs/SUMMARY.md");
    let linked = link_targets(&readme);
    let in_summary = link_targets(&summary);
    let mut problems = Vec::new();
    for file in manual_files() {
        let Some(page) = file.strip_prefix("docs/") else {
            continue;
        };
        if page == "SUMMARY.md" {
            continue;
        }
        if !linked.iter().any(|target| target == &file) {
            problems.push(format!("README.md does not link {file}"));
        }
        if !in_summary.iter().any(|target| target == page) {
            problems.push(format!("docs/SUMMARY.md does not list {page}"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn help_and_the_man_page_point_to_the_manuals_site() {
    // The site README names, and every page of it that the binary names is a page of docs/.
    let readme = read("README.md");
    let site = "https://OWNER.github.io/kubecred/";
    assert!(readme.contains(site), "README names no {site}");
    let env = TestEnv::new();
    let help = kubecred_plain(&env, &["--help"]).run().success().stdout();
    let man = kubecred_plain(&env, &["man"]).run().success().stdout();
    let get_token = kubecred_plain(&env, &["get-token", "--help"])
        .run()
        .success()
        .stdout();
    assert!(help.contains(site), "kubecred --help:\n{help}");
    assert!(man.contains(site), "kubecred man:\n{man}");
    let mut named = 0;
    for text in [&help, &man, &get_token] {
        for (at, _) in text.match_indices(site) {
            let page: String = text[at + site.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_/.".contains(*c))
                .collect();
            let Some(page) = page.strip_suffix(".html") else {
                continue;
            };
            named += 1;
            assert!(
                repo_root().join(format!("docs/{page}.md")).exists(),
                "{site}{page}.html is no page of docs/"
            );
        }
    }
    assert!(named > 0, "get-token --help names no page of the manual");
}
