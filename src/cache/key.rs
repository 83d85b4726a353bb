//! The cache key: which entry a set of settings reads and writes. A lower-case hex SHA-256 over a
//! canonical JSON of every setting that changes the token the provider issues (issuer, client, a
//! hash of the secret, scopes, grant, audience/resource, extra parameters, login hint, the CAs
//! trusted). Settings that only change how a token is used (which kind is printed, how fresh it
//! must be, where it is stored) are left out, so they share an entry.
//!
//! Left out as well: how the provider is reached — the proxy, and the `--request-header`s. A
//! header carries a gateway's API key or the `Origin` Entra ID checks; neither says who logs in
//! nor what token is issued (the client, scopes and audience do, and are in the key). In the key,
//! a rotated API key would orphan the cached login and its refresh token, and force a new
//! browser login for the same token; and a hash of a secret would sit in the key material for no
//! gain. `--grant-type auto` is keyed as `authcode` whichever login it runs (a browser, or the
//! device flow over SSH): the same user's token for the same client.
//!
//! A shared login (`--shared-login`) has two kinds of entry: the login's, keyed as above with
//! its targets left out (one per issuer, client and account: [`CacheKey::for_settings`] of any
//! of its clusters' settings), and one per cluster target, keyed by the login's key, the target
//! and how the token is derived ([`CacheKey::derived`]; `entry.rs` makes both once).

use crate::config::{
    ClientAuth, CloudSettings, Config, DEFAULT_GOOGLE_SCOPES, PrivateKeyPem, SharedLogin,
};
use crate::digest::sha256_hex;
use serde::Serialize;

/// The version of the key material. Bump it when what the key covers changes meaning: every
/// entry then gets a new key (a miss), and the old entries are left for `logout --all`.
const KEY_VERSION: u32 = 1;

/// Names one cache entry: lower-case hex SHA-256 over a canonical JSON of every setting that changes
/// the token the provider issues. Safe to show and to use as a file name; contains no secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

/// The key material. Field order is fixed by the struct, and JSON quoting keeps field boundaries
/// unambiguous (`"a b"+"c"` and `"a"+"b c"` encode differently). Lists that are sets are sorted.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    v: u32,
    issuer: &'a str,
    client_id: &'a str,
    /// A hash: the secret itself must not reach a file name or a log line, but a changed secret
    /// may be another client registration, so it changes the key.
    client_secret_sha256: Option<String>,
    scopes: Vec<&'a str>,
    grant: &'static str,
    audience: Option<&'a str>,
    resource: Option<&'a str>,
    auth_params: Vec<(&'a str, &'a str)>,
    login_hint: Option<&'a str>,
    /// Left out when unset: a setting added to the key changes no key of the settings that do
    /// not use it (no forced logins).
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<&'a str>,
    /// Which provider we trust: tokens fetched while trusting another CA (or none) are not the same.
    ca_sha256: Vec<String>,
    insecure_skip_tls_verify: bool,
    /// Below: only present for the settings that use them, so that keys of other settings
    /// stay as they were (no version bump). How the client proves itself (a key file, an
    /// assertion source; a secret is covered by its hash above): another key is another client.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_auth: Option<String>,
    /// Where the subject token comes from, with its type and the type asked for: a pod's
    /// token and a CI job's are different principals.
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<(String, &'a str, Option<&'a str>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    username: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_endpoint: Option<&'a str>,
    /// A shared login's entry (`--shared-login`): one per issuer, client and account, whatever
    /// cluster it serves; its targets are left out (they are the derived entries').
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_login: Option<bool>,
    /// A cloud grant's settings (`config::CloudSettings`), canonical; absent for every other
    /// grant, so their keys are what they were before clouds existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    cloud: Option<serde_json::Value>,
}

/// The key material of a token derived from a shared login: the login's entry, how the token
/// is derived, and for what.
#[derive(Serialize)]
struct DerivedKeyMaterial<'a> {
    v: u32,
    login: &'a str,
    derive: &'static str,
    target: String,
    audience: &'a str,
}

impl CacheKey {
    /// The key of `config`'s settings: its entry, or for a `--shared-login` cluster the one
    /// login's entry (no target in it), which its token is derived from ([`CacheKey::derived`]).
    pub fn for_settings(config: &Config) -> CacheKey {
        CacheKey(sha256_hex(canonical_key_material(config).as_bytes()))
    }

    /// The entry of the token derived from the shared login `login` for `shared`'s target.
    pub(crate) fn derived(login: &CacheKey, shared: &SharedLogin) -> CacheKey {
        let material = DerivedKeyMaterial {
            v: KEY_VERSION,
            login: login.as_str(),
            derive: shared.derive.name(),
            target: shared.target.key_material(),
            audience: shared.target.audience(),
        };
        let json = serde_json::to_string(&material).expect("the key material is plain strings");
        CacheKey(sha256_hex(json.as_bytes()))
    }

    /// The key a cache file is named after (`<key>.json`), if `name` is one: 64 lower-case hex.
    pub fn from_file_stem(name: &str) -> Option<CacheKey> {
        let is_key = name.len() == 64
            && name
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        is_key.then(|| CacheKey(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn canonical_key_material(config: &Config) -> String {
    let mut scopes: Vec<&str> = config.scopes.iter().map(String::as_str).collect();
    scopes.sort_unstable();
    scopes.dedup();
    let mut auth_params: Vec<(&str, &str)> = config
        .login
        .auth_params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    auth_params.sort_unstable();
    let mut ca_sha256: Vec<String> = config
        .http
        .tls
        .extra_ca_pems
        .iter()
        .map(|pem| sha256_hex(pem))
        .collect();
    ca_sha256.sort_unstable();
    ca_sha256.dedup();
    let material = KeyMaterial {
        v: KEY_VERSION,
        issuer: config.issuer.as_str(),
        client_id: &config.client.id,
        client_secret_sha256: config
            .client
            .secret()
            .map(|secret| sha256_hex(secret.expose().as_bytes())),
        scopes,
        grant: config.grant.name(),
        audience: config.audience.as_deref(),
        resource: config.resource.as_deref(),
        auth_params,
        login_hint: config.login.login_hint.as_deref(),
        account: config.account.as_deref(),
        ca_sha256,
        insecure_skip_tls_verify: config.http.tls.insecure_skip_verify,
        client_auth: match &config.client.auth {
            ClientAuth::None | ClientAuth::Secret { .. } => None,
            ClientAuth::PrivateKeyJwt(key) => Some(format!(
                "private-key-jwt {} {}",
                match &key.pem {
                    PrivateKeyPem::File(path) => path.display().to_string(),
                    PrivateKeyPem::Env(pem) =>
                        format!("env {}", sha256_hex(pem.expose().as_bytes())),
                },
                key.key_id.as_deref().unwrap_or("")
            )),
            ClientAuth::Assertion(source) => Some(format!("assertion {}", source.describe())),
        },
        subject: config.subject.as_ref().map(|subject| {
            (
                subject.source.describe(),
                subject.token_type.as_str(),
                subject.requested_token_type.as_deref(),
            )
        }),
        username: config.password.as_ref().and_then(|p| p.username.as_deref()),
        token_endpoint: config.token_endpoint.as_ref().map(|url| url.as_str()),
        shared_login: config.shared_login.as_ref().map(|_| true),
        cloud: config.cloud.as_ref().map(cloud_material),
    };
    serde_json::to_string(&material).expect("the key material is plain strings")
}

/// What changes a cloud's token: where the credentials come from (the source, the file as named,
/// the variables the search reads, gcloud's arguments) and what is asked (the scopes, sorted,
/// the defaults written out). No credential file is read for the key: the hit reads one file.
fn cloud_material(cloud: &CloudSettings) -> serde_json::Value {
    match cloud {
        CloudSettings::Google(google) => {
            let mut scopes: Vec<&str> = if google.scopes.is_empty() {
                DEFAULT_GOOGLE_SCOPES.to_vec()
            } else {
                google.scopes.iter().map(String::as_str).collect()
            };
            scopes.sort_unstable();
            scopes.dedup();
            serde_json::json!({
                "google": google.source.name(),
                "credentials": google.credentials_file.as_ref().map(|f| f.display().to_string()),
                "variables": google.variables,
                "scopes": scopes,
                "gcloud": [
                    &google.gcloud.account,
                    &google.gcloud.project,
                    &google.gcloud.impersonate_service_account,
                ],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::tests::{config_from, strings};
    use std::collections::HashSet;

    const KEY_BASE: [&str; 2] = ["--issuer-url=https://idp.example", "--client-id=kubernetes"];

    /// The key of the base settings, with `extra` flags added or replacing a base flag.
    fn key_of(extra: &[&str]) -> CacheKey {
        let flag = |arg: &str| arg.split('=').next().unwrap().to_string();
        let mut args: Vec<String> = KEY_BASE
            .iter()
            .filter(|base| !extra.iter().any(|e| flag(e) == flag(base)))
            .map(|s| s.to_string())
            .collect();
        args.extend(strings(extra));
        crate::cache::Entry::of(&config_from(&args)).key
    }

    #[test]
    fn key_is_64_lower_case_hex() {
        let key = key_of(&[]);
        assert_eq!(key.as_str().len(), 64);
        assert!(
            key.as_str()
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        );
        assert_eq!(key.to_string(), key.as_str());
        assert_eq!(CacheKey::from_file_stem(key.as_str()), Some(key.clone()));
        assert_eq!(CacheKey::from_file_stem(&key.as_str()[1..]), None);
        assert_eq!(CacheKey::from_file_stem(&key.as_str().to_uppercase()), None);
    }

    #[test]
    fn one_shared_login_serves_every_target_and_each_target_has_its_own_token() {
        let cluster = |extra: &[&str]| {
            let mut args = strings(&KEY_BASE);
            args.extend(strings(&["--shared-login"]));
            args.extend(strings(extra));
            config_from(&args)
        };
        let a = cluster(&[
            "--resource=https://a",
            "--login-resource=https://a,https://b",
        ]);
        let b = cluster(&["--resource=https://b"]);
        let exchanged = cluster(&["--resource=https://b", "--derive=token-exchange"]);
        let by_scope = cluster(&["--target-scope=api://b/.default"]);
        // One login, whatever the cluster and whatever it asks the login for …
        let login = CacheKey::for_settings(&a);
        for other in [&b, &exchanged, &by_scope] {
            assert_eq!(CacheKey::for_settings(other), login);
        }
        // … and one token per target and way of deriving it, none of them the login's entry
        // nor a plain login's with the same resource (that one holds an ID token too).
        let keys: HashSet<CacheKey> = [&a, &b, &exchanged, &by_scope]
            .iter()
            .map(|config| {
                let shared = config.shared_login.as_ref().unwrap();
                crate::cache::Entry::shared(config, shared).0.key
            })
            .chain([login, key_of(&["--resource=https://b"])])
            .collect();
        assert_eq!(keys.len(), 6);
        // The plain key is what it was before shared logins existed: nobody is logged out.
        assert_eq!(key_of(&[]), key_of(&["--shared-login=false"]));
    }

    #[test]
    fn key_ignores_the_order_of_scopes_and_auth_params() {
        assert_eq!(
            key_of(&["--scope=email,groups"]),
            key_of(&["--scope=groups,email"])
        );
        assert_eq!(
            key_of(&["--scope=email groups"]),
            key_of(&["--scope=groups", "--scope=email"])
        );
        assert_eq!(
            key_of(&["--auth-param=a=1", "--auth-param=b=2"]),
            key_of(&["--auth-param=b=2", "--auth-param=a=1"])
        );
    }

    #[test]
    fn key_changes_with_each_input_that_changes_the_token() {
        let ca = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "-----BEGIN CERTIFICATE-----\nA\n",
        );
        let ca2 = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "-----BEGIN CERTIFICATE-----\nB\n",
        );
        let ca_arg = format!("--certificate-authority-data={ca}");
        let ca2_arg = format!("--certificate-authority-data={ca2}");
        let variants: Vec<Vec<&str>> = vec![
            vec![],
            vec!["--issuer-url=https://other.example"],
            vec!["--client-id=other"],
            vec!["--client-secret=s1"],
            vec!["--client-secret=s2"],
            vec!["--scope=email"],
            vec!["--grant-type=device-code"],
            vec!["--audience=x"],
            vec!["--resource=x"],
            vec!["--auth-param=x=1"],
            vec!["--auth-param=x=2"],
            vec!["--login-hint=x"],
            vec!["--account=work"],
            vec!["--account=admin"],
            vec![ca_arg.as_str()],
            vec![ca2_arg.as_str()],
            vec!["--insecure-skip-tls-verify"],
            // Who the CI principal is: the subject token's source, its type, what is asked for.
            vec!["--grant-type=token-exchange", "--subject-token-file=/a"],
            vec!["--grant-type=token-exchange", "--subject-token-file=/b"],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-source=github-actions",
            ],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-source=github-actions",
                "--subject-token-audience=x",
            ],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-source=gitlab",
            ],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-env=T",
                "--subject-token-type=urn:x",
            ],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-env=T",
                "--requested-token-type=urn:y",
            ],
            vec![
                "--grant-type=token-exchange",
                "--subject-token-env=T",
                "--token-endpoint=https://sts.example/token",
            ],
            vec!["--grant-type=federated-token", "--subject-token-env=T"],
            // How the client proves itself.
            vec!["--client-private-key-file=/k1"],
            vec!["--client-private-key-file=/k1", "--client-key-id=k"],
            vec!["--client-assertion-file=/a"],
            vec!["--client-assertion-env=A"],
            vec!["--grant-type=password", "--username=alice"],
            vec!["--grant-type=password", "--username=bob"],
        ];
        let keys: HashSet<CacheKey> = variants.iter().map(|extra| key_of(extra)).collect();
        assert_eq!(
            keys.len(),
            variants.len(),
            "two different settings share a key"
        );
    }

    #[test]
    fn key_ignores_what_does_not_change_the_token() {
        let base = key_of(&[]);
        for extra in [
            "--use-access-token",
            "--min-validity=5m",
            "--cache-storage=disk",
            "--cache-dir=/elsewhere",
            "--force-refresh",
            "--prompt=login",
        ] {
            assert_eq!(key_of(&[extra]), base, "{extra}");
        }
    }

    #[test]
    fn key_material_holds_a_hash_of_the_client_secret_not_the_secret() {
        let mut args = strings(&KEY_BASE);
        args.push("--client-secret=very-secret-value".into());
        let material = canonical_key_material(&config_from(&args));
        assert!(!material.contains("very-secret-value"), "{material}");
        assert!(
            material.contains(&sha256_hex(b"very-secret-value")),
            "{material}"
        );
        assert!(material.starts_with(r#"{"v":1,"#), "{material}");
        // No --account: nothing of it in the material, so the key is the one it was without it.
        assert!(!material.contains("account"), "{material}");
    }

    #[test]
    fn key_field_boundaries_cannot_be_confused() {
        // The same characters split differently between two fields must give different keys.
        assert_ne!(
            key_of(&["--auth-param=a=b=c"]),
            key_of(&["--auth-param=a=b", "--auth-param=c="])
        );
        assert_ne!(
            key_of(&["--audience=ab", "--resource=c"]),
            key_of(&["--audience=a", "--resource=bc"])
        );
    }
}
