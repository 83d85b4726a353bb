//! The paste fallback with real parts: kubecred's stdin is a real terminal (a pseudo-terminal
//! this test holds the other end of), the test bed's OpenID Provider issues the code, and headless
//! Chromium (`browser.mjs --action copy`) signs in and hands back the callback URL without letting
//! it reach kubecred, like a browser on another machine whose address bar the user copies.
//! Covered: the redirect URL or the bare code pasted while the listener waits, a pasted URL of
//! another login refused without ending the wait, `--grant-type authcode-keyboard`, and stdin left
//! alone unless it is a terminal *and* client-go said the session is interactive.

#![cfg(target_os = "linux")]

use crate::support::terminal::{Running, Stdin, URL_WAIT, copy_callback_url};
use crate::support::*;
use std::time::{Duration, Instant};
use url::Url;

/// How long kubecred may take to finish once the paste is in (or its own timeout is due).
const EXIT_WAIT: Duration = Duration::from_secs(60);
/// The logins' own bound: generous, the test's waits above end a stuck run first.
const AUTH_TIMEOUT: &str = "--auth-timeout=120s";

fn param(url: &Url, name: &str) -> String {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

/// `url` with the parameter `name` set to `value` (the others kept, in order).
fn with_param(url: &Url, name: &str, value: &str) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(key, old)| {
            let new = if key == name {
                value.into()
            } else {
                old.into()
            };
            (key.into_owned(), new)
        })
        .collect();
    let mut changed = url.clone();
    changed.query_pairs_mut().clear().extend_pairs(pairs);
    changed
}

/// `authcode_args` for a session whose browser is elsewhere: the URL is printed, not opened.
fn paste_args(bed: &Testbed, grant: &str) -> Vec<String> {
    let mut args = authcode_args(bed);
    args.retain(|arg| !arg.starts_with("--browser-command") && !arg.starts_with("--grant-type"));
    args.push(format!("--grant-type={grant}"));
    args.push("--skip-open-browser".into());
    args
}

/// One code exchanged, and the credential is alice's.
#[track_caller]
fn assert_logged_in_as_alice(bed: &Testbed, run: &Run) {
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    let stats = bed.stats();
    assert_eq!(stats["token"]["authorization_code"], 1, "{stats}");
    assert_eq!(stats["token"]["total"], 1, "{stats}");
}

#[test]
fn the_redirect_url_pasted_in_the_terminal_completes_the_login() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let login_url = kubecred.login_url();
    kubecred.stderr_line_with("paste the code (or the whole URL", URL_WAIT);
    let callback = copy_callback_url(&login_url);
    kubecred.assert_still_waiting(&bed);
    assert_eq!(param(&callback, "state"), param(&login_url, "state"));
    kubecred.paste(callback.as_str());
    let run = kubecred
        .finish(EXIT_WAIT)
        .success()
        .never_shows(&[&param(&callback, "code")]);
    assert_logged_in_as_alice(&bed, &run);
    // The token is cached like after any login.
    env.kubecred_owned(&paste_args(&bed, "authcode"))
        .run()
        .success();
    assert_eq!(bed.total_token_requests(), 1);
}

#[test]
fn the_bare_code_pasted_in_the_terminal_completes_the_login() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let callback = copy_callback_url(&kubecred.login_url());
    kubecred.assert_still_waiting(&bed);
    let code = param(&callback, "code");
    // Pasted with the stray blanks a terminal copy brings along.
    kubecred.paste(&format!("  {code} "));
    let run = kubecred.finish(EXIT_WAIT).success().never_shows(&[&code]);
    assert_logged_in_as_alice(&bed, &run);
}

#[test]
fn a_pasted_url_of_another_login_is_refused_and_the_wait_goes_on() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let callback = copy_callback_url(&kubecred.login_url());
    kubecred.assert_still_waiting(&bed);
    // The real code under a state this login did not send: it must not be exchanged.
    kubecred.paste(with_param(&callback, "state", "not-this-logins-state").as_str());
    kubecred.stderr_line_with("refused the pasted text", EXIT_WAIT);
    kubecred.assert_still_waiting(&bed);
    // The listener still waits, and the right URL completes the login.
    kubecred.paste(callback.as_str());
    let run = kubecred
        .finish(EXIT_WAIT)
        .success()
        .stderr_contains("its state is not the one this login sent")
        .never_shows(&[&param(&callback, "code")]);
    assert_logged_in_as_alice(&bed, &run);
}

#[test]
fn authcode_keyboard_takes_the_pasted_code() {
    if !have(Need::Browser) {
        return;
    }
    // No listener: the redirect is http://localhost/callback (any port is fine for a native
    // client), where nothing answers; the user copies the code from the browser.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode-keyboard"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let login_url = kubecred.login_url();
    assert_eq!(
        param(&login_url, "redirect_uri"),
        "http://localhost/callback"
    );
    let callback = copy_callback_url(&login_url);
    kubecred.assert_still_waiting(&bed);
    let code = param(&callback, "code");
    kubecred.paste(&code);
    let run = kubecred
        .finish(EXIT_WAIT)
        .success()
        .stderr_contains("paste the code")
        .never_shows(&[&code]);
    assert_logged_in_as_alice(&bed, &run);
}

#[test]
fn authcode_keyboard_prints_the_url_and_opens_no_browser_here() {
    // A display and a launcher this machine could open a tab with: authcode-keyboard's person
    // is elsewhere, and a tab here would end on a redirect nothing answers.
    use std::os::unix::fs::PermissionsExt;
    let bed = Testbed::start();
    let env = TestEnv::new();
    let launchers = env.dir.path().join("launchers");
    std::fs::create_dir_all(&launchers).unwrap();
    let opened = env.dir.path().join("xdg-open-ran");
    let xdg_open = launchers.join("xdg-open");
    std::fs::write(
        &xdg_open,
        format!("#!/bin/sh\necho \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&xdg_open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut args = authcode_args(&bed);
    args.retain(|arg| !arg.starts_with("--browser-command") && !arg.starts_with("--grant-type"));
    args.push("--grant-type=authcode-keyboard".into());
    args.push(AUTH_TIMEOUT.into());
    let mut cmd = env.kubecred_owned(&args);
    cmd.env("DISPLAY", ":0").env(
        "PATH",
        format!("{}:{}", launchers.display(), std::env::var("PATH").unwrap()),
    );
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let login_url = kubecred.login_url();
    assert!(param(&login_url, "state").len() > 10, "{login_url}");
    // The relayed login is offered instead (then the prompt, which ends no line).
    kubecred.stderr_line_with("or, where a browser and kubecred are, run: ", URL_WAIT);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!opened.exists(), "authcode-keyboard opened a browser here");
    kubecred.assert_still_waiting(&bed);
}

#[test]
fn authcode_keyboard_takes_the_pasted_url_and_refuses_another_logins() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode-keyboard"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let callback = copy_callback_url(&kubecred.login_url());
    kubecred.assert_still_waiting(&bed);
    kubecred.paste(with_param(&callback, "state", "not-this-logins-state").as_str());
    kubecred.stderr_line_with("refused the pasted text", EXIT_WAIT);
    kubecred.paste(callback.as_str());
    let run = kubecred
        .finish(EXIT_WAIT)
        .success()
        .never_shows(&[&param(&callback, "code")]);
    assert_logged_in_as_alice(&bed, &run);
}

#[test]
fn pasted_lines_of_another_login_or_version_are_set_aside_and_say_why() {
    // No browser: the lines are made up, as a person pasting the wrong one would bring them.
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode"));
    cmd.arg(AUTH_TIMEOUT);
    let mut kubecred = Running::start(cmd, Stdin::Terminal, true);
    let login_url = kubecred.login_url();
    let redirect = param(&login_url, "redirect_uri");
    let relay_line = |state: &str, redirect: &str| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("state", state)
            .append_pair("code", "a-code")
            .append_pair("redirect_uri", redirect)
            .append_pair("iss", &bed.issuer);
        format!("kubecred-relay:v1?{}", query.finish())
    };
    let state = param(&login_url, "state");
    let mut said_to = |pasted: &str| {
        kubecred.paste(pasted);
        kubecred.stderr_line_with("the pasted text", URL_WAIT)
    };
    assert_eq!(
        said_to("kubecred-relay:v2?state=s&code=c"),
        "kubecred: ignored the pasted text: it is a relay line of version \"v2\", and this kubecred reads v1; run the same kubecred version on both machines; still waiting for this login"
    );
    assert_eq!(
        said_to(&relay_line(&state, "http://localhost:49152/other")),
        format!(
            "kubecred: ignored the pasted text: its redirect_uri \"http://localhost:49152/other\" is not this login's ({redirect}) with another port: the line was printed for another login; still waiting for this login"
        )
    );
    assert_eq!(
        said_to(&relay_line(
            "another-login",
            "http://localhost:49152/callback"
        )),
        "kubecred: refused the pasted text: its state is not the one this login sent (it belongs to another login, or is forged); still waiting for this login"
    );
    kubecred.assert_still_waiting(&bed);
}

/// Writes, as soon as the login URL is out, a line that would end the login if kubecred read it:
/// this login's state with a made-up code, which the provider refuses (exit 3). Unread, the
/// login times out (exit 4) without a token request.
fn paste_is_ignored(stdin: Stdin, interactive: bool) {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut cmd = env.kubecred_owned(&paste_args(&bed, "authcode"));
    cmd.arg("--auth-timeout=3s");
    let started = Instant::now();
    let mut kubecred = Running::start(cmd, stdin, interactive);
    let login_url = kubecred.login_url();
    let redirect = Url::parse(&param(&login_url, "redirect_uri")).unwrap();
    let state = param(&login_url, "state");
    kubecred.paste(&format!("{redirect}?code=made-up-code-4711&state={state}"));
    kubecred.paste("made-up-code-4712");
    let run = kubecred
        .finish(EXIT_WAIT)
        .failure(4)
        .stderr_contains("no login completed within 3s");
    for offered_or_read in ["or paste the code", "the pasted text"] {
        assert!(
            !run.stderr().contains(offered_or_read),
            "no paste may be offered or read: {}",
            run.stderr()
        );
    }
    assert!(started.elapsed() < EXIT_WAIT);
    assert_eq!(bed.total_token_requests(), 0, "{}", bed.stats());
}

#[test]
fn stdin_that_is_not_a_terminal_is_never_read() {
    paste_is_ignored(Stdin::Pipe, true);
}

#[test]
fn a_terminal_is_not_read_unless_client_go_says_the_session_is_interactive() {
    paste_is_ignored(Stdin::Terminal, false);
}

/// `kubectl … &` from an interactive shell: the plugin gets the terminal as stdin but runs in a
/// background process group, where reading the terminal would stop it (SIGTTIN) in the middle
/// of the login. kubecred must not read it: the login times out normally instead of freezing.
#[test]
fn a_background_job_does_not_read_the_terminal() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut args = authcode_args(&bed);
    args.retain(|arg| !arg.starts_with("--browser-command"));
    args.push("--skip-open-browser".into());
    args.push("--auth-timeout=3s".into());
    args.push(format!("--cache-dir={}", env.cache_dir().display()));
    let command_line = std::iter::once(kubecred_bin().display().to_string())
        .chain(args)
        .map(|word| format!("'{word}'"))
        .collect::<Vec<_>>()
        .join(" ");
    // `script` gives the shell a controlling terminal; `set -m` puts the job in a process group
    // of its own, in the background. After 10 s a stopped job is reported and killed.
    let shell = format!(
        "set -m; {command_line} >/dev/null 2>&1 & pid=$!; for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; \
         if kill -0 $pid 2>/dev/null; then echo STILL-RUNNING; kill -9 $pid; else wait $pid; echo exit=$?; fi"
    );
    let run = env
        .kubecred(&[])
        .env("KUBERNETES_EXEC_INFO", exec_info(V1, true))
        .run_script_in_terminal(&shell);
    assert!(
        run.contains("exit=4"),
        "expected the login to time out with exit 4: {run}"
    );
}

trait InTerminal {
    fn run_script_in_terminal(&mut self, shell: &str) -> String;
}

impl InTerminal for std::process::Command {
    /// Runs `shell` under util-linux `script` (a new session whose controlling terminal is a
    /// pty), with this command's environment; returns what the shell printed.
    fn run_script_in_terminal(&mut self, shell: &str) -> String {
        let mut script = std::process::Command::new("script");
        script.env_clear();
        for (key, value) in self.get_envs() {
            if let Some(value) = value {
                script.env(key, value);
            }
        }
        let output = script
            .args(["-q", "-e", "-c"])
            .arg(format!("bash -c {}", shell_quote(shell)))
            .arg("/dev/null")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running util-linux script");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
