//! A token's claims as a table a person reads (`setup` and `whoami`): who (subject, email,
//! name), groups, audience, issuer, when it was issued and until when it is valid — never the
//! token itself. Values come from the provider, so they are made terminal-safe and cut short.

use crate::config::{Config, TokenKind};
use crate::error::{Exit, fail};
use crate::tokens::Tokens;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// The width of the label column: "other claims" and "client (azp)".
const LABEL_WIDTH: usize = 12;

/// Claims longer than this are cut in the table (a groups list can be long).
const MAX_VALUE_CHARS: usize = 240;

/// The claims of the token kubectl would get with these settings (the ID token, or the access
/// token with `--use-access-token`). Read without verifying: the ID token was verified when it
/// was obtained; an opaque access token has no claims to show, which is an error saying so.
pub fn of_credential(config: &Config, tokens: &Tokens) -> anyhow::Result<Map<String, Value>> {
    let (token, _) = tokens.credential(config.token_kind).ok_or_else(|| {
        fail(
            Exit::Provider,
            format!(
                "{} returned no {}",
                config.issuer_as_given,
                match config.token_kind {
                    TokenKind::IdToken => "ID token; request the openid scope",
                    TokenKind::AccessToken => "access token with a known expiry",
                }
            ),
        )
    })?;
    match crate::tokens::unverified_jwt_segment(token.expose(), 1) {
        Some(Value::Object(claims)) => Ok(claims),
        _ => Err(fail(
            Exit::Provider,
            "the access token is opaque (not a JWT), so it has no claims to show and kube-apiserver's JWT authenticator cannot read it; drop --use-access-token, or ask the provider for JWT access tokens (an audience or resource)",
        )),
    }
}

/// The table, one `  name  value` line per row, ending in a newline.
pub fn render(claims: &Map<String, Value>, now: DateTime<Utc>) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let text = |name: &str| claims.get(name).map(show);
    if let Some(sub) = text("sub") {
        rows.push(("subject", sub));
    }
    if let Some(email) = text("email") {
        let verified = match claims.get("email_verified") {
            Some(Value::Bool(true)) => " (verified)",
            Some(Value::Bool(false)) => " (NOT verified)",
            _ => "",
        };
        rows.push(("email", format!("{email}{verified}")));
    }
    for (claim, label) in [("preferred_username", "username"), ("name", "name")] {
        if let Some(value) = text(claim) {
            rows.push((label, value));
        }
    }
    rows.push((
        "groups",
        text("groups").unwrap_or_else(|| "(no groups claim)".into()),
    ));
    if let Some(aud) = text("aud") {
        rows.push(("audience", aud));
    }
    if let Some(azp) = text("azp") {
        rows.push(("client (azp)", azp));
    }
    if let Some(iss) = text("iss") {
        rows.push(("issuer", iss));
    }
    if let Some(iat) = timestamp(claims, "iat") {
        rows.push((
            "issued",
            format!("{} ({} ago)", rfc3339(iat), ago(now - iat)),
        ));
    }
    if let Some(exp) = timestamp(claims, "exp") {
        let when = if exp > now {
            format!("in {}", ago(exp - now))
        } else {
            format!("EXPIRED {} ago", ago(now - exp))
        };
        rows.push(("expiry", format!("{} ({when})", rfc3339(exp))));
    }
    const SHOWN: [&str; 12] = [
        "sub",
        "email",
        "email_verified",
        "preferred_username",
        "name",
        "groups",
        "aud",
        "azp",
        "iss",
        "iat",
        "exp",
        "nonce",
    ];
    let others: Vec<&str> = claims
        .keys()
        .map(String::as_str)
        .filter(|name| !SHOWN.contains(name))
        .collect();
    if !others.is_empty() {
        rows.push(("other claims", others.join(", ")));
    }
    // One width for every table (the longest label), so that values line up the same way in
    // every output and scripts can rely on the columns.
    rows.iter()
        .map(|(label, value)| format!("  {label:<LABEL_WIDTH$}  {value}\n"))
        .collect()
}

/// A claim's value in one line: strings as they are, lists joined by ", ", anything else as JSON.
fn show(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "(empty)".into(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    crate::text::printable_brief(&text, MAX_VALUE_CHARS).into_owned()
}

fn timestamp(claims: &Map<String, Value>, name: &str) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(claims.get(name)?.as_i64()?, 0)
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn ago(delta: chrono::Duration) -> String {
    crate::duration::display_elapsed(delta.to_std().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_names_who_groups_audience_issuer_and_expiry() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let claims = json!({
            "sub": "u-1", "email": "a@x", "email_verified": false, "groups": ["dev", "ops"],
            "aud": "kubecred", "iss": "https://idp", "iat": 1_800_000_000 - 60,
            "exp": 1_800_000_000 + 540, "hd": "x", "nonce": "n",
        });
        let table = render(claims.as_object().unwrap(), now);
        for line in [
            "  subject       u-1\n",
            "  email         a@x (NOT verified)\n",
            "  groups        dev, ops\n",
            "  audience      kubecred\n",
            "  issuer        https://idp\n",
            "  issued        2027-01-15T07:59:00Z (1m ago)\n",
            "  expiry        2027-01-15T08:09:00Z (in 9m)\n",
            "  other claims  hd\n",
        ] {
            assert!(table.contains(line), "{line:?} in\n{table}");
        }
        let no_groups = render(json!({"sub": "\u{1b}[2Jx"}).as_object().unwrap(), now);
        assert!(no_groups.contains("(no groups claim)") && !no_groups.contains('\u{1b}'));
    }
}
