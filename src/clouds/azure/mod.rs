//! Entra ID tokens for AKS the way Azure's own tools get them, for the sources that are not an
//! OAuth grant kubecred makes itself: the Azure CLI's session (`az account get-access-token`,
//! which satisfies Conditional Access and device compliance), the Azure Developer CLI's (`azd
//! auth token`), and a managed identity (the instance metadata endpoint, App Service's and Azure
//! Arc's `IDENTITY_ENDPOINT`, Cloud Shell's `MSI_ENDPOINT`). Beside them, two client-assertion
//! sources for the client-credentials grant kubecred already makes at Entra's token endpoint: a
//! service principal's certificate (`certificate.rs`: the assertion signed with its key, the
//! certificate named by its SHA-256 thumbprint) and an Azure Pipelines service connection's OIDC
//! token (`pipelines.rs`). Workload identity stays the client-credentials grant with
//! `--client-assertion-file` it is today.
//!
//! Every request is what azure-identity (PyPI, the reference the tests run beside this module)
//! sends for the same settings; where Azure's kubelogin (Go's azidentity) differs, the comment
//! says which one is followed and why. Every wait is bounded (a CLI by its timeout, a request by
//! kubecred's HTTP client), every failure is one line with the next step, and no token or
//! secret ever reaches an error.

pub mod certificate;
pub mod cli;
pub mod managed_identity;
pub mod pipelines;

use crate::error::{Exit, fail};

/// AKS's server application (the Entra application every AKS cluster with Entra integration
/// accepts tokens for), as a scope: the default `--scope` of the Azure grants.
pub const AKS_SCOPE: &str = "6dae42f8-4368-4678-94ff-3960e28e3630/.default";

/// Entra's suffix for "the application's permissions" scope.
const DEFAULT_SUFFIX: &str = "/.default";

/// The v1 resource of a v2 scope, as the CLIs and the managed identity endpoints take it: the
/// scope without `/.default` (azure-identity's `_scopes_to_resource`).
pub fn resource_of(scope: &str) -> &str {
    scope.strip_suffix(DEFAULT_SUFFIX).unwrap_or(scope)
}

/// A scope as azure-identity accepts one (`validate_scope`): letters, digits and `.-_:/`. The
/// CLIs get it as an argument; anything else is a mistake worth naming before a process runs.
pub fn check_scope(scope: &str) -> anyhow::Result<()> {
    let valid = |c: char| c.is_ascii_alphanumeric() || ".-_:/".contains(c);
    if scope.is_empty() || !scope.chars().all(valid) {
        return Err(fail(
            Exit::Input,
            format!(
                "--scope {:?} is not an Entra scope (letters, digits and . - _ : / only); give the server application's, e.g. {AKS_SCOPE}",
                crate::text::printable_brief(scope, 100)
            ),
        ));
    }
    Ok(())
}

/// A tenant as azure-identity accepts one (`validate_tenant_id`): letters, digits, `.` and `-`
/// (a GUID or a domain name).
pub fn check_tenant(tenant: &str) -> anyhow::Result<()> {
    let valid = |c: char| c.is_ascii_alphanumeric() || ".-".contains(c);
    if tenant.is_empty() || !tenant.chars().all(valid) {
        return Err(fail(
            Exit::Input,
            format!(
                "--tenant-id {:?} is not a tenant ID (a GUID or a domain name such as contoso.onmicrosoft.com)",
                crate::text::printable_brief(tenant, 100)
            ),
        ));
    }
    Ok(())
}

/// Who an Entra access token names, for `status` and `whoami`: a person's sign-in name and object
/// ID, or an application's (a service principal, a managed identity) object and application IDs.
/// Read from the token's claims without verifying it (the cluster does that); `None` for a
/// token that is not a JWT.
pub fn who(token: &str) -> Option<String> {
    let claims = crate::tokens::unverified_jwt_segment(token, 1)?;
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(|value| value.as_str())
            .filter(|value| !value.is_empty())
            .map(|value| crate::text::printable_brief(value, 200).into_owned())
    };
    let object = text("oid");
    let name = text("upn")
        .or_else(|| text("unique_name"))
        .or_else(|| text("preferred_username"));
    match (name, object, text("appid").or_else(|| text("azp"))) {
        (Some(name), Some(object), _) => Some(format!("{name} (object {object})")),
        (Some(name), None, _) => Some(name),
        (None, Some(object), Some(app)) => Some(format!("object {object} (application {app})")),
        (None, Some(object), None) => Some(format!("object {object}")),
        (None, None, Some(app)) => Some(format!("application {app}")),
        (None, None, None) => None,
    }
}

/// Refuses a token that is already expired (a clock far off, a CLI's stale answer): kubectl
/// would only be refused with it.
fn check_not_expired(
    expires_at: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
    from: &str,
) -> anyhow::Result<()> {
    if expires_at <= now {
        return Err(fail(
            Exit::Provider,
            format!(
                "{from} handed out a token that expired at {}; check this machine's clock and time zone",
                expires_at.format("%Y-%m-%d %H:%M:%S UTC")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn jwt(claims: &str) -> String {
        let encode = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
        format!("{}.{}.sig", encode(r#"{"alg":"RS256"}"#), encode(claims))
    }

    #[test]
    fn a_scope_becomes_the_resource_the_clis_and_endpoints_take() {
        assert_eq!(
            resource_of(AKS_SCOPE),
            "6dae42f8-4368-4678-94ff-3960e28e3630"
        );
        assert_eq!(
            resource_of("https://management.azure.com/"),
            "https://management.azure.com/"
        );
    }

    #[test]
    fn scopes_and_tenants_are_checked_as_azure_identity_checks_them() {
        assert!(check_scope(AKS_SCOPE).is_ok());
        assert!(check_scope("api://my-app_1/.default").is_ok());
        for bad in ["", "a b", "x;rm", "x\"y"] {
            let err = check_scope(bad).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), Exit::Input, "{bad}");
        }
        assert!(check_tenant("72f988bf-86f1-41af-91ab-2d7cd011db47").is_ok());
        assert!(check_tenant("contoso.onmicrosoft.com").is_ok());
        assert!(check_tenant("a/b").is_err());
        assert!(check_tenant("").is_err());
    }

    #[test]
    fn who_names_a_person_or_an_application() {
        assert_eq!(
            who(&jwt(
                r#"{"upn":"alice@contoso.com","oid":"o-1","appid":"a-1"}"#
            ))
            .as_deref(),
            Some("alice@contoso.com (object o-1)")
        );
        assert_eq!(
            who(&jwt(r#"{"oid":"o-2","appid":"a-2"}"#)).as_deref(),
            Some("object o-2 (application a-2)")
        );
        assert_eq!(who(&jwt(r#"{"sub":"s"}"#)), None);
        assert_eq!(who("not-a-jwt"), None);
    }
}
