//! The settings of the managed clusters' cloud sources (`--grant-type google`): plain types the
//! clouds' modules (`clouds/`) take, resolved from the flags (`cli/clouds.rs`), the environment
//! and the cluster extension. A cloud grant has no OpenID provider of its own: its entry is keyed
//! and recorded under the cloud's own issuer ([`GOOGLE_ISSUER`]), never contacted.

use super::extension::Extension;
use super::{Grant, input};
use crate::cli::{CloudArgs, GoogleSourceArg};
use std::path::PathBuf;
use url::Url;

/// What GKE needs: `cloud-platform`, and `userinfo.email` so that the cluster sees a service
/// account by its email rather than its numeric ID (gke-gcloud-auth-plugin asks for the same two).
pub const DEFAULT_GOOGLE_SCOPES: [&str; 2] = [
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/userinfo.email",
];

/// Google's STS token endpoint, the default of `--google-sts-url` and of a credential file's
/// `token_url`.
pub const DEFAULT_GOOGLE_STS_URL: &str = "https://sts.googleapis.com/v1/token";

/// The issuer a Google access token's entry is recorded under (`status`, the cache key): Google's
/// own. No request goes there: the token comes from wherever the credentials say.
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";

/// Where a managed cluster's token comes from, when it is its cloud's own identity.
#[derive(Debug, Clone)]
pub enum CloudSettings {
    /// Google's credentials (`--grant-type google`).
    Google(GoogleSettings),
}

/// A cloud's token derived from the shared kubecred login: the login's ID token exchanged at
/// the cloud's security token service (`Derive::Cloud`); this cluster's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudTarget {
    pub exchange: CloudExchange,
    /// Everything that changes the token, canonical: what keys the derived entry.
    key: String,
}

/// Where a login's ID token is exchanged, and for what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloudExchange {
    /// Google's STS, for a workforce pool's token (`--grant-type google --issuer-url …
    /// --google-workforce-provider …`).
    GoogleWorkforce(WorkforceSettings),
}

impl CloudTarget {
    pub fn new(exchange: CloudExchange) -> CloudTarget {
        let key = match &exchange {
            CloudExchange::GoogleWorkforce(workforce) => {
                let mut scopes = scopes_or_default(&workforce.scopes);
                scopes.sort_unstable();
                scopes.dedup();
                serde_json::json!({
                    "google-workforce": workforce.provider,
                    "user-project": workforce.user_project,
                    "sts": workforce.sts_url.as_str(),
                    "scopes": scopes,
                })
                .to_string()
            }
        };
        CloudTarget { exchange, key }
    }

    /// Everything that changes the token (what keys the derived entry).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// What the token is for, as `status` shows it: the workforce pool provider.
    pub fn audience(&self) -> &str {
        match &self.exchange {
            CloudExchange::GoogleWorkforce(workforce) => &workforce.provider,
        }
    }

    /// The exchange's name, where a grant is shown (`status`).
    pub fn grant_name(&self) -> &'static str {
        match &self.exchange {
            CloudExchange::GoogleWorkforce(_) => "google-workforce",
        }
    }

    /// The target in a phrase.
    pub fn describe(&self) -> String {
        match &self.exchange {
            CloudExchange::GoogleWorkforce(workforce) => {
                format!("Google workforce provider {}", workforce.provider)
            }
        }
    }
}

/// `scopes`, or Google's default scopes where none are given.
pub fn scopes_or_default(scopes: &[String]) -> Vec<String> {
    if scopes.is_empty() {
        DEFAULT_GOOGLE_SCOPES
            .iter()
            .map(|scope| scope.to_string())
            .collect()
    } else {
        scopes.to_vec()
    }
}

/// Where a Google token comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GoogleSource {
    /// Application Default Credentials as google-auth resolves them (a credential file, then
    /// the metadata server), then gcloud's own credentials where gcloud is on PATH.
    #[default]
    Adc,
    /// gcloud's own credentials only (`gcloud config config-helper`), as gke-gcloud-auth-plugin
    /// runs without `--use_application_default_credentials`: gcloud's active account, which
    /// may differ from the ADC file's.
    Gcloud,
}

impl GoogleSource {
    pub fn name(self) -> &'static str {
        match self {
            GoogleSource::Adc => "adc",
            GoogleSource::Gcloud => "gcloud",
        }
    }
}

/// The flags gke-gcloud-auth-plugin hands to `gcloud config config-helper`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcloudArgs {
    /// `--account`
    pub account: Option<String>,
    /// `--project`
    pub project: Option<String>,
    /// `--impersonate-service-account`
    pub impersonate_service_account: Option<String>,
}

/// `get-token --grant-type google`'s settings, resolved.
#[derive(Debug, Clone, Default)]
pub struct GoogleSettings {
    /// `--google-credentials FILE`: this credential file instead of the ADC search.
    pub credentials_file: Option<PathBuf>,
    /// `--scope`s; empty means [`DEFAULT_GOOGLE_SCOPES`].
    pub scopes: Vec<String>,
    pub source: GoogleSource,
    /// For [`GoogleSource::Gcloud`] (and for the gcloud fallback of [`GoogleSource::Adc`]).
    pub gcloud: GcloudArgs,
    /// The variables that say which credentials the ADC search finds, as set (for the cache
    /// key: the search itself reads the process's environment).
    pub variables: Vec<(&'static str, String)>,
}

/// The workforce-pool exchange of a kubecred login's ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkforceSettings {
    /// `--google-workforce-provider`:
    /// `//iam.googleapis.com/locations/global/workforcePools/POOL/providers/PROVIDER`.
    pub provider: String,
    /// `--google-user-project`: the project billed for quota (STS `options.userProject`).
    pub user_project: Option<String>,
    /// `--google-sts-url`: the full token URL ([`DEFAULT_GOOGLE_STS_URL`]).
    pub sts_url: Url,
    /// `--scope`s; empty means [`DEFAULT_GOOGLE_SCOPES`].
    pub scopes: Vec<String>,
}

/// Whether `grant`'s token is derived from the shared kubecred login (a cloud's exchange of its
/// ID token), rather than the cloud's own credentials: the settings then resolve as a shared
/// login's, whose own grant is a person's login.
pub(super) fn from_a_login(args: &CloudArgs, grant: Grant) -> bool {
    grant == Grant::Google && args.google_workforce_provider.is_some()
}

/// The cloud settings of a cloud grant (`None` for any other grant); a cloud's flag given with
/// another grant is refused, so that it is never silently ignored. `scopes`: the `--scope`s,
/// which name the cloud's scopes.
pub(super) fn resolve(
    args: &CloudArgs,
    env: &super::Environment,
    _ext: &Extension,
    grant: Grant,
    scopes: &[String],
) -> anyhow::Result<Option<CloudSettings>> {
    if from_a_login(args, grant) {
        return Ok(None);
    }
    if let (Grant::Google, Some(flag)) = (grant, args.workforce_flag_given()) {
        return Err(input(format!(
            "{flag} goes with --google-workforce-provider and --issuer-url (one kubecred login exchanged at Google's STS); add them, or leave it out"
        )));
    }
    match grant {
        Grant::Google => Ok(Some(CloudSettings::Google(GoogleSettings {
            credentials_file: args.google_credentials.clone(),
            scopes: scopes.to_vec(),
            source: match args.google_source {
                None | Some(GoogleSourceArg::Adc) => GoogleSource::Adc,
                Some(GoogleSourceArg::Gcloud) => GoogleSource::Gcloud,
            },
            gcloud: GcloudArgs {
                account: args.google_gcloud_account.clone(),
                project: args.google_gcloud_project.clone(),
                impersonate_service_account: args.google_gcloud_impersonate_service_account.clone(),
            },
            variables: env.google.clone(),
        }))),
        _ => {
            if let Some(flag) = args.google_flag_given() {
                return Err(input(format!(
                    "{flag} is for --grant-type google; add --grant-type google, or leave it out"
                )));
            }
            Ok(None)
        }
    }
}

/// The target of a cloud's token derived from the shared login (see [`from_a_login`]).
pub(super) fn target(args: &CloudArgs, scopes: &[String]) -> anyhow::Result<CloudTarget> {
    if let Some(flag) = args.adc_flag_given() {
        return Err(input(format!(
            "{flag} names Google's own credentials, and --google-workforce-provider exchanges the kubecred login instead: leave one out"
        )));
    }
    workforce(args, scopes).map(|w| CloudTarget::new(CloudExchange::GoogleWorkforce(w)))
}

/// The workforce exchange's settings.
fn workforce(args: &CloudArgs, scopes: &[String]) -> anyhow::Result<WorkforceSettings> {
    let provider = args.google_workforce_provider.clone().unwrap_or_default();
    if !provider.starts_with("//iam.googleapis.com/") || !provider.contains("/workforcePools/") {
        return Err(input(format!(
            "--google-workforce-provider {:?} is not a workforce pool provider; write it as //iam.googleapis.com/locations/global/workforcePools/POOL/providers/PROVIDER",
            crate::text::printable_brief(&provider, 200)
        )));
    }
    let raw = args
        .google_sts_url
        .as_deref()
        .unwrap_or(DEFAULT_GOOGLE_STS_URL);
    let sts_url = Url::parse(raw)
        .ok()
        .filter(|url| url.scheme() == "https" || super::is_loopback_host(url))
        .ok_or_else(|| {
            input(format!(
                "--google-sts-url {:?} is not an https URL (plain http only on loopback); leave it out for Google's",
                crate::text::printable_brief(raw, 200)
            ))
        })?;
    Ok(WorkforceSettings {
        provider,
        user_project: args.google_user_project.clone(),
        sts_url,
        scopes: scopes.to_vec(),
    })
}
