# Sourced by the other scripts: builds examples/kube-client (a kube-rs client that authenticates
# through kubecred) into target/kube-client, for tests/it/kube_rs_client.rs. It is its own crate
# with its own lock file, so kube-rs, tokio, hyper and k8s-openapi never enter kubecred's build;
# cargo makes a second call a no-op. Messages go to stderr; stdout stays empty.
ensure_kube_client() {
    local root="${1:?usage: ensure_kube_client ROOT}"
    echo "building examples/kube-client (kube-rs) into target/kube-client..." >&2
    cargo build --quiet --locked \
        --manifest-path "$root/examples/kube-client/Cargo.toml" \
        --target-dir "$root/target/kube-client" >&2
}
