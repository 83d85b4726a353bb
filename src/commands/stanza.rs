//! kubecred's own exec stanza, from both ends. Written: the stanza `setup` prints and
//! `setup --write-kubeconfig` and `convert-kubeconfig` put into kubeconfigs
//! ([`kubecred_stanza`]: get-token's settings as its args, [`exec_args`]; kubectl's terminal
//! handed over when a person may be asked to log in). Read: the settings a stanza runs with
//! ([`resolve`]: `whoami`, and `convert-kubeconfig` before it writes one), its args and `env`
//! resolved as get-token will resolve them when kubectl runs it — in the environment kubectl
//! gives the plugin, the stanza's `env` over this process's, which is read, never changed.

use crate::cli::{self, TokenArgs};
use crate::config::{Config, Environment};
use crate::exec_credential::ExecInfo;
use crate::kubeconfig::{EnvVar, ExecStanza, InteractiveMode};
use clap::ValueEnum;
use std::ffi::OsString;
use std::path::Path;

/// kubecred as a kubeconfig user's exec stanza: `command` running `args` (get-token first) with
/// `env`. A person may be asked to log in (browser, device code, a pasted code) when
/// `user_login`: kubectl then hands over its terminal when it has one; a grant without a person
/// reads nothing.
pub(super) fn kubecred_stanza(
    api_version: &str,
    command: String,
    args: Vec<String>,
    env: Vec<EnvVar>,
    user_login: bool,
) -> ExecStanza {
    ExecStanza {
        api_version: Some(api_version.to_string()),
        command,
        args,
        env,
        interactive_mode: Some(if user_login {
            InteractiveMode::IfAvailable
        } else {
            InteractiveMode::Never
        }),
        provide_cluster_info: None,
        install_hint: None,
    }
}

/// `get-token` and the settings given (to setup, or read from another plugin's stanza by
/// convert-kubeconfig), as a kubeconfig `args` list. Paths become absolute (kubectl runs the
/// plugin from wherever it is). A client secret given as a value is never written out, nor are
/// request headers' values (an API key): setup's stanza gets a placeholder in `env` instead
/// (`setup/advice.rs`, `exec_env`), convert's the secret itself.
pub(super) fn exec_args(args: &TokenArgs) -> Vec<String> {
    let mut out = ArgsList(vec!["get-token".to_string()]);
    provider_and_target(&mut out, args);
    cache_and_network(&mut out, args);
    person_login(&mut out, args);
    ci_grants(&mut out, &args.federation);
    clouds(&mut out, &args.clouds);
    out.0
}

/// Who logs in where, and for what: the provider, the client, the grant, the token asked for
/// and the cluster's target.
fn provider_and_target(out: &mut ArgsList, args: &TokenArgs) {
    out.flag("issuer-url", args.issuer_url.clone());
    out.flag("client-id", args.client_id.clone());
    out.path("client-secret-file", args.client_secret_file.as_deref());
    out.each("scope", &args.scopes);
    out.choice("grant-type", args.grant_type);
    out.on_off("use-access-token", args.use_access_token);
    out.flag("audience", args.audience.clone());
    out.flag("resource", args.resource.clone());
    out.flag("target-scope", args.target_scope.clone());
    out.on_off("shared-login", args.shared_login);
    out.choice("derive", args.derive);
    out.each("login-resource", &args.login_resources);
    out.each("login-scope", &args.login_scopes);
    out.choice("client-auth-method", args.client_auth_method);
}

/// Where tokens are kept and when they are renewed; how the provider is reached.
fn cache_and_network(out: &mut ArgsList, args: &TokenArgs) {
    out.path("cache-dir", args.cache.cache_dir.as_deref());
    out.choice("cache-storage", args.cache_storage);
    for ca in &args.certificate_authority {
        out.path("certificate-authority", Some(ca));
    }
    out.each(
        "certificate-authority-data",
        &args.certificate_authority_data,
    );
    out.on_off("insecure-skip-tls-verify", args.insecure_skip_tls_verify);
    out.flag("min-validity", args.min_validity.clone());
    out.flag("refresh-ahead", args.refresh_ahead.clone());
    out.flag("http-timeout", args.http_timeout.clone());
    out.flag("lock-timeout", args.lock_timeout.clone());
}

/// How a person logs in: the browser, its redirect and the account.
fn person_login(out: &mut ArgsList, args: &TokenArgs) {
    out.flag("redirect-url", args.redirect_url.clone());
    out.each("listen-address", &args.listen_address);
    out.flag("pkce", args.pkce.map(|on| on.to_string()));
    out.flag("browser-command", args.browser_command.clone());
    out.on_off("skip-open-browser", args.skip_open_browser);
    out.flag("auth-timeout", args.auth_timeout.clone());
    out.flag("login-cooldown", args.login_cooldown.clone());
    out.flag("login-holdoff", args.login_holdoff.clone());
    out.choice("notify", args.notify);
    out.each("auth-param", &args.auth_params);
    out.path("local-server-cert", args.local_server_cert.as_deref());
    out.path("local-server-key", args.local_server_key.as_deref());
    out.flag("account", args.account.clone());
    out.flag("login-hint", args.login_hint.clone());
    out.flag("prompt", args.prompt.clone());
}

/// The CI grants' and client assertions' settings, and the password grant's.
fn ci_grants(out: &mut ArgsList, ci: &cli::FederationArgs) {
    out.path("subject-token-file", ci.subject_token_file.as_deref());
    out.flag("subject-token-env", ci.subject_token_env.clone());
    out.choice("subject-token-source", ci.subject_token_source);
    out.flag("subject-token-audience", ci.subject_token_audience.clone());
    out.flag("subject-token-type", ci.subject_token_type.clone());
    out.flag("requested-token-type", ci.requested_token_type.clone());
    out.flag("token-endpoint", ci.token_endpoint.clone());
    out.path(
        "client-private-key-file",
        ci.client_private_key_file.as_deref(),
    );
    out.flag("client-key-id", ci.client_key_id.clone());
    out.path("client-assertion-file", ci.client_assertion_file.as_deref());
    out.flag("client-assertion-env", ci.client_assertion_env.clone());
    out.choice("client-assertion-source", ci.client_assertion_source);
    out.flag(
        "client-assertion-audience",
        ci.client_assertion_audience.clone(),
    );
    out.flag(
        "gitlab-id-token-variable",
        ci.gitlab_id_token_variable.clone(),
    );
    out.flag("username", ci.username.clone());
    out.path("password-file", ci.password_file.as_deref());
}

/// The managed clusters' cloud settings.
fn clouds(out: &mut ArgsList, clouds: &cli::CloudArgs) {
    out.path("google-credentials", clouds.google_credentials.as_deref());
    out.choice("google-source", clouds.google_source);
    out.flag(
        "google-gcloud-account",
        clouds.google_gcloud_account.clone(),
    );
    out.flag(
        "google-gcloud-project",
        clouds.google_gcloud_project.clone(),
    );
    out.flag(
        "google-gcloud-impersonate-service-account",
        clouds.google_gcloud_impersonate_service_account.clone(),
    );
    out.flag(
        "google-workforce-provider",
        clouds.google_workforce_provider.clone(),
    );
    out.flag("google-user-project", clouds.google_user_project.clone());
    out.flag("google-sts-url", clouds.google_sts_url.clone());
}

/// A kubeconfig `args` list being written, one `--name=value` word a flag.
struct ArgsList(Vec<String>);

impl ArgsList {
    /// `--name=value`; an empty value is a switch, printed alone.
    fn flag(&mut self, name: &str, value: Option<String>) {
        match value {
            Some(value) if value.is_empty() => self.0.push(format!("--{name}")),
            Some(value) => self.0.push(format!("--{name}={value}")),
            None => {}
        }
    }

    /// The flag once for each value.
    fn each(&mut self, name: &str, values: &[String]) {
        for value in values {
            self.flag(name, Some(value.clone()));
        }
    }

    /// A path made absolute: kubectl runs the plugin from wherever it is.
    fn path(&mut self, name: &str, path: Option<&Path>) {
        let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.into());
        self.flag(name, path.map(|path| absolute(path).display().to_string()));
    }

    /// An on/off flag: alone when on, `=false` when off.
    fn on_off(&mut self, name: &str, value: Option<bool>) {
        self.flag(name, value.map(|on| if on { "" } else { "false" }.into()));
    }

    /// A value enum's value, by the name clap takes.
    fn choice(&mut self, name: &str, value: Option<impl ValueEnum>) {
        self.flag(
            name,
            value.and_then(|value| Some(value.to_possible_value()?.get_name().to_string())),
        );
    }
}

/// Why a stanza's settings cannot be resolved.
#[derive(Debug)]
pub(super) enum Unresolved {
    /// Its args do not run `get-token`.
    NotGetToken,
    /// Its args (or a `KUBECRED_*` variable of its env) are refused: clap's usage line.
    Usage(String),
    /// The settings are refused (`Config::resolve`'s error).
    Settings(anyhow::Error),
}

/// The settings get-token will resolve when kubectl runs a stanza of `args` (get-token first)
/// and `env` with `exec` as its KUBERNETES_EXEC_INFO: flags, `KUBECRED_*` variables and the
/// variables read outside clap (`env_vars.rs`: the proxies, the password, …) as kubectl's plugin
/// would see them.
pub(super) fn resolve(
    args: &[String],
    env: &[EnvVar],
    exec: ExecInfo,
) -> Result<Config, Unresolved> {
    let var = |name: &str| plugin_variable(env, name);
    let mut argv = vec![OsString::from("kubecred")];
    argv.extend(args.iter().map(OsString::from));
    let token_args = match cli::parse_stanza_get_token_in(argv.clone(), &var) {
        Ok(Some(token_args)) => token_args,
        Ok(None) => return Err(Unresolved::NotGetToken),
        Err(err) => {
            return Err(Unresolved::Usage(cli::usage_error_line_in(
                &err, &argv, &var,
            )));
        }
    };
    Config::resolve(&token_args, &Environment::with_variables(var, &argv), exec)
        .map_err(Unresolved::Settings)
}

/// A variable as the plugin kubectl runs for the stanza sees it: client-go appends the
/// stanza's `env` to kubectl's own environment, and the last definition of a name wins
/// (regardless of case on Windows, as names are there).
fn plugin_variable(env: &[EnvVar], name: &str) -> Option<OsString> {
    let same = |given: &str| {
        if cfg!(windows) {
            given.eq_ignore_ascii_case(name)
        } else {
            given == name
        }
    };
    match env.iter().rev().find(|var| same(&var.name)) {
        Some(var) => Some(OsString::from(var.value.expose())),
        None => std::env::var_os(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<EnvVar> {
        pairs.iter().map(|(n, v)| EnvVar::new(*n, *v)).collect()
    }

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_stanzas_env_fills_its_flags_and_the_variables_read_outside_clap() {
        let config = resolve(
            &words("get-token --issuer-url=https://idp.example --scope=from-args"),
            &env(&[
                ("KUBECRED_CLIENT_ID", "from-env"),
                ("KUBECRED_SCOPE", "ignored,as-args-give-it"),
                ("KUBECRED_USE_ACCESS_TOKEN", "yes"),
                ("KUBECRED_INSECURE_SKIP_TLS_VERIFY", "off"),
                ("KUBECRED_VERBOSE", "2"),
                ("HTTPS_PROXY", "http://first.example:3128"),
                ("HTTPS_PROXY", "http://proxy.example:3128"),
            ]),
            ExecInfo::absent(),
        )
        .unwrap();
        assert_eq!(config.client.id, "from-env");
        assert!(config.scopes.contains(&"from-args".to_string()));
        assert!(!config.scopes.iter().any(|s| s.contains("as-args-give-it")));
        assert_eq!(config.token_kind, crate::config::TokenKind::AccessToken);
        assert!(!config.http.tls.insecure_skip_verify);
        assert_eq!(config.verbose, 2);
        let proxy: Vec<_> = config
            .http
            .proxy
            .variables
            .iter()
            .filter(|(name, _)| *name == "HTTPS_PROXY")
            .map(|(_, value)| value.expose().to_string())
            .collect();
        assert_eq!(
            proxy,
            ["http://proxy.example:3128"],
            "the last definition wins"
        );
    }

    /// A stanza's env that moves the home or cache directory moves kubecred's cache as it
    /// moves the plugin's, which `directories` (reading only this process) would not see.
    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn a_stanzas_home_and_cache_variables_move_the_cache_directory() {
        let dir = |vars: &[(&str, &str)]| {
            resolve(
                &words("get-token --issuer-url=https://idp.example --client-id=c"),
                &env(vars),
                ExecInfo::absent(),
            )
            .unwrap()
            .cache
            .dir
        };
        assert_eq!(
            dir(&[("XDG_CACHE_HOME", "/srv/xdg")]),
            std::path::PathBuf::from("/srv/xdg/kubecred")
        );
        assert_eq!(
            dir(&[("HOME", "/home/other"), ("XDG_CACHE_HOME", "")]),
            std::path::PathBuf::from("/home/other/.cache/kubecred")
        );
        assert_eq!(
            dir(&[("HOME", "/home/other"), ("KUBECRED_CACHE_DIR", "/srv/kc")]),
            std::path::PathBuf::from("/srv/kc")
        );
        // Where it sets neither, the cache is where `directories` puts this process's.
        assert_eq!(
            dir(&[]),
            crate::config::resolve_cache_dir(&Default::default()).unwrap()
        );
    }

    #[test]
    fn a_stanza_kubecred_refuses_says_why() {
        let refused = |args: &str, vars: &[(&str, &str)]| {
            resolve(&words(args), &env(vars), ExecInfo::absent()).unwrap_err()
        };
        assert!(matches!(refused("status", &[]), Unresolved::NotGetToken));
        match refused(
            "get-token --issuer-url=https://i --client-id=c --bogus",
            &[],
        ) {
            Unresolved::Usage(line) => assert!(line.contains("--bogus"), "{line}"),
            other => panic!("{other:?}"),
        }
        match refused(
            "get-token --issuer-url=https://i --client-id=c",
            &[("KUBECRED_SKIP_OPEN_BROWSER", "maybe")],
        ) {
            Unresolved::Usage(line) => assert!(
                line.starts_with(
                    "invalid value 'maybe' in KUBECRED_SKIP_OPEN_BROWSER (for --skip-open-browser)"
                ),
                "{line}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            refused("get-token --client-id=c", &[]),
            Unresolved::Settings(_)
        ));
    }

    /// Every get-token switch that reads a variable does so with clap's on/off parser, which
    /// [`cli::parse_stanza_get_token_in`] reads a stanza's value with.
    #[test]
    fn every_switch_variable_is_read_as_on_or_off() {
        use clap::CommandFactory;
        let command = crate::cli::Cli::command();
        let get_token = command.find_subcommand("get-token").unwrap();
        for arg in get_token.get_arguments() {
            if arg.get_env().is_none() || !matches!(arg.get_action(), clap::ArgAction::SetTrue) {
                continue;
            }
            let values: Vec<String> = arg
                .get_value_parser()
                .possible_values()
                .map(|values| values.map(|v| v.get_name().to_string()).collect())
                .unwrap_or_default();
            for word in ["yes", "on", "0", "off"] {
                assert!(
                    values.contains(&word.to_string()),
                    "--{:?}: {values:?}",
                    arg.get_long()
                );
            }
        }
    }

    /// Flags the printed stanza leaves out on purpose: secrets given as values (the stanza gets
    /// an `env` placeholder instead), one-off switches, and kubelogin's hidden aliases.
    const NOT_PRINTED: [&str; 5] = [
        "client-secret",
        "request-header",
        "force-refresh",
        "verbose",
        "help",
    ];

    /// Every get-token flag a setup run was given reaches the printed `args`: a flag added to
    /// `TokenArgs` and forgotten in `exec_args` fails here.
    #[test]
    fn every_setting_setup_was_given_is_printed() {
        use clap::CommandFactory;
        let command = crate::cli::Cli::command();
        let get_token = command.find_subcommand("get-token").unwrap();
        let mut argv = vec!["kubecred".to_string(), "get-token".to_string()];
        let mut expected = Vec::new();
        for arg in get_token.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || NOT_PRINTED.contains(&long) {
                continue;
            }
            if !arg.get_action().takes_values() {
                argv.push(format!("--{long}"));
            } else {
                let value = match arg.get_possible_values().first() {
                    Some(possible) => possible.get_name().to_string(),
                    None => "/abs/value".to_string(),
                };
                argv.push(format!("--{long}={value}"));
            }
            expected.push(long.to_string());
        }
        let crate::cli::Command::GetToken(args) =
            <crate::cli::Cli as clap::Parser>::try_parse_from(&argv)
                .unwrap()
                .command
        else {
            unreachable!()
        };
        let printed = exec_args(&args);
        for long in expected {
            assert!(
                printed
                    .iter()
                    .any(|a| *a == format!("--{long}") || a.starts_with(&format!("--{long}="))),
                "--{long} was given to setup but is not in the printed args: {printed:?}"
            );
        }
        // And get-token reads back what was printed.
        let mut again = vec!["kubecred".to_string()];
        again.extend(printed);
        <crate::cli::Cli as clap::Parser>::try_parse_from(&again).unwrap();
    }
}
