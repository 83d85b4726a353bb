//! The flags of the CI and automation grants (token exchange, federated token, password) and of
//! client authentication by assertion, flattened into `TokenArgs`. Kept apart from `token_args.rs`
//! only to keep that file short; the same rules apply (documented here, `KUBECRED_<FLAG>`).

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// A CI system that hands jobs a signed ID token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiTokenSourceArg {
    /// Requested from the Actions runtime (needs `permissions: id-token: write`).
    GithubActions,
    /// The job's `id_tokens` variable (see --gitlab-id-token-variable).
    Gitlab,
}

// The group's id is the field's name in `TokenArgs`: the get-token flag table is generated
// from it (fast_get_token.rs).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "federation")]
pub struct FederationArgs {
    /// File holding the subject token for token-exchange / federated-token, read again on every
    /// grant (projected service-account tokens and federated-token files rotate).
    #[arg(long, env = "KUBECRED_SUBJECT_TOKEN_FILE", value_name = "PATH")]
    pub subject_token_file: Option<PathBuf>,

    /// Environment variable holding the subject token.
    #[arg(long, env = "KUBECRED_SUBJECT_TOKEN_ENV", value_name = "VAR")]
    pub subject_token_env: Option<String>,

    /// CI system to ask for the subject token.
    #[arg(
        long,
        env = "KUBECRED_SUBJECT_TOKEN_SOURCE",
        value_enum,
        value_name = "SOURCE"
    )]
    pub subject_token_source: Option<CiTokenSourceArg>,

    /// `audience` of the ID token requested from GitHub Actions for the subject token.
    #[arg(long, env = "KUBECRED_SUBJECT_TOKEN_AUDIENCE", value_name = "AUDIENCE")]
    pub subject_token_audience: Option<String>,

    /// `subject_token_type` of the token exchange [default: urn:ietf:params:oauth:token-type:jwt].
    #[arg(long, env = "KUBECRED_SUBJECT_TOKEN_TYPE", value_name = "URI")]
    pub subject_token_type: Option<String>,

    /// `requested_token_type` of the token exchange (e.g.
    /// urn:ietf:params:oauth:token-type:access_token) [default: none, the provider's choice].
    #[arg(long, env = "KUBECRED_REQUESTED_TOKEN_TYPE", value_name = "URI")]
    pub requested_token_type: Option<String>,

    /// Send token requests here instead of discovering the issuer's token endpoint: for a
    /// security token service that is not an OpenID Provider (Google's
    /// https://sts.googleapis.com/v1/token). token-exchange and client-credentials only.
    #[arg(long, env = "KUBECRED_TOKEN_ENDPOINT", value_name = "URL")]
    pub token_endpoint: Option<String>,

    /// PEM private key (RSA or EC P-256) for `private_key_jwt` client authentication; the key
    /// itself may instead be in KUBECRED_CLIENT_PRIVATE_KEY.
    #[arg(long, env = "KUBECRED_CLIENT_PRIVATE_KEY_FILE", value_name = "PATH")]
    pub client_private_key_file: Option<PathBuf>,

    /// `kid` of the client's signing key [default: its RFC 7638 JWK thumbprint].
    #[arg(long, env = "KUBECRED_CLIENT_KEY_ID", value_name = "KID")]
    pub client_key_id: Option<String>,

    /// File holding a JWT to send as the client assertion (e.g. AZURE_FEDERATED_TOKEN_FILE),
    /// read again on every request.
    #[arg(long, env = "KUBECRED_CLIENT_ASSERTION_FILE", value_name = "PATH")]
    pub client_assertion_file: Option<PathBuf>,

    /// Environment variable holding the client assertion JWT.
    #[arg(long, env = "KUBECRED_CLIENT_ASSERTION_ENV", value_name = "VAR")]
    pub client_assertion_env: Option<String>,

    /// CI system to ask for the client assertion JWT.
    #[arg(
        long,
        env = "KUBECRED_CLIENT_ASSERTION_SOURCE",
        value_enum,
        value_name = "SOURCE"
    )]
    pub client_assertion_source: Option<CiTokenSourceArg>,

    /// `audience` of the ID token requested from GitHub Actions for the client assertion
    /// (Entra ID: api://AzureADTokenExchange).
    #[arg(
        long,
        env = "KUBECRED_CLIENT_ASSERTION_AUDIENCE",
        value_name = "AUDIENCE"
    )]
    pub client_assertion_audience: Option<String>,

    /// Name of the GitLab CI `id_tokens` variable [default: GITLAB_OIDC_TOKEN].
    #[arg(long, env = "KUBECRED_GITLAB_ID_TOKEN_VARIABLE", value_name = "VAR")]
    pub gitlab_id_token_variable: Option<String>,

    /// User name for --grant-type password.
    #[arg(long, env = "KUBECRED_USERNAME", value_name = "USER")]
    pub username: Option<String>,

    /// File holding the password for --grant-type password (else KUBECRED_PASSWORD, else a
    /// prompt on an interactive terminal).
    #[arg(long, env = "KUBECRED_PASSWORD_FILE", value_name = "PATH")]
    pub password_file: Option<PathBuf>,
}
