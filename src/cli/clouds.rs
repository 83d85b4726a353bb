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

    /// With --grant-type google and --issuer-url: the workforce pool provider that trusts this
    /// issuer (`//iam.googleapis.com/locations/global/workforcePools/POOL/providers/PROVIDER`):
    /// the shared kubecred login's ID token is exchanged at Google's STS for a token of its
    /// principal.
    #[arg(
        long,
        env = "KUBECRED_GOOGLE_WORKFORCE_PROVIDER",
        value_name = "PROVIDER"
    )]
    pub google_workforce_provider: Option<String>,

    /// With --google-workforce-provider: the project billed for the pool's quota (STS's
    /// `userProject`).
    #[arg(long, env = "KUBECRED_GOOGLE_USER_PROJECT", value_name = "PROJECT")]
    pub google_user_project: Option<String>,

    /// With --google-workforce-provider: Google's STS token URL
    /// [default: https://sts.googleapis.com/v1/token].
    #[arg(long, env = "KUBECRED_GOOGLE_STS_URL", value_name = "URL")]
    pub google_sts_url: Option<String>,
}

impl CloudArgs {
    /// The first of the workforce exchange's companions given, as `--name`.
    pub fn workforce_flag_given(&self) -> Option<&'static str> {
        [
            (self.google_user_project.is_some(), "--google-user-project"),
            (self.google_sts_url.is_some(), "--google-sts-url"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The first of the Google flags given, as `--name`: refused with any other grant.
    pub fn google_flag_given(&self) -> Option<&'static str> {
        self.adc_flag_given().or_else(|| {
            [
                (
                    self.google_workforce_provider.is_some(),
                    "--google-workforce-provider",
                ),
                (self.google_user_project.is_some(), "--google-user-project"),
                (self.google_sts_url.is_some(), "--google-sts-url"),
            ]
            .into_iter()
            .find_map(|(given, flag)| given.then_some(flag))
        })
    }

    /// The first flag of Google's own credentials given (the ADC search, gcloud), as `--name`:
    /// refused beside a workforce exchange, which takes the kubecred login instead.
    pub fn adc_flag_given(&self) -> Option<&'static str> {
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
