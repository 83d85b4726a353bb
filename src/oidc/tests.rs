//! Tests of discovery, the JWKS and ID-token verification, against a loopback test server.

use super::discovery::{DISCOVERY_TTL, well_known_url};
use super::jwks::{JWKS_TTL, parse_jwks, select_key};
use super::*;
use crate::config::Config;
use crate::error::Exit;
use crate::error::{exit_code_of, one_line};
use crate::http;
use crate::http::test_server::{Answer, TestServer};
use crate::http::tests::test_config;
use base64::Engine;
use chrono::TimeZone;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{EncodingKey, Header};
use serde_json::Value;
use serde_json::json;

// Test-only private keys (generated once with openssl, DER as base64): RSA 2048 (PKCS#1),
// two P-256 keys and an Ed25519 key (PKCS#8).
const RSA_KEY: &str = "MIIEowIBAAKCAQEA4Hvht+QE8y/OUw1pdjslyuhRiKFB+bfV9CKA9pM91aJg6jU+MgQ0SwrBgaocfa+OlQvPMpNCDrVyfX+nZnQtr2ihgjiD6suXktraaqFiAOjQbUOicsEpyawgldOEbMgknGQQMx2XrE4k1l2usI1NGM4LeekrFWd69nBHN7pRBK5S4hQIkNjXQMuFqraFcXO9vJf44A6GjSQPT9LZpLS/r70qZCt3U7qzdD5j2pow7p8+cKVBI4DBWKLjeV5o5leYOejiZJW4lytSF+SZQ/EQ8jKM86HU0MoYH0FiFgf+v4M9IY1D38vytVwpiHxO7NS0G3TcsCrKLkpk2PuNdX05zQIDAQABAoIBADKQBLfgTrMd9fmkADimuuz4pgDB3bPrEfBy4xxm7tsTP4QRaQhoBQVQD2Tu1YsDw3hT2CAaphrdCMQ2wBRmH7IuPY6wvxngMKxdyiuRXRs6VVP/E3SIiKqJsC8/HMlJzWFCcpmo1TR0x3xXTpUqxo5LPq9/cvpXvA0NHiVxvHTyiOmYCFE4lot9coA1WmvV546r8u2be1nO/vh6xbssgaW4y6sP5Ec+roIDw4f2EqfTOBs0oJWrC6vuXoqmFNyie/CdQpGJW1FRLIAxmixJz9r8BnYxnWnoGpe7mxo6pl0bl+/eQUeyDclK+GA2wRCxU805FBy2E0tjHwJ6vO0zfnECgYEA9MlEZrvresGsId4eZzd2yrw/x3PnwWt3+DekJksrSSdEdMaESvcEvCd8R+hmo5mdA8sDcGWlSPRHYdiHnxz7o+Mt5/TJ22hABLipsqJwqmogs4lgRk+z+2DEsp43FFhH1zWerA7HMwYPGZL8wEeabEnfRYOGrQbgTsrZRasU2WkCgYEA6sSE7C7U9vAkq7cpWY9v6fbx3wBuPSUH2BTL43eaxhrTOuUM+dvSnH3XWlKmPnyPbGvITUW5YvULYoh0FW4vI+7uvgB+edw7DfHFjA/gqm47SjcIsGQUtSJ63gkHQ+B/5CYlq4J4DwvaX8HDe4suZHV0cYBrQ+6ndnW96bEZDMUCgYEAnnu8xIMAd87yok7MAmm/iI0PAhSBxRHOb6+eoIhkcw1wXea1ek+qCiPKbEgERAHNzcnf5SJ6O9ykZq4pSJQcPER20UoEcwBxCl2AyT4wkbT6jSLxaTRrQ+KoFzkmUg7CHI0DuUQsJlXS6uzmpZr2WQwO+VOpm1brXTgqKdgVPJkCgYAgPIHgCII3sjvm1Ey6Pobogn8t1tpMTRRpqFliz56SC0br9F22xWeDE4iJn4WyWNo80gP8EFHnc6xviDsgYjPY5EsmDd1QEFyPip5MoDWCUYaUpz/rMKLjSGvEp0q3GFGXW2Gazlx7/G2s7mdQRIlHRBWMLE0OU+vsyTgdqbK93QKBgBpsGtI2RVwmyjlVvjMwlMv71r7/7/c5iV5bfLgbnWgyQ7nlKXKZ4dcwblgWCl1AM1X7vqpKr9Vya4NA9W4ygk21x1FAOTc3xUpK7hmZN+NzOQpyFesjLpkdGF1wKduyPTjBjLUmthGax1KoA104DCOTa6hhhy3MZSaIaVQMES16";
const EC_KEY: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoiZr4z4clnY2Y1zbl3hVtOC3/bzeBaaZvUUkvsT+C46hRANCAASZKTy9DaTZNisC4TqyYQ7CQoA9jCQ5XOP2hPySpuJRvAxRh8+OWvkccTKted405/20BWlTf+m12sMQAyiBRbjK";
const EC_KEY_2: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgcWphy7FsfZVwIFlgxrkDvHZDPmkvFofiJgKSWxmT0+ahRANCAAQpbCfka7SUfQ0+/JrAd4HnM9U6wr/S42BMoT2qqQnFFpOauFmmDFGyV66zpUP5znDO0Vls6wSgyepUf2+AicVr";
const ED_KEY: &str = "MC4CAQAwBQYDK2VwBCIEIGDgVtgMZ+kbVKMaER5JOaEV2nSnW5n5O3x7a/itHeg6";

const CLIENT_ID: &str = "kubectl";
const NONCE: &str = "n-0S6_WzA2Mj";

fn der(b64: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

struct TestKey {
    alg: Algorithm,
    kid: Option<&'static str>,
    key: EncodingKey,
}

impl TestKey {
    fn rsa() -> TestKey {
        TestKey {
            alg: Algorithm::RS256,
            kid: Some("rsa-1"),
            key: EncodingKey::from_rsa_der(&der(RSA_KEY)),
        }
    }
    fn ec() -> TestKey {
        TestKey {
            alg: Algorithm::ES256,
            kid: Some("ec-1"),
            key: EncodingKey::from_ec_der(&der(EC_KEY)),
        }
    }
    fn ec2() -> TestKey {
        TestKey {
            alg: Algorithm::ES256,
            kid: Some("ec-2"),
            key: EncodingKey::from_ec_der(&der(EC_KEY_2)),
        }
    }
    fn ed() -> TestKey {
        TestKey {
            alg: Algorithm::EdDSA,
            kid: Some("ed-1"),
            key: EncodingKey::from_ed_der(&der(ED_KEY)),
        }
    }

    /// The public half, as the provider would publish it.
    fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = self.kid.map(str::to_string);
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        serde_json::to_value(jwk).unwrap()
    }

    fn sign(&self, claims: &Value) -> Secret {
        let mut header = Header::new(self.alg);
        header.kid = self.kid.map(str::to_string);
        Secret::new(jsonwebtoken::encode(&header, claims, &self.key).unwrap())
    }
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap()
}

/// A loopback provider: discovery (issuer without a trailing slash, as most providers spell
/// it) and a JWKS with the given keys.
fn provider_server(keys: &[&TestKey]) -> TestServer {
    let server = TestServer::start();
    server.answer(
        "/.well-known/openid-configuration",
        Answer::json(discovery_doc(&server.base)),
    );
    set_jwks(&server, keys);
    server
}

fn discovery_doc(base: &str) -> String {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/auth"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{base}/jwks"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": "client_secret_basic", // wrong type: ignored
        "some_future_field": {"x": 1},
    })
    .to_string()
}

fn set_jwks(server: &TestServer, keys: &[&TestKey]) {
    let keys: Vec<Value> = keys.iter().map(|k| k.jwk()).collect();
    server.answer("/jwks", Answer::json(json!({ "keys": keys }).to_string()));
}

fn claims(server: &TestServer) -> Value {
    json!({
        "iss": server.base,
        "sub": "user-42",
        "aud": CLIENT_ID,
        "exp": (now() + Duration::minutes(10)).timestamp(),
        "iat": now().timestamp(),
        "nonce": NONCE,
        "email": "ada@example.com",
        "email_verified": true,
        "name": "Ada",
        "preferred_username": "ada",
    })
}

struct Setup {
    server: TestServer,
    _dir: tempfile::TempDir,
    config: Config,
    http: Client,
}

fn setup(keys: &[&TestKey]) -> Setup {
    let server = provider_server(keys);
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&server.base, dir.path());
    // No retries: these tests are about what one answer means.
    let http = http::client(&config.http, std::time::Duration::ZERO).unwrap();
    Setup {
        server,
        _dir: dir,
        config,
        http,
    }
}

fn discover_at(s: &Setup, at: DateTime<Utc>) -> anyhow::Result<Provider> {
    Provider::discover(
        &s.http,
        &s.config.issuer,
        &s.config.issuer_as_given,
        &s.config.cache.dir,
        at,
    )
}

impl Setup {
    fn provider(&self) -> Provider {
        Provider::discover(
            &self.http,
            &self.config.issuer,
            &self.config.issuer_as_given,
            &self.config.cache.dir,
            now(),
        )
        .unwrap()
    }

    fn verify(&self, token: &Secret) -> anyhow::Result<IdTokenClaims> {
        self.provider()
            .verify_id_token(&self.http, token, CLIENT_ID, Some(NONCE), None, now())
    }

    /// Verifies a token that must fail; returns the message after checking the exit code
    /// and that the token is not in it.
    fn rejection(&self, token: &Secret) -> String {
        let err = self.verify(token).unwrap_err();
        let text = one_line(&err);
        assert_eq!(exit_code_of(&err), Exit::Provider, "{text}");
        assert!(
            text.starts_with("the ID token from http://127.0.0.1:"),
            "{text}"
        );
        for part in token.expose().split('.').filter(|p| p.len() > 8) {
            assert!(!text.contains(part), "the message leaks the token: {text}");
        }
        text
    }
}

#[test]
fn discovery_is_cached_on_disk_until_its_ttl() {
    let s = setup(&[&TestKey::ec()]);
    let path = "/.well-known/openid-configuration";
    let provider = s.provider();
    assert_eq!(s.server.hits(path), 1);
    assert_eq!(provider.metadata.issuer, s.server.base);
    assert_eq!(
        provider.metadata.token_endpoint.as_str(),
        format!("{}/token", s.server.base)
    );
    assert_eq!(
        provider.metadata.token_endpoint_auth_methods_supported,
        None
    );
    assert!(provider.metadata.supports_pkce_s256());

    // Another process, an hour later: served from disk, no request.
    let again = discover_at(&s, now() + Duration::hours(1)).unwrap();
    assert_eq!(s.server.hits(path), 1);
    assert_eq!(again.metadata, provider.metadata);

    // After the TTL: fetched again.
    discover_at(&s, now() + DISCOVERY_TTL + Duration::seconds(1)).unwrap();
    assert_eq!(s.server.hits(path), 2);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let paths = CacheFiles::of(&s.config.cache.dir, &s.config.issuer);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&paths.discovery), 0o600);
        assert_eq!(mode(paths.discovery.parent().unwrap()), 0o700);
        let dir = paths.discovery.parent().unwrap();
        assert_eq!(crate::fs::private_file::temp_files_left_in(dir), 0);
    }
}

#[test]
fn a_corrupt_cache_file_is_refetched() {
    let s = setup(&[&TestKey::ec()]);
    s.provider();
    std::fs::write(
        CacheFiles::of(&s.config.cache.dir, &s.config.issuer).discovery,
        b"{\"issuer\": trunc",
    )
    .unwrap();
    s.provider();
    assert_eq!(s.server.hits("/.well-known/openid-configuration"), 2);
    s.provider();
    assert_eq!(s.server.hits("/.well-known/openid-configuration"), 2);
}

#[test]
fn the_issuer_must_match_give_or_take_a_trailing_slash() {
    let s = setup(&[]);
    let with_slash = format!("{}/", s.server.base);
    s.server.answer(
        "/.well-known/openid-configuration",
        Answer::json(
            discovery_doc(&with_slash)
                .replace(&format!("\"{with_slash}/"), &format!("\"{with_slash}")),
        ),
    );
    assert_eq!(s.provider().metadata.issuer, with_slash);

    let s = setup(&[]);
    let other = discovery_doc(&s.server.base).replacen(
        &format!("\"issuer\":\"{}\"", s.server.base),
        "\"issuer\":\"https://evil.example\"",
        1,
    );
    s.server
        .answer("/.well-known/openid-configuration", Answer::json(other));
    let err = discover_at(&s, now()).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    let text = one_line(&err);
    assert!(
        text.contains("names the issuer https://evil.example; set --issuer-url to exactly that"),
        "{text}"
    );
    // A rejected document is not cached.
    assert!(
        !CacheFiles::of(&s.config.cache.dir, &s.config.issuer)
            .discovery
            .exists()
    );
}

#[test]
fn plain_http_endpoints_are_refused_off_loopback() {
    let s = setup(&[]);
    let doc = discovery_doc(&s.server.base).replace(
        &format!("{}/token", s.server.base),
        "http://idp.example/token",
    );
    s.server
        .answer("/.well-known/openid-configuration", Answer::json(doc));
    let text = one_line(&discover_at(&s, now()).unwrap_err());
    assert!(
        text.contains("has token_endpoint http://idp.example/token, which is not https"),
        "{text}"
    );
}

#[test]
fn the_well_known_url_keeps_the_issuer_path() {
    let url = |s: &str| well_known_url(&Url::parse(s).unwrap()).to_string();
    assert_eq!(
        url("https://idp.example"),
        "https://idp.example/.well-known/openid-configuration"
    );
    assert_eq!(
        url("https://idp.example/realms/k8s/"),
        "https://idp.example/realms/k8s/.well-known/openid-configuration"
    );
}

#[test]
fn valid_tokens_pass_with_rs256_es256_and_eddsa() {
    let (rsa, ec, ed) = (TestKey::rsa(), TestKey::ec(), TestKey::ed());
    let s = setup(&[&rsa, &ec, &ed]);
    for key in [&rsa, &ec, &ed] {
        let claims = s.verify(&key.sign(&claims(&s.server))).unwrap();
        assert_eq!(claims.sub, "user-42");
        assert_eq!(claims.exp, now() + Duration::minutes(10));
        assert_eq!(claims.email.as_deref(), Some("ada@example.com"));
        assert_eq!(claims.preferred_username.as_deref(), Some("ada"));
    }
    // One JWKS fetch served all three (the later providers read it from disk).
    assert_eq!(s.server.hits("/jwks"), 1);
}

#[test]
fn multiple_audiences_need_a_matching_azp_when_present() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let mut c = claims(&s.server);
    c["aud"] = json!([CLIENT_ID, "other"]);
    s.verify(&ec.sign(&c)).unwrap();
    c["azp"] = json!(CLIENT_ID);
    s.verify(&ec.sign(&c)).unwrap();
    c["azp"] = json!("other");
    let text = s.rejection(&ec.sign(&c));
    assert!(
        text.contains("issued to the client \"other\" (azp)"),
        "{text}"
    );
}

/// OpenID Connect Core 3.1.3.7: a present `azp` must be the client ID even with a single
/// audience (and the audience check alone would pass here).
#[test]
fn a_present_azp_must_be_the_client_id_even_with_one_audience() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let mut c = claims(&s.server);
    c["azp"] = json!(CLIENT_ID);
    s.verify(&ec.sign(&c)).unwrap();
    c["aud"] = json!([CLIENT_ID]);
    s.verify(&ec.sign(&c)).unwrap();

    for aud in [json!(CLIENT_ID), json!([CLIENT_ID])] {
        c["aud"] = aud;
        c["azp"] = json!("other");
        let text = s.rejection(&ec.sign(&c));
        assert!(
            text.contains(
                "issued to the client \"other\" (azp), not \"kubectl\"; check --client-id"
            ),
            "{text}"
        );
        c["azp"] = json!(["kubectl"]);
        let text = s.rejection(&ec.sign(&c));
        assert!(text.contains("(azp) is not a string"), "{text}");
    }
}

#[test]
fn bad_claims_are_rejected_with_a_reason_and_a_next_step() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let base = claims(&s.server);
    let with = |key: &str, value: Value| {
        let mut c = base.clone();
        c[key] = value;
        ec.sign(&c)
    };

    let text = s.rejection(&with("iss", json!("https://other.example")));
    assert!(
        text.contains("its issuer (iss) is \"https://other.example\""),
        "{text}"
    );

    let text = s.rejection(&with("aud", json!("someone-else")));
    assert!(
        text.contains("does not include the client ID \"kubectl\"; check --client-id"),
        "{text}"
    );

    let expired = now() - Duration::minutes(5);
    let text = s.rejection(&with("exp", json!(expired.timestamp())));
    assert!(
        text.contains("it expired at 2026-11-21T11:55:00Z"),
        "{text}"
    );
    assert!(text.contains("check this machine's clock"), "{text}");
    // Within the leeway: accepted, but the real expiry is reported.
    let just_expired = now() - Duration::seconds(30);
    let claims = s
        .verify(&with("exp", json!(just_expired.timestamp())))
        .unwrap();
    assert_eq!(claims.exp, just_expired);

    let text = s.rejection(&with("nonce", json!("nonce-of-another-login")));
    assert!(
        text.contains("nonce does not match")
            && !text.contains(NONCE)
            && !text.contains("nonce-of-another-login"),
        "{text}"
    );

    let mut no_nonce = base.clone();
    no_nonce.as_object_mut().unwrap().remove("nonce");
    let text = s.rejection(&ec.sign(&no_nonce));
    assert!(text.contains("carries no nonce"), "{text}");
    // A refreshed token need not carry one.
    s.provider()
        .verify_id_token(&s.http, &ec.sign(&no_nonce), CLIENT_ID, None, None, now())
        .unwrap();

    let text = s.rejection(&with("sub", json!("")));
    assert!(text.contains("no subject"), "{text}");
}

#[test]
fn unsigned_shared_secret_and_tampered_tokens_are_rejected() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let payload = enc(&claims(&s.server));

    let unsigned = Secret::new(format!("{}.{payload}.", enc(&json!({"alg": "none"}))));
    let text = s.rejection(&unsigned);
    assert!(text.contains("it is unsigned (alg none)"), "{text}");

    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(&s.server),
        &EncodingKey::from_secret(b"client-secret"),
    )
    .unwrap();
    let text = s.rejection(&Secret::new(hs));
    assert!(
        text.contains("signed with HS256, a shared-secret algorithm"),
        "{text}"
    );
    // Both were refused before any key was fetched.
    assert_eq!(s.server.hits("/jwks"), 0);

    let good = ec.sign(&claims(&s.server)).expose().to_string();
    let parts: Vec<&str> = good.split('.').collect();
    let mut forged = claims(&s.server);
    forged["sub"] = json!("admin");
    let tampered = Secret::new(format!("{}.{}.{}", parts[0], enc(&forged), parts[2]));
    let text = s.rejection(&tampered);
    assert!(text.contains("signature does not match"), "{text}");

    let text = s.rejection(&Secret::new("not-a-jwt"));
    assert!(text.contains("it is not a JWT"), "{text}");
}

#[test]
fn an_unknown_kid_refetches_the_jwks_exactly_once() {
    let (old, new) = (TestKey::ec(), TestKey::ec2());
    let s = setup(&[&old]);
    s.verify(&old.sign(&claims(&s.server))).unwrap();
    assert_eq!(s.server.hits("/jwks"), 1);

    // The provider rotates; the cached JWKS lacks the new key: one refetch, then success.
    set_jwks(&s.server, &[&old, &new]);
    s.verify(&new.sign(&claims(&s.server))).unwrap();
    assert_eq!(s.server.hits("/jwks"), 2);
    // The refetched set was cached: no request now.
    s.verify(&new.sign(&claims(&s.server))).unwrap();
    assert_eq!(s.server.hits("/jwks"), 2);

    // A key the provider does not have: one refetch, then a clear failure.
    let stranger = TestKey {
        kid: Some("nobody"),
        ..TestKey::ec2()
    };
    let text = s.rejection(&stranger.sign(&claims(&s.server)));
    assert_eq!(s.server.hits("/jwks"), 3);
    assert!(
        text.contains("the provider publishes no key \"nobody\""),
        "{text}"
    );
    assert!(
        text.contains("/jwks") && text.contains("run the command again"),
        "{text}"
    );
}

#[test]
fn a_jwks_that_cannot_be_fetched_is_a_clear_error() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    s.server.answer("/jwks", Answer::with(503, "down"));
    let err = s.verify(&ec.sign(&claims(&s.server))).unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    let text = one_line(&err);
    assert!(
        text.starts_with("cannot verify the ID token from http://127.0.0.1:"),
        "{text}"
    );
    assert!(
        text.contains("/jwks answered HTTP 503 Service Unavailable"),
        "{text}"
    );
}

#[test]
fn the_jwks_is_refetched_after_its_ttl() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    s.verify(&ec.sign(&claims(&s.server))).unwrap();
    let later = now() + JWKS_TTL + Duration::minutes(1);
    let mut c = claims(&s.server);
    c["exp"] = json!((later + Duration::minutes(10)).timestamp());
    discover_at(&s, later)
        .unwrap()
        .verify_id_token(&s.http, &ec.sign(&c), CLIENT_ID, Some(NONCE), None, later)
        .unwrap();
    assert_eq!(s.server.hits("/jwks"), 2);
}

#[test]
fn key_selection() {
    let (ec, ec2, rsa) = (TestKey::ec(), TestKey::ec2(), TestKey::rsa());
    let parse = |keys: Vec<Value>| parse_jwks(&json!({ "keys": keys })).unwrap();
    let mut unnamed = ec.jwk();
    unnamed.as_object_mut().unwrap().remove("kid");
    let mut for_encryption = ec2.jwk();
    for_encryption["use"] = json!("enc");

    // A single key without a kid serves tokens with or without one.
    let keys = parse(vec![unnamed.clone(), rsa.jwk()]);
    assert!(select_key(&keys, Algorithm::ES256, None).is_ok());
    assert!(select_key(&keys, Algorithm::ES256, Some("whatever")).is_ok());
    // The RSA key is not a candidate for ES256, nor an EC key for RS256 with another kid.
    assert!(select_key(&keys, Algorithm::RS256, Some("ec-1")).is_err());

    // Without a kid, two candidates are ambiguous.
    let keys = parse(vec![ec.jwk(), ec2.jwk()]);
    let err = select_key(&keys, Algorithm::ES256, None).unwrap_err();
    assert!(err.contains("names no key (no kid)"), "{err}");

    // Encryption keys and junk entries are skipped, not fatal.
    let keys = parse(vec![
        for_encryption,
        json!({"kty": "weird"}),
        json!(42),
        ec.jwk(),
    ]);
    assert_eq!(keys.len(), 3);
    assert!(
        select_key(&keys, Algorithm::ES256, Some("ec-2"))
            .unwrap_err()
            .contains("not a signing key")
    );
    assert!(select_key(&keys, Algorithm::ES256, Some("ec-1")).is_ok());
}

#[test]
fn an_id_token_without_a_valid_iat_is_rejected() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let mut no_iat = claims(&s.server);
    no_iat.as_object_mut().unwrap().remove("iat");
    let text = s.rejection(&ec.sign(&no_iat));
    assert!(text.contains("it has no valid issue time (iat)"), "{text}");

    let mut c = claims(&s.server);
    c["iat"] = json!("yesterday");
    let text = s.rejection(&ec.sign(&c));
    assert!(text.contains("no valid issue time (iat)"), "{text}");

    c["iat"] = json!((now() + Duration::minutes(5)).timestamp());
    let text = s.rejection(&ec.sign(&c));
    assert!(
        text.contains("issued at 2026-11-21T12:05:00Z (iat), in the future"),
        "{text}"
    );
    // Slightly ahead (within the leeway) is a skewed clock, not a forgery.
    c["iat"] = json!((now() + Duration::seconds(30)).timestamp());
    s.verify(&ec.sign(&c)).unwrap();
}

#[test]
fn a_refreshed_id_token_must_repeat_the_original_identity() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let base = claims(&s.server);
    let first = s.verify(&ec.sign(&base)).unwrap();
    assert_eq!(
        first.identity,
        crate::tokens::Identity {
            iss: s.server.base.clone(),
            sub: "user-42".into(),
            aud: vec![CLIENT_ID.into()],
        }
    );
    let refreshed = |claims: &Value| {
        s.provider().verify_id_token(
            &s.http,
            &ec.sign(claims),
            CLIENT_ID,
            None,
            Some(&first.identity),
            now(),
        )
    };
    let mut same = base.clone();
    same.as_object_mut().unwrap().remove("nonce");
    refreshed(&same).unwrap();
    // The same audience in another form is the same audience.
    same["aud"] = json!([CLIENT_ID]);
    refreshed(&same).unwrap();

    let mut other_sub = base.clone();
    other_sub["sub"] = json!("mallory");
    let text = one_line(&refreshed(&other_sub).unwrap_err());
    assert!(
        text.contains(
            "its subject (sub) \"mallory\" differs from the original login's \"user-42\""
        ),
        "{text}"
    );
    assert!(text.contains("kubecred logout"), "{text}");

    let mut other_aud = base.clone();
    other_aud["aud"] = json!([CLIENT_ID, "another-client"]);
    other_aud["azp"] = json!(CLIENT_ID);
    let text = one_line(&refreshed(&other_aud).unwrap_err());
    assert!(text.contains("its audience (aud)"), "{text}");

    let mut other_iss = base.clone();
    other_iss["iss"] = json!("https://elsewhere.example");
    let text = one_line(&refreshed(&other_iss).unwrap_err());
    assert!(text.contains("its issuer (iss)"), "{text}");

    // A login recorded under another issuer spelling (e.g. before an issuer change) is refused.
    let moved = crate::tokens::Identity {
        iss: "https://old.example".into(),
        ..first.identity.clone()
    };
    let err = s
        .provider()
        .verify_id_token(
            &s.http,
            &ec.sign(&base),
            CLIENT_ID,
            None,
            Some(&moved),
            now(),
        )
        .unwrap_err();
    assert!(one_line(&err).contains("differs from the original login's \"https://old.example\""));
}

#[test]
fn discovery_reads_the_rfc_9207_flag() {
    let s = setup(&[&TestKey::ec()]);
    assert!(
        !s.provider()
            .metadata
            .authorization_response_iss_parameter_supported
    );
    let mut doc: Value = serde_json::from_str(&discovery_doc(&s.server.base)).unwrap();
    doc["authorization_response_iss_parameter_supported"] = json!(true);
    let configured = s.config.issuer.clone();
    let meta = ProviderMetadata::validate(&doc, &configured, configured.as_str()).unwrap();
    assert!(meta.authorization_response_iss_parameter_supported);
    doc["authorization_response_iss_parameter_supported"] = json!("yes");
    let meta = ProviderMetadata::validate(&doc, &configured, configured.as_str()).unwrap();
    assert!(!meta.authorization_response_iss_parameter_supported);
}

/// `revocation_endpoint_auth_methods_supported` without `none` says a public client cannot
/// revoke (glewlwyd lists an empty one); with `none`, absent, or not a list, it says nothing.
#[test]
fn discovery_reads_whether_a_public_client_may_revoke() {
    let s = setup(&[&TestKey::ec()]);
    let mut doc: Value = serde_json::from_str(&discovery_doc(&s.server.base)).unwrap();
    let configured = s.config.issuer.clone();
    let mut refused = |listed: Value| {
        doc["revocation_endpoint_auth_methods_supported"] = listed;
        let meta = ProviderMetadata::validate(&doc, &configured, configured.as_str()).unwrap();
        meta.revocation_refuses_public_clients()
            .map(<[String]>::to_vec)
    };
    assert_eq!(refused(json!([])), Some(vec![]));
    assert_eq!(
        refused(json!(["client_secret_basic", "private_key_jwt"])),
        Some(vec!["client_secret_basic".into(), "private_key_jwt".into()])
    );
    assert_eq!(refused(json!(["client_secret_basic", "none"])), None);
    assert_eq!(refused(json!(null)), None);
    assert_eq!(refused(json!("client_secret_basic")), None);
}

/// Real JWKS documents hold keys kubecred cannot use beside the signing key: Ed448, encryption
/// keys (`RSA-OAEP-512`, `use: enc` without `alg`), post-quantum `AKP` (ML-DSA), an `x5c`-only
/// key. The set still parses, and the signing key is found, by kid and without one.
#[test]
fn the_signing_key_is_found_among_keys_kubecred_cannot_use() {
    let n = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";
    let jwks = serde_json::json!({"keys": [
        {"kty": "OKP", "crv": "Ed448", "x": "X9dEm1m0Yf0s54fsYWrUah2hNCSFpw4fig6nXYDpZ3jt8SR2m0bHBhvWeD3x5Q9s0foavq_oJWGA", "kid": "ed448"},
        {"kty": "RSA", "use": "enc", "alg": "RSA-OAEP-512", "n": n, "e": "AQAB", "kid": "oaep"},
        {"kty": "RSA", "use": "enc", "n": n, "e": "AQAB", "kid": "enc"},
        {"kty": "AKP", "alg": "ML-DSA-44", "pub": "AAAA", "kid": "pq"},
        {"kty": "RSA", "x5c": ["MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"], "kid": "x5c-only"},
        {"kty": "RSA", "use": "sig", "alg": "RS256", "n": n, "e": "AQAB", "kid": "sig"}
    ]});
    let keys = parse_jwks(&jwks).expect("a JWKS with keys kubecred cannot use still parses");
    let by_kid = select_key(&keys, jsonwebtoken::Algorithm::RS256, Some("sig")).unwrap();
    assert_eq!(by_kid.common.key_id.as_deref(), Some("sig"));
    let unnamed = select_key(&keys, jsonwebtoken::Algorithm::RS256, None).unwrap();
    assert_eq!(unnamed.common.key_id.as_deref(), Some("sig"));
    // A token naming the encryption key is refused with a reason, not verified with it.
    assert!(select_key(&keys, jsonwebtoken::Algorithm::RS256, Some("enc")).is_err());
}

/// Entra ID's `common` (and `organizations`, `consumers`) discovery names a template issuer: no
/// token carries it, and the API server trusts one tenant's issuer. Say which one to use.
#[test]
fn entra_s_multi_tenant_template_issuer_names_the_tenant_issuer_to_use() {
    let configured = url::Url::parse("https://login.microsoftonline.com/common/v2.0").unwrap();
    let document = json!({
        "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0",
        "authorization_endpoint": "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
        "token_endpoint": "https://login.microsoftonline.com/common/oauth2/v2.0/token",
        "jwks_uri": "https://login.microsoftonline.com/common/discovery/v2.0/keys",
    });
    let err = discovery::ProviderMetadata::validate(&document, &configured, configured.as_str())
        .unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Provider);
    let text = one_line(&err);
    assert!(
        text.contains("Entra ID's multi-tenant endpoint")
            && text.contains("https://login.microsoftonline.com/<tenant ID>/v2.0"),
        "{text}"
    );
}

/// An ID token from another program (a kubeconfig's auth-provider, kubelogin's cache): checked
/// as one of kubecred's own but for the nonce; an expired one is checked as of just before its
/// expiry and reported as expired, with the identity the next refresh must repeat.
#[test]
fn a_carried_id_token_is_verified_and_an_expired_one_keeps_its_identity() {
    let ec = TestKey::ec();
    let s = setup(&[&ec]);
    let base = claims(&s.server);
    let with = |changes: &[(&str, Value)]| {
        let mut claims = base.clone();
        for (name, value) in changes {
            claims[*name] = value.clone();
        }
        ec.sign(&claims)
    };
    let carried = |token: &Secret| {
        s.provider()
            .verify_carried_id_token(&s.http, token, CLIENT_ID, now())
    };

    match carried(&with(&[("nonce", json!("of-another-program"))])).unwrap() {
        CarriedIdToken::Valid(claims) => assert_eq!(claims.sub, "user-42"),
        other => panic!("{other:?}"),
    }
    let expired_at = now() - Duration::hours(2);
    let expired = with(&[
        ("iat", json!((expired_at - Duration::hours(1)).timestamp())),
        ("exp", json!(expired_at.timestamp())),
    ]);
    match carried(&expired).unwrap() {
        CarriedIdToken::Expired(claims) => {
            assert_eq!(claims.exp, expired_at);
            assert_eq!(claims.identity.sub, "user-42");
            assert_eq!(claims.identity.aud, [CLIENT_ID]);
        }
        other => panic!("{other:?}"),
    }

    // Expired or not, a token of another client, issuer or key is refused.
    for token in [
        with(&[
            ("exp", json!(expired_at.timestamp())),
            ("aud", json!("other")),
        ]),
        with(&[("iss", json!("https://elsewhere.example"))]),
        TestKey::ec2().sign(&base),
    ] {
        let err = carried(&token).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(
            one_line(&err).contains("failed verification"),
            "{}",
            one_line(&err)
        );
    }
}
