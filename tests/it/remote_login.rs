//! Logins where developers actually sit. An SSH session in a terminal (a pseudo-terminal,
//! `SSH_CONNECTION`/`SSH_TTY` set, no display) gets the device flow by itself, approved in headless
//! Chromium "on the laptop"; the same session at a provider without the device flow gets the
//! browser login with the paste prompt. A client the provider refuses the device flow (at the
//! start, or at the poll after the sign-in, as Conditional Access does) goes on with the pasted
//! login, and the next login goes straight there; the relayed login runs a second kubecred
//! "on the laptop" (another HOME) that takes the redirect and prints the line pasted back. In WSL, stand-ins for `wslview`, `cmd.exe`,
//! `powershell.exe` and `explorer.exe` on PATH record their arguments and read them the way the
//! real program would (cmd's `%VAR%` expansion, carets and `&`; PowerShell's -EncodedCommand and
//! quotes) before handing the URL to Chromium: each login completes only if the whole URL got
//! through. An https callback (`--local-server-cert`) completes a login at a client that accepts
//! only `https://localhost:PORT/callback`, in a Chromium that trusts that certificate's key and
//! no other.

#![cfg(target_os = "linux")]

use crate::support::terminal::{Running, Stdin, URL_WAIT, copy_callback_url};
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const V1: &str = "client.authentication.k8s.io/v1";
/// How long kubecred may take to finish once the browser is done (or its own timeout is due).
const EXIT_WAIT: Duration = Duration::from_secs(90);

/// `get-token` with `--grant-type auto` (the default) on a terminal in an SSH session from
/// 192.0.2.10, as sshd sets it up (and no display: the test's environment has none).
fn in_ssh_session(env: &TestEnv, bed: &Testbed) -> Running {
    in_ssh_session_with(env, bed, &[&format!("--client-id={PUBLIC_CLIENT}")])
}

/// [`in_ssh_session`] with `extra` arguments (the client, the grant).
fn in_ssh_session_with(env: &TestEnv, bed: &Testbed, extra: &[&str]) -> Running {
    let mut command = env.kubecred(&[
        "get-token",
        &format!("--issuer-url={}", bed.issuer),
        "--listen-address=127.0.0.1:0",
        "--auth-timeout=120s",
    ]);
    command
        .args(extra)
        .env("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.20 22")
        .env("SSH_CLIENT", "192.0.2.10 50022 22")
        .env("SSH_TTY", "/dev/pts/3");
    Running::start(command, Stdin::Terminal, true)
}

/// `browser.mjs` approving `url` as alice, as the user's laptop browser would; waits for it.
fn approve_elsewhere(url: &str) {
    let output = Command::new("node")
        .arg(repo_root().join("tests/support/browser.mjs"))
        .args(["--login", "alice", url])
        .stdin(Stdio::null())
        .output()
        .expect("running node tests/support/browser.mjs");
    assert!(
        output.status.success(),
        "browser.mjs {url}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn an_ssh_session_in_a_terminal_gets_the_device_flow_by_itself() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let mut kubecred = in_ssh_session(&env, &bed);
    let why = kubecred.stderr_line_with("so --grant-type auto uses the device flow", URL_WAIT);
    assert_eq!(
        why,
        format!(
            "kubecred: no browser can open here (an SSH session, DISPLAY and WAYLAND_DISPLAY unset), so --grant-type auto uses the device flow, which {} offers; pass --grant-type authcode-keyboard (paste the code) or authcode to choose otherwise",
            bed.issuer
        )
    );
    let line = kubecred.stderr_line_with("to log in, open ", URL_WAIT);
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    approve_elsewhere(url);
    let run = kubecred.finish(EXIT_WAIT).success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    // No second line about opening a browser that cannot open.
    assert!(
        !run.stderr().contains("could not open a browser"),
        "{}",
        run.stderr()
    );
    let stats = bed.stats();
    assert_eq!(stats["device_authorization"], 1, "{stats}");
    assert_eq!(stats["authorization"], 0, "{stats}");
}

#[test]
fn an_ssh_session_at_a_provider_without_the_device_flow_gets_the_paste_prompt() {
    let bed = Testbed::start_with(json!({
        "discoveryPatch": {"device_authorization_endpoint": null}
    }));
    let env = TestEnv::new();
    let mut kubecred = in_ssh_session(&env, &bed);
    kubecred.stderr_line_with("if it does not open, visit ", URL_WAIT);
    kubecred.stderr_line_with(
        "could not open a browser (an SSH session, DISPLAY and WAYLAND_DISPLAY unset)",
        URL_WAIT,
    );
    kubecred.stderr_line_with("paste the code (or the whole URL", URL_WAIT);
    assert_eq!(bed.stats()["device_authorization"], 0);
}

/// One program standing in for a WSL launcher: records its arguments and working directory,
/// reads the URL out of them the way the real program would, and hands it to Chromium
/// (detached, as the real ones return at once).
const STAND_IN: &str = r#"#!/usr/bin/env python3
import base64, json, os, re, subprocess, sys

program = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps({"program": program, "args": args, "cwd": os.getcwd()}) + "\n")

def windows_command_line(words):
    # How WSL hands argv to a Windows program: a word is quoted only when it is empty or holds
    # a blank or a quote.
    return " ".join('"' + w.replace('"', '\\"') + '"' if (w == "" or re.search(r'[\s"]', w)) else w
                    for w in words)

def cmd_c(line):
    # cmd.exe /c: first %NAME% expansion, quotes or not: every two-character hex name is defined
    # here, so an unescaped %3A%..% in the URL would change it. Then, outside quotes, a caret
    # takes the next character literally and an unescaped & | < > ends the command.
    line = re.sub(r"%([0-9A-Fa-f]{2})%", "<EXPANDED>", line)
    out, quoted, i = "", False, 0
    while i < len(line):
        c = line[i]
        if c == '"':
            quoted = not quoted
        elif c == "^" and not quoted and i + 1 < len(line):
            i += 1
            out += line[i]
        elif c in "&|<>" and not quoted:
            break
        else:
            out += c
        i += 1
        continue
    return out

if program == "cmd.exe":
    command = cmd_c(windows_command_line(args))
    words = command.split(" ")
    assert words[0] == "/c" and words[1] == "start", words
    url = " ".join(words[2:])
elif program == "powershell.exe":
    script = base64.b64decode(args[args.index("-EncodedCommand") + 1]).decode("utf-16-le")
    url = re.fullmatch(r"Start-Process '((?:[^']|'')*)'", script).group(1).replace("''", "'")
else:  # wslview, explorer.exe: the URL as one argument
    url = args[0]
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps({"program": program, "url": url}) + "\n")
subprocess.Popen(["node", os.environ["BROWSER_MJS"], "--detach", url],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
"#;

/// The login URL kubecred printed before opening the browser.
fn printed_login_url(run: &Run) -> String {
    run.stderr()
        .lines()
        .find_map(|line| line.split("if it does not open, visit ").nth(1))
        .map(str::to_string)
        .expect("the login URL on stderr")
}

const WSL_LAUNCHERS: [&str; 4] = ["wslview", "cmd.exe", "powershell.exe", "explorer.exe"];

/// A directory holding stand-ins for `launchers`.
fn stand_ins(env: &TestEnv, launchers: &[&str]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.dir.path().join(format!("wsl-{}", launchers.join("-")));
    std::fs::create_dir_all(&dir).unwrap();
    for launcher in launchers {
        let path = dir.join(launcher);
        std::fs::write(&path, STAND_IN).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn log_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn wsl_launchers_each_hand_the_whole_url_to_the_browser() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    for (index, first) in WSL_LAUNCHERS.iter().enumerate() {
        // The launchers from this one on are installed: this one is tried first.
        let env = TestEnv::new();
        let dir = stand_ins(&env, &WSL_LAUNCHERS[index..]);
        let log = env.dir.path().join("stand-ins.log");
        let mut args = authcode_args(&bed);
        args.retain(|arg| !arg.starts_with("--browser-command"));
        args.push("-v".into());
        let run = run_bounded(
            env.kubecred_owned(&args)
                .env(
                    "PATH",
                    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()),
                )
                .env("WSL_DISTRO_NAME", "Ubuntu")
                .env("STAND_IN_LOG", &log)
                .env("BROWSER_MJS", repo_root().join("tests/support/browser.mjs")),
            EXIT_WAIT,
        )
        .success();
        assert_eq!(jwt_claims(&run.token())["sub"], "alice", "{first}");
        let lines = log_lines(&log);
        let called = &lines[0];
        assert_eq!(called["program"], *first, "{lines:?}");
        // The URL it read is the one kubecred printed, whole.
        let printed = printed_login_url(&run);
        assert!(printed.contains('&') && printed.contains('%'), "{printed}");
        assert_eq!(lines[1]["url"], printed, "{first}: {lines:?}");
        // Windows programs start in their own directory (cmd.exe refuses a UNC one).
        if first.ends_with(".exe") {
            assert_eq!(called["cwd"], dir.display().to_string(), "{lines:?}");
        }
        run.stderr_contains(&format!(
            "opening the login URL with {}",
            dir.join(first).display()
        ));
    }
    assert_eq!(bed.stats()["token"]["authorization_code"], 4);
}

/// A key and a self-signed certificate for localhost and 127.0.0.1 (openssl, as the test bed
/// makes its CA), and the base64 SHA-256 of its public key, which Chromium is told to trust.
fn callback_certificate(env: &TestEnv) -> (PathBuf, PathBuf, String) {
    let (cert, key) = (
        env.dir.path().join("callback-cert.pem"),
        env.dir.path().join("callback-key.pem"),
    );
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args([
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=kubecred test callback",
        ])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl req");
    let spki = Command::new("sh")
        .arg("-c")
        .arg("openssl x509 -pubkey -noout -in \"$0\" | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(spki.status.success(), "openssl spki hash");
    (
        cert,
        key,
        String::from_utf8(spki.stdout).unwrap().trim().to_string(),
    )
}

#[test]
fn an_https_callback_completes_a_login_at_a_client_that_takes_only_https() {
    if !have(Need::Browser) {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bed = Testbed::start_with(json!({"httpsCallbackPort": port}));
    let env = TestEnv::new();
    let (cert, key, spki) = callback_certificate(&env);
    let run = env
        .kubecred(&[
            "get-token",
            &format!("--issuer-url={}", bed.issuer),
            "--client-id=kubecred-https",
            "--grant-type=authcode",
            &format!("--listen-address=127.0.0.1:{port}"),
            &format!("--local-server-cert={}", cert.display()),
            &format!("--local-server-key={}", key.display()),
            &format!("--browser-command={}", browser_command()),
            "-v",
        ])
        .env("KUBERNETES_EXEC_INFO", exec_info(V1, false))
        .env("TESTBED_BROWSER_TRUST_SPKI", &spki)
        .run()
        .success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    let login_url = url::Url::parse(&printed_login_url(&run)).unwrap();
    let redirect = login_url
        .query_pairs()
        .find(|(name, _)| name == "redirect_uri")
        .map(|(_, value)| value.into_owned());
    assert_eq!(
        redirect.as_deref(),
        Some(format!("https://localhost:{port}/callback").as_str())
    );
    assert_eq!(bed.stats()["token"]["authorization_code"], 1);
}

/// The authorization URL of a browser login that could not open a browser here.
fn visit_url(kubecred: &mut Running) -> url::Url {
    let line = kubecred.stderr_line_with("if it does not open, visit ", URL_WAIT);
    let at = line.find("visit ").unwrap() + "visit ".len();
    url::Url::parse(&line[at..]).unwrap_or_else(|err| panic!("{line}: {err}"))
}

/// `kubecred login --remote-bootstrap` "on the laptop" (`laptop`: another HOME), with the
/// scripted browser and the URL as the person copied it; it must succeed.
fn relay_on(laptop: &TestEnv, login_url: &url::Url) -> Run {
    run_bounded(
        &mut laptop.kubecred(&[
            "login",
            "--remote-bootstrap",
            login_url.as_str(),
            &format!("--browser-command={}", browser_command()),
        ]),
        EXIT_WAIT,
    )
    .success()
}

/// A relay line's parameters, read as a URL's query.
fn relay_params(line: &str) -> url::Url {
    url::Url::parse(&line.replacen("kubecred-relay:v1", "x://relay/", 1)).unwrap()
}

fn param(url: &url::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Every regular file under `dir`, read as text (lossily), with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_under(&path));
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    found
}

#[test]
fn a_client_refused_the_device_flow_gets_the_pasted_login_and_keeps_it() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let env = TestEnv::new();
    let client = format!("--client-id={NO_DEVICE_CLIENT}");
    let mut kubecred = in_ssh_session_with(&env, &bed, &[&client]);
    let why = kubecred.stderr_line_with("refused the device flow", URL_WAIT);
    assert_eq!(
        why,
        format!(
            "kubecred: no browser can open here (an SSH session, DISPLAY and WAYLAND_DISPLAY unset), and {} refused the device flow for this client (invalid_request (urn:ietf:params:oauth:grant-type:device_code is not allowed for this client)): the provider does not allow this client the device flow; so --grant-type auto goes on with the browser login, the code pasted here (for the next 7 days too)",
            bed.issuer
        )
    );
    let login_url = visit_url(&mut kubecred);
    kubecred.stderr_line_with("paste the code (or the whole URL", URL_WAIT);
    let callback = copy_callback_url(&login_url);
    kubecred.assert_still_waiting(&bed);
    kubecred.paste(callback.as_str());
    let code = param(&callback, "code").unwrap();
    let run = kubecred.finish(EXIT_WAIT).success().never_shows(&[&code]);
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    // One line about the choice, not the device flow's announcement as well.
    assert_eq!(
        run.stderr().matches("--grant-type auto").count(),
        1,
        "{}",
        run.stderr()
    );
    let stats = bed.stats();
    assert_eq!(stats["device_authorization"], 1, "{stats}");
    assert_eq!(stats["authorization"], 1, "{stats}");
    assert_eq!(stats["token"]["authorization_code"], 1, "{stats}");
    assert_eq!(stats["token"]["total"], 1, "{stats}");

    // The next login goes straight to the pasted login: no device authorization request.
    env.kubecred(&["logout", &format!("--issuer-url={}", bed.issuer), &client])
        .run()
        .success();
    let mut again = in_ssh_session_with(&env, &bed, &[&client]);
    let line = again.stderr_line_with("refused the device flow", URL_WAIT);
    let expected_start = format!(
        "kubecred: no browser can open here (an SSH session, DISPLAY and WAYLAND_DISPLAY unset), and {} refused the device flow for this client ",
        bed.issuer
    );
    assert!(line.starts_with(&expected_start), "{line}");
    assert!(
        line.ends_with(" ago (invalid_request (urn:ietf:params:oauth:grant-type:device_code is not allowed for this client)), so --grant-type auto uses the browser login with the code pasted here; pass --grant-type device-code to try the device flow again"),
        "{line}"
    );
    again.stderr_line_with("paste the code (or the whole URL", URL_WAIT);
    assert_eq!(bed.stats()["device_authorization"], 1);
}

#[test]
fn the_relayed_login_takes_the_redirect_elsewhere_and_the_remote_redeems_the_code() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let remote_env = TestEnv::new();
    let client = format!("--client-id={NO_DEVICE_CLIENT}");
    let mut remote = in_ssh_session_with(&remote_env, &bed, &[&client]);
    let login_url = visit_url(&mut remote);
    let offer = remote.stderr_line_with("--remote-bootstrap", URL_WAIT);
    assert_eq!(
        offer,
        format!(
            "kubecred: or, where a browser and kubecred are, run: kubecred login --remote-bootstrap '{login_url}'"
        )
    );
    remote.stderr_line_with(
        "the line `kubecred login --remote-bootstrap` printed",
        URL_WAIT,
    );
    // The URL carries an S256 challenge, and never the verifier.
    assert_eq!(
        param(&login_url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(param(&login_url, "code_challenge").is_some_and(|c| c.len() >= 43));
    assert!(param(&login_url, "code_verifier").is_none(), "{login_url}");
    let remote_redirect = url::Url::parse(&param(&login_url, "redirect_uri").unwrap()).unwrap();

    // "The laptop": another HOME, the scripted browser, the URL as the person copied it.
    let laptop = TestEnv::new();
    let relay = relay_on(&laptop, &login_url).stderr_contains(
        "signed in; paste this line into the kubecred waiting on the remote machine",
    );
    let line = relay.stdout().trim().to_string();
    assert!(line.starts_with("kubecred-relay:v1?"), "{line}");
    assert_eq!(relay.stdout().lines().count(), 1, "{}", relay.stdout());
    // The remote holds its own port here (one machine plays both): the laptop moved on.
    relay.stderr_contains(&format!(
        "{remote_redirect} is in use here, so the browser is sent to"
    ));
    assert_eq!(bed.total_token_requests(), 0, "the laptop redeemed nothing");

    // A line of another login is refused, and the remote keeps waiting.
    let relayed = relay_params(&line);
    let state = param(&relayed, "state").unwrap();
    let foreign = line.replacen(&format!("state={state}"), "state=another-login", 1);
    remote.paste(&foreign);
    remote.stderr_line_with(
        "refused the pasted text: its state is not the one this login sent",
        URL_WAIT,
    );
    remote.assert_still_waiting(&bed);

    remote.paste(&line);
    let code = param(&relayed, "code").unwrap();
    let run = remote.finish(EXIT_WAIT).success().never_shows(&[&code]);
    let token = run.token();
    assert_eq!(jwt_claims(&token)["sub"], "alice");
    let stats = bed.stats();
    assert_eq!(stats["authorization"], 1, "{stats}");
    assert_eq!(stats["token"]["authorization_code"], 1, "{stats}");
    assert_eq!(stats["token"]["total"], 1, "{stats}");

    // Nothing of the login on the laptop: no token, no code, no cache entry.
    let entry = files_under(&remote_env.cache_dir().join("tokens"))
        .into_iter()
        .map(|(_, text)| serde_json::from_str::<Value>(&text).unwrap())
        .next()
        .expect("the remote's cache entry");
    let mut secrets = vec![token.clone(), code.clone()];
    for pointer in ["/id_token", "/access_token", "/refresh/refresh_token"] {
        let secret = entry.pointer(pointer).and_then(Value::as_str);
        secrets.push(
            secret
                .unwrap_or_else(|| panic!("{pointer} in {entry}"))
                .to_string(),
        );
    }
    for (path, text) in files_under(laptop.dir.path()) {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{} holds a secret",
                path.display()
            );
        }
    }
    assert!(!laptop.cache_dir().join("tokens").exists());
}

/// A redirect URI whose port is written with a leading zero (`http://localhost:0PORT/callback`)
/// goes through the relayed login as written: the laptop listens on that port, sends the
/// browser to the URL unchanged and relays the text as the remote wrote it, and the provider
/// sees that text at the authorization request and at the code exchange.
#[test]
fn the_relayed_login_keeps_a_port_written_with_a_leading_zero_as_written() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    let remote_env = TestEnv::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let written = format!("http://localhost:0{port}/callback");
    // The remote listens elsewhere (--listen-address, as at a port forward's other end), so
    // that the port is free "on the laptop", which is this machine too.
    let mut remote = in_ssh_session_with(
        &remote_env,
        &bed,
        &[
            &format!("--client-id={NO_DEVICE_CLIENT}"),
            &format!("--redirect-url={written}"),
        ],
    );
    let login_url = visit_url(&mut remote);
    assert_eq!(
        param(&login_url, "redirect_uri").as_deref(),
        Some(written.as_str())
    );
    remote.stderr_line_with(
        "the line `kubecred login --remote-bootstrap` printed",
        URL_WAIT,
    );

    let relay = relay_on(&TestEnv::new(), &login_url);
    assert!(
        !relay.stderr().contains("is in use here"),
        "{}",
        relay.stderr()
    );
    let line = relay.stdout().trim().to_string();
    let relayed = relay_params(&line);
    assert_eq!(
        param(&relayed, "redirect_uri").as_deref(),
        Some(written.as_str())
    );

    remote.paste(&line);
    let run = remote.finish(EXIT_WAIT).success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    assert_eq!(
        bed.redirect_uris_received(),
        [
            ("/auth".to_string(), written.clone()),
            ("/token".to_string(), written)
        ]
    );
}

#[test]
fn a_device_flow_refused_at_the_poll_says_so_and_auto_goes_on_with_the_pasted_login() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start_with(json!({"devicePollRefusal": {
        "error": "invalid_grant",
        "error_description": "AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance.",
        "error_codes": [53003],
    }}));
    let what = format!(
        "{} refused the device login after you signed in (invalid_grant (AADSTS53003: Access has been blocked by Conditional Access policies. The access policy does not allow token issuance.)): a Conditional Access policy blocks this sign-in (AADSTS53003), as one blocking the device code flow does",
        bed.issuer
    );

    // --grant-type device-code: the clear message, exit 4.
    let env = TestEnv::new();
    let mut kubecred = in_ssh_session_with(
        &env,
        &bed,
        &[
            &format!("--client-id={PUBLIC_CLIENT}"),
            "--grant-type=device-code",
        ],
    );
    let line = kubecred.stderr_line_with("to log in, open ", URL_WAIT);
    approve_elsewhere(device_url(&line));
    let run = kubecred.finish(EXIT_WAIT).failure(4);
    assert_eq!(
        run.stderr().lines().last().unwrap(),
        format!(
            "kubecred: error: {what}; log in with --grant-type auto or authcode-keyboard (the code pasted), or ask the provider's administrators to allow this client the device flow"
        )
    );

    // auto in the terminal: the same line as a notice, then the pasted login completes.
    bed.reset_stats();
    let env = TestEnv::new();
    let mut kubecred = in_ssh_session(&env, &bed);
    let line = kubecred.stderr_line_with("to log in, open ", URL_WAIT);
    approve_elsewhere(device_url(&line));
    let notice = kubecred.stderr_line_with("refused the device login", URL_WAIT);
    assert_eq!(
        notice,
        format!(
            "kubecred: {what}; so --grant-type auto goes on with the browser login, the code pasted here (for the next 7 days too)"
        )
    );
    let login_url = visit_url(&mut kubecred);
    kubecred.stderr_line_with("paste the code (or the whole URL", URL_WAIT);
    let callback = copy_callback_url(&login_url);
    kubecred.paste(callback.as_str());
    let run = kubecred.finish(EXIT_WAIT).success();
    assert_eq!(jwt_claims(&run.token())["sub"], "alice");
    let stats = bed.stats();
    assert_eq!(stats["device_authorization"], 1, "{stats}");
    assert_eq!(stats["token"]["authorization_code"], 1, "{stats}");
}

/// The verification URL on the device flow's "to log in, open …" line.
fn device_url(line: &str) -> &str {
    line.split_whitespace()
        .find(|word| word.starts_with("http"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
}

#[test]
fn a_refused_device_flow_with_no_terminal_to_paste_into_says_where_a_login_can_happen() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // A terminal kubectl did not hand over (interactiveMode Never): nothing can be pasted.
    let start = || {
        let mut command = env.kubecred(&[
            "get-token",
            &format!("--issuer-url={}", bed.issuer),
            &format!("--client-id={NO_DEVICE_CLIENT}"),
            "--listen-address=127.0.0.1:0",
        ]);
        command
            .env("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.20 22")
            .env("SSH_TTY", "/dev/pts/3");
        Running::start(command, Stdin::Terminal, false)
    };
    let where_to = "this session cannot take a pasted code (stdin is not a terminal kubectl handed over); run `kubecred login` with the same flags in a terminal, or set interactiveMode: IfAvailable in the kubeconfig's exec stanza";
    let run = start().finish(EXIT_WAIT).failure(3);
    assert_eq!(
        run.stderr(),
        format!(
            "kubecred: error: {} refused the device flow for the client {NO_DEVICE_CLIENT} (invalid_request (urn:ietf:params:oauth:grant-type:device_code is not allowed for this client)): the provider does not allow this client the device flow; no browser can open here (an SSH session, DISPLAY and WAYLAND_DISPLAY unset) and {where_to}\n",
            bed.issuer
        )
    );
    // Remembered: the next run asks the provider nothing and says the same at once.
    let run = start().finish(EXIT_WAIT).failure(4);
    let line = run.stderr();
    assert!(
        line.starts_with(&format!(
            "kubecred: error: no browser can open here (an SSH session, DISPLAY and WAYLAND_DISPLAY unset), {} refused the device flow for this client ",
            bed.issuer
        )),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            " ago (invalid_request (urn:ietf:params:oauth:grant-type:device_code is not allowed for this client)), and {where_to}\n"
        )),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1, "{line}");
    let stats = bed.stats();
    assert_eq!(stats["device_authorization"], 1, "{stats}");
    assert_eq!(stats["authorization"], 0, "{stats}");
}
