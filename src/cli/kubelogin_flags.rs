//! int128/kubelogin's `get-token` flags that kubecred has no flag of the same meaning for,
//! flattened into get-token's flags (`token_args.rs`) and hidden from `--help`: they exist only
//! so that a kubelogin stanza runs as it is (`peers/kubelogin`). What each means is
//! `config/kubelogin.rs`'s.

use clap::Args;

/// kubelogin `get-token` flags that have no kubecred flag of the same meaning.
// The group's id is the field's name in `TokenArgs`: the get-token flag table is generated
// from it (cli/fast_get_token.rs).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "kubelogin")]
pub struct KubeloginFlags {
    /// kubelogin's PKCE choice: `auto` (the default), `no` (= --pkce=false), `S256` (= --pkce).
    /// --pkce, when given, wins.
    #[arg(long, hide = true, value_name = "METHOD")]
    pub oidc_pkce_method: Option<String>,

    /// kubelogin's host for the default redirect URL (`localhost` unless given); --redirect-url
    /// wins.
    #[arg(long, hide = true, value_name = "HOST")]
    pub oidc_redirect_url_hostname: Option<String>,

    /// kubelogin opens this URL after a login; kubecred's callback page says the login is done.
    /// Ignored with a notice.
    #[arg(long, hide = true, value_name = "URL")]
    pub open_url_after_authentication: Option<String>,

    /// kubelogin's TLS renegotiation settings (`--tls-renegotiation-once`, `-freely`): rustls
    /// never renegotiates, which only makes a connection to a provider that asks for it fail,
    /// never less safe. Ignored with a notice; `convert-kubeconfig` leaves such a stanza with
    /// kubelogin.
    #[arg(
        long,
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub tls_renegotiation_once: Option<bool>,

    /// See `tls_renegotiation_once`.
    #[arg(
        long,
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new(),
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub tls_renegotiation_freely: Option<bool>,

    /// kubelogin's password for `--grant-type password` (kubecred's `--username` is the same
    /// flag). Taken, with a notice that it shows in `ps`; its value is never printed.
    #[arg(long, hide = true, value_name = "PASSWORD")]
    pub password: Option<String>,

    /// kubelogin's request headers, `NAME=VALUE` (several joined by commas): kubecred's
    /// --request-header.
    #[arg(long, hide = true, value_name = "NAME=VALUE")]
    pub oidc_request_header: Vec<String>,
}

impl KubeloginFlags {
    /// The ignored flags given, as `--name`.
    pub fn ignored_given(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.open_url_after_authentication.is_some() {
            names.push("--open-url-after-authentication");
        }
        if self.tls_renegotiation_once == Some(true) {
            names.push("--tls-renegotiation-once");
        }
        if self.tls_renegotiation_freely == Some(true) {
            names.push("--tls-renegotiation-freely");
        }
        names
    }
}
