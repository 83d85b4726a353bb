//! Azure's kubelogin stanzas through the conversion: every stanza of Azure's own converter
//! table (pkg/internal/converter/convert_test.go at its HEAD: each row's input, an exec stanza
//! or a legacy `auth-provider: azure`, and the stanza Azure writes for it) converted to a
//! kubecred stanza that resolves to the same login, or left with its reason; and the reading
//! rules one by one (pflag's booleans, the environment over the flags, `--legacy` and
//! `--pop-enabled` where Azure honours them).

use super::*;
use crate::commands::stanza;
use crate::config::{Grant, TokenKind};
use crate::exec_credential::ExecInfo;
use crate::peers::azure_kubelogin::is_azure;

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// The plan for `line` with the stanza's `env`, in a process environment that has nothing.
fn converted(line: &str, env: &[(&str, &str)]) -> Result<Conversion, String> {
    converted_here(line, env, &[])
}

/// The same, in a process environment of `here`.
fn converted_here(
    line: &str,
    env: &[(&str, &str)],
    here: &[(&str, &str)],
) -> Result<Conversion, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let here: Vec<(String, String)> = here
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let process = move |name: &str| here.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    read(&words(line), &env, &process).and_then(|options| convert(&options, &env))
}

/// What a converted stanza resolves to, as get-token will resolve it.
fn resolved(conversion: &Conversion) -> crate::config::Config {
    stanza::resolve(&conversion.args, &conversion.env, ExecInfo::absent())
        .unwrap_or_else(|err| panic!("{:?}: {err:?}", conversion.args))
}

/// The outcome a row must have.
enum Outcome {
    /// Converted: the grant and client (the tenant is always `tenantID`, the API `serverID`).
    Grant(Grant, &'static str),
    /// Converted to a stanza whose flags get-token takes from phase 2 of issue 45 on (the Azure
    /// sources): these args exactly.
    Planned(&'static [&'static str]),
    /// Left, with a reason holding this.
    Left(&'static str),
}
use Outcome::{Grant as To, Left, Planned};

const AZ_CLI: &[&str] = &[
    "get-token",
    "--grant-type=azure-cli",
    "--scope=serverID/.default",
];
const AZ_CLI_TENANT: &[&str] = &[
    "get-token",
    "--grant-type=azure-cli",
    "--scope=serverID/.default",
    "--tenant-id=tenantID",
];
const AZD: &[&str] = &[
    "get-token",
    "--grant-type=azure-developer-cli",
    "--scope=serverID/.default",
];
const AZD_TENANT: &[&str] = &[
    "get-token",
    "--grant-type=azure-developer-cli",
    "--scope=serverID/.default",
    "--tenant-id=tenantID",
];
const MSI: &[&str] = &[
    "get-token",
    "--grant-type=managed-identity",
    "--scope=serverID/.default",
];
const SPN_CERT: &[&str] = &[
    "get-token",
    "--issuer-url=https://login.microsoftonline.com/tenantID/v2.0",
    "--client-id=spClientID",
    "--scope=serverID/.default",
    "--grant-type=client-credentials",
    "--client-certificate-file=/tmp/clientcert",
];

/// Every stanza of Azure's converter table: the rows' exec inputs, and the args Azure writes
/// (`get-token` and `expectedArgs`), named after the row.
const ROWS: &[(&str, &str, Outcome)] = &[
    (
        "legacy to msi",
        "get-token --server-id serverID --login msi",
        Planned(MSI),
    ),
    (
        "legacy to msi with client-id override",
        "get-token --server-id serverID --client-id msi-client-id --login msi",
        Planned(&[
            "get-token",
            "--grant-type=managed-identity",
            "--scope=serverID/.default",
            "--client-id=msi-client-id",
        ]),
    ),
    (
        "legacy to workload identity",
        "get-token --server-id serverID --login workloadidentity",
        Left("no client ID"),
    ),
    (
        "legacy to workload identity with overrides",
        "get-token --server-id serverID --client-id spClientID --tenant-id tenantID --authority-host https://login.microsoftonline.com/ --federated-token-file /tmp/file --login workloadidentity",
        To(Grant::ClientCredentials, "spClientID"),
    ),
    (
        "legacy to spn without setting environment",
        "get-token --server-id serverID --client-id spClientID --tenant-id tenantID --login spn",
        Left("no client secret or certificate"),
    ),
    (
        "legacy to spn with clientSecret",
        "get-token --server-id serverID --client-id spClientID --client-secret foosecret --tenant-id tenantID --environment foo --login spn",
        To(Grant::ClientCredentials, "spClientID"),
    ),
    (
        "legacy to spn with clientCert",
        "get-token --server-id serverID --client-id spClientID --client-certificate /tmp/clientcert --tenant-id tenantID --environment foo --login spn",
        Planned(SPN_CERT),
    ),
    (
        "legacy to spn with password-protected clientCert",
        "get-token --server-id serverID --client-id spClientID --client-certificate /tmp/clientcert --client-certificate-password clientcertsecret --tenant-id tenantID --environment foo --login spn",
        Planned(SPN_CERT),
    ),
    (
        "legacy to ropc",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login ropc",
        Left("no user name"),
    ),
    (
        "legacy to ropc with username and password",
        "get-token --server-id serverID --client-id clientID --username foo123 --password foobar --tenant-id tenantID --environment foo --login ropc",
        To(Grant::Password, "clientID"),
    ),
    (
        "legacy to azurecli",
        "get-token --server-id serverID --login azurecli",
        Planned(AZ_CLI),
    ),
    (
        "legacy to azd",
        "get-token --server-id serverID --login azd",
        Planned(AZD),
    ),
    (
        "legacy to azurecli with --tenant-id",
        "get-token --server-id serverID --login azurecli --tenant-id tenantID",
        Planned(AZ_CLI_TENANT),
    ),
    (
        "legacy to azd with --tenant-id",
        "get-token --server-id serverID --login azd --tenant-id tenantID",
        Planned(AZD_TENANT),
    ),
    (
        "legacy to azurecli with --token-cache-dir",
        "get-token --server-id serverID --login azurecli --cache-dir /tmp/token_dir",
        Planned(AZ_CLI),
    ),
    (
        "legacy to devicecode with redundant arguments",
        "get-token --environment foo --server-id serverID --client-id clientID --tenant-id tenantID --legacy --login devicecode",
        Left("AAD v1"),
    ),
    (
        "legacy without --login: devicecode",
        "get-token --environment foo --server-id serverID --client-id clientID --tenant-id tenantID --legacy --login devicecode",
        Left("AAD v1"),
    ),
    (
        "legacy config-mode 1: devicecode without --legacy",
        "get-token --environment foo --server-id serverID --client-id clientID --tenant-id tenantID --login devicecode",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec azurecli input",
        "get-token --environment foo --server-id serverID --client-id clientID --tenant-id tenantID --login azurecli",
        Planned(AZ_CLI_TENANT),
    ),
    (
        "exec azurecli to azurecli with --subscription",
        "get-token --server-id serverID --login azurecli --subscription subscriptionID",
        Planned(&[
            "get-token",
            "--grant-type=azure-cli",
            "--scope=serverID/.default",
            "--azure-subscription=subscriptionID",
        ]),
    ),
    (
        "exec azurecli to devicecode input",
        "get-token --server-id serverID --login azurecli",
        Planned(AZ_CLI),
    ),
    (
        "exec azurecli to devicecode",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --login devicecode",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec to devicecode with args as overrides",
        "get-token --environment foo --server-id serverID --client-id clientID --tenant-id tenantID --login devicecode",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec devicecode input",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login devicecode",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec devicecode to devicecode with --legacy",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --legacy --login devicecode",
        Left("AAD v1"),
    ),
    (
        "exec devicecode and --legacy input",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login devicecode --legacy",
        Left("AAD v1"),
    ),
    (
        "exec devicecode to azurecli with --cache-dir",
        "get-token --server-id serverID --login azurecli --cache-dir /tmp/token_dir",
        Planned(AZ_CLI),
    ),
    (
        "exec with --token-cache-dir input",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --token-cache-dir /tmp/token_dir --environment foo --login devicecode",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec devicecode to spn",
        "get-token --environment foo --server-id serverID --tenant-id tenantID --client-id clientID --login spn",
        Left("no client secret or certificate"),
    ),
    (
        "exec devicecode to spn with clientID",
        "get-token --environment foo --server-id serverID --client-id spClientID --tenant-id tenantID --login spn",
        Left("no client secret or certificate"),
    ),
    (
        "exec devicecode to spn with --legacy",
        "get-token --environment foo --server-id serverID --client-id spClientID --tenant-id tenantID --legacy --login spn",
        Left("AAD v1"),
    ),
    (
        "exec devicecode to msi",
        "get-token --server-id serverID --login msi",
        Planned(MSI),
    ),
    (
        "exec devicecode to msi with identity-resource-id",
        "get-token --server-id serverID --identity-resource-id /msi/resource/id --login msi",
        Planned(&[
            "get-token",
            "--grant-type=managed-identity",
            "--scope=serverID/.default",
            "--identity-resource-id=/msi/resource/id",
        ]),
    ),
    (
        "exec devicecode to ropc",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login ropc",
        Left("no user name"),
    ),
    (
        "exec devicecode to ropc with --legacy (ignored by Azure)",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --legacy --login ropc --username foo123",
        To(Grant::Password, "clientID"),
    ),
    (
        "exec devicecode to ropc with username and password",
        "get-token --server-id serverID --client-id clientID --username foo123 --password foobar --tenant-id tenantID --environment foo --login ropc",
        To(Grant::Password, "clientID"),
    ),
    (
        "exec devicecode to workload identity",
        "get-token --server-id serverID --login workloadidentity",
        Left("no client ID"),
    ),
    (
        "exec devicecode to workload identity with override",
        "get-token --server-id serverID --client-id spClientID --tenant-id tenantID --authority-host https://login.microsoftonline.com/ --federated-token-file /tmp/file --login workloadidentity",
        To(Grant::ClientCredentials, "spClientID"),
    ),
    (
        "exec devicecode to interactive",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login interactive",
        To(Grant::Authcode, "clientID"),
    ),
    (
        "exec devicecode to interactive without environment",
        "get-token --server-id serverID --tenant-id tenantID --client-id clientID --login interactive",
        To(Grant::Authcode, "clientID"),
    ),
    (
        "exec devicecode to interactive with redirect url",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login interactive --redirect-url http://localhost:8000",
        To(Grant::Authcode, "clientID"),
    ),
    (
        "exec devicecode to interactive with login hint",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login interactive --login-hint username",
        To(Grant::Authcode, "clientID"),
    ),
    (
        "exec devicecode to interactive with --legacy (ignored by Azure)",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --login interactive --legacy=TRUE",
        To(Grant::Authcode, "clientID"),
    ),
    (
        "pop-enabled alone input",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login devicecode --pop-enabled",
        Left("--pop-enabled and --pop-claims go together"),
    ),
    (
        "pop-claims alone input",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login devicecode --pop-claims u=testhost",
        Left("--pop-enabled and --pop-claims go together"),
    ),
    (
        "devicecode with pop input (ignored by Azure)",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login devicecode --pop-enabled --pop-claims u=testhost,1=2",
        To(Grant::DeviceCode, "clientID"),
    ),
    (
        "exec devicecode to interactive with pop",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login interactive --pop-enabled --pop-claims u=testhost,1=2",
        Left("proof-of-possession"),
    ),
    (
        "exec devicecode to ropc with pop",
        "get-token --server-id serverID --client-id clientID --tenant-id tenantID --environment foo --login ropc --pop-enabled --pop-claims u=testhost,1=2",
        Left("proof-of-possession"),
    ),
    (
        "exec devicecode to spn with pop",
        "get-token --environment foo --server-id serverID --tenant-id tenantID --client-id clientID --login spn --pop-enabled --pop-claims u=testhost,1=2",
        Left("proof-of-possession"),
    ),
    (
        "exec azurecli with pop input",
        "get-token --server-id serverID --login azurecli --pop-enabled --pop-claims u=testhost,1=2",
        Planned(AZ_CLI),
    ),
    (
        "exec devicecode to spn with environment override disabled",
        "get-token --environment foo --server-id serverID --tenant-id tenantID --client-id clientID --login spn --disable-environment-override",
        Left("no client secret or certificate"),
    ),
];

#[test]
fn every_stanza_of_azures_converter_table_is_converted_alike_or_left_with_its_reason() {
    for (name, line, outcome) in ROWS {
        let result = converted(line, &[]);
        match (outcome, result) {
            (To(grant, client), Ok(conversion)) => {
                let config = resolved(&conversion);
                assert_eq!(config.grant, *grant, "{name}");
                assert_eq!(config.client.id, *client, "{name}");
                assert_eq!(
                    config.issuer_as_given, "https://login.microsoftonline.com/tenantID/v2.0",
                    "{name}"
                );
                assert!(
                    config.scopes.contains(&"serverID/.default".to_string()),
                    "{name}"
                );
                // What kubectl gets: Azure hands out the access token for the server app.
                assert_eq!(config.token_kind, TokenKind::AccessToken, "{name}");
                if *grant == Grant::Authcode {
                    let expected = match line.split_once("--redirect-url ") {
                        Some((_, rest)) => rest.split_whitespace().next().unwrap(),
                        None => "http://localhost",
                    };
                    assert_eq!(config.login.redirect.as_str(), expected, "{name}");
                }
            }
            (Planned(args), Ok(conversion)) => assert_eq!(conversion.args, *args, "{name}"),
            (Left(why), Err(reason)) => assert!(reason.contains(why), "{name}: {reason}"),
            (To(..) | Planned(_), Err(reason)) => panic!("{name}: left: {reason}"),
            (Left(why), Ok(c)) => panic!("{name}: converted {:?}, expected left ({why})", c.args),
        }
    }
}

#[test]
fn legacy_auth_provider_azure_is_read_as_azures_converter_reads_it() {
    let provider = |mode: Option<&str>| {
        let mode = mode
            .map(|m| format!(", config-mode: '{m}'"))
            .unwrap_or_default();
        let text = format!(
            "{{environment: foo, apiserver-id: serverID, client-id: clientID, tenant-id: tenantID{mode}}}"
        );
        super::plan_auth_provider(Some(&serde_norway::from_str(&text).unwrap()))
    };
    for mode in [None, Some("0")] {
        match provider(mode) {
            Plan::Skip(why) => assert!(why.contains("AAD v1"), "{mode:?}: {why}"),
            Plan::Convert(c) => panic!("{mode:?}: {:?}", c.args),
        }
    }
    let Plan::Convert(v2) = provider(Some("1")) else {
        panic!("config-mode 1 is a v2 device code login");
    };
    assert_eq!(v2.from, "auth-provider azure");
    assert_eq!(resolved(&v2).grant, Grant::DeviceCode);
}

#[test]
fn the_environment_wins_over_flags_as_azure_reads_it() {
    // The stanza's env over --client-id; AZURE_CLIENT_ID over AAD_SERVICE_PRINCIPAL_CLIENT_ID.
    let line =
        "get-token --login spn --server-id S --client-id from-flag --tenant-id T --client-secret s";
    let client = |env: &[(&str, &str)]| resolved(&converted(line, env).unwrap()).client.id;
    assert_eq!(client(&[]), "from-flag");
    assert_eq!(client(&[("AAD_SERVICE_PRINCIPAL_CLIENT_ID", "aad")]), "aad");
    assert_eq!(
        client(&[
            ("AZURE_CLIENT_ID", "azure"),
            ("AAD_SERVICE_PRINCIPAL_CLIENT_ID", "aad")
        ]),
        "azure"
    );
    // ... unless --disable-environment-override; with --use-azurerm-env-vars, ARM_*.
    let off = format!("{line} --disable-environment-override");
    assert_eq!(
        resolved(&converted(&off, &[("AZURE_CLIENT_ID", "azure")]).unwrap())
            .client
            .id,
        "from-flag"
    );
    let arm = format!("{line} --use-azurerm-env-vars");
    assert_eq!(
        resolved(
            &converted(
                &arm,
                &[("ARM_CLIENT_ID", "arm"), ("AZURE_CLIENT_ID", "azure")]
            )
            .unwrap()
        )
        .client
        .id,
        "arm"
    );
    // The secret from the env, which wins, into kubecred's env; other variables kept.
    let c = converted(
        line,
        &[
            ("AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "from-env"),
            ("HTTPS_PROXY", "http://proxy:3128"),
        ],
    )
    .unwrap();
    let env: Vec<(&str, &str)> = c
        .env
        .iter()
        .map(|v| (v.name.as_str(), v.value.expose()))
        .collect();
    assert_eq!(
        env,
        [
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("KUBECRED_CLIENT_SECRET", "from-env")
        ]
    );
    assert!(!c.args.iter().any(|a| a.contains("from-env")));
    // A variable that only the environment convert runs in sets (where kubectl runs too,
    // presumably): Azure would use it, and a kubeconfig cannot hold it.
    let reason = converted_here(line, &[], &[("AZURE_CLIENT_ID", "here")]).unwrap_err();
    assert!(
        reason.contains("comes from AZURE_CLIENT_ID in the environment kubectl runs in"),
        "{reason}"
    );
    // AAD_LOGIN_METHOD in the stanza changes the login.
    let msi = converted(line, &[("AAD_LOGIN_METHOD", "msi")]).unwrap();
    assert_eq!(msi.from, "Azure kubelogin --login msi");
    assert_eq!(
        msi.args,
        [
            "get-token",
            "--grant-type=managed-identity",
            "--scope=S/.default",
            "--client-id=from-flag"
        ]
    );
}

#[test]
fn the_azure_sources_keep_the_identity_azure_runs_with() {
    let env_of = |c: &Conversion| -> Vec<(String, String)> {
        c.env
            .iter()
            .map(|v| (v.name.clone(), v.value.expose().to_string()))
            .collect()
    };
    // The Azure CLI: its tenant from AZURE_TENANT_ID in the stanza, its config dir kept (az
    // reads it), the variables that became flags gone.
    let cli = converted(
        "get-token --login azurecli --server-id 6dae42f8-4368-4678-94ff-3960e28e3630",
        &[
            ("AZURE_TENANT_ID", "t-1"),
            ("AZURE_CONFIG_DIR", "/home/ci/.azure-ci"),
        ],
    )
    .unwrap();
    assert_eq!(
        cli.args,
        [
            "get-token",
            "--grant-type=azure-cli",
            "--scope=6dae42f8-4368-4678-94ff-3960e28e3630/.default",
            "--tenant-id=t-1"
        ]
    );
    assert_eq!(
        env_of(&cli),
        [(
            "AZURE_CONFIG_DIR".to_string(),
            "/home/ci/.azure-ci".to_string()
        )]
    );
    assert!(matches!(cli.tokens, Tokens::NotNeeded));
    let timed = converted("get-token --login azurecli --server-id S --timeout 2m", &[]).unwrap();
    assert_eq!(
        timed.notes,
        ["dropped --timeout (AZURE_CLI_TIMEOUT): kubecred bounds each step by its own time limits"]
    );
    // A tenant only this environment gives is not the kubeconfig's to hold.
    let reason = converted_here(
        "get-token --login azurecli --server-id S",
        &[],
        &[("AZURE_TENANT_ID", "t-here")],
    )
    .unwrap_err();
    assert!(
        reason.contains(
            "its tenant ID comes from AZURE_TENANT_ID in the environment kubectl runs in"
        ),
        "{reason}"
    );
    // A managed identity by the client ID in its variable; the client ID wins over a resource ID.
    let msi = converted(
        "get-token --login msi --server-id S --identity-resource-id /sub/x",
        &[("AZURE_CLIENT_ID", "mi-client")],
    )
    .unwrap();
    assert_eq!(
        msi.args,
        [
            "get-token",
            "--grant-type=managed-identity",
            "--scope=S/.default",
            "--client-id=mi-client"
        ]
    );
    assert_eq!(
        msi.notes,
        [
            "dropped --identity-resource-id: Azure's kubelogin names the identity by its client ID when both are given"
        ]
    );
    // A certificate and its password, from Azure's variables: the password in kubecred's.
    for variable in [
        "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    ] {
        let spn = converted(
            "get-token --login spn --server-id serverID --client-id spClientID --tenant-id tenantID",
            &[
                ("AZURE_CLIENT_CERTIFICATE_PATH", "/tmp/clientcert"),
                (variable, "cert-password"),
            ],
        )
        .unwrap();
        assert_eq!(spn.args, SPN_CERT, "{variable}");
        assert_eq!(
            env_of(&spn),
            [(
                "KUBECRED_CLIENT_CERTIFICATE_PASSWORD".to_string(),
                "cert-password".to_string()
            )],
            "{variable}"
        );
        assert!(!spn.args.iter().any(|a| a.contains("cert-password")));
    }
    let password = converted(
        "get-token --login spn --server-id serverID --client-id spClientID --tenant-id tenantID --client-certificate /tmp/clientcert --client-certificate-password clientcertsecret",
        &[],
    )
    .unwrap();
    assert_eq!(
        env_of(&password),
        [(
            "KUBECRED_CLIENT_CERTIFICATE_PASSWORD".to_string(),
            "clientcertsecret".to_string()
        )]
    );
    // ... and what keeps a certificate with Azure's tool: AAD v1, proof of possession.
    let base = "get-token --login spn --server-id S --client-id C --tenant-id T --client-certificate /c.pfx";
    let reason = converted(&format!("{base} --legacy"), &[]).unwrap_err();
    assert!(reason.contains("AAD v1"), "{reason}");
    let reason = converted(&format!("{base} --pop-enabled --pop-claims u=h"), &[]).unwrap_err();
    assert!(reason.contains("proof-of-possession"), "{reason}");
}

#[test]
fn azure_pipelines_takes_its_service_connection_as_azure_does() {
    let line = "get-token --login azurepipelines --server-id serverID";
    let expected = [
        "get-token",
        "--issuer-url=https://login.microsoftonline.com/tenantID/v2.0",
        "--client-id=clientID",
        "--scope=serverID/.default",
        "--grant-type=client-credentials",
        "--client-assertion-source=azure-pipelines",
        "--azure-pipelines-service-connection-id=sc-1",
    ];
    let flags = converted(
        &format!(
            "{line} --client-id clientID --tenant-id tenantID --azure-pipelines-service-connection-id sc-1"
        ),
        &[],
    )
    .unwrap();
    assert_eq!(flags.args, expected);
    // The AzureCLI@2 task's variables, in the stanza's env, for what the flags leave empty.
    let task = converted(
        line,
        &[
            ("AZURESUBSCRIPTION_CLIENT_ID", "clientID"),
            ("AZURESUBSCRIPTION_TENANT_ID", "tenantID"),
            ("AZURESUBSCRIPTION_SERVICE_CONNECTION_ID", "sc-1"),
        ],
    )
    .unwrap();
    assert_eq!(task.args, expected);
    assert!(task.env.is_empty());
    // The flags win over the task's variables.
    let both = converted(
        &format!("{line} --client-id clientID --tenant-id tenantID --azure-pipelines-service-connection-id sc-1"),
        &[("AZURESUBSCRIPTION_SERVICE_CONNECTION_ID", "sc-other")],
    )
    .unwrap();
    assert_eq!(both.args, expected);
    // Set only where the pipeline runs: not the kubeconfig's to hold.
    let reason = converted_here(
        line,
        &[],
        &[
            ("AZURESUBSCRIPTION_CLIENT_ID", "clientID"),
            ("AZURESUBSCRIPTION_TENANT_ID", "tenantID"),
            ("AZURESUBSCRIPTION_SERVICE_CONNECTION_ID", "sc-1"),
        ],
    )
    .unwrap_err();
    assert!(
        reason
            .contains("comes from AZURESUBSCRIPTION_CLIENT_ID in the environment kubectl runs in"),
        "{reason}"
    );
    let reason = converted(
        &format!("{line} --client-id clientID --tenant-id tenantID"),
        &[],
    )
    .unwrap_err();
    assert!(reason.contains("no service connection ID"), "{reason}");
}

#[test]
fn flags_are_read_as_pflag_reads_them() {
    let base = "get-token --server-id S --client-id C --tenant-id T";
    // Go's spellings of true and false.
    for on in [
        "--legacy",
        "--legacy=TRUE",
        "--legacy=t",
        "--legacy=1",
        "--legacy=True",
    ] {
        let reason = converted(&format!("{base} {on}"), &[]).unwrap_err();
        assert!(reason.contains("AAD v1"), "{on}: {reason}");
    }
    for off in [
        "--legacy=false",
        "--legacy=F",
        "--legacy=0",
        "--legacy=FALSE",
    ] {
        assert!(converted(&format!("{base} {off}"), &[]).is_ok(), "{off}");
    }
    assert!(
        converted(&format!("{base} --legacy=yes"), &[])
            .unwrap_err()
            .contains("not a boolean")
    );
    // klog's -v and --logtostderr, before get-token or after it.
    let verbose = converted(&format!("-v 5 --logtostderr {base}"), &[]).unwrap();
    assert!(
        verbose.args.contains(&"-v".to_string()),
        "{:?}",
        verbose.args
    );
    assert!(
        converted(&format!("{base} -v=10 --logtostderr=false"), &[])
            .unwrap()
            .args
            .contains(&"-vv".to_string())
    );
    // Shorthands, glued or not.
    assert!(
        converted(
            "get-token -l interactive --server-id S -t=T --client-id C",
            &[]
        )
        .is_ok()
    );
    assert!(
        converted(
            "get-token -ldevicecode --server-id S -tT --client-id C",
            &[]
        )
        .is_ok()
    );
    // What Azure itself refuses.
    for (line, why) in [
        (format!("{base} --bogus"), "unknown flag --bogus"),
        (format!("{base} --login magic"), "not one of devicecode"),
        (
            format!("{base} --authority-host https://login.example"),
            "ending with a slash",
        ),
        (format!("{base} --timeout 0s"), "above 0"),
        (
            "get-token --client-id C --tenant-id T".into(),
            "no --server-id",
        ),
    ] {
        let reason = converted(&line, &[]).unwrap_err();
        assert!(reason.contains(why), "{line}: {reason}");
    }
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
