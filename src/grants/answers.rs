//! Token endpoint answers as providers really send them, made into what OAuth 2.0 says before
//! `oauth2` reads them. The transport (`http/`) knows nothing of OAuth; this is where that
//! knowledge lives, applied to every successful answer of a grant ([`super::ProviderClient`]'s
//! `oauth_call`).

/// The OAuth answer members that count seconds: `expires_in` (token and device answers) and
/// `interval` (device answers, RFC 8628).
const SECONDS_MEMBERS: [&str; 2] = ["expires_in", "interval"];

/// A successful OAuth answer with its seconds as JSON integers, as `oauth2` reads them. Azure
/// AD's v1 endpoint and ADFS send `"expires_in": "3600"`, others `3599.5`: both are the provider
/// saying how long, not a broken answer. A string of a number or a finite, non-negative float is
/// rewritten (a fraction rounds down, so a token is never thought to live longer than it does);
/// anything else is left for `oauth2` to refuse. An answer that needs nothing is returned as it
/// came, byte for byte.
pub(super) fn whole_seconds_as_numbers(body: Vec<u8>) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut answer)) = serde_json::from_slice(&body) else {
        return body;
    };
    let mut changed = false;
    for name in SECONDS_MEMBERS {
        let Some(value) = answer.get_mut(name) else {
            continue;
        };
        if value.is_u64() {
            continue;
        }
        let seconds = match &*value {
            serde_json::Value::String(text) => text.trim().parse::<f64>().ok(),
            serde_json::Value::Number(number) => number.as_f64(),
            _ => None,
        };
        if let Some(seconds) = seconds.filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e15) {
            *value = serde_json::Value::from(seconds.floor() as u64);
            changed = true;
        }
    }
    if !changed {
        return body;
    }
    serde_json::to_vec(&answer).unwrap_or(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(body: &str) -> String {
        String::from_utf8(whole_seconds_as_numbers(body.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn seconds_sent_as_strings_or_floats_become_integers() {
        let answer: serde_json::Value = serde_json::from_str(&rewritten(
            r#"{"access_token":"a","token_type":"Bearer","expires_in":"3600","interval":5.0}"#,
        ))
        .unwrap();
        assert_eq!(answer["expires_in"], 3600);
        assert_eq!(answer["interval"], 5);
        assert_eq!(answer["access_token"], "a");
        // A fraction rounds down: never a longer life than the provider said.
        assert!(rewritten(r#"{"expires_in":3599.9}"#).contains(r#""expires_in":3599"#));
        assert!(rewritten(r#"{"expires_in":" 60 "}"#).contains(r#""expires_in":60"#));
    }

    #[test]
    fn anything_else_is_left_as_it_came() {
        for body in [
            r#"{"expires_in":3600, "access_token":"a"}"#,
            r#"{"expires_in":"soon"}"#,
            r#"{"expires_in":-5}"#,
            r#"{"expires_in":"1e400"}"#,
            r#"{"expires_in":null}"#,
            r#"[1,2]"#,
            "<html>",
        ] {
            assert_eq!(rewritten(body), body);
        }
    }
}
