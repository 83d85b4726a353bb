//! AWS Signature Version 4, as botocore computes it: the presigned `GetCallerIdentity` URL that is
//! the EKS token (`SigV4QueryAuth`: the auth parameters in the query, `x-k8s-aws-id` signed as a
//! header), and the `Authorization` header of a signed STS request (`SigV4Auth`, for
//! `AssumeRole`). The canonical request, the string to sign and the derived key follow
//! <https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html>; what is
//! botocore's own — the order of the query's parameters, which `X-Amz-Security-Token` sits in
//! before the signature, and the host as it signs it — is kept, so that the URL is the AWS CLI's
//! but for the date and the signature. The integration tests recompute every signature with
//! botocore.

use super::credentials::Credentials;
use super::endpoint::Endpoint;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
const SERVICE: &str = "sts";

/// Percent-encodes as botocore's `percent_encode` (Python's `quote` with `-_.~` safe): every
/// byte but the unreserved ones.
pub(super) fn encode(text: &str) -> String {
    const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(text, UNRESERVED).to_string()
}

/// `a=b&c=d`, each name and value encoded, in the order given.
pub(super) fn query_of(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

fn hex_sha256(bytes: &[u8]) -> String {
    crate::digest::sha256_hex(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The day and the time stamp SigV4 writes: `20261128` and `20261128T153154Z`.
fn stamps(at: DateTime<Utc>) -> (String, String) {
    (
        at.format("%Y%m%d").to_string(),
        at.format("%Y%m%dT%H%M%SZ").to_string(),
    )
}

fn scope(day: &str, region: &str) -> String {
    format!("{day}/{region}/{SERVICE}/aws4_request")
}

/// The signature of a canonical request.
fn signature(
    credentials: &Credentials,
    region: &str,
    day: &str,
    amz_date: &str,
    canonical_request: &str,
) -> String {
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{}\n{}",
        scope(day, region),
        hex_sha256(canonical_request.as_bytes())
    );
    let secret = format!("AWS4{}", credentials.secret_access_key.expose());
    let key = hmac(secret.as_bytes(), day);
    let key = hmac(&key, region);
    let key = hmac(&key, SERVICE);
    let key = hmac(&key, "aws4_request");
    hex(&hmac(&key, &string_to_sign))
}

/// The canonical query: every pair encoded, sorted by name, then by value.
fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut encoded: Vec<(String, String)> = pairs
        .iter()
        .map(|(name, value)| (encode(name), encode(value)))
        .collect();
    encoded.sort();
    encoded
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// A header's value as the canonical request holds it: runs of spaces made one.
fn canonical_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The presigned `GET` of `GetCallerIdentity` at `endpoint`, with `x-k8s-aws-id: cluster`
/// signed, valid for 60 seconds from `at` (what STS is asked; EKS accepts it for 15 minutes).
pub(super) fn presigned_get_caller_identity(
    credentials: &Credentials,
    endpoint: &Endpoint,
    cluster: &str,
    at: DateTime<Utc>,
) -> String {
    let (day, amz_date) = stamps(at);
    let credential = format!(
        "{}/{}",
        credentials.access_key_id,
        scope(&day, &endpoint.signing_region)
    );
    let mut pairs: Vec<(&str, String)> = vec![
        ("Action", "GetCallerIdentity".into()),
        ("Version", "2011-06-15".into()),
        ("X-Amz-Algorithm", ALGORITHM.into()),
        ("X-Amz-Credential", credential),
        ("X-Amz-Date", amz_date.clone()),
        ("X-Amz-Expires", "60".into()),
        ("X-Amz-SignedHeaders", "host;x-k8s-aws-id".into()),
    ];
    if let Some(token) = &credentials.session_token {
        pairs.push(("X-Amz-Security-Token", token.expose().to_string()));
    }
    let owned: Vec<(String, String)> = pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    let canonical_request = format!(
        "GET\n{}\n{}\nhost:{}\nx-k8s-aws-id:{}\n\nhost;x-k8s-aws-id\n{}",
        endpoint.canonical_path,
        canonical_query(&owned),
        endpoint.host,
        canonical_value(cluster),
        hex_sha256(b"")
    );
    let signature = signature(
        credentials,
        &endpoint.signing_region,
        &day,
        &amz_date,
        &canonical_request,
    );
    let borrowed: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    format!(
        "{}?{}&X-Amz-Signature={signature}",
        endpoint.url,
        query_of(&borrowed)
    )
}

/// The headers of a signed form `POST` of `body` to `endpoint`: `X-Amz-Date`,
/// `X-Amz-Security-Token` with a session token, and `Authorization`, signing `content-type`,
/// `host` and those two, as botocore signs an STS request.
pub(super) fn signed_post_headers(
    credentials: &Credentials,
    endpoint: &Endpoint,
    content_type: &str,
    body: &str,
    at: DateTime<Utc>,
) -> Vec<(&'static str, String)> {
    let (day, amz_date) = stamps(at);
    let mut canonical_headers = vec![
        ("content-type", canonical_value(content_type)),
        ("host", endpoint.host.clone()),
        ("x-amz-date", amz_date.clone()),
    ];
    if let Some(token) = &credentials.session_token {
        canonical_headers.push(("x-amz-security-token", token.expose().to_string()));
    }
    let signed_headers = canonical_headers
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request = format!(
        "POST\n{}\n\n{}\n{signed_headers}\n{}",
        endpoint.canonical_path,
        canonical_headers
            .iter()
            .map(|(name, value)| format!("{name}:{value}\n"))
            .collect::<String>(),
        hex_sha256(body.as_bytes())
    );
    let signature = signature(
        credentials,
        &endpoint.signing_region,
        &day,
        &amz_date,
        &canonical_request,
    );
    let mut headers = vec![("X-Amz-Date", amz_date)];
    if let Some(token) = &credentials.session_token {
        headers.push(("X-Amz-Security-Token", token.expose().to_string()));
    }
    headers.push((
        "Authorization",
        format!(
            "{ALGORITHM} Credential={}/{}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id,
            scope(&day, &endpoint.signing_region)
        ),
    ));
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn credentials(token: Option<&str>) -> Credentials {
        Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("secret"),
            session_token: token.map(Secret::new),
            expires_at: None,
            source: "test".into(),
        }
    }

    fn at() -> DateTime<Utc> {
        "2026-11-28T15:32:38Z".parse().unwrap()
    }

    /// `aws eks get-token --cluster-name 'c 1/é'` with these credentials in eu-west-1 at this
    /// second (awscli 1.45.11, botocore 1.43.11): the same URL, byte for byte.
    #[test]
    fn the_presigned_url_is_the_aws_clis() {
        let endpoint = Endpoint::for_region(Some("eu-west-1"), false);
        let url = presigned_get_caller_identity(
            &credentials(Some("tok/en+=x")),
            &endpoint,
            "c 1/é",
            at(),
        );
        assert_eq!(
            url,
            "https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261128%2Feu-west-1%2Fsts%2Faws4_request&X-Amz-Date=20261128T153238Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Security-Token=tok%2Fen%2B%3Dx&X-Amz-Signature=76c9960da93d3b552ec2a92addcfa82e5c0c4eb740a3c84b030ba543e68e8ab2"
        );
    }

    #[test]
    fn without_a_region_the_global_endpoint_is_signed_for_us_east_1() {
        let endpoint = Endpoint::for_region(None, false);
        let url = presigned_get_caller_identity(
            &credentials(None),
            &endpoint,
            "c1",
            "2026-11-28T15:31:54Z".parse().unwrap(),
        );
        assert_eq!(
            url,
            "https://sts.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261128%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date=20261128T153154Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Signature=ba95068803f48549a226b02122b13bd087acbc6ff1e0c8e1ed1aa20e0ca4a4c6"
        );
    }

    #[test]
    fn encoding_leaves_only_the_unreserved_characters() {
        assert_eq!(encode("a-_.~b/+= é"), "a-_.~b%2F%2B%3D%20%C3%A9");
        assert_eq!(
            query_of(&[
                ("Action", "AssumeRole"),
                ("RoleArn", "arn:aws:iam::1:role/r")
            ]),
            "Action=AssumeRole&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr"
        );
    }
}
