//! Exit codes, and the error that carries one.
//!
//! Most code returns `anyhow::Result` and adds context where it reports. Where a failure must end
//! the process with a particular exit code, it is created with [`fail`]; `main` finds the code by
//! walking the error chain, so contexts added above it do not hide it. Every failure path gives
//! its error a class: one without is a bug, which debug builds (and so every test) stop on, and
//! release builds report as bad input (exit 1).

use std::fmt;

/// The process exit codes, as documented in docs/exit-codes.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Bad input or settings: KUBERNETES_EXEC_INFO, flags, environment, cluster extension, files.
    Input = 1,
    /// The command line could not be parsed (clap's own code).
    Usage = 2,
    /// The identity provider refused, or could not be reached.
    Provider = 3,
    /// A login was needed and could not happen: non-interactive session, timeout, denied, cool-down.
    Login = 4,
    /// The token cache: a lock wait timed out, the keyring is unreachable, a write failed.
    Cache = 5,
}

/// An error with an exit code. Its message is one line that says what failed and what to do.
#[derive(Debug)]
pub struct ExitError {
    pub exit: Exit,
    pub message: String,
    /// The failure says nothing about the cached token or the settings: the provider was
    /// unreachable, timed out, answered 429, 5xx or something that is not OAuth, or a login
    /// cannot happen in this session. A cached token that is still valid may then be handed out
    /// (stale-if-error, `acquire`). A refusal of the request (`invalid_client`, `invalid_grant`)
    /// is never transient.
    pub transient: bool,
}

impl fmt::Display for ExitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// Builds an error that ends the process with `exit`.
pub fn fail(exit: Exit, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(ExitError {
        exit,
        message: message.into(),
        transient: false,
    })
}

/// Builds a provider failure that is an outage, not a refusal: see [`ExitError::transient`].
pub fn outage(message: impl Into<String>) -> anyhow::Error {
    transient(Exit::Provider, message)
}

/// Builds a [transient](ExitError::transient) error that ends the process with `exit`.
pub fn transient(exit: Exit, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(ExitError {
        exit,
        message: message.into(),
        transient: true,
    })
}

/// Whether the first [`ExitError`] in the chain is [transient](ExitError::transient).
pub fn is_transient(error: &anyhow::Error) -> bool {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<ExitError>())
        .is_some_and(|failure| failure.transient)
}

/// The exit code for an error: the first [`ExitError`] in its chain.
///
/// An error with none is a failure path that forgot its class: a debug build panics here so
/// that the test which reached it fails, naming the error; a release build says "bad input".
pub fn exit_code_of(error: &anyhow::Error) -> Exit {
    let class = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<ExitError>())
        .map(|failure| failure.exit);
    debug_assert!(
        class.is_some(),
        "an error without an exit class (create it with error::fail): {error:#}"
    );
    class.unwrap_or(Exit::Input)
}

/// Formats an error chain as the single stderr line kubecred prints: contexts joined by ": ",
/// with any line breaks an upstream error carried folded into spaces.
pub fn one_line(error: &anyhow::Error) -> String {
    let joined = format!("{error:#}")
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    // The last line of defence for text a provider sent (an error description, a header): no
    // ESC, BEL or other control character reaches the terminal.
    crate::text::printable(&joined).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn exit_code_survives_context() {
        let err: anyhow::Result<()> = Err(fail(Exit::Provider, "token endpoint said no"));
        let err = err.context("refreshing the token").unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert_eq!(
            one_line(&err),
            "refreshing the token: token endpoint said no"
        );
    }

    #[test]
    fn transience_survives_context_and_plain_failures_are_not_transient() {
        let err: anyhow::Result<()> = Err(outage("connection refused"));
        let err = err.context("refreshing the token").unwrap_err();
        assert!(is_transient(&err));
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(!is_transient(&fail(Exit::Provider, "invalid_client")));
        assert!(!is_transient(&anyhow::anyhow!("no class")));
    }

    #[test]
    fn one_line_folds_line_breaks() {
        let err = fail(Exit::Input, "line one\nline two");
        assert_eq!(one_line(&err), "line one line two");
    }

    #[test]
    fn the_exit_codes_page_lists_every_exit_code() {
        // The match has no wildcard: a new class fails to compile here until the page has it.
        let code = |exit: Exit| match exit {
            Exit::Input | Exit::Usage | Exit::Provider | Exit::Login | Exit::Cache => exit as i32,
        };
        let mut codes = vec![0];
        codes.extend(
            [
                Exit::Input,
                Exit::Usage,
                Exit::Provider,
                Exit::Login,
                Exit::Cache,
            ]
            .map(code),
        );
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exit-codes.md"),
        )
        .unwrap();
        let listed: Vec<i32> = page
            .lines()
            .skip_while(|line| !line.starts_with("| code | meaning |"))
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|line| line.split('|').nth(1).unwrap().trim().parse().unwrap())
            .collect();
        assert_eq!(listed, codes, "docs/exit-codes.md's table");
    }

    #[test]
    #[should_panic(expected = "an error without an exit class")]
    fn an_error_without_a_class_is_a_bug_debug_builds_stop_on() {
        exit_code_of(&anyhow::anyhow!("unclassified"));
    }
}
