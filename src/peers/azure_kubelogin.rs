//! Azure's kubelogin (`kubelogin get-token --login MODE --server-id …`) read as Azure's kubelogin
//! reads it (pkg/internal/token/options.go, at its HEAD): pflag's syntax (`peers::pflag`:
//! `--legacy=TRUE` is on, `--legacy=false` off, klog's `-v 5` and `--logtostderr` before or after
//! `get-token`), then `UpdateFromEnv`: a variable that is set, even empty, wins over its flag
//! (`AAD_SERVICE_PRINCIPAL_CLIENT_ID` then `AZURE_CLIENT_ID` over `--client-id`, …; `ARM_*` with
//! `--use-azurerm-env-vars`), unless `--disable-environment-override`; then `Validate`. The
//! environment is the one kubectl gives the plugin: the stanza's `env` over the caller's, each
//! setting with its origin ([`Origin`]), since a kubeconfig cannot hold what only the caller's
//! environment gives. What kubecred makes of the settings is `commands/convert/azure.rs`'s.

use crate::peers::pflag::{self, Flag, Parsed};
/// `get-token`'s flags at Azure's kubelogin's HEAD (`Options.AddFlags`).
pub const GET_TOKEN_FLAGS: [Flag; 27] = [
    Flag::value("login").with_short('l'),
    Flag::value("client-id"),
    Flag::value("client-secret"),
    Flag::value("client-certificate"),
    Flag::value("client-certificate-password"),
    Flag::value("username"),
    Flag::value("password"),
    Flag::value("identity-resource-id"),
    Flag::value("server-id"),
    Flag::value("federated-token-file"),
    Flag::value("authority-host"),
    Flag::value("azure-pipelines-service-connection-id"),
    Flag::value("token-cache-dir"),
    Flag::value("cache-dir"),
    Flag::value("tenant-id").with_short('t'),
    Flag::value("subscription").with_short('s'),
    Flag::value("environment").with_short('e'),
    Flag::boolean("legacy"),
    Flag::boolean("use-azurerm-env-vars"),
    Flag::boolean("pop-enabled"),
    Flag::value("timeout"),
    Flag::value("pop-claims"),
    Flag::boolean("disable-environment-override"),
    Flag::boolean("disable-instance-discovery"),
    Flag::value("redirect-url"),
    Flag::value("login-hint"),
    Flag::boolean("help").with_short('h'),
];

/// The flags of every command: klog's `-v` and `--logtostderr`, which main.go adds to pflag's
/// command line and cobra makes persistent, and cobra's own.
pub const GLOBAL_FLAGS: [Flag; 3] = [
    Flag::value("v").with_short('v'),
    Flag::boolean("logtostderr"),
    Flag::boolean("version"),
];

/// Whether a `kubelogin` stanza is Azure's rather than int128's. int128's names its issuer with
/// `--oidc-issuer-url` (every stanza of it has one); Azure's has none of the `--oidc-` flags,
/// and has its own (`--server-id`, `--login`, …) or its variables in the env.
pub fn is_azure(args: &[String], env: &[(String, String)]) -> bool {
    if args.iter().any(|arg| arg.starts_with("--oidc-")) {
        return false;
    }
    // Flags both tools have say nothing.
    const SHARED: [&str; 4] = ["username", "password", "token-cache-dir", "help"];
    let azure_flag = args.iter().any(|arg| {
        let name = arg.split('=').next().unwrap_or(arg);
        match name.strip_prefix("--") {
            Some(long) => {
                !SHARED.contains(&long) && GET_TOKEN_FLAGS.iter().any(|flag| flag.name == long)
            }
            None => name
                .strip_prefix('-')
                .and_then(|s| s.chars().next())
                .is_some_and(|c| GET_TOKEN_FLAGS.iter().any(|flag| flag.short == Some(c))),
        }
    });
    azure_flag
        || env.iter().any(|(name, _)| {
            name.starts_with("AAD_") || name.starts_with("AZURE_") || name.starts_with("ARM_")
        })
}

/// Where a setting came from: a flag, or a variable of the stanza's `env` or of this
/// process's environment (which a kubeconfig cannot name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Stanza,
    Process(&'static str),
}

/// A setting's value and origin.
pub type Setting = Option<(String, Origin)>;

/// The settings Azure's kubelogin runs a `get-token` stanza with, after `UpdateFromEnv`.
#[derive(Debug, Default)]
pub struct Options {
    pub login: Setting,
    pub client_id: Setting,
    pub client_secret: Setting,
    pub client_certificate: Setting,
    pub client_certificate_password: Setting,
    pub username: Setting,
    pub password: Setting,
    pub tenant_id: Setting,
    pub federated_token_file: Setting,
    pub authority_host: Setting,
    /// `--azure-pipelines-service-connection-id`, else (`azurepipelines` only)
    /// `AZURESUBSCRIPTION_SERVICE_CONNECTION_ID`.
    pub service_connection_id: Setting,
    /// `--subscription` (`azurecli`): the Azure CLI's account of that subscription.
    pub subscription: Option<String>,
    /// `--identity-resource-id` (`msi`): a user-assigned identity by its resource ID.
    pub identity_resource_id: Option<String>,
    pub server_id: Option<String>,
    pub environment: Option<String>,
    pub redirect_url: Option<String>,
    pub login_hint: Option<String>,
    pub legacy: bool,
    pub pop_enabled: bool,
    pub disable_instance_discovery: bool,
    pub cache_dir: bool,
    /// `--timeout` (or `AZURE_CLI_TIMEOUT`): how long Azure's `get-token` may take.
    pub timeout: Option<String>,
    pub verbosity: u32,
}

/// Reads the stanza's args as Azure's kubelogin does, and its variables over them.
pub fn read(
    args: &[String],
    stanza_env: &[(String, String)],
    process_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Options, String> {
    let refused = |why: String| format!("Azure's kubelogin refuses it too: {why}");
    let root: Vec<Flag> = GLOBAL_FLAGS
        .iter()
        .chain([&Flag::boolean("help").with_short('h')])
        .copied()
        .collect();
    let Some(at) = pflag::subcommand_at(args, &root) else {
        return Err("runs Azure's kubelogin without get-token, which prints no credential".into());
    };
    if args[at] != "get-token" {
        return Err(format!(
            "runs Azure's kubelogin {:?}, not get-token, which kubectl cannot use as a credential",
            crate::text::printable_brief(&args[at], 40)
        ));
    }
    let rest: Vec<String> = args[..at].iter().chain(&args[at + 1..]).cloned().collect();
    let table: Vec<Flag> = GET_TOKEN_FLAGS
        .iter()
        .chain(&GLOBAL_FLAGS)
        .copied()
        .collect();
    let parsed = pflag::parse(&rest, &table).map_err(refused)?;
    if parsed.on("help") || parsed.on("version") {
        return Err("it asks Azure's kubelogin for its help, not a token".into());
    }
    let flag = |name: &str| -> Setting { parsed.last(name).map(|v| (v.to_string(), Origin::Flag)) };
    let variable = |name: &'static str| -> Setting {
        match stanza_env.iter().rev().find(|(n, _)| n == name) {
            Some((_, value)) => Some((value.clone(), Origin::Stanza)),
            None => process_env(name).map(|value| (value, Origin::Process(name))),
        }
    };
    let mut options = Options {
        login: flag("login").or(Some(("devicecode".into(), Origin::Flag))),
        client_id: flag("client-id"),
        client_secret: flag("client-secret"),
        client_certificate: flag("client-certificate"),
        client_certificate_password: flag("client-certificate-password"),
        username: flag("username"),
        password: flag("password"),
        tenant_id: flag("tenant-id"),
        federated_token_file: flag("federated-token-file"),
        authority_host: flag("authority-host"),
        service_connection_id: flag("azure-pipelines-service-connection-id"),
        subscription: parsed.last("subscription").map(String::from),
        identity_resource_id: parsed.last("identity-resource-id").map(String::from),
        server_id: parsed.last("server-id").map(String::from),
        environment: parsed.last("environment").map(String::from),
        redirect_url: parsed.last("redirect-url").map(String::from),
        login_hint: parsed.last("login-hint").map(String::from),
        legacy: parsed.on("legacy"),
        pop_enabled: parsed.on("pop-enabled"),
        disable_instance_discovery: parsed.on("disable-instance-discovery"),
        cache_dir: parsed.given("cache-dir") || parsed.given("token-cache-dir"),
        timeout: parsed
            .last("timeout")
            .map(String::from)
            .or_else(|| variable("AZURE_CLI_TIMEOUT").map(|(value, _)| value)),
        verbosity: match parsed.last("v") {
            None => 0,
            Some(level) => level
                .parse()
                .map_err(|_| refused(format!("-v {level:?} is not a log level")))?,
        },
    };
    if !parsed.on("disable-environment-override") {
        update_from_env(&mut options, &parsed, &variable);
    }
    validate(&options, &parsed).map_err(refused)?;
    Ok(options)
}

/// Azure's `UpdateFromEnv`: each variable that is set replaces its setting, later ones
/// replacing earlier ones.
pub fn update_from_env(
    options: &mut Options,
    parsed: &Parsed,
    variable: &dyn Fn(&'static str) -> Setting,
) {
    let set = |slot: &mut Setting, names: &[&'static str]| {
        for name in names {
            if let Some(value) = variable(name) {
                *slot = Some(value);
            }
        }
    };
    if parsed.on("use-azurerm-env-vars") {
        set(&mut options.client_id, &["ARM_CLIENT_ID"]);
        set(&mut options.client_secret, &["ARM_CLIENT_SECRET"]);
        set(
            &mut options.client_certificate,
            &["ARM_CLIENT_CERTIFICATE_PATH"],
        );
        set(
            &mut options.client_certificate_password,
            &["ARM_CLIENT_CERTIFICATE_PASSWORD"],
        );
        set(&mut options.tenant_id, &["ARM_TENANT_ID"]);
    } else {
        set(
            &mut options.client_id,
            &["AAD_SERVICE_PRINCIPAL_CLIENT_ID", "AZURE_CLIENT_ID"],
        );
        set(
            &mut options.client_secret,
            &["AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "AZURE_CLIENT_SECRET"],
        );
        set(
            &mut options.client_certificate,
            &[
                "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE",
                "AZURE_CLIENT_CERTIFICATE_PATH",
            ],
        );
        set(
            &mut options.client_certificate_password,
            &[
                "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD",
                "AZURE_CLIENT_CERTIFICATE_PASSWORD",
            ],
        );
        set(&mut options.tenant_id, &["AZURE_TENANT_ID"]);
    }
    set(
        &mut options.username,
        &["AAD_USER_PRINCIPAL_NAME", "AZURE_USERNAME"],
    );
    set(
        &mut options.password,
        &["AAD_USER_PRINCIPAL_PASSWORD", "AZURE_PASSWORD"],
    );
    set(&mut options.login, &["AAD_LOGIN_METHOD"]);
    if value_of(&options.login) == Some("workloadidentity") {
        set(&mut options.client_id, &["AZURE_CLIENT_ID"]);
        set(
            &mut options.federated_token_file,
            &["AZURE_FEDERATED_TOKEN_FILE"],
        );
        set(&mut options.authority_host, &["AZURE_AUTHORITY_HOST"]);
    }
    // The AzureCLI@2 task's variables, for what the flags and the variables above left empty.
    if value_of(&options.login) == Some("azurepipelines") {
        let unset = |slot: &Setting| value_of(slot).is_none_or(str::is_empty);
        if unset(&options.client_id) {
            set(&mut options.client_id, &["AZURESUBSCRIPTION_CLIENT_ID"]);
        }
        if unset(&options.tenant_id) {
            set(&mut options.tenant_id, &["AZURESUBSCRIPTION_TENANT_ID"]);
        }
        if unset(&options.service_connection_id) {
            set(
                &mut options.service_connection_id,
                &["AZURESUBSCRIPTION_SERVICE_CONNECTION_ID"],
            );
        }
    }
}

/// The variables Azure's kubelogin reads as settings (`UpdateFromEnv`): what a conversion turns
/// into flags, so that the new stanza's env keeps only the others (`AZURE_CONFIG_DIR`, which the
/// Azure CLI reads, a proxy, …).
pub const SETTING_VARIABLES: [&str; 25] = [
    "AAD_LOGIN_METHOD",
    "AAD_USER_PRINCIPAL_NAME",
    "AAD_USER_PRINCIPAL_PASSWORD",
    "AAD_SERVICE_PRINCIPAL_CLIENT_ID",
    "AAD_SERVICE_PRINCIPAL_CLIENT_SECRET",
    "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE",
    "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD",
    "ARM_CLIENT_ID",
    "ARM_CLIENT_SECRET",
    "ARM_CLIENT_CERTIFICATE_PATH",
    "ARM_CLIENT_CERTIFICATE_PASSWORD",
    "ARM_TENANT_ID",
    "AZURE_AUTHORITY_HOST",
    "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_PASSWORD",
    "AZURE_TENANT_ID",
    "AZURE_USERNAME",
    "AZURESUBSCRIPTION_CLIENT_ID",
    "AZURESUBSCRIPTION_TENANT_ID",
    "AZURESUBSCRIPTION_SERVICE_CONNECTION_ID",
    "AZURE_CLI_TIMEOUT",
];

/// Azure's `Validate`, and `--server-id`, which its plugin requires.
pub fn validate(options: &Options, parsed: &Parsed) -> Result<(), String> {
    const LOGINS: [&str; 9] = [
        "devicecode",
        "interactive",
        "spn",
        "ropc",
        "msi",
        "azurecli",
        "azd",
        "workloadidentity",
        "azurepipelines",
    ];
    let login = value_of(&options.login).unwrap_or_default();
    if !LOGINS.contains(&login) {
        return Err(format!(
            "--login {:?} is not one of {}",
            crate::text::printable_brief(login, 40),
            LOGINS.join(", ")
        ));
    }
    if let Some(host) = value_of(&options.authority_host) {
        let parsed_host = url::Url::parse(host).ok().filter(|url| url.has_host());
        if parsed_host.is_none() || !host.ends_with('/') {
            return Err(format!(
                "authority host {host:?} is not a URL ending with a slash"
            ));
        }
    }
    if options.pop_enabled != parsed.last("pop-claims").is_some_and(|c| !c.is_empty()) {
        return Err("--pop-enabled and --pop-claims go together".into());
    }
    // A Go duration above 0 (its numbers hold a digit other than 0; units are letters).
    if let Some(timeout) = parsed.last("timeout")
        && !(pflag::is_go_duration(timeout)
            && !timeout.starts_with('-')
            && timeout.chars().any(|c| ('1'..='9').contains(&c)))
    {
        return Err(format!("--timeout {timeout:?} is not a duration above 0"));
    }
    if options.server_id.as_deref().is_none_or(str::is_empty) {
        return Err("no --server-id".into());
    }
    Ok(())
}

pub fn value_of(setting: &Setting) -> Option<&str> {
    setting.as_ref().map(|(value, _)| value.as_str())
}
