//! One token's claims through an `AuthenticationConfiguration`, step by step in the order of
//! kube-apiserver's JWT authenticator (`plugin/pkg/authenticator/token/oidc/oidc.go`): the
//! authenticator whose `issuer.url` equals `iss`; the audiences (MatchAny); `exp`; the username
//! (with the `email_verified` rule for the `email` claim), groups, uid and extra; the required
//! claims (`claim`/`requiredValue`), the CEL `claimValidationRules`, and the
//! `userValidationRules` on the mapped user. The signature is not checked here: kubecred
//! verified the ID token when it obtained it, and only the cluster holds its own trust roots.

use super::cel::{self, Expression};
use super::types::{AuthenticationConfiguration, JwtAuthenticator};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeMap;
use std::fmt;

/// The user kube-apiserver would see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedUser {
    /// Which `jwt[i]` authenticated the token.
    pub authenticator: usize,
    pub username: String,
    pub uid: String,
    /// Without `system:authenticated`, which kube-apiserver adds to every authenticated user.
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Why kube-apiserver would refuse the token: the rule (a field path) and the reason, which is
/// the rule's own `message` where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub rule: String,
    pub reason: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.reason)
    }
}

/// Evaluates `claims` (a JWT payload) as kube-apiserver would at `now`.
pub fn evaluate(
    config: &AuthenticationConfiguration,
    claims: &Map<String, Json>,
    now: DateTime<Utc>,
) -> Result<AuthenticatedUser, Rejection> {
    let issuer = claims.get("iss").and_then(Json::as_str).unwrap_or("");
    // kube-apiserver coalesces Google's legacy issuer spelling.
    let issuer = if issuer == "accounts.google.com" {
        "https://accounts.google.com"
    } else {
        issuer
    };
    let Some((index, jwt)) = config
        .jwt
        .iter()
        .enumerate()
        .find(|(_, jwt)| jwt.issuer.url == issuer)
    else {
        let configured: Vec<&str> = config.jwt.iter().map(|j| j.issuer.url.as_str()).collect();
        return Err(Rejection {
            rule: "jwt[*].issuer.url".into(),
            reason: format!(
                "no authenticator has the token's issuer {issuer:?} (configured: {configured:?}); the url must equal the iss claim exactly"
            ),
        });
    };
    Evaluation { jwt, index, claims }.run(now)
}

struct Evaluation<'a> {
    jwt: &'a JwtAuthenticator,
    index: usize,
    claims: &'a Map<String, Json>,
}

impl Evaluation<'_> {
    fn reject(&self, field: &str, reason: impl Into<String>) -> Rejection {
        Rejection {
            rule: format!("jwt[{}].{field}", self.index),
            reason: reason.into(),
        }
    }

    fn run(&self, now: DateTime<Utc>) -> Result<AuthenticatedUser, Rejection> {
        self.check_audience()?;
        self.check_expiry(now)?;
        let username = self.username()?;
        let groups = self.groups()?;
        let uid = self.uid()?;
        let extra = self.extra()?;
        self.check_required_claims()?;
        self.check_claim_rules()?;
        let user = AuthenticatedUser {
            authenticator: self.index,
            username,
            uid,
            groups,
            extra,
        };
        self.check_user_rules(&user)?;
        Ok(user)
    }

    fn check_audience(&self) -> Result<(), Rejection> {
        let token_audiences: Vec<&str> = match self.claims.get("aud") {
            Some(Json::String(aud)) => vec![aud.as_str()],
            Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).collect(),
            _ => vec![],
        };
        let wanted = &self.jwt.issuer.audiences;
        if token_audiences
            .iter()
            .any(|aud| wanted.iter().any(|w| w == aud))
        {
            return Ok(());
        }
        Err(self.reject(
            "issuer.audiences",
            format!(
                "the token's aud {token_audiences:?} matches none of {wanted:?}; add the audience the token was issued for (its aud: the client ID of an ID token, the API or cluster of an access token) to issuer.audiences, if this API server is meant to accept it"
            ),
        ))
    }

    fn check_expiry(&self, now: DateTime<Utc>) -> Result<(), Rejection> {
        match self.claims.get("exp").and_then(Json::as_i64) {
            Some(exp) if exp <= now.timestamp() => Err(Rejection {
                rule: "exp".into(),
                reason: format!(
                    "the token expired at {}; run kubecred login",
                    DateTime::<Utc>::from_timestamp(exp, 0).unwrap_or_default()
                ),
            }),
            Some(_) => Ok(()),
            None => Err(Rejection {
                rule: "exp".into(),
                reason: "the token has no exp claim; kube-apiserver requires one".into(),
            }),
        }
    }

    fn username(&self) -> Result<String, Rejection> {
        let mapping = &self.jwt.claim_mappings.username;
        let field = "claimMappings.username";
        if let Some(source) = &mapping.expression {
            let value = self.eval_claims(&format!("{field}.expression"), source)?;
            return match value {
                ::cel::Value::String(s) => Ok(s.to_string()),
                other => Err(self.reject(
                    &format!("{field}.expression"),
                    format!("must return a string, got {}", cel::type_name(&other)),
                )),
            };
        }
        let claim = mapping.claim.as_deref().unwrap_or_default();
        let value = match self.claims.get(claim) {
            Some(Json::String(value)) => value.clone(),
            Some(_) => return Err(self.reject(field, format!("claim {claim:?} is not a string"))),
            None => return Err(self.reject(field, format!("the token has no {claim:?} claim"))),
        };
        if claim == "email" {
            match self.claims.get("email_verified") {
                None | Some(Json::Bool(true)) => {}
                Some(Json::Bool(false)) => {
                    return Err(self.reject(
                        field,
                        "the username is the email claim and email_verified is false (\"oidc: email not verified\"); verify the address at the provider, or map another claim",
                    ))
                }
                Some(_) => {
                    return Err(self.reject(field, "claim \"email_verified\" is not a boolean"))
                }
            }
        }
        Ok(format!(
            "{}{value}",
            mapping.prefix.as_deref().unwrap_or("")
        ))
    }

    fn groups(&self) -> Result<Vec<String>, Rejection> {
        let Some(mapping) = &self.jwt.claim_mappings.groups else {
            return Ok(vec![]);
        };
        let field = "claimMappings.groups";
        if let Some(claim) = &mapping.claim {
            let prefix = mapping.prefix.as_deref().unwrap_or("");
            // A string claim counts as a one-element list (kubernetes/kubernetes#33290); an
            // absent claim means no groups.
            let groups = match self.claims.get(claim) {
                None => return Ok(vec![]),
                Some(Json::String(group)) => vec![group.clone()],
                Some(Json::Array(items)) => items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        self.reject(field, format!("claim {claim:?} holds a non-string"))
                    })?,
                Some(_) => {
                    return Err(self.reject(
                        field,
                        format!("claim {claim:?} is neither a string nor a list of strings"),
                    ));
                }
            };
            return Ok(groups.into_iter().map(|g| format!("{prefix}{g}")).collect());
        }
        match &mapping.expression {
            Some(source) => {
                let at = format!("{field}.expression");
                string_list(self.eval_claims(&at, source)?)
                    .map_err(|reason| self.reject(&at, reason))
            }
            None => Ok(vec![]),
        }
    }

    fn uid(&self) -> Result<String, Rejection> {
        let Some(mapping) = &self.jwt.claim_mappings.uid else {
            return Ok(String::new());
        };
        let field = "claimMappings.uid";
        if let Some(claim) = &mapping.claim {
            return match self.claims.get(claim) {
                Some(Json::String(uid)) => Ok(uid.clone()),
                Some(_) => Err(self.reject(field, format!("claim {claim:?} is not a string"))),
                None => Err(self.reject(field, format!("the token has no {claim:?} claim"))),
            };
        }
        match &mapping.expression {
            Some(source) => match self.eval_claims(&format!("{field}.expression"), source)? {
                ::cel::Value::String(s) => Ok(s.to_string()),
                other => Err(self.reject(
                    &format!("{field}.expression"),
                    format!("must return a string, got {}", cel::type_name(&other)),
                )),
            },
            None => Ok(String::new()),
        }
    }

    fn extra(&self) -> Result<BTreeMap<String, Vec<String>>, Rejection> {
        let mut extra = BTreeMap::new();
        for (i, mapping) in self.jwt.claim_mappings.extra.iter().enumerate() {
            let at = format!("claimMappings.extra[{i}].valueExpression");
            let values = string_list(self.eval_claims(&at, &mapping.value_expression)?)
                .map_err(|reason| self.reject(&at, reason))?;
            if !values.is_empty() {
                extra.insert(mapping.key.clone(), values);
            }
        }
        Ok(extra)
    }

    /// `claim` + `requiredValue` rules: the claim must be a string equal to the value.
    fn check_required_claims(&self) -> Result<(), Rejection> {
        for (i, rule) in self.jwt.claim_validation_rules.iter().enumerate() {
            let Some(claim) = &rule.claim else { continue };
            let field = format!("claimValidationRules[{i}]");
            let wanted = rule.required_value.as_deref().unwrap_or("");
            match self.claims.get(claim) {
                None => {
                    return Err(self.reject(
                        &field,
                        format!("required claim {claim:?} is not in the token"),
                    ));
                }
                Some(Json::String(value)) if value == wanted => {}
                Some(Json::String(value)) => {
                    return Err(self.reject(
                        &field,
                        format!("required claim {claim:?} is {value:?}, want {wanted:?}"),
                    ));
                }
                Some(_) => {
                    return Err(
                        self.reject(&field, format!("required claim {claim:?} is not a string"))
                    );
                }
            }
        }
        Ok(())
    }

    fn check_claim_rules(&self) -> Result<(), Rejection> {
        for (i, rule) in self.jwt.claim_validation_rules.iter().enumerate() {
            let Some(source) = &rule.expression else {
                continue;
            };
            let at = format!("claimValidationRules[{i}]");
            let value = self.eval_claims(&format!("{at}.expression"), source)?;
            self.check_rule(&at, source, value, rule.message.as_deref())?;
        }
        Ok(())
    }

    fn check_user_rules(&self, user: &AuthenticatedUser) -> Result<(), Rejection> {
        let user_json = user_as_json(user);
        for (i, rule) in self.jwt.user_validation_rules.iter().enumerate() {
            let at = format!("userValidationRules[{i}]");
            let value = compile(self, &format!("{at}.expression"), &rule.expression)?
                .evaluate("user", &user_json)
                .map_err(|reason| self.reject(&format!("{at}.expression"), reason))?;
            self.check_rule(&at, &rule.expression, value, rule.message.as_deref())?;
        }
        Ok(())
    }

    /// A validation rule's result: `true` passes, `false` fails with the rule's message.
    fn check_rule(
        &self,
        at: &str,
        source: &str,
        value: ::cel::Value,
        message: Option<&str>,
    ) -> Result<(), Rejection> {
        match value {
            ::cel::Value::Bool(true) => Ok(()),
            ::cel::Value::Bool(false) => Err(self.reject(
                at,
                format!(
                    "validation expression '{source}' failed: {}",
                    message.unwrap_or("(the rule has no message)")
                ),
            )),
            other => Err(self.reject(
                at,
                format!(
                    "validation expression must return a boolean, got {}",
                    cel::type_name(&other)
                ),
            )),
        }
    }

    fn eval_claims(&self, at: &str, source: &str) -> Result<::cel::Value, Rejection> {
        compile(self, at, source)?
            .evaluate("claims", &Json::Object(self.claims.clone()))
            .map_err(|reason| self.reject(at, reason))
    }
}

fn compile(evaluation: &Evaluation, at: &str, source: &str) -> Result<Expression, Rejection> {
    Expression::compile(source).map_err(|reason| evaluation.reject(at, reason))
}

/// A mapping's result as kube-apiserver reads it: a string or a list of strings; `""`, `[]` and
/// `null` mean none, and empty strings in a list are dropped.
fn string_list(value: ::cel::Value) -> Result<Vec<String>, String> {
    match value {
        ::cel::Value::String(s) if s.is_empty() => Ok(vec![]),
        ::cel::Value::String(s) => Ok(vec![s.to_string()]),
        ::cel::Value::Null => Ok(vec![]),
        ::cel::Value::List(items) => items
            .iter()
            .filter_map(|item| match item {
                ::cel::Value::String(s) if s.is_empty() => None,
                ::cel::Value::String(s) => Some(Ok(s.to_string())),
                other => Some(Err(format!(
                    "expression must return a string or a list of strings, got a list holding {}",
                    cel::type_name(other)
                ))),
            })
            .collect(),
        other => Err(format!(
            "expression must return a string or a list of strings, got {}",
            cel::type_name(&other)
        )),
    }
}

/// The user as userValidationRules see it (authentication/v1 UserInfo, empty fields left out).
fn user_as_json(user: &AuthenticatedUser) -> Json {
    let mut object = Map::new();
    object.insert("username".into(), json!(user.username));
    if !user.uid.is_empty() {
        object.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        object.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        object.insert("extra".into(), json!(user.extra));
    }
    Json::Object(object)
}
