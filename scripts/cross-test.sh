#!/usr/bin/env bash
# The other platforms' builds, run here against the test provider (tests/support/testbed.mjs on
# loopback): the Windows build under Wine, the aarch64 Linux build under qemu-aarch64. It tests
# the archives scripts/release.sh built into dist/ (building them first when dist/ has none):
# what a user downloads, not a debug build.
#   Windows (Wine 8): --version; a client-credentials grant; the next run answered from the cache
#     (no token request); `status` lists the entry; `logout` forgets it; the same with
#     --cache-storage keyring (Wine's Credential Manager).
#   Linux arm64 (qemu-user): --version; a client-credentials grant; a cache hit.
# Wine 8 lacks bcryptprimitives.dll, which Rust's std needs: a one-function stand-in
# (tests/support/wine/bcryptprimitives.c) is built with mingw and put beside the exe, for Wine
# only. Usage: scripts/cross-test.sh   (run by .ci/run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/node-deps.sh
. bench/lib.sh

ensure_cross_deps
ensure_node_deps "$root"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
windows_zip="dist/kubecred-$version-x86_64-pc-windows-gnu.zip"
arm_tar="dist/kubecred-$version-aarch64-unknown-linux-musl.tar.gz"
if [ ! -f "$windows_zip" ] || [ ! -f "$arm_tar" ]; then
    bash scripts/release.sh
fi

work=$(mktemp -d)
cleanup() { stop_testbed 2> /dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "cross-test: $*" >&2; exit 1; }

start_testbed "$work" '{"clientCredentialsTtl": 3600}'
issuer=$(bed_field issuer)
export KUBECRED_CLIENT_SECRET=testbed-cc-secret
cc_args=(get-token "--issuer-url=$issuer" --client-id=kubecred-cc --grant-type=client-credentials
    --resource=https://kubernetes.testbed)
token_requests() { bed_admin GET /stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"]["client_credentials"])'; }
token_of() { python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["kind"]=="ExecCredential"; print(d["status"]["token"])'; }

# ---- Linux arm64 under qemu ------------------------------------------------------------------
echo "==> aarch64 Linux (static musl) under qemu-aarch64" >&2
mkdir -p "$work/arm"
tar -C "$work/arm" -xzf "$arm_tar"
arm=(qemu-aarch64 "$work/arm/kubecred")
# The ELF header's type (offset 16): 2 is an executable linked at a fixed address, as
# .cargo/config.toml asks; its machine (offset 18): 183 is aarch64.
python3 -c 'import sys; h=open(sys.argv[1],"rb").read(20); sys.exit(h[:4]!=b"\x7fELF" or h[16:18]!=b"\x02\x00" or int.from_bytes(h[18:20],"little")!=183)' \
    "$work/arm/kubecred" || fail "the arm64 archive does not hold an aarch64 executable linked at a fixed address"
"${arm[@]}" --version | grep -q "^kubecred $version" || fail "arm64 --version"
before=$(token_requests)
first=$("${arm[@]}" "${cc_args[@]}" "--cache-dir=$work/arm-cache" | token_of)
again=$("${arm[@]}" "${cc_args[@]}" "--cache-dir=$work/arm-cache" | token_of)
[ "$first" = "$again" ] || fail "arm64: the second run was not answered from the cache"
[ "$(token_requests)" = $((before + 1)) ] || fail "arm64: expected one token request"
echo "    --version, a client-credentials grant and a cache hit: ok" >&2

# ---- Windows under Wine ----------------------------------------------------------------------
echo "==> x86_64 Windows under Wine ($(wine --version))" >&2
mkdir -p "$work/win"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$windows_zip" "$work/win"
x86_64-w64-mingw32-gcc -O2 -shared -o "$work/win/bcryptprimitives.dll" \
    tests/support/wine/bcryptprimitives.c -lbcrypt
export WINEPREFIX="$work/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wineboot --init > /dev/null 2>&1 || true
exe="$work/win/kubecred.exe"
# Wine maps the Unix root to Z:, and kubecred's cache directory is under %LOCALAPPDATA%.
win() { wine "$exe" "$@" 2> "$work/win.stderr"; }
win --version | tr -d '\r' | grep -q "^kubecred $version" || fail "windows --version: $(cat "$work/win.stderr")"
for storage in disk keyring; do
    before=$(token_requests)
    first=$(win "${cc_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage grant: $(cat "$work/win.stderr")"
    again=$(win "${cc_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage hit: $(cat "$work/win.stderr")"
    [ "$first" = "$again" ] || fail "windows $storage: the second run was not answered from the cache"
    [ "$(token_requests)" = $((before + 1)) ] || fail "windows $storage: expected one token request"
    win status | tr -d '\r' | grep -q "$issuer" || fail "windows $storage: status does not list the entry"
    if [ "$storage" = keyring ]; then
        win status | tr -d '\r' | grep -q "keyring" || fail "windows: the entry is not in the Credential Manager"
    fi
    win logout "${cc_args[@]:1}" "--cache-storage=$storage" > /dev/null || fail "windows $storage logout: $(cat "$work/win.stderr")"
    win status | tr -d '\r' | grep -q "no cached logins" || fail "windows $storage: logout left an entry"
    echo "    --cache-storage $storage: a grant, a cache hit, status and logout: ok" >&2
done
echo "==> the other platforms' builds pass" >&2
