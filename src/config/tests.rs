//! Tests of settings resolution: precedence, defaults, validation and kubelogin compatibility.

use super::*;
use crate::cli::{Cli, Command};
use crate::error::exit_code_of;
use clap::Parser;

fn args(extra: &[&str]) -> TokenArgs {
    let mut argv = vec!["kubecred", "get-token"];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::GetToken(args) => args,
        _ => unreachable!(),
    }
}

fn exec_with_extension(extension: &str) -> ExecInfo {
    ExecInfo::parse(Some(&format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","spec":{{"interactive":false,"cluster":{{"server":"https://k","config":{extension}}}}}}}"#
    )))
    .unwrap()
}

#[test]
fn huge_durations_are_refused_not_panicked_on() {
    let err = Config::resolve(
        &args(&[
            "--issuer-url=https://idp",
            "--client-id=c",
            "--auth-timeout=18446744073709551615",
        ]),
        &Environment::default(),
        ExecInfo::absent(),
    )
    .unwrap_err();
    assert_eq!(exit_code_of(&err), Exit::Input);
    assert!(
        format!("{err:#}").starts_with("--auth-timeout: \"18446744073709551615\" is too long"),
        "{err:#}"
    );
    let exec = exec_with_extension(
        r#"{"issuerURL":"https://x","clientID":"c","minValidity":"18446744073709551615s1s"}"#,
    );
    let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
    assert!(
        format!("{err:#}").starts_with("cluster extension minValidity: "),
        "{err:#}"
    );
}

#[test]
fn the_lock_wait_covers_the_holders_work() {
    let base = ["--issuer-url=https://idp", "--client-id=c"];
    let resolve = |extra: &[&str]| {
        let mut argv = base.to_vec();
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
            .unwrap()
            .cache
            .lock_timeout
    };
    // 180s + 3 × 30s + 10s
    assert_eq!(resolve(&[]), Duration::from_secs(280));
    assert_eq!(
        resolve(&["--auth-timeout=60s", "--http-timeout=5s"]),
        Duration::from_secs(85)
    );
    assert_eq!(resolve(&["--lock-timeout=7s"]), Duration::from_secs(7));
    // The longest settings still leave a wait that Instant::now() + d can hold.
    let longest = resolve(&["--auth-timeout=168h", "--http-timeout=168h"]);
    assert_eq!(longest, crate::duration::MAX * 4 + LOCK_TIMEOUT_SLACK);
    assert!(std::time::Instant::now().checked_add(longest).is_some());
}

#[test]
fn kubelogin_pkce_method() {
    let base = ["--issuer-url=https://idp", "--client-id=c"];
    let resolve = |extra: &[&str]| {
        let mut argv = base.to_vec();
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
            .map(|config| config.login.pkce)
    };
    assert_eq!(resolve(&[]).unwrap(), None);
    assert_eq!(resolve(&["--oidc-pkce-method=auto"]).unwrap(), None);
    assert_eq!(resolve(&["--oidc-pkce-method=no"]).unwrap(), Some(false));
    assert_eq!(resolve(&["--oidc-pkce-method=S256"]).unwrap(), Some(true));
    assert_eq!(resolve(&["--oidc-use-pkce"]).unwrap(), Some(true));
    assert_eq!(
        resolve(&["--oidc-pkce-method=no", "--pkce"]).unwrap(),
        Some(true)
    );
    let err = resolve(&["--oidc-pkce-method=plain"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--oidc-pkce-method \"plain\" is not one of auto, no, S256 (or use --pkce / --pkce=false)"
    );
}

#[test]
fn auth_params_keep_commas_in_values() {
    let resolve = |extra: &[&str]| {
        let mut argv = vec!["--issuer-url=https://idp", "--client-id=c"];
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
            .map(|config| config.login.auth_params)
    };
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        resolve(&["--auth-param=acr_values=a,b", "--auth-param=ui_locales=en"]).unwrap(),
        [pair("acr_values", "a,b"), pair("ui_locales", "en")]
    );
    // kubelogin's form: several pairs in one value.
    assert_eq!(
        resolve(&["--oidc-auth-request-extra-params=prompt=login,max_age=0"]).unwrap(),
        [pair("prompt", "login"), pair("max_age", "0")]
    );
    assert_eq!(
        resolve(&["--auth-param=resource=https://api/?a=b,c"]).unwrap(),
        [pair("resource", "https://api/?a=b,c")]
    );
    assert!(resolve(&["--auth-param=novalue"]).is_err());
}

#[test]
fn a_bad_ca_names_where_it_came_from() {
    let base = ["--issuer-url=https://idp", "--client-id=c"];
    let mut argv = base.to_vec();
    argv.push("--certificate-authority-data=not base64!");
    let err =
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("--certificate-authority-data is not base64"),
        "{err}"
    );
    let exec = exec_with_extension(
        r#"{"issuerURL":"https://x","clientID":"c","certificateAuthorityData":"not base64!"}"#,
    );
    let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the cluster extension's certificateAuthorityData is not base64"),
        "{err}"
    );
}

/// kubelogin's `--oidc-redirect-url-hostname` goes into the redirect URI as given, as kubelogin
/// puts it there: not as the URL parse rewrites it (lower case, an IP address's shortest form).
#[test]
fn kubelogin_redirect_hostname_is_sent_as_given() {
    let redirect = |host: &str| {
        let argv = [
            "--issuer-url=https://idp",
            "--client-id=c",
            &format!("--oidc-redirect-url-hostname={host}"),
        ];
        let config = Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent());
        config.unwrap().login.redirect.as_str().to_string()
    };
    assert_eq!(redirect("LocalHost"), "http://LocalHost/callback");
    assert_eq!(redirect("127.1"), "http://127.1/callback");
    assert_eq!(redirect("[::1]"), "http://[::1]/callback");
}

#[test]
fn kubelogin_redirect_hostname_password_and_ignored_flags() {
    let base = ["--issuer-url=https://idp", "--client-id=c"];
    let resolve = |extra: &[&str]| {
        let mut argv = base.to_vec();
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
    };
    let redirect = resolve(&["--oidc-redirect-url-hostname=127.0.0.1"])
        .unwrap()
        .login
        .redirect;
    assert_eq!(redirect.as_str(), "http://127.0.0.1/callback");
    let redirect = resolve(&[
        "--oidc-redirect-url-hostname=127.0.0.1",
        "--redirect-url=http://localhost/cb",
    ])
    .unwrap()
    .login
    .redirect;
    assert_eq!(redirect.as_str(), "http://localhost/cb");
    assert!(resolve(&["--oidc-redirect-url-hostname=idp.example"]).is_err());

    // kubelogin's password-grant flags belong to --grant-type password.
    let err = resolve(&["--username=alice", "--password=hunter2"]).unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("apply only to --grant-type password"),
        "{message}"
    );
    assert!(
        !message.contains("hunter2") && !message.contains("alice"),
        "{message}"
    );
    assert_eq!(exit_code_of(&err), Exit::Input);
    // Ignored ones resolve (with a notice on stderr).
    resolve(&[
        "--open-url-after-authentication=https://x",
        "--tls-renegotiation-once",
    ])
    .unwrap();
}

#[test]
fn flags_beat_the_cluster_extension_which_beats_defaults() {
    let exec = exec_with_extension(
        r#"{"issuerURL":"https://ext.example","clientID":"ext-client","scopes":["email"],"audience":"ext-aud"}"#,
    );
    let from_ext = Config::resolve(&args(&[]), &Environment::default(), exec.clone()).unwrap();
    assert_eq!(from_ext.issuer.as_str(), "https://ext.example/");
    assert_eq!(from_ext.client.id, "ext-client");
    assert_eq!(from_ext.scopes, ["openid", "email"]);
    assert_eq!(from_ext.audience.as_deref(), Some("ext-aud"));
    assert_eq!(from_ext.min_validity, DEFAULT_MIN_VALIDITY);
    assert_eq!(from_ext.grant, Grant::Authcode);
    assert_eq!(from_ext.token_kind, TokenKind::IdToken);

    let from_flags = Config::resolve(
        &args(&[
            "--issuer-url=https://flag.example",
            "--client-id=flag",
            "--scope=groups,openid",
        ]),
        &Environment::default(),
        exec,
    )
    .unwrap();
    assert_eq!(from_flags.issuer.as_str(), "https://flag.example/");
    assert_eq!(from_flags.client.id, "flag");
    assert_eq!(from_flags.scopes, ["openid", "groups"]);
}

#[test]
fn extension_type_errors_name_the_key() {
    let exec = exec_with_extension(r#"{"issuerURL":"https://x","clientID":7}"#);
    let err = Config::resolve(&args(&[]), &Environment::default(), exec).unwrap_err();
    assert!(
        format!("{err:#}").contains("clientID must be a string"),
        "{err:#}"
    );
}

#[test]
fn issuer_must_be_https_unless_loopback() {
    for ok in [
        "https://idp.example",
        "http://127.0.0.1:9000",
        "http://localhost:1",
        "http://[::1]:5",
    ] {
        assert!(parse_issuer(ok).is_ok(), "{ok}");
    }
    for bad in ["http://idp.example", "ftp://127.0.0.1", "not a url"] {
        assert!(parse_issuer(bad).is_err(), "{bad}");
    }
}

#[test]
fn client_credentials_prints_the_access_token_and_skips_openid() {
    let config = Config::resolve(
        &args(&[
            "--issuer-url=https://idp",
            "--client-id=ci",
            "--client-secret=s",
            "--grant-type=client-credentials",
            "--scope=api",
        ]),
        &Environment::default(),
        ExecInfo::absent(),
    )
    .unwrap();
    assert_eq!(config.token_kind, TokenKind::AccessToken);
    assert_eq!(config.scopes, ["api"]);
    assert!(!format!("{config:?}").contains("\"s\""));
}

#[test]
fn client_credentials_without_a_secret_is_refused() {
    let err = Config::resolve(
        &args(&[
            "--issuer-url=https://idp",
            "--client-id=ci",
            "--grant-type=client-credentials",
        ]),
        &Environment::default(),
        ExecInfo::absent(),
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("needs client authentication"));
}

#[test]
fn browser_choice() {
    let base = ["--issuer-url=https://idp", "--client-id=c"];
    let env = Environment {
        browser: Some("firefox --new-tab".into()),
        ..Default::default()
    };
    let resolve = |extra: &[&str], env: &Environment| {
        let mut argv = base.to_vec();
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), env, ExecInfo::absent())
            .unwrap()
            .login
            .browser
    };
    assert_eq!(resolve(&[], &Environment::default()), BrowserChoice::System);
    assert_eq!(
        resolve(&[], &env),
        BrowserChoice::Command(vec!["firefox".into(), "--new-tab".into()])
    );
    assert_eq!(
        resolve(&["--browser-command=node 'my browser.mjs'"], &env),
        BrowserChoice::Command(vec!["node".into(), "my browser.mjs".into()])
    );
    assert_eq!(resolve(&["--skip-open-browser"], &env), BrowserChoice::Skip);
}

#[test]
fn listen_addresses_must_be_loopback() {
    let err = Config::resolve(
        &args(&[
            "--issuer-url=https://idp",
            "--client-id=c",
            "--listen-address=0.0.0.0:8000",
        ]),
        &Environment::default(),
        ExecInfo::absent(),
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("not a loopback address"));
}

#[test]
fn a_redirect_uri_is_kept_as_written_and_its_port_is_where_the_listener_is() {
    let resolve = |extra: &[&str]| {
        let mut argv = vec!["--issuer-url=https://idp", "--client-id=c"];
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
    };
    let addresses = |config: &Config| -> Vec<String> {
        config
            .login
            .listen_addresses
            .iter()
            .map(|a| a.to_string())
            .collect()
    };
    // kubelogin's: no path, no slash added.
    let bare = resolve(&["--redirect-url=http://localhost"]).unwrap();
    assert_eq!(bare.login.redirect.as_str(), "http://localhost");
    assert_eq!(addresses(&bare), ["127.0.0.1:8000", "127.0.0.1:18000"]);
    // A port written in it: listened on, alone.
    let named = resolve(&["--redirect-url=http://localhost:8000"]).unwrap();
    assert_eq!(named.login.redirect.as_str(), "http://localhost:8000");
    assert_eq!(addresses(&named), ["127.0.0.1:8000"]);
    let https = resolve(&[
        "--redirect-url=https://localhost:8443/callback",
        "--local-server-cert=/c.pem",
        "--local-server-key=/k.pem",
    ])
    .unwrap();
    assert_eq!(addresses(&https), ["127.0.0.1:8443"]);
    // ... unless --listen-address says where (a port forward); kubelogin's localhost:PORT too.
    let forwarded = resolve(&[
        "--redirect-url=http://localhost:8000/",
        "--listen-address=localhost:9000",
    ])
    .unwrap();
    assert_eq!(forwarded.login.redirect.as_str(), "http://localhost:8000/");
    assert_eq!(addresses(&forwarded), ["127.0.0.1:9000"]);
    // The keyboard login's code is copied by the person: any registered URI.
    let oob = resolve(&[
        "--grant-type=authcode-keyboard",
        "--redirect-url=urn:ietf:wg:oauth:2.0:oob",
    ])
    .unwrap();
    assert_eq!(oob.login.redirect.as_str(), "urn:ietf:wg:oauth:2.0:oob");
    for (extra, expected) in [
        (
            "--redirect-url=urn:ietf:wg:oauth:2.0:oob",
            "must be http on localhost",
        ),
        ("--redirect-url=http://localhost:0/cb", "names port 0"),
        ("--redirect-url=http://localhost:/cb", "names the port \"\""),
        (
            "--listen-address=localhost",
            "not an IP:port or localhost:port",
        ),
    ] {
        let err = resolve(&[extra]).unwrap_err();
        assert!(format!("{err:#}").contains(expected), "{extra}: {err:#}");
    }
}

#[test]
fn an_issuer_with_a_password_is_refused_without_repeating_it() {
    for issuer in [
        "https://alice:hunter2@idp.example/realm",
        "https://alice:hunter2@idp example/realm",
        "ftp://alice:hunter2@idp.example/",
    ] {
        let err = super::parse_issuer(issuer).unwrap_err();
        let text = format!("{err:#}");
        assert!(!text.contains("hunter2"), "{text}");
    }
    let text = format!(
        "{:#}",
        super::parse_issuer("https://alice:hunter2@idp.example/realm").unwrap_err()
    );
    assert!(
        text.contains("user name or password") && text.contains("https://idp.example/realm"),
        "{text}"
    );
    assert!(super::parse_issuer("https://alice@idp.example/").is_err());
}

fn resolve_ci(extra: &[&str], env: &Environment) -> anyhow::Result<Config> {
    let mut all = vec!["--issuer-url=https://idp", "--client-id=ci"];
    all.extend_from_slice(extra);
    Config::resolve(&args(&all), env, ExecInfo::absent())
}

#[test]
fn client_authentication_is_one_way_and_conflicts_are_named() {
    let env = Environment::default();
    let two = resolve_ci(
        &["--client-secret=s", "--client-private-key-file=/k.pem"],
        &env,
    )
    .unwrap_err();
    assert!(format!("{two:#}").contains("one way only"), "{two:#}");
    let two = resolve_ci(
        &[
            "--client-assertion-file=/a",
            "--client-assertion-source=gitlab",
        ],
        &env,
    )
    .unwrap_err();
    assert!(format!("{two:#}").contains("not several"), "{two:#}");
    let method = resolve_ci(
        &["--client-private-key-file=/k", "--client-auth-method=post"],
        &env,
    )
    .unwrap_err();
    assert!(format!("{method:#}").contains("applies only to a client secret"));
    let kid = resolve_ci(&["--client-key-id=k1"], &env).unwrap_err();
    assert!(format!("{kid:#}").contains("needs a private key"));
    let device = resolve_ci(
        &["--grant-type=device-code", "--client-assertion-env=X"],
        &env,
    )
    .unwrap_err();
    assert!(format!("{device:#}").contains("device-code"));

    let config = resolve_ci(
        &[
            "--grant-type=client-credentials",
            "--client-private-key-file=/k.pem",
            "--client-key-id=k1",
        ],
        &env,
    )
    .unwrap();
    let ClientAuth::PrivateKeyJwt(key) = &config.client.auth else {
        panic!("private_key_jwt expected, got {:?}", config.client.auth)
    };
    assert_eq!(key.key_id.as_deref(), Some("k1"));
    let from_env = Environment {
        client_private_key: Some(Secret::new("-----BEGIN PRIVATE KEY-----")),
        ..Default::default()
    };
    let config = resolve_ci(&["--grant-type=client-credentials"], &from_env).unwrap();
    assert!(matches!(
        config.client.auth,
        ClientAuth::PrivateKeyJwt(PrivateKeySettings {
            pem: PrivateKeyPem::Env(_),
            ..
        })
    ));
    let config = resolve_ci(
        &[
            "--grant-type=client-credentials",
            "--client-assertion-source=github-actions",
            "--client-assertion-audience=api://AzureADTokenExchange",
        ],
        &env,
    )
    .unwrap();
    assert!(matches!(
        &config.client.auth,
        ClientAuth::Assertion(CredentialSource::GithubActions { audience: Some(aud) }) if aud == "api://AzureADTokenExchange"
    ));
}

#[test]
fn token_exchange_and_federated_token_need_a_subject_and_print_the_access_token() {
    let env = Environment::default();
    let err = resolve_ci(&["--grant-type=token-exchange"], &env).unwrap_err();
    assert!(
        format!("{err:#}").contains("needs a subject token"),
        "{err:#}"
    );
    let err = resolve_ci(&["--subject-token-file=/t"], &env).unwrap_err();
    assert!(format!("{err:#}").contains("applies only to"), "{err:#}");
    let err = resolve_ci(
        &[
            "--grant-type=token-exchange",
            "--subject-token-env=T",
            "--subject-token-audience=a",
        ],
        &env,
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("only to --subject-token-source github-actions"));

    let config = resolve_ci(
        &[
            "--grant-type=token-exchange",
            "--subject-token-source=gitlab",
        ],
        &env,
    )
    .unwrap();
    let subject = config.subject.as_ref().unwrap();
    assert_eq!(
        subject.source,
        CredentialSource::Gitlab {
            variable: "GITLAB_OIDC_TOKEN".into()
        }
    );
    assert_eq!(subject.token_type, TOKEN_TYPE_JWT);
    assert_eq!(config.token_kind, TokenKind::AccessToken);
    assert!(!config.scopes.contains(&"openid".to_string()));
    assert!(matches!(config.client.auth, ClientAuth::None));

    // federated-token talks to no provider: no client ID needed, no client authentication.
    let config = Config::resolve(
        &args(&[
            "--issuer-url=https://ci.example",
            "--grant-type=federated-token",
            "--subject-token-file=/t",
        ]),
        &env,
        ExecInfo::absent(),
    )
    .unwrap();
    assert_eq!(config.grant, Grant::FederatedToken);
    assert_eq!(config.token_kind, TokenKind::AccessToken);
    let err = resolve_ci(
        &[
            "--grant-type=federated-token",
            "--subject-token-file=/t",
            "--client-secret=s",
        ],
        &env,
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("sends no request to a provider"));
}

#[test]
fn the_password_grant_takes_its_password_from_a_file_the_environment_or_a_prompt() {
    // Without a user name, both are asked for at the terminal, as kubelogin does.
    let asked = resolve_ci(&["--grant-type=password"], &Environment::default()).unwrap();
    let asked = asked.password.unwrap();
    assert!(asked.username.is_none() && asked.needs_a_person());
    let prompt = resolve_ci(
        &["--grant-type=password", "--username=alice"],
        &Environment::default(),
    )
    .unwrap();
    assert!(matches!(
        prompt.password.unwrap().source,
        PasswordSource::Prompt
    ));
    let env = Environment {
        password: Some(Secret::new("pw")),
        ..Default::default()
    };
    let from_env = resolve_ci(&["--grant-type=password", "--username=alice"], &env).unwrap();
    assert!(matches!(
        from_env.password.as_ref().unwrap().source,
        PasswordSource::Env(_)
    ));
    assert!(from_env.grant.is_user_login());
    let file = resolve_ci(
        &[
            "--grant-type=password",
            "--username=alice",
            "--password-file=/p",
        ],
        &env,
    )
    .unwrap();
    assert!(matches!(
        file.password.unwrap().source,
        PasswordSource::File(_)
    ));
}

#[test]
fn secret_flags_on_the_command_line_are_found() {
    let argv: Vec<std::ffi::OsString> = [
        "kubecred",
        "get-token",
        "--client-secret=x",
        "--oidc-client-secret",
        "y",
        "--client-secret-file=/f",
        "--password=p",
    ]
    .iter()
    .map(Into::into)
    .collect();
    let found: Vec<(&str, &str)> = secret_flags_on_command_line(&argv)
        .iter()
        .map(|secret| (secret.flag, secret.instead))
        .collect();
    // As typed (kubelogin's name too), each with what to use instead.
    assert_eq!(
        found,
        [
            (
                "--client-secret",
                "--client-secret-file or the KUBECRED_CLIENT_SECRET environment variable"
            ),
            (
                "--oidc-client-secret",
                "--client-secret-file or the KUBECRED_CLIENT_SECRET environment variable"
            ),
            (
                "--password",
                "--password-file or the KUBECRED_PASSWORD environment variable"
            ),
        ]
    );
}

#[test]
fn auto_is_marked_so_that_it_can_refuse_without_a_terminal() {
    let env = Environment::default();
    assert!(resolve_ci(&[], &env).unwrap().grant_is_automatic);
    assert!(
        !resolve_ci(&["--grant-type=authcode"], &env)
            .unwrap()
            .grant_is_automatic
    );
}

#[test]
fn an_https_callback_takes_the_certificate_and_key_together() {
    let resolve = |extra: &[&str]| {
        let mut argv = vec!["--issuer-url=https://idp", "--client-id=c"];
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
    };
    let tls = resolve(&["--local-server-cert=/c.pem", "--local-server-key=/k.pem"]).unwrap();
    assert_eq!(
        tls.login.callback_tls,
        Some(CallbackTls {
            cert: "/c.pem".into(),
            key: "/k.pem".into()
        })
    );
    assert_eq!(tls.login.redirect.as_str(), "https://localhost/callback");
    // kubelogin's hostname form keeps the scheme.
    let pinned = resolve(&[
        "--local-server-cert=/c.pem",
        "--local-server-key=/k.pem",
        "--oidc-redirect-url-hostname=127.0.0.1",
    ])
    .unwrap();
    assert_eq!(pinned.login.redirect.as_str(), "https://127.0.0.1/callback");
    for (extra, expected) in [
        (
            &["--local-server-cert=/c.pem"][..],
            "go together: give both",
        ),
        (&["--local-server-key=/k.pem"][..], "go together: give both"),
        (
            &[
                "--local-server-cert=/c.pem",
                "--local-server-key=/k.pem",
                "--redirect-url=http://localhost/callback",
            ][..],
            "must be https on localhost",
        ),
        (
            &["--redirect-url=https://localhost/callback"][..],
            "https needs --local-server-cert",
        ),
    ] {
        let err = resolve(extra).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        assert!(format!("{err:#}").contains(expected), "{extra:?}: {err:#}");
    }
    // Without them: plain http, as before.
    assert_eq!(
        resolve(&[]).unwrap().login.redirect.as_str(),
        "http://localhost/callback"
    );
}

#[test]
fn request_headers_are_checked_and_never_echoed() {
    let resolve = |extra: &[&str]| {
        let mut argv = vec!["--issuer-url=https://idp", "--client-id=c"];
        argv.extend_from_slice(extra);
        Config::resolve(&args(&argv), &Environment::default(), ExecInfo::absent())
    };
    let config = resolve(&[
        "--request-header=Origin=http://localhost",
        "--request-header=X-Api-Key=s3cret-key,X-Tenant=a",
        "--request-header=Accept-Language=en, de",
        "--oidc-request-header=X-From-Kubelogin=1",
    ])
    .unwrap();
    let headers: Vec<(&str, &str)> = config
        .http
        .request_headers
        .iter()
        .map(|h| (h.name.as_str(), h.value.expose()))
        .collect();
    assert_eq!(
        headers,
        [
            ("Origin", "http://localhost"),
            ("X-Api-Key", "s3cret-key"),
            ("X-Tenant", "a"),
            ("Accept-Language", "en, de"),
            ("X-From-Kubelogin", "1"),
        ]
    );
    assert!(!format!("{config:?}").contains("s3cret-key"));
    for (bad, expected) in [
        ("X-Api-Key: s3cret-key", "NAME=VALUE, not NAME: VALUE"),
        ("Bad Name=s3cret-key", "is not a header name"),
        ("Host=s3cret-key", "kubecred writes this header itself"),
        ("X-Api-Key=s3cret-kéy", "characters a header cannot carry"),
        (
            "X-Api-Key=s3cret\u{7}key",
            "characters a header cannot carry",
        ),
    ] {
        let flag = format!("--request-header={bad}");
        let err = resolve(&[&flag]).unwrap_err();
        let message = format!("{err:#}");
        assert_eq!(exit_code_of(&err), Exit::Input);
        assert!(message.contains(expected), "{bad}: {message}");
        assert!(!message.contains("s3cret"), "{message}");
    }
}
