//! `kubecred status`: every cached login — issuer, client, scopes, account, user (the name the
//! token gives: `preferred_username`, else `email`, else `sub`; `subject` in the JSON), where it is kept,
//! when its token expires, whether it holds a refresh token — as a table for people or JSON for
//! scripts (`--output json`). Never a token: the listing (`cache::list_sessions`) reads the cache
//! directory only, and carries no secret.

use crate::cache::{
    EntryAbout, EntryState, RefreshPlace, Session, SessionPlace, Store, list_sessions, secrets_of,
};
use crate::cli::{OutputArg, StatusArgs};
use crate::clock::Clock;
use crate::duration::display_time;
use crate::text::printable_brief;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::path::Path;

pub(super) fn run(args: &StatusArgs, clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    let dir = crate::config::resolve_cache_dir(&args.cache)?;
    let sessions = list_sessions(&dir)?;
    let now = clock.now();
    Ok(Some(match args.output {
        OutputArg::Json => json(&dir, &sessions, now),
        OutputArg::Table => table(&dir, &sessions, now),
    }))
}

/// One entry for scripts; the field names are a stable interface (docs/tokens.md, "Sessions and accounts").
#[derive(Serialize)]
struct JsonEntry<'a> {
    key: &'a str,
    issuer: Option<&'a str>,
    client_id: Option<&'a str>,
    account: Option<&'a str>,
    subject: Option<&'a str>,
    grant: Option<&'a str>,
    /// The scopes asked for (empty when none were, or the entry is unreadable).
    scopes: Vec<&'a str>,
    audience: Option<&'a str>,
    resource: Option<&'a str>,
    /// A shared login's entry: the targets its login was granted.
    granted: Option<&'a [String]>,
    /// A token derived from a shared login: the key of the login's entry.
    derived_from: Option<&'a str>,
    /// `file` or `keyring`.
    storage: &'static str,
    /// The keyring store of a `keyring` entry (`secret-service`, `keyutils`, `native`).
    keyring_store: Option<Store>,
    id_token_expires: Option<DateTime<Utc>>,
    access_token_expires: Option<DateTime<Utc>>,
    obtained_at: Option<DateTime<Utc>>,
    /// Whether the printed token has expired (by this machine's clock).
    expired: bool,
    refresh_token: bool,
    /// `entry` (beside the other tokens) or the keyring store of its own item.
    refresh_token_in: Option<serde_json::Value>,
    /// Every place holding some of the entry's tokens: which, in which store (`file`: the plain
    /// private file) and where, in the platform's terms (a path, or the keyring item).
    secrets: Vec<JsonSecret>,
    /// The last background renewal's failure (refresh-ahead), until new tokens are saved.
    renewal_failed: Option<RenewalFailedJson>,
    /// The provider refused the refresh token (it was dropped): a login is needed when the
    /// cached token runs out.
    refresh_refused: Option<NoteJson>,
    /// A login failed (or was abandoned): the cool-down, and for a login started without a
    /// terminal (`without_terminal`) the hold-off of IDEs and dashboards.
    #[serde(skip_serializing_if = "Option::is_none")]
    login_failed: Option<LoginFailedJson>,
    /// When a desktop notification about the entry was last raised.
    #[serde(skip_serializing_if = "Option::is_none")]
    notified_at: Option<DateTime<Utc>>,
    unreadable: Option<&'a str>,
}

#[derive(Serialize)]
struct LoginFailedJson {
    at: DateTime<Utc>,
    reason: String,
    without_terminal: bool,
}

#[derive(Serialize)]
struct JsonSecret {
    holds: &'static str,
    store: serde_json::Value,
    location: String,
}

#[derive(Serialize)]
struct NoteJson {
    at: DateTime<Utc>,
    reason: String,
}

#[derive(Serialize)]
struct RenewalFailedJson {
    failed_at: DateTime<Utc>,
    reason: String,
    /// Failed background renewals of these tokens in a row.
    attempts: u32,
    /// When the next background renewal may start; `null`: not again for these tokens.
    retry_at: Option<DateTime<Utc>>,
}

fn json(dir: &Path, sessions: &[Session], now: DateTime<Utc>) -> String {
    let entries: Vec<JsonEntry> = sessions
        .iter()
        .map(|session| {
            let about = session.about.as_ref();
            let state = session.state(dir);
            JsonEntry {
                key: session.key.as_str(),
                issuer: about.map(|a| a.issuer.as_str()),
                client_id: about.map(|a| a.client_id.as_str()),
                account: about.and_then(|a| a.account.as_deref()),
                subject: about.and_then(|a| a.subject.as_deref()),
                grant: about.map(|a| a.grant.as_str()),
                scopes: about
                    .map_or_else(Vec::new, |a| a.scopes.iter().map(String::as_str).collect()),
                audience: about.and_then(|a| a.audience.as_deref()),
                resource: about.and_then(|a| a.resource.as_deref()),
                granted: about.and_then(|a| a.granted.as_deref()),
                derived_from: about.and_then(|a| a.derived_from.as_deref()),
                storage: match session.place {
                    SessionPlace::File => "file",
                    SessionPlace::Keyring { .. } => "keyring",
                },
                keyring_store: match session.place {
                    SessionPlace::File => None,
                    SessionPlace::Keyring { store } => Some(store),
                },
                id_token_expires: session.id_token_expiry,
                access_token_expires: session.access_token_expiry,
                obtained_at: session.obtained_at,
                expired: expiry(session).is_none_or(|at| at <= now),
                refresh_token: session.refresh_token != RefreshPlace::None,
                refresh_token_in: match session.refresh_token {
                    RefreshPlace::None => None,
                    RefreshPlace::Entry => Some("entry".into()),
                    RefreshPlace::Keyring(store) => serde_json::to_value(store).ok(),
                },
                secrets: secrets_of(dir, session)
                    .into_iter()
                    .map(|piece| JsonSecret {
                        holds: piece.holds,
                        store: piece
                            .store
                            .and_then(|store| serde_json::to_value(store).ok())
                            .unwrap_or_else(|| "file".into()),
                        location: piece.location,
                    })
                    .collect(),
                renewal_failed: state.renewal.and_then(|r| r.failed).map(|failed| {
                    RenewalFailedJson {
                        failed_at: failed.note.at,
                        reason: failed.note.reason,
                        attempts: failed.attempts,
                        retry_at: failed.retry_at,
                    }
                }),
                refresh_refused: state.refresh_refused.map(|note| NoteJson {
                    at: note.at,
                    reason: note.reason,
                }),
                login_failed: state.login_failed.map(|note| LoginFailedJson {
                    at: note.at,
                    reason: note.reason,
                    without_terminal: state.login_without_terminal,
                }),
                notified_at: state.notified_at,
                unreadable: session.unreadable.as_deref(),
            }
        })
        .collect();
    let document = serde_json::json!({ "cache_dir": dir, "entries": entries });
    let mut text = serde_json::to_string_pretty(&document).expect("plain JSON");
    text.push('\n');
    text
}

/// The expiry people care about: the later of the two tokens' (the one kubectl is given is
/// one of them; either lets get-token answer from the cache until then).
fn expiry(session: &Session) -> Option<DateTime<Utc>> {
    session
        .id_token_expiry
        .into_iter()
        .chain(session.access_token_expiry)
        .max()
}

fn table(dir: &Path, sessions: &[Session], now: DateTime<Utc>) -> String {
    if sessions.is_empty() {
        return format!("no cached logins in {}\n", dir.display());
    }
    let header = [
        "ISSUER", "CLIENT", "SCOPES", "ACCOUNT", "USER", "AUDIENCE", "STORAGE", "EXPIRES",
        "REFRESH",
    ];
    let rows: Vec<[String; 9]> = sessions.iter().map(|s| row(s, now)).collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        text.push_str(padded.join("  ").trim_end());
        text.push('\n');
    };
    line(&mut header.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    // What went wrong out of sight, below the table: the background renewals have no stderr of
    // their own, and a refusal they met is said nowhere else.
    let notes: Vec<String> = sessions
        .iter()
        .zip(&rows)
        .flat_map(|(session, row)| notes_below_table(&session.state(dir), &row[0], &row[4]))
        .collect();
    if !notes.is_empty() {
        text.push('\n');
        text.push_str(&notes.concat());
    }
    text
}

/// The lines about one entry's state under the table: a refused refresh token, a login that did
/// not complete (and whether IDEs and dashboards are held off), a desktop notification raised,
/// and a failed background renewal with when the next one may start.
fn notes_below_table(state: &EntryState, issuer: &str, subject: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(refused) = &state.refresh_refused {
        lines.push(format!(
            "the provider refused the refresh token for {issuer} ({subject}) at {}: {}; the cached token is used until it runs out, then a login is needed\n",
            display_time(refused.at),
            printable_brief(&refused.reason, 300)
        ));
    }
    if let Some(failed) = &state.login_failed {
        let held_off = if state.login_without_terminal {
            ", started without a terminal (IDEs and dashboards open no other tab for --login-holdoff)"
        } else {
            ""
        };
        lines.push(format!(
            "a login for {issuer} ({subject}) did not complete at {}{held_off}: {}; `kubecred login` with its settings logs in now\n",
            display_time(failed.at),
            printable_brief(&failed.reason, 300)
        ));
    }
    if let Some(at) = state.notified_at {
        lines.push(format!(
            "a desktop notification about {issuer} ({subject}) was raised at {}\n",
            display_time(at)
        ));
    }
    if let Some(failed) = state.renewal.as_ref().and_then(|r| r.failed.as_ref()) {
        let next = match &failed.retry_at {
            Some(at) => format!("next try after {}", display_time(*at)),
            None => "not retried in the background for this token".to_string(),
        };
        lines.push(format!(
            "the background renewal for {issuer} ({subject}) failed at {} ({} in a row; {next}): {}\n",
            display_time(failed.note.at),
            failed.attempts,
            printable_brief(&failed.note.reason, 300)
        ));
    }
    lines
}

/// What the AUDIENCE column says of an entry: the audience (or resource) its token is for; a
/// shared login's entry, that it is one (its tokens are the derived entries', one per audience).
fn audience(about: Option<&EntryAbout>) -> Option<String> {
    let about = about?;
    if about.granted.is_some() {
        return Some("(shared login)".into());
    }
    let audience = about.audience.as_ref().or(about.resource.as_ref())?;
    Some(match about.derived_from {
        Some(_) => format!("{audience} (derived)"),
        None => audience.clone(),
    })
}

fn row(session: &Session, now: DateTime<Utc>) -> [String; 9] {
    // Read back from files: made safe for a terminal, cut to a sane width.
    let shown = |value: Option<&str>| {
        value.map_or_else(|| "-".to_string(), |v| printable_brief(v, 60).into_owned())
    };
    let about = session.about.as_ref();
    let storage = match session.place {
        SessionPlace::File => "file".to_string(),
        SessionPlace::Keyring { store } => format!("keyring ({})", store.name()),
    };
    let expires = match (&session.unreadable, expiry(session)) {
        (Some(reason), _) => format!("unreadable: {}", printable_brief(reason, 40)),
        (None, None) => "-".into(),
        (None, Some(at)) if at <= now => format!("{} (expired)", at.format("%Y-%m-%d %H:%M")),
        (None, Some(at)) => format!(
            "{} (in {})",
            at.format("%Y-%m-%d %H:%M"),
            crate::duration::display_elapsed((at - now).to_std().unwrap_or_default())
        ),
    };
    let refresh = match session.refresh_token {
        RefreshPlace::None => "no".to_string(),
        RefreshPlace::Entry => "yes".to_string(),
        RefreshPlace::Keyring(store) => format!("yes ({})", store.name()),
    };
    [
        shown(about.map(|a| a.issuer.as_str())),
        shown(about.map(|a| a.client_id.as_str())),
        shown(
            about
                .map(|a| a.scopes.join(" "))
                .filter(|scopes| !scopes.is_empty())
                .as_deref(),
        ),
        shown(about.and_then(|a| a.account.as_deref())),
        shown(about.and_then(|a| a.subject.as_deref())),
        shown(audience(about).as_deref()),
        storage,
        expires,
        refresh,
    ]
}
