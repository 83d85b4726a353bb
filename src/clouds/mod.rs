//! Tokens from a cloud's own identity rather than from an OpenID Connect grant: what a managed
//! cluster (AKS, EKS, GKE) trusts, obtained the way the cloud's own tools obtain it. Each cloud is
//! a module of sources taking plain settings, an environment lookup and the time; the miss path
//! (`acquire`) asks one of them for a [`CloudToken`] under the entry's lock, exactly where it
//! would run a grant ([`obtain`], [`exchange`]), and caches it like any token. Nothing here runs
//! on a cache hit.

pub mod aws;
pub mod azure;
pub mod google;

use crate::clock::Clock;
use crate::config::{CloudExchange, CloudSettings, CloudTarget, Config, LOCK_TIMEOUT_SLACK};
use crate::secret::Secret;
use crate::tokens::{Identity, Tokens};

/// A token from a cloud's own identity: what kubectl is given, until when, and who it is (an IAM
/// ARN, a Google account, an Entra object) for `status` and `whoami`.
#[derive(Debug)]
pub struct CloudToken {
    pub token: crate::secret::Secret,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub who: Option<String>,
}

impl CloudToken {
    /// The token as the cache keeps it: the credential kubectl is given (an access token), its
    /// expiry, and who it is for as the entry's identity (what `status` shows), issued by
    /// `issuer`. Nothing renews it: the source is asked again.
    pub fn into_tokens(self, issuer: &str, obtained_at: chrono::DateTime<chrono::Utc>) -> Tokens {
        Tokens {
            id_token: None,
            id_token_expiry: None,
            access_token: Some(self.token),
            access_token_expiry: Some(self.expires_at),
            refresh_token: None,
            obtained_at,
            identity: self.who.map(|sub| Identity {
                iss: issuer.to_string(),
                sub,
                aud: Vec::new(),
            }),
            granted_scope: None,
        }
    }
}

/// A new token from the cloud `cloud` names, for `config`'s run: the miss path's grant for a
/// cloud source (under the entry's lock; never on a hit).
pub fn obtain(cloud: &CloudSettings, config: &Config, clock: &dyn Clock) -> anyhow::Result<Tokens> {
    let now = clock.now();
    let home = home();
    match cloud {
        CloudSettings::Google(settings) => {
            let cx = google_context(config, now, home.as_deref());
            Ok(google::token(settings, &cx)?.into_tokens(&config.issuer_as_given, now))
        }
    }
}

/// A cloud's token for the shared login's ID token `id_token` (`Derive::Cloud`), recorded under
/// the cloud's issuer.
pub fn exchange(
    target: &CloudTarget,
    id_token: &Secret,
    config: &Config,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let now = clock.now();
    let home = home();
    match &target.exchange {
        CloudExchange::GoogleWorkforce(workforce) => {
            let cx = google_context(config, now, home.as_deref());
            let token = google::exchange_workforce_id_token(workforce, id_token, &cx)?;
            Ok(token.into_tokens(crate::config::GOOGLE_ISSUER, now))
        }
    }
}

/// The home directory, as `directories` finds it (HOME): gcloud keeps its files under it.
fn home() -> Option<std::path::PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf())
}

/// The process's environment, as kubectl gave it (the stanza's `env` is in it).
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What the Google module needs from the run.
fn google_context<'a>(
    config: &'a Config,
    now: chrono::DateTime<chrono::Utc>,
    home: Option<&'a std::path::Path>,
) -> google::Context<'a> {
    google::Context {
        env: &process_env,
        home,
        now,
        http: &config.http,
        // Retries stay inside the lock timeout, as the provider's requests do.
        retry_window: config.cache.lock_timeout.saturating_sub(LOCK_TIMEOUT_SLACK),
        command_env: None,
    }
}

/// Who the cluster sees for `tokens` (a cloud grant's, or a cloud's token derived from the
/// shared login), as `whoami` and `setup` say it: the Google account or principal, …; `None` when
/// `config` is no cloud's.
pub fn who_sees(config: &Config, tokens: &Tokens) -> Option<anyhow::Result<String>> {
    let cloud = match (&config.cloud, &config.shared_login) {
        (Some(CloudSettings::Google(_)), _) => "Google",
        (None, Some(shared)) => match &shared.target {
            crate::config::Target::Cloud(target) => match target.exchange {
                CloudExchange::GoogleWorkforce(_) => "Google's STS",
            },
            _ => return None,
        },
        (None, None) => return None,
    };
    Some(
        tokens
            .identity
            .as_ref()
            .map(|identity| identity.sub.clone())
            .ok_or_else(|| {
                crate::error::fail(
                    crate::error::Exit::Provider,
                    format!(
                        "{cloud} did not say whose token this is (an external account that impersonates no service account is its pool's principal); the cluster sees the principal its pool maps it to"
                    ),
                )
            }),
    )
}
