//! The conversion tables of docs/switching.md (Migrating from int128/kubelogin, from Azure
//! kubelogin; README's once, hence the name) checked against the code, so that they cannot name
//! a flag a peer does not have, leave out one it has, or promise a kubecred flag that does not
//! exist: the left column against the flag tables
//! `convert-kubeconfig` reads the peers' stanzas with (`kubelogin::command_line`, `azure.rs`),
//! the right column against get-token's clap definition.

use crate::peers::pflag::Flag;

/// The table after `marker` in docs/switching.md: its rows' two cells.
fn table(readme: &str, marker: &str) -> Vec<(String, String)> {
    let start = readme
        .find(marker)
        .unwrap_or_else(|| panic!("docs/switching.md has no {marker}"));
    readme[start..]
        .lines()
        .skip(1)
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 2, "{line}");
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect()
}

/// The flags a cell names in backticks: each word that starts with `-`, without its value
/// (`--grant-type=password` is `--grant-type`, `-v1` is `-v`).
fn flags_named(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(str::split_whitespace)
        .filter(|word| word.starts_with('-'))
        .map(|word| {
            let word = word.split('=').next().unwrap_or(word);
            match word.strip_prefix("--") {
                Some(_) => word.to_string(),
                None => word.chars().take(2).collect(),
            }
        })
        .collect()
}

/// Whether `flag` (`--name` or `-x`) is in `table`.
fn in_table(flag: &str, table: &[Flag]) -> bool {
    match flag.strip_prefix("--") {
        Some(name) => table.iter().any(|f| f.name == name),
        None => {
            let short = flag.chars().nth(1);
            table.iter().any(|f| f.short.is_some() && f.short == short)
        }
    }
}

/// get-token's flags as clap defines them: long names and aliases, and `-v`/`-vv`.
fn kubecred_flags() -> Vec<String> {
    use clap::CommandFactory;
    let mut command = crate::cli::Cli::command();
    command.build();
    let get_token = command.find_subcommand("get-token").unwrap();
    let mut flags = vec!["-v".to_string()];
    for arg in get_token.get_arguments() {
        flags.extend(arg.get_long().map(|long| format!("--{long}")));
        flags.extend(
            arg.get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(|alias| format!("--{alias}")),
        );
    }
    flags
}

fn check(marker: &str, peer: &[Flag]) {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/switching.md"),
    )
    .unwrap();
    let rows = table(&page, marker);
    assert!(
        rows.len() >= 15,
        "docs/switching.md's {marker}: {} rows read",
        rows.len()
    );
    let kubecred = kubecred_flags();
    let mut named = Vec::new();
    for (theirs, ours) in &rows {
        for flag in flags_named(theirs) {
            assert!(
                in_table(&flag, peer),
                "docs/switching.md's {marker} names {flag}, which the peer does not have"
            );
            named.push(flag);
        }
        for flag in flags_named(ours) {
            assert!(
                kubecred.contains(&flag),
                "docs/switching.md's {marker} promises {flag}, which kubecred's get-token does not have"
            );
        }
    }
    for flag in peer
        .iter()
        .filter(|flag| flag.name != "help" && flag.name != "version")
    {
        let long = format!("--{}", flag.name);
        assert!(
            named.contains(&long) || flag.short.is_some_and(|c| named.contains(&format!("-{c}"))),
            "docs/switching.md's {marker} leaves out {long}"
        );
    }
}

#[test]
fn readme_tables_name_only_real_flags() {
    use crate::peers::kubelogin::command_line::{KLOG_FLAGS, get_token_flags};
    let mut kubelogin = get_token_flags();
    kubelogin.extend(KLOG_FLAGS);
    check("<!-- kubelogin-table", &kubelogin);
    let azure: Vec<Flag> = crate::peers::azure_kubelogin::GET_TOKEN_FLAGS
        .iter()
        .chain(&crate::peers::azure_kubelogin::GLOBAL_FLAGS)
        .copied()
        .collect();
    check("<!-- azure-table", &azure);
}

#[test]
fn a_flag_no_peer_has_is_caught() {
    let names = flags_named("`--tls-renegotiation`, `-v1`, `--grant-type=password` (`auto`)");
    assert_eq!(names, ["--tls-renegotiation", "-v", "--grant-type"]);
    let kubelogin = crate::peers::kubelogin::command_line::get_token_flags();
    assert!(!in_table("--tls-renegotiation", &kubelogin));
    assert!(in_table("--tls-renegotiation-once", &kubelogin));
}
