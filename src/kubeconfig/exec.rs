//! A kubeconfig user's `exec` stanza, typed: client-go's `ExecConfig` as a kubeconfig holds it
//! (`apiVersion`, `command`, `args`, `env`, `interactiveMode`, `provideClusterInfo`,
//! `installHint`). One type for every stanza kubecred reads (`whoami`: how kubectl runs kubecred
//! in a context) and writes (the one `setup` prints, the ones `setup --write-kubeconfig` and
//! `convert-kubeconfig` put into kubeconfigs): what is printed and what is written are the same
//! value, serialized by serde in kubectl's field order.

use crate::secret::Secret;
use serde::{Deserialize, Deserializer, Serialize};

/// An `exec` stanza. Absent fields are left out when written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecStanza {
    /// `client.authentication.k8s.io/v1` or `/v1beta1` (`exec_credential::V1`, `V1BETA1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub command: String,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub args: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<EnvVar>,
    /// Required by client-go for v1 stanzas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive_mode: Option<InteractiveMode>,
    /// Whether client-go passes the cluster (its server, CA, extension) in KUBERNETES_EXEC_INFO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provide_cluster_info: Option<bool>,
    /// What kubectl prints when `command` is not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<String>,
}

/// One variable the plugin gets on top of kubectl's environment. Its value may be a secret
/// (a client secret, a password): `Debug` does not show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: Secret,
}

impl EnvVar {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: Secret::new(value),
        }
    }
}

/// When kubectl hands the plugin its terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InteractiveMode {
    /// Never: the plugin reads nothing from a person.
    Never,
    /// When kubectl has a terminal (the v1beta1 default).
    IfAvailable,
    /// kubectl refuses to run the plugin without a terminal.
    Always,
}

impl InteractiveMode {
    /// The value as a kubeconfig writes it (`--exec-interactive-mode` of kubectl too).
    pub fn as_str(self) -> &'static str {
        match self {
            InteractiveMode::Never => "Never",
            InteractiveMode::IfAvailable => "IfAvailable",
            InteractiveMode::Always => "Always",
        }
    }
}

impl ExecStanza {
    /// The stanza as a YAML value, to put into a kubeconfig.
    pub fn to_value(&self) -> serde_norway::Value {
        serde_norway::to_value(self).expect("a stanza of strings is always a YAML value")
    }

    /// A user entry's body (`user:`) holding this stanza alone.
    pub fn as_user_body(&self) -> serde_norway::Value {
        let mut body = serde_norway::Mapping::new();
        body.insert("exec".into(), self.to_value());
        serde_norway::Value::Mapping(body)
    }
}

/// kubectl reads `args: null` and `env: null` as none.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stanza_is_written_in_kubectls_field_order_and_read_back_the_same() {
        let stanza = ExecStanza {
            api_version: Some("client.authentication.k8s.io/v1".into()),
            command: "kubecred".into(),
            args: vec!["get-token".into(), "--client-id=k".into()],
            env: vec![EnvVar::new("KUBECRED_CLIENT_SECRET", "s3cret")],
            interactive_mode: Some(InteractiveMode::IfAvailable),
            provide_cluster_info: Some(false),
            install_hint: Some("install kubecred".into()),
        };
        let yaml = serde_norway::to_string(&stanza).unwrap();
        assert_eq!(
            yaml,
            "apiVersion: client.authentication.k8s.io/v1\ncommand: kubecred\nargs:\n- get-token\n- --client-id=k\nenv:\n- name: KUBECRED_CLIENT_SECRET\n  value: s3cret\ninteractiveMode: IfAvailable\nprovideClusterInfo: false\ninstallHint: install kubecred\n"
        );
        assert_eq!(serde_norway::from_str::<ExecStanza>(&yaml).unwrap(), stanza);
        assert!(!format!("{stanza:?}").contains("s3cret"));
    }

    #[test]
    fn a_minimal_stanza_reads_with_its_absent_and_null_fields_empty() {
        let stanza: ExecStanza =
            serde_norway::from_str("command: kubecred\nargs: null\nunknownField: 1\n").unwrap();
        assert_eq!(stanza.command, "kubecred");
        assert!(stanza.args.is_empty() && stanza.env.is_empty());
        assert_eq!(stanza.api_version, None);
        assert_eq!(
            serde_norway::to_string(&stanza).unwrap(),
            "command: kubecred\n"
        );
    }
}
