//! Renewing an entry's tokens without a person: one step, [`renew`], for the foreground (a run
//! whose cached token ran out, `acquire::obtain_under_lock`) and the background (refresh-ahead,
//! `renew_ahead.rs`). It runs the one sequence — what the entry can be renewed with, the
//! provider client, the refresh — keeps what must be kept of the provider's answer, and says
//! what it came to in one type, [`Renewal`]. Each path maps that to its policy in a few lines:
//! the foreground hands tokens out, or logs in where only a person can renew; the background
//! notes the failure and backs off.
//!
//! Without a person, tokens are renewed by the entry's refresh token, or by a grant that needs
//! nobody (client credentials, token exchange, a password from the environment or a file:
//! [`grant_needs_no_person`]). Anything else is a login, which only the foreground may start.
//! What a refresh's answer means is decided here once, so that it means the same wherever it
//! happens: new tokens (saved by the caller), a refused refresh token (dropped from the entry,
//! never sent again, and the refusal noted; the entry's other tokens stay), an answer without
//! the token kubectl needs or an unusable one (a rotated refresh token is kept either way: the
//! old one is spent), or an outage (the entry as it was).

use crate::cache::{Cached, EntryLock, Note, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, Grant, PasswordSettings, PasswordSource};
use crate::grants::{ProviderClient, RefreshOutcome};
use crate::tokens::Tokens;

/// What renewing an entry without a person came to. What had to be kept of the provider's
/// answer has been: a rotated refresh token, a refused one dropped and the refusal noted.
pub(super) enum Renewal {
    /// New tokens with the credential kubectl needs, not saved yet: the foreground hands them
    /// out even when the cache cannot keep them, the background fails.
    Renewed(Tokens),
    /// The provider refused the refresh token. The entry now holds `kept`: its tokens as they
    /// were, without the refresh token; the refusal is noted (`refresh_refused`).
    Refused { reason: String, kept: Tokens },
    /// No refresh token to renew with, and the configured grant needs nobody: a new grant
    /// renews the tokens.
    NewGrant,
    /// Only a login renews these tokens, which only the foreground may start; why, in a phrase.
    NeedsPerson(&'static str),
    /// The renewal failed: the provider unreachable, or refusing in another way, or an answer
    /// that cannot be used. The entry is as it was but for a rotated refresh token.
    Failed(anyhow::Error),
}

/// Renews `cached`, the entry under `lock`, without a person: refreshes it when it has a
/// refresh token (fetched from the keyring if it is there), otherwise says how it can be
/// renewed. `provider` is built here when a refresh needs it, and left for the caller (a
/// login after a refused refresh token talks to the same provider).
pub(super) fn renew<'a>(
    config: &'a Config,
    cache: &TokenCache,
    cached: &Cached,
    lock: &EntryLock,
    provider: &mut Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> Renewal {
    // Every error on the way is the renewal failing.
    let mut renewal = || -> anyhow::Result<Renewal> {
        let Some(refresh_token) = cache.refresh_token(cached, lock)? else {
            return Ok(if grant_needs_no_person(config) {
                Renewal::NewGrant
            } else if cached.has_refresh_token() {
                Renewal::NeedsPerson(
                    "the entry's refresh token is not in the OS keyring reachable here (deleted, or kept by another session's keyring)",
                )
            } else {
                Renewal::NeedsPerson("the entry has no refresh token and its grant needs a person")
            });
        };
        let provider = match provider {
            Some(provider) => provider,
            None => provider.insert(ProviderClient::new(config, clock)?),
        };
        let original = cached.tokens.original_identity();
        Ok(match provider.refresh(&refresh_token, original.as_ref())? {
            RefreshOutcome::Refreshed(tokens) if tokens.credential(config.token_kind).is_some() => {
                Renewal::Renewed(tokens)
            }
            RefreshOutcome::Refreshed(tokens) => {
                // No ID token on a refresh: OpenID Connect Core §12.2 allows it.
                cache.save_rotated_refresh_token(
                    &cached.tokens,
                    &refresh_token,
                    tokens.refresh_token,
                    lock,
                )?;
                Renewal::NeedsPerson("the refresh answer lacks the token kubectl needs")
            }
            RefreshOutcome::Unusable {
                refresh_token: rotated,
                error,
            } => {
                cache.save_rotated_refresh_token(
                    &cached.tokens,
                    &refresh_token,
                    Some(rotated),
                    lock,
                )?;
                return Err(error);
            }
            RefreshOutcome::Rejected(reason) => {
                // Revoked, or expired at the provider: sending it again can only be refused again.
                let kept = Tokens {
                    refresh_token: None,
                    ..cached.tokens.clone()
                };
                cache.save(&kept, lock)?;
                cache.update_state(lock, |state| {
                    state.refresh_refused = Some(Note::new(&reason, clock.now()));
                });
                Renewal::Refused { reason, kept }
            }
        })
    };
    renewal().unwrap_or_else(Renewal::Failed)
}

/// Whether the configured grant yields a new token without a person.
pub(super) fn grant_needs_no_person(config: &Config) -> bool {
    match config.grant {
        Grant::ClientCredentials | Grant::TokenExchange => true,
        Grant::Password => !matches!(
            config.password,
            Some(PasswordSettings {
                source: PasswordSource::Prompt,
                ..
            }) | None
        ),
        // A login needs a person; a federated token is the subject token itself, renewed by
        // whoever rotates its file.
        Grant::Authcode | Grant::AuthcodeKeyboard | Grant::DeviceCode | Grant::FederatedToken => {
            false
        }
    }
}
