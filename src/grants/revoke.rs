//! Token revocation (RFC 7009), for `kubecred logout`: the refresh token is sent to the
//! provider's `revocation_endpoint`, so that a copy of it (a backup, a stolen disk) is worthless.
//!
//! Hand-written rather than `oauth2`'s `revoke_token`: that refuses any `http` endpoint, and
//! kubecred allows plain http for an issuer on loopback (a local or test provider) exactly as for
//! every other endpoint, which discovery has already vetted. The request is one form POST with the
//! same client authentication as the token requests.

use super::ProviderClient;
use crate::config::ClientAuth;
use crate::error::{Exit, fail};
use crate::http::Replay;
use crate::oidc::ProviderMetadata;
use crate::secret::Secret;
use oauth2::SyncHttpClient;

/// What became of the refresh token at the provider.
#[derive(Debug)]
pub enum Revocation {
    /// The provider answered 200: the token is dead (RFC 7009 answers 200 for an unknown token too).
    Revoked,
    /// Discovery names no `revocation_endpoint`.
    NotSupported,
    /// The provider refused this public client, as its discovery announced: the revocation
    /// endpoint's methods, as discovery lists them (`none` not among them).
    PublicClientRefused { methods: Vec<String> },
}

impl ProviderClient<'_> {
    /// Revokes `refresh_token`. An error (the provider refused, or could not be reached) is for
    /// the caller to report as a warning: the local entry goes either way.
    pub fn revoke_refresh_token(&self, refresh_token: &Secret) -> anyhow::Result<Revocation> {
        let Some(endpoint) = &self.provider.metadata.revocation_endpoint else {
            return Ok(Revocation::NotSupported);
        };
        let form = vec![
            ("token", refresh_token.expose().to_string()),
            ("token_type_hint", "refresh_token".to_string()),
        ];
        let request = self.authenticated_form(endpoint, form)?;
        let shown = crate::text::display_url(endpoint);
        crate::debug!(1, "revoking the refresh token at {shown}");
        // Revoking twice is harmless: a lost answer may be resent.
        let call = self.oauth_call("the revocation request", Replay::Safe);
        let response = call
            .call(request)
            .map_err(|failure| fail(Exit::Provider, format!("revoking at {shown}: {failure}")))?;
        let answer = crate::http::Answer {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.body().clone(),
            attempts: call.last_answer().map_or(1, |answer| answer.attempts),
        };
        // Sent even where discovery lists no `none` for the endpoint: Keycloak lists only
        // confidential clients' methods there, yet revokes a public client's token, and a
        // revoked token is worth one request at logout. Where the provider then refuses, as its
        // discovery announced (glewlwyd: 401), that is said as what it is, not as a setting to
        // check.
        if let Some(methods) =
            announced_refusal(&answer, &self.config.client.auth, &self.provider.metadata)
        {
            crate::debug!(
                1,
                "{shown} answered {}: it takes no public client",
                answer.status
            );
            return Ok(Revocation::PublicClientRefused { methods });
        }
        crate::http::check_status(&answer, &format!("the revocation endpoint {shown}"))?;
        Ok(Revocation::Revoked)
    }
}

/// The revocation endpoint's methods as discovery lists them, when `answer` is the refusal of a
/// public client that discovery announced: no client authentication was sent, discovery lists
/// no `none`, and the provider refused the client (401 or 403, or 400 `invalid_client`, as RFC
/// 6749 §5.2 lets it answer).
fn announced_refusal(
    answer: &crate::http::Answer,
    auth: &ClientAuth,
    metadata: &ProviderMetadata,
) -> Option<Vec<String>> {
    let refused = match answer.status.as_u16() {
        401 | 403 => true,
        400 => {
            let body = serde_json::from_slice::<serde_json::Value>(&answer.body).ok();
            body.is_some_and(|body| body["error"] == "invalid_client")
        }
        _ => false,
    };
    if !refused || !matches!(auth, ClientAuth::None) {
        return None;
    }
    metadata
        .revocation_refuses_public_clients()
        .map(<[String]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;
    use reqwest::header::HeaderMap;

    fn answer(status: u16, body: &str) -> crate::http::Answer {
        crate::http::Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
            attempts: 1,
        }
    }

    fn metadata(revocation_methods: serde_json::Value) -> ProviderMetadata {
        let issuer = url::Url::parse("https://idp.example").unwrap();
        let document = serde_json::json!({
            "issuer": "https://idp.example",
            "token_endpoint": "https://idp.example/token",
            "jwks_uri": "https://idp.example/jwks",
            "revocation_endpoint": "https://idp.example/revoke",
            "revocation_endpoint_auth_methods_supported": revocation_methods,
        });
        ProviderMetadata::validate(&document, &issuer, "https://idp.example").unwrap()
    }

    #[test]
    fn a_public_clients_refusal_is_the_one_discovery_announced_only_when_it_is() {
        let confidential_only = metadata(serde_json::json!(["client_secret_basic"]));
        let public = ClientAuth::None;
        let methods = Some(vec!["client_secret_basic".to_string()]);
        // glewlwyd's bare 401, a 403, a 400 invalid_client.
        assert_eq!(
            announced_refusal(&answer(401, ""), &public, &confidential_only),
            methods
        );
        assert_eq!(
            announced_refusal(&answer(403, ""), &public, &confidential_only),
            methods
        );
        let invalid_client = answer(400, r#"{"error":"invalid_client"}"#);
        assert_eq!(
            announced_refusal(&invalid_client, &public, &confidential_only),
            methods
        );
        // Not that refusal: another 400, a missing endpoint, an outage.
        let unsupported = answer(400, r#"{"error":"unsupported_token_type"}"#);
        for other in [unsupported, answer(404, ""), answer(503, "")] {
            assert_eq!(announced_refusal(&other, &public, &confidential_only), None);
        }
        // Not announced: discovery lists `none`, or nothing.
        let takes_public = metadata(serde_json::json!(["none", "client_secret_basic"]));
        assert_eq!(
            announced_refusal(&answer(401, ""), &public, &takes_public),
            None
        );
        let silent = metadata(serde_json::Value::Null);
        assert_eq!(announced_refusal(&answer(401, ""), &public, &silent), None);
        // A confidential client refused is a setting to check.
        let secret = ClientAuth::Secret {
            secret: Secret::new("s"),
            method: crate::config::ClientAuthMethod::Auto,
        };
        assert_eq!(
            announced_refusal(&answer(401, ""), &secret, &confidential_only),
            None
        );
    }
}
