//! The shape of an `AuthenticationConfiguration` file (the `jwt` authenticators; other fields
//! such as `anonymous` are accepted and ignored), read from YAML or JSON, and the static checks
//! kube-apiserver makes when it loads one — a file it would refuse to start with is reported as
//! such, with the field's path, before any token is looked at.

use super::cel;
use crate::error::{Exit, fail};
use serde::Deserialize;
use std::path::Path;

/// API versions of the file kube-apiserver reads (v1 since 1.34; v1beta1 since 1.30).
const API_VERSIONS: [&str; 3] = [
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1beta1",
    "apiserver.config.k8s.io/v1alpha1",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationConfiguration {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub jwt: Vec<JwtAuthenticator>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JwtAuthenticator {
    pub issuer: Issuer,
    #[serde(default)]
    pub claim_validation_rules: Vec<ClaimValidationRule>,
    pub claim_mappings: ClaimMappings,
    #[serde(default)]
    pub user_validation_rules: Vec<UserValidationRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issuer {
    pub url: String,
    #[serde(default)]
    pub audiences: Vec<String>,
    #[serde(default)]
    pub audience_match_policy: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimValidationRule {
    pub claim: Option<String>,
    pub required_value: Option<String>,
    pub expression: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimMappings {
    pub username: PrefixedMapping,
    #[serde(default)]
    pub groups: Option<PrefixedMapping>,
    #[serde(default)]
    pub uid: Option<Mapping>,
    #[serde(default)]
    pub extra: Vec<ExtraMapping>,
}

/// `username` and `groups`: a claim with a prefix, or a CEL expression.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrefixedMapping {
    pub claim: Option<String>,
    pub prefix: Option<String>,
    pub expression: Option<String>,
}

/// `uid`: a claim or a CEL expression.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mapping {
    pub claim: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtraMapping {
    pub key: String,
    pub value_expression: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserValidationRule {
    pub expression: String,
    pub message: Option<String>,
}

impl AuthenticationConfiguration {
    /// Reads and checks a file; errors name the file and the offending field.
    pub fn load(path: &Path) -> anyhow::Result<AuthenticationConfiguration> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|err| {
            fail(
                Exit::Input,
                format!("cannot read the AuthenticationConfiguration {shown}: {err}"),
            )
        })?;
        let config = Self::parse(&text).map_err(|reason| {
            fail(
                Exit::Input,
                format!("the AuthenticationConfiguration {shown} {reason}"),
            )
        })?;
        Ok(config)
    }

    /// Parses YAML (or JSON, which is YAML) and runs the static checks. The error completes
    /// "the AuthenticationConfiguration FILE …".
    pub fn parse(text: &str) -> Result<AuthenticationConfiguration, String> {
        let config: AuthenticationConfiguration = serde_norway::from_str(text)
            .map_err(|err| format!("is not valid: {err}; compare it with `kubecred setup`'s"))?;
        config.check()?;
        Ok(config)
    }

    /// What kube-apiserver checks when it loads the file (a subset: the parts that decide how a
    /// token is evaluated). Messages name the field as kube-apiserver would.
    fn check(&self) -> Result<(), String> {
        if !API_VERSIONS.contains(&self.api_version.as_str()) {
            return Err(format!(
                "has apiVersion {:?}; kube-apiserver reads {}",
                self.api_version, API_VERSIONS[0]
            ));
        }
        if self.kind != "AuthenticationConfiguration" {
            return Err(format!(
                "has kind {:?}; expected AuthenticationConfiguration",
                self.kind
            ));
        }
        let mut issuers = std::collections::HashSet::new();
        for (index, jwt) in self.jwt.iter().enumerate() {
            if !issuers.insert(jwt.issuer.url.as_str()) {
                return Err(format!("repeats the issuer url {:?}", jwt.issuer.url));
            }
            jwt.check().map_err(|(field, reason)| {
                format!("is invalid at jwt[{index}].{field}: {reason}")
            })?;
        }
        Ok(())
    }
}

impl JwtAuthenticator {
    /// `Err((field path below jwt[i], reason))`, in kube-apiserver's order: the issuer, the
    /// claim validation rules, the claim mappings, the user validation rules.
    fn check(&self) -> Result<(), (String, String)> {
        self.check_issuer()?;
        self.check_claim_validation_rules()?;
        self.check_claim_mappings()?;
        for (i, rule) in self.user_validation_rules.iter().enumerate() {
            compiles(
                &format!("userValidationRules[{i}].expression"),
                &rule.expression,
            )?;
        }
        self.check_email_is_verified()
    }

    fn check_issuer(&self) -> Result<(), (String, String)> {
        // kube-apiserver takes only https; plain http on a loopback address is let through here
        // (and nowhere else) so that a local test provider's configuration can be evaluated.
        let loopback_http = url::Url::parse(&self.issuer.url)
            .is_ok_and(|url| url.scheme() == "http" && crate::config::is_loopback_host(&url));
        if !self.issuer.url.starts_with("https://") && !loopback_http {
            return bad("issuer.url", "must be an https:// URL");
        }
        if self.issuer.audiences.is_empty() {
            return bad("issuer.audiences", "must name at least one audience");
        }
        if self.issuer.audiences.len() > 1
            && self.issuer.audience_match_policy.as_deref() != Some("MatchAny")
        {
            return bad(
                "issuer.audienceMatchPolicy",
                "must be MatchAny when several audiences are given",
            );
        }
        Ok(())
    }

    fn check_claim_validation_rules(&self) -> Result<(), (String, String)> {
        for (i, rule) in self.claim_validation_rules.iter().enumerate() {
            let field = format!("claimValidationRules[{i}]");
            match (&rule.claim, &rule.expression) {
                (Some(_), Some(_)) | (None, None) => {
                    return bad(&field, "needs exactly one of claim and expression");
                }
                (Some(_), None) if rule.message.is_some() => {
                    return bad(&field, "message goes with expression, not claim");
                }
                (None, Some(expression)) => {
                    if rule.required_value.is_some() {
                        return bad(&field, "requiredValue goes with claim, not expression");
                    }
                    compiles(&field, expression)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_claim_mappings(&self) -> Result<(), (String, String)> {
        let mappings = &self.claim_mappings;
        check_prefixed(&mappings.username, "claimMappings.username", true)?;
        if let Some(groups) = &mappings.groups {
            check_prefixed(groups, "claimMappings.groups", false)?;
        }
        if let Some(uid) = &mappings.uid {
            if uid.claim.is_some() && uid.expression.is_some() {
                return bad(
                    "claimMappings.uid",
                    "claim and expression are mutually exclusive",
                );
            }
            if let Some(expression) = &uid.expression {
                compiles("claimMappings.uid.expression", expression)?;
            }
        }
        for (i, extra) in mappings.extra.iter().enumerate() {
            let field = format!("claimMappings.extra[{i}]");
            let key = &extra.key;
            let domain_prefixed = key
                .split_once('/')
                .is_some_and(|(domain, name)| domain.contains('.') && !name.is_empty());
            if !domain_prefixed || key.to_lowercase() != *key {
                return bad(
                    &format!("{field}.key"),
                    "must be a lowercase domain-prefixed path (example.org/name)",
                );
            }
            compiles(&format!("{field}.valueExpression"), &extra.value_expression)?;
        }
        Ok(())
    }

    /// kube-apiserver refuses a username expression that reads claims.email unless
    /// email_verified is checked too (there, or in a claim validation rule): the expression
    /// form has no built-in email_verified check.
    fn check_email_is_verified(&self) -> Result<(), (String, String)> {
        let Some(expression) = &self.claim_mappings.username.expression else {
            return Ok(());
        };
        let checks_verified = |text: &str| text.contains("email_verified");
        if cel::reads_claim(expression, "email")
            && !checks_verified(expression)
            && !self
                .claim_validation_rules
                .iter()
                .filter_map(|rule| rule.expression.as_deref())
                .any(checks_verified)
        {
            return bad(
                "claimMappings.username.expression",
                "uses claims.email, so claims.email_verified must be checked in it or in a claimValidationRules expression",
            );
        }
        Ok(())
    }
}

/// The error of a check: the field (below `jwt[i]`) and why.
fn bad(field: &str, reason: &str) -> Result<(), (String, String)> {
    Err((field.to_string(), reason.to_string()))
}

fn check_prefixed(
    mapping: &PrefixedMapping,
    field: &str,
    required: bool,
) -> Result<(), (String, String)> {
    let bad = |reason: &str| Err((field.to_string(), reason.to_string()));
    match (&mapping.claim, &mapping.expression) {
        (Some(_), Some(_)) => bad("claim and expression are mutually exclusive"),
        (None, None) if required => bad("needs a claim (with a prefix) or an expression"),
        (Some(_), None) if mapping.prefix.is_none() => {
            bad("prefix is required with claim (use \"\" for none)")
        }
        (None, Some(expression)) => {
            if mapping.prefix.is_some() {
                return bad("prefix goes with claim; put it in the expression");
            }
            compiles(&format!("{field}.expression"), expression)
        }
        _ => Ok(()),
    }
}

fn compiles(field: &str, expression: &str) -> Result<(), (String, String)> {
    cel::Expression::compile(expression)
        .map(drop)
        .map_err(|reason| (field.to_string(), reason))
}
