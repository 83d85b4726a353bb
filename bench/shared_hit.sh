#!/usr/bin/env bash
# A shared login's cache hit (--shared-login: the token derived for one cluster) beside a plain
# login's hit for the same resource, and the floor of both (bench/readfile.rs reading the derived
# entry), side by side in rounds (bench/lib.sh), with the instructions of one hit of each
# (callgrind). Both entries come from a real browser login against the test bed (headless
# Chromium, tests/support/browser.mjs), which is then stopped: every timed run is a hit with no
# provider to fall back on. Writes bench/shared_hit.md, which bench/run.sh puts in RESULTS.md as
# its section 10, and replaces that section of bench/RESULTS.md now (the rest of it is left as
# its last full run wrote it). Takes a minute or two.
# Usage: bench/shared_hit.sh [--quick]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

rounds_count=15 runs=100
[ "${1:-}" = --quick ] && rounds_count=2 runs=30
ensure_system_deps
ensure_node_deps "$root"
kubecred=$(build_static "$root")
mkdir -p target/bench
floor="$root/target/bench/readfile"
build_floor "$floor"

work=$(mktemp -d)
cleanup() { stop_testbed 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
start_testbed "$work" '{"accessTokenTtl": 86400, "idTokenTtl": 86400}'
login=(get-token "--issuer-url=$(bed_field issuer)" --client-id=kubecred --grant-type=authcode
    --listen-address=127.0.0.1:0 "--browser-command=node $root/tests/support/browser.mjs"
    --cache-storage=disk)
plain=("${login[@]}" --resource=https://a.example --use-access-token "--cache-dir=$work/plain")
shared=("${login[@]}" --shared-login --login-resource=https://a.example,https://b.example
    --resource=https://b.example "--cache-dir=$work/shared")
"$kubecred" "${plain[@]}" > /dev/null
"$kubecred" "${shared[@]}" > /dev/null
stop_testbed
# The derived entry: the one whose about says which login it was derived from.
derived=$(grep -l '"derived_from"' "$work"/shared/tokens/*.json)
for args in plain shared; do
    declare -n command="$args"
    "$kubecred" "${command[@]}" > /dev/null || { echo "bench: the $args hit failed" >&2; exit 1; }
done
quote() { printf '%q ' "$@"; }
rounds "$work/hit" "$rounds_count" "$runs" \
    "derived token (--shared-login)" "$(quote "$kubecred" "${shared[@]}")" \
    "plain login, same resource" "$(quote "$kubecred" "${plain[@]}")" \
    "the floor" "$(quote "$floor" "$derived")"
table=$(summarize "$work/hit" "plain login, same resource" "the floor")
instructions="valgrind is not installed"
if command -v valgrind > /dev/null; then
    refs() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null | sed -n 's/.*Collected : //p'; }
    instructions="derived $(refs "$kubecred" "${shared[@]}"), plain $(refs "$kubecred" "${plain[@]}"), the floor $(refs "$floor" "$derived")"
fi
files=$(strace -f -e trace=openat,open "$kubecred" "${shared[@]}" 2>&1 > /dev/null | grep -c '/tokens/' || true)

cat > bench/shared_hit.md <<MD
Written by \`bench/shared_hit.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo " (with uncommitted changes)").

The hit of a token derived from a shared login (\`--shared-login\`, one cluster's resource)
beside a plain login's hit for the same resource (\`--use-access-token\`), both the static build
from a real browser login, the provider stopped; the floor reads the derived entry
($runs runs × $rounds_count rounds). The derived hit opens one file of the cache's tokens
(strace: $files open of \`tokens/\`), the derived entry, and never the login's.
Instructions of one hit (callgrind): $instructions.

$table
MD
python3 - "$root/bench/RESULTS.md" "$root/bench/shared_hit.md" <<'PY'
import sys
results, section = sys.argv[1], open(sys.argv[2]).read()
text = open(results).read()
heading = "## 10. A shared login's derived token on a hit"
start = text.find(heading)
body = f"{heading}\n\n{section}"
if start < 0:
    text = text.rstrip("\n") + "\n\n" + body
else:
    end = text.find("\n## ", start + len(heading))
    text = text[:start] + body + ("" if end < 0 else text[end:])
open(results, "w").write(text)
PY
echo "==> wrote bench/shared_hit.md and section 10 of bench/RESULTS.md" >&2
cat bench/shared_hit.md
