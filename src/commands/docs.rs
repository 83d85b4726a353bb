//! `kubecred completion SHELL` and `kubecred man`: generated from the clap definitions in
//! `cli.rs`, so they never drift from the real flags. Only these commands touch clap_complete
//! and clap_mangen; get-token's fast parse never builds the full command tree.

use crate::cli::{Cli, ShellArg};
use crate::error::{fail, Exit};
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;

/// The completion script for `shell`, for stdout.
pub(super) fn completion(shell: ShellArg) -> anyhow::Result<Option<String>> {
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
        ShellArg::Powershell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubecred", &mut script);
    String::from_utf8(script)
        .map(Some)
        .map_err(|_| fail(Exit::Input, "the completion script is not UTF-8"))
}

/// The man page (roff) for stdout: the main page, then each command's synopsis, options and
/// examples under a heading of its own.
pub(super) fn man() -> anyhow::Result<Option<String>> {
    let mut command = Cli::command();
    command.build();
    let mut page = Vec::new();
    let render = |page: &mut Vec<u8>| -> std::io::Result<()> {
        clap_mangen::Man::new(command.clone()).render(page)?;
        for sub in command.get_subcommands() {
            let name = format!("kubecred {}", sub.get_name());
            writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
            let man = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
            man.render_synopsis_section(page)?;
            man.render_description_section(page)?;
            man.render_options_section(page)?;
            man.render_extra_section(page)?;
        }
        Ok(())
    };
    render(&mut page).map_err(|err| fail(Exit::Input, format!("writing the man page: {err}")))?;
    String::from_utf8(page)
        .map(Some)
        .map_err(|_| fail(Exit::Input, "the man page is not UTF-8"))
}
