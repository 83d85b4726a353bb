//! Certificate files in every form Azure's tools take (testdata/README.md says how they were
//! made), the assertion's header and claims, and the refusals.

use super::*;
use crate::error::{exit_code_of, one_line};

/// `openssl x509 -fingerprint -sha256` of testdata/cert_only.pem, base64url.
const X5T_S256: &str = "k2OeNl14iBXCffTsMNVxrJKNpCc2R3AnEpCVU1-o2Fw";
const SHA1_HEX: &str = "A155581105382963583075CF86178E2D962119AC";

fn testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/clouds/azure/testdata")
        .join(name)
}

fn load(name: &str, password: Option<&str>) -> anyhow::Result<ClientCertificate> {
    ClientCertificate::from_file(&testdata(name), password.map(Secret::new).as_ref())
}

fn segment(token: &str, index: usize) -> serde_json::Value {
    crate::tokens::unverified_jwt_segment(token, index).unwrap()
}

#[test]
fn every_form_of_the_file_gives_the_same_certificate() {
    for (name, password) in [
        ("cert.pem", None),
        ("cert_pkcs1.pem", None),
        ("cert_encrypted.pem", Some("pw")),
        ("cert_aes.pfx", Some("pw")),
        ("cert_3des.pfx", Some("pw")),
        ("cert_rc2.pfx", Some("pw")),
        ("cert_nopass.pfx", None),
    ] {
        let cert = load(name, password).unwrap_or_else(|err| panic!("{name}: {err:#}"));
        assert_eq!(cert.thumbprint_sha256(), X5T_S256, "{name}");
        assert_eq!(cert.thumbprint_hex(), SHA1_HEX, "{name}");
    }
}

#[test]
fn the_assertion_names_the_certificate_and_is_signed_by_its_key() {
    let cert = load("cert.pem", None).unwrap();
    let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let endpoint = "https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token";
    let assertion = cert.assertion("client-1", endpoint, now).unwrap();
    let header = segment(assertion.expose(), 0);
    assert_eq!(header["alg"], "PS256");
    assert_eq!(header["typ"], "JWT");
    assert_eq!(header["x5t#S256"], X5T_S256);
    let x5c = header["x5c"].as_array().unwrap();
    assert_eq!(x5c.len(), 1);
    let pem_der = pem::parse(std::fs::read(testdata("cert_only.pem")).unwrap())
        .unwrap()
        .into_contents();
    assert_eq!(
        x5c[0].as_str().unwrap(),
        base64::engine::general_purpose::STANDARD.encode(pem_der)
    );
    let claims = segment(assertion.expose(), 1);
    assert_eq!(claims["aud"], endpoint);
    assert_eq!(claims["iss"], "client-1");
    assert_eq!(claims["sub"], "client-1");
    assert_eq!(claims["iat"], 1_800_000_000);
    assert_eq!(claims["nbf"], 1_800_000_000);
    assert_eq!(claims["exp"], 1_800_000_120);
    assert!(claims["jti"].as_str().unwrap().len() >= 16);
    // A new jti each time: Entra refuses a replayed assertion.
    let again = cert.assertion("client-1", endpoint, now).unwrap();
    assert_ne!(segment(again.expose(), 1)["jti"], claims["jti"]);
    // The signature verifies with the certificate's public key.
    let public = public_key_of(
        &pem::parse(std::fs::read(testdata("cert_only.pem")).unwrap())
            .unwrap()
            .into_contents(),
    )
    .unwrap();
    use rsa::traits::PublicKeyParts;
    let key = jsonwebtoken::DecodingKey::from_rsa_raw_components(
        &public.n().to_bytes_be(),
        &public.e().to_bytes_be(),
    );
    let mut validation = jsonwebtoken::Validation::new(Algorithm::PS256);
    validation.set_audience(&[endpoint]);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    jsonwebtoken::decode::<serde_json::Value>(assertion.expose(), &key, &validation).unwrap();
}

#[test]
fn a_file_that_cannot_serve_is_refused_with_its_reason() {
    let shown = |name: &str| testdata(name).display().to_string();
    for (name, password, reason) in [
        (
            "cert_aes.pfx",
            Some("wrong"),
            "is a PKCS#12 file its password does not open; check the password (AZURE_CLIENT_CERTIFICATE_PASSWORD)",
        ),
        (
            "cert_encrypted.pem",
            None,
            "has an encrypted private key and no password was given; set AZURE_CLIENT_CERTIFICATE_PASSWORD",
        ),
        (
            "cert_encrypted.pem",
            Some("wrong"),
            "has an encrypted private key that its password does not open (or that is not RSA); check the password",
        ),
        (
            "cert_only.pem",
            None,
            "holds no private key; put the certificate's PRIVATE KEY in the same file",
        ),
        (
            "mismatch.pem",
            None,
            "holds no certificate of its private key; put the key's certificate beside it",
        ),
        (
            "ec.pem",
            None,
            "has a private key that is not RSA; Entra's certificate credentials are RSA keys",
        ),
        (
            "README.md",
            None,
            "is neither PEM nor a PKCS#12 file kubecred can read (PBES2/AES or 3DES/RC2, with a MAC)",
        ),
    ] {
        let err = load(name, password).unwrap_err();
        assert_eq!(
            one_line(&err),
            format!("the client certificate {} {reason}", shown(name)),
            "{name}"
        );
        assert_eq!(exit_code_of(&err), Exit::Input);
    }
    let err = load("missing.pem", None).unwrap_err();
    assert!(one_line(&err).starts_with(&format!(
        "cannot read the client certificate {}: ",
        shown("missing.pem")
    )));
    // The password never shows, even in a Debug of the loaded certificate.
    let cert = load("cert_aes.pfx", Some("pw")).unwrap();
    assert!(!format!("{cert:?}").contains("BEGIN"));
}
