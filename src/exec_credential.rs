//! The Kubernetes side of the contract: `KUBERNETES_EXEC_INFO` in, one `ExecCredential` out.
//!
//! This is the only module that knows the `client.authentication.k8s.io` JSON. Parsing is lenient
//! (unknown fields ignored, because the Python client sends the raw kubeconfig cluster map), but
//! the apiVersion must be one we can echo back: client-go rejects any other.
//! See https://kubernetes.io/docs/reference/access-authn-authz/authentication/#input-and-output-formats

use crate::error::{Exit, fail};
use crate::secret::Secret;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

pub const V1: &str = "client.authentication.k8s.io/v1";
pub const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

/// What the client told us about this run.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecInfo {
    /// Echoed back in the output; v1beta1 when the variable is absent.
    pub api_version: &'static str,
    /// True only when the client handed us its stdin.
    pub interactive: bool,
    /// `spec.cluster`, present with `provideClusterInfo: true`.
    pub cluster: Option<ClusterInfo>,
    /// Whether a client set the variable (client-go 1.20 and later always do): only then is a
    /// quick second run from the same parent taken for client-go's re-run after a 401.
    pub from_client: bool,
}

/// The parts of `spec.cluster` kubecred uses. Every field is optional: clients differ.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ClusterInfo {
    #[serde(default)]
    pub server: Option<String>,
    /// The verbatim `extension` of the cluster's `client.authentication.k8s.io/exec` extension;
    /// absent and `null` both arrive as `None`.
    #[serde(default)]
    pub config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawExecInfo {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    spec: RawSpec,
}

#[derive(Deserialize, Default)]
struct RawSpec {
    #[serde(default)]
    interactive: bool,
    #[serde(default)]
    cluster: Option<ClusterInfo>,
}

impl ExecInfo {
    /// The session when the client set no `KUBERNETES_EXEC_INFO` (client-go before 1.20, the
    /// JavaScript client): v1beta1 output, and never touch stdin.
    pub fn absent() -> Self {
        ExecInfo {
            api_version: V1BETA1,
            interactive: false,
            cluster: None,
            from_client: false,
        }
    }

    /// Parses the variable's value; `None` (unset) and an empty string mean [`ExecInfo::absent`].
    pub fn parse(raw: Option<&str>) -> anyhow::Result<Self> {
        let raw = match raw.map(str::trim) {
            None | Some("") => return Ok(Self::absent()),
            Some(raw) => raw,
        };
        let parsed: RawExecInfo = serde_json::from_str(raw).map_err(|err| {
            fail(
                Exit::Input,
                format!(
                    "KUBERNETES_EXEC_INFO is not valid ExecCredential JSON ({err}); \
                     it is set by kubectl/client-go: unset it when running kubecred by hand"
                ),
            )
        })?;
        let api_version = match parsed.api_version.as_deref() {
            Some(V1) => V1,
            Some(V1BETA1) => V1BETA1,
            Some(other) => {
                return Err(fail(
                    Exit::Input,
                    format!(
                        "KUBERNETES_EXEC_INFO has apiVersion {other:?}, which kubecred does not speak; \
                         set the kubeconfig exec apiVersion to {V1} or {V1BETA1}"
                    ),
                ));
            }
            None => {
                return Err(fail(
                    Exit::Input,
                    format!(
                        "KUBERNETES_EXEC_INFO has no apiVersion; set the kubeconfig exec apiVersion to {V1} or {V1BETA1}"
                    ),
                ));
            }
        };
        Ok(ExecInfo {
            api_version,
            interactive: parsed.spec.interactive,
            cluster: parsed.spec.cluster,
            from_client: true,
        })
    }

    /// The cluster extension object, if the kubeconfig has one (a non-object is ignored).
    pub fn cluster_config(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.cluster.as_ref()?.config.as_ref()?.as_object()
    }
}

#[derive(Serialize)]
struct ExecCredentialOut<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'static str,
    status: StatusOut<'a>,
}

#[derive(Serialize)]
struct StatusOut<'a> {
    token: &'a str,
    #[serde(rename = "expirationTimestamp")]
    expiration_timestamp: String,
}

/// The one document kubecred prints: the token and its expiry, RFC 3339 in UTC with `Z`, whole
/// seconds (client-go parses it as metav1.Time). A newline ends it.
pub fn render(api_version: &str, token: &Secret, expiry: DateTime<Utc>) -> String {
    let doc = ExecCredentialOut {
        api_version,
        kind: "ExecCredential",
        status: StatusOut {
            token: token.expose(),
            // Truncating the fraction keeps the printed expiry at or before the real one.
            expiration_timestamp: expiry.to_rfc3339_opts(SecondsFormat::Secs, true),
        },
    };
    let mut out = serde_json::to_string(&doc).expect("ExecCredential serializes");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn absent_or_empty_means_v1beta1_non_interactive() {
        assert_eq!(ExecInfo::parse(None).unwrap(), ExecInfo::absent());
        assert_eq!(ExecInfo::parse(Some("  ")).unwrap(), ExecInfo::absent());
    }

    #[test]
    fn v1_and_v1beta1_are_echoed() {
        let v1 = ExecInfo::parse(Some(
            r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":true}}"#,
        ))
        .unwrap();
        assert_eq!(v1.api_version, V1);
        assert!(v1.interactive);
        let beta = ExecInfo::parse(Some(
            r#"{"apiVersion":"client.authentication.k8s.io/v1beta1","spec":{}}"#,
        ))
        .unwrap();
        assert_eq!(beta.api_version, V1BETA1);
        assert!(!beta.interactive);
    }

    #[test]
    fn cluster_config_absent_null_or_object() {
        let with = |config: &str| {
            ExecInfo::parse(Some(&format!(
                r#"{{"apiVersion":"{V1}","spec":{{"interactive":false,"cluster":{{"server":"https://k:6443","certificate-authority":"/x.pem","unknown":1{config}}}}}}}"#
            )))
            .unwrap()
        };
        assert!(with("").cluster_config().is_none());
        assert!(with(r#","config":null"#).cluster_config().is_none());
        let info = with(r#","config":{"issuerURL":"https://idp","clientID":"k"}"#);
        assert_eq!(info.cluster_config().unwrap()["clientID"], "k");
        assert_eq!(
            info.cluster.unwrap().server.as_deref(),
            Some("https://k:6443")
        );
    }

    #[test]
    fn malformed_or_unknown_version_is_an_input_error() {
        for raw in [
            "{not json",
            r#"{"apiVersion":"client.authentication.k8s.io/v2"}"#,
            r#"{"spec":{}}"#,
        ] {
            let err = ExecInfo::parse(Some(raw)).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), Exit::Input, "{raw}");
            assert!(!format!("{err:#}").contains('\n'));
        }
    }

    #[test]
    fn render_is_one_line_with_utc_z() {
        let expiry = Utc.with_ymd_and_hms(2026, 11, 21, 16, 4, 5).unwrap()
            + chrono::Duration::milliseconds(900);
        let out = render(V1, &Secret::new("tok"), expiry);
        assert_eq!(
            out,
            "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok\",\"expirationTimestamp\":\"2026-11-21T16:04:05Z\"}}\n"
        );
    }
}
