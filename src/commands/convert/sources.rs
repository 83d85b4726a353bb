//! What a kubeconfig user runs today, and the kubecred stanza that does the same: the legacy
//! `auth-provider: oidc` (its settings and tokens are in the kubeconfig), int128/kubelogin (`kubectl
//! oidc-login get-token …`, `kubelogin get-token …`, `kubectl-oidc_login get-token …`: its flags
//! read by kubecred's own parser, which knows kubelogin's names, and written back in kubecred's),
//! Azure's kubelogin (`azure.rs`) and gke-gcloud-auth-plugin (`gke.rs`). Everything else is left
//! alone, with the reason.
//!
//! No I/O here but reading nothing: a plan (`plan.rs`) is made from the user's entry alone; the
//! tokens are found and carried by the caller.

use super::azure;
use super::gke;
use super::plan::{Conversion, KubeloginCache, Plan, Tokens};
use crate::acquire::Carried;
use crate::cli::{self, TokenArgs};
use crate::config::{Config, TokenKind};
use crate::kubeconfig::EnvVar;
use crate::peers::kubelogin::command_line::{self, GetToken, Grant as KubeloginGrant, Read};
use crate::peers::kubelogin::to_kubecred::to_kubecred;
use crate::peers::kubelogin::token_cache;
use crate::secret::Secret;
use serde_norway::Value;
use std::ffi::OsString;
use std::path::PathBuf;

/// The plan for the user whose entry body (`user:`) is `body`.
pub(super) fn plan(body: Option<&Value>) -> Plan {
    let Some(body) = body.filter(|body| body.is_mapping()) else {
        return Plan::Skip("no credentials".into());
    };
    if let Some(provider) = body.get("auth-provider") {
        return auth_provider(provider);
    }
    if let Some(exec) = body.get("exec") {
        return exec_plugin(exec);
    }
    let has = |key: &str| body.get(key).is_some();
    Plan::Skip(
        if has("token") || has("tokenFile") {
            "a static token, not an OIDC login"
        } else if has("client-certificate") || has("client-certificate-data") {
            "a client certificate, not an OIDC login"
        } else if has("username") || has("password") {
            "basic authentication, not an OIDC login"
        } else {
            "no credentials kubecred can take over"
        }
        .into(),
    )
}

fn skip(reason: impl Into<String>) -> Plan {
    Plan::Skip(reason.into())
}

/// `auth-provider: {name: …, config: {...}}`: client-go's legacy plugins; `oidc` is converted.
fn auth_provider(provider: &Value) -> Plan {
    let name = provider.get("name").and_then(Value::as_str).unwrap_or("");
    match name {
        "oidc" => oidc_auth_provider(provider.get("config")),
        // Removed from kubectl in 1.26; read as Azure's own convert-kubeconfig reads it.
        "azure" => azure::plan_auth_provider(provider.get("config")),
        "gcp" => skip(
            "the gcp auth-provider (removed from kubectl in 1.26): Google's gke-gcloud-auth-plugin replaces it",
        ),
        other => skip(format!(
            "auth-provider {:?}, not oidc",
            crate::text::printable(other)
        )),
    }
}

/// The keys of client-go's oidc plugin that the conversion reads.
const OIDC_CONFIG_KEYS: [&str; 8] = [
    "idp-issuer-url",
    "client-id",
    "client-secret",
    "extra-scopes",
    "idp-certificate-authority",
    "idp-certificate-authority-data",
    "id-token",
    "refresh-token",
];

/// `auth-provider: oidc`: client-go's legacy OIDC plugin, whose settings and tokens the
/// kubeconfig holds.
fn oidc_auth_provider(config: Option<&Value>) -> Plan {
    let text = |key: &str| {
        config
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let Some(issuer) = text("idp-issuer-url") else {
        return skip("its auth-provider oidc has no idp-issuer-url");
    };
    let Some(client_id) = text("client-id") else {
        return skip("its auth-provider oidc has no client-id");
    };
    let mut argv = vec![
        "kubecred".to_string(),
        "get-token".to_string(),
        format!("--issuer-url={issuer}"),
        format!("--client-id={client_id}"),
    ];
    for scope in text("extra-scopes")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        argv.push(format!("--scope={scope}"));
    }
    if let Some(path) = text("idp-certificate-authority") {
        argv.push(format!("--certificate-authority={path}"));
    }
    if let Some(data) = text("idp-certificate-authority-data") {
        argv.push(format!("--certificate-authority-data={data}"));
    }
    let args = match parsed(argv) {
        Ok(args) => args,
        Err(reason) => return skip(format!("its auth-provider oidc settings: {reason}")),
    };
    let env = text("client-secret")
        .map(|secret| EnvVar::new("KUBECRED_CLIENT_SECRET", secret))
        .into_iter()
        .collect();
    let secret = |key: &str| text(key).map(Secret::new);
    Plan::Convert(Conversion {
        from: "auth-provider oidc".into(),
        args: super::super::stanza::exec_args(&args),
        env,
        tokens: Tokens::InKubeconfig(Carried {
            id_token: secret("id-token"),
            refresh_token: secret("refresh-token"),
        }),
        notes: unread_config_keys(config),
        kubelogin: None,
    })
}

/// The note on the oidc plugin's config keys the conversion does not read, if any.
fn unread_config_keys(config: Option<&Value>) -> Vec<String> {
    let Some(Value::Mapping(config)) = config else {
        return Vec::new();
    };
    let unknown: Vec<String> = config
        .keys()
        .filter_map(Value::as_str)
        .filter(|key| !OIDC_CONFIG_KEYS.contains(key))
        .map(|key| crate::text::printable(key).into_owned())
        .collect();
    if unknown.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "left out its auth-provider config {} (client-go's oidc plugin does not read it either)",
        unknown.join(", ")
    )]
}

/// An `exec` stanza: kubelogin's (either one) and gke-gcloud-auth-plugin's (`gke.rs`) are
/// converted, kubecred's is done already, the rest is not a login kubecred takes over.
fn exec_plugin(exec: &Value) -> Plan {
    let command = exec.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = match exec.get("args") {
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => text.clone(),
                other => serde_norway::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            })
            .collect(),
        _ => Vec::new(),
    };
    let env: Vec<(String, String)> = match exec.get("env") {
        Some(Value::Sequence(items)) => items
            .iter()
            .filter_map(|item| {
                Some((
                    item.get("name")?.as_str()?.to_string(),
                    item.get("value")?.as_str().unwrap_or("").to_string(),
                ))
            })
            .collect(),
        _ => Vec::new(),
    };
    let program = program_name(command);
    if program.starts_with("kubecred") || program.starts_with("kubectl-kubecred") {
        return skip("already runs kubecred");
    }
    let kubelogin_words: Option<Vec<String>> = match program.as_str() {
        "kubectl" if args.first().map(String::as_str) == Some("oidc-login") => {
            Some(args[1..].to_vec())
        }
        "kubectl-oidc_login" => Some(args.clone()),
        "kubelogin" if crate::peers::azure_kubelogin::is_azure(&args, &env) => {
            return azure::plan(&args, &env);
        }
        "kubelogin" => Some(args.clone()),
        "gke-gcloud-auth-plugin" => return gke::plan(&args, &env),
        _ => None,
    };
    match kubelogin_words {
        Some(words) => int128(&words, env),
        None => skip(format!(
            "runs {}, not an OIDC login kubecred can take over",
            crate::text::printable_brief(command, 80)
        )),
    }
}

/// The program's name without directory and `.exe`.
fn program_name(command: &str) -> String {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    let name = name
        .strip_suffix(".exe")
        .or_else(|| name.strip_suffix(".EXE"))
        .unwrap_or(name);
    name.to_string()
}

/// int128/kubelogin: `words` are what follows `kubelogin` (or `kubectl oidc-login`), read as
/// kubelogin reads them in the environment kubectl gives the plugin (the stanza's `env` over
/// this process's: `KUBECACHEDIR`, `HOME`), written in kubecred's flags.
fn int128(words: &[String], old_env: Vec<(String, String)>) -> Plan {
    let env_value = |name: &str| match old_env.iter().rev().find(|(n, _)| n == name) {
        Some((_, value)) => Some(value.clone()),
        None => std::env::var(name).ok(),
    };
    let line = match command_line::read(words, &env_value) {
        Read::GetToken(line) => line,
        Read::OtherCommand(what) => {
            return skip(format!(
                "runs int128/kubelogin {what}, not get-token: it prints no credential for kubectl"
            ));
        }
        Read::Refused(why) => return skip(format!("int128/kubelogin refuses it too: {why}")),
    };
    let converted = match to_kubecred(&line) {
        Ok(converted) => converted,
        Err(why) => return skip(format!("stays with int128/kubelogin: {why}")),
    };
    let mut env: Vec<EnvVar> = old_env
        .into_iter()
        .map(|(name, value)| EnvVar::new(name, value))
        .collect();
    env.extend(converted.env.into_iter().map(|(name, value)| EnvVar {
        name: name.into(),
        value,
    }));
    let mut args = vec!["get-token".to_string()];
    args.extend(converted.args);
    let tokens = if line.grant == KubeloginGrant::ClientCredentials {
        Tokens::NotNeeded
    } else {
        Tokens::KubeloginCache(Box::new(KubeloginCache {
            dir: PathBuf::from(&line.token_cache_dir),
            storage: line.token_cache_storage,
            names: token_cache::file_names(&line),
            access_token: line.use_access_token,
        }))
    };
    Plan::Convert(Conversion {
        from: "int128/kubelogin".into(),
        args,
        env,
        tokens,
        notes: converted.notes,
        kubelogin: Some(line),
    })
}

/// Where kubecred's reading of a converted stanza differs from kubelogin's reading of the
/// original, if it does: what the provider is asked and what kubectl is handed must be the same.
pub(super) fn differs_from_kubelogin(config: &Config, line: &GetToken) -> Option<String> {
    if config.issuer_as_given != line.issuer_url {
        return differs(
            "issuer",
            line.issuer_url.clone(),
            config.issuer_as_given.clone(),
        );
    }
    differs_in_scopes(config, line)
        .or_else(|| differs_in_parameters(config, line))
        .or_else(|| differs_in_headers(config, line))
        .or_else(|| differs_in_token(config, line))
}

fn differs(what: &str, kubelogin: String, kubecred: String) -> Option<String> {
    Some(format!(
        "kubecred would read its {what} as {kubecred}, kubelogin as {kubelogin}"
    ))
}

/// `NAME=VALUE`s, sorted.
fn sorted_pairs(list: &[(String, String)]) -> Vec<String> {
    let mut list: Vec<String> = list.iter().map(|(k, v)| format!("{k}={v}")).collect();
    list.sort();
    list
}

fn differs_in_scopes(config: &Config, line: &GetToken) -> Option<String> {
    let mut theirs: Vec<&str> = line
        .extra_scopes
        .iter()
        .flat_map(|scope| scope.split_whitespace())
        .chain(["openid"])
        .collect();
    theirs.sort_unstable();
    theirs.dedup();
    let mut ours: Vec<&str> = config.scopes.iter().map(String::as_str).collect();
    ours.sort_unstable();
    ours.dedup();
    if theirs != ours {
        return differs("scopes", theirs.join(" "), ours.join(" "));
    }
    None
}

/// The extra parameters, which kubelogin sends with the browser and keyboard logins'
/// authorization request and the client credentials' token request.
fn differs_in_parameters(config: &Config, line: &GetToken) -> Option<String> {
    let sends_params = matches!(
        line.grant,
        KubeloginGrant::AuthcodeBrowser
            | KubeloginGrant::AuthcodeKeyboard
            | KubeloginGrant::ClientCredentials
    );
    let theirs = sorted_pairs(
        line.auth_request_extra_params
            .as_deref()
            .filter(|_| sends_params)
            .unwrap_or_default(),
    );
    let ours = sorted_pairs(&config.login.auth_params);
    if theirs != ours {
        return differs("extra parameters", theirs.join(", "), ours.join(", "));
    }
    None
}

fn differs_in_headers(config: &Config, line: &GetToken) -> Option<String> {
    let theirs = sorted_pairs(line.request_headers.as_deref().unwrap_or_default());
    let ours: Vec<(String, String)> = config
        .http
        .request_headers
        .iter()
        .map(|header| (header.name.clone(), header.value.expose().to_string()))
        .collect();
    if theirs != sorted_pairs(&ours) {
        // Values are not shown: a header may carry an API key.
        return Some("kubecred would read its request headers otherwise than kubelogin".into());
    }
    None
}

/// The token kubectl is handed.
fn differs_in_token(config: &Config, line: &GetToken) -> Option<String> {
    let wants_access_token = line.use_access_token;
    if wants_access_token == (config.token_kind == TokenKind::AccessToken) {
        return None;
    }
    let (theirs, ours) = if wants_access_token {
        ("the access token", "the ID token")
    } else {
        ("the ID token", "the access token")
    };
    differs("token for kubectl", theirs.into(), ours.into())
}

/// A command line (program name first) as get-token's settings, read from the words alone; the
/// error is the usage line.
fn parsed(argv: Vec<String>) -> Result<TokenArgs, String> {
    let argv: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    match cli::parse_stanza_get_token(argv.clone()) {
        Ok(Some(args)) => Ok(args),
        Ok(None) => Err("it does not run get-token".into()),
        Err(err) => Err(cli::usage_error_line(&err, &argv)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::kubelogin::command_line::Storage;

    fn yaml(text: &str) -> Value {
        serde_norway::from_str(text).unwrap()
    }

    fn conversion(plan: Plan) -> Conversion {
        match plan {
            Plan::Convert(conversion) => conversion,
            Plan::Skip(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn an_auth_provider_oidc_user_becomes_kubecred_flags_with_its_secret_in_env() {
        let body = yaml(
            "auth-provider:\n  name: oidc\n  config:\n    idp-issuer-url: https://idp.example\n    client-id: k8s\n    client-secret: s3cret\n    extra-scopes: groups,email\n    idp-certificate-authority-data: QQ==\n    id-token: eyJ.x.y\n    refresh-token: rt\n    something-else: 1\n",
        );
        let c = conversion(plan(Some(&body)));
        assert_eq!(c.from, "auth-provider oidc");
        assert_eq!(
            c.args,
            [
                "get-token",
                "--issuer-url=https://idp.example",
                "--client-id=k8s",
                "--scope=groups",
                "--scope=email",
                "--certificate-authority-data=QQ=="
            ]
        );
        assert_eq!(c.env.len(), 1);
        assert_eq!(c.env[0].name, "KUBECRED_CLIENT_SECRET");
        assert_eq!(c.env[0].value.expose(), "s3cret");
        assert!(!c.args.iter().any(|a| a.contains("s3cret")));
        let Tokens::InKubeconfig(carried) = c.tokens else {
            panic!()
        };
        assert_eq!(carried.refresh_token.unwrap().expose(), "rt");
        assert!(c.notes[0].contains("something-else"), "{:?}", c.notes);
    }

    #[test]
    fn every_kubelogin_form_is_read_with_kubecreds_own_mapping() {
        for (command, args) in [
            ("kubectl", "[oidc-login, get-token]"),
            ("/usr/local/bin/kubelogin", "[get-token]"),
            ("kubectl-oidc_login.exe", "[get-token]"),
        ] {
            let body = yaml(&format!(
                "exec:\n  command: {command}\n  args: {}\n",
                args.replace(
                    ']',
                    ", --oidc-issuer-url=https://idp.example, --oidc-client-id=k8s, --oidc-client-secret=s3cret, --oidc-extra-scope=email, --oidc-pkce-method=S256, --token-cache-dir=/tmp/kl, --token-cache-storage=keyring, -v1]"
                )
            ));
            let c = conversion(plan(Some(&body)));
            assert_eq!(c.from, "int128/kubelogin");
            assert_eq!(
                c.args,
                [
                    "get-token",
                    "--issuer-url=https://idp.example",
                    "--client-id=k8s",
                    "--scope=email",
                    "--cache-storage=keyring",
                    "--redirect-url=http://localhost",
                    "--pkce",
                    "-v"
                ],
                "{command}"
            );
            assert_eq!(c.env[0].name, "KUBECRED_CLIENT_SECRET");
            let Tokens::KubeloginCache(cache) = c.tokens else {
                panic!()
            };
            assert_eq!(cache.dir, PathBuf::from("/tmp/kl"));
            assert_eq!(cache.storage, Storage::Keyring);
            // One name for each release whose key differs and that runs the stanza (1.32, the
            // first with --oidc-pkce-method and --token-cache-storage, 1.33, 1.34, 1.36).
            assert_eq!(cache.names.unwrap().len(), 4);
            assert!(!cache.access_token);
        }
    }

    /// Every case of int128/kubelogin's own command tests (pkg/cmd/cmd_test.go at its HEAD),
    /// as a stanza: its get-token cases converted to a stanza kubecred resolves to the settings
    /// the case expects kubelogin to run with, the others left with their reason.
    #[test]
    fn every_case_of_kubelogins_own_command_tests_is_converted_alike_or_left() {
        use crate::commands::stanza;
        use crate::config::{CacheStorage, ClientAuth, Grant, TokenKind};
        use crate::exec_credential::ExecInfo;
        let home = tempfile::tempdir().unwrap();
        let home_text = home.path().display().to_string();
        std::fs::create_dir_all(home.path().join(".kube")).unwrap();
        std::fs::write(home.path().join(".kube/ca.crt"), "not read until a request").unwrap();
        let stanza = |args: &str| {
            yaml(&format!(
                "exec:\n  command: kubelogin\n  args: [{}]\n  env: [{{name: HOME, value: '{home_text}'}}]\n",
                args.split_whitespace().collect::<Vec<_>>().join(", ")
            ))
        };
        let converted = |args: &str| {
            let c = conversion(plan(Some(&stanza(args))));
            let config = stanza::resolve(&c.args, &c.env, ExecInfo::absent())
                .unwrap_or_else(|err| panic!("{args}: {err:?}"));
            let line = c.kubelogin.as_ref().unwrap();
            assert_eq!(differs_from_kubelogin(&config, line), None, "{args}");
            (c, config)
        };
        let cache_dir = |c: &Conversion| match &c.tokens {
            Tokens::KubeloginCache(cache) => cache.dir.clone(),
            other => panic!("{other:?}"),
        };
        let base = "get-token --oidc-issuer-url https://issuer.example.com --oidc-client-id YOUR_CLIENT_ID";

        // "Defaults".
        let (c, config) = converted(base);
        assert_eq!(config.issuer_as_given, "https://issuer.example.com");
        assert_eq!(config.client.id, "YOUR_CLIENT_ID");
        assert_eq!(config.grant, Grant::Authcode);
        assert_eq!(config.token_kind, TokenKind::IdToken);
        assert_eq!(config.login.redirect.as_str(), "http://localhost");
        let listen: Vec<String> = config
            .login
            .listen_addresses
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(listen, ["127.0.0.1:8000", "127.0.0.1:18000"]);
        assert_eq!(
            config.login.auth_timeout,
            std::time::Duration::from_secs(180)
        );
        assert_eq!(cache_dir(&c), home.path().join(".kube/cache/oidc-login"));
        // "FullOptions".
        let (c, config) = converted(&format!(
            "{base} --oidc-client-secret YOUR_CLIENT_SECRET --oidc-extra-scope email --oidc-extra-scope profile --oidc-request-header Origin=localhost:8080 --token-cache-storage keyring -v1"
        ));
        assert!(
            matches!(&config.client.auth, ClientAuth::Secret { .. }),
            "{:?}",
            config.client.auth
        );
        assert!(!c.args.iter().any(|a| a.contains("YOUR_CLIENT_SECRET")));
        assert_eq!(config.scopes, ["openid", "email", "profile"]);
        assert_eq!(config.http.request_headers[0].name, "Origin");
        assert_eq!(config.cache.storage, CacheStorage::Keyring);
        assert_eq!(config.verbose, 1);
        // "AccessToken".
        let (_, config) = converted(&format!("{base} --oidc-use-access-token=true"));
        assert_eq!(config.token_kind, TokenKind::AccessToken);
        // "HomedirExpansion".
        let (c, config) = converted(&format!(
            "{base} --certificate-authority ~/.kube/ca.crt --local-server-cert ~/.kube/oidc-server.crt --local-server-key ~/.kube/oidc-server.key --token-cache-dir ~/.kube/oidc-cache"
        ));
        assert_eq!(config.http.tls.extra_ca_pems.len(), 1);
        let tls = config.login.callback_tls.unwrap();
        assert_eq!(tls.cert, home.path().join(".kube/oidc-server.crt"));
        assert_eq!(tls.key, home.path().join(".kube/oidc-server.key"));
        assert_eq!(config.login.redirect.as_str(), "https://localhost");
        assert_eq!(cache_dir(&c), home.path().join(".kube/oidc-cache"));

        // What kubelogin itself refuses or runs instead of get-token.
        let reason = |args: &str| match plan(Some(&stanza(args))) {
            Plan::Skip(why) => why,
            Plan::Convert(c) => panic!("{args}: converted {:?}", c.args),
        };
        for (args, why) in [
            ("get-token", "--oidc-issuer-url is missing"),
            (
                &format!("{base} foo") as &str,
                "get-token takes no arguments",
            ),
            ("", "standalone login"),
            (
                "--kubeconfig /path/to/kubeconfig --context hello.k8s.local --user google -v1",
                "standalone login",
            ),
            ("some", "kubelogin has no command"),
            ("setup", "setup, not get-token"),
            (
                "setup --oidc-issuer-url https://issuer.example.com --oidc-client-id YOUR_CLIENT --oidc-extra-scope email,profile",
                "setup, not get-token",
            ),
        ] {
            let reason = reason(args);
            assert!(reason.contains(why), "{args:?}: {reason}");
        }
    }

    #[test]
    fn what_is_not_oidc_or_refused_is_left_with_the_reason() {
        let reason = |text: &str| match plan(Some(&yaml(text))) {
            Plan::Skip(why) => why,
            Plan::Convert(c) => panic!("converted: {c:?}"),
        };
        assert_eq!(reason("token: abc"), "a static token, not an OIDC login");
        assert!(
            reason("exec: {command: aws, args: [eks, get-token, --cluster-name, x]}")
                .starts_with("runs aws, not an OIDC login")
        );
        assert_eq!(
            reason("exec: {command: /opt/bin/kubecred, args: [get-token]}"),
            "already runs kubecred"
        );
        assert!(reason(
            "exec: {command: kubelogin, args: [get-token, --oidc-issuer-url=https://i, --oidc-client-id=c, --local-server-cert=c.pem]}"
        )
        .starts_with("stays with int128/kubelogin: it gives one of --local-server-cert and --local-server-key"));
        assert_eq!(
            reason("exec: {command: kubelogin, args: [get-token, --oidc-bogus=1]}"),
            "int128/kubelogin refuses it too: unknown flag --oidc-bogus"
        );
        assert!(
            reason(
                "exec: {command: kubectl, args: [oidc-login, setup, --oidc-issuer-url=https://i]}"
            )
            .starts_with("runs int128/kubelogin setup, not get-token")
        );
        assert!(reason("auth-provider: {name: gcp}").contains("gke-gcloud-auth-plugin"));
    }

    #[test]
    fn gke_gcloud_auth_plugin_stanzas_as_gcloud_writes_them_become_the_google_source() {
        // `gcloud container clusters get-credentials`: the plugin by name on PATH, by the SDK's
        // path, or the Windows .exe; with `--use_application_default_credentials` when
        // gcloud's container/use_application_default_credentials is set.
        for command in [
            "gke-gcloud-auth-plugin",
            "/usr/lib/google-cloud-sdk/bin/gke-gcloud-auth-plugin",
            "C:\\Program Files (x86)\\Google\\Cloud SDK\\google-cloud-sdk\\bin\\gke-gcloud-auth-plugin.exe",
        ] {
            let body = yaml(&format!(
                "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: '{command}'\n  installHint: Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin\n  provideClusterInfo: true\n"
            ));
            let converted = conversion(plan(Some(&body)));
            assert_eq!(
                converted.args,
                ["get-token", "--grant-type=google", "--google-source=gcloud"],
                "{command}"
            );
        }
        let body = yaml(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: gke-gcloud-auth-plugin\n  args: [--use_application_default_credentials]\n  provideClusterInfo: true\n",
        );
        assert_eq!(
            conversion(plan(Some(&body))).args,
            ["get-token", "--grant-type=google"]
        );
    }

    #[test]
    fn kubelogins_cache_dir_is_read_in_the_stanzas_environment() {
        let body = yaml(
            "exec:\n  command: kubelogin\n  args: [get-token, --oidc-issuer-url=https://i, --oidc-client-id=c]\n  env:\n  - {name: KUBECACHEDIR, value: /srv/kube-cache}\n",
        );
        let Tokens::KubeloginCache(cache) = conversion(plan(Some(&body))).tokens else {
            panic!()
        };
        assert_eq!(cache.dir, PathBuf::from("/srv/kube-cache/oidc-login"));
        let body = yaml(
            "exec:\n  command: kubelogin\n  args: [get-token, --oidc-issuer-url=https://i, --oidc-client-id=c, --token-cache-dir=~/kl]\n  env:\n  - {name: HOME, value: /home/other}\n",
        );
        let Tokens::KubeloginCache(cache) = conversion(plan(Some(&body))).tokens else {
            panic!()
        };
        assert_eq!(cache.dir, PathBuf::from("/home/other/kl"));
    }

    /// kubelogin 1.31 to 1.35 name a stanza's cache entry otherwise than 1.36 does (its key's
    /// types changed at 1.32, 1.33, 1.34 and 1.36): a login any of them cached is carried.
    #[test]
    fn a_login_cached_by_kubelogin_1_31_to_1_35_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let body = yaml(&format!(
            "exec:\n  command: kubelogin\n  args: [get-token, --oidc-issuer-url=https://issuer.example.com, --oidc-client-id=YOUR_CLIENT_ID, '--token-cache-dir={}']\n",
            dir.path().display()
        ));
        // The names Go gives this stanza's key at each release (token_cache.rs's tests).
        for (release, name) in [
            (
                "1.31",
                "e530403589a0bedc4ab55ff11b5c04208a6f23bcaf0f7a13edf7aa56868b5ab9",
            ),
            (
                "1.32",
                "aca842f295a8a03b7b20e26047836d75768c4d72db65df22d5ad58b51016026c",
            ),
            (
                "1.33",
                "49141d10c45d3004bd21dd1f42ac0b64fc8ded666498b0895bb94689ae479c80",
            ),
            (
                "1.34",
                "1a0eff17fbd5fc228abb0943e272fd44deb0f1bec027480fe8ff37c985e5308c",
            ),
        ] {
            let document = format!(r#"{{"id_token":"","refresh_token":"rt-{release}"}}"#);
            std::fs::write(dir.path().join(name), document).unwrap();
            let Tokens::KubeloginCache(cache) = conversion(plan(Some(&body))).tokens else {
                panic!()
            };
            let found = super::super::kubelogin_cache::find(&cache)
                .unwrap_or_else(|why| panic!("{release}: {why}"));
            assert!(found.place.ends_with(name), "{release}: {}", found.place);
            let refresh = found.carried.refresh_token.unwrap();
            assert_eq!(refresh.expose(), format!("rt-{release}"));
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
    }

    /// The flags kubelogin 1.35 removed are converted as the releases before it ran them.
    #[test]
    fn the_flags_kubelogin_1_35_removed_are_converted_as_older_releases_run_them() {
        use crate::commands::stanza;
        use crate::exec_credential::ExecInfo;
        let converted = |extra: &str| {
            let body = yaml(&format!(
                "exec:\n  command: kubelogin\n  args: [get-token, --oidc-issuer-url=https://i, --oidc-client-id=c, {extra}]\n"
            ));
            let c = conversion(plan(Some(&body)));
            let config = stanza::resolve(&c.args, &c.env, ExecInfo::absent())
                .unwrap_or_else(|err| panic!("{extra}: {err:?}"));
            assert_eq!(
                differs_from_kubelogin(&config, c.kubelogin.as_ref().unwrap()),
                None
            );
            (c, config)
        };
        let names = |c: &Conversion| match &c.tokens {
            Tokens::KubeloginCache(cache) => cache.names.clone().unwrap().len(),
            other => panic!("{other:?}"),
        };
        // The keyboard login sends it, in every release that takes it.
        let (c, config) = converted(
            "--grant-type=authcode-keyboard, --oidc-redirect-url-authcode-keyboard=urn:ietf:wg:oauth:2.0:oob",
        );
        assert_eq!(config.login.redirect.as_str(), "urn:ietf:wg:oauth:2.0:oob");
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        // Its login under the names of 1.31, 1.32, 1.33 and 1.34 (1.35 and later refuse it).
        assert_eq!(names(&c), 4);
        // The browser login, as 1.33 and 1.34 run it, and the note says how older ones did.
        let (c, config) = converted("--oidc-redirect-url-authcode-keyboard=http://127.0.0.1:8000");
        assert_eq!(config.login.redirect.as_str(), "http://127.0.0.1:8000");
        assert!(
            c.notes[0].contains(
                "kubelogin 1.32 and older used it only with --grant-type authcode-keyboard"
            ),
            "{:?}",
            c.notes
        );
        // --oidc-redirect-url-hostname: its login found under the names of 1.31 to 1.34.
        let (c, config) = converted("--oidc-redirect-url-hostname=127.0.0.1");
        assert_eq!(config.login.redirect.as_str(), "http://127.0.0.1");
        assert_eq!(names(&c), 4);
    }
}
