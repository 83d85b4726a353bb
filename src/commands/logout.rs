//! `kubecred logout`: revoke and forget the cached tokens for these settings — or every entry,
//! with `--all` — so that the next `get-token` logs in again (to switch accounts, or after a role
//! change). The refresh token is revoked at the provider's `revocation_endpoint` (RFC 7009) when
//! discovery names one; a failed revocation is a warning, and the local entry goes all the same.
//! When nothing matches the settings, it lists the cached logins for the same issuer and how
//! each differs from them (client, grant, scopes, account, audience, resource), and names
//! `--all`: the cache key is a hash, so a login with one scope more is another entry.

use super::{Run, resolve};
use crate::acquire::{self, Forgotten, LoggedOut, RevocationOutcome};
use crate::cache::{EntryAbout, Session, TokenCache, list_sessions};
use crate::cli::{LogoutArgs, TokenArgs};
use crate::clock::Clock;
use crate::config::{self, Config};
use crate::grants::Revocation;
use std::ffi::OsString;

pub(super) fn run(
    args: &LogoutArgs,
    argv: &[OsString],
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    if args.all {
        return all(&args.token, argv, clock);
    }
    let config = resolve(&args.token, Run::ByPerson, argv)?;
    let what = describe(&config.issuer_as_given, &config.client.id, &config.account);
    let LoggedOut { entries, derived } = acquire::log_out(&config, clock)?;
    for done in &entries {
        report(&what, done);
    }
    let mut found = entries.iter().any(|done| done.found);
    if derived > 0 {
        crate::log::notice(format!(
            "logged out of {what}: forgot the {derived} cluster token{} derived from the shared login",
            if derived == 1 { "" } else { "s" }
        ));
        found = true;
    }
    if !found {
        report_no_match(&config, &what, &list_sessions(&config.cache.dir)?);
    }
    Ok(None)
}

/// No cached login has these settings: say which ones this issuer has, and how each differs.
fn report_no_match(config: &Config, what: &str, sessions: &[Session]) {
    let same_issuer: Vec<&EntryAbout> = sessions
        .iter()
        .filter_map(|session| session.about.as_ref())
        .filter(|about| url::Url::parse(&about.issuer).is_ok_and(|url| url == config.issuer))
        .collect();
    if same_issuer.is_empty() {
        crate::log::notice(format!(
            "no cached login for {what}, nor any other for that issuer; kubecred status lists the cached logins"
        ));
        return;
    }
    crate::log::notice(format!(
        "no cached login for {what} with these settings; the cached logins for that issuer differ from them:"
    ));
    for about in same_issuer {
        let differences = differences(about, config);
        let how = if differences.is_empty() {
            "in a setting not recorded (the client secret, a CA, --auth-param or --login-hint)"
                .to_string()
        } else {
            differences.join("; ")
        };
        let client = crate::text::printable_brief(&about.client_id, 200);
        let login = match about.subject.as_ref().filter(|s| **s != about.client_id) {
            Some(subject) => format!(
                "{} (client {client})",
                crate::text::printable_brief(subject, 100)
            ),
            None => format!("client {client}"),
        };
        crate::log::notice(format!("  {login}: {how}"));
    }
    crate::log::notice(
        "to log out of one, repeat the settings it was logged in with; to log out of every cached login, run kubecred logout --all",
    );
}

/// How a cached login's recorded settings differ from this command's, one phrase each:
/// `scopes "openid email groups" (here "openid email")`.
fn differences(about: &EntryAbout, config: &Config) -> Vec<String> {
    let shown = |value: Option<&str>| match value {
        Some(value) => format!("{:?}", crate::text::printable_brief(value, 100)),
        None => "none".to_string(),
    };
    let mut found = Vec::new();
    let mut compare = |name: &str, cached: Option<&str>, here: Option<&str>| {
        if cached != here {
            found.push(format!("{name} {} (here {})", shown(cached), shown(here)));
        }
    };
    compare("client", Some(&about.client_id), Some(&config.client.id));
    compare("grant", Some(&about.grant), Some(config.grant.name()));
    let scopes = |scopes: &[String]| (!scopes.is_empty()).then(|| scopes.join(" "));
    compare(
        "scopes",
        scopes(&about.scopes).as_deref(),
        scopes(&config.scopes).as_deref(),
    );
    compare(
        "account",
        about.account.as_deref(),
        config.account.as_deref(),
    );
    compare(
        "audience",
        about.audience.as_deref(),
        config.audience.as_deref(),
    );
    compare(
        "resource",
        about.resource.as_deref(),
        config.resource.as_deref(),
    );
    found
}

/// Every entry under the cache directory, each revoked at its own provider (recorded in the
/// entry) with the TLS settings given on this command line.
fn all(args: &TokenArgs, argv: &[OsString], clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    let dir = crate::config::resolve_cache_dir(&args.cache)?;
    let sessions = list_sessions(&dir)?;
    if sessions.is_empty() {
        crate::log::notice(format!("no cached logins in {}", dir.display()));
    }
    for session in &sessions {
        let revoke_with = session.about.as_ref().and_then(|about| {
            match settings_for(args, &dir, session, argv) {
                Ok(config) => Some(config),
                Err(err) => {
                    crate::log::notice(format!(
                        "warning: cannot revoke the refresh token at {}: {}",
                        about.issuer,
                        crate::error::one_line(&err)
                    ));
                    None
                }
            }
        });
        let lock_timeout = revoke_with.as_ref().map_or_else(
            || {
                config::default_lock_timeout(
                    config::DEFAULT_AUTH_TIMEOUT,
                    config::DEFAULT_HTTP_TIMEOUT,
                )
            },
            |config| config.cache.lock_timeout,
        );
        let cache = TokenCache::for_session(&dir, session);
        let done = acquire::forget(&cache, lock_timeout, revoke_with.as_ref(), clock)?;
        let what = match &session.about {
            Some(about) => describe(&about.issuer, &about.client_id, &about.account),
            // Its record could not be read (`status` says why).
            None => format!("a cached login that could not be read ({})", session.key),
        };
        report(&what, &done);
    }
    Ok(None)
}

/// The settings to reach an entry's provider: this command line with the entry's issuer and
/// client. A client secret given for another client is not sent to this one.
fn settings_for(
    args: &TokenArgs,
    dir: &std::path::Path,
    session: &Session,
    argv: &[OsString],
) -> anyhow::Result<Config> {
    let about = session
        .about
        .as_ref()
        .expect("only entries that say whose they are");
    let mut args = args.clone();
    if args.client_id.as_deref() != Some(about.client_id.as_str()) {
        args.client_secret = None;
        args.client_secret_file = None;
    }
    args.issuer_url = Some(about.issuer.clone());
    args.client_id = Some(about.client_id.clone());
    args.cache.cache_dir = Some(dir.to_path_buf());
    resolve(&args, Run::ByPerson, argv)
}

fn describe(issuer: &str, client_id: &str, account: &Option<String>) -> String {
    let issuer = crate::text::printable_brief(issuer, 200);
    let client_id = crate::text::printable_brief(client_id, 200);
    match account {
        Some(account) => format!(
            "{issuer} ({client_id}, account {})",
            crate::text::printable_brief(account, 100)
        ),
        None => format!("{issuer} ({client_id})"),
    }
}

/// Why the refresh token of a public client outlives the logout at a provider whose revocation
/// endpoint takes only `methods` (as its discovery lists them, `none` not among them).
fn public_client_refused(methods: &[String]) -> String {
    let listed = if methods.is_empty() {
        "its discovery lists no client authentication for revocation".to_string()
    } else {
        let methods: Vec<_> = methods
            .iter()
            .map(|method| crate::text::printable_brief(method, 60))
            .collect();
        format!(
            "its discovery lists only {} for revocation, not none",
            methods.join(", ")
        )
    };
    format!(
        "a public client cannot revoke tokens at this provider ({listed}), so the refresh token stays valid at the provider until it expires; no copy of it is left here"
    )
}

/// One line on stderr per entry forgotten; a failed revocation is a warning.
fn report(what: &str, done: &Forgotten) {
    if !done.found {
        return;
    }
    let revocation = match &done.revocation {
        RevocationOutcome::NoRefreshToken => "there was no refresh token to revoke".to_string(),
        RevocationOutcome::Done(Revocation::Revoked) => "the refresh token is revoked".to_string(),
        RevocationOutcome::Done(Revocation::NotSupported) => {
            "the provider names no revocation endpoint, so the refresh token stays valid at the provider until it expires".to_string()
        }
        RevocationOutcome::Done(Revocation::PublicClientRefused { methods }) => {
            public_client_refused(methods)
        }
        RevocationOutcome::NotTried => {
            "its refresh token was not revoked at the provider".to_string()
        }
        RevocationOutcome::Failed(err) => {
            crate::log::notice(format!(
                "warning: revoking the refresh token failed: {}; the cached login is forgotten all the same",
                crate::error::one_line(err)
            ));
            "the refresh token may still be valid at the provider".to_string()
        }
    };
    crate::log::notice(format!(
        "logged out of {what}: forgot the cached login; {revocation}"
    ));
}

#[cfg(test)]
mod tests {
    use super::public_client_refused;

    #[test]
    fn a_public_clients_refused_revocation_says_what_it_means_for_the_token() {
        // glewlwyd: an empty list.
        let empty = public_client_refused(&[]);
        assert_eq!(
            empty,
            "a public client cannot revoke tokens at this provider (its discovery lists no client authentication for revocation), so the refresh token stays valid at the provider until it expires; no copy of it is left here"
        );
        let listed =
            public_client_refused(&["client_secret_basic".into(), "tls_client_auth".into()]);
        assert!(
            listed.contains("(its discovery lists only client_secret_basic, tls_client_auth for revocation, not none)"),
            "{listed}"
        );
        assert!(!listed.contains("check the URL"), "{listed}");
        // The provider's text reaches the terminal printable.
        let odd = public_client_refused(&["basic\u{1b}[2J".into()]);
        assert!(!odd.contains('\u{1b}'), "{odd:?}");
    }
}
