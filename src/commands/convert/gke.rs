//! gke-gcloud-auth-plugin's stanzas, as `gcloud container clusters get-credentials` writes
//! them, to kubecred's `get-token --grant-type=google`, the identity unchanged:
//!
//! - no `--use_application_default_credentials` (what gcloud writes by default): the plugin runs
//!   `gcloud config config-helper --format=json` with its `--project`, `--account` and
//!   `--impersonate_service_account`, so the cluster sees gcloud's active account (or the
//!   service account it impersonates), whatever the ADC file holds. kubecred runs the same
//!   command: `--google-source=gcloud` with `--google-gcloud-project`, `--google-gcloud-account`
//!   and `--google-gcloud-impersonate-service-account`; the plugin's `--configuration` becomes
//!   the stanza's `CLOUDSDK_ACTIVE_CONFIG_NAME`, which gcloud reads as the same choice;
//! - `--use_application_default_credentials` (gcloud writes it when
//!   `container/use_application_default_credentials` is set): Application Default
//!   Credentials, which kubecred's default source resolves the same way (the plugin's
//!   `--project` and `--account` are gcloud's and go unused there, as in the plugin);
//! - `--use_edge_cloud`, and ADC with `--impersonate_service_account` (which the plugin's
//!   releases treat differently), stay with the plugin, with the reason.
//!
//! The stanza's `env` is kept: `GOOGLE_APPLICATION_CREDENTIALS`, `CLOUDSDK_CONFIG` and the like
//! choose the identity for kubecred as they did for the plugin. The plugin's klog flags (`-v`,
//! `--logtostderr`, …) are dropped with a note. The planned flags are get-token's from the
//! Google source on (docs/gke.md).

use super::plan::{Conversion, Plan, Tokens};
use crate::kubeconfig::EnvVar;

/// The plugin's own flags that take a value.
const VALUED: [&str; 6] = [
    "project",
    "account",
    "impersonate_service_account",
    "configuration",
    "location",
    "cluster",
];

/// The plugin's switches.
const SWITCHES: [&str; 2] = ["use_application_default_credentials", "use_edge_cloud"];

/// klog's flags, which the plugin takes for its logging: dropped. Those that take a value.
const KLOG_VALUED: [&str; 8] = [
    "v",
    "vmodule",
    "log_dir",
    "log_file",
    "log_file_max_size",
    "stderrthreshold",
    "log_backtrace_at",
    "version",
];

/// klog's switches.
const KLOG_SWITCHES: [&str; 6] = [
    "logtostderr",
    "alsologtostderr",
    "add_dir_header",
    "one_output",
    "skip_headers",
    "skip_log_headers",
];

/// The plugin's flags as pflag reads them: `--name=value`, `--name value`, switches alone or
/// with `=true`/`=false`; the last one given wins.
#[derive(Default, Debug)]
struct Flags {
    values: std::collections::BTreeMap<&'static str, String>,
    switches: std::collections::BTreeMap<&'static str, bool>,
    dropped: Vec<String>,
}

fn read(args: &[String]) -> Result<Flags, String> {
    let mut flags = Flags::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix("--").or_else(|| word.strip_prefix('-')) else {
            return Err(format!(
                "gke-gcloud-auth-plugin takes no argument {}",
                crate::text::printable_brief(word, 60)
            ));
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (flag, None),
        };
        if let Some(known) = VALUED.iter().find(|known| **known == name) {
            let value = match inline {
                Some(value) => value,
                None => words
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("gke-gcloud-auth-plugin's --{name} has no value"))?,
            };
            flags.values.insert(known, value);
        } else if let Some(known) = SWITCHES.iter().find(|known| **known == name) {
            let on = match inline.as_deref() {
                None => true,
                Some(text) => parse_bool(text).ok_or_else(|| {
                    format!("gke-gcloud-auth-plugin's --{name}={text} is not true or false")
                })?,
            };
            flags.switches.insert(known, on);
        } else if KLOG_VALUED.contains(&name) {
            if inline.is_none() && name != "version" {
                words.next();
            }
            if name == "version" {
                return Err(
                    "runs gke-gcloud-auth-plugin --version, which prints no credential".into(),
                );
            }
            flags.dropped.push(format!("--{name}"));
        } else if KLOG_SWITCHES.contains(&name) {
            flags.dropped.push(format!("--{name}"));
        } else {
            return Err(format!(
                "gke-gcloud-auth-plugin has no flag --{}",
                crate::text::printable_brief(name, 60)
            ));
        }
    }
    Ok(flags)
}

/// pflag's (Go's strconv.ParseBool) spellings.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The plan for a gke-gcloud-auth-plugin stanza with `args` and `env`.
pub(super) fn plan(args: &[String], env: &[(String, String)]) -> Plan {
    match convert(args, env) {
        Ok(conversion) => Plan::Convert(conversion),
        Err(reason) => Plan::Skip(reason),
    }
}

fn convert(args: &[String], env: &[(String, String)]) -> Result<Conversion, String> {
    let flags = read(args).map_err(|why| format!("stays with gke-gcloud-auth-plugin: {why}"))?;
    let on = |name: &str| flags.switches.get(name).copied().unwrap_or(false);
    let value = |name: &str| flags.values.get(name).filter(|v| !v.is_empty());
    if on("use_edge_cloud") {
        return Err("stays with gke-gcloud-auth-plugin: --use_edge_cloud (Google Distributed Cloud Edge) takes its token from `gcloud edge-cloud container clusters print-access-token`, which kubecred does not run".into());
    }
    let mut out = vec!["get-token".to_string(), "--grant-type=google".to_string()];
    let mut notes = Vec::new();
    let mut new_env: Vec<EnvVar> = env
        .iter()
        .map(|(name, value)| EnvVar::new(name.clone(), value.clone()))
        .collect();
    let adc = on("use_application_default_credentials");
    if adc {
        if value("impersonate_service_account").is_some() {
            return Err("stays with gke-gcloud-auth-plugin: --use_application_default_credentials with --impersonate_service_account, which the plugin's releases treat differently (some ignore the impersonation)".into());
        }
        let unused: Vec<String> = ["project", "account", "configuration"]
            .iter()
            .filter(|name| value(name).is_some())
            .map(|name| format!("--{name}"))
            .collect();
        if !unused.is_empty() {
            notes.push(format!(
                "left out {}: gcloud's, which the plugin does not run with --use_application_default_credentials",
                unused.join(", ")
            ));
        }
    } else {
        out.push("--google-source=gcloud".into());
        if let Some(project) = value("project") {
            out.push(format!("--google-gcloud-project={project}"));
        }
        if let Some(account) = value("account") {
            out.push(format!("--google-gcloud-account={account}"));
        }
        if let Some(account) = value("impersonate_service_account") {
            out.push(format!(
                "--google-gcloud-impersonate-service-account={account}"
            ));
        }
        if let Some(configuration) = value("configuration") {
            new_env.retain(|var| var.name != "CLOUDSDK_ACTIVE_CONFIG_NAME");
            new_env.push(EnvVar::new(
                "CLOUDSDK_ACTIVE_CONFIG_NAME",
                configuration.clone(),
            ));
            notes.push(format!(
                "--configuration={configuration} is the stanza's CLOUDSDK_ACTIVE_CONFIG_NAME, gcloud's same choice"
            ));
        }
    }
    for name in ["location", "cluster"] {
        if value(name).is_some() {
            notes.push(format!(
                "left out --{name}: the plugin reads it only with --use_edge_cloud"
            ));
        }
    }
    if !flags.dropped.is_empty() {
        notes.push(format!(
            "left out the plugin's logging flags {} (kubecred's is -v)",
            flags.dropped.join(", ")
        ));
    }
    Ok(Conversion {
        from: if adc {
            "gke-gcloud-auth-plugin (application default credentials)".into()
        } else {
            "gke-gcloud-auth-plugin (gcloud's credentials)".into()
        },
        args: out,
        env: new_env,
        // gcloud and the ADC file keep their own logins; the plugin's token cache
        // (~/.kube/gke_gcloud_auth_plugin_cache) holds only a short-lived access token, which the
        // first kubectl call replaces.
        tokens: Tokens::NotNeeded,
        notes,
        kubelogin: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|word| word.to_string()).collect()
    }

    fn converted(args: &[&str], env: &[(&str, &str)]) -> Conversion {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        match plan(&words(args), &env) {
            Plan::Convert(conversion) => conversion,
            Plan::Skip(why) => panic!("skipped: {why}"),
        }
    }

    fn skipped(args: &[&str]) -> String {
        match plan(&words(args), &[]) {
            Plan::Skip(why) => why,
            Plan::Convert(conversion) => panic!("converted: {conversion:?}"),
        }
    }

    #[test]
    fn gclouds_default_stanza_runs_gclouds_own_credentials() {
        // `gcloud container clusters get-credentials` with no ADC setting: no args at all.
        let conversion = converted(&[], &[]);
        assert_eq!(
            conversion.args,
            ["get-token", "--grant-type=google", "--google-source=gcloud"]
        );
        assert_eq!(
            conversion.from,
            "gke-gcloud-auth-plugin (gcloud's credentials)"
        );
        assert!(conversion.env.is_empty());
        assert!(conversion.notes.is_empty());
        assert!(matches!(conversion.tokens, Tokens::NotNeeded));
    }

    #[test]
    fn the_use_application_default_credentials_stanza_takes_adc() {
        for flag in [
            "--use_application_default_credentials",
            "--use_application_default_credentials=true",
            "-use_application_default_credentials",
        ] {
            let conversion = converted(&[flag], &[]);
            assert_eq!(conversion.args, ["get-token", "--grant-type=google"]);
            assert_eq!(
                conversion.from,
                "gke-gcloud-auth-plugin (application default credentials)"
            );
        }
        let conversion = converted(&["--use_application_default_credentials=false"], &[]);
        assert_eq!(
            conversion.args,
            ["get-token", "--grant-type=google", "--google-source=gcloud"]
        );
    }

    #[test]
    fn gclouds_impersonation_account_and_project_go_to_gcloud_as_the_plugin_passes_them() {
        // gcloud writes `--impersonate_service_account=SA` when its auth/impersonate_service_account
        // is set; the other two are the plugin's own flags.
        let conversion = converted(
            &[
                "--impersonate_service_account=deployer@p.iam.gserviceaccount.com",
                "--account",
                "me@example.com",
                "--project=p",
                "--configuration=work",
                "--v=4",
                "--logtostderr",
            ],
            &[("CLOUDSDK_CONFIG", "/home/me/.gcloud-work")],
        );
        assert_eq!(
            conversion.args,
            [
                "get-token",
                "--grant-type=google",
                "--google-source=gcloud",
                "--google-gcloud-project=p",
                "--google-gcloud-account=me@example.com",
                "--google-gcloud-impersonate-service-account=deployer@p.iam.gserviceaccount.com",
            ]
        );
        assert_eq!(
            conversion
                .env
                .iter()
                .map(|var| (var.name.as_str(), var.value.expose()))
                .collect::<Vec<_>>(),
            [
                ("CLOUDSDK_CONFIG", "/home/me/.gcloud-work"),
                ("CLOUDSDK_ACTIVE_CONFIG_NAME", "work"),
            ]
        );
        assert_eq!(
            conversion.notes,
            [
                "--configuration=work is the stanza's CLOUDSDK_ACTIVE_CONFIG_NAME, gcloud's same choice",
                "left out the plugin's logging flags --v, --logtostderr (kubecred's is -v)",
            ]
        );
    }

    #[test]
    fn adc_keeps_the_stanzas_environment_and_notes_gclouds_unused_flags() {
        let conversion = converted(
            &["--use_application_default_credentials", "--project=p"],
            &[
                ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/gke/sa.json"),
                ("USE_GKE_GCLOUD_AUTH_PLUGIN", "True"),
            ],
        );
        assert_eq!(conversion.args, ["get-token", "--grant-type=google"]);
        assert_eq!(conversion.env.len(), 2);
        assert_eq!(conversion.env[0].name, "GOOGLE_APPLICATION_CREDENTIALS");
        assert_eq!(
            conversion.notes,
            [
                "left out --project: gcloud's, which the plugin does not run with --use_application_default_credentials"
            ]
        );
    }

    #[test]
    fn what_kubecred_cannot_do_alike_stays_with_the_plugin() {
        assert_eq!(
            skipped(&[
                "--use_edge_cloud",
                "--project=p",
                "--location=l",
                "--cluster=c"
            ]),
            "stays with gke-gcloud-auth-plugin: --use_edge_cloud (Google Distributed Cloud Edge) takes its token from `gcloud edge-cloud container clusters print-access-token`, which kubecred does not run"
        );
        assert_eq!(
            skipped(&[
                "--use_application_default_credentials",
                "--impersonate_service_account=sa@p.iam.gserviceaccount.com"
            ]),
            "stays with gke-gcloud-auth-plugin: --use_application_default_credentials with --impersonate_service_account, which the plugin's releases treat differently (some ignore the impersonation)"
        );
        assert_eq!(
            skipped(&["--bogus"]),
            "stays with gke-gcloud-auth-plugin: gke-gcloud-auth-plugin has no flag --bogus"
        );
        assert_eq!(
            skipped(&["--use_application_default_credentials=maybe"]),
            "stays with gke-gcloud-auth-plugin: gke-gcloud-auth-plugin's --use_application_default_credentials=maybe is not true or false"
        );
        assert_eq!(
            skipped(&["--account"]),
            "stays with gke-gcloud-auth-plugin: gke-gcloud-auth-plugin's --account has no value"
        );
    }
}
