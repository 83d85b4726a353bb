//! `kubecred whoami` against the real OpenID Provider: the claims of the token kubectl would
//! send (never the token), from settings flags or from the current kubeconfig context's exec
//! stanza (args, env and cluster extension); and `--authentication-config` evaluated locally as
//! kube-apiserver would: a passing configuration with claim mappings, a CEL mapping, and a
//! failing CEL rule whose message — which the server only logs — is shown.

use crate::support::*;
use std::path::PathBuf;

fn whoami_args(bed: &Testbed) -> Vec<String> {
    let mut args = TestEnv::new().cc_args(bed);
    args[0] = "whoami".into();
    args
}

/// The token get-token prints (and caches) for these whoami settings.
fn cached_token(env: &TestEnv, bed: &Testbed) -> String {
    env.kubecred_owned(&env.cc_args(bed))
        .run()
        .success()
        .token()
}

fn write(env: &TestEnv, name: &str, text: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn authn_config(issuer: &str, rest: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: \"{issuer}\"\n    audiences: [\"{RESOURCE}\"]\n{rest}"
    )
}

#[test]
fn whoami_with_settings_shows_the_claims_and_never_the_token() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let token = cached_token(&env, &bed);
    bed.reset_stats();
    env.kubecred_owned(&whoami_args(&bed))
        .run()
        .success()
        .never_shows(&[&token, CC_SECRET])
        .stdout_contains("Settings: from the command line")
        .stdout_contains(&format!("  audience      {RESOURCE}"))
        .stdout_contains(&format!("  issuer        {}", bed.issuer))
        .stdout_contains("Pass --authentication-config FILE");
    // The cached token is the one shown: no request to the provider.
    assert_eq!(bed.total_token_requests(), 0);
}

#[test]
fn whoami_reads_the_current_kubeconfig_contexts_exec_stanza() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // Client credentials from the cluster extension, the secret in the stanza's env.
    let kubeconfig = env.kubeconfig(&bed, cc_extension_spec(&bed, V1));
    env.kubectl(&kubeconfig, &["auth", "whoami"])
        .run()
        .success();
    bed.reset_stats();
    let run = env
        .kubecred(&["whoami"])
        .env("KUBECONFIG", &kubeconfig)
        .run()
        .success()
        .never_shows(&[CC_SECRET])
        .stdout_contains("Settings: kubeconfig context \"testbed\", user \"sso\"")
        .stdout_contains(&format!("  subject       {CC_CLIENT}"));
    assert!(run.stdout().contains(&bed.issuer));
    // kubectl's cached token: whoami asked nobody.
    assert_eq!(bed.total_token_requests(), 0);

    // A context whose user does not run kubecred is named as such.
    let foreign = write(
        &env,
        "foreign.yaml",
        "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: gke-gcloud-auth-plugin}}}]\n",
    );
    env.kubecred(&["whoami", &format!("--kubeconfig={}", foreign.display())])
        .run()
        .failure(1)
        .stderr_contains("runs \"gke-gcloud-auth-plugin\", not kubecred");
}

#[test]
fn whoami_evaluates_an_authentication_configuration() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    cached_token(&env, &bed);
    let run_with = |config: &str| {
        let file = write(&env, "authn.yaml", config);
        let mut args = whoami_args(&bed);
        args.push(format!("--authentication-config={}", file.display()));
        env.kubecred_owned(&args).run()
    };

    // Claim mappings with prefixes, and a CEL mapping for extra.
    run_with(&authn_config(
        &bed.issuer,
        concat!(
            "  claimMappings:\n",
            "    username: {claim: sub, prefix: \"robot:\"}\n",
            "    uid: {claim: sub}\n",
            "    extra:\n",
            "    - key: testbed.example/scope\n",
            "      valueExpression: \"claims.?scope.orValue('')\"\n",
        ),
    ))
    .success()
    .stdout_contains("(jwt[0]) authenticates this token as:")
    .stdout_contains(&format!("  username  robot:{CC_CLIENT}\n"))
    .stdout_contains(&format!("  uid       {CC_CLIENT}\n"))
    .stdout_contains("  groups    system:authenticated\n");

    // A CEL username mapping and a passing CEL rule.
    run_with(&authn_config(
        &bed.issuer,
        concat!(
            "  claimValidationRules:\n",
            "  - expression: \"claims.sub.startsWith('kubecred-')\"\n",
            "    message: only kubecred clients\n",
            "  claimMappings:\n",
            "    username: {expression: \"'ci:' + claims.sub.upperAscii()\"}\n",
            "    groups: {expression: \"['bots', claims.sub]\"}\n",
        ),
    ))
    .success()
    .stdout_contains("  username  ci:KUBECRED-CC\n")
    .stdout_contains(&format!(
        "  groups    bots, {CC_CLIENT}, system:authenticated\n"
    ));

    // A failing CEL rule: its message, which the API server would only log.
    let rejected = run_with(&authn_config(
        &bed.issuer,
        concat!(
            "  claimValidationRules:\n",
            "  - expression: \"claims.?groups.orValue([]).exists(g, g == 'admins')\"\n",
            "    message: only members of admins may use this cluster\n",
            "  claimMappings:\n",
            "    username: {claim: sub, prefix: \"\"}\n",
        ),
    ))
    .failure(1)
    .stderr_contains("would reject this token (401 Unauthorized): jwt[0].claimValidationRules[0]: ")
    .stderr_contains("failed: only members of admins may use this cluster");
    // The claims are still shown (on stderr), to compare with the rule.
    assert!(
        rejected
            .stderr()
            .contains(&format!("  subject       {CC_CLIENT}"))
    );

    // Another issuer in the file: no authenticator takes the token.
    run_with(&authn_config(
        "https://elsewhere.example",
        "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n",
    ))
    .failure(1)
    .stderr_contains("jwt[*].issuer.url: no authenticator has the token's issuer");

    // A file kube-apiserver would refuse to load is reported before any login.
    run_with(&authn_config(
        &bed.issuer,
        "  claimMappings:\n    username: {claim: sub}\n",
    ))
    .failure(1)
    .stderr_contains("jwt[0].claimMappings.username: prefix is required");
}
