//! A provider's refusal of the device flow for one client, remembered for a while, so that
//! `--grant-type auto` goes straight to the login that works instead of asking again (and, for
//! a refusal at the poll, instead of having the person sign in once for nothing).
//!
//! One small private file per issuer and client beside the discovery cache:
//! `<cache dir>/oidc/<sha256(issuer)>.device-flow-refused.<sha256(client ID), 16 hex>.json`,
//! holding the issuer, the client, when and what the provider said (its printable `error
//! (description)`: never a secret). It is a courtesy like the rest of this cache: a missing,
//! corrupt, foreign or stale file means "not remembered", and failing to write it is logged, not
//! returned. Policies change rarely but do change, so it is believed for [`REMEMBERED_FOR`]
//! only; `--grant-type device-code` tries the device flow again whenever asked.

use super::{fresh, read_cache, rfc3339, write_cache};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use url::Url;

/// How long a refusal is believed: long enough that a person who logs in every day or two does
/// not meet it again, short enough that a provider that allows the flow again gets used again
/// within the week.
pub const REMEMBERED_FOR: Duration = Duration::days(7);

/// The layout of the file; another one is not read.
const VERSION: u32 = 1;

/// A refusal of the device flow, as remembered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceFlowRefusal {
    version: u32,
    issuer: String,
    client_id: String,
    refused_at: String,
    /// What the provider said, printable: `error (description)`.
    pub said: String,
}

impl DeviceFlowRefusal {
    /// When the provider refused.
    pub fn refused_at(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.refused_at)
            .ok()
            .map(|at| at.with_timezone(&Utc))
    }
}

/// Where the refusal of `client_id` at `issuer` is kept.
fn path(cache_dir: &Path, issuer: &Url, client_id: &str) -> PathBuf {
    let issuer_stem = crate::digest::sha256_hex(issuer.as_str().as_bytes());
    let client_stem = crate::digest::sha256_hex(client_id.as_bytes());
    cache_dir.join("oidc").join(format!(
        "{issuer_stem}.device-flow-refused.{}.json",
        &client_stem[..16]
    ))
}

/// Notes that `issuer` refused the device flow for `client_id` at `now`, saying `said`.
pub fn remember(cache_dir: &Path, issuer: &Url, client_id: &str, said: &str, now: DateTime<Utc>) {
    let refusal = DeviceFlowRefusal {
        version: VERSION,
        issuer: issuer.to_string(),
        client_id: client_id.to_string(),
        refused_at: rfc3339(now),
        said: said.to_string(),
    };
    write_cache(&path(cache_dir, issuer, client_id), &refusal);
}

/// The refusal of the device flow for `client_id` at `issuer` noted less than
/// [`REMEMBERED_FOR`] before `now`, if any.
pub fn remembered(
    cache_dir: &Path,
    issuer: &Url,
    client_id: &str,
    now: DateTime<Utc>,
) -> Option<DeviceFlowRefusal> {
    let refusal: DeviceFlowRefusal = read_cache(&path(cache_dir, issuer, client_id))?;
    let ours = refusal.version == VERSION
        && refusal.issuer == issuer.as_str()
        && refusal.client_id == client_id;
    let at = refusal.refused_at()?;
    (ours && fresh(at, now, REMEMBERED_FOR)).then_some(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(days: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000, 0).unwrap() + Duration::days(days)
    }

    #[test]
    fn a_refusal_is_remembered_for_this_issuer_and_client_for_a_week() {
        let dir = tempfile::tempdir().unwrap();
        let issuer = Url::parse("https://idp.example/realm").unwrap();
        assert!(remembered(dir.path(), &issuer, "kubecred", at(0)).is_none());
        remember(
            dir.path(),
            &issuer,
            "kubecred",
            "unauthorized_client",
            at(0),
        );
        let refusal = remembered(dir.path(), &issuer, "kubecred", at(6)).unwrap();
        assert_eq!(refusal.said, "unauthorized_client");
        assert_eq!(refusal.refused_at(), Some(at(0)));
        assert!(remembered(dir.path(), &issuer, "kubecred", at(8)).is_none());
        assert!(remembered(dir.path(), &issuer, "other-client", at(1)).is_none());
        let other = Url::parse("https://idp.example/other").unwrap();
        assert!(remembered(dir.path(), &other, "kubecred", at(1)).is_none());
        // A note from the future (a clock set back) is not believed.
        assert!(remembered(dir.path(), &issuer, "kubecred", at(-1)).is_none());
        let file = path(dir.path(), &issuer, "kubecred");
        assert!(file.starts_with(dir.path().join("oidc")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_file_of_another_issuer_or_layout_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let issuer = Url::parse("https://idp.example").unwrap();
        let file = path(dir.path(), &issuer, "kubecred");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let mut planted = serde_json::json!({
            "version": 1, "issuer": "https://evil.example/", "client_id": "kubecred",
            "refused_at": rfc3339(at(0)), "said": "x",
        });
        std::fs::write(&file, planted.to_string()).unwrap();
        assert!(remembered(dir.path(), &issuer, "kubecred", at(0)).is_none());
        planted["issuer"] = issuer.as_str().into();
        planted["version"] = 2.into();
        std::fs::write(&file, planted.to_string()).unwrap();
        assert!(remembered(dir.path(), &issuer, "kubecred", at(0)).is_none());
        std::fs::write(&file, "not json").unwrap();
        assert!(remembered(dir.path(), &issuer, "kubecred", at(0)).is_none());
    }
}
