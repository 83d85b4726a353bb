//! Settings of the CI and automation paths: where a subject token or a client assertion comes
//! from ([`CredentialSource`]), the `private_key_jwt` key, the token-exchange parameters and the
//! password grant's user, with their resolvers. Files and CI endpoints named here are read only
//! when a grant runs (never on the cache-hit path), and again on every grant, because the
//! tokens in them rotate.

use super::{ClientAuth, ClientAuthMethod, Environment, Grant, input};
use crate::cli::{CiTokenSourceArg, FederationArgs};
use crate::secret::Secret;
use std::path::PathBuf;

/// RFC 8693's token type for a JWT, the default `subject_token_type`.
pub const TOKEN_TYPE_JWT: &str = "urn:ietf:params:oauth:token-type:jwt";
/// The GitLab `id_tokens` variable read when --gitlab-id-token-variable is not given (the name
/// GitLab's own documentation uses).
pub const DEFAULT_GITLAB_ID_TOKEN_VARIABLE: &str = "GITLAB_OIDC_TOKEN";

/// Where a JWT issued by someone else comes from: a subject token or a client assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// Read again on every grant (rotated by the kubelet or the CI runner).
    File(PathBuf),
    /// An environment variable of that name.
    Env(String),
    /// Requested from the GitHub Actions runtime with this `audience`.
    GithubActions { audience: Option<String> },
    /// A GitLab CI `id_tokens` variable of that name.
    Gitlab { variable: String },
}

impl CredentialSource {
    /// What names this source in the cache key and in messages (never the token).
    pub fn describe(&self) -> String {
        match self {
            CredentialSource::File(path) => format!("file {}", path.display()),
            CredentialSource::Env(name) => format!("environment variable {name}"),
            CredentialSource::GithubActions { audience } => format!(
                "GitHub Actions ID token (audience {})",
                audience.as_deref().unwrap_or("default")
            ),
            CredentialSource::Gitlab { variable } => {
                format!("GitLab CI id_tokens variable {variable}")
            }
        }
    }
}

/// The `private_key_jwt` signing key: a PEM file, or the PEM in KUBECRED_CLIENT_PRIVATE_KEY.
#[derive(Debug, Clone)]
pub struct PrivateKeySettings {
    pub pem: PrivateKeyPem,
    /// `kid` of the assertions; `None`: the key's RFC 7638 thumbprint.
    pub key_id: Option<String>,
}

#[derive(Debug, Clone)]
pub enum PrivateKeyPem {
    File(PathBuf),
    Env(Secret),
}

/// The subject token of `token-exchange` and `federated-token`.
#[derive(Debug, Clone)]
pub struct SubjectTokenSettings {
    pub source: CredentialSource,
    pub token_type: String,
    pub requested_token_type: Option<String>,
}

/// The user of the `password` grant and where the password comes from.
#[derive(Debug, Clone)]
pub struct PasswordSettings {
    /// `None`: asked for at the terminal, with the password (int128/kubelogin's `--grant-type
    /// password` without `--username`).
    pub username: Option<String>,
    pub source: PasswordSource,
}

impl PasswordSettings {
    /// Whether a person must type something at the terminal: the user name or the password.
    pub fn needs_a_person(&self) -> bool {
        self.username.is_none() || matches!(self.source, PasswordSource::Prompt)
    }
}

#[derive(Debug, Clone)]
pub enum PasswordSource {
    File(PathBuf),
    Env(Secret),
    /// A no-echo prompt, allowed only on an interactive terminal.
    Prompt,
}

/// One CI source from `--*-file`, `--*-env` or `--*-source`; more than one is an error.
fn credential_source(
    what: &str,
    file: &Option<PathBuf>,
    env: &Option<String>,
    ci: Option<CiTokenSourceArg>,
    audience: &Option<String>,
    args: &FederationArgs,
) -> anyhow::Result<Option<CredentialSource>> {
    let given = [file.is_some(), env.is_some(), ci.is_some()];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(input(format!(
            "give one of --{what}-file, --{what}-env and --{what}-source, not several"
        )));
    }
    if audience.is_some() && ci != Some(CiTokenSourceArg::GithubActions) {
        return Err(input(format!(
            "--{what}-audience applies only to --{what}-source github-actions"
        )));
    }
    Ok(if let Some(path) = file {
        Some(CredentialSource::File(path.clone()))
    } else if let Some(name) = env {
        Some(CredentialSource::Env(name.clone()))
    } else {
        ci.map(|ci| match ci {
            CiTokenSourceArg::GithubActions => CredentialSource::GithubActions {
                audience: audience.clone(),
            },
            CiTokenSourceArg::Gitlab => CredentialSource::Gitlab {
                variable: args
                    .gitlab_id_token_variable
                    .clone()
                    .unwrap_or_else(|| DEFAULT_GITLAB_ID_TOKEN_VARIABLE.into()),
            },
        })
    })
}

/// The one way the client authenticates: a secret, a private key, an assertion, or none.
pub(super) fn resolve_client_auth(
    args: &FederationArgs,
    env: &Environment,
    secret: Option<Secret>,
    method: Option<ClientAuthMethod>,
) -> anyhow::Result<ClientAuth> {
    let assertion = credential_source(
        "client-assertion",
        &args.client_assertion_file,
        &args.client_assertion_env,
        args.client_assertion_source,
        &args.client_assertion_audience,
        args,
    )?;
    let key = match (&args.client_private_key_file, &env.client_private_key) {
        (Some(path), _) => Some(PrivateKeyPem::File(path.clone())),
        (None, Some(pem)) => Some(PrivateKeyPem::Env(pem.clone())),
        (None, None) => None,
    };
    if args.client_key_id.is_some() && key.is_none() {
        return Err(input(
            "--client-key-id needs a private key: pass --client-private-key-file",
        ));
    }
    let chosen = [secret.is_some(), key.is_some(), assertion.is_some()];
    if chosen.iter().filter(|c| **c).count() > 1 {
        return Err(input(
            "the client authenticates one way only: give a client secret, --client-private-key-file or a client assertion (--client-assertion-file/-env/-source), not several",
        ));
    }
    if method.is_some() && secret.is_none() {
        return Err(input(
            "--client-auth-method applies only to a client secret (private keys and assertions are sent as client_assertion)",
        ));
    }
    Ok(match (secret, key, assertion) {
        (Some(secret), _, _) => ClientAuth::Secret {
            secret,
            method: method.unwrap_or(ClientAuthMethod::Auto),
        },
        (None, Some(pem), _) => ClientAuth::PrivateKeyJwt(PrivateKeySettings {
            pem,
            key_id: args.client_key_id.clone(),
        }),
        (None, None, Some(source)) => ClientAuth::Assertion(source),
        (None, None, None) => ClientAuth::None,
    })
}

/// `--token-endpoint`: https (or http on loopback), and only for grants without a user, whose
/// answers need no ID-token verification (there are no keys without discovery).
pub(super) fn resolve_token_endpoint(
    args: &FederationArgs,
    grant: Grant,
) -> anyhow::Result<Option<url::Url>> {
    let Some(raw) = &args.token_endpoint else {
        return Ok(None);
    };
    if !matches!(grant, Grant::TokenExchange | Grant::ClientCredentials) {
        return Err(input(
            "--token-endpoint applies only to --grant-type token-exchange or client-credentials (the others need discovery)",
        ));
    }
    let url = url::Url::parse(raw)
        .map_err(|err| {
            input(format!(
                "--token-endpoint {raw:?} is not a URL: {err}; write the whole URL, e.g. https://sts.example.com/v1/token"
            ))
        })?;
    let secure =
        url.scheme() == "https" || (url.scheme() == "http" && super::is_loopback_host(&url));
    if !secure {
        return Err(input(format!(
            "--token-endpoint {raw} must use https (plain http only on loopback addresses)"
        )));
    }
    Ok(Some(url))
}

/// The subject token: required by `token-exchange` and `federated-token`, refused elsewhere.
pub(super) fn resolve_subject(
    args: &FederationArgs,
    grant: Grant,
) -> anyhow::Result<Option<SubjectTokenSettings>> {
    let source = credential_source(
        "subject-token",
        &args.subject_token_file,
        &args.subject_token_env,
        args.subject_token_source,
        &args.subject_token_audience,
        args,
    )?;
    let wants_subject = matches!(grant, Grant::TokenExchange | Grant::FederatedToken);
    match (source, wants_subject) {
        (None, true) => Err(input(format!(
            "--grant-type {} needs a subject token: pass --subject-token-file, --subject-token-env or --subject-token-source github-actions|gitlab",
            grant.name()
        ))),
        (Some(_), false) => Err(input(format!(
            "--subject-token-* applies only to --grant-type token-exchange or federated-token, not {}",
            grant.name()
        ))),
        (None, false) => {
            if args.subject_token_type.is_some() || args.requested_token_type.is_some() {
                return Err(input(
                    "--subject-token-type and --requested-token-type apply only to --grant-type token-exchange",
                ));
            }
            Ok(None)
        }
        (Some(source), true) => Ok(Some(SubjectTokenSettings {
            source,
            token_type: args
                .subject_token_type
                .clone()
                .unwrap_or_else(|| TOKEN_TYPE_JWT.into()),
            requested_token_type: args.requested_token_type.clone(),
        })),
    }
}

/// The password grant's user and password source; `--username` elsewhere is an error.
pub(super) fn resolve_password(
    args: &FederationArgs,
    env: &Environment,
    kubelogin_password: Option<&Secret>,
    grant: Grant,
) -> anyhow::Result<Option<PasswordSettings>> {
    if grant != Grant::Password {
        if args.username.is_some() || args.password_file.is_some() || kubelogin_password.is_some() {
            return Err(input(
                "--username, --password and --password-file apply only to --grant-type password",
            ));
        }
        return Ok(None);
    }
    // Without a user name, both are asked for at the terminal (as int128/kubelogin does).
    let username = args.username.clone().filter(|name| !name.is_empty());
    let source = match (&args.password_file, &env.password, kubelogin_password) {
        (Some(path), _, _) => PasswordSource::File(path.clone()),
        (None, Some(password), _) => PasswordSource::Env(password.clone()),
        (None, None, Some(password)) => PasswordSource::Env(password.clone()),
        (None, None, None) => PasswordSource::Prompt,
    };
    Ok(Some(PasswordSettings { username, source }))
}

/// A flag that carried a secret on the command line, where its value shows in `ps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretOnCommandLine {
    /// As it was given (kubelogin's `--oidc-client-secret` too), so the notice names what the
    /// user typed.
    pub flag: &'static str,
    /// What to use instead.
    pub instead: &'static str,
}

/// Flags given on the command line that carry a secret: their value shows in `ps`.
pub fn secret_flags_on_command_line(argv: &[std::ffi::OsString]) -> Vec<SecretOnCommandLine> {
    const CLIENT_SECRET: &str =
        "--client-secret-file or the KUBECRED_CLIENT_SECRET environment variable";
    const SECRET_FLAGS: [SecretOnCommandLine; 3] = [
        SecretOnCommandLine {
            flag: "--client-secret",
            instead: CLIENT_SECRET,
        },
        SecretOnCommandLine {
            flag: "--oidc-client-secret",
            instead: CLIENT_SECRET,
        },
        SecretOnCommandLine {
            flag: "--password",
            instead: "--password-file or the KUBECRED_PASSWORD environment variable",
        },
    ];
    let mut found = Vec::new();
    for arg in argv.iter().filter_map(|arg| arg.to_str()) {
        for secret in SECRET_FLAGS {
            let matches = arg == secret.flag
                || arg
                    .strip_prefix(secret.flag)
                    .is_some_and(|rest| rest.starts_with('='));
            if matches && !found.contains(&secret) {
                found.push(secret);
            }
        }
    }
    found
}
