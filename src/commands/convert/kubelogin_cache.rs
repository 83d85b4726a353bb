//! int128/kubelogin's token cache, read for `convert-kubeconfig`. kubelogin keeps one JSON
//! document per login, `{"id_token": "…", "refresh_token": "…"}` (pkg/tokencache/repository), in
//! its cache directory (`~/.kube/cache/oidc-login` by default, `$KUBECACHEDIR/oidc-login`,
//! `--token-cache-dir`), named by the SHA-256 of everything that makes a login differ
//! (`kubelogin::token_cache`), with a `<name>.lock` beside it; with `--token-cache-storage
//! keyring` the document is the OS keyring item of service `kubelogin` and account
//! `kubelogin/tokencache/<name>`.
//!
//! So a stanza's login is the entry under the name kubelogin gives the stanza: the one kubelogin
//! itself would hand kubectl for it, never another user's or another stanza's (another user
//! name, other scopes are another name; other parameters too from 1.36, whose key has them).
//! Where the name cannot be told, nothing
//! is carried. Of the names one stanza may have had (each release since 1.31 names it its own
//! way, and maps are written in Go's random order), the newest entry is taken: each is that
//! stanza's. What is carried is verified before it is cached
//! (`acquire::adopt`).

use super::plan::KubeloginCache;
use crate::acquire::Carried;
use crate::fs::private_file::{self, ReadError};
use crate::peers::kubelogin::command_line::Storage;
use crate::secret::Secret;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

/// The keyring service and account prefix of kubelogin's items.
const KEYRING_SERVICE: &str = "kubelogin";
const KEYRING_ACCOUNT_PREFIX: &str = "kubelogin/tokencache/";

/// A cache document is a few kilobytes; anything much larger is not kubelogin's.
const MAX_DOCUMENT: u64 = 1024 * 1024;

/// The login kubelogin cached for a stanza.
#[derive(Debug)]
pub(super) struct Found {
    /// Where: the file, or the keyring item.
    pub place: String,
    pub carried: Carried,
}

/// kubelogin's cache document.
#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    id_token: String,
    #[serde(default)]
    refresh_token: String,
}

/// The stanza's login in kubelogin's cache. The error says why nothing can be carried: the
/// name cannot be told, kubelogin keeps nothing, its keyring is out of reach, nothing is there.
pub(super) fn find(cache: &KubeloginCache) -> Result<Found, String> {
    let names = cache.names.as_ref().map_err(Clone::clone)?;
    let dir = &cache.dir;
    let mut documents: Vec<(String, Vec<u8>)> = Vec::new();
    match cache.storage {
        Storage::None => {
            return Err(
                "kubelogin keeps no tokens for it (--token-cache-storage=none): it logs in every time"
                    .into(),
            );
        }
        Storage::Disk => {
            for name in names {
                let path = dir.join(name);
                match private_file::read(&path, MAX_DOCUMENT) {
                    Ok(bytes) => documents.push((path.display().to_string(), bytes)),
                    // Another user's file, a link, a FIFO: not kubelogin's for this user.
                    Err(ReadError::Foreign(_) | ReadError::Corrupt(_) | ReadError::NotFound) => {}
                    Err(ReadError::Io(err)) => {
                        return Err(format!("cannot read kubelogin's {}: {err}", path.display()));
                    }
                }
            }
        }
        Storage::Keyring => {
            for name in names {
                let account = format!("{KEYRING_ACCOUNT_PREFIX}{name}");
                match crate::cache::other_programs_keyring_item(KEYRING_SERVICE, &account) {
                    Ok(Some(item)) => documents.push((
                        format!("the OS keyring item {KEYRING_SERVICE}/{account}"),
                        go_keyring_value(item.expose()),
                    )),
                    Ok(None) => {}
                    Err(reason) => {
                        return Err(format!(
                            "kubelogin keeps its tokens in the OS keyring, which is not reachable here ({reason})"
                        ));
                    }
                }
            }
        }
    }
    let newest = documents
        .into_iter()
        .filter_map(|(place, bytes)| {
            let document: Document = serde_json::from_slice(&bytes).ok()?;
            let issued = crate::tokens::unverified_jwt_segment(&document.id_token, 1)
                .and_then(|claims| {
                    let time = |name: &str| claims.get(name).and_then(Value::as_i64);
                    time("iat").or(time("exp"))
                })
                .unwrap_or(0);
            Some((issued, place, document))
        })
        .max_by_key(|(issued, _, _)| *issued);
    let Some((_, place, document)) = newest else {
        let store = match cache.storage {
            Storage::Keyring => "the OS keyring".to_string(),
            _ => format!("kubelogin's cache {}", dir.display()),
        };
        return Err(format!(
            "{store} holds no login for this stanza's settings (kubelogin 1.31 and later would log in again too)"
        ));
    };
    let nonempty = |token: String| Some(token).filter(|t| !t.is_empty()).map(Secret::new);
    Ok(Found {
        place,
        carried: Carried {
            // With --oidc-use-access-token the document's "ID token" is the access token:
            // kubecred takes access tokens only from the provider, so the refresh brings one.
            id_token: if cache.access_token {
                None
            } else {
                nonempty(document.id_token)
            },
            refresh_token: nonempty(document.refresh_token),
        },
    })
}

/// The value go-keyring stored: on macOS it writes `go-keyring-base64:` + base64 (older
/// versions `go-keyring-encoded:` + hex for values with line breaks); elsewhere the value.
fn go_keyring_value(item: &str) -> Vec<u8> {
    if let Some(encoded) = item.strip_prefix("go-keyring-base64:")
        && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded.trim())
    {
        return bytes;
    }
    if let Some(hex) = item.strip_prefix("go-keyring-encoded:") {
        let hex = hex.trim();
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect();
        if let Some(bytes) = bytes {
            return bytes;
        }
    }
    item.as_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn jwt(claims: Value) -> String {
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(&claims.to_string())
        )
    }

    fn put(dir: &Path, name: &str, claims: Value, refresh: &str) {
        let document = serde_json::json!({"id_token": jwt(claims), "refresh_token": refresh});
        std::fs::write(dir.join(name), document.to_string()).unwrap();
        std::fs::write(dir.join(format!("{name}.lock")), "").unwrap();
    }

    fn cache(dir: &Path, names: &[&str], access_token: bool) -> KubeloginCache {
        KubeloginCache {
            dir: dir.to_path_buf(),
            storage: Storage::Disk,
            names: Ok(names.iter().map(|n| n.to_string()).collect()),
            access_token,
        }
    }

    #[test]
    fn the_stanzas_own_entry_is_found_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let claims = |sub: &str, iat: i64| serde_json::json!({"iss": "https://idp.example", "aud": "k8s", "sub": sub, "iat": iat, "exp": iat + 600});
        let (a, b, bob) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        put(dir.path(), &a, claims("ada", 100), "rt-old");
        put(dir.path(), &b, claims("ada", 200), "rt-new");
        // Another stanza's login (bob's): same issuer and client, another name.
        put(dir.path(), &bob, claims("bob", 300), "rt-bob");
        // Of the names one stanza may have had, the newest entry.
        let found = find(&cache(dir.path(), &[&a, &b], false)).unwrap();
        assert!(found.place.ends_with(&b), "{}", found.place);
        assert_eq!(found.carried.refresh_token.unwrap().expose(), "rt-new");
        assert!(found.carried.id_token.is_some());
        // With the access token in the ID token's place, its refresh token is carried.
        let found = find(&cache(dir.path(), &[&a], true)).unwrap();
        assert!(found.carried.id_token.is_none());
        assert_eq!(found.carried.refresh_token.unwrap().expose(), "rt-old");
        // A name with no entry: nothing, whoever else is cached.
        let missing = "d".repeat(64);
        let err = find(&cache(dir.path(), &[&missing], false)).unwrap_err();
        assert!(
            err.contains("holds no login for this stanza's settings"),
            "{err}"
        );
        // Names that cannot be told, and no storage at all.
        let mut untold = cache(dir.path(), &[], false);
        untold.names = Err("too many".into());
        assert_eq!(find(&untold).unwrap_err(), "too many");
        let mut none = cache(dir.path(), &[&a], false);
        none.storage = Storage::None;
        assert!(
            find(&none)
                .unwrap_err()
                .contains("--token-cache-storage=none")
        );
    }

    #[test]
    fn go_keyrings_macos_encodings_are_read() {
        assert_eq!(go_keyring_value("go-keyring-base64:e30="), b"{}");
        assert_eq!(go_keyring_value("go-keyring-encoded:7b7d"), b"{}");
        assert_eq!(
            go_keyring_value("{\"id_token\":\"x\"}"),
            b"{\"id_token\":\"x\"}"
        );
    }
}
