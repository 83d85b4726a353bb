//! `kubecred completion SHELL` and `kubecred man`: generated from the clap definitions in
//! `cli/`, so they never drift from the real flags. Only these commands touch clap_complete
//! and clap_mangen; get-token's fast parse never builds the full command tree.

use crate::cli::{Cli, ShellArg};
use crate::error::{Exit, fail};
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
    clap_complete::generate(shell, &mut completed_command(), "kubecred", &mut script);
    String::from_utf8(script)
        .map(Some)
        .map_err(|_| fail(Exit::Input, "the completion script is not UTF-8"))
}

/// The command line the completion scripts offer: kubecred's, without its hidden commands
/// (`renew-ahead`, which only kubecred runs): clap_complete offers hidden subcommands too.
fn completed_command() -> clap::Command {
    let full = Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("kubecred")
        .version(crate::cli::VERSION)
        .subcommands(visible)
}

/// The man page (roff) for stdout: one page, `kubecred(1)`, that documents every command under
/// a heading of its own (clap_mangen's default refers to a `kubecred-get-token(1)` page per
/// command, which nobody ships). Backtick spans of the help texts become bold: roff would show
/// the backticks themselves.
pub(super) fn man() -> anyhow::Result<Option<String>> {
    // The version and commit only: --version's other lines (target, compiler) are the binary's
    // that wrote the page, and every archive ships the same page.
    let mut command = Cli::command().long_version(None);
    command.build();
    let page = man_page(&command)
        .map_err(|err| fail(Exit::Input, format!("writing the man page: {err}")))?;
    Ok(Some(page))
}

fn man_page(command: &clap::Command) -> std::io::Result<String> {
    let man = clap_mangen::Man::new(command.clone());
    let commands: Vec<&clap::Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .collect();
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    writeln!(
        page,
        ".SH SYNOPSIS\n\\fBkubecred\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]"
    )?;
    man.render_description_section(&mut page)?;
    writeln!(page, ".SH COMMANDS")?;
    for sub in &commands {
        let about = sub
            .get_about()
            .map(|about| about.to_string())
            .unwrap_or_default();
        writeln!(
            page,
            ".TP\n\\fBkubecred {name}\\fR\n{about}. See \\fBKUBECRED {upper}\\fR below.",
            name = sub.get_name(),
            about = roff_text(&about),
            upper = sub.get_name().to_uppercase(),
        )?;
    }
    render_examples(&mut page, command, ".SH EXAMPLES")?;
    for sub in &commands {
        let name = format!("kubecred {}", sub.get_name());
        writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
        let man = clap_mangen::Man::new((*sub).clone().bin_name(name));
        let mut part = Vec::new();
        man.render_synopsis_section(&mut part)?;
        man.render_description_section(&mut part)?;
        man.render_options_section(&mut part)?;
        // Each command's sections are subsections of its own heading.
        for line in String::from_utf8_lossy(&part).lines() {
            match line.strip_prefix(".SH ") {
                Some(title) => writeln!(page, ".SS {}", title_case(title))?,
                None => writeln!(page, "{line}")?,
            }
        }
        render_examples(&mut page, sub, ".SS Examples")?;
    }
    man.render_version_section(&mut page)?;
    let page =
        String::from_utf8(page).map_err(|_| std::io::Error::other("the man page is not UTF-8"))?;
    Ok(code_spans_in_bold(&page))
}

/// The examples of a command's help (its `after_help`, which starts with `Examples:`), as a
/// section that keeps their lines and indentation.
fn render_examples(
    page: &mut Vec<u8>,
    command: &clap::Command,
    heading: &str,
) -> std::io::Result<()> {
    let Some(text) = command.get_after_help().map(|text| text.to_string()) else {
        return Ok(());
    };
    writeln!(page, "{heading}\n.nf")?;
    for line in text.lines().skip_while(|line| line.starts_with("Example")) {
        writeln!(page, "{}", roff_text(line))?;
    }
    writeln!(page, ".fi")
}

/// Text as a roff text line: backslashes and hyphens escaped, and a leading `.` or `'` (which
/// roff would read as a request) protected.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// `SYNOPSIS` → `Synopsis`.
fn title_case(title: &str) -> String {
    let title = title.trim_matches('"').to_lowercase();
    let mut chars = title.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `` `kubecred get-token` `` → `\fBkubecred get-token\fR` on every text line with pairs of
/// backticks (help texts mark commands and flags that way); request lines are left alone.
fn code_spans_in_bold(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    for line in page.lines() {
        let pairs = line.matches('`').count();
        if line.starts_with('.') || pairs == 0 || pairs % 2 == 1 {
            out.push_str(line);
        } else {
            for (index, piece) in line.split('`').enumerate() {
                if index > 0 {
                    out.push_str(if index % 2 == 1 { "\\fB" } else { "\\fR" });
                }
                out.push_str(piece);
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_offer_every_command_but_the_hidden_ones() {
        for shell in [
            ShellArg::Bash,
            ShellArg::Zsh,
            ShellArg::Fish,
            ShellArg::Powershell,
        ] {
            let script = completion(shell).unwrap().unwrap();
            for command in [
                "get-token",
                "convert-kubeconfig",
                "issuer-url",
                "request-header",
            ] {
                assert!(script.contains(command), "{shell:?} lacks {command}");
            }
            assert!(
                !script.contains("renew-ahead"),
                "{shell:?} offers renew-ahead"
            );
            assert!(!script.contains("lock-fd"), "{shell:?} offers --lock-fd");
        }
    }

    #[test]
    fn backtick_spans_become_bold_and_odd_ones_stay() {
        assert_eq!(
            code_spans_in_bold("runs `kubecred get\\-token` from a `exec` stanza\n"),
            "runs \\fBkubecred get\\-token\\fR from a \\fBexec\\fR stanza\n"
        );
        assert_eq!(code_spans_in_bold("it's `odd\n"), "it's `odd\n");
    }

    #[test]
    fn text_lines_cannot_become_requests() {
        assert_eq!(roff_text(".SH x"), "\\&.SH x");
        assert_eq!(roff_text("a\\b-c"), "a\\eb\\-c");
    }
}
