//! The environment a run's settings are resolved in, besides its flags: the variables that are
//! not flags (`env_vars.rs`), the secret-carrying flags seen on the command line, the proxy
//! variables, and where the per-user cache directory is when a kubeconfig stanza's `env` moves
//! it. Held in one value so that tests (and `whoami`, `convert-kubeconfig`, which resolve a
//! stanza's settings) resolve a config without touching the process environment.

use super::SecretOnCommandLine;
use super::{ProxyEnvironment, secret_flags_on_command_line};
use crate::env_vars;
use crate::secret::Secret;
use std::path::PathBuf;

/// Reads the environment variables that are not flags (see `env_vars.rs`) so that tests can
/// resolve a config without touching the process environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub verbose: Option<String>,
    pub browser: Option<String>,
    /// KUBECRED_PASSWORD, for `--grant-type password`.
    pub password: Option<Secret>,
    /// KUBECRED_CLIENT_PRIVATE_KEY: a PEM key for `private_key_jwt`.
    pub client_private_key: Option<Secret>,
    /// Secret-carrying flags seen in the process's arguments (see
    /// [`secret_flags_on_command_line`]).
    pub secrets_on_command_line: Vec<SecretOnCommandLine>,
    /// The proxy variables (`HTTPS_PROXY`, `NO_PROXY`, …), for the HTTP client.
    pub proxy: ProxyEnvironment,
    /// The variables that say which Google credentials a `--grant-type google` run takes
    /// (`env_vars::GOOGLE_KEY_VARIABLES`, those set): its cache key holds them.
    pub google: Vec<(&'static str, String)>,
    /// The per-user cache directory where this environment's variables move it away from this
    /// process's (a kubeconfig stanza's `env` setting `HOME` or `XDG_CACHE_HOME`); `None`: the
    /// one the `directories` crate finds for this process.
    pub user_cache_dir: Option<PathBuf>,
}

impl Environment {
    /// This process's environment, reading its command line again: for a caller that was not
    /// handed it ([`Environment::of_process`]).
    pub fn from_process() -> Self {
        Environment::of_process(&std::env::args_os().collect::<Vec<_>>())
    }

    /// This process's environment, with `argv` the command line it was run with (read once, at
    /// the top: `process/mod.rs`). On the cache-hit path: each variable is read once.
    pub fn of_process(argv: &[std::ffi::OsString]) -> Self {
        Self::read(&|name| std::env::var_os(name), argv, false)
    }

    /// The environment whose variables `var` answers (a kubeconfig stanza's `env` over this
    /// process's: `whoami`, `convert-kubeconfig`), with `argv` the command line that runs it.
    pub fn with_variables(
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
        argv: &[std::ffi::OsString],
    ) -> Self {
        let moved = [env_vars::HOME, env_vars::XDG_CACHE_HOME]
            .iter()
            .any(|name| var(name) != std::env::var_os(name));
        Self::read(&var, argv, moved)
    }

    /// The environment of `var`; `moved`: its `HOME` or `XDG_CACHE_HOME` is not this process's,
    /// so the per-user cache directory is found in it.
    fn read(
        var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        argv: &[std::ffi::OsString],
        moved: bool,
    ) -> Self {
        let text = |name: &str| var(name).and_then(|value| value.into_string().ok());
        let secret = |name| {
            text(name)
                .filter(|value| !value.trim().is_empty())
                .map(Secret::new)
        };
        Environment {
            user_cache_dir: if moved { user_cache_dir_in(var) } else { None },
            verbose: text(env_vars::KUBECRED_VERBOSE),
            browser: text(env_vars::BROWSER),
            password: secret(env_vars::KUBECRED_PASSWORD),
            client_private_key: secret(env_vars::KUBECRED_CLIENT_PRIVATE_KEY),
            secrets_on_command_line: secret_flags_on_command_line(argv),
            proxy: ProxyEnvironment {
                variables: env_vars::PROXY_VARIABLES
                    .iter()
                    .flatten()
                    .filter_map(|name| Some((*name, Secret::new(text(name)?))))
                    .collect(),
                system_settings: true,
            },
            google: env_vars::GOOGLE_KEY_VARIABLES
                .iter()
                .filter_map(|name| Some((*name, text(name).filter(|v| !v.is_empty())?)))
                .collect(),
        }
    }
}

/// The per-user cache directory as the `directories` crate finds it, in an environment of
/// `var` rather than this process's (the crate reads only this process's): for a kubeconfig
/// stanza whose `env` moves it. `None` where the place is not the environment's to say (Windows:
/// the known folder), or without a home directory.
fn user_cache_dir_in(var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if cfg!(windows) {
        return None;
    }
    let home = var(env_vars::HOME)
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let base = if cfg!(target_os = "macos") {
        home?.join("Library/Caches")
    } else {
        match var(env_vars::XDG_CACHE_HOME).map(PathBuf::from) {
            Some(xdg) if xdg.is_absolute() => xdg,
            _ => home?.join(".cache"),
        }
    };
    Some(base.join("kubecred"))
}
