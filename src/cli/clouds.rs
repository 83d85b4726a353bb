//! The flags of the managed clusters' cloud sources (`--grant-type google`), flattened into
//! `TokenArgs`: kept apart from `token_args.rs` only to keep that file short; the same rules
//! apply (each documented here, each with its `KUBECRED_<FLAG>` variable).

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Where `--grant-type google` takes Google's credentials from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GoogleSourceArg {
    /// Application Default Credentials as Google's libraries find them (--google-credentials,
    /// GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file; then the metadata server), then
    /// gcloud's own login where gcloud is on PATH.
    Adc,
    /// gcloud's own login only (`gcloud config config-helper`), as gke-gcloud-auth-plugin runs
    /// without --use_application_default_credentials.
    Gcloud,
}

// The group's id is the field's name in `TokenArgs`: the get-token flag table is generated
// from it (fast_get_token.rs).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "clouds")]
pub struct CloudArgs {
    /// With --grant-type google: this Google credential file (authorized_user, service_account,
    /// external_account or impersonated_service_account) instead of the Application Default
    /// Credentials search.
    #[arg(long, env = "KUBECRED_GOOGLE_CREDENTIALS", value_name = "FILE")]
    pub google_credentials: Option<PathBuf>,

    /// With --grant-type google: where Google's credentials come from [default: adc].
    #[arg(
        long,
        env = "KUBECRED_GOOGLE_SOURCE",
        value_enum,
        value_name = "SOURCE"
    )]
    pub google_source: Option<GoogleSourceArg>,

    /// With --grant-type google: gcloud's account to take the token of (gcloud's --account).
    #[arg(long, env = "KUBECRED_GOOGLE_GCLOUD_ACCOUNT", value_name = "ACCOUNT")]
    pub google_gcloud_account: Option<String>,

    /// With --grant-type google: the project gcloud runs for (gcloud's --project).
    #[arg(long, env = "KUBECRED_GOOGLE_GCLOUD_PROJECT", value_name = "PROJECT")]
    pub google_gcloud_project: Option<String>,

    /// With --grant-type google: a service account gcloud impersonates (gcloud's
    /// --impersonate-service-account).
    #[arg(
        long,
        env = "KUBECRED_GOOGLE_GCLOUD_IMPERSONATE_SERVICE_ACCOUNT",
        value_name = "EMAIL"
    )]
    pub google_gcloud_impersonate_service_account: Option<String>,
}

impl CloudArgs {
    /// The first of the Google flags given, as `--name`: refused with any other grant.
    pub fn google_flag_given(&self) -> Option<&'static str> {
        [
            (self.google_credentials.is_some(), "--google-credentials"),
            (self.google_source.is_some(), "--google-source"),
            (
                self.google_gcloud_account.is_some(),
                "--google-gcloud-account",
            ),
            (
                self.google_gcloud_project.is_some(),
                "--google-gcloud-project",
            ),
            (
                self.google_gcloud_impersonate_service_account.is_some(),
                "--google-gcloud-impersonate-service-account",
            ),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}
