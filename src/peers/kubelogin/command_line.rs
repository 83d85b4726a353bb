//! int128/kubelogin's `get-token` command line as kubelogin itself reads it, at its HEAD
//! (pkg/cmd: root.go, get_token.go, authentication.go, tls.go, tokencache.go, pkce.go;
//! pflag through cobra, `crate::peers::pflag`), and the two flags 1.35 removed that older releases
//! still run: every flag it has, klog's global flags before or after the subcommand, the
//! values it keeps (`~` expanded as its `expandHomedir` does, a `stringSlice` split as CSV, an
//! `int` in Go's forms, the token cache directory from `KUBECACHEDIR`), and the checks it makes
//! before it runs.
//!
//! The one reader of a kubelogin command line. `convert-kubeconfig` reads a stanza with
//! [`read`], strictly: a stanza kubelogin would refuse is one kubecred leaves alone too; it
//! writes kubecred's equivalent (`to_kubecred.rs`) and finds the stanza's login in kubelogin's
//! cache by the names kubelogin gives it (`token_cache.rs`). kubecred run on a kubelogin stanza
//! as it is (`command:` changed, `oidc-login` kept) reads the same words with the same
//! [`pflag::read`], table and [`held`] values, leniently (`super::rewrite_argv`): what it does
//! not take goes on to kubecred's own parser, which knows kubelogin's names.

use crate::peers::pflag::{self, Flag, Parsed};
use crate::secret::Secret;

/// klog's flags (k8s.io/klog/v2 `InitFlags`), which kubelogin adds as persistent flags of its
/// root command: given before `get-token` or after it.
pub(crate) const KLOG_FLAGS: [Flag; 14] = [
    Flag::value("v").with_short('v'),
    Flag::value("vmodule"),
    Flag::boolean("logtostderr"),
    Flag::boolean("alsologtostderr"),
    Flag::value("log_dir"),
    Flag::value("log_file"),
    Flag::value("log_file_max_size"),
    Flag::boolean("add_dir_header"),
    Flag::boolean("skip_headers"),
    Flag::boolean("skip_log_headers"),
    Flag::boolean("one_output"),
    Flag::value("stderrthreshold"),
    Flag::value("log_backtrace_at"),
    Flag::boolean("legacy_stderr_threshold_behavior"),
];

/// `tlsOptions` (pkg/cmd/tls.go), which both the root command and `get-token` have.
const TLS_FLAGS: [Flag; 5] = [
    Flag::value("certificate-authority"),
    Flag::value("certificate-authority-data"),
    Flag::boolean("insecure-skip-tls-verify"),
    Flag::boolean("tls-renegotiation-once"),
    Flag::boolean("tls-renegotiation-freely"),
];

/// `authenticationOptions` (pkg/cmd/authentication.go), which both have too.
const AUTHENTICATION_FLAGS: [Flag; 11] = [
    Flag::value("grant-type"),
    Flag::value("listen-address"),
    Flag::boolean("skip-open-browser"),
    Flag::value("browser-command"),
    Flag::value("authentication-timeout-sec"),
    Flag::value("local-server-cert"),
    Flag::value("local-server-key"),
    Flag::value("open-url-after-authentication"),
    Flag::value("oidc-auth-request-extra-params"),
    Flag::value("username"),
    Flag::value("password"),
];

/// `get-token`'s own flags at kubelogin's HEAD (pkg/cmd/get_token.go, tokencache.go, pkce.go).
const GET_TOKEN_OWN_FLAGS: [Flag; 13] = [
    Flag::value("oidc-issuer-url"),
    Flag::value("oidc-client-id"),
    Flag::value("oidc-client-secret"),
    Flag::value("oidc-redirect-url"),
    Flag::value("oidc-extra-scope"),
    Flag::boolean("oidc-use-access-token"),
    Flag::value("oidc-request-header"),
    Flag::boolean("force-refresh"),
    Flag::value("token-cache-dir"),
    Flag::value("token-cache-storage"),
    Flag::boolean("oidc-use-pkce"),
    Flag::value("oidc-pkce-method"),
    Flag::boolean("help").with_short('h'),
];

/// The authentication options kubelogin 1.35 removed, which every release before it takes:
/// `--oidc-redirect-url-hostname` (b05e92d) and `--oidc-redirect-url-authcode-keyboard`
/// (19d4f62), deprecated since 1.33.
pub(crate) const REMOVED_IN_1_35: [Flag; 2] = [
    Flag::value("oidc-redirect-url-hostname"),
    Flag::value("oidc-redirect-url-authcode-keyboard"),
];

/// The root command's own flags (its standalone login): they only tell cobra which words
/// before the subcommand are values.
const ROOT_OWN_FLAGS: [Flag; 4] = [
    Flag::value("kubeconfig"),
    Flag::value("context"),
    Flag::value("user"),
    Flag::boolean("help").with_short('h'),
];

/// Every flag of `get-token`: its own, the TLS and authentication options, those 1.35 removed
/// (klog's are [`KLOG_FLAGS`]).
const GET_TOKEN_FLAGS: [Flag; 31] = joined(&[
    &GET_TOKEN_OWN_FLAGS,
    &TLS_FLAGS,
    &AUTHENTICATION_FLAGS,
    &REMOVED_IN_1_35,
]);

/// The table a `get-token` line is read with: [`GET_TOKEN_FLAGS`] and klog's.
pub(crate) const GET_TOKEN_TABLE: [Flag; 45] = joined(&[&GET_TOKEN_FLAGS, &KLOG_FLAGS]);

/// The flags cobra knows before kubelogin's subcommand: the root command's and klog's.
const ROOT_TABLE: [Flag; 34] = joined(&[
    &ROOT_OWN_FLAGS,
    &TLS_FLAGS,
    &AUTHENTICATION_FLAGS,
    &KLOG_FLAGS,
]);

/// The tables above in one piece each, made at compile time: a kubelogin line run as it is
/// reads them on the cache hit.
const fn joined<const N: usize>(parts: &[&[Flag]]) -> [Flag; N] {
    let mut out = [Flag::value(""); N];
    let mut at = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            at += 1;
            i += 1;
        }
        part += 1;
    }
    assert!(at == N, "the table's length is the sum of its parts'");
    out
}

/// Every flag of `get-token` (klog's are [`KLOG_FLAGS`]), for the tests that check kubecred's
/// parser and README against them.
#[cfg(test)]
pub(crate) fn get_token_flags() -> Vec<Flag> {
    GET_TOKEN_FLAGS.to_vec()
}

/// Takes kubelogin's subcommand out of `words` (cobra finds it among flags before it), which
/// keeps the other words in order; `None` when there is none (kubelogin's standalone login).
pub(crate) fn take_subcommand(words: &mut Vec<String>) -> Option<String> {
    let at = pflag::subcommand_at(words, &ROOT_TABLE)?;
    Some(words.remove(at))
}

/// How kubelogin holds a flag's value: the type of its pflag variable and what kubelogin does
/// to it before use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A string or a boolean, as given (a `stringArray`: each occurrence as given; a
    /// `stringToString` map too, which kubecred's parser splits as pflag does).
    AsGiven,
    /// A path (a `stringArray` of them, for `--certificate-authority`): a leading `~` expanded.
    Path,
    /// A `stringSlice`: each occurrence one line of CSV.
    List,
    /// An `int`: Go's `strconv.ParseInt(s, 0, 64)`.
    Int,
    /// klog's `-v`: a level, a decimal number.
    Verbosity,
    /// klog's other flags: they steer only kubelogin's own log.
    Logging,
}

/// How kubelogin holds `name`'s value.
pub(crate) fn holds(name: &str) -> Holds {
    match name {
        "certificate-authority" | "local-server-cert" | "local-server-key" | "token-cache-dir" => {
            Holds::Path
        }
        "oidc-extra-scope" | "listen-address" => Holds::List,
        "authentication-timeout-sec" => Holds::Int,
        "v" => Holds::Verbosity,
        _ if KLOG_FLAGS.iter().any(|flag| flag.name == name) => Holds::Logging,
        _ => Holds::AsGiven,
    }
}

/// One occurrence of `name` with `value`, as kubelogin holds it (`holds`, [`holds`]'s answer
/// for `name`): a list's CSV fields, a path with `~` expanded (`home` is asked only then), an
/// int in decimal; anything else as given. The error is kubelogin's refusal.
pub(crate) fn held(
    holds: Holds,
    name: &str,
    value: &str,
    home: &dyn Fn() -> String,
) -> Result<Vec<String>, String> {
    match holds {
        Holds::List => pflag::csv_fields(value).map_err(|why| format!("--{name}: {why}")),
        Holds::Path if value.starts_with('~') => Ok(vec![expand_homedir(value, &home())]),
        Holds::Int => match go_int(value) {
            Some(number) => Ok(vec![number.to_string()]),
            None => Err(format!(
                "--{name} {:?} is not a whole number",
                crate::text::printable_brief(value, 40)
            )),
        },
        _ => Ok(vec![value.to_string()]),
    }
}

/// kubelogin's default login timeout and listen addresses (pkg/cmd/cmd.go).
pub const DEFAULT_AUTH_TIMEOUT_SEC: i64 = 180;
pub const DEFAULT_LISTEN_ADDRESSES: [&str; 2] = ["127.0.0.1:8000", "127.0.0.1:18000"];

/// `--grant-type`, and the grant kubelogin runs for it (`grantOptionSet`: `auto` is the
/// password grant when `--username` is given, the browser login otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    AuthcodeBrowser,
    AuthcodeKeyboard,
    Password,
    DeviceCode,
    ClientCredentials,
}

/// `--token-cache-storage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Disk,
    Keyring,
    None,
}

/// `--oidc-pkce-method` (or the deprecated `--oidc-use-pkce`), as `oidc.PKCEMethod` numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pkce {
    Auto = 0,
    No = 1,
    S256 = 2,
}

/// `--tls-renegotiation-once` / `-freely`, as Go's `tls.RenegotiationSupport` numbers them
/// (`once` wins when both are given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renegotiation {
    Never = 0,
    Once = 1,
    Freely = 2,
}

/// A `get-token` command line with the values kubelogin holds once it has read it.
#[derive(Debug, Clone)]
pub struct GetToken {
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// `--oidc-redirect-url` as written; kubelogin's default otherwise (`http://localhost:PORT`,
    /// https with `--local-server-cert`).
    pub redirect_url: Option<String>,
    pub extra_scopes: Vec<String>,
    pub use_access_token: bool,
    /// `--oidc-request-header`: `None` when not given (a nil map to Go).
    pub request_headers: Option<Vec<(String, String)>>,
    pub force_refresh: bool,
    /// The token cache directory, `~` expanded: `--token-cache-dir`, else `$KUBECACHEDIR/oidc-login`,
    /// else `~/.kube/cache/oidc-login`.
    pub token_cache_dir: String,
    pub token_cache_storage: Storage,
    /// `--certificate-authority`, each `~` expanded.
    pub ca_files: Vec<String>,
    pub ca_data: Vec<String>,
    pub skip_tls_verify: bool,
    pub renegotiation: Renegotiation,
    pub pkce: Pkce,
    /// `--grant-type` as given (`auto` by default).
    pub grant_type: String,
    pub grant: Grant,
    /// `--listen-address`, `None` for kubelogin's default.
    pub listen_addresses: Option<Vec<String>>,
    pub skip_open_browser: bool,
    pub browser_command: Option<String>,
    pub auth_timeout_sec: i64,
    pub local_server_cert: Option<String>,
    pub local_server_key: Option<String>,
    pub open_url_after_authentication: Option<String>,
    /// `--oidc-auth-request-extra-params`: `None` when not given.
    pub auth_request_extra_params: Option<Vec<(String, String)>>,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// klog's `-v`.
    pub verbosity: u32,
    /// klog's other flags given: they only steer kubelogin's own logging.
    pub logging_flags: Vec<&'static str>,
    /// `--oidc-redirect-url-hostname`, which only kubelogin before 1.35 takes.
    pub redirect_url_hostname: Option<String>,
    /// `--oidc-redirect-url-authcode-keyboard`, which only kubelogin before 1.35 takes: 1.33
    /// and 1.34 as `--oidc-redirect-url` (over it, when both are given), 1.32 and older as the
    /// redirect URI of `--grant-type authcode-keyboard` alone.
    pub redirect_url_authcode_keyboard: Option<String>,
    /// The flags given, by name: what tells which releases of kubelogin take the line
    /// (`token_cache.rs`).
    pub flags_given: Vec<&'static str>,
}

impl GetToken {
    /// Whether `--name` was given.
    pub fn gave(&self, name: &str) -> bool {
        self.flags_given.contains(&name)
    }
}

/// What a kubelogin command line runs.
#[derive(Debug)]
pub enum Read {
    GetToken(Box<GetToken>),
    /// Another of kubelogin's commands (its standalone login, `setup`, `clean`, `version`),
    /// which print no credential: what it runs, as "kubelogin …" ends.
    OtherCommand(String),
    /// What kubelogin itself refuses, and why.
    Refused(String),
}

/// Reads `words` (what follows `kubelogin`, or `kubectl oidc-login`) as kubelogin does, with
/// `env` the environment it runs in (for `KUBECACHEDIR` and `HOME`).
pub fn read(words: &[String], env: &dyn Fn(&str) -> Option<String>) -> Read {
    let mut rest = words.to_vec();
    let Some(subcommand) = take_subcommand(&mut rest) else {
        return Read::OtherCommand(
            "without a command: its standalone login, which writes the kubeconfig".into(),
        );
    };
    match subcommand.as_str() {
        "get-token" => {}
        "setup" | "clean" | "version" | "help" | "completion" => {
            return Read::OtherCommand(subcommand);
        }
        other => {
            return Read::Refused(format!(
                "kubelogin has no command {:?}",
                crate::text::printable_brief(other, 40)
            ));
        }
    }
    match from_flags(&rest, &GET_TOKEN_TABLE, env) {
        Ok(line) => Read::GetToken(Box::new(line)),
        Err(why) => Read::Refused(why),
    }
}

/// The values of a line read: each as kubelogin holds it ([`held`]).
struct Values<'a> {
    parsed: &'a Parsed,
    home: String,
}

impl Values<'_> {
    /// Every occurrence of `name`, held.
    fn all(&self, name: &str) -> Result<Vec<String>, String> {
        let mut all = Vec::new();
        for value in self.parsed.all(name) {
            all.extend(held(holds(name), name, value, &|| self.home.clone())?);
        }
        Ok(all)
    }

    /// The last occurrence of `name` (pflag: a later one replaces an earlier one), held.
    fn last(&self, name: &str) -> Result<Option<String>, String> {
        match self.parsed.last(name) {
            Some(value) => Ok(held(holds(name), name, value, &|| self.home.clone())?.pop()),
            None => Ok(None),
        }
    }

    /// The last occurrence of a flag whose value cannot be refused, unless it is empty (which
    /// kubelogin takes as not given).
    fn nonempty(&self, name: &str) -> Option<String> {
        self.last(name)
            .ok()
            .flatten()
            .filter(|value| !value.is_empty())
    }

    fn text(&self, name: &str) -> Option<String> {
        self.parsed.last(name).map(str::to_string)
    }

    fn on(&self, name: &str) -> bool {
        self.parsed.on(name)
    }

    /// A `stringToString` map over every occurrence: `None` when not given (a nil map).
    fn map(&self, name: &str) -> Result<Option<Vec<(String, String)>>, String> {
        if !self.parsed.given(name) {
            return Ok(None);
        }
        pflag::string_map(self.parsed.all(name))
            .map(Some)
            .map_err(|why| format!("--{name}: {why}"))
    }
}

fn from_flags(
    words: &[String],
    table: &[Flag],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<GetToken, String> {
    let parsed = pflag::parse(words, table)?;
    if parsed.on("help") {
        return Err("it asks kubelogin for its help, not a token".into());
    }
    if let Some(word) = parsed.positionals.first() {
        return Err(format!(
            "get-token takes no arguments, and {:?} is one",
            crate::text::printable_brief(word, 60)
        ));
    }
    let home = env("HOME")
        .or_else(|| env("USERPROFILE"))
        .unwrap_or_default();
    let values = Values {
        parsed: &parsed,
        home,
    };
    let (grant_type, grant) = grant(&values)?;
    Ok(GetToken {
        issuer_url: values
            .nonempty("oidc-issuer-url")
            .ok_or("--oidc-issuer-url is missing")?,
        client_id: values
            .nonempty("oidc-client-id")
            .ok_or("--oidc-client-id is missing")?,
        client_secret: values.nonempty("oidc-client-secret").map(Secret::new),
        redirect_url: values.nonempty("oidc-redirect-url"),
        extra_scopes: values.all("oidc-extra-scope")?,
        use_access_token: values.on("oidc-use-access-token"),
        request_headers: values.map("oidc-request-header")?,
        force_refresh: values.on("force-refresh"),
        token_cache_dir: token_cache_dir(&values, env)?,
        token_cache_storage: storage(&values)?,
        ca_files: values.all("certificate-authority")?,
        ca_data: values.all("certificate-authority-data")?,
        skip_tls_verify: values.on("insecure-skip-tls-verify"),
        renegotiation: renegotiation(&values),
        pkce: pkce(&values)?,
        grant_type,
        grant,
        listen_addresses: parsed
            .given("listen-address")
            .then(|| values.all("listen-address"))
            .transpose()?,
        skip_open_browser: values.on("skip-open-browser"),
        browser_command: values.nonempty("browser-command"),
        auth_timeout_sec: auth_timeout_sec(&values)?,
        local_server_cert: values.nonempty("local-server-cert"),
        local_server_key: values.nonempty("local-server-key"),
        open_url_after_authentication: values.nonempty("open-url-after-authentication"),
        auth_request_extra_params: values.map("oidc-auth-request-extra-params")?,
        username: values.nonempty("username"),
        password: values.nonempty("password").map(Secret::new),
        verbosity: verbosity(&values)?,
        logging_flags: logging_flags(&parsed),
        redirect_url_hostname: values.nonempty("oidc-redirect-url-hostname"),
        redirect_url_authcode_keyboard: values.nonempty("oidc-redirect-url-authcode-keyboard"),
        flags_given: flags_given(&parsed),
    })
}

/// `--grant-type` as given, and the grant kubelogin runs for it.
fn grant(values: &Values) -> Result<(String, Grant), String> {
    let grant_type = values.text("grant-type").unwrap_or_else(|| "auto".into());
    let auto = match values.nonempty("username") {
        Some(_) => Grant::Password,
        None => Grant::AuthcodeBrowser,
    };
    let grant = choice(
        values,
        "grant-type",
        auto,
        &[
            ("auto", auto),
            ("authcode", Grant::AuthcodeBrowser),
            ("authcode-keyboard", Grant::AuthcodeKeyboard),
            ("password", Grant::Password),
            ("device-code", Grant::DeviceCode),
            ("client-credentials", Grant::ClientCredentials),
        ],
    )?;
    Ok((grant_type, grant))
}

fn storage(values: &Values) -> Result<Storage, String> {
    choice(
        values,
        "token-cache-storage",
        Storage::Disk,
        &[
            ("disk", Storage::Disk),
            ("keyring", Storage::Keyring),
            ("none", Storage::None),
        ],
    )
}

/// `--oidc-use-pkce` wins over `--oidc-pkce-method`.
fn pkce(values: &Values) -> Result<Pkce, String> {
    if values.on("oidc-use-pkce") {
        return Ok(Pkce::S256);
    }
    choice(
        values,
        "oidc-pkce-method",
        Pkce::Auto,
        &[("auto", Pkce::Auto), ("no", Pkce::No), ("S256", Pkce::S256)],
    )
}

/// The value of a flag that takes one of `choices` (`default` when not given), or kubelogin's
/// refusal.
fn choice<T: Copy>(
    values: &Values,
    name: &str,
    default: T,
    choices: &[(&str, T)],
) -> Result<T, String> {
    let Some(given) = values.text(name) else {
        return Ok(default);
    };
    match choices.iter().find(|(word, _)| *word == given) {
        Some((_, value)) => Ok(*value),
        None => {
            let words: Vec<&str> = choices.iter().map(|(word, _)| *word).collect();
            Err(format!(
                "--{name} {:?} is not one of {}",
                crate::text::printable_brief(&given, 40),
                words.join(", ")
            ))
        }
    }
}

fn renegotiation(values: &Values) -> Renegotiation {
    if values.on("tls-renegotiation-once") {
        Renegotiation::Once
    } else if values.on("tls-renegotiation-freely") {
        Renegotiation::Freely
    } else {
        Renegotiation::Never
    }
}

fn auth_timeout_sec(values: &Values) -> Result<i64, String> {
    let Some(decimal) = values.last("authentication-timeout-sec")? else {
        return Ok(DEFAULT_AUTH_TIMEOUT_SEC);
    };
    Ok(decimal.parse().expect("held as a decimal i64"))
}

fn verbosity(values: &Values) -> Result<u32, String> {
    match values.text("v") {
        None => Ok(0),
        Some(value) => value.parse::<u32>().map_err(|_| {
            format!(
                "-v {:?} is not a log level (a number)",
                crate::text::printable_brief(&value, 20)
            )
        }),
    }
}

/// `--token-cache-dir`, else `$KUBECACHEDIR/oidc-login` — which counts when set at all, even
/// empty (kubelogin's `os.LookupEnv`) —, else `~/.kube/cache/oidc-login`; `~` expanded.
fn token_cache_dir(
    values: &Values,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let dir = match values.text("token-cache-dir") {
        Some(dir) => dir,
        None => match env("KUBECACHEDIR") {
            Some(dir) => go_join(&[&dir, "oidc-login"]),
            None => "~/.kube/cache/oidc-login".into(),
        },
    };
    Ok(held(Holds::Path, "token-cache-dir", &dir, &|| {
        values.home.clone()
    })?
    .pop()
    .unwrap_or_default())
}

/// klog's flags given other than `-v`.
fn logging_flags(parsed: &Parsed) -> Vec<&'static str> {
    KLOG_FLAGS
        .iter()
        .filter(|flag| flag.name != "v" && parsed.given(flag.name))
        .map(|flag| flag.name)
        .collect()
}

fn flags_given(parsed: &Parsed) -> Vec<&'static str> {
    let mut given: Vec<&'static str> = parsed.flags.iter().map(|(name, _)| *name).collect();
    given.sort_unstable();
    given.dedup();
    given
}

/// kubelogin's `expandHomedir`: a leading `~` (of any path that starts with one, `~x` too) is
/// the home directory, joined and cleaned as Go's `filepath.Join` does.
fn expand_homedir(path: &str, home: &str) -> String {
    match path.strip_prefix('~') {
        Some(rest) => go_join(&[home, rest]),
        None => path.to_string(),
    }
}

/// Go's `filepath.Join` on unix: the non-empty parts joined with `/`, then `Clean`ed (no
/// doubled slashes, no `.`, `..` resolved lexically, no trailing slash).
fn go_join(parts: &[&str]) -> String {
    let joined = parts
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    if joined.is_empty() {
        return String::new();
    }
    let rooted = joined.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => match out.last() {
                Some(&last) if last != ".." => {
                    out.pop();
                }
                _ if rooted => {}
                _ => out.push(".."),
            },
            part => out.push(part),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, which pflag's `IntVar` uses: decimal, or `0x`, `0o`,
/// `0b`, a leading `0` for octal, `_` between digits with a prefix.
fn go_int(text: &str) -> Option<i64> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex.replace('_', ""))
    } else if let Some(octal) = lower.strip_prefix("0o") {
        (8, octal.replace('_', ""))
    } else if let Some(binary) = lower.strip_prefix("0b") {
        (2, binary.replace('_', ""))
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].replace('_', ""))
    } else {
        (10, lower.replace('_', ""))
    };
    if digits.is_empty()
        || digits.starts_with('+')
        || digits.starts_with('-')
        || lower.ends_with('_')
    {
        return None;
    }
    let value = i64::from_str_radix(&digits, radix).ok()?;
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn home(name: &str) -> Option<String> {
        (name == "HOME").then(|| "/home/ada".to_string())
    }

    fn line(text: &str) -> GetToken {
        match read(&words(text), &home) {
            Read::GetToken(line) => *line,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn kubelogins_own_fixtures_read_as_it_reads_them() {
        // pkg/cmd/cmd_test.go, "Defaults".
        let defaults = line(
            "get-token --oidc-issuer-url https://issuer.example.com --oidc-client-id YOUR_CLIENT_ID",
        );
        assert_eq!(defaults.issuer_url, "https://issuer.example.com");
        assert_eq!(defaults.token_cache_dir, "/home/ada/.kube/cache/oidc-login");
        assert_eq!(defaults.grant, Grant::AuthcodeBrowser);
        assert_eq!(defaults.auth_timeout_sec, 180);
        assert!(defaults.listen_addresses.is_none());
        // "FullOptions".
        let full = line(
            "get-token --oidc-issuer-url https://issuer.example.com --oidc-client-id YOUR_CLIENT_ID --oidc-client-secret YOUR_CLIENT_SECRET --oidc-extra-scope email --oidc-extra-scope profile --oidc-request-header Origin=localhost:8080 --token-cache-storage keyring -v1",
        );
        assert_eq!(full.extra_scopes, ["email", "profile"]);
        assert_eq!(
            full.request_headers,
            Some(vec![("Origin".into(), "localhost:8080".into())])
        );
        assert_eq!(full.token_cache_storage, Storage::Keyring);
        assert_eq!(full.verbosity, 1);
        // "AccessToken": pflag's `=true`.
        assert!(
            line("get-token --oidc-issuer-url https://i --oidc-client-id c --oidc-use-access-token=true")
                .use_access_token
        );
        // "HomedirExpansion".
        let home_line = line(
            "get-token --oidc-issuer-url https://i --oidc-client-id c --certificate-authority ~/.kube/ca.crt --local-server-cert ~/.kube/oidc-server.crt --local-server-key ~/.kube/oidc-server.key --token-cache-dir ~/.kube/oidc-cache",
        );
        assert_eq!(home_line.ca_files, ["/home/ada/.kube/ca.crt"]);
        assert_eq!(
            home_line.local_server_cert.as_deref(),
            Some("/home/ada/.kube/oidc-server.crt")
        );
        assert_eq!(home_line.token_cache_dir, "/home/ada/.kube/oidc-cache");
        // "MissingMandatoryOptions", "TooManyArgs".
        for (text, why) in [
            ("get-token", "--oidc-issuer-url is missing"),
            (
                "get-token --oidc-issuer-url https://i",
                "--oidc-client-id is missing",
            ),
            (
                "get-token --oidc-issuer-url https://i --oidc-client-id c foo",
                "takes no arguments",
            ),
        ] {
            match read(&words(text), &home) {
                Read::Refused(reason) => assert!(reason.contains(why), "{text}: {reason}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        // The root command and setup print no credential.
        for text in [
            "",
            "--kubeconfig /k --context c --user google -v1",
            "setup --oidc-issuer-url https://i",
        ] {
            assert!(
                matches!(read(&words(text), &home), Read::OtherCommand(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn global_flags_may_come_before_the_subcommand() {
        let before = line("-v1 get-token --oidc-issuer-url=https://i --oidc-client-id=c");
        assert_eq!(before.verbosity, 1);
        let spaced =
            line("-v 2 --logtostderr get-token --oidc-issuer-url=https://i --oidc-client-id=c");
        assert_eq!(spaced.verbosity, 2);
        assert_eq!(spaced.logging_flags, ["logtostderr"]);
        // cobra lets get-token's own flags stand before it too.
        assert_eq!(
            line("--oidc-issuer-url=https://i get-token --oidc-client-id=c").issuer_url,
            "https://i"
        );
    }

    #[test]
    fn values_are_kubelogins() {
        let l = line(
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c --grant-type=password --tls-renegotiation-freely --oidc-pkce-method=no --authentication-timeout-sec=0x3c --listen-address=localhost:8000,127.0.0.1:9000 --oidc-auth-request-extra-params=acr_values=a,b",
        );
        assert_eq!(l.grant, Grant::Password);
        assert_eq!(l.renegotiation, Renegotiation::Freely);
        assert_eq!(l.pkce, Pkce::No);
        assert_eq!(l.auth_timeout_sec, 60);
        assert_eq!(
            l.listen_addresses,
            Some(vec!["localhost:8000".into(), "127.0.0.1:9000".into()])
        );
        assert_eq!(
            l.auth_request_extra_params,
            Some(vec![("acr_values".into(), "a,b".into())])
        );
        // auto with a user name is the password grant.
        assert_eq!(
            line("get-token --oidc-issuer-url=https://i --oidc-client-id=c --username=bob").grant,
            Grant::Password
        );
        // KUBECACHEDIR moves the default cache; set but empty, it is the current directory's.
        let cache = |value: &str| {
            let env = |name: &str| match name {
                "KUBECACHEDIR" => Some(value.to_string()),
                "HOME" => Some("/home/ada".to_string()),
                _ => None,
            };
            match read(
                &words("get-token --oidc-issuer-url=https://i --oidc-client-id=c"),
                &env,
            ) {
                Read::GetToken(line) => line.token_cache_dir,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(cache("/var/cache/k"), "/var/cache/k/oidc-login");
        assert_eq!(cache(""), "oidc-login");
        for (text, why) in [
            ("--grant-type=browser", "--grant-type"),
            ("--oidc-pkce-method=s256", "--oidc-pkce-method"),
            ("--token-cache-storage=file", "--token-cache-storage"),
            ("--oidc-use-access-token=yes", "not a boolean"),
            ("--tls-renegotiation", "unknown flag"),
        ] {
            match read(
                &words(&format!(
                    "get-token --oidc-issuer-url=https://i --oidc-client-id=c {text}"
                )),
                &home,
            ) {
                Read::Refused(reason) => assert!(reason.contains(why), "{text}: {reason}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn go_paths_and_numbers() {
        assert_eq!(
            expand_homedir("~/.kube//x/../ca.crt", "/home/ada"),
            "/home/ada/.kube/ca.crt"
        );
        assert_eq!(expand_homedir("~x", "/home/ada"), "/home/ada/x");
        assert_eq!(expand_homedir("rel/ca.crt", "/home/ada"), "rel/ca.crt");
        assert_eq!(expand_homedir("~/a", ""), "/a");
        assert_eq!(go_join(&["", "oidc-login"]), "oidc-login");
        assert_eq!(go_int("180"), Some(180));
        assert_eq!(go_int("010"), Some(8));
        assert_eq!(go_int("-5"), Some(-5));
        assert_eq!(go_int("1_000"), Some(1000));
        assert_eq!(go_int("0x1_0"), Some(16));
        assert_eq!(go_int("abc"), None);
    }
}
