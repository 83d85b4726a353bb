//! Tests of client assertions: both key types sign what the RFC 7523 checks expect, with the
//! RFC 7638 thumbprint as the default kid and a fresh jti each time.

use super::*;
use jsonwebtoken::{DecodingKey, Validation};

const RSA_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC+YePQf1ZdGy09
2i6NTifhc6tCCXKxJbUok2Ar5xEhGt0t9BoUbZJU7h466RY6Gz+XyJ6OeU1+n+63
3RQI0IpmfXxLABm5w+WSUzsGd4vVsH3OTfSoZi5OYcs9ZMQA8uxQv3pxYpFeFRb7
Se5wVy+5uYwcNhlBUXuwcSRXfymtRR4QQvrx3J61QKTqO9z1pH/FVFA8RP2myEcH
WGyLejWCVGDhsXWBJDRU4KxZ5ya92I6GJUqQ9UOBusbXuRrpby2HLi/hVtf1Ddm1
ha4/tkAkAfOXrIuV8XFhM38Gkqcfw/w87ee6BDKfE3dfgcVHuE5IUi8xgEBQXa8V
N/EiJG3DAgMBAAECggEACZozXN1HVFveDMwX4/2oqkjkvuhuFfxCZmEEjUJSzVon
BL3WoOgj5M+7y5ndCqI8M2IliScaHwRfDHwEmis2h9PVdIz1PzbfueEjzYAzF9yW
g9TPvbylokNxdk/CSQ/3ll0KBnUDwvyKU7NXaOgk2pe+tt+Np4s+E1ipjhY2WmxX
BHxRo/bs/yy4cijwcvAf87uC/cyD5ELTO3Ca9Rq2w0S71dG4tbcwGQp33KyCVqeP
a4B4cPVxOXAHoJC3iVnMP9qOxSHucWUUVyEp4li15KPovDRncW2ts9agR03P3hZg
drLY5mLEiRiyRCn8wxwrMy0dTpdFizjROMBdlyJtJQKBgQD/u7XHy/ctGUaX3X4K
e0sS1crKFpUGTPmljxXnMto+KnyZYbkGlJruqqQB6GnJUwRgz2jVwDOAWAKOhf/3
QCopow8fu2TGYCz6rnaYPpvtoutF2SALOOfvSdii+OgIJzjVnJ+ICOluINeh2R62
FtQpgRDgzK2l3K3rJ/greYumpwKBgQC+lLqS447chELhVyNOwClqxzqgkjp3ABGB
qEoUc5AjfTYQBkwcuBzceYSVIm03YNiWVueFZP+0nL85UZSTmuqC0IDoSYRIO9Af
33u+Gf6d1SwaMxhlvBfxHBeqYHMx0UxCngk+uF8eznNV04ETXZVRUnrZtFq0lzTm
ikP3awZ/hQKBgQDoVwxih4b8LFicpRlcQIQGisKBNF8UqF6v8f2+Xc82Z7doSwal
WeIhMFtteFCUHp59rjLa8JJZ6pv4DPpvEpa72W9mLwTxznNPFa6dx1Q3ZKtIfGnG
iF8AYiE2f9mffrL+MBwopaAe9Cu02eQzHy6GvsIs2whxBrvkSB4KsZUVRQKBgBK1
w0Ncd9AKZA5/YYX/s5E6EfVlpbu9E/rorK0pU0NIraARHjPLl3nFrFB/2r0PEvRf
f8dGzRvML7HO4olDMja5hY5IeWYmCR638AwPvUF9hiDkV0bVmnwfR+uAII8JfzUj
EsFHlH8PwZ7xbsCZ9WjQciMhY65LEfR4KogFx9OJAoGAGlTUJalA+25aVN5FnKal
54CUW1Fv0lQIVgFRp40uHIaRuOzYzdJMZbaUVq8/PLzgL8UVrVJmB8kYzXJ7G4WJ
gm/N+iSwEm9uZwwi8moYpgOKkJWv1CHF0OySDVOgn2ANizMJDl54nKGLblqDvHM5
8X7FwBZvsi0ns5T7A9vBP/4=
-----END PRIVATE KEY-----\n";
const RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvmHj0H9WXRstPdoujU4n
4XOrQglysSW1KJNgK+cRIRrdLfQaFG2SVO4eOukWOhs/l8iejnlNfp/ut90UCNCK
Zn18SwAZucPlklM7BneL1bB9zk30qGYuTmHLPWTEAPLsUL96cWKRXhUW+0nucFcv
ubmMHDYZQVF7sHEkV38prUUeEEL68dyetUCk6jvc9aR/xVRQPET9pshHB1hsi3o1
glRg4bF1gSQ0VOCsWecmvdiOhiVKkPVDgbrG17ka6W8thy4v4VbX9Q3ZtYWuP7ZA
JAHzl6yLlfFxYTN/BpKnH8P8PO3nugQynxN3X4HFR7hOSFIvMYBAUF2vFTfxIiRt
wwIDAQAB
-----END PUBLIC KEY-----\n";
const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkOrmnKafX+h12O3W
96eSgw2bnbymevinhGADvOC6JGKhRANCAASN9iiH9uuEgBHHgFd3zJYvsEyJFTyk
BBJyMz/7Bv2pREoVrBYmbS1Ey8zjmwXZ1wAbE5mKDEV/w9xcaqHSXkJM
-----END PRIVATE KEY-----\n";
const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEjfYoh/brhIARx4BXd8yWL7BMiRU8
pAQScjM/+wb9qURKFawWJm0tRMvM45sF2dcAGxOZigxFf8PcXGqh0l5CTA==
-----END PUBLIC KEY-----\n";

fn claims_of(token: &Secret, public: DecodingKey, alg: Algorithm) -> serde_json::Value {
    let mut validation = Validation::new(alg);
    validation.set_audience(&["https://idp.example/token"]);
    validation.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
    jsonwebtoken::decode::<serde_json::Value>(token.expose(), &public, &validation)
        .expect("the assertion verifies with the public key")
        .claims
}

#[test]
fn rsa_and_ec_keys_sign_assertions_for_the_token_endpoint() {
    let now = chrono::Utc::now();
    let cases = [
        (
            RSA_KEY,
            DecodingKey::from_rsa_pem(RSA_PUBLIC.as_bytes()).unwrap(),
            Algorithm::RS256,
        ),
        (
            EC_KEY,
            DecodingKey::from_ec_pem(EC_PUBLIC.as_bytes()).unwrap(),
            Algorithm::ES256,
        ),
    ];
    for (pem, public, alg) in cases {
        let key = SigningKey::from_pem(pem.as_bytes(), None, "test").unwrap();
        assert_eq!(key.algorithm, alg);
        let first = key
            .assertion("ci-client", "https://idp.example/token", now)
            .unwrap();
        let second = key
            .assertion("ci-client", "https://idp.example/token", now)
            .unwrap();
        let (a, b) = (
            claims_of(&first, public.clone(), alg),
            claims_of(&second, public, alg),
        );
        assert_eq!(a["iss"], "ci-client");
        assert_eq!(a["sub"], "ci-client");
        assert_eq!(a["aud"], "https://idp.example/token");
        assert_eq!(
            a["exp"].as_i64().unwrap() - a["iat"].as_i64().unwrap(),
            ASSERTION_LIFETIME_SECS
        );
        assert_ne!(a["jti"], b["jti"], "every assertion has its own jti");
        let header = jsonwebtoken::decode_header(first.expose()).unwrap();
        assert_eq!(header.kid.as_deref(), Some(key.key_id.as_str()));
        // base64url SHA-256: 43 characters.
        assert_eq!(key.key_id.len(), 43, "{}", key.key_id);
    }
}

/// RFC 7638 thumbprint of RSA_KEY's public key, computed outside kubecred (openssl's modulus,
/// `{"e":"AQAB","kty":"RSA","n":…}`, SHA-256, base64url).
const RSA_THUMBPRINT: &str = "AOFgk6n2hA_4DYA4nPctmLlYW9hEglY8cioNhauQMf0";

#[test]
fn the_default_kid_is_the_rfc7638_thumbprint_and_can_be_overridden() {
    let key = SigningKey::from_pem(RSA_KEY.as_bytes(), None, "test").unwrap();
    assert_eq!(key.key_id, RSA_THUMBPRINT);
    let named = SigningKey::from_pem(RSA_KEY.as_bytes(), Some("key-1"), "test").unwrap();
    assert_eq!(named.key_id, "key-1");
}

#[test]
fn a_wrong_file_says_what_to_give_without_echoing_it() {
    let err = SigningKey::from_pem(b"hunter2-not-a-key", None, "/etc/key.pem")
        .err()
        .unwrap();
    let line = format!("{err:#}");
    assert!(
        line.contains("/etc/key.pem is not a PEM private key"),
        "{line}"
    );
    assert!(!line.contains("hunter2"), "{line}");
}
