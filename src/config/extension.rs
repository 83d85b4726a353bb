//! Typed reads of the cluster's `client.authentication.k8s.io/exec` extension (keys in
//! camelCase), which kubectl passes with `provideClusterInfo: true`. Unknown keys are ignored; a
//! known key of the wrong type is an error that names the key.

use crate::error::{Exit, fail};
use serde_json::{Map, Value};

/// The name of the cluster extension that carries kubecred settings.
pub const CLUSTER_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// The extension object, or none (`null`, absent, or not an object).
pub(super) struct Extension<'a>(pub Option<&'a Map<String, Value>>);

impl Extension<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0?.get(key).filter(|value| !value.is_null())
    }

    fn type_error(key: &str, expected: &str) -> anyhow::Error {
        fail(
            Exit::Input,
            format!(
                "cluster extension {CLUSTER_EXTENSION}: {key} must be {expected}; fix the kubeconfig cluster's extensions"
            ),
        )
    }

    pub fn string(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Self::type_error(key, "a string")),
        }
    }

    pub fn bool(&self, key: &str) -> anyhow::Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Self::type_error(key, "true or false")),
        }
    }

    /// A list of strings, or one string of items separated by spaces or commas.
    pub fn string_list(&self, key: &str) -> anyhow::Result<Option<Vec<String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(
                s.split([' ', ','])
                    .filter(|item| !item.is_empty())
                    .map(str::to_string)
                    .collect(),
            )),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| Self::type_error(key, "a list of strings"))
                })
                .collect::<anyhow::Result<Vec<_>>>()
                .map(Some),
            Some(_) => Err(Self::type_error(key, "a list of strings")),
        }
    }
}
