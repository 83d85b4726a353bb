//! A string that must never be printed: tokens, codes, client secrets, passwords.
//!
//! `Debug` and `Display` print `****`; the value is reachable only through [`Secret::expose`], so a
//! stray `{:?}` in a log line or an error message cannot leak it. Serde sees the plain value,
//! because the cache has to store it (in a 0600 file or the OS keyring).

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The plain value. Call it only where the value leaves the process on purpose:
    /// the ExecCredential on stdout, an HTTP request to the identity provider, the cache.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let secret = Secret::new("hunter2-refresh-token");
        assert_eq!(format!("{secret:?}"), "****");
        assert_eq!(format!("{secret}"), "****");
        let wrapped = Some(vec![secret.clone()]);
        assert!(!format!("{wrapped:?}").contains("hunter2"));
        assert_eq!(secret.expose(), "hunter2-refresh-token");
    }

    #[test]
    fn serde_round_trips_the_plain_value() {
        let secret = Secret::new("abc");
        let json = serde_json::to_string(&secret).unwrap();
        assert_eq!(json, "\"abc\"");
        let back: Secret = serde_json::from_str(&json).unwrap();
        assert_eq!(back, secret);
    }
}
