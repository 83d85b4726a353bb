//! gcloud's own credentials, as gke-gcloud-auth-plugin takes them when not told to use ADC:
//! `gcloud config config-helper --format=json` (with the plugin's `--account`, `--project` and
//! `--impersonate-service-account`), the token at `credential.access_token`, its expiry at
//! `credential.token_expiry`, the account at `configuration.properties.core.account`. gcloud
//! refreshes its own login; kubecred only runs it (bounded), and says gcloud's own complaint in
//! one line when it fails.

use super::subject_token::{Bounded, run_bounded};
use super::{CloudToken, Context, GcloudArgs};
use crate::error::{Exit, fail, outage};
use crate::secret::Secret;
use serde::Deserialize;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// gcloud is a Python program that may refresh its token: a few seconds, rarely more.
const GCLOUD_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Deserialize, Default)]
#[serde(default)]
struct ConfigHelper {
    credential: Credential,
    configuration: Configuration,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Credential {
    access_token: Option<String>,
    token_expiry: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Configuration {
    properties: serde_json::Value,
}

/// The program's name: `gcloud.cmd` on Windows, as google-auth runs it.
fn program() -> &'static str {
    if cfg!(windows) {
        "gcloud.cmd"
    } else {
        "gcloud"
    }
}

/// gcloud on the PATH the environment gives, if there.
fn find(cx: &Context) -> Option<PathBuf> {
    let path = cx.var("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program()))
        .find(|candidate| candidate.is_file())
}

/// The arguments gke-gcloud-auth-plugin gives gcloud.
pub fn arguments(args: &GcloudArgs) -> Vec<String> {
    let mut words: Vec<String> = ["config", "config-helper", "--format=json"]
        .iter()
        .map(|word| word.to_string())
        .collect();
    if let Some(project) = &args.project {
        words.push(format!("--project={project}"));
    }
    if let Some(account) = &args.account {
        words.push(format!("--account={account}"));
    }
    if let Some(account) = &args.impersonate_service_account {
        words.push(format!("--impersonate-service-account={account}"));
    }
    words
}

/// gcloud's token, or `None` when gcloud is not on PATH.
pub fn token(args: &GcloudArgs, cx: &Context) -> anyhow::Result<Option<CloudToken>> {
    let Some(gcloud) = find(cx) else {
        return Ok(None);
    };
    let words = arguments(args);
    let shown = format!("`gcloud {}`", words.join(" "));
    let mut command = cx.command(&gcloud);
    command
        .args(&words)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::debug!(1, "running {shown}");
    let output = run_bounded(command, GCLOUD_TIMEOUT).map_err(|failure| match failure {
        Bounded::NotStarted(err) => fail(
            Exit::Input,
            format!(
                "cannot run {} for {shown}: {err}; check the Google Cloud CLI's installation",
                gcloud.display()
            ),
        ),
        Bounded::TimedOut => outage(format!(
            "{shown} did not finish within {} s; run it by hand to see why",
            GCLOUD_TIMEOUT.as_secs()
        )),
    })?;
    if !output.status.success() {
        return Err(gcloud_failed(&shown, &output.stderr));
    }
    let helper: ConfigHelper = serde_json::from_slice(&output.stdout).map_err(|_| {
        fail(
            Exit::Provider,
            format!("{shown} did not print the JSON kubecred reads; run it by hand to see why"),
        )
    })?;
    let token = helper
        .credential
        .access_token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            crate::error::transient(
                Exit::Login,
                format!("{shown} printed no access token: gcloud has no active account; run `gcloud auth login`"),
            )
        })?;
    let expires_at = helper
        .credential
        .token_expiry
        .as_deref()
        .and_then(|text| chrono::DateTime::parse_from_rfc3339(text).ok())
        .map(|at| at.with_timezone(&chrono::Utc))
        .ok_or_else(|| {
            fail(
                Exit::Provider,
                format!(
                    "{shown} printed no token_expiry kubecred can read; update the Google Cloud CLI"
                ),
            )
        })?;
    let who = args.impersonate_service_account.clone().or_else(|| {
        helper
            .configuration
            .properties
            .pointer("/core/account")
            .and_then(|value| value.as_str())
            .map(str::to_string)
    });
    Ok(Some(CloudToken {
        token: Secret::new(token),
        expires_at,
        who,
    }))
}

/// gcloud's failure in one line: its last `ERROR:` line, with what to do about the usual ones.
fn gcloud_failed(shown: &str, stderr: &[u8]) -> anyhow::Error {
    let text = String::from_utf8_lossy(stderr);
    let said = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .rfind(|line| line.starts_with("ERROR:"))
        .or_else(|| text.lines().map(str::trim).rfind(|line| !line.is_empty()))
        .map(|line| crate::text::printable_brief(line, 300).into_owned())
        .unwrap_or_else(|| "no message".into());
    let lower = said.to_ascii_lowercase();
    if lower.contains("reauthentication")
        || lower.contains("gcloud auth login")
        || lower.contains("invalid_grant")
        || lower.contains("no credentialed accounts")
        || lower.contains("do not currently have an active account")
    {
        return fail(
            Exit::Login,
            format!("{shown} failed: {said}; run `gcloud auth login`"),
        );
    }
    fail(
        Exit::Provider,
        format!("{shown} failed: {said}; run it by hand to see why"),
    )
}
