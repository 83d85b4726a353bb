use super::*;
use crate::config::TlsSettings;

/// A CA and a `localhost` server certificate it signed (P-256, valid for 100 years), made once
/// with openssl for these tests.
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUfS8aEUf0hZSxz5yPVWCffE/r3tIwCgYIKoZIzj0EAwIw
ITEfMB0GA1UEAwwWa3ViZWNyZWQgdHJ1c3QgdGVzdCBDQTAgFw0yNjExMjMxNDEx
NDVaGA8yMTI2MTAzMDE0MTE0NVowITEfMB0GA1UEAwwWa3ViZWNyZWQgdHJ1c3Qg
dGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABHKzB3Slk1HUcrtfVOLe
r3a1/KJS36O8qOuvljPpKs+Vk3ase6OF50sCQ+l2sSC886JazlXwZJpk3XTPenrb
VdyjYzBhMB0GA1UdDgQWBBR/218+rIpyeqN8towK+CS2A8+seDAfBgNVHSMEGDAW
gBR/218+rIpyeqN8towK+CS2A8+seDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB
/wQEAwICBDAKBggqhkjOPQQDAgNIADBFAiEAknKtYbpPC4Z0kxVa4JLlCZvXqbFN
G1NydVqBte6SafkCIGNQq5jaiL+NF3ChbWEFBHoEHT+dxy2aB0GyKM4BmF6c
-----END CERTIFICATE-----
";
const LOCALHOST_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBsjCCAVegAwIBAgIUcUv8SGDxM8B2sh4oR+wCM9kXZ2IwCgYIKoZIzj0EAwIw
ITEfMB0GA1UEAwwWa3ViZWNyZWQgdHJ1c3QgdGVzdCBDQTAgFw0yNjExMjMxNDEx
NDVaGA8yMTI2MTAzMDE0MTE0NVowFDESMBAGA1UEAwwJbG9jYWxob3N0MFkwEwYH
KoZIzj0CAQYIKoZIzj0DAQcDQgAECsMK863ZWe2m2GSE4FlWYmr+mPXjUGtjEgd7
N05lrg291hb0K1rHdoao/lFqqoBw2eB8wExMa6Tu9TEsl1rsTKN4MHYwFAYDVR0R
BA0wC4IJbG9jYWxob3N0MAkGA1UdEwQCMAAwEwYDVR0lBAwwCgYIKwYBBQUHAwEw
HQYDVR0OBBYEFHwrrNwpV3w/Ejou7ytWBOb+0CQhMB8GA1UdIwQYMBaAFH/bXz6s
inJ6o3y2jAr4JLYDz6x4MAoGCCqGSM49BAMCA0kAMEYCIQDVEwjkw7SguYLNzosV
6voLGGPtz94iIlbzYWD0dFPxEAIhAOu8VdeaKygY4YDYrb6vftsOgnqGJ8Fe1/yN
EstCpboe
-----END CERTIFICATE-----
";

fn cert(pem: &str) -> CertificateDer<'static> {
    parse_ca_bundle(pem.trim_start().as_bytes(), 1)
        .unwrap()
        .remove(0)
}

fn verify(verifier: &Verifier, name: &str) -> Result<ServerCertVerified, rustls::Error> {
    verifier.verify_server_cert(
        &cert(LOCALHOST_PEM),
        &[],
        &ServerName::try_from(name.to_string()).unwrap(),
        &[],
        UnixTime::now(),
    )
}

fn verifier_trusting(given: Vec<CertificateDer<'static>>) -> Verifier {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Verifier {
        roots: Some(TieredRoots::new(given, provider.clone())),
        provider,
    }
}

/// Whether tier `index` was built (loaded its certificates), whatever it found.
fn loaded(verifier: &Verifier, index: usize) -> bool {
    verifier.roots.as_ref().unwrap().built[index]
        .get()
        .is_some()
}

#[test]
fn a_given_ca_is_enough_and_the_system_roots_stay_unread() {
    let verifier = verifier_trusting(vec![cert(CA_PEM)]);
    verify(&verifier, "localhost").unwrap();
    assert!(loaded(&verifier, 0));
    assert!(!loaded(&verifier, 1) && !loaded(&verifier, 2));
}

#[test]
fn only_an_unknown_issuer_moves_on_to_the_system_roots() {
    // Signed by a given CA but for another name: the system roots cannot help.
    let verifier = verifier_trusting(vec![cert(CA_PEM)]);
    let err = verify(&verifier, "idp.example").unwrap_err();
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
                | rustls::Error::InvalidCertificate(CertificateError::NotValidForName)
        ),
        "{err:?}"
    );
    assert!(!loaded(&verifier, 1) && !loaded(&verifier, 2));
}

#[test]
fn an_issuer_nobody_knows_is_looked_up_in_every_tier() {
    // No CA given: the first tier is empty, the system's bundle and store do not know our CA.
    let verifier = verifier_trusting(Vec::new());
    let err = verify(&verifier, "localhost").unwrap_err();
    assert_eq!(
        err,
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
    assert!(loaded(&verifier, 0) && loaded(&verifier, 1) && loaded(&verifier, 2));
}

#[test]
fn insecure_accepts_any_certificate_for_any_name() {
    let settings = TlsSettings {
        extra_ca_pems: Vec::new(),
        insecure_skip_verify: true,
    };
    client_config(&settings).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Verifier {
        roots: None,
        provider,
    };
    verify(&verifier, "idp.example").unwrap();
}
