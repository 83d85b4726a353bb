#!/usr/bin/env bash
# Every kubecred benchmark, side by side in one run, written to bench/RESULTS.md:
#   1. the cache hit of the static build users download, against its floor (a minimal Rust
#      program that reads the file and writes it, built static the same way), `cat` of the same
#      file, the glibc build `cargo install` makes, and the Go peer gke-gcloud-auth-plugin on its
#      own cache;
#   2. kubectl's overhead: `kubectl get --raw /version` through kubecred vs a static token;
#   3. a grant with discovery cached: kubecred vs curl doing the same POST (and round trips);
#   4. 64 processes at once with an expired token: token requests, wall time vs one grant;
#   5. peak memory and page faults of a cache hit, and the binaries' sizes;
#   6. with --cache-storage auto and the refresh token in a real keyring, the hit never touches
#      the keyring (strace);
#   7. expiries of a short-lived token with a slow provider, refresh-ahead on and off, and the
#      hit that starts the background renewal measured alone;
#   8. an outage of the provider while kubectl runs in a loop (stale-if-error);
#   10. (from bench/shared_hit.md, which bench/shared_hit.sh writes) a shared login's derived
#      token on a hit beside a plain login's.
# Everything runs on loopback against the test bed (a real OpenID Provider and the HTTPS API
# stand-in); nothing needs a cluster or the internet. Takes a few minutes on 2 cores.
# Usage: bench/run.sh [--quick]      (--quick: fewer runs, for trying the script)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

quick=${1:-}
# Many short rounds rather than a few long ones: this machine's speed drifts within seconds, and
# a ratio is taken inside each round, so more rounds give a steadier median.
hit_rounds=15 hit_runs=100 slow_rounds=6 slow_runs=15 crowd_rounds=5
if [ "$quick" = --quick ]; then
    hit_rounds=2 hit_runs=50 slow_rounds=1 slow_runs=5 crowd_rounds=1
fi

for tool in cargo rustc node npm kubectl curl python3; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done
ensure_system_deps
ensure_node_deps "$root"

echo "==> building kubecred (static musl and glibc, release) and the floor (bench/readfile.rs)" >&2
# What users run: the static build (the Linux download). The glibc build is what
# `cargo install` makes, measured beside it.
kubecred=$(build_static "$root")
cargo build --release --quiet --locked
kubecred_glibc="$root/target/release/kubecred"
mkdir -p target/bench
floor="$root/target/bench/readfile"
build_floor "$floor"

work=$(mktemp -d)
cleanup() { stop_testbed 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
out="$work/out"
mkdir -p "$out"
export KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
export KUBECRED_CLIENT_SECRET=testbed-cc-secret
# Tokens that outlive the benchmark, so that every run of a hit is a hit.
long_ttl='"clientCredentialsTtl": 86400, "accessTokenTtl": 86400, "idTokenTtl": 86400'

# ---- 1. the cache hit -------------------------------------------------------------------------
echo "==> 1. cache hit (provider stopped while timing)" >&2
hit_cache "$work" "$kubecred"
cc_args=("${HIT_ARGS[@]}")
entry=$HIT_ENTRY

# The Go peer answers from ~/.kube/gke_gcloud_auth_plugin_cache for the current context.
peer_home="$work/peer-home"
mkdir -p "$peer_home/.kube"
printf 'apiVersion: v1\nkind: Config\ncurrent-context: bench\ncontexts:\n- name: bench\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\nusers:\n- name: u\n  user: {}\n' > "$peer_home/.kube/config"
printf '{"current_context":"bench","access_token":"ya29.bench-token","token_expiry":"%s","extra_args":""}' \
    "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" > "$peer_home/.kube/gke_gcloud_auth_plugin_cache"
hit_commands=(kubecred "$kubecred ${cc_args[*]}" "the floor" "$floor $entry" cat "cat $entry"
    "kubecred, glibc build" "$kubecred_glibc ${cc_args[*]}")
if command -v gke-gcloud-auth-plugin >/dev/null &&
    HOME="$peer_home" KUBECONFIG="$peer_home/.kube/config" gke-gcloud-auth-plugin > /dev/null 2>&1; then
    hit_commands+=(gke-gcloud-auth-plugin "gke-gcloud-auth-plugin")
fi
HOME="$peer_home" KUBECONFIG="$peer_home/.kube/config" \
    rounds "$out/hit" "$hit_rounds" "$hit_runs" "${hit_commands[@]}"
hit_table=$(summarize "$out/hit" cat "the floor")

# ---- 5. memory and size (on the same cache) ---------------------------------------------------
rss_kb=$(for _ in $(seq 20); do
    /usr/bin/time -f %M "$kubecred" "${cc_args[@]}" 2>&1 > /dev/null | tail -1
done | sort -n | tail -1)
cat_rss_kb=$(/usr/bin/time -f %M cat "$entry" 2>&1 > /dev/null | tail -1)
faults=$(minor_faults "$kubecred" "${cc_args[@]}")
floor_faults=$(minor_faults "$floor" "$entry")
cat_faults=$(minor_faults cat "$entry")
glibc_faults=$(minor_faults "$kubecred_glibc" "${cc_args[@]}")
glibc_rss_kb=$(for _ in $(seq 20); do
    /usr/bin/time -f %M "$kubecred_glibc" "${cc_args[@]}" 2>&1 > /dev/null | tail -1
done | sort -n | tail -1)
binary_bytes=$(stat -c %s "$kubecred")
glibc_bytes=$(stat -c %s "$kubecred_glibc")
relocations=$(relative_relocations "$kubecred")
glibc_relocations=$(relative_relocations "$kubecred_glibc")
instructions="valgrind is not installed"   # callgrind counts the whole process's instructions
if command -v valgrind > /dev/null; then
    callgrind_refs() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null | sed -n 's/.*Collected : //p'; }
    instructions="kubecred $(callgrind_refs "$kubecred" "${cc_args[@]}"), the floor $(callgrind_refs "$floor" "$entry"), \`cat\` $(callgrind_refs cat "$entry")"
fi

# ---- 2. kubectl overhead ----------------------------------------------------------------------
echo "==> 2. kubectl get --raw /version through kubecred vs a static token" >&2
rm -rf "$work/cache" "$work/bed.stdin"
start_testbed "$work" "{$long_ttl}"
cc_args=(get-token "--issuer-url=$(bed_field issuer)" --client-id=kubecred-cc
    --grant-type=client-credentials --resource=https://kubernetes.testbed "--cache-dir=$work/cache")
# One credential for all three kubeconfigs: kubecred's cache, `cat`'s file and the static token.
"$kubecred" "${cc_args[@]}" > "$work/credential.json"
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"]["token"])' "$work/credential.json")
kubeconfig() { # kubeconfig FILE USER_YAML
    cat > "$1" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: bed
  cluster: {server: "$(bed_field api_server)", certificate-authority-data: "$(bed_field ca_data)"}
contexts:
- name: bed
  context: {cluster: bed, user: u}
current-context: bed
users:
- name: u
  user:
$2
YAML
}
exec_args=$(printf '"%s",' "${cc_args[@]}")
kubeconfig "$work/exec.kubeconfig" "    exec: {apiVersion: client.authentication.k8s.io/v1, command: \"$kubecred\", args: [${exec_args%,}], interactiveMode: Never, env: [{name: KUBECRED_CLIENT_SECRET, value: testbed-cc-secret}]}"
kubeconfig "$work/static.kubeconfig" "    token: \"$token\""
# The floor of any exec plugin: kubectl running `cat` of a file that holds the same credential.
# What kubectl itself spends on an exec plugin (a child process, pipes, a transport that is not
# shared with the static-token path) shows here, apart from what kubecred spends.
kubeconfig "$work/cat.kubeconfig" "    exec: {apiVersion: client.authentication.k8s.io/v1, command: cat, args: [\"$work/credential.json\"], interactiveMode: Never}"
kubectl_home="$work/kubectl-home"
mkdir -p "$kubectl_home"
HOME="$kubectl_home" rounds "$out/kubectl" "$slow_rounds" "$slow_runs" \
    "kubectl via kubecred" "kubectl --kubeconfig $work/exec.kubeconfig get --raw /version" \
    "kubectl via cat (an exec plugin's floor)" "kubectl --kubeconfig $work/cat.kubeconfig get --raw /version" \
    "kubectl with a static token" "kubectl --kubeconfig $work/static.kubeconfig get --raw /version"
kubectl_table=$(summarize "$out/kubectl" "kubectl with a static token")
stop_testbed

# ---- 3. a grant with discovery cached, vs curl; 4. 64 processes at once ----------------------
echo "==> 3. a grant (discovery from the disk cache) vs curl doing the same POST" >&2
rm -rf "$work/cache" "$work/bed.stdin"
start_testbed "$work" '{"idpTls": true}'
ca_file=$(bed_field ca_file)
issuer=$(bed_field issuer)
grant_args=(get-token "--issuer-url=$issuer" --client-id=kubecred-cc --grant-type=client-credentials
    --resource=https://kubernetes.testbed "--cache-dir=$work/cache" "--certificate-authority=$ca_file")
"$kubecred" "${grant_args[@]}" > /dev/null # fills the discovery cache
token_endpoint=$(curl -sS --cacert "$ca_file" "$issuer/.well-known/openid-configuration" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token_endpoint"])')
curl_post="curl -sS --fail --cacert $ca_file -u kubecred-cc:testbed-cc-secret -d grant_type=client_credentials -d resource=https://kubernetes.testbed -o /dev/null $token_endpoint"
bed_admin POST /reset > /dev/null
rounds "$out/grant" "$slow_rounds" "$slow_runs" \
    "kubecred get-token --force-refresh" "$kubecred ${grant_args[*]} --force-refresh" \
    "curl, the same POST" "$curl_post"
grant_table=$(summarize "$out/grant" "curl, the same POST")
grant_stats=$(bed_admin GET /stats)
kubecred_runs=$(python3 -c 'import glob,json; print(sum(len(r["times"]) + 20 for f in glob.glob("'"$out"'/grant.[0-9]*.json") for r in json.load(open(f))["results"] if r["command"].startswith("kubecred")))')
round_trips=$(python3 - "$grant_stats" "$kubecred_runs" <<'PY'
import json, sys
stats, runs = json.loads(sys.argv[1]), int(sys.argv[2])
print(f"{stats['token']['total']} token requests (kubecred and curl: {2 * runs} runs in all), "
      f"{stats['discovery']} discovery and {stats['jwks']} JWKS")
PY
)

echo "==> 4. 64 processes at once with an expired token" >&2
crowd_walls=()
crowd_requests=()
for ((i = 0; i < crowd_rounds; i++)); do
    python3 - "$work/cache/tokens" <<'PY'
import json, pathlib, sys
for path in pathlib.Path(sys.argv[1]).glob("*.json"):
    entry = json.loads(path.read_text())
    for key in entry:
        if key.endswith("expiry") and entry[key]:
            entry[key] = "2000-01-01T00:00:00Z"
    path.write_text(json.dumps(entry))
PY
    bed_admin POST /reset > /dev/null
    start_ns=$(date +%s%N)
    pids=()
    for _ in $(seq 64); do "$kubecred" "${grant_args[@]}" > /dev/null & pids+=($!); done
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
    end_ns=$(date +%s%N)
    [ "$failed" = 0 ] || { echo "bench: $failed of 64 processes failed" >&2; exit 1; }
    crowd_walls+=("$(((end_ns - start_ns) / 1000000))")
    crowd_requests+=("$(bed_admin GET /stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"]["total"])')")
done
crowd_wall=$(printf '%s\n' "${crowd_walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
crowd_reqs=$(printf '%s\n' "${crowd_requests[@]}" | sort -u | tr '\n' ' ')
one_grant_ms=$(python3 -c 'import json; print(round(json.load(open("'"$out"'/grant.summary.json"))["kubecred get-token --force-refresh"]["median_ms"], 1))')
stop_testbed

# ---- 6. the keyring is never touched by a hit -------------------------------------------------
echo "==> 6. with a real keyring holding the refresh token, the hit touches no keyring" >&2
rm -rf "$work/bed.stdin"
keyring_report=$(bash bench/keyring_hit.sh "$kubecred" "$work/keyring") || {
    echo "bench: the keyring check failed:" >&2
    echo "$keyring_report" >&2
    exit 1
}

# ---- 7. expiries with a slow provider; 8. an outage (bench/resilience.py) ---------------------
echo "==> 7. three expiries of a 40 s token, the provider taking 1 s per token request" >&2
rm -rf "$work/cache" "$work/bed.stdin"
start_testbed "$work" '{"clientCredentialsTtl": 40}'
# resilience_config FILE KUBECONFIG_ARGS_JSON_EXTRA... : what bench/resilience.py needs.
resilience_config() { # resilience_config OUT JSON_FIELDS
    local args=(get-token "--issuer-url=$(bed_field issuer)" --client-id=kubecred-cc
        --grant-type=client-credentials --resource=https://kubernetes.testbed "--cache-dir=$work/cache"
        "--min-validity=$min_validity")
    exec_args=$(printf '"%s",' "${args[@]}")
    kubeconfig "$work/resilience.kubeconfig" "    exec: {apiVersion: client.authentication.k8s.io/v1, command: \"$kubecred\", args: [${exec_args%,}], interactiveMode: Never, env: [{name: KUBECRED_CLIENT_SECRET, value: testbed-cc-secret}]}"
    off_args=$(printf '"%s",' "${args[@]}" --refresh-ahead=0)
    kubeconfig "$work/resilience-off.kubeconfig" "    exec: {apiVersion: client.authentication.k8s.io/v1, command: \"$kubecred\", args: [${off_args%,}], interactiveMode: Never, env: [{name: KUBECRED_CLIENT_SECRET, value: testbed-cc-secret}]}"
    python3 - "$1" "$2" "$kubecred" "$work" "$(bed_field admin)" "$(bed_field ca_file)" "${args[@]}" <<'PY'
import json, sys
out, fields, kubecred, work, admin, ca_file, *args = sys.argv[1:]
config = {"get_token": [kubecred, *args], "admin": admin, "ca_file": ca_file,
          "logout": [kubecred, "logout", "--all", f"--cache-dir={work}/cache"],
          "status": [kubecred, "status", "--output=json", f"--cache-dir={work}/cache"],
          "kubeconfig": f"{work}/resilience.kubeconfig",
          "kubeconfig_off": f"{work}/resilience-off.kubeconfig", "kubectl_env": None,
          "cache_dir": f"{work}/cache"}
config.update(json.loads(fields))
json.dump(config, open(out, "w"))
PY
}
min_validity=5
expiry_seconds=130
[ "$quick" = --quick ] && expiry_seconds=45
resilience_config "$work/expiries.json" "{\"seconds\": $expiry_seconds, \"delay_ms\": 1000}"
expiries_table=$(python3 bench/resilience.py expiries "$work/expiries.json")
stop_testbed

echo "==> 7b. the hit that starts the background renewal, alone" >&2
rm -rf "$work/cache" "$work/bed.stdin"
start_testbed "$work" '{"clientCredentialsTtl": 600}'
spawn_calls=200
[ "$quick" = --quick ] && spawn_calls=40
resilience_config "$work/spawn.json" "{\"calls\": $spawn_calls}"
spawn_table=$(python3 bench/resilience.py spawn "$work/spawn.json")

echo "==> 7c. the back-off: hits in the window while the renewals fail" >&2
backoff_calls=200
[ "$quick" = --quick ] && backoff_calls=40
resilience_config "$work/backoff.json" "{\"calls\": $backoff_calls}"
backoff_table=$(python3 bench/resilience.py backoff "$work/backoff.json")
stop_testbed

echo "==> 8. the provider down for longer than --min-validity while kubectl runs" >&2
rm -rf "$work/cache" "$work/bed.stdin"
start_testbed "$work" '{"clientCredentialsTtl": 80}'
min_validity=50
resilience_config "$work/outage.json" '{"ttl": 80, "min_validity": 50, "down_from": 20, "down_until": 75}'
outage_report=$(python3 bench/resilience.py outage "$work/outage.json")
stop_testbed

# ---- RESULTS.md -------------------------------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
python3 - "$out/hit.summary.json" "$out/kubectl.summary.json" "$out/grant.summary.json" > "$work/verdicts" <<'PY'
import json, sys
hit, kubectl, grant = (json.load(open(p)) for p in sys.argv[1:])
k = hit["kubecred"]
lines = [f"- cache hit, static build: {k['other']['ratio']:.2f}× its floor (goal ≤ 2×), "
         f"{k['ratio']:.2f}× `cat` (goal ≤ 1.05×)"]
glibc = hit["kubecred, glibc build"]
lines.append(f"- the same hit, glibc build (`cargo install`): {glibc['ratio']:.2f}× `cat`")
if "gke-gcloud-auth-plugin" in hit:
    peer = hit["gke-gcloud-auth-plugin"]["median_ms"] / hit["kubecred"]["median_ms"]
    lines.append(f"- the Go peer: {peer:.1f}× kubecred (target ≥ 4×)")
floor = kubectl["kubectl via cat (an exec plugin's floor)"]
lines.append(f"- kubectl through kubecred: {kubectl['kubectl via kubecred']['ratio']:.3f}× a static token (target ≤ 1.05×); "
             f"through `cat` as the exec plugin: {floor['ratio']:.3f}×")
lines.append(f"- a grant: {grant['kubecred get-token --force-refresh']['ratio']:.2f}× curl (target ≤ 1.0×)")
print("\n".join(lines))
PY
cat > bench/RESULTS.md <<MD
# kubecred benchmark results

Written by \`bench/run.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD)$(git diff --quiet -- . ':!bench/RESULTS.md' || echo ' (with uncommitted changes)').
Machine: $(nproc) cores, ${cpu}, $(uname -sr); hyperfine $(hyperfine --version | cut -d' ' -f2), kubectl $(kubectl version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])').

## How to read this

Each table comes from several rounds of \`hyperfine -N\` (no shell), every command in every round,
in a rotated order. "median" is the median over the rounds of each round's median; a ratio is
taken inside each round and the median over the rounds is given, with the lowest and highest
round beside it. Compare ratios, not absolute times: the machine is shared and its speed drifts.

$(cat "$work/verdicts")

## 1. The cache hit ($hit_rounds rounds × $hit_runs runs)

\`kubecred get-token\` answering from its cache (the provider stopped), the static musl build
(what a Linux user downloads), beside its floor: a program that only reads the cache file and
writes it to stdout (bench/readfile.rs), built static for musl with the same settings and linked
the same way (at a fixed address; bench/lib.sh \`build_floor\`). Then \`cat\` of the same file (a
dynamically linked C program), the same kubecred code built for glibc (what \`cargo install\`
makes: dynamically linked), and the Go exec plugin gke-gcloud-auth-plugin answering from its own
cache. Instructions of one hit, the whole process (callgrind): $instructions.

$hit_table

## 2. kubectl's overhead ($slow_rounds rounds × $slow_runs runs)

\`kubectl get --raw /version\` against the HTTPS API stand-in, with the kubeconfig's user running
kubecred (cache hit), running \`cat\` of a file that holds the same ExecCredential (the floor of
any exec plugin: what kubectl itself spends on running one), or holding the same token statically.

$kubectl_table

## 3. A grant with discovery cached ($slow_rounds rounds × $slow_runs runs)

\`kubecred get-token --force-refresh\` (client credentials over TLS, discovery from the disk cache)
beside curl doing the same POST to the token endpoint. During the $kubecred_runs kubecred runs the
provider saw $round_trips requests: one round trip per grant.

$grant_table

## 4. 64 processes at once with an expired token ($crowd_rounds rounds)

64 \`kubecred get-token\` started together, the cached token expired: token-endpoint requests per
round: ${crowd_reqs% } (all 64 processes succeed); wall time for all 64: ${crowd_wall} ms (median),
against ${one_grant_ms} ms for one grant alone.

## 5. Memory and size

Peak RSS of a cache hit: $((rss_kb)) KiB for the static build, ${glibc_rss_kb} KiB for the glibc
build (the highest of 20 runs each; \`cat\`: ${cat_rss_kb} KiB; target ≤ 5 MiB).
Minor page faults of a cache hit (the median of 21 runs): the static build $faults, its floor
$floor_faults, \`cat\` $cat_faults, the glibc build $glibc_faults.
Release binaries: the static build $binary_bytes bytes ($relocations relative relocations to apply
at start: it is linked at a fixed address), the glibc build $glibc_bytes bytes ($glibc_relocations,
applied by the dynamic loader).

## 6. The keyring on a cache hit

$keyring_report

## 7. Token expiries with a slow provider

A 40 s client-credentials token, \`--min-validity 5s\`, the provider taking 1 s per token request;
\`kubecred get-token\` and \`kubectl get --raw /version\` (through kubecred) called in turn every
0.25 s for ${expiry_seconds} s — about three expiries — with refresh-ahead on (its default: the
last quarter of the lifetime) and off. With it on, a renewal runs in the background before the
token runs out and no call waits for the provider; with it off, the call that meets the expiry
waits for the slow token request.

$expiries_table

The slowest of hundreds of calls holds the machine's noise as well as the spawn. The hit that
starts the renewal, measured alone (the static build; a 600 s token, \`--refresh-ahead 599s\` so
that every hit is in the window; the renewal refused at once by the provider and over before
the next call, its back-off note removed, so that each of these hits starts one):

$spawn_table

The back-off: the same 600 s token, one hit in the window every 0.25 s while every background
renewal fails. How many renewals the hits started (the \`attempts\` that \`kubecred status\`
shows) and how many token requests reached the provider:

$backoff_table

## 8. An outage

$outage_report

## 9. How the Linux binary is linked

The static build is linked at a fixed address (\`-C relocation-model=static\`, .cargo/config.toml),
not as static-pie, rustc's default for musl: a static-pie binary writes every pointer of its
constant data at each start (what "relative relocations" counts below), and musl never makes
those pages read-only again, so the vtables stay writable for the whole run; at a fixed address
they are read-only, and the executable's own addresses (not the stack's, the heap's or mmap's)
are the same in every run, as in kubectl and the Go exec plugins. DECISIONS.md ("What keeps
the cache hit fast") has the weighing. \`bench/linking.sh\` builds the alternatives from one tree
and measures their hits side by side; its last run (this section is bench/linking.md, rewritten
only by that script, which takes most of an hour):

$(cat bench/linking.md 2> /dev/null || echo '(no bench/linking.md: run bench/linking.sh)')

## 10. A shared login's derived token on a hit

$(cat bench/shared_hit.md 2> /dev/null || echo '(no bench/shared_hit.md: run bench/shared_hit.sh)')
MD
echo "==> wrote bench/RESULTS.md" >&2
cat bench/RESULTS.md
