//! The CLIs' arguments, answers and failures, with stand-in `az` and `azd` scripts on a PATH of
//! the test's own (unix: the scripts are shell).

use super::*;
use crate::error::{exit_code_of, one_line};
use chrono::FixedOffset;

const NOW: i64 = 1_800_000_000;

fn az_settings() -> AzureCliSettings {
    AzureCliSettings {
        scope: super::super::AKS_SCOPE.into(),
        tenant_id: None,
        subscription: None,
        timeout: Duration::from_secs(20),
    }
}

#[test]
fn the_azure_cli_gets_azure_identitys_arguments() {
    assert_eq!(
        azure_cli_args(&az_settings()),
        [
            "account",
            "get-access-token",
            "--output",
            "json",
            "--resource",
            "6dae42f8-4368-4678-94ff-3960e28e3630"
        ]
    );
    let settings = AzureCliSettings {
        tenant_id: Some("t-1".into()),
        subscription: Some("s-1".into()),
        ..az_settings()
    };
    assert_eq!(
        azure_cli_args(&settings)[5..],
        [
            "6dae42f8-4368-4678-94ff-3960e28e3630",
            "--tenant",
            "t-1",
            "--subscription",
            "s-1"
        ]
    );
    let azd = DeveloperCliSettings {
        scope: super::super::AKS_SCOPE.into(),
        tenant_id: Some("t-1".into()),
        timeout: Duration::from_secs(1),
    };
    assert_eq!(
        developer_cli_args(&azd),
        [
            "auth",
            "token",
            "--output",
            "json",
            "--no-prompt",
            "--scope",
            super::super::AKS_SCOPE,
            "--tenant-id",
            "t-1"
        ]
    );
}

#[test]
fn the_expiry_is_expires_on_else_expires_on_in_local_time() {
    let utc_plus_2 = |naive: NaiveDateTime| {
        FixedOffset::east_opt(2 * 3600)
            .unwrap()
            .from_local_datetime(&naive)
            .single()
            .map(|t| t.with_timezone(&Utc))
    };
    let (token, at) = parse_azure_cli_answer(
        br#"{"accessToken":"tok","expiresOn":"2027-01-15 10:00:00.000000","expires_on":1800003600,"tokenType":"Bearer"}"#,
        &utc_plus_2,
    )
    .unwrap();
    assert_eq!(token.expose(), "tok");
    assert_eq!(at.timestamp(), 1_800_003_600);
    // A string of epoch seconds is taken as azure-identity's int() takes it.
    let (_, at) = parse_azure_cli_answer(
        br#"{"accessToken":"t","expires_on":"1800003600"}"#,
        &utc_plus_2,
    )
    .unwrap();
    assert_eq!(at.timestamp(), 1_800_003_600);
    // An older CLI: only the local time, with or without microseconds.
    for text in ["2027-01-15 10:00:00.500000", "2027-01-15 10:00:00"] {
        let body = format!(r#"{{"accessToken":"t","expiresOn":"{text}"}}"#);
        let (_, at) = parse_azure_cli_answer(body.as_bytes(), &utc_plus_2).unwrap();
        assert_eq!(
            at.format("%Y-%m-%d %H:%M:%S").to_string(),
            "2027-01-15 08:00:00",
            "{text}"
        );
    }
    for (body, line) in [
        (
            &b"Please run az login"[..],
            "the Azure CLI's answer is not the JSON of `az account get-access-token`; update the Azure CLI (az upgrade)",
        ),
        (
            br#"{"accessToken":"t"}"#,
            "the Azure CLI's answer has no expiry kubecred can read (expires_on, expiresOn); update the Azure CLI (az upgrade)",
        ),
        (
            br#"{"accessToken":"","expires_on":1}"#,
            "the Azure CLI's answer has an empty accessToken; update the Azure CLI (az upgrade)",
        ),
    ] {
        let err = parse_azure_cli_answer(body, &utc_plus_2).unwrap_err();
        assert_eq!(one_line(&err), line);
        assert_eq!(exit_code_of(&err), Exit::Provider);
    }
}

#[test]
fn azd_answers_in_utc() {
    let (token, at) =
        parse_developer_cli_answer(br#"{"token":"tok","expiresOn":"2027-01-15T10:00:00Z"}"#)
            .unwrap();
    assert_eq!(token.expose(), "tok");
    assert_eq!(at.timestamp(), NOW + 7200);
    assert!(parse_developer_cli_answer(br#"{"token":"t","expiresOn":"soon"}"#).is_err());
}

#[test]
fn errors_name_entras_code_and_the_next_step() {
    assert_eq!(
        aadsts_code("ERROR: AADSTS53003: Access has been blocked").as_deref(),
        Some("AADSTS53003")
    );
    assert_eq!(aadsts_code("no code here"), None);
    assert_eq!(
        cli_said(
            "WARNING: x\nERROR: AADSTS53003: Blocked. Trace ID: 1 Correlation ID: 2\nmore",
            "ERROR:"
        ),
        "ERROR: AADSTS53003: Blocked."
    );
    assert_eq!(
        azd_message("{\"type\":\"consoleMessage\",\"data\":{\"message\":\"\"}}\n{\"error\":\"not logged in, run `azd auth login` to login\"}").as_deref(),
        Some("not logged in, run `azd auth login` to login")
    );
    assert_eq!(
        azd_message("{\"type\":\"consoleMessage\",\"data\":{\"message\":\"ERROR: failed\"}}")
            .as_deref(),
        Some("ERROR: failed")
    );
}

#[cfg(unix)]
mod stand_ins {
    use super::*;
    use crate::error::is_transient;
    use base64::Engine;
    use std::os::unix::fs::PermissionsExt;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(NOW, 0).unwrap()
    }

    fn jwt(claims: &str) -> String {
        let encode = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
        format!("{}.{}.sig", encode(r#"{"alg":"RS256"}"#), encode(claims))
    }

    /// A directory with an executable `name` script, for PATH.
    fn script(dir: &Path, name: &str, body: &str) {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn env_with_path(dir: &Path) -> impl Fn(&str) -> Option<String> + use<> {
        let path = dir.display().to_string();
        move |name: &str| (name == "PATH").then(|| path.clone())
    }

    #[test]
    fn az_runs_with_its_arguments_in_bin_without_stdin_and_without_colour() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        let token = jwt(r#"{"upn":"alice@contoso.com","oid":"o-1"}"#);
        script(
            dir.path(),
            "az",
            &format!(
                r#"{{ printf '%s\n' "$@"; pwd; echo "color=$AZURE_CORE_NO_COLOR"; if read line; then echo stdin=data; else echo stdin=eof; fi; }} > {record}
echo '{{"accessToken":"{token}","expires_on":{exp},"tokenType":"Bearer"}}'"#,
                record = record.display(),
                exp = NOW + 3600
            ),
        );
        let settings = AzureCliSettings {
            tenant_id: Some("contoso.onmicrosoft.com".into()),
            ..az_settings()
        };
        let got = azure_cli_token(&settings, &env_with_path(dir.path()), now()).unwrap();
        assert_eq!(got.token.expose(), token);
        assert_eq!(got.expires_at.timestamp(), NOW + 3600);
        assert_eq!(got.who.as_deref(), Some("alice@contoso.com (object o-1)"));
        // /bin as the shell finds it (a link to /usr/bin where /usr is merged).
        let bin = std::fs::canonicalize("/bin").unwrap();
        assert_eq!(
            std::fs::read_to_string(&record).unwrap(),
            format!(
                "account\nget-access-token\n--output\njson\n--resource\n6dae42f8-4368-4678-94ff-3960e28e3630\n--tenant\ncontoso.onmicrosoft.com\n{}\ncolor=true\nstdin=eof\n",
                bin.display()
            )
        );
    }

    fn az_failure(stderr: &str, code: i32) -> anyhow::Error {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stderr");
        std::fs::write(&file, stderr).unwrap();
        script(
            dir.path(),
            "az",
            &format!("cat {} >&2; exit {code}", file.display()),
        );
        azure_cli_token(&az_settings(), &env_with_path(dir.path()), now()).unwrap_err()
    }

    #[test]
    fn each_failure_of_az_is_one_line_with_its_exit_code() {
        let err = az_failure("ERROR: Please run 'az login' to setup account.\n", 1);
        assert_eq!(
            one_line(&err),
            "the Azure CLI is not logged in (ERROR: Please run 'az login' to setup account.); run `az login`, then retry"
        );
        assert_eq!(exit_code_of(&err), Exit::Login);
        assert!(is_transient(&err));

        let err = az_failure(
            "ERROR: AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance. Trace ID: abc Correlation ID: def Timestamp: 2026-11-28\nInteractive authentication is needed. Please run:\naz login --scope 6dae42f8-4368-4678-94ff-3960e28e3630/.default\n",
            1,
        );
        assert_eq!(
            one_line(&err),
            "Entra ID refused the Azure CLI a token for 6dae42f8-4368-4678-94ff-3960e28e3630/.default: ERROR: AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance.; the tenant's Conditional Access does not allow this session or device: ask its administrators, or sign in with `az login` on a device the policy admits"
        );
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(!is_transient(&err));

        let err = az_failure(
            "ERROR: AADSTS700082: The refresh token has expired due to inactivity.\nTo re-authenticate, please run:\naz login --scope x\n",
            1,
        );
        assert_eq!(
            one_line(&err),
            "the Azure CLI's login cannot give a token for 6dae42f8-4368-4678-94ff-3960e28e3630/.default without signing in again (ERROR: AADSTS700082: The refresh token has expired due to inactivity.); run `az login --scope 6dae42f8-4368-4678-94ff-3960e28e3630/.default`, then retry"
        );
        assert_eq!(exit_code_of(&err), Exit::Login);

        let err = az_failure("", 127);
        assert_eq!(
            one_line(&err),
            "the Azure CLI (az) is not installed here (not found on PATH); install it (https://aka.ms/installazurecli) and sign in with it, or choose another --grant-type"
        );
        assert_eq!(exit_code_of(&err), Exit::Input);

        let err = az_failure("ERROR: The command failed with an unexpected error.\n", 2);
        assert_eq!(
            one_line(&err),
            "`az account get-access-token` failed (exit 2): ERROR: The command failed with an unexpected error."
        );
        assert_eq!(exit_code_of(&err), Exit::Provider);
    }

    #[test]
    fn an_az_not_on_path_is_not_installed() {
        let dir = tempfile::tempdir().unwrap();
        let err = azure_cli_token(&az_settings(), &env_with_path(dir.path()), now()).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
        assert!(one_line(&err).starts_with("the Azure CLI (az) is not installed here"));
        // A file that is not executable is not the CLI either (shutil.which's rule).
        std::fs::write(dir.path().join("az"), "#!/bin/sh\n").unwrap();
        let err = azure_cli_token(&az_settings(), &env_with_path(dir.path()), now()).unwrap_err();
        assert!(one_line(&err).starts_with("the Azure CLI (az) is not installed here"));
    }

    #[test]
    fn an_az_that_hangs_is_killed_with_its_children_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child.pid");
        // A child that outlives az unless the whole group is killed.
        script(
            dir.path(),
            "az",
            &format!("sleep 30 & echo $! > {}; wait", pid_file.display()),
        );
        let settings = AzureCliSettings {
            timeout: Duration::from_millis(300),
            ..az_settings()
        };
        let started = Instant::now();
        let err = azure_cli_token(&settings, &env_with_path(dir.path()), now()).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            one_line(&err),
            "the Azure CLI (az) did not answer within 300ms; it may be waiting on the network or a lock of its own: try it yourself, or give it more time (the timeout setting)"
        );
        assert_eq!(exit_code_of(&err), Exit::Provider);
        assert!(is_transient(&err));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild is gone (or a zombie of init's, briefly): signal 0 finds no live one.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let alive = unsafe { libc::kill(pid, 0) } == 0
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ");
            if !alive {
                break;
            }
            assert!(Instant::now() < deadline, "the sleep {pid} survived");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn an_expired_token_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        script(
            dir.path(),
            "az",
            &format!(r#"echo '{{"accessToken":"t","expires_on":{NOW}}}'"#),
        );
        let err = azure_cli_token(&az_settings(), &env_with_path(dir.path()), now()).unwrap_err();
        assert_eq!(
            one_line(&err),
            "the Azure CLI handed out a token that expired at 2027-01-15 08:00:00 UTC; check this machine's clock and time zone"
        );
    }

    #[test]
    fn azd_runs_with_its_arguments_and_says_when_it_is_not_logged_in() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        script(
            dir.path(),
            "azd",
            &format!(
                r#"{{ printf '%s\n' "$@"; echo "color=$NO_COLOR"; }} > {}
echo '{{"token":"tok","expiresOn":"2027-01-15T09:00:00Z"}}'"#,
                record.display()
            ),
        );
        let settings = DeveloperCliSettings {
            scope: super::super::super::AKS_SCOPE.into(),
            tenant_id: None,
            timeout: Duration::from_secs(20),
        };
        let got = developer_cli_token(&settings, &env_with_path(dir.path()), now()).unwrap();
        assert_eq!(got.token.expose(), "tok");
        assert_eq!(got.expires_at.timestamp(), NOW + 3600);
        assert_eq!(
            std::fs::read_to_string(&record).unwrap(),
            "auth\ntoken\n--output\njson\n--no-prompt\n--scope\n6dae42f8-4368-4678-94ff-3960e28e3630/.default\ncolor=true\n"
        );
        script(
            dir.path(),
            "azd",
            r#"echo '{"error":"not logged in, run `azd auth login` to login"}' >&2; exit 1"#,
        );
        let err = developer_cli_token(&settings, &env_with_path(dir.path()), now()).unwrap_err();
        assert_eq!(
            one_line(&err),
            "the Azure Developer CLI is not logged in (not logged in, run `azd auth login` to login); run `azd auth login`, then retry"
        );
        assert_eq!(exit_code_of(&err), Exit::Login);
    }
}
