//! What a kubeconfig user runs today, and the kubecred stanza that does the same: the legacy
//! `auth-provider: oidc` (its settings and tokens are in the kubeconfig), int128/kubelogin (`kubectl
//! oidc-login get-token …`, `kubelogin get-token …`, `kubectl-oidc_login get-token …`: its flags
//! read by kubecred's own parser, which knows kubelogin's names, and written back in kubecred's),
//! and Azure's kubelogin (`azure.rs`). Everything else is left alone, with the reason.
//!
//! No I/O here but reading nothing: a plan (`plan.rs`) is made from the user's entry alone; the
//! tokens are found and carried by the caller.

use super::azure;
use super::plan::{Conversion, KubeloginStorage, Plan, Tokens};
use crate::acquire::Carried;
use crate::cli::{self, CacheStorageArg, GrantTypeArg, TokenArgs};
use crate::kubeconfig::EnvVar;
use crate::kubelogin;
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

/// `auth-provider: {name: oidc, config: {...}}`: client-go's legacy OIDC plugin, whose settings
/// and tokens the kubeconfig holds.
fn auth_provider(provider: &Value) -> Plan {
    let name = provider.get("name").and_then(Value::as_str).unwrap_or("");
    match name {
        "oidc" => {}
        "azure" => {
            return skip(
                "the azure auth-provider (removed from kubectl in 1.26): convert it with Azure's `kubelogin convert-kubeconfig` first, then run this again",
            );
        }
        "gcp" => {
            return skip(
                "the gcp auth-provider (removed from kubectl in 1.26): Google's gke-gcloud-auth-plugin replaces it",
            );
        }
        other => {
            return skip(format!(
                "auth-provider {:?}, not oidc",
                crate::text::printable(other)
            ));
        }
    }
    let config = provider.get("config");
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
    let mut env = Vec::new();
    if let Some(secret) = text("client-secret") {
        env.push(EnvVar::new("KUBECRED_CLIENT_SECRET", secret));
    }
    let known = [
        "idp-issuer-url",
        "client-id",
        "client-secret",
        "extra-scopes",
        "idp-certificate-authority",
        "idp-certificate-authority-data",
        "id-token",
        "refresh-token",
    ];
    let mut notes = Vec::new();
    if let Some(Value::Mapping(config)) = config {
        let unknown: Vec<String> = config
            .keys()
            .filter_map(Value::as_str)
            .filter(|key| !known.contains(key))
            .map(|key| crate::text::printable(key).into_owned())
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "left out its auth-provider config {} (client-go's oidc plugin does not read it either)",
                unknown.join(", ")
            ));
        }
    }
    let secret = |key: &str| text(key).map(Secret::new);
    Plan::Convert(Conversion {
        from: "auth-provider oidc".into(),
        args: super::super::stanza::exec_args(&args),
        env,
        tokens: Tokens::InKubeconfig(Carried {
            id_token: secret("id-token"),
            refresh_token: secret("refresh-token"),
        }),
        notes,
    })
}

/// An `exec` stanza: kubelogin's (either one) is converted, kubecred's is done already, the
/// rest is not OIDC.
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
        "kubectl" if args.first().map(String::as_str) == Some("oidc-login") => Some(args.clone()),
        "kubectl-oidc_login" => Some(prefixed(&args)),
        "kubelogin" if azure::is_azure(&args, &env) => return azure::plan(&args, &env),
        "kubelogin" => Some(prefixed(&args)),
        _ => None,
    };
    match kubelogin_words {
        Some(words) => int128(words, env),
        None => skip(format!(
            "runs {}, not an OIDC login kubecred can take over",
            crate::text::printable_brief(command, 80)
        )),
    }
}

/// `oidc-login` before the words, as `kubectl oidc-login …` has them: kubecred's parser then
/// reads kubelogin's `-v1` too.
fn prefixed(args: &[String]) -> Vec<String> {
    let mut words = vec!["oidc-login".to_string()];
    words.extend(args.iter().cloned());
    words
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

/// int128/kubelogin: `words` start with `oidc-login`.
fn int128(mut words: Vec<String>, old_env: Vec<(String, String)>) -> Plan {
    // kubelogin's cache directory is where its tokens are, not where kubecred's go: kubecred
    // keeps its own cache where `kubecred status` and `logout --all` find it.
    let token_cache_dir = take_flag(&mut words, "--token-cache-dir");
    let mut argv = vec!["kubecred".to_string()];
    argv.extend(words);
    let mut args = match parsed(argv) {
        Ok(args) => args,
        Err(reason) => return skip(format!("its kubelogin flags: {reason}")),
    };
    let auto_grant = matches!(args.grant_type, None | Some(GrantTypeArg::Auto));
    let given = kubelogin::Given {
        pkce: args.pkce.is_some(),
        redirect_url: args.redirect_url.is_some(),
        auto_grant,
        username: args.federation.username.is_some(),
        tls_callback: (
            args.local_server_cert.is_some(),
            args.local_server_key.is_some(),
        ),
    };
    let converted = match kubelogin::converted(&args.kubelogin, given) {
        Ok(converted) => converted,
        Err(err) => {
            return skip(format!(
                "kubecred refuses it: {}",
                crate::error::one_line(&err)
            ));
        }
    };
    if converted.password_grant {
        args.grant_type = Some(GrantTypeArg::Password);
    }
    let storage = match args.cache_storage {
        Some(CacheStorageArg::Keyring) => KubeloginStorage::Keyring,
        Some(CacheStorageArg::None) => KubeloginStorage::None,
        _ => KubeloginStorage::Disk,
    };
    let mut env: Vec<EnvVar> = old_env
        .into_iter()
        .map(|(name, value)| EnvVar::new(name, value))
        .collect();
    let mut notes = Vec::new();
    if let Some(secret) = args.client_secret.take() {
        env.push(EnvVar::new("KUBECRED_CLIENT_SECRET", secret));
        notes.push("moved --oidc-client-secret from the command line to the stanza's env (KUBECRED_CLIENT_SECRET)".into());
    }
    if let Some(password) = converted.password {
        env.push(EnvVar {
            name: "KUBECRED_PASSWORD".into(),
            value: password,
        });
        notes.push(
            "moved --password from the command line to the stanza's env (KUBECRED_PASSWORD)".into(),
        );
    }
    if !converted.dropped.is_empty() {
        notes.push(format!(
            "dropped kubelogin's {}: kubecred has no use for it",
            converted.dropped.join(", ")
        ));
    }
    let mut new_args = super::super::stanza::exec_args(&args);
    new_args.extend(converted.args);
    if args.force_refresh {
        new_args.push("--force-refresh".into());
    }
    match args.verbose {
        0 => {}
        1 => new_args.push("-v".into()),
        _ => new_args.push("-vv".into()),
    }
    let dir = token_cache_dir
        .map(|dir| expand_home(&dir))
        .unwrap_or_else(default_kubelogin_cache_dir);
    let tokens = if args.grant_type == Some(GrantTypeArg::ClientCredentials) {
        Tokens::NotNeeded
    } else {
        Tokens::KubeloginCache {
            dir,
            storage,
            access_token: args.use_access_token,
        }
    };
    Plan::Convert(Conversion {
        from: "int128/kubelogin".into(),
        args: new_args,
        env,
        tokens,
        notes,
    })
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

/// Removes every `--NAME=VALUE` and `--NAME VALUE` from `words`; the last value (pflag: the
/// later one wins).
fn take_flag(words: &mut Vec<String>, name: &str) -> Option<String> {
    let mut value = None;
    let mut kept = Vec::with_capacity(words.len());
    let mut rest = std::mem::take(words).into_iter();
    while let Some(word) = rest.next() {
        if word == "--" {
            kept.push(word);
            kept.extend(rest.by_ref());
            break;
        }
        if let Some(inline) = word.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            value = Some(inline.to_string());
        } else if word == name {
            value = rest.next();
        } else {
            kept.push(word);
        }
    }
    *words = kept;
    value
}

/// kubelogin's default token cache: `$KUBECACHEDIR/oidc-login`, else `~/.kube/cache/oidc-login`.
fn default_kubelogin_cache_dir() -> PathBuf {
    match std::env::var_os("KUBECACHEDIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("oidc-login"),
        None => home().join(".kube").join("cache").join("oidc-login"),
    }
}

/// A leading `~` as kubelogin expands it (its `expandHomedir`).
fn expand_home(path: &str) -> PathBuf {
    match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '\\']) => {
            home().join(rest.trim_start_matches(['/', '\\']))
        }
        _ => PathBuf::from(path),
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    "--pkce",
                    "--redirect-url=http://localhost/",
                    "-v"
                ],
                "{command}"
            );
            assert_eq!(c.env[0].name, "KUBECRED_CLIENT_SECRET");
            let Tokens::KubeloginCache {
                dir,
                storage,
                access_token,
            } = c.tokens
            else {
                panic!()
            };
            assert_eq!(dir, PathBuf::from("/tmp/kl"));
            assert_eq!(storage, KubeloginStorage::Keyring);
            assert!(!access_token);
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
        .starts_with("kubecred refuses it: --local-server-cert and --local-server-key go together"));
        assert!(
            reason("exec: {command: kubelogin, args: [get-token, --oidc-bogus=1]}")
                .starts_with("its kubelogin flags: unexpected argument")
        );
        assert!(reason("auth-provider: {name: gcp}").contains("gke-gcloud-auth-plugin"));
    }

    #[test]
    fn kubelogins_cache_dir_is_where_its_tokens_are() {
        let mut words: Vec<String> = ["get-token", "--token-cache-dir", "~/kl", "-v1"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(
            take_flag(&mut words, "--token-cache-dir").as_deref(),
            Some("~/kl")
        );
        assert_eq!(words, ["get-token", "-v1"]);
        assert_eq!(expand_home("~/kl"), home().join("kl"));
        assert_eq!(expand_home("/abs"), PathBuf::from("/abs"));
    }
}
