//! An int128/kubelogin `get-token` line (as kubelogin reads it, `command_line.rs`) in kubecred's
//! flags, for the stanza `convert-kubeconfig` writes: the same issuer, client, scopes, grant,
//! redirect URI (as written, or kubelogin's own `http://localhost:PORT`), listener, TLS trust,
//! request headers and extra parameters, and the same token handed to kubectl. Secrets go to the
//! stanza's `env`, never to its args. What kubelogin does that kubecred cannot do the same way
//! is not converted to something else: the line stays with kubelogin, and the error says why.
//! Where kubelogin's releases run a flag differently, the line is converted as the releases
//! that document the flag run it, and a note says how the others did.
//! The caller resolves the result as get-token will and checks it against the line.

use super::command_line::{
    DEFAULT_AUTH_TIMEOUT_SEC, DEFAULT_LISTEN_ADDRESSES, GetToken, Grant, Pkce, Renegotiation,
    Storage,
};
use crate::secret::Secret;

/// kubecred's stanza for a kubelogin line.
#[derive(Debug, Default)]
pub struct Kubecred {
    /// get-token's args, `get-token` first, in kubecred's flag names.
    pub args: Vec<String>,
    /// Secrets for the stanza's `env`, by variable name.
    pub env: Vec<(&'static str, Secret)>,
    /// What was dropped or moved, said under the user's line.
    pub notes: Vec<String>,
}

impl Kubecred {
    fn arg(&mut self, name: &str, value: &str) {
        self.args.push(format!("--{name}={value}"));
    }

    fn flag(&mut self, word: &str) {
        self.args.push(word.to_string());
    }
}

/// kubecred's equivalent of `line`; the error is why it stays with kubelogin.
pub fn to_kubecred(line: &GetToken) -> Result<Kubecred, String> {
    let mut out = Kubecred::default();
    provider_and_scopes(line, &mut out)?;
    grant_and_token(line, &mut out);
    storage_and_trust(line, &mut out)?;
    if matches!(line.grant, Grant::AuthcodeBrowser | Grant::AuthcodeKeyboard) {
        redirect_and_listener(line, &mut out)?;
        match line.pkce {
            Pkce::Auto => {}
            Pkce::No => out.flag("--pkce=false"),
            Pkce::S256 => out.flag("--pkce"),
        }
    }
    browser(line, &mut out)?;
    requests(line, &mut out);
    secrets(line, &mut out);
    dropped(line, &mut out);
    Ok(out)
}

/// The issuer, the client and the scopes.
fn provider_and_scopes(line: &GetToken, out: &mut Kubecred) -> Result<(), String> {
    out.arg("issuer-url", &line.issuer_url);
    out.arg("client-id", &line.client_id);
    for scope in &line.extra_scopes {
        if scope.contains(',') {
            return Err(format!(
                "its scope {scope:?} holds a comma, which kubecred's --scope would split"
            ));
        }
        out.arg("scope", scope);
    }
    // kubelogin asks for `openid` with every grant; kubecred adds it itself to the logins of a
    // person and to an ID token asked of client credentials, not to their access token.
    if line.grant == Grant::ClientCredentials && line.use_access_token {
        out.arg("scope", "openid");
    }
    Ok(())
}

/// The grant (and the password grant's user), and the token kubectl is handed.
fn grant_and_token(line: &GetToken, out: &mut Kubecred) {
    match (line.grant, line.grant_type.as_str()) {
        (Grant::AuthcodeBrowser, "auto") => {}
        (Grant::AuthcodeBrowser, _) => out.arg("grant-type", "authcode"),
        (Grant::AuthcodeKeyboard, _) => out.arg("grant-type", "authcode-keyboard"),
        (Grant::Password, _) => out.arg("grant-type", "password"),
        (Grant::DeviceCode, _) => out.arg("grant-type", "device-code"),
        (Grant::ClientCredentials, _) => out.arg("grant-type", "client-credentials"),
    }
    if line.grant == Grant::Password
        && let Some(username) = &line.username
    {
        out.arg("username", username);
    }
    match (line.grant, line.use_access_token) {
        (_, true) => out.flag("--use-access-token"),
        // kubelogin's client credentials hand kubectl the ID token, verified.
        (Grant::ClientCredentials, false) => out.flag("--use-access-token=false"),
        _ => {}
    }
}

/// Where tokens are kept, and the provider's TLS.
fn storage_and_trust(line: &GetToken, out: &mut Kubecred) -> Result<(), String> {
    match line.token_cache_storage {
        Storage::Disk => {}
        Storage::Keyring => out.flag("--cache-storage=keyring"),
        Storage::None => out.flag("--cache-storage=none"),
    }
    for path in &line.ca_files {
        out.arg("certificate-authority", path);
    }
    for data in &line.ca_data {
        if data.contains(',') {
            return Err(
                "its --certificate-authority-data holds a comma, which is not base64".into(),
            );
        }
        out.arg("certificate-authority-data", data);
    }
    if line.skip_tls_verify {
        out.flag("--insecure-skip-tls-verify");
    }
    if line.renegotiation != Renegotiation::Never {
        return Err(format!(
            "--tls-renegotiation-{}: its provider asks for TLS renegotiation, which kubecred's TLS (rustls) never does, so every login would fail",
            if line.renegotiation == Renegotiation::Once {
                "once"
            } else {
                "freely"
            }
        ));
    }
    Ok(())
}

/// The browser and keyboard logins' redirect URI, and where the listener is.
fn redirect_and_listener(line: &GetToken, out: &mut Kubecred) -> Result<(), String> {
    let tls = match (&line.local_server_cert, &line.local_server_key) {
        (Some(cert), Some(key)) => {
            // kubelogin reads them relative to where kubectl runs it, as kubecred does: kept as
            // written (client-go runs a plugin in kubectl's working directory).
            out.arg("local-server-cert", cert);
            out.arg("local-server-key", key);
            true
        }
        (None, None) => false,
        _ => {
            return Err("it gives one of --local-server-cert and --local-server-key, and kubelogin cannot serve https with one".into());
        }
    };
    if line.grant == Grant::AuthcodeKeyboard {
        // kubelogin's keyboard login sends the redirect URI it is given, and none otherwise:
        // --oidc-redirect-url-authcode-keyboard to every release that takes it (1.33 and 1.34
        // over --oidc-redirect-url), --oidc-redirect-url from 1.33.
        let redirect = line
            .redirect_url_authcode_keyboard
            .as_ref()
            .or(line.redirect_url.as_ref())
            .ok_or(
                "--grant-type authcode-keyboard without --oidc-redirect-url: kubelogin sends no redirect_uri (since 1.33; 1.32 and older sent urn:ietf:wg:oauth:2.0:oob), kubecred always sends one (add the one registered for the client, then convert)",
            )?;
        out.arg("redirect-url", redirect);
        return Ok(());
    }
    let redirect = browser_redirect(line, tls, out);
    out.arg("redirect-url", &redirect);
    listener(line, &redirect, out);
    Ok(())
}

/// The browser login's redirect URI: as written, or kubelogin's own, `http://localhost:PORT`
/// with no path (oauth2cli), its host from `--oidc-redirect-url-hostname` where given.
fn browser_redirect(line: &GetToken, tls: bool, out: &mut Kubecred) -> String {
    if let Some(redirect) = &line.redirect_url_authcode_keyboard {
        out.notes.push(
            "took --oidc-redirect-url-authcode-keyboard for the redirect URI, as kubelogin 1.33 and 1.34 do (over --oidc-redirect-url); kubelogin 1.32 and older used it only with --grant-type authcode-keyboard, and 1.35 and later refuse it".into(),
        );
        return redirect.clone();
    }
    let scheme = if tls { "https" } else { "http" };
    match (&line.redirect_url, &line.redirect_url_hostname) {
        (Some(redirect), _) => redirect.clone(),
        (None, Some(host)) => format!("{scheme}://{host}"),
        (None, None) => format!("{scheme}://localhost"),
    }
}

/// kubecred listens on the port the redirect URI names; kubelogin listens on its defaults (or
/// `--listen-address`) whatever the URI says: kept where they differ.
fn listener(line: &GetToken, redirect: &str, out: &mut Kubecred) {
    if let Some(addresses) = &line.listen_addresses {
        for address in addresses {
            out.arg("listen-address", address);
        }
        return;
    }
    let Some(port) = written_port(redirect) else {
        return;
    };
    let suffix = format!(":{port}");
    if DEFAULT_LISTEN_ADDRESSES
        .iter()
        .any(|address| address.ends_with(&suffix))
    {
        return;
    }
    for address in DEFAULT_LISTEN_ADDRESSES {
        out.arg("listen-address", address);
    }
    out.notes.push(format!(
        "kept kubelogin's listener on {} though its redirect URI names port {port} (a port forward's other end?)",
        DEFAULT_LISTEN_ADDRESSES.join(" and ")
    ));
}

/// Opening the browser, and how long a login may take.
fn browser(line: &GetToken, out: &mut Kubecred) -> Result<(), String> {
    if line.skip_open_browser {
        out.flag("--skip-open-browser");
    }
    if let Some(command) = &line.browser_command {
        // kubelogin runs the command as one program, the URL its argument; kubecred splits
        // the value like a shell: one quoted word is the same.
        let word = shlex::try_quote(command).map_err(|_| {
            format!("its --browser-command {command:?} cannot be written as one word")
        })?;
        out.arg("browser-command", &word);
    }
    if line.auth_timeout_sec != DEFAULT_AUTH_TIMEOUT_SEC {
        if line.auth_timeout_sec <= 0 {
            return Err(format!(
                "--authentication-timeout-sec={}: kubelogin's login would time out at once",
                line.auth_timeout_sec
            ));
        }
        out.arg("auth-timeout", &format!("{}s", line.auth_timeout_sec));
    }
    Ok(())
}

/// What the requests carry, and how they run: headers, extra parameters, forced refresh,
/// verbosity.
fn requests(line: &GetToken, out: &mut Kubecred) {
    for (name, value) in line.request_headers.iter().flatten() {
        out.arg("request-header", &format!("{name}={value}"));
    }
    match (&line.auth_request_extra_params, line.grant) {
        (Some(params), Grant::AuthcodeBrowser | Grant::AuthcodeKeyboard | Grant::ClientCredentials) => {
            for (name, value) in params {
                out.arg("auth-param", &format!("{name}={value}"));
            }
        }
        (Some(_), _) => out.notes.push(format!(
            "dropped --oidc-auth-request-extra-params: kubelogin sends them with no request of --grant-type {}",
            line.grant_type
        )),
        (None, _) => {}
    }
    if line.force_refresh {
        out.flag("--force-refresh");
    }
    match line.verbosity {
        0 => {}
        1 => out.flag("-v"),
        _ => out.flag("-vv"),
    }
}

/// The client secret and the password move to the stanza's env.
fn secrets(line: &GetToken, out: &mut Kubecred) {
    if let Some(secret) = &line.client_secret {
        out.env.push(("KUBECRED_CLIENT_SECRET", secret.clone()));
        out.notes.push("moved --oidc-client-secret from the command line to the stanza's env (KUBECRED_CLIENT_SECRET)".into());
    }
    let Some(password) = &line.password else {
        return;
    };
    if line.grant == Grant::Password {
        out.env.push(("KUBECRED_PASSWORD", password.clone()));
        out.notes.push(
            "moved --password from the command line to the stanza's env (KUBECRED_PASSWORD)".into(),
        );
    } else {
        out.notes.push(format!(
            "dropped --password: --grant-type {} does not use it",
            line.grant_type
        ));
    }
}

/// What kubelogin takes and does nothing with here, or kubecred needs not.
fn dropped(line: &GetToken, out: &mut Kubecred) {
    if line.username.is_some() && line.grant != Grant::Password {
        out.notes.push(format!(
            "dropped --username: --grant-type {} does not use it",
            line.grant_type
        ));
    }
    if let Some(url) = &line.open_url_after_authentication {
        out.notes.push(format!(
            "dropped --open-url-after-authentication={}: {}",
            crate::text::printable_brief(url, 80),
            super::why_ignored("--open-url-after-authentication")
        ));
    }
    if !line.logging_flags.is_empty() {
        let names: Vec<String> = line
            .logging_flags
            .iter()
            .map(|name| format!("--{name}"))
            .collect();
        out.notes.push(format!(
            "dropped kubelogin's logging flags {}: kubecred logs to stderr (-v, -vv)",
            names.join(", ")
        ));
    }
}

/// The port written in a URI's authority, if any (`http://localhost:8000/x` → 8000).
fn written_port(uri: &str) -> Option<u16> {
    let authority = uri.split_once("://")?.1;
    let authority = authority.split(['/', '?', '#']).next().unwrap_or(authority);
    let after_host = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.1,
        None => authority.find(':').map_or("", |at| &authority[at..]),
    };
    after_host.strip_prefix(':')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::command_line::{Read, read};
    use super::*;

    fn converted(text: &str) -> Result<Kubecred, String> {
        let words: Vec<String> = text.split_whitespace().map(String::from).collect();
        let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
        match read(&words, &env) {
            Read::GetToken(line) => to_kubecred(&line),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn args(text: &str) -> Vec<String> {
        converted(text).unwrap().args
    }

    const BASE: &str = "get-token --oidc-issuer-url=https://i --oidc-client-id=c";

    #[test]
    fn kubelogins_redirect_uri_and_listener_are_kept() {
        assert_eq!(
            args(BASE),
            [
                "--issuer-url=https://i",
                "--client-id=c",
                "--redirect-url=http://localhost"
            ]
        );
        assert!(
            args(&format!(
                "{BASE} --local-server-cert=c.pem --local-server-key=k.pem"
            ))
            .contains(&"--redirect-url=https://localhost".to_string())
        );
        // As written, and listened on where it names a port kubelogin listens on ...
        let named = args(&format!("{BASE} --oidc-redirect-url=http://127.0.0.1:8000"));
        assert!(named.contains(&"--redirect-url=http://127.0.0.1:8000".to_string()));
        assert!(!named.iter().any(|a| a.starts_with("--listen-address")));
        // ... and kubelogin's listener kept where it names another.
        let forwarded = args(&format!(
            "{BASE} --oidc-redirect-url=http://localhost:9000/"
        ));
        assert!(forwarded.contains(&"--listen-address=127.0.0.1:8000".to_string()));
        let listen = args(&format!("{BASE} --listen-address=localhost:8000"));
        assert!(listen.contains(&"--listen-address=localhost:8000".to_string()));
    }

    #[test]
    fn the_token_kubectl_got_stays_the_same() {
        // Client credentials: kubelogin's ID token (with openid), or the access token asked for.
        let cc = args(&format!(
            "{BASE} --grant-type=client-credentials --oidc-auth-request-extra-params=audience=api"
        ));
        assert!(cc.contains(&"--use-access-token=false".to_string()));
        assert!(cc.contains(&"--auth-param=audience=api".to_string()));
        let cc_access = args(&format!(
            "{BASE} --grant-type=client-credentials --oidc-use-access-token=TRUE"
        ));
        assert!(cc_access.contains(&"--use-access-token".to_string()));
        assert!(cc_access.contains(&"--scope=openid".to_string()));
        // The password grant, with and without a user name; its password to the env.
        let password = converted(&format!("{BASE} --username=bob --password=hunter2")).unwrap();
        assert!(password.args.contains(&"--grant-type=password".to_string()));
        assert!(password.args.contains(&"--username=bob".to_string()));
        assert!(!password.args.iter().any(|a| a.contains("hunter2")));
        assert_eq!(password.env[0].0, "KUBECRED_PASSWORD");
        let asked = args(&format!("{BASE} --grant-type=password"));
        assert!(!asked.iter().any(|a| a.starts_with("--username")));
    }

    #[test]
    fn what_kubecred_cannot_do_alike_stays_with_kubelogin() {
        for (extra, why) in [
            ("--tls-renegotiation-once", "never does"),
            ("--tls-renegotiation-freely=t", "never does"),
            ("--grant-type=authcode-keyboard", "sends no redirect_uri"),
            ("--local-server-cert=c.pem", "cannot serve https with one"),
            ("--oidc-extra-scope=\"a,b\"", "holds a comma"),
            ("--authentication-timeout-sec=0", "at once"),
        ] {
            let reason = converted(&format!("{BASE} {extra}")).unwrap_err();
            assert!(reason.contains(why), "{extra}: {reason}");
        }
    }

    #[test]
    fn flags_kubecred_needs_not_are_said() {
        let notes = converted(&format!(
            "-v1 --logtostderr {BASE} --open-url-after-authentication=https://x --grant-type=device-code --oidc-auth-request-extra-params=prompt=login"
        ))
        .unwrap();
        assert!(notes.args.contains(&"-v".to_string()));
        let text = notes.notes.join("\n");
        for part in [
            "--logtostderr",
            "--open-url-after-authentication",
            "--oidc-auth-request-extra-params",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(written_port("http://[::1]:9/x"), Some(9));
        assert_eq!(written_port("http://localhost"), None);
    }

    #[test]
    fn the_redirect_flag_1_35_removed_is_converted_as_the_releases_before_ran_it() {
        let keyboard = args(&format!(
            "{BASE} --grant-type=authcode-keyboard --oidc-redirect-url-authcode-keyboard=urn:ietf:wg:oauth:2.0:oob --oidc-redirect-url=http://localhost"
        ));
        assert!(keyboard.contains(&"--redirect-url=urn:ietf:wg:oauth:2.0:oob".to_string()));
        assert_eq!(
            keyboard
                .iter()
                .filter(|a| a.starts_with("--redirect-url"))
                .count(),
            1
        );
        let browser = converted(&format!(
            "{BASE} --oidc-redirect-url-authcode-keyboard=http://127.0.0.1:9000"
        ))
        .unwrap();
        assert!(
            browser
                .args
                .contains(&"--redirect-url=http://127.0.0.1:9000".to_string())
        );
        assert!(
            browser.notes[0].contains("as kubelogin 1.33 and 1.34 do"),
            "{:?}",
            browser.notes
        );
        // Without either, kubelogin 1.33 and later send none, older ones their default.
        let reason = converted(&format!("{BASE} --grant-type=authcode-keyboard")).unwrap_err();
        assert!(
            reason.contains("1.32 and older sent urn:ietf:wg:oauth:2.0:oob"),
            "{reason}"
        );
    }
}
