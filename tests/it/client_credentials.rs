//! Client credentials against the real OpenID Provider: both client authentication methods,
//! the cache hit, errors, and TLS with a custom CA.

use crate::support::*;

#[test]
fn client_secret_basic_yields_a_jwt_for_the_resource() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let run = env.kubecred_owned(&env.cc_args(&bed)).run().success();
    let claims = jwt_claims(&run.token());
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["iss"], bed.issuer.as_str());
    assert_eq!(bed.token_requests("client_credentials"), 1);
    run.never_shows(&[CC_SECRET]);
}

#[test]
fn client_secret_post_and_a_secret_file() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let secret_file = env.dir.path().join("secret");
    std::fs::write(&secret_file, format!("{CC_POST_SECRET}\n")).unwrap();
    let run = env
        .kubecred(&[
            "get-token",
            &format!("--issuer-url={}", bed.issuer),
            &format!("--client-id={CC_POST_CLIENT}"),
            &format!("--client-secret-file={}", secret_file.display()),
            "--grant-type=client-credentials",
            "--client-auth-method=post",
            &format!("--resource={RESOURCE}"),
            "-vv",
        ])
        .run()
        .success()
        .never_shows(&[CC_POST_SECRET]);
    assert_eq!(jwt_claims(&run.token())["aud"], RESOURCE);
    // Verbose logs say what happened without the token.
    let token = run.token();
    run.never_shows(&[&token]);
}

#[test]
fn a_cache_hit_makes_no_request_to_the_provider() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let first = env.kubecred_owned(&env.cc_args(&bed)).run().success();
    let before = bed.stats();
    let second = env.kubecred_owned(&env.cc_args(&bed)).run().success();
    let after = bed.stats();
    assert_eq!(first.token(), second.token());
    assert_eq!(
        before, after,
        "the cache hit must not reach the provider (discovery, JWKS or token)"
    );
}

#[test]
fn a_wrong_secret_is_one_line_naming_the_provider_error() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    env.kubecred(&[
        "get-token",
        &format!("--issuer-url={}", bed.issuer),
        &format!("--client-id={CC_CLIENT}"),
        "--client-secret=wrong-secret-value",
        "--grant-type=client-credentials",
        &format!("--resource={RESOURCE}"),
    ])
    .run()
    .failure(3)
    .stderr_contains("invalid_client")
    .stderr_contains("check --client-id and the client secret")
    .never_shows(&["wrong-secret-value"]);
}

#[test]
fn an_unreachable_provider_fails_fast_with_exit_3() {
    let env = TestEnv::new();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.kubecred(&[
        "get-token",
        &format!("--issuer-url=http://127.0.0.1:{port}"),
        "--client-id=x",
        "--client-secret=y",
        "--grant-type=client-credentials",
    ])
    .run()
    .failure(3);
}

#[test]
fn https_issuer_with_a_custom_ca() {
    let bed = Testbed::start_with(serde_json::json!({"idpTls": true}));
    assert!(bed.issuer.starts_with("https://"));
    let env = TestEnv::new();
    let args = env.cc_args(&bed);
    // Without the CA the certificate is unknown: say so, and how to fix it.
    env.kubecred_owned(&args)
        .run()
        .failure(3)
        .stderr_contains("signed by an authority this machine does not trust")
        .stderr_contains("--certificate-authority");
    let mut with_file = args.clone();
    with_file.push(format!("--certificate-authority={}", bed.ca_file.display()));
    env.kubecred_owned(&with_file)
        .arg("--force-refresh")
        .run()
        .success();
    let mut with_data = args.clone();
    with_data.push(format!("--certificate-authority-data={}", bed.ca_data));
    env.kubecred_owned(&with_data)
        .arg("--force-refresh")
        .run()
        .success();
    // The system's trust: the bundle file (SSL_CERT_FILE), then the certificate directories.
    env.kubecred_owned(&args)
        .arg("--force-refresh")
        .env("SSL_CERT_FILE", &bed.ca_file)
        .run()
        .success();
    let cert_dir = env.home().join("certs");
    std::fs::create_dir_all(&cert_dir).unwrap();
    std::fs::copy(&bed.ca_file, cert_dir.join("testbed.pem")).unwrap();
    env.kubecred_owned(&args)
        .arg("--force-refresh")
        .env("SSL_CERT_FILE", env.home().join("no-bundle.pem"))
        .env("SSL_CERT_DIR", &cert_dir)
        .run()
        .success();
    let mut insecure = args;
    insecure.push("--insecure-skip-tls-verify".into());
    env.kubecred_owned(&insecure)
        .arg("--force-refresh")
        .run()
        .success()
        .stderr_contains("insecure");
}
