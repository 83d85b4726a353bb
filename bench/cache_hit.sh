#!/usr/bin/env bash
# Cache-hit benchmark: `kubecred get-token` answering from its cache, as a whole process, side by
# side in one hyperfine run with `cat` of the same cache file (the floor for "read a file and
# print it") and the Go peer gke-gcloud-auth-plugin answering from its own cache.
#
# The identity provider is stopped before timing starts, so a cache hit that touched the network
# would fail. Prints medians and ratios; writes the raw numbers to target/bench/cache_hit.json.
# Usage: bench/cache_hit.sh [RUNS]   (default 500)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/node-deps.sh
runs=${1:-500}
command -v hyperfine >/dev/null || { echo "bench: hyperfine is required (apt-get install hyperfine)" >&2; exit 1; }

cargo build --release --quiet --bins  # kubecred-full too: the first run is a miss
kubecred="$root/target/release/kubecred"
ensure_node_deps "$root"

work=$(mktemp -d)
bed_pid=""
cleanup() { [ -n "$bed_pid" ] && kill "$bed_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# The test bed stops when its stdin closes: feed it from a fifo whose write end this script holds.
mkfifo "$work/bed.stdin"
node tests/support/testbed.mjs < "$work/bed.stdin" > "$work/bed.json" 2>/dev/null &
bed_pid=$!
exec 3> "$work/bed.stdin"
for _ in $(seq 100); do [ -s "$work/bed.json" ] && break; sleep 0.1; done
issuer=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]).issuer)' "$work/bed.json")

args=(get-token "--issuer-url=$issuer" --client-id=kubecred-cc --grant-type=client-credentials
      --resource=https://kubernetes.testbed "--cache-dir=$work/cache")
export KUBECRED_CLIENT_SECRET=testbed-cc-secret
export KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
"$kubecred" "${args[@]}" > /dev/null
kill "$bed_pid"; wait "$bed_pid" 2>/dev/null || true; bed_pid=""
"$kubecred" "${args[@]}" > /dev/null || { echo "bench: the cache hit failed with the provider stopped" >&2; exit 1; }
cache_file=$(ls "$work"/cache/tokens/*.json)

# The Go peer, answering from its cache for the kubeconfig's current context.
export HOME="$work/home" KUBECONFIG="$work/home/.kube/config"
mkdir -p "$HOME/.kube"
printf 'apiVersion: v1\nkind: Config\ncurrent-context: bench\ncontexts:\n- name: bench\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\nusers:\n- name: u\n  user: {}\n' > "$KUBECONFIG"
expiry=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
printf '{"current_context":"bench","access_token":"ya29.bench-token","token_expiry":"%s","extra_args":""}' "$expiry" \
    > "$HOME/.kube/gke_gcloud_auth_plugin_cache"
commands=("$kubecred ${args[*]}" "cat $cache_file")
names=(kubecred cat)
if command -v gke-gcloud-auth-plugin >/dev/null && gke-gcloud-auth-plugin > /dev/null 2>&1; then
    commands+=("gke-gcloud-auth-plugin"); names+=(gke-gcloud-auth-plugin)
fi

mkdir -p "$root/target/bench"
out="$root/target/bench/cache_hit.json"
hyperfine_args=(-N --warmup 30 --runs "$runs" --export-json "$out")
for i in "${!commands[@]}"; do hyperfine_args+=(-n "${names[$i]}" "${commands[$i]}"); done
hyperfine "${hyperfine_args[@]}" > "$work/hyperfine.txt"

python3 - "$out" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda name: results[name]["median"] * 1000
print(f"{'command':<24}{'median':>10}{'mean':>10}{'stddev':>10}")
for name, r in results.items():
    print(f"{name:<24}{r['median']*1000:>8.2f}ms{r['mean']*1000:>8.2f}ms{r['stddev']*1000:>8.2f}ms")
print(f"kubecred / cat: {ms('kubecred') / ms('cat'):.2f}x (median)")
if "gke-gcloud-auth-plugin" in results:
    print(f"gke-gcloud-auth-plugin / kubecred: {ms('gke-gcloud-auth-plugin') / ms('kubecred'):.2f}x (median)")
PY
