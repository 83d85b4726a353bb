//! An `external_account`'s subject token, from where its `credential_source` says: a file
//! (read on every exchange: these rotate), a URL (GET with the file's headers), or an executable
//! (Google's pluggable auth: run only when `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1`, as
//! Google's libraries require, bounded by its `timeout_millis`, its `output_file` reused while
//! its token is unexpired). A `format` of `json` takes `subject_token_field_name`'s value.

use super::Net;
use super::credential_file::{CredentialFile, Found};
use crate::error::{Exit, fail, outage};
use crate::http::{Outgoing, Recipient, Replay};
use crate::secret::Secret;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A subject token (a JWT or a SAML assertion) is a few KB; the answers that carry it too.
const MAX_SUBJECT: u64 = 256 * 1024;

/// The executable's time limit when the file gives none, and the bounds of one it gives
/// (google-auth's: 30 s, 5 s to 120 s).
const EXECUTABLE_TIMEOUT: Duration = Duration::from_secs(30);
const EXECUTABLE_TIMEOUT_MIN: u64 = 5_000;
const EXECUTABLE_TIMEOUT_MAX: u64 = 120_000;

#[derive(Deserialize, Default)]
#[serde(default)]
struct CredentialSource {
    file: Option<String>,
    url: Option<String>,
    headers: Option<std::collections::BTreeMap<String, String>>,
    format: Option<Format>,
    executable: Option<Executable>,
    environment_id: Option<String>,
    certificate: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Format {
    #[serde(rename = "type")]
    kind: Option<String>,
    subject_token_field_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Executable {
    command: Option<String>,
    timeout_millis: Option<u64>,
    output_file: Option<String>,
}

/// Reads the subject token now.
pub fn read(file: &CredentialFile, found: &Found, net: &Net) -> anyhow::Result<Secret> {
    let source: CredentialSource = match &file.credential_source {
        Some(value) => serde_json::from_value(value.clone()).map_err(|err| {
            fail(
                Exit::Input,
                format!("the credential_source of the external account {found} is not what Google's libraries read ({err}); check the file"),
            )
        })?,
        None => {
            return Err(fail(
                Exit::Input,
                format!("the external account {found} has no \"credential_source\"; create the file again (`gcloud iam workload-identity-pools create-cred-config`)"),
            ));
        }
    };
    if source.environment_id.is_some() {
        return Err(fail(
            Exit::Input,
            format!(
                "the external account {found} takes its subject token from AWS (environment_id), which kubecred does not read; use a file, URL or executable credential source, or --grant-type aws for EKS"
            ),
        ));
    }
    if source.certificate.is_some() {
        return Err(fail(
            Exit::Input,
            format!(
                "the external account {found} authenticates with an X.509 certificate (mTLS), which kubecred does not do; use a file, URL or executable credential source"
            ),
        ));
    }
    if let Some(executable) = &source.executable {
        return run_executable(executable, file, found, net);
    }
    let (text, from) = match (&source.file, &source.url) {
        (Some(path), _) => (read_file(path, found)?, format!("the file {path}")),
        (None, Some(url)) => (
            fetch(url, source.headers.as_ref(), found, net)?,
            url.to_string(),
        ),
        (None, None) => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the credential_source of the external account {found} names no file, url or executable; check the file"
                ),
            ));
        }
    };
    let format = source.format.unwrap_or_default();
    let token = match format.kind.as_deref().unwrap_or("text") {
        // Google's Go library trims the text (google-auth sends it as it is): a trailing newline
        // is never part of a JWT.
        "text" => text.trim().to_string(),
        "json" => {
            let field = format.subject_token_field_name.as_deref().ok_or_else(|| {
                fail(
                    Exit::Input,
                    format!("the credential_source of the external account {found} has format json without subject_token_field_name; check the file"),
                )
            })?;
            serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|json| json.get(field).and_then(|v| v.as_str()).map(str::to_string))
                .ok_or_else(|| {
                    fail(
                        Exit::Input,
                        format!("the subject token from {from} is not JSON with a \"{field}\" (the external account {found}'s subject_token_field_name)"),
                    )
                })?
        }
        other => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the credential_source of the external account {found} has format \"{}\"; Google's libraries read text or json",
                    crate::text::printable_brief(other, 40)
                ),
            ));
        }
    };
    if token.is_empty() {
        return Err(fail(
            Exit::Input,
            format!(
                "the subject token from {from} is empty (the external account {found}); check what writes it"
            ),
        ));
    }
    Ok(Secret::new(token))
}

fn read_file(path: &str, found: &Found) -> anyhow::Result<String> {
    let unreadable = |err: std::io::Error| {
        fail(
            Exit::Input,
            format!(
                "cannot read the subject token file {path} of the external account {found}: {err}; check the path (for a projected service-account token: the volume mount)"
            ),
        )
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(unreadable)?
        .take(MAX_SUBJECT + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    if text.len() as u64 > MAX_SUBJECT {
        return Err(fail(
            Exit::Input,
            format!(
                "the subject token file {path} of the external account {found} is larger than 256 KiB: it is not a token; check the path"
            ),
        ));
    }
    Ok(text)
}

fn fetch(
    url: &str,
    headers: Option<&std::collections::BTreeMap<String, String>>,
    found: &Found,
    net: &Net,
) -> anyhow::Result<String> {
    let parsed = url::Url::parse(url).map_err(|err| {
        fail(
            Exit::Input,
            format!("the credential_source url of the external account {found} is not a URL ({err}); check the file"),
        )
    })?;
    let mut map = HeaderMap::new();
    for (name, value) in headers.into_iter().flatten() {
        let name = HeaderName::from_bytes(name.as_bytes());
        let value = HeaderValue::from_str(value);
        let (Ok(name), Ok(mut value)) = (name, value) else {
            return Err(fail(
                Exit::Input,
                format!(
                    "the credential_source headers of the external account {found} are not valid HTTP headers; check the file"
                ),
            ));
        };
        // Such a header is often a bearer token (Azure's IMDS, a CI's ID-token endpoint).
        value.set_sensitive(true);
        map.append(name, value);
    }
    let shown = crate::text::display_url(&parsed);
    let what = format!("fetching the subject token of the external account {found} from {shown}");
    let answer = net
        .google()?
        .send(&Outgoing {
            method: reqwest::Method::GET,
            url: &parsed,
            headers: map,
            body: Vec::new(),
            what: &what,
            body_cap: MAX_SUBJECT,
            replay: Replay::Safe,
            recipient: Recipient::Other,
        })
        .map_err(|failure| outage(format!("{what}: {failure}")))?;
    if !answer.status.is_success() {
        let message = format!(
            "{what}: it answered {}{}; check the credential_source url and headers",
            crate::http::describe_status(answer.status, &answer.headers),
            crate::http::after_attempts(answer.attempts)
        );
        return Err(if answer.status.is_server_error() {
            outage(message)
        } else {
            fail(Exit::Provider, message)
        });
    }
    String::from_utf8(answer.body).map_err(|_| {
        outage(format!(
            "{what}: the answer is not text; check the credential_source url"
        ))
    })
}

/// The executable's answer (Google's pluggable auth, version 1).
#[derive(Deserialize)]
struct ExecutableAnswer {
    version: Option<u64>,
    success: Option<bool>,
    token_type: Option<String>,
    id_token: Option<String>,
    saml_response: Option<String>,
    expiration_time: Option<i64>,
    code: Option<String>,
    message: Option<String>,
}

fn run_executable(
    executable: &Executable,
    file: &CredentialFile,
    found: &Found,
    net: &Net,
) -> anyhow::Result<Secret> {
    let cx = net.cx;
    if cx
        .var("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES")
        .as_deref()
        != Some("1")
    {
        return Err(fail(
            Exit::Input,
            format!(
                "the external account {found} runs an executable for its subject token, which Google's libraries do only when GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1; set it (the kubeconfig stanza's env) if you trust that file"
            ),
        ));
    }
    let command = executable.command.as_deref().unwrap_or_default();
    let words = shlex::split(command).filter(|words| !words.is_empty()).ok_or_else(|| {
        fail(
            Exit::Input,
            format!("the executable credential_source of the external account {found} has no command (or one that cannot be split into words); check the file"),
        )
    })?;
    let timeout = match executable.timeout_millis {
        None => EXECUTABLE_TIMEOUT,
        Some(millis) if (EXECUTABLE_TIMEOUT_MIN..=EXECUTABLE_TIMEOUT_MAX).contains(&millis) => {
            Duration::from_millis(millis)
        }
        Some(millis) => {
            return Err(fail(
                Exit::Input,
                format!(
                    "the executable credential_source of the external account {found} has timeout_millis {millis}; Google's libraries take 5000 to 120000"
                ),
            ));
        }
    };
    let program = &words[0];
    let described =
        format!("the subject token executable {program} of the external account {found}");
    // A token the executable left in its output file is reused while it has not expired.
    if let Some(path) = &executable.output_file
        && let Ok(text) = std::fs::read_to_string(path)
        && let Ok(answer) = serde_json::from_str::<ExecutableAnswer>(&text)
        && answer
            .expiration_time
            .is_some_and(|at| at > cx.now.timestamp())
        && let Ok(token) = token_of_answer(&answer, &described, cx.now.timestamp())
    {
        return Ok(token);
    }
    let mut child = cx.command(program);
    child
        .args(&words[1..])
        .env(
            "GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE",
            file.audience.as_deref().unwrap_or_default(),
        )
        .env(
            "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE",
            file.subject_token_type.as_deref().unwrap_or_default(),
        )
        .env("GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(email) = file
        .service_account_impersonation_url
        .as_deref()
        .and_then(super::endpoints::impersonated_email)
    {
        child.env("GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL", email);
    }
    if let Some(path) = &executable.output_file {
        child.env("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE", path);
    }
    let output = run_bounded(child, timeout).map_err(|failure| match failure {
        Bounded::NotStarted(err) => fail(
            Exit::Input,
            format!("cannot run {described}: {err}; check its command"),
        ),
        Bounded::TimedOut => outage(format!(
            "{described} did not finish within {} s; check it, or raise its timeout_millis",
            timeout.as_secs()
        )),
    })?;
    if !output.status.success() {
        let said = last_line(&output.stderr).or_else(|| last_line(&output.stdout));
        return Err(fail(
            Exit::Provider,
            format!(
                "{described} failed ({}){}; run it by hand to see why",
                output.status,
                said.map(|line| format!(": {line}")).unwrap_or_default()
            ),
        ));
    }
    let stdout = if output.stdout.iter().all(u8::is_ascii_whitespace) {
        // An executable may answer only through its output file.
        executable
            .output_file
            .as_deref()
            .and_then(|path| std::fs::read(path).ok())
            .unwrap_or_default()
    } else {
        output.stdout
    };
    let answer: ExecutableAnswer = serde_json::from_slice(&stdout).map_err(|_| {
        fail(
            Exit::Provider,
            format!("{described} did not answer with Google's executable-sourced JSON (version, success, token_type, id_token or saml_response); check it"),
        )
    })?;
    token_of_answer(&answer, &described, cx.now.timestamp())
}

fn token_of_answer(answer: &ExecutableAnswer, described: &str, now: i64) -> anyhow::Result<Secret> {
    let bad = |why: String| fail(Exit::Provider, format!("{described} {why}"));
    match answer.version {
        Some(1) => {}
        Some(other) => {
            return Err(bad(format!(
                "answered version {other}; kubecred reads version 1"
            )));
        }
        None => return Err(bad("answered without a version".into())),
    }
    match answer.success {
        Some(true) => {}
        Some(false) => {
            return Err(bad(format!(
                "said it failed: {} ({})",
                crate::text::printable_brief(answer.code.as_deref().unwrap_or("no code"), 80),
                crate::text::printable_brief(
                    answer.message.as_deref().unwrap_or("no message"),
                    200
                )
            )));
        }
        None => return Err(bad("answered without success".into())),
    }
    if answer.expiration_time.is_some_and(|at| at <= now) {
        return Err(bad("answered a token that has expired".into()));
    }
    let token = match answer.token_type.as_deref() {
        Some(
            "urn:ietf:params:oauth:token-type:jwt" | "urn:ietf:params:oauth:token-type:id_token",
        ) => answer.id_token.clone(),
        Some("urn:ietf:params:oauth:token-type:saml2") => answer.saml_response.clone(),
        Some(other) => {
            return Err(bad(format!(
                "answered token_type {}, which Google's libraries do not take",
                crate::text::printable_brief(other, 80)
            )));
        }
        None => return Err(bad("answered without a token_type".into())),
    };
    token
        .filter(|token| !token.is_empty())
        .map(Secret::new)
        .ok_or_else(|| bad("answered no token".into()))
}

fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).rfind(|line| !line.is_empty())?;
    Some(crate::text::printable_brief(line, 300).into_owned())
}

pub(super) enum Bounded {
    NotStarted(std::io::Error),
    TimedOut,
}

/// Runs `command` to its end or until `limit` (then kills it), its output read on threads so
/// that a full pipe never blocks it.
pub(super) fn run_bounded(
    mut command: Command,
    limit: Duration,
) -> Result<std::process::Output, Bounded> {
    let mut child = command.spawn().map_err(Bounded::NotStarted)?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.by_ref().take(MAX_SUBJECT * 4).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Bounded::TimedOut);
            }
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}
