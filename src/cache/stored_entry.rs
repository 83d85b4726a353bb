//! The stored form of one cache entry, versioned and separate from the domain type [`Tokens`]:
//! what the cache file holds (`auto`/`disk`) and what the keyring item holds (`keyring`).
//!
//! Where the refresh token is, is one enum whose `Entry` variant carries the token itself, so an
//! entry that says "the refresh token is here" without one (or holds one while saying it is in
//! the keyring) cannot be written.
//!
//! Only the version this kubecred writes is read. No kubecred has been released, so no entry of
//! an earlier version (version 1, the domain struct written as it was, with a separate location
//! tag) is on a user's machine; an entry of another version is a miss, replaced by the next save.
//! From the first release on, a change of shape bumps [`VERSION`] and keeps reading the released
//! versions, so that an upgrade logs nobody out.
//!
//! [`EntryAbout`] (issuer, client, account, subject, grant, scopes, audience, resource) rides
//! along in `about`, so that `kubecred status` can say whose an entry is (the file name is only a
//! hash) and `logout --all` where to revoke its refresh token. Every entry has it: kubecred
//! writes none without, and one without is not an entry.

use super::store::Store;
use crate::secret::Secret;
use crate::tokens::{Identity, Tokens};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The version this kubecred writes and reads. Bump it when the stored shape changes meaning
/// (see the module's paragraph on versions).
const VERSION: u32 = 2;

/// Where the refresh token of an entry is, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "kebab-case")]
pub(super) enum StoredRefresh {
    /// There is none (client credentials, or the provider issued none).
    None,
    /// In this entry.
    Entry {
        #[serde(rename = "refresh_token")]
        token: Secret,
    },
    /// In an OS keyring item of its own (account `<key>:refresh`), in this store.
    Keyring { store: Store },
}

/// What an entry is for, without any secret: shown by `kubecred status`, and what
/// `kubecred logout --all` needs to revoke the entry's refresh token at its provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryAbout {
    pub issuer: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `preferred_username`, `email` or `sub` of the token, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub grant: String,
    /// The scopes asked for: two logins to one client often differ only in them, and `status`
    /// and `logout` show how. Absent when none were (a client credentials grant may ask none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A shared login's entry (`--shared-login`): the targets its login asked for and was
    /// granted (resources, audiences or scopes). A refresh for a target outside them is never
    /// sent (`acquire/shared.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted: Option<Vec<String>>,
    /// A shared login's entry: targets it was granted that the provider has since refused to
    /// refresh it for (`invalid_target`: a provider that narrows a rotated refresh token to the
    /// last resource asked for). Not asked for again until the next login replaces the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_targets: Option<Vec<String>>,
    /// A token derived from a shared login: the key of that login's entry, which `logout`
    /// ends with every token derived from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
}

/// One entry as stored (version 2).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StoredEntry {
    v: u32,
    pub(super) about: EntryAbout,
    #[serde(default)]
    id_token: Option<Secret>,
    #[serde(default)]
    id_token_expiry: Option<DateTime<Utc>>,
    #[serde(default)]
    access_token: Option<Secret>,
    #[serde(default)]
    access_token_expiry: Option<DateTime<Utc>>,
    obtained_at: DateTime<Utc>,
    refresh: StoredRefresh,
    /// The identity a refreshed ID token must repeat; absent when the login brought no ID
    /// token (`Tokens::identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity: Option<Identity>,
}

/// Where a loaded entry's refresh token is (the token itself stays in the entry or the
/// keyring); what `status` shows of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshPlace {
    None,
    /// Beside the other tokens (in the file, or in the one keyring item).
    Entry,
    /// In an OS keyring item of its own (`auto`).
    Keyring(Store),
}

impl StoredEntry {
    /// The entry for `tokens`, with their refresh token stored as `refresh` says. `tokens`'
    /// own refresh token is not read: `refresh` is the only place it can be.
    pub(super) fn new(tokens: &Tokens, refresh: StoredRefresh, about: EntryAbout) -> StoredEntry {
        StoredEntry {
            v: VERSION,
            about,
            id_token: tokens.id_token.clone(),
            id_token_expiry: tokens.id_token_expiry,
            access_token: tokens.access_token.clone(),
            access_token_expiry: tokens.access_token_expiry,
            obtained_at: tokens.obtained_at,
            refresh,
            identity: tokens.identity.clone(),
        }
    }

    /// The entry for `tokens` with their refresh token (if any) inside it.
    pub(super) fn with_refresh_inside(tokens: &Tokens, about: EntryAbout) -> StoredEntry {
        let refresh = match &tokens.refresh_token {
            Some(token) => StoredRefresh::Entry {
                token: token.clone(),
            },
            None => StoredRefresh::None,
        };
        StoredEntry::new(tokens, refresh, about)
    }

    /// The domain tokens (with the refresh token when it is inside the entry) and where the
    /// refresh token is.
    pub(super) fn into_tokens(self) -> (Tokens, RefreshPlace) {
        let (refresh_token, at) = match self.refresh {
            StoredRefresh::None => (None, RefreshPlace::None),
            StoredRefresh::Entry { token } => (Some(token), RefreshPlace::Entry),
            StoredRefresh::Keyring { store } => (None, RefreshPlace::Keyring(store)),
        };
        let tokens = Tokens {
            id_token: self.id_token,
            id_token_expiry: self.id_token_expiry,
            access_token: self.access_token,
            access_token_expiry: self.access_token_expiry,
            refresh_token,
            obtained_at: self.obtained_at,
            identity: self.identity,
            granted_scope: None,
        };
        (tokens, at)
    }

    /// The entry in `bytes`; the error says why they are not one (a miss, not a failure).
    pub(super) fn parse(bytes: &[u8]) -> Result<StoredEntry, String> {
        #[derive(Deserialize)]
        struct Version {
            v: u32,
        }
        // An entry is a JSON object; serde would read `Version` out of an array too (`[1]`).
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return Err("not a cache entry: not a JSON object".into());
        }
        let version = serde_json::from_slice::<Version>(bytes).map(|found| found.v);
        let parsed = match version {
            Ok(VERSION) => serde_json::from_slice::<StoredEntry>(bytes),
            // Another format version has another shape: say so rather than name a field.
            Ok(other) => {
                return Err(format!(
                    "format version {other}, this kubecred reads version {VERSION}"
                ));
            }
            Err(err) => return Err(format!("not a cache entry: {err}")),
        };
        parsed.map_err(|err| format!("not a cache entry: {err}"))
    }

    pub(super) fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("tokens serialize to JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn tokens(refresh: Option<&str>) -> Tokens {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        Tokens {
            id_token: Some(Secret::new("id")),
            id_token_expiry: Some(at + chrono::Duration::hours(1)),
            access_token: Some(Secret::new("access")),
            access_token_expiry: Some(at + chrono::Duration::minutes(30)),
            refresh_token: refresh.map(Secret::new),
            obtained_at: at,
            identity: Some(Identity {
                iss: "https://issuer.example".into(),
                sub: "user-1".into(),
                aud: vec!["kubectl".into()],
            }),
            granted_scope: None,
        }
    }

    fn about() -> EntryAbout {
        EntryAbout {
            issuer: "https://idp.example".into(),
            client_id: "k8s".into(),
            account: Some("work".into()),
            subject: Some("alice".into()),
            grant: "authcode".into(),
            scopes: vec!["openid".into(), "email".into()],
            audience: None,
            resource: Some("https://kubernetes.example".into()),
            granted: Some(vec!["https://a.example".into()]),
            refused_targets: None,
            derived_from: None,
        }
    }

    /// The `about` of the entries written by hand below.
    const ABOUT: &str =
        r#""about":{"issuer":"https://idp.example","client_id":"k8s","grant":"authcode"}"#;

    #[test]
    fn round_trip_with_the_refresh_token_inside() {
        let saved = tokens(Some("r"));
        let json = StoredEntry::with_refresh_inside(&saved, about()).to_json();
        assert!(json.starts_with(br#"{"v":2,"#));
        let (loaded, at) = StoredEntry::parse(&json).unwrap().into_tokens();
        assert_eq!(loaded, saved);
        assert_eq!(at, RefreshPlace::Entry);
    }

    #[test]
    fn a_keyring_entry_holds_no_refresh_token() {
        let entry = StoredEntry::new(
            &tokens(Some("must-not-be-stored")),
            StoredRefresh::Keyring {
                store: Store::Keyutils,
            },
            about(),
        );
        let json = String::from_utf8(entry.to_json()).unwrap();
        assert!(!json.contains("must-not-be-stored"), "{json}");
        let (loaded, at) = StoredEntry::parse(json.as_bytes()).unwrap().into_tokens();
        assert_eq!(loaded.refresh_token, None);
        assert_eq!(at, RefreshPlace::Keyring(Store::Keyutils));
    }

    #[test]
    fn the_identity_is_stored_and_an_entry_without_one_reads_back_without_one() {
        let saved = tokens(Some("r"));
        let json =
            String::from_utf8(StoredEntry::with_refresh_inside(&saved, about()).to_json()).unwrap();
        assert!(
            json.contains(r#""identity":{"iss":"https://issuer.example","#),
            "{json}"
        );
        // A login without an ID token (client credentials) has no identity to record.
        let without = Tokens {
            id_token: None,
            id_token_expiry: None,
            identity: None,
            ..saved
        };
        let json = String::from_utf8(StoredEntry::with_refresh_inside(&without, about()).to_json())
            .unwrap();
        assert!(!json.contains("identity"), "{json}");
        let (loaded, _) = StoredEntry::parse(json.as_bytes()).unwrap().into_tokens();
        assert_eq!(loaded, without);
    }

    #[test]
    fn what_an_entry_is_for_is_stored_beside_it() {
        let json = StoredEntry::with_refresh_inside(&tokens(None), about()).to_json();
        assert_eq!(StoredEntry::parse(&json).unwrap().about, about());
        // Every entry kubecred writes says what it is for: one that does not is not an entry.
        let without = br#"{"v":2,"obtained_at":"2026-01-01T00:00:00Z","refresh":{"in":"none"}}"#;
        let err = StoredEntry::parse(without).unwrap_err();
        assert!(
            err.starts_with("not a cache entry: missing field `about`"),
            "{err}"
        );
    }

    #[test]
    fn inconsistent_or_foreign_entries_are_refused_with_a_reason() {
        // The shape of development builds before version 2: another version, a miss.
        let v1 = br#"{"v":1,"tokens":{"obtained_at":"2026-01-01T00:00:00Z","refresh_token":"r"},"refresh":{"in":"entry"}}"#;
        assert_eq!(
            StoredEntry::parse(v1).unwrap_err(),
            "format version 1, this kubecred reads version 2"
        );
        let missing = format!(
            r#"{{"v":2,{ABOUT},"obtained_at":"2026-01-01T00:00:00Z","refresh":{{"in":"entry"}}}}"#
        );
        let named = format!(
            r#"{{"v":2,{ABOUT},"obtained_at":"2026-01-01T00:00:00Z","refresh":{{"in":"entry","refresh_token":"r"}}}}"#
        );
        let (tokens, _) = StoredEntry::parse(named.as_bytes()).unwrap().into_tokens();
        assert_eq!(tokens.refresh_token, Some(Secret::new("r")));
        assert!(
            StoredEntry::parse(missing.as_bytes())
                .unwrap_err()
                .starts_with("not a cache entry")
        );
        let err = StoredEntry::parse(br#"{"v":3,"something":"else"}"#).unwrap_err();
        assert!(err.contains("format version 3"), "{err}");
        let err = StoredEntry::parse(b"[1]").unwrap_err();
        assert!(err.starts_with("not a cache entry"), "{err}");
    }
}
