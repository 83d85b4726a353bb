//! Azure's kubelogin (`kubelogin get-token --login MODE --server-id …`), as far as it is an
//! OAuth grant at an Entra ID tenant that kubecred can run itself:
//!
//! | `--login` | kubecred |
//! |---|---|
//! | `devicecode` (the default) | `--grant-type=device-code` |
//! | `interactive` | `--grant-type=authcode`, `--redirect-url=http://localhost/` (azidentity's) |
//! | `spn` with a client secret | `--grant-type=client-credentials`, the secret in the stanza's env |
//! | `ropc` | `--grant-type=password --username=…`, a password in the stanza's env |
//! | `workloadidentity` | `--grant-type=client-credentials --client-assertion-file=…` |
//!
//! each with `--issuer-url=https://<login host>/<tenant>/v2.0` (the host from `--environment`
//! or `--authority-host`) and `--scope=<server-id>/.default` (as Azure's `GetScope` makes it); the
//! logins of a person add `offline_access` (MSAL asks for it too: refresh tokens) and print the
//! access token (`--use-access-token`: AKS takes access tokens for its server app).
//!
//! What stays with Azure's tool, and why: `msi`, `azurecli`, `azd` and `azurepipelines` get
//! their tokens from Azure's own credential sources (the instance metadata endpoint, the Azure
//! CLI's and azd's logins, a pipeline's service connection), not from a grant at the tenant;
//! `spn` with `--client-certificate`: Entra identifies a certificate by the `x5t` thumbprint in
//! the client assertion's header, which kubecred's `private_key_jwt` does not send (and PFX
//! files are not read); `--legacy` wants AAD v1 tokens (the `spn:` audience); `--pop-enabled`
//! wants proof-of-possession tokens bound to a key Azure's tool keeps; and settings that only
//! the environment kubectl runs in supplies (`AZURE_CLIENT_SECRET`, the workload identity
//! webhook's `AZURE_*`, Terraform's `ARM_*`), which kubecred does not read and a kubeconfig
//! cannot name.
//!
//! Tokens are not carried: Azure's kubelogin keeps them in MSAL's encrypted cache.
//!
//! The flags are read as Azure's kubelogin reads them (pkg/internal/token/options.go): pflag
//! syntax, and variables of the stanza's `env` win over flags, unless
//! `--disable-environment-override`.

use super::plan::{Conversion, Plan, Tokens};
use crate::kubeconfig::EnvVar;

/// Entra's scope for an API: its ID with `/.default` (Azure's `GetScope`).
const DEFAULT_SCOPE_SUFFIX: &str = "/.default";

/// Flags that take a value, with their one-letter forms.
const VALUED: [(&str, Option<char>); 21] = [
    ("login", Some('l')),
    ("client-id", None),
    ("client-secret", None),
    ("client-certificate", None),
    ("client-certificate-password", None),
    ("username", None),
    ("password", None),
    ("identity-resource-id", None),
    ("server-id", None),
    ("federated-token-file", None),
    ("authority-host", None),
    ("azure-pipelines-service-connection-id", None),
    ("token-cache-dir", None),
    ("cache-dir", None),
    ("tenant-id", Some('t')),
    ("subscription", Some('s')),
    ("environment", Some('e')),
    ("timeout", None),
    ("pop-claims", None),
    ("redirect-url", None),
    ("login-hint", None),
];

/// Switches.
const SWITCHES: [&str; 5] = [
    "legacy",
    "use-azurerm-env-vars",
    "pop-enabled",
    "disable-environment-override",
    "disable-instance-discovery",
];

/// Whether a `kubelogin` stanza is Azure's rather than int128's. int128's names its issuer with
/// `--oidc-issuer-url` (every stanza of it has one); Azure's has none of the `--oidc-` flags,
/// and has its own (`--server-id`, `--login`, …) or its variables in the env.
pub(super) fn is_azure(args: &[String], env: &[(String, String)]) -> bool {
    if args.iter().any(|arg| arg.starts_with("--oidc-")) {
        return false;
    }
    // Flags both tools have say nothing.
    const SHARED: [&str; 3] = ["username", "password", "token-cache-dir"];
    let azure_flag = args.iter().any(|arg| {
        let name = arg.split('=').next().unwrap_or(arg);
        match name.strip_prefix("--") {
            Some(long) => {
                !SHARED.contains(&long)
                    && (VALUED.iter().any(|(flag, _)| *flag == long) || SWITCHES.contains(&long))
            }
            None => name
                .strip_prefix('-')
                .and_then(|s| s.chars().next())
                .is_some_and(|c| VALUED.iter().any(|(_, short)| *short == Some(c))),
        }
    });
    azure_flag
        || env
            .iter()
            .any(|(name, _)| name.starts_with("AAD_") || name.starts_with("AZURE_"))
}

/// The stanza's settings as Azure's kubelogin reads them.
#[derive(Debug, Default)]
struct Settings {
    values: Vec<(&'static str, String)>,
    switches: Vec<&'static str>,
}

impl Settings {
    fn get(&self, flag: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(name, _)| *name == flag)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.is_empty())
    }

    fn on(&self, switch: &str) -> bool {
        self.switches.contains(&switch)
    }
}

/// pflag's syntax: `--flag=value`, `--flag value`, `-f value`, `-f=value`, `-fvalue`, switches
/// alone or `=true`/`=false`.
fn parse(args: &[String]) -> Result<Settings, String> {
    let mut settings = Settings::default();
    let mut words = args.iter().skip_while(|a| *a == "get-token");
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (word.as_str(), None),
        };
        let flag = if let Some(long) = name.strip_prefix("--") {
            VALUED
                .iter()
                .map(|(flag, _)| *flag)
                .find(|flag| *flag == long)
                .map(Ok)
                .or_else(|| SWITCHES.iter().find(|s| **s == long).map(|s| Err(*s)))
        } else if let Some(short) = name.strip_prefix('-').and_then(|s| s.chars().next()) {
            let flag = VALUED
                .iter()
                .find(|(_, c)| *c == Some(short))
                .map(|(flag, _)| *flag);
            // `-ldevicecode`: the value glued to the letter.
            let glued = name.get(1 + short.len_utf8()..).unwrap_or("").to_string();
            match (flag, inline.is_none() && !glued.is_empty()) {
                (Some(flag), true) => {
                    settings.values.push((flag, glued));
                    continue;
                }
                (flag, _) => flag.map(Ok),
            }
        } else {
            None
        };
        match flag {
            Some(Ok(flag)) => {
                let value = match inline {
                    Some(value) => value,
                    None => words
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("--{flag} has no value"))?,
                };
                settings.values.push((flag, value));
            }
            Some(Err(switch)) => {
                if inline.as_deref().is_none_or(|v| v == "true" || v == "1") {
                    settings.switches.push(switch);
                }
            }
            None => {
                return Err(format!(
                    "{} is not a flag of Azure's kubelogin get-token",
                    crate::text::printable_brief(word, 60)
                ));
            }
        }
    }
    Ok(settings)
}

/// The plan for an Azure kubelogin stanza.
pub(super) fn plan(args: &[String], env: &[(String, String)]) -> Plan {
    match convert(args, env) {
        Ok(conversion) => Plan::Convert(conversion),
        Err(reason) => Plan::Skip(reason),
    }
}

fn convert(args: &[String], env: &[(String, String)]) -> Result<Conversion, String> {
    let settings = parse(args).map_err(|reason| format!("Azure kubelogin: {reason}"))?;
    let override_from_env = !settings.on("disable-environment-override");
    let from_env = |names: &[&str]| -> Option<String> {
        override_from_env
            .then(|| {
                // Azure reads them in this order, each overriding the one before.
                names.iter().rev().find_map(|name| {
                    env.iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, value)| value.clone())
                })
            })
            .flatten()
            .filter(|value| !value.is_empty())
    };
    let login = from_env(&["AAD_LOGIN_METHOD"])
        .or_else(|| settings.get("login").map(String::from))
        .unwrap_or_else(|| "devicecode".into());
    let label = format!("Azure kubelogin --login {login}");
    let stays = |why: &str| Err(format!("{label}: stays with Azure's tool ({why})"));
    match login.as_str() {
        "devicecode" | "interactive" | "spn" | "ropc" | "workloadidentity" => {}
        "msi" => {
            return stays(
                "a managed identity's token comes from Azure's instance metadata endpoint, not from a grant kubecred can make",
            );
        }
        "azurecli" => return stays("it reuses the Azure CLI's login"),
        "azd" => return stays("it reuses the Azure Developer CLI's login"),
        "azurepipelines" => return stays("it uses an Azure Pipelines service connection"),
        other => {
            return Err(format!(
                "Azure kubelogin: unknown --login {:?}",
                crate::text::printable_brief(other, 40)
            ));
        }
    }
    if settings.on("legacy") {
        return stays(
            "--legacy asks for AAD v1 tokens with the spn: audience; kubecred speaks Entra's v2.0 endpoint",
        );
    }
    if settings.on("pop-enabled") {
        return stays(
            "--pop-enabled asks for proof-of-possession tokens bound to a key Azure's tool keeps; kubecred hands out bearer tokens",
        );
    }
    if settings.on("disable-instance-discovery") {
        return stays(
            "--disable-instance-discovery is for authorities that are not Entra ID, whose issuer kubecred cannot derive",
        );
    }
    if settings.on("use-azurerm-env-vars") {
        return stays(
            "--use-azurerm-env-vars reads Terraform's ARM_* variables where kubectl runs, which a kubeconfig cannot name",
        );
    }
    let server_id = settings.get("server-id").ok_or(format!(
        "{label}: no --server-id (Azure's kubelogin requires it too)"
    ))?;
    let workload = login == "workloadidentity";
    let client_id = if workload {
        from_env(&["AZURE_CLIENT_ID"]).or_else(|| settings.get("client-id").map(String::from))
    } else {
        from_env(&["AAD_SERVICE_PRINCIPAL_CLIENT_ID", "AZURE_CLIENT_ID"])
            .or_else(|| settings.get("client-id").map(String::from))
    };
    let tenant =
        from_env(&["AZURE_TENANT_ID"]).or_else(|| settings.get("tenant-id").map(String::from));
    let at_run_time = |what: &str| {
        format!(
            "{label}: its {what} comes from the environment kubectl runs in (Azure's variables, which kubecred does not read and a kubeconfig cannot name); convert it by hand (README: Migrating from Azure kubelogin)"
        )
    };
    let client_id = client_id.ok_or_else(|| at_run_time("client ID"))?;
    let tenant = tenant.ok_or_else(|| at_run_time("tenant ID"))?;
    let authority = match (
        workload
            .then(|| from_env(&["AZURE_AUTHORITY_HOST"]))
            .flatten(),
        settings.get("authority-host"),
    ) {
        (Some(host), _) => host,
        (None, Some(host)) => host.to_string(),
        (None, None) => format!("https://{}/", login_host(settings.get("environment"))),
    };
    let authority = authority.trim_end_matches('/');
    let issuer = format!("{authority}/{tenant}/v2.0");
    let scope = {
        let id = server_id.trim_end_matches('/');
        if id.ends_with(DEFAULT_SCOPE_SUFFIX) {
            id.to_string()
        } else {
            format!("{id}{DEFAULT_SCOPE_SUFFIX}")
        }
    };
    let mut args = vec![
        "get-token".to_string(),
        format!("--issuer-url={issuer}"),
        format!("--client-id={client_id}"),
        format!("--scope={scope}"),
    ];
    let mut env_out: Vec<EnvVar> = env
        .iter()
        .filter(|(name, _)| !(name.starts_with("AAD_") || name.starts_with("AZURE_")))
        .map(|(name, value)| EnvVar::new(name, value))
        .collect();
    let mut notes = Vec::new();
    let person = |args: &mut Vec<String>, grant: &str| {
        args.push(format!("--grant-type={grant}"));
        args.push("--scope=offline_access".into());
        args.push("--use-access-token".into());
    };
    let tokens = match login.as_str() {
        "devicecode" => {
            person(&mut args, "device-code");
            Tokens::Unreadable(MSAL)
        }
        "interactive" => {
            person(&mut args, "authcode");
            let redirect = settings.get("redirect-url").unwrap_or("http://localhost/");
            args.push(format!("--redirect-url={redirect}"));
            if let Some(hint) = settings.get("login-hint") {
                args.push(format!("--login-hint={hint}"));
            }
            Tokens::Unreadable(MSAL)
        }
        "ropc" => {
            let username = from_env(&["AAD_USER_PRINCIPAL_NAME", "AZURE_USERNAME"])
                .or_else(|| settings.get("username").map(String::from))
                .ok_or_else(|| at_run_time("user name"))?;
            person(&mut args, "password");
            args.push(format!("--username={username}"));
            match from_env(&["AAD_USER_PRINCIPAL_PASSWORD", "AZURE_PASSWORD"])
                .or_else(|| settings.get("password").map(String::from))
            {
                Some(password) => env_out.push(EnvVar::new("KUBECRED_PASSWORD", password)),
                None => notes.push(
                    "the password is asked for at the first login (or set KUBECRED_PASSWORD)"
                        .into(),
                ),
            }
            Tokens::Unreadable(MSAL)
        }
        "spn" => {
            let certificate = from_env(&[
                "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE",
                "AZURE_CLIENT_CERTIFICATE_PATH",
            ])
            .or_else(|| settings.get("client-certificate").map(String::from));
            if certificate.is_some() {
                return stays(
                    "a certificate credential: Entra identifies it by the x5t thumbprint in the client assertion's header, which kubecred does not send",
                );
            }
            let secret = from_env(&["AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "AZURE_CLIENT_SECRET"])
                .or_else(|| settings.get("client-secret").map(String::from))
                .ok_or_else(|| at_run_time("client secret"))?;
            args.push("--grant-type=client-credentials".into());
            env_out.push(EnvVar::new("KUBECRED_CLIENT_SECRET", secret));
            Tokens::NotNeeded
        }
        _ => {
            let file = from_env(&["AZURE_FEDERATED_TOKEN_FILE"])
                .or_else(|| settings.get("federated-token-file").map(String::from))
                .ok_or_else(|| at_run_time("federated token file"))?;
            args.push("--grant-type=client-credentials".into());
            args.push(format!("--client-assertion-file={file}"));
            Tokens::NotNeeded
        }
    };
    if settings
        .get("cache-dir")
        .or(settings.get("token-cache-dir"))
        .is_some()
    {
        notes.push(
            "dropped --cache-dir: it named Azure kubelogin's cache; kubecred keeps its own".into(),
        );
    }
    Ok(Conversion {
        from: label,
        args,
        env: env_out,
        tokens,
        notes,
    })
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
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn converted(line: &str, env: &[(&str, &str)]) -> Result<Conversion, String> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert!(is_azure(&words(line), &env) || !env.is_empty());
        convert(&words(line), &env)
    }

    const AKS: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";

    #[test]
    fn devicecode_interactive_spn_and_workload_identity_map_to_entra_grants() {
        let c = converted(&format!("get-token --login devicecode --server-id {AKS} --client-id 80faf920 --tenant-id T --environment AzureUSGovernment"), &[]).unwrap();
        assert_eq!(c.from, "Azure kubelogin --login devicecode");
        assert_eq!(
            c.args,
            words(&format!(
                "get-token --issuer-url=https://login.microsoftonline.us/T/v2.0 --client-id=80faf920 --scope={AKS}/.default --grant-type=device-code --scope=offline_access --use-access-token"
            ))
        );
        assert!(matches!(c.tokens, Tokens::Unreadable(_)));

        let c = converted(
            &format!(
                "get-token -l interactive --server-id={AKS}/ --client-id=C -t=T --login-hint=ada@x"
            ),
            &[],
        )
        .unwrap();
        assert!(c.args.contains(&"--grant-type=authcode".to_string()));
        assert!(
            c.args
                .contains(&"--redirect-url=http://localhost/".to_string())
        );
        assert!(c.args.contains(&"--login-hint=ada@x".to_string()));
        assert!(c.args.contains(&format!("--scope={AKS}/.default")));

        // The secret from the flag, or from the stanza's env, which wins (as in Azure's tool).
        let c = converted(&format!("get-token --login spn --server-id {AKS} --client-id C --tenant-id T --client-secret from-flag"), &[("AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "from-env"), ("HTTPS_PROXY", "http://proxy:3128")]).unwrap();
        assert!(
            c.args
                .contains(&"--grant-type=client-credentials".to_string())
        );
        assert!(!c.args.iter().any(|a| a.contains("from-")));
        let env: Vec<(&str, &str)> = c
            .env
            .iter()
            .map(|var| (var.name.as_str(), var.value.expose()))
            .collect();
        assert_eq!(
            env,
            [
                ("HTTPS_PROXY", "http://proxy:3128"),
                ("KUBECRED_CLIENT_SECRET", "from-env")
            ]
        );
        assert!(matches!(c.tokens, Tokens::NotNeeded));

        let c = converted(
            &format!("get-token --login workloadidentity --server-id {AKS}"),
            &[
                ("AZURE_CLIENT_ID", "C"),
                ("AZURE_TENANT_ID", "T"),
                ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"),
                ("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/"),
            ],
        )
        .unwrap();
        assert!(
            c.args
                .contains(&"--client-assertion-file=/var/run/token".to_string())
        );
        assert!(
            c.args
                .contains(&"--issuer-url=https://login.microsoftonline.com/T/v2.0".to_string())
        );
    }

    #[test]
    fn what_only_azure_can_do_stays_with_azure_and_says_why() {
        for (line, why) in [
            ("get-token --login msi --server-id S", "instance metadata"),
            ("get-token --login azurecli --server-id S", "Azure CLI"),
            (
                "get-token --login spn --server-id S --client-id C --tenant-id T --client-certificate c.pfx",
                "x5t",
            ),
            (
                "get-token --server-id S --client-id C --tenant-id T --legacy",
                "AAD v1",
            ),
            (
                "get-token --login interactive --server-id S --client-id C --tenant-id T --pop-enabled --pop-claims u=x",
                "proof-of-possession",
            ),
        ] {
            let reason = converted(line, &[]).unwrap_err();
            assert!(
                reason.contains("stays with Azure's tool") && reason.contains(why),
                "{line}: {reason}"
            );
        }
        // A secret the kubeconfig does not hold cannot be written into it.
        let reason = converted(
            "get-token --login spn --server-id S --client-id C --tenant-id T",
            &[],
        )
        .unwrap_err();
        assert!(
            reason.contains("client secret comes from the environment"),
            "{reason}"
        );
        assert!(
            converted("get-token --server-id S --bogus", &[])
                .unwrap_err()
                .contains("--bogus is not a flag")
        );
    }

    #[test]
    fn int128_stanzas_are_not_taken_for_azures() {
        assert!(!is_azure(
            &words(
                "get-token --oidc-issuer-url=https://i --oidc-client-id=c --grant-type=password --username=u --password=p --token-cache-dir=/x -v1"
            ),
            &[]
        ));
        assert!(is_azure(&words("get-token --server-id S"), &[]));
        assert!(is_azure(&words("get-token -l spn"), &[]));
    }
}
