//! The test environment: temp dirs, the test bed, and runners for kubecred and kubectl whose
//! assertions print the command, stdout and stderr when they fail.

#![allow(dead_code)]

#[cfg(target_os = "linux")]
pub mod desktop;
pub mod manual;
pub mod rust_text;
#[cfg(target_os = "linux")]
pub mod terminal;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const V1: &str = "client.authentication.k8s.io/v1";
pub const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";
pub const RESOURCE: &str = "https://kubernetes.testbed";
pub const CC_CLIENT: &str = "kubecred-cc";
pub const CC_SECRET: &str = "testbed-cc-secret";
pub const CC_POST_CLIENT: &str = "kubecred-cc-post";
pub const CC_POST_SECRET: &str = "testbed-cc-post-secret";
pub const PUBLIC_CLIENT: &str = "kubecred";
/// The client of the test bed that the provider refuses the device flow, while discovery lists it.
pub const NO_DEVICE_CLIENT: &str = "kubecred-no-device";
/// RFC 8693's grant type, as the test bed counts it in `stats.token`.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The kubecred binary under test: cargo's build, or the one `KUBECRED_TEST_BINARY` names
/// (scripts/test.sh runs the suites again with the static release build copied alone into an
/// empty directory, the way a downloaded binary is installed).
pub fn kubecred_bin() -> PathBuf {
    match std::env::var_os("KUBECRED_TEST_BINARY") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_kubecred")),
    }
}

/// Whether this is a CI run (`CI` set, as GitHub, GitLab and our `.ci/run` set it). Under CI a
/// missing prerequisite fails the test instead of skipping it, so a green run never hides one.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// What some tests need beyond Rust, Node and kubectl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Debian's headless Chromium, which `tests/support/browser.mjs` drives.
    Browser,
    /// The official Python Kubernetes client in `target/python-venv`.
    PythonClient,
    /// Google's auth library (PyPI google-auth) in `target/google-venv`.
    GoogleAuth,
    /// Google's Cloud CLI (`gcloud`, Google's google-cloud-cli package, on the machine image) and
    /// gke-gcloud-auth-plugin beside it.
    Gcloud,
    /// The AWS CLI v1 and its botocore in `target/aws-venv` (scripts/aws-deps.sh).
    AwsReference,
    /// `strace`, to watch what a process does.
    Strace,
    /// examples/kube-client (kube-rs), built into `target/kube-client` on first use.
    KubeRsClient,
    /// Debian's glewlwyd (the second OpenID Provider) and the sqlite3 shell that creates its
    /// database.
    Glewlwyd,
    /// `keyctl` (Debian's keyutils), to run a command in a kernel session keyring of its own.
    Keyctl,
    /// Debian's tinyproxy (an HTTP proxy) and microsocks (a SOCKS5 proxy).
    ProxyServers,
    /// Azure's own credential library (PyPI azure-identity and msal) in `target/azure-venv`.
    AzureReference,
}

/// Whether the test can run here. A missing prerequisite skips the test with one line that names
/// `scripts/test.sh` (which installs everything) — except under CI, where it fails the test.
/// The Python client is installed and the kube-rs client built here on first use (once, under
/// the set-up lock).
#[track_caller]
pub fn have(need: Need) -> bool {
    let missing = match need {
        Need::Browser => {
            let chromium = std::env::var_os("TESTBED_CHROMIUM")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
            (!chromium.exists()).then(|| format!("{} (Debian's chromium)", chromium.display()))
        }
        Need::Strace => {
            let found = Command::new("strace")
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            (!found).then(|| "strace (Debian's strace)".to_string())
        }
        Need::Keyctl => (!on_path("keyctl")).then(|| "keyctl (Debian's keyutils)".to_string()),
        Need::Glewlwyd => first_missing(&["glewlwyd", "sqlite3"]),
        Need::Gcloud => ["gcloud", "gke-gcloud-auth-plugin"]
            .iter()
            .find(|program| !on_path(program))
            .map(|program| format!("{program} (Google's google-cloud-cli packages)")),
        Need::ProxyServers => first_missing(&["tinyproxy", "microsocks"]),
        Need::PythonClient => {
            static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
            INSTALLED
                .get_or_init(|| run_setup("python-deps.sh", "ensure_python_deps"))
                .clone()
                .err()
        }
        Need::GoogleAuth => {
            static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
            INSTALLED
                .get_or_init(|| run_setup("google-deps.sh", "ensure_google_deps"))
                .clone()
                .err()
        }
        Need::AzureReference => {
            static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
            INSTALLED
                .get_or_init(|| run_setup("azure-reference.sh", "ensure_azure_reference"))
                .clone()
                .err()
        }
        Need::AwsReference => {
            static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
            INSTALLED
                .get_or_init(|| run_setup("aws-deps.sh", "ensure_aws_deps"))
                .clone()
                .err()
        }
        Need::KubeRsClient => {
            static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
            BUILT
                .get_or_init(|| run_setup("kube-client.sh", "ensure_kube_client"))
                .clone()
                .err()
        }
    };
    let Some(missing) = missing else {
        return true;
    };
    assert!(
        !is_ci(),
        "{need:?} is missing: {missing}; CI must provide it (scripts/test.sh installs it)"
    );
    skipped(&format!(
        "needs {missing}; run scripts/test.sh, which installs it"
    ));
    false
}

/// Whether `program` is a file in a directory of PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The first of `programs` not on PATH, named with its Debian package.
fn first_missing(programs: &[&str]) -> Option<String> {
    programs
        .iter()
        .find(|program| !on_path(program))
        .map(|program| format!("{program} (Debian's {program})"))
}

/// Says on stderr why a test did nothing. (The harness captures it; kubecred's own code writes
/// stderr only through `log::stderr`, which clippy.toml enforces with `disallowed_macros`.)
#[allow(clippy::disallowed_macros)]
pub fn skipped(why: &str) {
    eprintln!("skipped: {why}");
}

/// Runs `. scripts/<script>; <function> <repo root>` (the same set-up scripts/test.sh runs), under
/// a cross-process lock so that parallel tests and test binaries install once. The scripts are
/// idempotent: they do nothing when what they install is already there.
fn run_setup(script: &str, function: &str) -> Result<(), String> {
    let root = repo_root();
    let lock_path = root.join("target").join(".kubecred-test-setup.lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).map_err(|e| e.to_string())?;
    let lock = std::fs::File::create(&lock_path).map_err(|e| e.to_string())?;
    lock.lock()
        .map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(". scripts/{script} && {function} \"$0\""))
        .arg(&root)
        .current_dir(&root)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running scripts/{script}: {e}"))?;
    drop(lock);
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "scripts/{script} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Installs the Node test bed (`npm ci` in tests/support) once, whatever the number of tests
/// asking at the same time; panics with npm's error when that fails (Node and npm are on every
/// machine kubecred is developed on: README's prerequisites).
pub fn ensure_node_test_bed() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(err) = INSTALLED.get_or_init(|| run_setup("node-deps.sh", "ensure_node_deps")) {
        panic!("installing the Node test bed: {err}");
    }
}

/// kubectl: `$KUBECTL`, else the first `kubectl` on PATH.
pub fn kubectl_bin() -> PathBuf {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("KUBECTL") {
                return PathBuf::from(path);
            }
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths)
                .map(|dir| dir.join("kubectl"))
                .find(|candidate| candidate.is_file())
                .unwrap_or_else(|| {
                    panic!("kubectl is not on PATH (nor named by $KUBECTL); install kubectl 1.26+")
                })
        })
        .clone()
}

/// A running test bed (IdP + API stand-in). Stopped when dropped (its stdin closes).
pub struct Testbed {
    child: Child,
    pub issuer: String,
    pub api_server: String,
    /// The `audienceApis` stand-ins: audience → URL (each accepts that audience alone).
    pub audience_apis: std::collections::BTreeMap<String, String>,
    pub ca_file: PathBuf,
    pub ca_data: String,
    pub admin: String,
}

impl Testbed {
    pub fn start() -> Testbed {
        Self::start_with(json!({}))
    }

    pub fn start_with(options: Value) -> Testbed {
        ensure_node_test_bed();
        let support = repo_root().join("tests/support");
        let mut child = Command::new("node")
            .arg(support.join("testbed.mjs"))
            .arg(options.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node tests/support/testbed.mjs");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reading the test bed's startup line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("test bed startup line {line:?}: {err}"));
        let text = |key: &str| {
            info[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} in {info}"))
                .to_string()
        };
        let audience_apis = info["audience_apis"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(aud, url)| (aud.clone(), url.as_str().unwrap().to_string()))
            .collect();
        Testbed {
            issuer: text("issuer"),
            api_server: text("api_server"),
            audience_apis,
            ca_file: PathBuf::from(text("ca_file")),
            ca_data: text("ca_data"),
            admin: text("admin"),
            child,
        }
    }

    fn admin_client(&self) -> reqwest::blocking::Client {
        let ca = std::fs::read(&self.ca_file).unwrap();
        reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }

    pub fn stats(&self) -> Value {
        self.admin_client()
            .get(format!("{}/stats", self.admin))
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .expect("test bed stats")
    }

    /// Token endpoint requests of one grant type so far.
    pub fn token_requests(&self, grant_type: &str) -> u64 {
        self.stats()["token"][grant_type].as_u64().unwrap_or(0)
    }

    pub fn total_token_requests(&self) -> u64 {
        self.stats()["token"]["total"].as_u64().unwrap_or(0)
    }

    pub fn reset_stats(&self) {
        self.admin_client()
            .post(format!("{}/reset", self.admin))
            .send()
            .and_then(|r| r.error_for_status())
            .expect("test bed reset");
    }

    pub fn configure(&self, knobs: Value) {
        self.admin_client()
            .post(format!("{}/config", self.admin))
            .json(&knobs)
            .send()
            .and_then(|r| r.error_for_status())
            .expect("test bed config");
    }

    /// The requests the provider received so far (`GET /__testbed/requests`): method, path and
    /// headers (names in lower case), oldest first.
    pub fn requests(&self) -> Vec<Value> {
        let answer: Value = self
            .admin_client()
            .get(format!("{}/requests", self.admin))
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .expect("test bed requests");
        answer.as_array().cloned().unwrap_or_default()
    }

    /// Every `redirect_uri` the provider received, as sent (byte for byte: oidc-provider itself
    /// compares them normalised), oldest first: `("/auth", …)` for an authorization request,
    /// `("/token", …)` for a code exchange.
    pub fn redirect_uris_received(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for request in self.requests() {
            let path = request["path"].as_str().unwrap_or_default().to_string();
            let query = request["query"].as_str().unwrap_or_default();
            let from_query = url::form_urlencoded::parse(query.trim_start_matches('?').as_bytes())
                .filter(|(name, _)| name == "redirect_uri")
                .map(|(_, value)| value.into_owned());
            let from_form = request["form"]["redirect_uri"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|value| value.as_str().map(String::from));
            for value in from_query.chain(from_form) {
                found.push((path.clone(), value));
            }
        }
        found
    }

    /// The URL of the API stand-in that accepts `audience` alone (option `audienceApis`).
    #[track_caller]
    pub fn audience_api_url(&self, audience: &str) -> String {
        self.audience_apis
            .get(audience)
            .unwrap_or_else(|| panic!("no audienceApis stand-in for {audience}"))
            .clone()
    }

    /// The counters of that stand-in: `{"requests": n, "unauthorized": n, "last_user": …}`.
    pub fn audience_api_stats(&self, audience: &str) -> Value {
        self.stats()["audience_apis"][audience].clone()
    }

    /// The HTTP status an API server (`server`, its base URL) answers `GET /version` with
    /// `Authorization: Bearer <token>`: 200, or 401 for a token it refuses.
    pub fn api_status(&self, server: &str, token: &str) -> u16 {
        self.admin_client()
            .get(format!("{server}/version"))
            .bearer_auth(token)
            .send()
            .expect("GET /version from an API stand-in")
            .status()
            .as_u16()
    }

    /// POSTs `form` to the provider's token endpoint: the HTTP status and the JSON answer.
    pub fn post_token(&self, form: &[(&str, &str)]) -> (u16, Value) {
        let response = self
            .admin_client()
            .post(format!("{}/token", self.issuer))
            .form(form)
            .send()
            .expect("POST /token");
        let status = response.status().as_u16();
        (status, response.json().expect("a JSON answer from /token"))
    }

    /// The token requests the provider received so far, oldest first, as `(grant_type, HTTP
    /// status of the answer)` (status 0: no answer was sent).
    pub fn token_answers(&self) -> Vec<(String, u16)> {
        self.requests()
            .iter()
            .filter(|r| r["method"] == "POST" && r["path"] == "/token")
            .map(|r| {
                let grant = r["form"]["grant_type"][0].as_str().unwrap_or("(none)");
                let status = r["status"].as_u64().unwrap_or(0);
                (grant.to_string(), u16::try_from(status).unwrap())
            })
            .collect()
    }

    pub fn revoke_refresh_tokens(&self) {
        self.admin_client()
            .post(format!("{}/revoke-refresh-tokens", self.admin))
            .send()
            .and_then(|r| r.error_for_status())
            .expect("test bed revoke");
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        stop_node_server(&mut self.child);
    }
}

/// Stops a Node server of ours: closes its stdin (it exits on EOF), then kills it after 3 s.
pub fn stop_node_server(child: &mut Child) {
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// One test's private world: HOME, cache dir, kubeconfig dir. Its commands never see the
/// developer's keyring or D-Bus session unless the test asks for them ([`TestEnv::with_keyring`]).
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    /// Whether commands get the session bus of scripts/test.sh's private keyring daemon.
    keyring: bool,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("kubecred-it-")
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        TestEnv {
            dir,
            keyring: false,
        }
    }

    /// A test environment whose commands reach the Secret Service of scripts/test.sh's private
    /// D-Bus session, for the tests of keyring storage; `None` (after one line saying so) where
    /// there is none.
    pub fn with_keyring() -> Option<TestEnv> {
        if std::env::var("KUBECRED_TEST_KEYRING").map_or(true, |v| v != "1") {
            assert!(
                !is_ci(),
                "the keyring tests need the Secret Service of scripts/test.sh; CI runs them there"
            );
            skipped("needs a Secret Service daemon; run scripts/test.sh");
            return None;
        }
        Some(TestEnv {
            keyring: true,
            ..TestEnv::new()
        })
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// A clean environment: nothing from the developer's shell leaks in (no KUBECRED_*, no
    /// BROWSER, no DISPLAY), so tests read like a specification.
    fn base_command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CACHE_HOME", self.home().join(".cache"))
            .stdin(Stdio::null());
        if self.keyring {
            for passthrough in ["DBUS_SESSION_BUS_ADDRESS", "KUBECRED_TEST_KEYRING"] {
                if let Ok(value) = std::env::var(passthrough) {
                    cmd.env(passthrough, value);
                }
            }
        }
        cmd
    }

    /// A client program that runs kubecred itself (the Python, JavaScript and kube-rs clients),
    /// in the same clean environment as kubectl and kubecred: HOME is the test's home, so nothing
    /// from the developer's shell reaches the plugin the client starts.
    pub fn client(&self, program: &Path) -> Command {
        self.base_command(program)
    }

    /// `kubecred <args>` with the test's cache dir and storage `disk` unless the args say otherwise.
    pub fn kubecred(&self, args: &[&str]) -> Command {
        let mut cmd = self.base_command(&kubecred_bin());
        cmd.args(args);
        for arg in self.cache_args(args) {
            cmd.arg(arg);
        }
        cmd
    }

    /// `--cache-dir` (the test's) and `--cache-storage=disk`, each unless `args` gives it.
    fn cache_args<S: AsRef<str>>(&self, args: &[S]) -> Vec<String> {
        let given = |flag: &str| args.iter().any(|a| a.as_ref().starts_with(flag));
        let mut extra = Vec::new();
        if !given("--cache-dir") {
            extra.push(format!("--cache-dir={}", self.cache_dir().display()));
        }
        if !given("--cache-storage") {
            extra.push("--cache-storage=disk".to_string());
        }
        extra
    }

    /// kubecred arguments for client credentials against the test bed.
    pub fn cc_args(&self, bed: &Testbed) -> Vec<String> {
        vec![
            "get-token".into(),
            format!("--issuer-url={}", bed.issuer),
            format!("--client-id={CC_CLIENT}"),
            format!("--client-secret={CC_SECRET}"),
            "--grant-type=client-credentials".into(),
            format!("--resource={RESOURCE}"),
        ]
    }

    /// [`cc_args`](Self::cc_args) with the client secret taken out, to pass in the environment
    /// (`KUBECRED_CLIENT_SECRET`): on the command line it earns a notice of its own, which tests
    /// counting stderr lines do not want.
    pub fn cc_args_secret_in_env(&self, bed: &Testbed) -> (Vec<String>, String) {
        let mut args = self.cc_args(bed);
        let at = args
            .iter()
            .position(|arg| arg.starts_with("--client-secret="))
            .unwrap();
        let secret = args.remove(at).replacen("--client-secret=", "", 1);
        (args, secret)
    }

    pub fn kubecred_owned(&self, args: &[String]) -> Command {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.kubecred(&refs)
    }

    /// Writes a kubeconfig whose user runs kubecred; returns its path.
    pub fn kubeconfig(&self, bed: &Testbed, spec: KubeconfigSpec) -> PathBuf {
        let mut cluster = json!({
            "server": bed.api_server,
            "certificate-authority-data": bed.ca_data,
        });
        if let Some(extension) = &spec.cluster_extension {
            cluster["extensions"] = json!([{
                "name": "client.authentication.k8s.io/exec",
                "extension": extension,
            }]);
        }
        let mut args = spec.args.clone();
        args.extend(self.cache_args(&spec.args));
        let mut exec = json!({
            "apiVersion": spec.api_version,
            "command": kubecred_bin(),
            "args": args,
            "interactiveMode": "Never",
            "provideClusterInfo": spec.provide_cluster_info,
        });
        if !spec.env.is_empty() {
            exec["env"] = Value::Array(
                spec.env
                    .iter()
                    .map(|(k, v)| json!({"name": k, "value": v}))
                    .collect(),
            );
        }
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "testbed", "cluster": cluster}],
            "users": [{"name": "sso", "user": {"exec": exec}}],
            "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": "sso"}}],
            "current-context": "testbed",
        });
        let path = self
            .dir
            .path()
            .join(format!("kubeconfig-{}.json", rand_suffix()));
        std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        path
    }

    pub fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Command {
        let mut cmd = self.base_command(&kubectl_bin());
        cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg("--request-timeout=60s")
            .args(args);
        cmd
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed).to_string()
}

pub struct KubeconfigSpec {
    pub api_version: &'static str,
    pub args: Vec<String>,
    pub provide_cluster_info: bool,
    pub cluster_extension: Option<Value>,
    pub env: Vec<(String, String)>,
}

impl KubeconfigSpec {
    pub fn new(api_version: &'static str, args: Vec<String>) -> Self {
        KubeconfigSpec {
            api_version,
            args,
            provide_cluster_info: false,
            cluster_extension: None,
            env: Vec::new(),
        }
    }
}

/// The outcome of a command, with assertions that show everything on failure.
pub struct Run {
    pub command: String,
    pub output: Output,
}

pub trait RunExt {
    fn run(&mut self) -> Run;
    fn run_with_stdin(&mut self, input: &str) -> Run;
}

impl RunExt for Command {
    fn run(&mut self) -> Run {
        let command = format!("{self:?}");
        let output = self
            .output()
            .unwrap_or_else(|err| panic!("running {command}: {err}"));
        Run { command, output }
    }

    fn run_with_stdin(&mut self, input: &str) -> Run {
        use std::io::Write;
        let command = format!("{self:?}");
        let mut child = self
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        Run { command, output }
    }
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn describe(&self) -> String {
        format!(
            "command: {}\nexit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.output.status.code(),
            self.stdout(),
            self.stderr()
        )
    }

    #[track_caller]
    pub fn success(self) -> Self {
        assert!(
            self.output.status.success(),
            "expected success\n{}",
            self.describe()
        );
        self
    }

    /// Failure with this exit code, one line on stderr, nothing on stdout.
    #[track_caller]
    pub fn failure(self, code: i32) -> Self {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "unexpected exit code\n{}",
            self.describe()
        );
        assert!(
            self.output.stdout.is_empty(),
            "stdout must be empty on failure\n{}",
            self.describe()
        );
        let stderr = self.stderr();
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("kubecred: error:"))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "exactly one error line expected\n{}",
            self.describe()
        );
        self
    }

    /// The one line kubecred wrote on stderr (a warning, a notice); fails unless there is
    /// exactly one and nothing else came from kubecred. Lines of other programs in the
    /// command (`keyctl session`'s "Joined session keyring") do not count.
    #[track_caller]
    pub fn only_kubecred_line(&self) -> String {
        let stderr = self.stderr();
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|line| !line.starts_with("Joined session keyring"))
            .collect();
        assert_eq!(lines.len(), 1, "one line expected\n{}", self.describe());
        assert!(lines[0].starts_with("kubecred: "), "{}", self.describe());
        lines[0].to_string()
    }

    #[track_caller]
    pub fn stderr_contains(self, needle: &str) -> Self {
        assert!(
            self.stderr().contains(needle),
            "stderr should contain {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_contains(self, needle: &str) -> Self {
        assert!(
            self.stdout().contains(needle),
            "stdout should contain {needle:?}\n{}",
            self.describe()
        );
        self
    }

    /// stderr carries none of these strings (stdout may: it holds the credential).
    #[track_caller]
    pub fn never_shows(self, secrets: &[&str]) -> Self {
        for secret in secrets {
            assert!(
                !self.stderr().contains(secret),
                "stderr leaks a secret\n{}",
                self.describe()
            );
        }
        self
    }

    /// The ExecCredential on stdout: exactly one JSON document and a newline.
    #[track_caller]
    pub fn credential(&self) -> Value {
        let stdout = self.stdout();
        assert!(
            stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
            "one line expected\n{}",
            self.describe()
        );
        let doc: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|err| panic!("{err}\n{}", self.describe()));
        assert_eq!(doc["kind"], "ExecCredential", "{}", self.describe());
        doc
    }

    pub fn token(&self) -> String {
        self.credential()["status"]["token"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// Decodes a JWT's claims without verification (tests only).
pub fn jwt_claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

pub fn exec_info(api_version: &str, interactive: bool) -> String {
    json!({"kind": "ExecCredential", "apiVersion": api_version, "spec": {"interactive": interactive}}).to_string()
}

/// Marks every cached token as expired (as if time had passed) by rewriting each `*expiry`
/// field of the cache entries to the year 2000. The refresh token is left as it is.
pub fn expire_cached_tokens(cache_dir: &Path) -> usize {
    fn rewrite(value: &mut Value) -> usize {
        match value {
            Value::Object(map) => {
                let mut changed = 0;
                for (key, field) in map.iter_mut() {
                    if key.ends_with("expiry") && field.is_string() {
                        *field = Value::String("2000-01-01T00:00:00Z".into());
                        changed += 1;
                    } else {
                        changed += rewrite(field);
                    }
                }
                changed
            }
            _ => 0,
        }
    }
    let mut changed = 0;
    for entry in std::fs::read_dir(cache_dir.join("tokens")).expect("cache tokens dir") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            changed += rewrite(&mut doc);
            std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        }
    }
    assert!(
        changed > 0,
        "no expiry fields found in {}",
        cache_dir.display()
    );
    changed
}

/// Whether some process (a background renewal, a login) holds the lock of an entry in
/// `cache_dir`: a test that changes the provider waits until this is false, so that a renewal
/// started earlier cannot meet the change halfway or keep the next one from starting.
pub fn an_entry_lock_is_held(cache_dir: &Path) -> bool {
    let Ok(locks) = std::fs::read_dir(cache_dir.join("locks")) else {
        return false;
    };
    locks.map(|entry| entry.unwrap().path()).any(|path| {
        let file = std::fs::File::open(&path).unwrap();
        match file.try_lock_shared() {
            Ok(()) => false, // Released when `file` closes.
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(err) => panic!("probing the lock {}: {err}", path.display()),
        }
    })
}

/// The bytes of every cache entry file, in a stable order: what "the entry stays as it was"
/// compares.
pub fn entry_bytes(cache_dir: &Path) -> Vec<Vec<u8>> {
    let mut files = cache_token_files(cache_dir);
    files.sort();
    assert!(
        !files.is_empty(),
        "no cache entry in {}",
        cache_dir.display()
    );
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// Files of the token cache (not locks, not discovery).
pub fn cache_token_files(cache_dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(cache_dir.join("tokens")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// `--browser-command` that signs in through Debian's headless Chromium (playwright-core).
pub fn browser_command() -> String {
    format!(
        "node {}",
        repo_root().join("tests/support/browser.mjs").display()
    )
}

/// kubecred arguments for a browser login with the public client.
pub fn authcode_args(bed: &Testbed) -> Vec<String> {
    vec![
        "get-token".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={PUBLIC_CLIENT}"),
        "--grant-type=authcode".into(),
        "--listen-address=127.0.0.1:0".into(),
        format!("--browser-command={}", browser_command()),
        "--scope=email".into(),
    ]
}

/// Lines in the browser launch log (one per browser.mjs run).
pub fn browser_launches(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// Starts every command at once (as parallel kubectl processes in a script would), waits for
/// all of them, asserts each succeeded, and returns their stdouts in order.
pub fn run_all_at_once(commands: impl IntoIterator<Item = Command>) -> Vec<String> {
    let children: Vec<(String, Child)> = commands
        .into_iter()
        .map(|mut cmd| {
            let shown = format!("{cmd:?}");
            let child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|err| panic!("starting {shown}: {err}"));
            (shown, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(shown, child)| {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "{shown} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .collect()
}

/// A CI-style kubeconfig user: client credentials configured in the cluster extension
/// (`provideClusterInfo`), the secret in the exec stanza's env, as a CI job would set it.
pub fn cc_extension_spec(bed: &Testbed, api_version: &'static str) -> KubeconfigSpec {
    let mut spec = KubeconfigSpec::new(api_version, vec!["get-token".into()]);
    spec.provide_cluster_info = true;
    spec.cluster_extension = Some(json!({
        "issuerURL": bed.issuer,
        "clientID": CC_CLIENT,
        "grantType": "client-credentials",
        "resource": RESOURCE,
    }));
    spec.env = vec![("KUBECRED_CLIENT_SECRET".into(), CC_SECRET.into())];
    spec
}

/// The one JSON line `{"gitVersion": …, "username": …}` that the client programs print after
/// calling `/version` and a SelfSubjectReview (tests/support/python_client.py, js_client.mjs,
/// examples/kube-client).
#[track_caller]
pub fn client_answer(run: &Run) -> Value {
    let stdout = run.stdout();
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "one line expected\n{}",
        run.describe()
    );
    serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}\n{}", run.describe()))
}

/// `args` and one more flag.
pub fn with_flag(args: &[String], flag: &str) -> Vec<String> {
    let mut args = args.to_vec();
    args.push(flag.into());
    args
}

/// Waits (bounded) until `done` holds; panics naming `what` if it never does.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `command` for at most `limit`: a hang is a test failure, not a hung test run.
pub fn run_bounded(command: &mut Command, limit: Duration) -> Run {
    let description = format!("{command:?}");
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{description} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Run {
        command: description,
        output: child.wait_with_output().unwrap(),
    }
}
