//! docs/reference/settings.md is GENERATED from clap's definition of the command line, as the man
//! page is (`kubecred man`): every get-token flag with its `KUBECRED_*` variable, its cluster
//! extension key, its default, its other names and its help, then the flags of the other
//! commands. `the_settings_reference_is_generated_from_clap` renders it and, when the committed
//! page differs, rewrites it and fails (the sourcegen check of `fast_get_token/flags.rs`): change
//! a flag's help in src/cli/, run `cargo test --test it settings_reference`, review, commit.
//!
//! clap knows nothing of the cluster extension, so its keys are listed here,
//! [`EXTENSION_KEYS`], and held to the code two ways: each key must do what its flag does
//! (`Config::resolve` with the key alone and with the flag alone give the same settings), and
//! every key the code reads (`src/config/`) must be listed.

use crate::support::manual::{read, slug};
use crate::support::repo_root;
use crate::support::rust_text::{SourceText, rust_files};
use clap::CommandFactory;
use kubecred::cli::{Cli, Command};
use kubecred::config::{Config, Environment};
use kubecred::exec_credential::ExecInfo;
use serde_json::{Value, json};

/// Where the generated page lives, relative to the repository.
const PAGE: &str = "docs/reference/settings.md";

/// A key of the cluster extension and the flag it stands for.
struct ExtensionKey {
    key: &'static str,
    /// The get-token flag, without `--`.
    flag: &'static str,
    /// What the key holds, as the page says it.
    holds: &'static str,
    /// A value for the key, and the same value as the flag's argument.
    sample: fn() -> Value,
    argument: &'static str,
    /// Flags the sample needs beside it to resolve (a shared login's target, …).
    beside: &'static [&'static str],
}

/// Every key `Config::resolve` reads from the cluster extension, in get-token's flag order.
const EXTENSION_KEYS: &[ExtensionKey] = &[
    ExtensionKey {
        key: "issuerURL",
        flag: "issuer-url",
        holds: "a string",
        sample: || json!("https://ext.example"),
        argument: "https://ext.example",
        beside: &[],
    },
    ExtensionKey {
        key: "clientID",
        flag: "client-id",
        holds: "a string",
        sample: || json!("from-extension"),
        argument: "from-extension",
        beside: &[],
    },
    ExtensionKey {
        key: "scopes",
        flag: "scope",
        holds: "a list of strings, or one string of them separated by spaces or commas",
        sample: || json!(["email", "groups"]),
        argument: "email,groups",
        beside: &[],
    },
    ExtensionKey {
        key: "grantType",
        flag: "grant-type",
        holds: "a string",
        sample: || json!("device-code"),
        argument: "device-code",
        beside: &[],
    },
    ExtensionKey {
        key: "useAccessToken",
        flag: "use-access-token",
        holds: "true or false",
        sample: || json!(true),
        argument: "true",
        beside: &[],
    },
    ExtensionKey {
        key: "audience",
        flag: "audience",
        holds: "a string",
        sample: || json!("cluster-a"),
        argument: "cluster-a",
        beside: &[],
    },
    ExtensionKey {
        key: "resource",
        flag: "resource",
        holds: "a string",
        sample: || json!("https://a.k8s.example"),
        argument: "https://a.k8s.example",
        beside: &[],
    },
    ExtensionKey {
        key: "targetScope",
        flag: "target-scope",
        holds: "a string",
        sample: || json!("api://cluster-b/.default"),
        argument: "api://cluster-b/.default",
        beside: &["--shared-login"],
    },
    ExtensionKey {
        key: "sharedLogin",
        flag: "shared-login",
        holds: "true or false",
        sample: || json!(true),
        argument: "true",
        beside: &["--resource=https://a.k8s.example"],
    },
    ExtensionKey {
        key: "derive",
        flag: "derive",
        holds: "`refresh` or `token-exchange`",
        sample: || json!("token-exchange"),
        argument: "token-exchange",
        beside: &["--shared-login", "--resource=https://a.k8s.example"],
    },
    ExtensionKey {
        key: "loginResources",
        flag: "login-resource",
        holds: "a list of strings, or one string of them separated by spaces or commas",
        sample: || json!(["https://a.k8s.example", "https://b.k8s.example"]),
        argument: "https://a.k8s.example,https://b.k8s.example",
        beside: &["--shared-login", "--resource=https://a.k8s.example"],
    },
    ExtensionKey {
        key: "loginScopes",
        flag: "login-scope",
        holds: "a list of strings, or one string of them separated by spaces or commas",
        sample: || json!("api://a/.default api://b/.default"),
        argument: "api://a/.default,api://b/.default",
        beside: &["--shared-login", "--target-scope=api://a/.default"],
    },
    ExtensionKey {
        key: "certificateAuthorityData",
        flag: "certificate-authority-data",
        holds: "base64 of PEM certificates (the identity provider's CA, not the API server's)",
        sample: || json!("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="),
        argument: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
        beside: &[],
    },
    ExtensionKey {
        key: "minValidity",
        flag: "min-validity",
        holds: "a duration (`90s`, `5m`)",
        sample: || json!("5m"),
        argument: "5m",
        beside: &[],
    },
    ExtensionKey {
        key: "refreshAhead",
        flag: "refresh-ahead",
        holds: "a duration or a percentage (`10m`, `25%`, `0`)",
        sample: || json!("10m"),
        argument: "10m",
        beside: &[],
    },
    ExtensionKey {
        key: "notify",
        flag: "notify",
        holds: "`never` or `failures`",
        sample: || json!("never"),
        argument: "never",
        beside: &[],
    },
    ExtensionKey {
        key: "account",
        flag: "account",
        holds: "a string",
        sample: || json!("work"),
        argument: "work",
        beside: &[],
    },
];

fn extension_key(flag: &str) -> Option<&'static ExtensionKey> {
    EXTENSION_KEYS.iter().find(|key| key.flag == flag)
}

/// The built command line: every argument's help and defaults as `--help` shows them.
fn cli() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// The arguments a page documents: visible, and not `--help`.
fn documented(command: &clap::Command) -> Vec<&clap::Arg> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !matches!(arg.get_action(), clap::ArgAction::Help))
        .collect()
}

/// A help text with its `[default: X]` taken out, and X.
fn split_default(help: &str) -> (String, Option<String>) {
    let Some(at) = help.find("[default: ") else {
        return (help.trim().to_string(), None);
    };
    let rest = &help[at + "[default: ".len()..];
    let end = rest.find(']').expect("a closed [default: …]");
    let text = format!("{}{}", &help[..at], &rest[end + 1..]);
    let text = text.trim().replace(" .", ".").replace("  ", " ");
    (text, Some(rest[..end].to_string()))
}

/// The help text of an argument, long form, `[default: …]` taken out.
fn help_of(arg: &clap::Arg) -> (String, Option<String>) {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|help| help.to_string())
        .unwrap_or_default();
    split_default(&help)
}

/// Whether an argument is an on/off switch: get-token's (`--flag`, `--flag=false`, as pflag
/// takes them) or another command's (`--all`).
fn is_switch(arg: &clap::Arg) -> bool {
    let optional_bool = arg.get_num_args() == Some(clap::builder::ValueRange::new(0..=1))
        && arg
            .get_possible_values()
            .iter()
            .any(|value| value.get_name() == "true");
    optional_bool || matches!(arg.get_action(), clap::ArgAction::SetTrue)
}

/// A help text as a sentence: clap drops the full stop a doc comment's summary ends with.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() || text.ends_with(['.', ')', ':']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

/// The default cell: values in code spans, prose as it is, `off` for a switch, else `—`.
fn default_cell(arg: &clap::Arg) -> String {
    match help_of(arg).1 {
        Some(default) => {
            let parts: Vec<&str> = default.split(", ").collect();
            if parts.iter().all(|part| !part.contains(' ')) {
                parts
                    .iter()
                    .map(|part| format!("`{part}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                markdown_text(&default)
            }
        }
        None if is_switch(arg) => "off".into(),
        None if matches!(arg.get_action(), clap::ArgAction::Count) => "quiet".into(),
        None if !arg.get_default_values().is_empty() => arg
            .get_default_values()
            .iter()
            .map(|value| format!("`{}`", value.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(", "),
        None => "—".into(),
    }
}

/// How the flag is written: `--name`, or `-v` for the counted one.
fn flag_name(arg: &clap::Arg) -> String {
    match (arg.get_long(), arg.get_short()) {
        (_, Some(short)) if matches!(arg.get_action(), clap::ArgAction::Count) => {
            format!("-{short}")
        }
        (Some(long), _) => format!("--{long}"),
        (None, _) => format!(
            "<{}>",
            arg.get_value_names()
                .and_then(|names| names.first())
                .map_or_else(|| arg.get_id().to_string(), ToString::to_string)
        ),
    }
}

/// The flag with its value, as on a command line: `--scope <SCOPE>`, `--pkce[=<BOOL>]`, `-v`, `-vv`.
fn usage(arg: &clap::Arg) -> String {
    let name = flag_name(arg);
    if matches!(arg.get_action(), clap::ArgAction::Count) {
        return format!("`{name}`, `{name}{}`", &name[1..]);
    }
    if arg.is_positional() {
        return format!("`{name}`");
    }
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(ToString::to_string);
    match value {
        None => format!("`{name}`"),
        _ if matches!(arg.get_action(), clap::ArgAction::SetTrue) => format!("`{name}`"),
        Some(value) if is_switch(arg) => format!("`{name}[={value}]`"),
        Some(value) => format!("`{name} <{value}>`"),
    }
}

/// Text for Markdown: outside code spans, `<` and `>` (`<tenant>`, `$BROWSER`'s neighbours) as
/// entities, so that no word reads as an HTML tag.
fn markdown_text(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(index, piece)| {
            if index % 2 == 1 {
                format!("`{piece}`")
            } else {
                piece.replace('<', "&lt;").replace('>', "&gt;")
            }
        })
        .collect()
}

/// The help's paragraphs and, for a flag that takes named values, a list of them.
fn help_block(arg: &clap::Arg) -> String {
    let mut block = markdown_text(&sentence(&help_of(arg).0));
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|value| !value.is_hide_set() && !is_switch(arg))
        .collect();
    if values.iter().all(|value| value.get_help().is_none()) {
        let names: Vec<String> = values
            .iter()
            .map(|value| format!("`{}`", value.get_name()))
            .collect();
        if !names.is_empty() {
            block = format!("{block} One of {}.", names.join(", "))
                .trim()
                .to_string();
        }
    } else {
        block.push_str("\n\n");
        for value in values {
            let help = value
                .get_help()
                .map(|help| help.to_string())
                .unwrap_or_default();
            block.push_str(&format!(
                "- `{}`: {}\n",
                value.get_name(),
                markdown_text(&sentence(&help))
            ));
        }
    }
    block.trim_end().to_string()
}

/// Other names an argument answers to (kubelogin's, mostly), as a cell.
fn aliases_cell(arg: &clap::Arg) -> String {
    let mut aliases = arg.get_all_aliases().unwrap_or_default();
    aliases.sort_unstable();
    if aliases.is_empty() {
        return "—".into();
    }
    aliases
        .iter()
        .map(|alias| format!("`--{alias}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn env_cell(arg: &clap::Arg) -> String {
    arg.get_env().map_or_else(
        || "—".to_string(),
        |name| format!("`{}`", name.to_string_lossy()),
    )
}

/// get-token's flags: the table, then a section per flag.
fn render_get_token(get_token: &clap::Command, page: &mut String) {
    page.push_str(
        "| flag | default | variable | cluster extension | also accepted as |\n|---|---|---|---|---|\n",
    );
    let args = documented(get_token);
    for arg in &args {
        let name = flag_name(arg);
        let key = arg
            .get_long()
            .and_then(extension_key)
            .map_or_else(|| "—".to_string(), |key| format!("`{}`", key.key));
        page.push_str(&format!(
            "| [`{name}`](#{}) | {} | {} | {key} | {} |\n",
            slug(&format!("`{name}`")),
            default_cell(arg),
            env_cell(arg),
            aliases_cell(arg),
        ));
    }
    for arg in &args {
        let name = flag_name(arg);
        page.push_str(&format!("\n### `{name}`\n\n{}", usage(arg)));
        if let Some(env) = arg.get_env() {
            page.push_str(&format!(" · `{}`", env.to_string_lossy()));
        }
        if let Some(key) = arg.get_long().and_then(extension_key) {
            page.push_str(&format!(
                " · cluster extension `{}`: {}",
                key.key, key.holds
            ));
        }
        page.push_str(&format!(" · default: {}\n\n", default_cell(arg)));
        page.push_str(&help_block(arg));
        page.push('\n');
    }
}

/// A command's own flags (those get-token does not have), as a table.
fn render_command(command: &clap::Command, get_token: &clap::Command, page: &mut String) {
    let name = command.get_name();
    let about = command
        .get_about()
        .map(|about| about.to_string())
        .unwrap_or_default();
    page.push_str(&format!(
        "\n### `kubecred {name}`\n\n{}",
        markdown_text(&sentence(&about))
    ));
    let shares = get_token
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !matches!(arg.get_action(), clap::ArgAction::Help))
        .all(|arg| {
            command
                .get_arguments()
                .any(|own| own.get_id() == arg.get_id())
        });
    if shares {
        page.push_str(" It takes every setting above, and:");
    }
    let own: Vec<&clap::Arg> = documented(command)
        .into_iter()
        .filter(|arg| {
            !get_token
                .get_arguments()
                .any(|other| other.get_id() == arg.get_id())
        })
        .collect();
    if own.is_empty() {
        page.push_str(if shares { " nothing more.\n" } else { "\n" });
        return;
    }
    page.push_str("\n\n| flag | default | variable | what it does |\n|---|---|---|---|\n");
    for arg in own {
        let mut help = help_block(arg).replace("\n\n", " ").replace('\n', " ");
        help = help.replace(" - `", "; `").replace('|', "\\|");
        page.push_str(&format!(
            "| {} | {} | {} | {help} |\n",
            usage(arg),
            default_cell(arg),
            env_cell(arg),
        ));
    }
}

/// The page, from clap's definition.
fn render() -> String {
    let command = cli();
    let get_token = command
        .find_subcommand("get-token")
        .expect("get-token is defined");
    let mut page = String::from(
        "# Settings reference\n\n\
         <!-- GENERATED from clap's definition of the command line (src/cli/) by \
         tests/it/settings_reference.rs. Do not edit: change a flag's help there and run \
         `cargo test --test it settings_reference`, which rewrites this page. -->\n\n\
         Every setting of `kubecred get-token` — which `login`, `logout`, `setup` and `whoami` \
         take too — with its environment variable, its key in the cluster extension, its default \
         and the other names it answers to (int128/kubelogin's). A flag wins over its variable, \
         the variable over the extension key, and that over the default; how to give each, and \
         the variables that are not settings, are in [Settings](../settings.md). This page is \
         generated from the same definitions as `kubecred get-token --help` and the man page.\n\n\
         ## get-token's settings\n\n",
    );
    render_get_token(get_token, &mut page);
    page.push_str(
        "\n## Cluster extension keys\n\n\
         With `provideClusterInfo: true` on the user, kubecred reads these keys of the cluster's \
         `client.authentication.k8s.io/exec` extension ([The cluster extension]\
         (../settings.md#the-cluster-extension)).\n\n\
         | key | holds | flag it stands for |\n|---|---|---|\n",
    );
    for key in EXTENSION_KEYS {
        page.push_str(&format!(
            "| `{}` | {} | [`--{}`](#--{}) |\n",
            key.key, key.holds, key.flag, key.flag
        ));
    }
    page.push_str("\n## The other commands\n\nEach command's own flags.\n");
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        if sub.is_hide_set() || name == "get-token" || name == "help" {
            continue;
        }
        render_command(sub, get_token, &mut page);
    }
    page
}

#[test]
fn the_settings_reference_is_generated_from_clap() {
    let path = repo_root().join(PAGE);
    let rendered = render();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != rendered {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
        panic!(
            "{PAGE} was out of date with clap's definition of the command line and has been \
             regenerated: review the change, commit it and run the tests again"
        );
    }
    // Every key of the table is a get-token flag with a variable.
    let command = cli();
    let get_token = command.find_subcommand("get-token").unwrap();
    for key in EXTENSION_KEYS {
        let arg = get_token
            .get_arguments()
            .find(|arg| arg.get_long() == Some(key.flag))
            .unwrap_or_else(|| panic!("{}: no get-token --{}", key.key, key.flag));
        assert!(arg.get_env().is_some(), "--{} has no variable", key.flag);
        assert!(read(PAGE).contains(&format!("| `{}` |", key.key)));
    }
}

/// The settings `get-token` resolves from `words` and a cluster extension, as text to compare,
/// the exec info itself (which carries the extension) left out; or the error.
fn try_resolved(words: &[String], extension: &Value) -> Result<String, String> {
    let mut argv = vec!["kubecred".to_string(), "get-token".to_string()];
    argv.extend(words.iter().cloned());
    let cli =
        Cli::try_parse_command_line(argv.clone()).unwrap_or_else(|err| panic!("{argv:?}: {err}"));
    let Command::GetToken(args) = cli.command else {
        unreachable!()
    };
    let info = json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": false, "cluster": {"server": "https://a.k8s.example", "config": extension}},
    });
    let mut config = Config::resolve(
        &args,
        &Environment::default(),
        ExecInfo::parse(Some(&info.to_string())).unwrap(),
    )
    .map_err(|err| format!("{argv:?} with {extension}: {err:#}"))?;
    config.exec = ExecInfo::parse(None).unwrap();
    Ok(format!("{config:#?}"))
}

fn resolved(words: &[String], extension: Value) -> String {
    try_resolved(words, &extension).unwrap_or_else(|err| panic!("{err}"))
}

#[test]
fn each_extension_key_does_what_its_flag_does() {
    let base = |flag: &str| -> Vec<String> {
        ["--issuer-url=https://idp.example", "--client-id=kubernetes"]
            .into_iter()
            .filter(|word| !word.starts_with(&format!("--{flag}=")))
            .map(String::from)
            .collect()
    };
    for key in EXTENSION_KEYS {
        let mut words = base(key.flag);
        words.extend(key.beside.iter().map(|word| word.to_string()));
        // Without the key or the flag: other settings, or none (no issuer, no client).
        let plain = try_resolved(&words, &json!({}));
        let by_key = resolved(&words, json!({ key.key: (key.sample)() }));
        words.push(format!("--{}={}", key.flag, key.argument));
        let by_flag = resolved(&words, json!({}));
        assert_ne!(
            plain,
            Ok(by_flag.clone()),
            "--{} changes nothing here",
            key.flag
        );
        assert_eq!(by_key, by_flag, "{} is not --{}", key.key, key.flag);
    }
}

#[test]
fn the_reference_lists_every_extension_key_the_code_reads() {
    // The keys read in src/config/: the string literals handed to the extension's typed reads
    // (`ext.string("issuerURL")`, …, and the shared login's `list(&args.…, "loginScopes")`).
    let mut files = Vec::new();
    rust_files(&repo_root().join("src/config"), &mut files);
    let mut read_keys = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let source = SourceText::new(&text);
        let tests = source.test_only_ranges();
        for literal in &source.literals {
            if tests.iter().any(|range| range.contains(&literal.at)) {
                continue;
            }
            let before = source.code[..literal.at].trim_end();
            let reader = ["ext.string(", "ext.bool(", "ext.string_list("]
                .iter()
                .any(|call| before.ends_with(call));
            let listed = before.ends_with(',') && {
                let line = &before[before.rfind('\n').unwrap_or(0)..];
                line.contains("list(&args.")
            };
            if reader || listed {
                read_keys.push(literal.text.clone());
            }
        }
    }
    read_keys.sort();
    read_keys.dedup();
    let mut listed: Vec<String> = EXTENSION_KEYS.iter().map(|key| key.key.into()).collect();
    listed.sort();
    assert_eq!(
        read_keys, listed,
        "the keys src/config/ reads, and the page's"
    );
}
