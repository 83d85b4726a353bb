//! Azure's kubelogin (`kubelogin get-token --login MODE --server-id …`, and the legacy
//! `auth-provider: azure` it converts), as far as kubecred gets the same Entra token itself:
//!
//! | `--login` | kubecred |
//! |---|---|
//! | `devicecode` (the default) | `--grant-type=device-code` |
//! | `interactive` | `--grant-type=authcode`, `--redirect-url=http://localhost` (MSAL's, no slash) |
//! | `spn` with a client secret | `--grant-type=client-credentials`, the secret in the stanza's env |
//! | `spn` with a certificate | `--grant-type=client-credentials --client-certificate-file=…`, its password in the stanza's env |
//! | `ropc` | `--grant-type=password --username=…`, a password in the stanza's env |
//! | `workloadidentity` | `--grant-type=client-credentials --client-assertion-file=…` |
//! | `azurepipelines` | `--grant-type=client-credentials --client-assertion-source=azure-pipelines --azure-pipelines-service-connection-id=…` |
//! | `azurecli` | `--grant-type=azure-cli` [`--tenant-id`] [`--azure-subscription`] |
//! | `azd` | `--grant-type=azure-developer-cli` [`--tenant-id`] |
//! | `msi` | `--grant-type=managed-identity` [`--client-id` \| `--identity-resource-id`] |
//!
//! each with `--scope=<server-id>/.default` (as Azure's `GetScope` makes it); the OAuth grants with
//! `--issuer-url=https://<login host>/<tenant>/v2.0` (the host from `--environment` or
//! `--authority-host`) and the client; the logins of a person add `offline_access` (MSAL asks for
//! it too: refresh tokens) and print the access token (`--use-access-token`: AKS takes access
//! tokens for its server app). The Azure sources (`azure-cli`, `azure-developer-cli`,
//! `managed-identity`, the certificate and Azure Pipelines assertions) are get-token flags that
//! phase 2 of issue 45 adds: until then such a stanza is planned here and tested as text.
//!
//! The stanza is read as Azure's kubelogin reads it (`peers::azure_kubelogin`: its flags, its
//! variables over them, its checks); a setting that only this process's environment supplies
//! cannot be written into a kubeconfig: such a user is left alone. The variables Azure's tool
//! reads as settings become flags; the stanza's other variables stay (`AZURE_CONFIG_DIR`, which
//! the Azure CLI reads, among them).
//!
//! What stays with Azure's tool, and why: `--legacy` where Azure honours it (devicecode and spn:
//! AAD v1 tokens with the `spn:` audience, from the v1 endpoint, which kubecred does not speak;
//! Azure ignores it for the other modes, and so does the conversion); `--pop-enabled` where Azure
//! honours it (interactive, ropc, spn: proof-of-possession tokens bound to a key Azure's tool
//! keeps); `--disable-instance-discovery` where Azure uses it (an authority that is not Entra ID).
//!
//! Tokens are not carried: Azure's kubelogin keeps them in MSAL's encrypted cache (and the
//! CLIs and managed identities keep their own).

use super::plan::{Conversion, Plan, Tokens};
use crate::kubeconfig::EnvVar;
use crate::peers::azure_kubelogin::{Options, Origin, SETTING_VARIABLES, Setting, read, value_of};
use serde_norway::Value;

/// Entra's scope for an API: its ID with `/.default` (Azure's `GetScope`).
const DEFAULT_SCOPE_SUFFIX: &str = "/.default";

/// The plan for an Azure kubelogin stanza: its args, in the stanza's `env` over this process's.
pub(super) fn plan(args: &[String], env: &[(String, String)]) -> Plan {
    let process = |name: &str| std::env::var(name).ok();
    match read(args, env, &process).and_then(|options| convert(&options, env)) {
        Ok(conversion) => Plan::Convert(conversion),
        Err(reason) => Plan::Skip(reason),
    }
}

/// The legacy `auth-provider: azure` (removed from kubectl in 1.26), as Azure's own
/// `convert-kubeconfig` turns it into a stanza with no flag given: the device code login with its
/// `apiserver-id`, `client-id`, `tenant-id` and `environment`, and `--legacy` unless
/// `config-mode` is `"1"`.
pub(super) fn plan_auth_provider(config: Option<&Value>) -> Plan {
    let text = |key: &str| {
        config
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let mut args = vec![
        "get-token".to_string(),
        "--login".into(),
        "devicecode".into(),
    ];
    for (key, flag) in [
        ("apiserver-id", "--server-id"),
        ("client-id", "--client-id"),
        ("tenant-id", "--tenant-id"),
        ("environment", "--environment"),
    ] {
        if let Some(value) = text(key) {
            args.push(flag.into());
            args.push(value.into());
        }
    }
    if !matches!(text("config-mode"), Some("1")) {
        args.push("--legacy".into());
    }
    let plan = plan(&args, &[]);
    match plan {
        Plan::Convert(mut conversion) => {
            conversion.from = "auth-provider azure".into();
            conversion.tokens = Tokens::Unreadable(
                "the azure auth-provider's tokens are ADAL's, for a login kubecred makes anew",
            );
            Plan::Convert(conversion)
        }
        Plan::Skip(why) => Plan::Skip(format!("the azure auth-provider, as {why}")),
    }
}

/// kubecred's stanza for Azure's settings; the error says why it stays with Azure's tool.
fn convert(options: &Options, stanza_env: &[(String, String)]) -> Result<Conversion, String> {
    let login = value_of(&options.login).unwrap_or("devicecode").to_string();
    let label = format!("Azure kubelogin --login {login}");
    if matches!(options.login, Some((_, Origin::Process(_)))) {
        from_here(&label, "login method", &options.login)?;
    }
    let mut notes = Vec::new();
    what_stays(options, &login, &mut notes)
        .map_err(|why| format!("{label}: stays with Azure's tool ({why})"))?;
    // The CLIs and managed identities need no issuer and no client: Azure's tool asks them for
    // the server's token and nothing else.
    let mut args = if matches!(login.as_str(), "azurecli" | "azd" | "msi") {
        vec!["get-token".to_string()]
    } else {
        tenant_and_client(options, &label)?
    };
    let mut env = stanza_env
        .iter()
        .filter(|(name, _)| !SETTING_VARIABLES.contains(&name.as_str()))
        .map(|(name, value)| EnvVar::new(name, value))
        .collect();
    let mut out = NewStanza {
        label: &label,
        args: &mut args,
        env: &mut env,
        notes: &mut notes,
    };
    let tokens = match login.as_str() {
        "devicecode" => out.person("device-code"),
        "interactive" => out.interactive(options),
        "ropc" => out.ropc(options)?,
        "spn" => out.spn(options)?,
        "azurecli" => out.azure_cli(options)?,
        "azd" => out.azure_developer_cli(options)?,
        "msi" => out.managed_identity(options)?,
        "azurepipelines" => out.azure_pipelines(options)?,
        _ => out.workload_identity(options)?,
    };
    match options.verbosity {
        0 => {}
        1..=9 => args.push("-v".into()),
        _ => args.push("-vv".into()),
    }
    if options.cache_dir {
        notes.push(
            "dropped --cache-dir: it named Azure kubelogin's cache; kubecred keeps its own".into(),
        );
    }
    if options.timeout.is_some() {
        notes.push(
            "dropped --timeout (AZURE_CLI_TIMEOUT): kubecred bounds each step by its own time limits"
                .into(),
        );
    }
    Ok(Conversion {
        from: label,
        args,
        env,
        tokens,
        notes,
        kubelogin: None,
    })
}

/// What keeps a stanza with Azure's tool (the error: why), and the flags dropped because Azure
/// ignores them with this login (noted).
fn what_stays(options: &Options, login: &str, notes: &mut Vec<String>) -> Result<(), &'static str> {
    // --legacy: AAD v1 (ADAL) for devicecode and spn; the other modes ignore it.
    if options.legacy {
        if matches!(login, "devicecode" | "spn") {
            return Err(
                "--legacy asks for AAD v1 tokens with the spn: audience, from the v1 endpoint, which kubecred does not speak",
            );
        }
        notes.push(format!(
            "dropped --legacy: Azure's kubelogin ignores it with --login {login}"
        ));
    }
    // --pop-enabled: proof-of-possession for interactive, ropc and spn; ignored otherwise.
    if options.pop_enabled {
        if matches!(login, "interactive" | "ropc" | "spn") {
            return Err(
                "--pop-enabled asks for proof-of-possession tokens bound to a key Azure's tool keeps; kubecred hands out bearer tokens",
            );
        }
        notes.push(format!(
            "dropped --pop-enabled and --pop-claims: Azure's kubelogin ignores them with --login {login}"
        ));
    }
    if options.disable_instance_discovery {
        // The CLIs and managed identities talk to no authority of Azure kubelogin's choosing.
        if matches!(login, "azurecli" | "azd" | "msi") {
            notes.push(format!(
                "dropped --disable-instance-discovery: Azure's kubelogin ignores it with --login {login}"
            ));
        } else {
            return Err(
                "--disable-instance-discovery is for authorities that are not Entra ID, whose issuer kubecred cannot derive",
            );
        }
    }
    Ok(())
}

/// `get-token` and the tenant's issuer, the client, and the scope of the server's app.
fn tenant_and_client(options: &Options, label: &str) -> Result<Vec<String>, String> {
    let client_id = required(
        label,
        "client ID",
        &options.client_id,
        "--client-id, AAD_SERVICE_PRINCIPAL_CLIENT_ID, AZURE_CLIENT_ID",
    )?;
    let tenant = required(
        label,
        "tenant ID",
        &options.tenant_id,
        "--tenant-id, AZURE_TENANT_ID",
    )?;
    let authority = match from_here(label, "authority host", &options.authority_host)? {
        Some(host) => host,
        None => format!("https://{}/", login_host(options.environment.as_deref())),
    };
    let issuer = format!("{}/{tenant}/v2.0", authority.trim_end_matches('/'));
    Ok(vec![
        "get-token".to_string(),
        format!("--issuer-url={issuer}"),
        format!("--client-id={client_id}"),
        format!("--scope={}", scope_of(options)),
    ])
}

/// Azure's `GetScope`: the server ID without trailing slashes, with `/.default` unless it has it.
fn scope_of(options: &Options) -> String {
    let server_id = options.server_id.as_deref().unwrap_or_default();
    let id = server_id.trim_end_matches('/');
    if id.ends_with(DEFAULT_SCOPE_SUFFIX) {
        id.to_string()
    } else {
        format!("{id}{DEFAULT_SCOPE_SUFFIX}")
    }
}

/// A setting's value, unless only this process's environment gives it, which the kubeconfig
/// cannot hold: then the error says so.
fn from_here(label: &str, what: &str, setting: &Setting) -> Result<Option<String>, String> {
    match setting {
        Some((_, Origin::Process(name))) => Err(format!(
            "{label}: its {what} comes from {name} in the environment kubectl runs in, which a kubeconfig cannot name; set it in the stanza's env or as a flag, then convert"
        )),
        Some((value, _)) => Ok(Some(value.clone())),
        None => Ok(None),
    }
}

/// A setting the login needs: not empty, not from this process's environment alone
/// ([`from_here`]), given somewhere ([`nowhere`] says the `variables` that could).
fn required(label: &str, what: &str, setting: &Setting, variables: &str) -> Result<String, String> {
    from_here(label, what, setting)?
        .filter(|value| !value.is_empty())
        .ok_or_else(|| nowhere(label, what, variables))
}

/// Why a setting nothing here gives stops the conversion: Azure's kubelogin would take it from
/// the environment kubectl runs in (a workload identity pod has it injected), or refuse to run.
fn nowhere(label: &str, what: &str, variables: &str) -> String {
    format!(
        "{label}: no {what}: neither its flags, its env nor this environment give one ({variables}); where kubectl runs it, Azure's kubelogin would take it from there or refuse to run, and a kubeconfig cannot name that"
    )
}

/// The stanza being written, for one login's flags.
struct NewStanza<'a> {
    label: &'a str,
    args: &'a mut Vec<String>,
    env: &'a mut Vec<EnvVar>,
    notes: &'a mut Vec<String>,
}

impl NewStanza<'_> {
    /// A person's login: MSAL asks for `offline_access` too (refresh tokens), and AKS takes
    /// the access token for its server app.
    fn person(&mut self, grant: &str) -> Tokens {
        self.args.push(format!("--grant-type={grant}"));
        self.args.push("--scope=offline_access".into());
        self.args.push("--use-access-token".into());
        Tokens::Unreadable(MSAL)
    }

    fn interactive(&mut self, options: &Options) -> Tokens {
        let tokens = self.person("authcode");
        // MSAL's redirect URI: `http://localhost:PORT`, no path.
        let redirect = options
            .redirect_url
            .as_deref()
            .unwrap_or("http://localhost");
        self.args.push(format!("--redirect-url={redirect}"));
        if let Some(hint) = &options.login_hint {
            self.args.push(format!("--login-hint={hint}"));
        }
        tokens
    }

    fn ropc(&mut self, options: &Options) -> Result<Tokens, String> {
        let username = required(
            self.label,
            "user name",
            &options.username,
            "--username, AAD_USER_PRINCIPAL_NAME, AZURE_USERNAME",
        )?;
        let tokens = self.person("password");
        self.args.push(format!("--username={username}"));
        match from_here(self.label, "password", &options.password)?.filter(|p| !p.is_empty()) {
            Some(password) => self.env.push(EnvVar::new("KUBECRED_PASSWORD", password)),
            None => self.notes.push(
                "the password is asked for at the first login (or set KUBECRED_PASSWORD)".into(),
            ),
        }
        Ok(tokens)
    }

    fn spn(&mut self, options: &Options) -> Result<Tokens, String> {
        // Azure's kubelogin takes the certificate over a secret when both are given.
        if let Some(certificate) = from_here(
            self.label,
            "client certificate",
            &options.client_certificate,
        )?
        .filter(|c| !c.is_empty())
        {
            self.args.push("--grant-type=client-credentials".into());
            self.args
                .push(format!("--client-certificate-file={certificate}"));
            if let Some(password) = from_here(
                self.label,
                "client certificate password",
                &options.client_certificate_password,
            )?
            .filter(|p| !p.is_empty())
            {
                self.env.push(EnvVar::new(
                    "KUBECRED_CLIENT_CERTIFICATE_PASSWORD",
                    password,
                ));
            }
            if value_of(&options.client_secret).is_some_and(|s| !s.is_empty()) {
                self.notes.push(
                    "dropped the client secret: Azure's kubelogin uses the certificate when both are given".into(),
                );
            }
            return Ok(Tokens::NotNeeded);
        }
        let secret = from_here(self.label, "client secret", &options.client_secret)?
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                nowhere(
                    self.label,
                    "client secret or certificate",
                    "--client-secret, AAD_SERVICE_PRINCIPAL_CLIENT_SECRET, AZURE_CLIENT_SECRET",
                )
            })?;
        self.args.push("--grant-type=client-credentials".into());
        self.env.push(EnvVar::new("KUBECRED_CLIENT_SECRET", secret));
        Ok(Tokens::NotNeeded)
    }

    /// The Azure CLI's session: its own login, tenant and subscription (Azure's kubelogin gives
    /// `az` `--tenant` and `--subscription` from these).
    fn azure_cli(&mut self, options: &Options) -> Result<Tokens, String> {
        self.args.push("--grant-type=azure-cli".into());
        self.args.push(format!("--scope={}", scope_of(options)));
        if let Some(tenant) =
            from_here(self.label, "tenant ID", &options.tenant_id)?.filter(|t| !t.is_empty())
        {
            self.args.push(format!("--tenant-id={tenant}"));
        }
        if let Some(subscription) = options.subscription.as_deref().filter(|s| !s.is_empty()) {
            self.args
                .push(format!("--azure-subscription={subscription}"));
        }
        self.unused(options, "the Azure CLI's login");
        Ok(Tokens::NotNeeded)
    }

    fn azure_developer_cli(&mut self, options: &Options) -> Result<Tokens, String> {
        self.args.push("--grant-type=azure-developer-cli".into());
        self.args.push(format!("--scope={}", scope_of(options)));
        if let Some(tenant) =
            from_here(self.label, "tenant ID", &options.tenant_id)?.filter(|t| !t.is_empty())
        {
            self.args.push(format!("--tenant-id={tenant}"));
        }
        self.unused(options, "the Azure Developer CLI's login");
        Ok(Tokens::NotNeeded)
    }

    /// Azure's `msi`: a user-assigned identity by its client ID if one is given (the flag or
    /// its variables), else by its resource ID, else the system-assigned one.
    fn managed_identity(&mut self, options: &Options) -> Result<Tokens, String> {
        self.args.push("--grant-type=managed-identity".into());
        self.args.push(format!("--scope={}", scope_of(options)));
        let client_id =
            from_here(self.label, "client ID", &options.client_id)?.filter(|c| !c.is_empty());
        let resource_id = options
            .identity_resource_id
            .as_deref()
            .filter(|r| !r.is_empty());
        match (client_id, resource_id) {
            (Some(client_id), resource_id) => {
                self.args.push(format!("--client-id={client_id}"));
                if resource_id.is_some() {
                    self.notes.push(
                        "dropped --identity-resource-id: Azure's kubelogin names the identity by its client ID when both are given".into(),
                    );
                }
            }
            (None, Some(resource_id)) => self
                .args
                .push(format!("--identity-resource-id={resource_id}")),
            (None, None) => {}
        }
        if value_of(&options.tenant_id).is_some_and(|t| !t.is_empty()) {
            self.notes.push(
                "dropped the tenant ID: a managed identity's token comes from its host's endpoint"
                    .into(),
            );
        }
        Ok(Tokens::NotNeeded)
    }

    /// The service connection's OIDC token as the client assertion.
    fn azure_pipelines(&mut self, options: &Options) -> Result<Tokens, String> {
        let connection = required(
            self.label,
            "service connection ID",
            &options.service_connection_id,
            "--azure-pipelines-service-connection-id, AZURESUBSCRIPTION_SERVICE_CONNECTION_ID",
        )?;
        self.args.push("--grant-type=client-credentials".into());
        self.args
            .push("--client-assertion-source=azure-pipelines".into());
        self.args.push(format!(
            "--azure-pipelines-service-connection-id={connection}"
        ));
        Ok(Tokens::NotNeeded)
    }

    /// Notes the settings Azure's kubelogin ignores with a CLI's login, if the stanza had them.
    fn unused(&mut self, options: &Options, whose: &str) {
        if value_of(&options.client_id).is_some_and(|c| !c.is_empty()) {
            self.notes.push(format!(
                "dropped the client ID: the token is {whose}, whose client it is"
            ));
        }
    }

    fn workload_identity(&mut self, options: &Options) -> Result<Tokens, String> {
        let file = required(
            self.label,
            "federated token file",
            &options.federated_token_file,
            "--federated-token-file, AZURE_FEDERATED_TOKEN_FILE",
        )?;
        self.args.push("--grant-type=client-credentials".into());
        self.args.push(format!("--client-assertion-file={file}"));
        Ok(Tokens::NotNeeded)
    }
}

/// Why an Azure user's tokens are not carried.
const MSAL: &str =
    "Azure's kubelogin keeps them in MSAL's encrypted token cache, which kubecred does not read";

/// Entra's login host of an Azure cloud, as Azure's kubelogin names the clouds
/// (`GetCloudConfiguration`: an unknown name is the public cloud).
fn login_host(environment: Option<&str>) -> &'static str {
    match environment.map(str::to_ascii_uppercase).as_deref() {
        Some("AZUREUSGOVERNMENT" | "AZUREUSGOVERNMENTCLOUD") => "login.microsoftonline.us",
        Some("AZURECHINACLOUD") => "login.chinacloudapi.cn",
        _ => "login.microsoftonline.com",
    }
}

#[cfg(test)]
mod tests;
