#!/usr/bin/env bash
# kubecred's main job, end to end, on this machine alone (no cluster, no internet):
# builds kubecred, starts the bundled OpenID Provider and an HTTPS stand-in for kube-apiserver's
# OIDC authenticator on loopback, and runs the real kubectl through kubecred from a kubeconfig
# exec stanza, showing who kubectl is logged in as.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/node-deps.sh

for tool in cargo node npm kubectl; do
    command -v "$tool" >/dev/null 2>&1 || { echo "demo: $tool is required" >&2; exit 1; }
done

echo "==> building kubecred"
cargo build --quiet
kubecred="$root/target/debug/kubecred"
ensure_node_deps "$root"

work=$(mktemp -d)
bed_pid=""
cleanup() {
    [ -n "$bed_pid" ] && kill "$bed_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "==> starting the local OpenID Provider and the API server stand-in (loopback only)"
# The test bed stops when its stdin closes: feed it from a fifo whose write end this script holds.
mkfifo "$work/bed.stdin"
node tests/support/testbed.mjs < "$work/bed.stdin" > "$work/bed.json" 2> "$work/bed.log" &
bed_pid=$!
exec 3> "$work/bed.stdin"
for _ in $(seq 100); do [ -s "$work/bed.json" ] && break; sleep 0.1; done
[ -s "$work/bed.json" ] || { echo "demo: the test bed did not start:" >&2; cat "$work/bed.log" >&2; exit 1; }
read_field() { node -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]); console.log(b[process.argv[2]])' "$work/bed.json" "$1"; }
issuer=$(read_field issuer)
api_server=$(read_field api_server)
ca_data=$(read_field ca_data)
echo "    issuer:     $issuer"
echo "    API server: $api_server"

# A CI-style kubeconfig: the issuer and client come from the cluster extension
# (provideClusterInfo), the secret from the exec env.
cat > "$work/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: demo
  cluster:
    server: $api_server
    certificate-authority-data: $ca_data
    extensions:
    - name: client.authentication.k8s.io/exec
      extension:
        issuerURL: $issuer
        clientID: kubecred-cc
        grantType: client-credentials
        resource: https://kubernetes.testbed
users:
- name: ci
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $kubecred
      args: [get-token, --cache-dir=$work/cache]
      env:
      - name: KUBECRED_CLIENT_SECRET
        value: testbed-cc-secret
      interactiveMode: Never
      provideClusterInfo: true
contexts:
- name: demo
  context: {cluster: demo, user: ci}
current-context: demo
YAML
export KUBECONFIG="$work/kubeconfig"

echo "==> kubectl get --raw /version   (first run: kubecred gets a token from the provider)"
kubectl get --raw /version; echo
echo "==> kubectl auth whoami          (answered from kubecred's cache)"
kubectl auth whoami
echo "==> the ExecCredential kubecred prints for kubectl (token shortened)"
KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"'"$api_server"'","config":{"issuerURL":"'"$issuer"'","clientID":"kubecred-cc","grantType":"client-credentials","resource":"https://kubernetes.testbed"}}}}' \
KUBECRED_CLIENT_SECRET=testbed-cc-secret "$kubecred" get-token --cache-dir="$work/cache" \
    | sed -E 's/("token":"[^".]{12})[^"]*"/\1…"/'
echo "==> done: kubectl is logged in through kubecred"
