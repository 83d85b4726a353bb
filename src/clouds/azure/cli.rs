//! A token from the Azure CLI's session (`az account get-access-token`) or the Azure Developer
//! CLI's (`azd auth token`), as azure-identity's `AzureCliCredential` and
//! `AzureDeveloperCliCredential` run them: the program found on PATH, run with its arguments
//! (no shell: nothing in a scope or tenant is ever interpreted), stdin the null device, in a
//! directory the OS controls (`/bin`; Windows: `%SYSTEMROOT%`), colour off, and killed with its
//! children when it outlives the timeout. Its answer gives the token and its expiry; its failure
//! is one line: not installed, not logged in (`az login`), or what Entra said (`AADSTS53003`…).
//! The CLI never opens a browser here: a login is the person's, in their terminal.

use super::{check_not_expired, check_scope, check_tenant, resource_of, who};
use crate::clouds::CloudToken;
use crate::error::{Exit, fail, outage, transient};
use crate::secret::Secret;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a CLI may take when the settings say nothing: Azure's kubelogin's `--timeout`
/// default (`AZURE_CLI_TIMEOUT`). azure-identity's 10 s is short for a CLI that refreshes its
/// session over a slow network on the way.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A CLI's answer is a few KB; more is not a token answer, and is not kept.
const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// `--grant-type azure-cli`.
#[derive(Debug, Clone)]
pub struct AzureCliSettings {
    /// The Entra scope (`--scope`); the CLI is given its resource.
    pub scope: String,
    /// `--tenant-id`: the CLI's `--tenant`, else the CLI's default tenant.
    pub tenant_id: Option<String>,
    /// The CLI's `--subscription` (Azure kubelogin's `--subscription`): the account of that
    /// subscription rather than the CLI's current one.
    pub subscription: Option<String>,
    pub timeout: Duration,
}

/// `--grant-type azure-developer-cli`.
#[derive(Debug, Clone)]
pub struct DeveloperCliSettings {
    pub scope: String,
    pub tenant_id: Option<String>,
    pub timeout: Duration,
}

/// The Azure CLI's arguments after `az`: azure-identity's (`--resource`, which every Azure CLI
/// takes; azure_identity for Rust sends `--scope`, which needs a newer one and is the same
/// token), then `--tenant` and `--subscription` when given.
pub fn azure_cli_args(settings: &AzureCliSettings) -> Vec<String> {
    let mut args: Vec<String> = [
        "account",
        "get-access-token",
        "--output",
        "json",
        "--resource",
    ]
    .map(String::from)
    .into();
    args.push(resource_of(&settings.scope).to_string());
    if let Some(tenant) = &settings.tenant_id {
        args.extend(["--tenant".to_string(), tenant.clone()]);
    }
    if let Some(subscription) = &settings.subscription {
        args.extend(["--subscription".to_string(), subscription.clone()]);
    }
    args
}

/// The Azure Developer CLI's arguments after `azd`: azure-identity's and Azure kubelogin's
/// (`--no-prompt`: azd must never wait for a person here).
pub fn developer_cli_args(settings: &DeveloperCliSettings) -> Vec<String> {
    let mut args: Vec<String> = [
        "auth",
        "token",
        "--output",
        "json",
        "--no-prompt",
        "--scope",
    ]
    .map(String::from)
    .into();
    args.push(settings.scope.clone());
    if let Some(tenant) = &settings.tenant_id {
        args.extend(["--tenant-id".to_string(), tenant.clone()]);
    }
    args
}

/// A token from `az account get-access-token`. `env` is the process's environment as kubectl
/// gave it (PATH finds `az`; Windows: SYSTEMROOT); `now` the injected clock.
pub fn azure_cli_token(
    settings: &AzureCliSettings,
    env: &dyn Fn(&str) -> Option<String>,
    now: DateTime<Utc>,
) -> anyhow::Result<CloudToken> {
    check_scope(&settings.scope)?;
    if let Some(tenant) = &settings.tenant_id {
        check_tenant(tenant)?;
    }
    if let Some(subscription) = &settings.subscription {
        // azure-identity's `validate_subscription`: a subscription's ID or name.
        let valid = |c: char| c.is_ascii_alphanumeric() || " ._-()".contains(c);
        if subscription.is_empty() || !subscription.chars().all(valid) {
            return Err(fail(
                Exit::Input,
                "the subscription holds characters a subscription name or ID does not; give its ID",
            ));
        }
    }
    let cli = Cli::AZ;
    let ran = run(&cli, &azure_cli_args(settings), env, settings.timeout)?;
    let login_hint = match &settings.tenant_id {
        Some(tenant) => format!("az login --tenant {tenant}"),
        None => "az login".to_string(),
    };
    if !ran.status.success() {
        return Err(azure_cli_failure(&ran, &settings.scope, &login_hint));
    }
    let (token, expires_at) = parse_azure_cli_answer(&ran.stdout, &|naive| {
        chrono::Local
            .from_local_datetime(&naive)
            .earliest()
            .map(|local| local.with_timezone(&Utc))
    })?;
    check_not_expired(expires_at, now, "the Azure CLI")?;
    Ok(CloudToken {
        who: who(token.expose()),
        token,
        expires_at,
    })
}

/// A token from `azd auth token`.
pub fn developer_cli_token(
    settings: &DeveloperCliSettings,
    env: &dyn Fn(&str) -> Option<String>,
    now: DateTime<Utc>,
) -> anyhow::Result<CloudToken> {
    check_scope(&settings.scope)?;
    if let Some(tenant) = &settings.tenant_id {
        check_tenant(tenant)?;
    }
    let ran = run(
        &Cli::AZD,
        &developer_cli_args(settings),
        env,
        settings.timeout,
    )?;
    if !ran.status.success() {
        return Err(developer_cli_failure(&ran, settings.tenant_id.as_deref()));
    }
    let (token, expires_at) = parse_developer_cli_answer(&ran.stdout)?;
    check_not_expired(expires_at, now, "the Azure Developer CLI")?;
    Ok(CloudToken {
        who: who(token.expose()),
        token,
        expires_at,
    })
}

#[derive(serde::Deserialize)]
struct AzAnswer {
    #[serde(rename = "accessToken")]
    access_token: Secret,
    /// Epoch seconds, from Azure CLI 2.54 on (a number; a string of one is taken too).
    expires_on: Option<serde_json::Value>,
    /// The local time without a zone, as older CLIs print it: `2026-11-28 16:05:31.000000`.
    #[serde(rename = "expiresOn")]
    expires_on_local: Option<String>,
}

/// The token and its expiry from `az account get-access-token --output json`: `expires_on`,
/// else `expiresOn` read as this machine's local time (`local` turns it into UTC; injected so
/// that tests name the zone), as azure-identity reads them.
pub fn parse_azure_cli_answer(
    stdout: &[u8],
    local: &dyn Fn(NaiveDateTime) -> Option<DateTime<Utc>>,
) -> anyhow::Result<(Secret, DateTime<Utc>)> {
    let unexpected = |what: &str| {
        fail(
            Exit::Provider,
            format!("the Azure CLI's answer {what}; update the Azure CLI (az upgrade)"),
        )
    };
    let answer: AzAnswer = serde_json::from_slice(stdout)
        .map_err(|_| unexpected("is not the JSON of `az account get-access-token`"))?;
    if answer.access_token.expose().trim().is_empty() {
        return Err(unexpected("has an empty accessToken"));
    }
    let epoch = match &answer.expires_on {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    let expires_at = match (epoch, &answer.expires_on_local) {
        (Some(epoch), _) => DateTime::from_timestamp(epoch, 0),
        (None, Some(text)) => ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"]
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(text.trim(), format).ok())
            .and_then(local),
        (None, None) => None,
    }
    .ok_or_else(|| unexpected("has no expiry kubecred can read (expires_on, expiresOn)"))?;
    Ok((answer.access_token, expires_at))
}

#[derive(serde::Deserialize)]
struct AzdAnswer {
    token: Secret,
    /// RFC 3339 in UTC: `2026-11-28T16:05:31Z`.
    #[serde(rename = "expiresOn")]
    expires_on: String,
}

/// The token and its expiry from `azd auth token --output json`. (azure-identity reads the
/// `Z` time as local time, which is wrong off UTC; Go's azidentity, which Azure's kubelogin runs,
/// reads it as RFC 3339, as here.)
pub fn parse_developer_cli_answer(stdout: &[u8]) -> anyhow::Result<(Secret, DateTime<Utc>)> {
    let unexpected = |what: &str| {
        fail(
            Exit::Provider,
            format!("the Azure Developer CLI's answer {what}; update azd"),
        )
    };
    let answer: AzdAnswer = serde_json::from_slice(stdout)
        .map_err(|_| unexpected("is not the JSON of `azd auth token`"))?;
    if answer.token.expose().trim().is_empty() {
        return Err(unexpected("has an empty token"));
    }
    let expires_at = DateTime::parse_from_rfc3339(answer.expires_on.trim())
        .map_err(|_| unexpected("has an expiresOn that is not an RFC 3339 time"))?
        .with_timezone(&Utc);
    Ok((answer.token, expires_at))
}

/// Entra's refusals that no new login on this device changes: Conditional Access blocked the
/// session or the device (AADSTS53000–53009: device not compliant, not registered, blocked by
/// policy; 5300xx, such as 530032, the security-defaults family). They are the tenant's decision
/// (exit 3), not a login to renew (exit 4).
fn refused_by_policy(code: &str) -> bool {
    code.starts_with("AADSTS5300")
}

/// One line for a failed `az`: not installed, not logged in, Entra's refusal, or what az said.
fn azure_cli_failure(ran: &Ran, scope: &str, login: &str) -> anyhow::Error {
    let stderr = String::from_utf8_lossy(&ran.stderr);
    if ran.status.code() == Some(127) || stderr.starts_with("'az' is not recognized") {
        return not_installed(&Cli::AZ);
    }
    let said = cli_said(&stderr, "ERROR:");
    match aadsts_code(&stderr) {
        Some(code) if refused_by_policy(&code) => fail(
            Exit::Provider,
            format!(
                "Entra ID refused the Azure CLI a token for {scope}: {said}; the tenant's Conditional Access does not allow this session or device: ask its administrators, or sign in with `{login}` on a device the policy admits"
            ),
        ),
        // An expired or revoked session, a new MFA or consent requirement: a new login helps.
        Some(_) if stderr.contains("az login") => transient(
            Exit::Login,
            format!(
                "the Azure CLI's login cannot give a token for {scope} without signing in again ({said}); run `{login} --scope {scope}`, then retry"
            ),
        ),
        Some(_) => fail(
            Exit::Provider,
            format!("Entra ID refused the Azure CLI a token for {scope}: {said}"),
        ),
        None if stderr.contains("az login") || stderr.contains("az account set") => transient(
            Exit::Login,
            format!("the Azure CLI is not logged in ({said}); run `{login}`, then retry"),
        ),
        None => fail(
            Exit::Provider,
            format!(
                "`az account get-access-token` failed ({}): {said}",
                describe_status(ran.status)
            ),
        ),
    }
}

/// One line for a failed `azd`: not installed, not logged in, or its error message (azd writes
/// JSON lines with `--output json`: `{"error": …}`, or older `consoleMessage`s).
fn developer_cli_failure(ran: &Ran, tenant: Option<&str>) -> anyhow::Error {
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    if ran.status.code() == Some(127) || stderr.starts_with("'azd' is not recognized") {
        return not_installed(&Cli::AZD);
    }
    let login = match tenant {
        Some(tenant) => format!("azd auth login --tenant-id {tenant}"),
        None => "azd auth login".to_string(),
    };
    let combined = format!("{stdout}\n{stderr}");
    let said = azd_message(&stdout)
        .or_else(|| azd_message(&stderr))
        .unwrap_or_else(|| cli_said(&stderr, "ERROR:"));
    if combined.contains("not logged in") && aadsts_code(&combined).is_none() {
        return transient(
            Exit::Login,
            format!("the Azure Developer CLI is not logged in ({said}); run `{login}`, then retry"),
        );
    }
    match aadsts_code(&combined) {
        Some(code) if refused_by_policy(&code) => fail(
            Exit::Provider,
            format!(
                "Entra ID refused the Azure Developer CLI a token: {said}; the tenant's Conditional Access does not allow this session or device: ask its administrators"
            ),
        ),
        _ => fail(
            Exit::Provider,
            format!(
                "`azd auth token` failed ({}): {said}",
                describe_status(ran.status)
            ),
        ),
    }
}

/// azd's message from its JSON lines: the structured `error` (azd 1.23.7 on), else the first
/// `consoleMessage`'s `data.message`.
fn azd_message(output: &str) -> Option<String> {
    let mut fallback = None;
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(serde_json::Value::Object(object)) = serde_json::from_str(line) else {
            continue;
        };
        if let Some(error) = object.get("error").and_then(|e| e.as_str())
            && !error.trim().is_empty()
        {
            return Some(brief(error));
        }
        if fallback.is_none() {
            fallback = object
                .get("data")
                .and_then(|d| d.get("message"))
                .and_then(|m| m.as_str())
                .filter(|m| !m.trim().is_empty())
                .map(brief);
        }
    }
    fallback
}

/// What a CLI said, in brief: the line that starts with `marker` (az's `ERROR: …`), else its first
/// line that says something; cut before Entra's trace and correlation IDs, printable, bounded.
fn cli_said(stderr: &str, marker: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find(|l| l.starts_with(marker))
        .or(lines.first())
        .copied()
        .unwrap_or("it printed nothing on stderr");
    brief(line)
}

fn brief(text: &str) -> String {
    let text = text.trim();
    let cut = text.find(" Trace ID:").map_or(text, |at| &text[..at]);
    crate::text::printable_brief(cut.trim(), 300).into_owned()
}

/// The first `AADSTS<digits>` in a CLI's output: Entra's error code.
fn aadsts_code(text: &str) -> Option<String> {
    let at = text.find("AADSTS")?;
    let digits: String = text[at + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then(|| format!("AADSTS{digits}"))
}

fn describe_status(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_string(),
    }
}

/// A CLI kubecred runs: the names it has on PATH and what to say about it.
pub struct Cli {
    /// What it is, in messages: "the Azure CLI (az)".
    pub name: &'static str,
    /// The file names to look for on PATH, in order.
    unix: &'static [&'static str],
    windows: &'static [&'static str],
    /// The variable that turns its colour off.
    no_color: &'static str,
    install: &'static str,
}

impl Cli {
    pub const AZ: Cli = Cli {
        name: "the Azure CLI (az)",
        unix: &["az"],
        // The Azure CLI's Windows launcher is az.cmd (azure-identity looks for it first).
        windows: &["az.cmd", "az.exe"],
        no_color: "AZURE_CORE_NO_COLOR",
        install: "https://aka.ms/installazurecli",
    };
    pub const AZD: Cli = Cli {
        name: "the Azure Developer CLI (azd)",
        unix: &["azd"],
        windows: &["azd.exe", "azd.cmd"],
        no_color: "NO_COLOR",
        install: "https://aka.ms/azure-dev/install",
    };
}

fn not_installed(cli: &Cli) -> anyhow::Error {
    fail(
        Exit::Input,
        format!(
            "{} is not installed here (not found on PATH); install it ({}) and sign in with it, or choose another --grant-type",
            cli.name, cli.install
        ),
    )
}

/// The first of the CLI's names found as a file on `path` (a PATH value), as `shutil.which` finds
/// it: on unix an executable file.
pub fn find_on_path(cli: &Cli, path: &str) -> Option<PathBuf> {
    let names = if cfg!(windows) { cli.windows } else { cli.unix };
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// What a CLI run gave: its status and what it printed (each up to [`MAX_OUTPUT_BYTES`]).
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs the CLI with `args`, bounded by `timeout`: found on the PATH `env` gives, stdin the null
/// device, stdout and stderr read to a cap while it runs, in `/bin` (Windows: `%SYSTEMROOT%`), its
/// colour off. On unix it leads a process group of its own, so that a timeout kills it and
/// whatever it started (the Azure CLI is a script that runs Python).
pub fn run(
    cli: &Cli,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    timeout: Duration,
) -> anyhow::Result<Ran> {
    let path = env(crate::env_vars::PATH).unwrap_or_default();
    let program = find_on_path(cli, &path).ok_or_else(|| not_installed(cli))?;
    let directory = if cfg!(windows) {
        PathBuf::from(env("SYSTEMROOT").ok_or_else(|| {
            fail(
                Exit::Input,
                format!(
                    "SYSTEMROOT is not set, and {} runs in that directory; set it",
                    cli.name
                ),
            )
        })?)
    } else {
        PathBuf::from("/bin")
    };
    let mut command = Command::new(&program);
    command
        .args(args)
        .current_dir(&directory)
        .env(cli.no_color, "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    crate::debug!(1, "running {} {}", program.display(), args.join(" "));
    let mut child = command.spawn().map_err(|err| {
        fail(
            Exit::Input,
            format!(
                "cannot run {} ({}): {err}; check the file",
                cli.name,
                program.display()
            ),
        )
    })?;
    let stdout = read_in_background(child.stdout.take());
    let stderr = read_in_background(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                kill(&mut child);
                return Err(outage(format!(
                    "{} did not answer within {}; it may be waiting on the network or a lock of its own: try it yourself, or give it more time (the timeout setting)",
                    cli.name,
                    crate::duration::display(timeout)
                )));
            }
            // A CLI takes a second or more: polling at 10 ms costs nothing and bounds the wait
            // without a thread per child.
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(err) => {
                kill(&mut child);
                return Err(fail(
                    Exit::Input,
                    format!("waiting for {} failed: {err}", cli.name),
                ));
            }
        }
    };
    // Whatever it started may still hold the pipes: wait for them only as long as is left.
    let left = timeout.saturating_sub(started.elapsed()) + Duration::from_millis(200);
    let deadline = Instant::now() + left;
    Ok(Ran {
        status,
        stdout: stdout.collect(deadline),
        stderr: stderr.collect(deadline),
    })
}

fn kill(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // The whole group: the CLI's own children too. The group's ID is the child's PID.
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) with a negative PID signals that process group; no memory is shared.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A pipe read to [`MAX_OUTPUT_BYTES`] on a thread of its own (the rest drained and dropped), so
/// that a CLI that prints much never blocks on a full pipe.
struct Background(Option<std::sync::mpsc::Receiver<Vec<u8>>>);

fn read_in_background(pipe: Option<impl Read + Send + 'static>) -> Background {
    let Some(mut pipe) = pipe else {
        return Background(None);
    };
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut pipe).take(MAX_OUTPUT_BYTES).read_to_end(&mut kept);
        let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        let _ = sender.send(kept);
    });
    Background(Some(receiver))
}

impl Background {
    fn collect(self, deadline: Instant) -> Vec<u8> {
        self.0
            .and_then(|receiver| {
                receiver
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .ok()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
