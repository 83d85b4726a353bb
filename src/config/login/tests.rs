//! The settings of a login without a terminal: the hold-off and desktop notifications.

use super::super::{Config, Environment, Notify};
use super::resolve_notify;
use crate::cli::{Cli, Command, TokenArgs};
use crate::error::{Exit, exit_code_of};
use crate::exec_credential::ExecInfo;
use clap::Parser;
use std::time::Duration;

fn args(extra: &[&str]) -> TokenArgs {
    let mut argv = vec![
        "kubecred",
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=k",
    ];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::GetToken(args) => args,
        _ => unreachable!(),
    }
}

fn login_of(extra: &[&str]) -> anyhow::Result<crate::config::LoginSettings> {
    Config::resolve(&args(extra), &Environment::default(), ExecInfo::absent())
        .map(|config| config.login)
}

#[test]
fn by_default_failures_notify_and_the_holdoff_is_ten_minutes() {
    let login = login_of(&[]).unwrap();
    assert_eq!(login.notify, Notify::Failures);
    assert_eq!(login.holdoff, Duration::from_secs(600));
}

#[test]
fn the_flags_set_them() {
    let login = login_of(&["--notify=never", "--login-holdoff=30m"]).unwrap();
    assert_eq!(login.notify, Notify::Never);
    assert_eq!(login.holdoff, Duration::from_secs(1800));
    assert_eq!(
        login_of(&["--login-holdoff=0"]).unwrap().holdoff,
        Duration::ZERO
    );
    let err = login_of(&["--login-holdoff=soon"]).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert!(err.to_string().starts_with("--login-holdoff: "), "{err}");
}

#[test]
fn the_cluster_extension_sets_notify_below_the_flag() {
    let never = || Some("never".to_string());
    assert_eq!(resolve_notify(&args(&[]), never()).unwrap(), Notify::Never);
    assert_eq!(
        resolve_notify(&args(&["--notify=failures"]), never()).unwrap(),
        Notify::Failures
    );
    assert_eq!(resolve_notify(&args(&[]), None).unwrap(), Notify::Failures);
    let err = resolve_notify(&args(&[]), Some("always".into())).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert!(
        err.to_string()
            .contains("notify \"always\" is neither \"never\" nor \"failures\""),
        "{err}"
    );
}
