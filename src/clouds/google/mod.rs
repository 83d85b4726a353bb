//! Google access tokens for GKE: Application Default Credentials as google-auth resolves them
//! (`--google-credentials`, `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's ADC file; then the
//! metadata server; then `gcloud config config-helper`, as gke-gcloud-auth-plugin runs it), and a
//! workforce-pool exchange of a kubecred login's ID token at Google's STS.
//!
//! Written on kubecred's own HTTP client rather than the google-cloud-auth crate: that crate
//! brings a second HTTP/TLS stack (reqwest 0.13 beside our 0.12, its own `Client::new()` per
//! request, no pluggable client), reads the process environment itself, signs a service
//! account's token locally instead of asking the `token_uri` the file names, and has no gcloud
//! fallback (Cargo.toml has the measured comparison). Each credential kind sends the requests
//! google-auth sends for it (tests/it/google.rs records both side by side).
//!
//! Runs only on a miss, under the entry's lock: nothing here is reached by a cache hit.

mod credential_file;
mod endpoints;
mod gcloud;
mod metadata;
mod subject_token;
#[cfg(test)]
mod tests;

use super::CloudToken;
use crate::config::HttpSettings;
pub use crate::config::{
    DEFAULT_GOOGLE_SCOPES as DEFAULT_SCOPES, DEFAULT_GOOGLE_STS_URL as DEFAULT_STS_URL, GcloudArgs,
    GoogleSettings, GoogleSource as Source, WorkforceSettings,
};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use std::cell::OnceCell;
use std::path::Path;
use std::time::Duration;

/// The scope google-auth gives a source credential that impersonates a service account (the
/// IAM Credentials API's; Google's Go library asks for cloud-platform, which serves as well).
const IAM_SCOPE: &str = "https://www.googleapis.com/auth/iam";

/// Google's OAuth 2.0 token endpoint, where a credential file names no `token_uri`.
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// What a token request needs from the run: the environment (the process's, with the
/// kubeconfig stanza's `env`), the home directory, the time, and the HTTP settings.
pub struct Context<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub home: Option<&'a Path>,
    pub now: DateTime<Utc>,
    pub http: &'a HttpSettings,
    /// No retry starts later than this from now (what is left of the lock timeout).
    pub retry_window: Duration,
    /// The environment of the commands kubecred runs (gcloud, an executable credential source):
    /// `None`, this process's (which is the one `env` reads, as kubectl gives it: the stanza's
    /// `env` over its own); `Some`, exactly these variables — for a caller whose `env` is not
    /// this process's (a stanza resolved without running it, a test).
    pub command_env: Option<&'a [(String, String)]>,
}

impl Context<'_> {
    fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|value| !value.is_empty())
    }

    /// A command to run, with the environment `command_env` says.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        if let Some(vars) = self.command_env {
            command.env_clear();
            command.envs(vars.iter().map(|(name, value)| (name, value)));
        }
        command
    }
}

/// A Google access token for `settings`, from the first source that has credentials.
pub fn token(settings: &GoogleSettings, cx: &Context) -> anyhow::Result<CloudToken> {
    let net = Net::new(cx);
    match settings.source {
        Source::Gcloud => gcloud::token(&settings.gcloud, cx)?.ok_or_else(|| {
            crate::error::fail(
                crate::error::Exit::Input,
                "gcloud is not on PATH, and these settings take gcloud's own credentials (as gke-gcloud-auth-plugin does); install the Google Cloud CLI, or use application default credentials (`gcloud auth application-default login`, or --google-credentials)",
            )
        }),
        Source::Adc => {
            if let Some(file) = credential_file::find(settings.credentials_file.as_deref(), cx)? {
                return credential_file::token(&file, &scopes_or_default(&settings.scopes), &net);
            }
            if let Some(token) = metadata::token(&scopes_or_default(&settings.scopes), &net)? {
                return Ok(token);
            }
            if let Some(token) = gcloud::token(&settings.gcloud, cx)? {
                return Ok(token);
            }
            Err(credential_file::nothing_found(cx))
        }
    }
}

/// Exchanges a kubecred login's ID token for a Google access token at STS, with the fields
/// google-auth sends for a workforce-pool `external_account` whose subject token is an ID token.
pub fn exchange_workforce_id_token(
    settings: &WorkforceSettings,
    id_token: &Secret,
    cx: &Context,
) -> anyhow::Result<CloudToken> {
    let net = Net::new(cx);
    let exchange = endpoints::StsExchange {
        sts_url: &settings.sts_url,
        audience: &settings.provider,
        subject_token: id_token,
        subject_token_type: endpoints::ID_TOKEN_TYPE,
        scopes: &scopes_or_default(&settings.scopes),
        user_project: settings.user_project.as_deref(),
        client: None,
        what: "the workforce pool exchange of kubecred's login",
    };
    let answer = endpoints::sts_exchange(&net, &exchange)?;
    Ok(CloudToken {
        token: answer.token,
        expires_at: answer.expires_at,
        who: None,
    })
}

fn scopes_or_default(scopes: &[String]) -> Vec<String> {
    if scopes.is_empty() {
        DEFAULT_SCOPES
            .iter()
            .map(|scope| scope.to_string())
            .collect()
    } else {
        scopes.to_vec()
    }
}

/// The HTTP clients, built on first use: Google's endpoints through the proxies the settings
/// name, the metadata server always direct (a link-local address no proxy can reach; Google's
/// Go library never proxies it either).
struct Net<'a> {
    cx: &'a Context<'a>,
    google: OnceCell<crate::http::Client>,
    metadata: OnceCell<crate::http::Client>,
}

impl<'a> Net<'a> {
    fn new(cx: &'a Context<'a>) -> Net<'a> {
        Net {
            cx,
            google: OnceCell::new(),
            metadata: OnceCell::new(),
        }
    }

    fn google(&self) -> anyhow::Result<&crate::http::Client> {
        if let Some(client) = self.google.get() {
            return Ok(client);
        }
        let client = crate::http::client(self.cx.http, self.cx.retry_window)?;
        Ok(self.google.get_or_init(|| client))
    }

    /// The metadata server's client: direct, each attempt bounded by `timeout`.
    fn metadata(&self, timeout: Duration) -> anyhow::Result<&crate::http::Client> {
        if let Some(client) = self.metadata.get() {
            return Ok(client);
        }
        let mut settings = self.cx.http.clone();
        settings.proxy = crate::config::ProxyEnvironment::default();
        settings.timeout = settings.timeout.min(timeout);
        let client = crate::http::client(&settings, self.cx.retry_window)?;
        Ok(self.metadata.get_or_init(|| client))
    }
}
