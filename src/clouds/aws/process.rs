//! A profile's `credential_process`: the command split as botocore splits it (shell words, no
//! shell), run with no stdin (kubectl's belongs to kubectl) and bounded in time, its JSON read as
//! the SDKs read it (`Version` 1, `AccessKeyId`, `SecretAccessKey`, optional `SessionToken` and
//! `Expiration`). A command that fails is said with its exit status and the last line it wrote
//! on stderr.

use super::chain::{Context, still_valid, time};
use super::credentials::Credentials;
use crate::error::{Exit, fail, transient};
use crate::secret::Secret;
use serde::Deserialize;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most of a command's stdout and stderr that is read.
const OUTPUT_CAP: u64 = 64 * 1024;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    version: Option<u32>,
    access_key_id: Option<String>,
    secret_access_key: Option<Secret>,
    session_token: Option<Secret>,
    expiration: Option<String>,
}

pub(super) fn credentials(cx: &Context, name: &str, command: &str) -> anyhow::Result<Credentials> {
    let file = cx.files.file_of(name).display().to_string();
    let shown = crate::text::printable_brief(command, 120).into_owned();
    let words = shlex::split(command).filter(|w| !w.is_empty()).ok_or_else(|| {
        fail(
            Exit::Input,
            format!(
                "the credential_process of the AWS profile {name:?} in {file} cannot be split into words ({shown}); fix its quotes"
            ),
        )
    })?;
    let timeout = cx.clients.network().process_timeout;
    let output = run(&words, timeout).map_err(|why| {
        transient(
            Exit::Login,
            format!(
                "the credential_process of the AWS profile {name:?} ({shown}) {why}; run it yourself to see why"
            ),
        )
    })?;
    let unusable = |why: &str| {
        fail(
            Exit::Input,
            format!(
                "the credential_process of the AWS profile {name:?} ({shown}) printed {why}; it must print the JSON of the AWS CLI's credential_process (Version 1, AccessKeyId, SecretAccessKey)"
            ),
        )
    };
    let answer: Answer =
        serde_json::from_slice(&output).map_err(|_| unusable("something that is not JSON"))?;
    if answer.version != Some(1) {
        return Err(unusable("no Version 1"));
    }
    let access_key_id = answer
        .access_key_id
        .filter(|k| !k.is_empty())
        .ok_or_else(|| unusable("no AccessKeyId"))?;
    let secret_access_key = answer
        .secret_access_key
        .filter(|s| !s.expose().is_empty())
        .ok_or_else(|| unusable("no SecretAccessKey"))?;
    let expires_at = match answer.expiration {
        None => None,
        Some(text) => {
            Some(time(&text).ok_or_else(|| unusable("an Expiration that is not a time"))?)
        }
    };
    still_valid(
        Credentials {
            access_key_id,
            secret_access_key,
            session_token: answer.session_token.filter(|t| !t.expose().is_empty()),
            expires_at,
            source: format!("the credential_process of the AWS profile {name:?}"),
        },
        cx.now,
        "check that command",
    )
}

/// Runs the command; its stdout when it exits 0, else why not ("exited with 1: <stderr's last
/// line>", "did not finish within 60s").
fn run(words: &[String], timeout: Duration) -> Result<Vec<u8>, String> {
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot be started: {err}"))?;
    let capped = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(OUTPUT_CAP).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = capped(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = capped(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "did not finish within {}",
                    crate::duration::display(timeout)
                ));
            }
            Err(err) => return Err(format!("could not be waited for: {err}")),
        }
    };
    // The pipes close when the command exits (unless it left a child holding them: the
    // threads are then abandoned, not waited for).
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    if status.success() {
        return Ok(out);
    }
    let last_line = String::from_utf8_lossy(&err)
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .map(|line| format!(": {}", crate::text::printable_brief(line, 200)))
        .unwrap_or_default();
    Err(format!("failed ({status}{last_line})"))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        shlex::split(text).unwrap()
    }

    #[test]
    fn a_command_is_run_without_a_shell_and_its_failure_said() {
        let timeout = Duration::from_secs(10);
        assert_eq!(run(&words("printf '%s' 'a b'"), timeout).unwrap(), b"a b");
        assert_eq!(
            run(
                &words("sh -c 'echo first >&2; echo no session >&2; exit 3'"),
                timeout
            )
            .unwrap_err(),
            "failed (exit status: 3: no session)"
        );
        assert_eq!(
            run(&words("sleep 5"), Duration::from_millis(200)).unwrap_err(),
            "did not finish within 200ms"
        );
        assert!(
            run(&words("/nonexistent/helper"), timeout)
                .unwrap_err()
                .starts_with("cannot be started: ")
        );
    }
}
