//! int128/kubelogin's token cache, read for `convert-kubeconfig`. kubelogin keeps one JSON
//! document per login, `{"id_token": "…", "refresh_token": "…"}` (pkg/tokencache/repository),
//! named by the SHA-256 of its settings (issuer, client, secret, scopes, TLS, extra parameters,
//! gob-encoded: not something to recompute), in its cache directory (`~/.kube/cache/oidc-login`
//! by default, `--token-cache-dir`), with a `<name>.lock` beside it; with
//! `--token-cache-storage keyring` the document is the OS keyring item of service `kubelogin`
//! and account `kubelogin/tokencache/<name>`, and only the lock file is in the directory.
//!
//! So the login of a stanza is found by what its tokens say: the ID token's issuer and client
//! (`aud` or `azp`; with `--oidc-use-access-token` the access token stands in the ID token's
//! place, and its `client_id` may name the client). Logins of several users for one issuer and
//! client cannot be told apart, and are not guessed between; of one user's several (other
//! scopes), the newest is taken. The claims are read unverified here only to choose: what is
//! carried is verified before it is cached (`acquire::adopt`).

use super::plan::KubeloginStorage;
use crate::acquire::Carried;
use crate::private_file::{self, ReadError};
use crate::secret::Secret;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

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

/// One readable document, and what its token says.
struct Candidate {
    place: String,
    document: Document,
    subject: Option<String>,
    issued_at: i64,
}

/// The login of `issuer` and `client_id` in kubelogin's cache `dir`. `Ok(None)` with nothing
/// there; the error says why nothing can be carried (several users' logins, a keyring that
/// cannot be reached).
pub(super) fn find(
    dir: &Path,
    storage: KubeloginStorage,
    issuer: &str,
    client_id: &str,
    access_token: bool,
) -> Result<Option<Found>, String> {
    let names = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .collect::<Vec<_>>(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(format!(
                "cannot read kubelogin's cache {}: {err}",
                dir.display()
            ));
        }
    };
    let mut documents = Vec::new();
    match storage {
        KubeloginStorage::None => return Ok(None),
        KubeloginStorage::Disk => {
            for name in names.iter().filter(|name| is_key(name)) {
                let path = dir.join(name);
                match private_file::read(&path, MAX_DOCUMENT) {
                    Ok(bytes) => documents.push((path.display().to_string(), bytes)),
                    // Another user's file, a link, a FIFO: not kubelogin's for this user.
                    Err(ReadError::Foreign(_) | ReadError::Corrupt(_) | ReadError::NotFound) => {}
                    Err(ReadError::Io(err)) => {
                        return Err(format!("cannot read {}: {err}", path.display()));
                    }
                }
            }
        }
        KubeloginStorage::Keyring => {
            for key in names
                .iter()
                .filter_map(|name| name.strip_suffix(".lock"))
                .filter(|k| is_key(k))
            {
                let account = format!("{KEYRING_ACCOUNT_PREFIX}{key}");
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
    let issuer = issuer.trim_end_matches('/');
    let candidates: Vec<Candidate> = documents
        .into_iter()
        .filter_map(|(place, bytes)| {
            let document: Document = serde_json::from_slice(&bytes).ok()?;
            let claims = crate::tokens::unverified_jwt_segment(&document.id_token, 1)?;
            let text = |name: &str| claims.get(name).and_then(Value::as_str);
            if text("iss")?.trim_end_matches('/') != issuer {
                return None;
            }
            let audiences: Vec<&str> = match claims.get("aud") {
                Some(Value::String(one)) => vec![one.as_str()],
                Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let for_client = audiences.contains(&client_id)
                || text("azp") == Some(client_id)
                || (access_token && text("client_id") == Some(client_id));
            if !for_client {
                return None;
            }
            let time = |name: &str| claims.get(name).and_then(Value::as_i64);
            Some(Candidate {
                place,
                subject: text("sub").map(String::from),
                issued_at: time("iat").or(time("exp")).unwrap_or(0),
                document,
            })
        })
        .collect();
    let mut subjects: Vec<&str> = candidates
        .iter()
        .filter_map(|c| c.subject.as_deref())
        .collect();
    subjects.sort_unstable();
    subjects.dedup();
    if subjects.len() > 1 {
        return Err(format!(
            "kubelogin's cache {} holds logins of {} different users for this issuer and client, and nothing tells which one is this user's",
            dir.display(),
            subjects.len()
        ));
    }
    let Some(newest) = candidates.into_iter().max_by_key(|c| c.issued_at) else {
        return Ok(None);
    };
    let nonempty = |token: String| Some(token).filter(|t| !t.is_empty()).map(Secret::new);
    Ok(Some(Found {
        place: newest.place,
        carried: Carried {
            // With --oidc-use-access-token the document's "ID token" is the access token:
            // kubecred takes access tokens only from the provider, so the refresh brings one.
            id_token: if access_token {
                None
            } else {
                nonempty(newest.document.id_token)
            },
            refresh_token: nonempty(newest.document.refresh_token),
        },
    }))
}

/// A cache document's name: kubelogin's SHA-256, 64 lower-case hex digits.
fn is_key(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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

    fn jwt(claims: Value) -> String {
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(&claims.to_string())
        )
    }

    fn put(dir: &Path, key: char, claims: Value, refresh: &str) {
        let name: String = std::iter::repeat_n(key, 64).collect();
        let document = serde_json::json!({"id_token": jwt(claims), "refresh_token": refresh});
        std::fs::write(dir.join(&name), document.to_string()).unwrap();
        std::fs::write(dir.join(format!("{name}.lock")), "").unwrap();
    }

    const ISSUER: &str = "https://idp.example";

    #[test]
    fn the_newest_login_of_the_issuer_and_client_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let claims = |aud: &str, sub: &str, iat: i64| serde_json::json!({"iss": format!("{ISSUER}/"), "aud": aud, "sub": sub, "iat": iat, "exp": iat + 600});
        put(dir.path(), 'a', claims("k8s", "ada", 100), "rt-old");
        put(dir.path(), 'b', claims("k8s", "ada", 200), "rt-new");
        put(
            dir.path(),
            'c',
            claims("other-client", "bob", 300),
            "rt-other",
        );
        std::fs::write(dir.path().join("not-a-key"), "{}").unwrap();
        let found = find(dir.path(), KubeloginStorage::Disk, ISSUER, "k8s", false)
            .unwrap()
            .unwrap();
        assert!(found.place.ends_with(&"b".repeat(64)), "{}", found.place);
        assert_eq!(found.carried.refresh_token.unwrap().expose(), "rt-new");
        assert!(found.carried.id_token.is_some());

        // With the access token in the ID token's place, only the refresh token is carried.
        let found = find(dir.path(), KubeloginStorage::Disk, ISSUER, "k8s", true)
            .unwrap()
            .unwrap();
        assert!(found.carried.id_token.is_none());

        assert!(
            find(
                dir.path(),
                KubeloginStorage::Disk,
                "https://else",
                "k8s",
                false
            )
            .unwrap()
            .is_none()
        );
        assert!(
            find(
                &dir.path().join("missing"),
                KubeloginStorage::Disk,
                ISSUER,
                "k8s",
                false
            )
            .unwrap()
            .is_none()
        );

        // Two users' logins: not guessed between.
        put(dir.path(), 'd', claims("k8s", "bob", 400), "rt-bob");
        let err = find(dir.path(), KubeloginStorage::Disk, ISSUER, "k8s", false).unwrap_err();
        assert!(err.contains("2 different users"), "{err}");
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
