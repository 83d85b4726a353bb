//! Where an entry's tokens come from, decided once per run from the settings ([`Source::of`]):
//! the entry kubectl's token is read from, and how it renews. The renewal step
//! (`renewal.rs`) and the login step (`login_step.rs`) each match on it once, so a new source of
//! tokens is one more variant here and one more arm there, not branches across `acquire/`.
//!
//! - An entry of its own renews by its refresh token, else by a new grant from its [`Grantor`]:
//!   the OAuth 2.0 / OpenID provider (whose grant may need a person), the subject token a CI
//!   system gives (`--grant-type federated-token`, read again; no provider), or a managed
//!   cluster's cloud (`clouds/`: its own credentials asked anew; no provider).
//! - A `--shared-login` cluster's entry is derived from the shared login's entry (`shared.rs`),
//!   whose lock the miss takes after the cluster's ([`Source::lock`]).
//!
//! The provider itself is built once, on first need ([`LazyProvider`]): a renewal that needs
//! none (a hit, a refusal noted earlier) never runs discovery, and a login after a refused
//! refresh token talks to the provider the refresh built.

use super::locked::Locked;
use crate::cache::{Cached, Entry, TokenCache};
use crate::clock::Clock;
use crate::config::{CloudSettings, Config, Grant, SharedLogin};
use crate::grants::ProviderClient;
use std::time::Duration;

/// How an entry of its own obtains new tokens.
#[derive(Debug, Clone, Copy)]
pub(super) enum Grantor<'a> {
    /// The OAuth 2.0 / OpenID provider: the configured grant.
    Provider,
    /// `--grant-type federated-token`: the subject token itself is the credential.
    Federated,
    /// A managed cluster's cloud (`--grant-type google`): its own credentials, asked anew at
    /// every renewal (`clouds/`); no refresh token, nobody asked.
    Cloud(&'a CloudSettings),
}

/// Where an entry's tokens come from (see the module comment).
#[allow(
    clippy::large_enum_variant,
    reason = "one per run, made once and never moved about"
)]
pub(super) enum Source<'a> {
    Own(Grantor<'a>),
    /// A `--shared-login` cluster: `shared` says what it derives, `login` is the login's entry.
    SharedLogin {
        shared: &'a SharedLogin,
        login: TokenCache,
    },
}

/// A run's entry (the cache kubectl's token is read from) and where its tokens come from,
/// decided together by [`Source::of`].
pub(super) struct Sourced<'a> {
    pub(super) cache: TokenCache,
    pub(super) source: Source<'a>,
}

/// A source under the locks a miss (or the background renewal) took: the shared login's entry
/// locked and read after the cluster's.
#[allow(
    clippy::large_enum_variant,
    reason = "one per miss, made once and never moved about"
)]
pub(super) enum Renewing<'s> {
    Own(Grantor<'s>),
    SharedLogin {
        shared: &'s SharedLogin,
        login: Locked<'s>,
    },
}

impl<'a> Source<'a> {
    /// The cache of the entry kubectl's token is read from, and where its tokens come from. On
    /// the hit path: no I/O (one key for an entry of its own, two for a shared login's cluster).
    pub(super) fn of(config: &'a Config) -> Sourced<'a> {
        match &config.shared_login {
            Some(shared) => {
                let (derived, login) = Entry::shared(config, shared);
                let login = TokenCache::new(login);
                Sourced {
                    cache: TokenCache::new(derived),
                    source: Source::SharedLogin { shared, login },
                }
            }
            None => {
                let grantor = match (&config.cloud, config.grant) {
                    (Some(cloud), _) => Grantor::Cloud(cloud),
                    (None, Grant::FederatedToken) => Grantor::Federated,
                    (None, _) => Grantor::Provider,
                };
                Sourced {
                    cache: TokenCache::new(Entry::of(config)),
                    source: Source::Own(grantor),
                }
            }
        }
    }

    /// Whether `cached` (this source's entry) renews without a person: what refresh-ahead asks
    /// before it starts a background renewal. A shared login's cluster renews from the login,
    /// whose entry is not read on a hit.
    pub(super) fn renews_alone(&self, config: &Config, cached: &Cached) -> bool {
        match self {
            Source::Own(Grantor::Provider) => {
                cached.has_refresh_token() || config.grant_needs_no_person()
            }
            // Renewed by whoever rotates the subject token's file.
            Source::Own(Grantor::Federated) => false,
            Source::Own(Grantor::Cloud(_)) => true,
            Source::SharedLogin { .. } => true,
        }
    }

    /// This source under the miss's locks: a shared login's entry locked (waiting at most
    /// `timeout`) after the cluster's, whose lock the caller holds.
    pub(super) fn lock(&self, timeout: Duration) -> anyhow::Result<Renewing<'_>> {
        Ok(match self {
            Source::Own(grantor) => Renewing::Own(*grantor),
            Source::SharedLogin { shared, login } => Renewing::SharedLogin {
                shared,
                login: super::shared::open_login(Locked::open(login, timeout)?),
            },
        })
    }

    /// [`lock`](Self::lock) for the background renewal, which never waits: `None` when another
    /// run holds the shared login's entry (it is deriving or logging in).
    pub(super) fn try_lock(&self) -> anyhow::Result<Option<Renewing<'_>>> {
        Ok(match self {
            Source::Own(grantor) => Some(Renewing::Own(*grantor)),
            Source::SharedLogin { shared, login } => {
                Locked::try_open(login)?.map(|login| Renewing::SharedLogin {
                    shared,
                    login: super::shared::open_login(login),
                })
            }
        })
    }
}

/// The provider of `config`, built on first need (discovery from its disk cache, an HTTP
/// client), once per settings.
pub(super) struct LazyProvider<'a> {
    config: &'a Config,
    clock: &'a dyn Clock,
    built: Option<ProviderClient<'a>>,
}

impl<'a> LazyProvider<'a> {
    pub(super) fn new(config: &'a Config, clock: &'a dyn Clock) -> LazyProvider<'a> {
        LazyProvider {
            config,
            clock,
            built: None,
        }
    }

    /// The provider, built now if it is not yet.
    pub(super) fn get(&mut self) -> anyhow::Result<&ProviderClient<'a>> {
        let provider = match self.built.take() {
            Some(provider) => provider,
            None => ProviderClient::new(self.config, self.clock)?,
        };
        Ok(self.built.insert(provider))
    }
}
