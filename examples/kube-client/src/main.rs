//! A kube-rs client that authenticates through kubecred.
//!
//!     cargo run --manifest-path examples/kube-client/Cargo.toml -- [KUBECONFIG]
//!
//! Nothing here knows about kubecred: kube-rs reads the kubeconfig, finds the user's `exec`
//! stanza (`command: kubecred`, `args: [get-token, ...]`), runs kubecred itself, and sends the
//! token from the ExecCredential kubecred prints as the bearer token. That is the point: any
//! client that implements client-go's credential-plugin protocol works with kubecred unchanged.
//! kube-rs runs the plugin again when the credential's `expirationTimestamp` has passed, so a
//! long-running program keeps working while kubecred refreshes the token from its cache.
//!
//! The program asks the API server for its version and who it thinks we are (a
//! SelfSubjectReview, `kubectl auth whoami`), and prints both as one JSON line:
//! `{"gitVersion": "...", "username": "..."}`. Without an argument it uses the kubeconfig kube-rs
//! finds itself (`$KUBECONFIG`, else `~/.kube/config`). kubecred's integration test
//! (tests/it/kube_rs_client.rs) runs it against the test bed's API server stand-in.

use anyhow::Context;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let config = match std::env::args_os().nth(1) {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(&path)
                .with_context(|| format!("reading kubeconfig {}", path.to_string_lossy()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    let client = Client::try_from(config)?;

    // kube-rs runs kubecred on the first request that needs a credential.
    let version = client.apiserver_version().await.context("GET /version")?;
    let review = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .context("creating a SelfSubjectReview")?;
    let username = review
        .status
        .and_then(|status| status.user_info)
        .and_then(|user| user.username)
        .context("the SelfSubjectReview has no username")?;

    println!(
        "{}",
        serde_json::json!({"gitVersion": version.git_version, "username": username})
    );
    Ok(())
}
