//! Unit tests of the AuthenticationConfiguration checks and evaluation: each rule kind passing
//! and failing, with the field path and message kube-apiserver would give.

use super::evaluate::Rejection;
use super::*;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

const ISSUER: &str = "https://idp.example";

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn claims(extra: Value) -> Map<String, Value> {
    let mut claims = json!({
        "iss": ISSUER,
        "aud": "kubecred",
        "sub": "u-123",
        "email": "alice@example.org",
        "email_verified": true,
        "groups": ["developers", "ops"],
        "exp": now().timestamp() + 300,
    });
    for (k, v) in extra.as_object().unwrap() {
        claims[k] = v.clone();
    }
    claims.as_object().unwrap().clone()
}

/// A configuration with the given jwt[0] body below `issuer`.
fn config(rest: &str) -> AuthenticationConfiguration {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: {ISSUER}\n    audiences: [kubecred]\n{rest}"
    );
    AuthenticationConfiguration::parse(&yaml).unwrap_or_else(|err| panic!("{err}\n{yaml}"))
}

fn eval(
    config: &AuthenticationConfiguration,
    claims: &Map<String, Value>,
) -> Result<AuthenticatedUser, Rejection> {
    evaluate(config, claims, now())
}

#[test]
fn claim_mappings_with_prefixes() {
    let config = config(
        "  claimMappings:\n    username: {claim: email, prefix: 'oidc:'}\n    groups: {claim: groups, prefix: 'oidc:'}\n    uid: {claim: sub}\n",
    );
    let user = eval(&config, &claims(json!({}))).unwrap();
    assert_eq!(user.username, "oidc:alice@example.org");
    assert_eq!(user.groups, ["oidc:developers", "oidc:ops"]);
    assert_eq!(user.uid, "u-123");
    assert!(user.extra.is_empty());
}

#[test]
fn a_string_groups_claim_is_one_group_and_an_absent_one_none() {
    let config = config(
        "  claimMappings:\n    username: {claim: sub, prefix: ''}\n    groups: {claim: role, prefix: ''}\n",
    );
    assert_eq!(
        eval(&config, &claims(json!({"role": "admin"})))
            .unwrap()
            .groups,
        ["admin"]
    );
    assert!(eval(&config, &claims(json!({}))).unwrap().groups.is_empty());
    let err = eval(&config, &claims(json!({"role": 7}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimMappings.groups");
}

#[test]
fn a_passing_cel_rule_and_cel_mappings() {
    let config = config(concat!(
        "  claimValidationRules:\n",
        "  - expression: \"claims.email.endsWith('@example.org')\"\n",
        "    message: only example.org accounts\n",
        "  claimMappings:\n",
        "    username: {expression: \"'user:' + claims.sub\"}\n",
        "    groups: {expression: \"claims.groups.map(g, 'idp:' + g)\"}\n",
        "    uid: {expression: \"claims.sub\"}\n",
        "    extra:\n",
        "    - key: example.org/email\n",
        "      valueExpression: claims.email\n",
        "    - key: example.org/empty\n",
        "      valueExpression: \"claims.?nickname.orValue('')\"\n",
        "  userValidationRules:\n",
        "  - expression: \"!user.username.startsWith('system:')\"\n",
        "    message: no system users\n",
    ));
    let user = eval(&config, &claims(json!({}))).unwrap();
    assert_eq!(user.username, "user:u-123");
    assert_eq!(user.groups, ["idp:developers", "idp:ops"]);
    assert_eq!(user.uid, "u-123");
    assert_eq!(
        user.extra.into_iter().collect::<Vec<_>>(),
        [(
            "example.org/email".to_string(),
            vec!["alice@example.org".to_string()]
        )]
    );
}

#[test]
fn a_failing_cel_claim_rule_names_itself_and_its_message() {
    let config = config(concat!(
        "  claimValidationRules:\n",
        "  - claim: sub\n",
        "    requiredValue: u-123\n",
        "  - expression: \"'admins' in claims.groups\"\n",
        "    message: you must be in the admins group\n",
        "  claimMappings:\n",
        "    username: {claim: sub, prefix: ''}\n",
    ));
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimValidationRules[1]");
    assert_eq!(
        err.reason,
        "validation expression ''admins' in claims.groups' failed: you must be in the admins group"
    );
    assert!(eval(&config, &claims(json!({"groups": ["admins"]}))).is_ok());
}

#[test]
fn a_required_claim_with_another_value_fails() {
    let config = config(
        "  claimValidationRules:\n  - claim: hd\n    requiredValue: example.org\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
    );
    let err = eval(&config, &claims(json!({"hd": "evil.example"}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimValidationRules[0]");
    assert!(
        err.reason
            .contains("\"evil.example\", want \"example.org\""),
        "{err}"
    );
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert!(err.reason.contains("not in the token"), "{err}");
}

#[test]
fn a_failing_user_rule_is_reported_after_mapping() {
    let config = config(concat!(
        "  claimMappings:\n",
        "    username: {claim: sub, prefix: 'system:'}\n",
        "  userValidationRules:\n",
        "  - expression: \"!user.username.startsWith('system:')\"\n",
        "    message: \"username must not start with system:\"\n",
    ));
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].userValidationRules[0]");
    assert!(
        err.reason
            .ends_with("failed: username must not start with system:"),
        "{err}"
    );
}

#[test]
fn email_usernames_need_a_verified_email() {
    let config = config("  claimMappings:\n    username: {claim: email, prefix: ''}\n");
    let err = eval(&config, &claims(json!({"email_verified": false}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimMappings.username");
    assert!(err.reason.contains("email_verified is false"), "{err}");
    // Absent is accepted; present and not a boolean is not.
    let mut no_flag = claims(json!({}));
    no_flag.remove("email_verified");
    assert_eq!(
        eval(&config, &no_flag).unwrap().username,
        "alice@example.org"
    );
    assert!(eval(&config, &claims(json!({"email_verified": "true"}))).is_err());
    // Another claim as the username does not look at email_verified.
    let by_sub = self::config("  claimMappings:\n    username: {claim: sub, prefix: ''}\n");
    assert!(eval(&by_sub, &claims(json!({"email_verified": false}))).is_ok());
}

#[test]
fn audience_mismatch_names_both_sides() {
    let config = config("  claimMappings:\n    username: {claim: sub, prefix: ''}\n");
    let err = eval(&config, &claims(json!({"aud": ["other", "another"]}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].issuer.audiences");
    assert!(
        err.reason.contains("[\"other\", \"another\"]") && err.reason.contains("[\"kubecred\"]"),
        "{err}"
    );
    // MatchAny: one shared audience is enough.
    assert!(eval(&config, &claims(json!({"aud": ["other", "kubecred"]}))).is_ok());
}

#[test]
fn no_authenticator_for_the_issuer() {
    let config = config("  claimMappings:\n    username: {claim: sub, prefix: ''}\n");
    let err = eval(&config, &claims(json!({"iss": "https://idp.example/"}))).unwrap_err();
    assert_eq!(err.rule, "jwt[*].issuer.url");
    assert!(
        err.reason.contains("\"https://idp.example/\"") && err.reason.contains("exactly"),
        "{err}"
    );
}

#[test]
fn an_expired_token_is_refused() {
    let config = config("  claimMappings:\n    username: {claim: sub, prefix: ''}\n");
    let err = eval(&config, &claims(json!({"exp": now().timestamp() - 1}))).unwrap_err();
    assert_eq!(err.rule, "exp");
}

#[test]
fn mapping_results_of_the_wrong_type_are_errors() {
    let config = config("  claimMappings:\n    username: {expression: 'claims.groups'}\n");
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimMappings.username.expression");
    assert!(
        err.reason.contains("must return a string, got list"),
        "{err}"
    );

    let config = self::config(
        "  claimValidationRules:\n  - expression: claims.sub\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
    );
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert!(
        err.reason.contains("must return a boolean, got string"),
        "{err}"
    );
}

#[test]
fn a_missing_claim_in_an_expression_is_an_evaluation_error() {
    let config = config(
        "  claimValidationRules:\n  - expression: \"claims.hd == 'example.org'\"\n    message: wrong domain\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
    );
    let err = eval(&config, &claims(json!({}))).unwrap_err();
    assert_eq!(err.rule, "jwt[0].claimValidationRules[0].expression");
    assert!(err.reason.contains("evaluating"), "{err}");
}

#[test]
fn static_checks_as_kube_apiserver_makes_them() {
    let parse = |rest: &str| {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: {ISSUER}\n    audiences: [a]\n{rest}"
        );
        AuthenticationConfiguration::parse(&yaml).map(drop)
    };
    let cases = [
        (
            "  claimMappings:\n    username: {claim: sub}\n",
            "jwt[0].claimMappings.username: prefix is required",
        ),
        (
            "  claimMappings:\n    username: {claim: sub, expression: claims.sub, prefix: ''}\n",
            "mutually exclusive",
        ),
        (
            "  claimMappings:\n    username: {expression: 'claims.sub +'}\n",
            "does not compile",
        ),
        (
            "  claimMappings:\n    username: {expression: claims.email}\n",
            "claims.email_verified must be checked",
        ),
        (
            "  claimValidationRules:\n  - claim: a\n    expression: 'true'\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
            "exactly one of claim and expression",
        ),
        (
            "  claimMappings:\n    username: {claim: sub, prefix: ''}\n    extra:\n    - key: Nope\n      valueExpression: claims.sub\n",
            "domain-prefixed",
        ),
    ];
    for (rest, expected) in cases {
        let err = parse(rest).unwrap_err();
        assert!(err.contains(expected), "{rest}: {err}");
    }
    // email is fine once email_verified is checked.
    parse("  claimValidationRules:\n  - expression: claims.email_verified\n  claimMappings:\n    username: {expression: claims.email}\n").unwrap();
    let err = AuthenticationConfiguration::parse("apiVersion: v1\nkind: Config\n").unwrap_err();
    assert!(err.contains("apiVersion"), "{err}");
    let err = AuthenticationConfiguration::parse("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: 'https://x', audiences: [a, b]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n").unwrap_err();
    assert!(err.contains("MatchAny"), "{err}");
}
