#!/usr/bin/env bash
# The other platforms' builds, run here against the test provider (tests/support/testbed.mjs on
# loopback): the Windows build under Wine, the aarch64 Linux build under qemu-aarch64. It tests
# the archives scripts/release.sh built into dist/ (building them first when dist/ has none):
# what a user downloads, not a debug build.
#   Windows (Wine 8): --version; a client-credentials grant; the next run answered from the cache
#     (no token request); `status` lists the entry; `logout` forgets it; the same with
#     --cache-storage keyring (Wine's Credential Manager); refresh-ahead: a hit in the window ends
#     its output as fast as a plain hit while the renewal waits for a slow provider, and starts
#     one renewal however many hits come; the Windows proxy settings (the registry's Internet
#     settings, as the settings app writes them): requests go through the proxy they name (a real
#     tinyproxy, whose log shows them), or direct for a host in their exceptions.
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
# The ELF header's machine field (offset 18): 183 is aarch64.
python3 -c 'import sys; h=open(sys.argv[1],"rb").read(20); sys.exit(h[:4]!=b"\x7fELF" or int.from_bytes(h[18:20],"little")!=183)' \
    "$work/arm/kubecred" || fail "the arm64 archive does not hold an aarch64 binary"
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

# refresh-ahead on Windows: a hit in the window starts the renewal without handing it kubectl's
# pipes (std creates children with bInheritHandles set), so reading the hit's stdout to its end,
# as client-go does, takes as long as for a plain hit while the provider takes 15 s for the
# renewal; and hits that come while it runs start no other. stderr goes to a file, as client-go
# passes its own stderr on: Wine (not Windows) gives every child the unix descriptor 2 of its
# parent whatever its handles say (dlls/ntdll/unix/process.c, spawn_process), so a pipe there
# would measure Wine.
# A wine process started while the prefix's services are not up hands its standard handles to
# them: a persistent wineserver (the one the runs above started would exit when idle, and cannot
# be made persistent while it runs) and wineboot come first, their stdio on /dev/null.
wineserver -k < /dev/null > /dev/null 2>&1 || true
wineserver -w < /dev/null > /dev/null 2>&1 || true
wineserver -p < /dev/null > /dev/null 2>&1
wine wineboot -i < /dev/null > /dev/null 2>&1 || true
win "${cc_args[@]}" > /dev/null || fail "windows refresh-ahead grant: $(cat "$work/win.stderr")"
bed_admin POST /config '{"tokenDelayMs": 15000}' > /dev/null
before=$(token_requests)
# Seconds until the child's stdout reaches its end (the child itself may go on); its stderr to
# a file.
read_to_end() {
    python3 - "$work/hit.stderr" "$@" <<'PY'
import subprocess, sys, time
with open(sys.argv[1], "wb") as stderr:
    started = time.monotonic()
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    out = child.stdout.read()
    elapsed = time.monotonic() - started
    child.wait(timeout=120)
if child.returncode != 0 or b'"ExecCredential"' not in out:
    sys.exit("exit %s: %s" % (child.returncode, open(sys.argv[1], errors="replace").read()))
print("%.2f" % elapsed)
PY
}
plain=$(read_to_end wine "$exe" "${cc_args[@]}" --refresh-ahead=0) || fail "windows plain hit: $plain"
window=$(read_to_end wine "$exe" "${cc_args[@]}" --refresh-ahead=1h) || fail "windows window hit: $window"
for _ in 1 2 3; do
    read_to_end wine "$exe" "${cc_args[@]}" --refresh-ahead=1h > /dev/null || fail "windows window hit"
done
python3 -c 'import sys; p, w = map(float, sys.argv[1:]); sys.exit(w > max(3 * p, p + 2))' "$plain" "$window" \
    || fail "windows: the window hit's stdout ended after ${window}s, a plain hit's after ${plain}s: the renewal holds kubectl's pipe"
for _ in $(seq 60); do [ "$(token_requests)" != "$before" ] && break; sleep 0.5; done
sleep 16 # the renewal's request takes 15 s
[ "$(token_requests)" = $((before + 1)) ] \
    || fail "windows: $(($(token_requests) - before)) token requests for four hits in the window, expected one renewal"
bed_admin POST /config '{"tokenDelayMs": 0}' > /dev/null
echo "    refresh-ahead: the window hit's stdout ended in ${window}s (a plain hit's in ${plain}s) with the provider taking 15 s; one renewal for four hits: ok" >&2
# The Windows proxy settings, with no proxy variable set: kubecred reads the registry itself
# (src/http/proxy/system.rs). A tinyproxy of our own on loopback is the proxy.
ensure_deps "tinyproxy:tinyproxy"
proxy_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'Port %s\nListen 127.0.0.1\nLogLevel Connect\nMaxClients 20\n' "$proxy_port" > "$work/tinyproxy.conf"
tinyproxy -d -c "$work/tinyproxy.conf" < /dev/null > "$work/tinyproxy.log" 2>&1 &
tinyproxy_pid=$!
trap 'kill "$tinyproxy_pid" 2> /dev/null; cleanup' EXIT
for _ in $(seq 100); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$proxy_port" 2> /dev/null && break
    sleep 0.1
done
internet_settings='HKCU\Software\Microsoft\Windows\CurrentVersion\Internet Settings'
set_internet_setting() { wine reg add "$internet_settings" /v "$1" /t "$2" /d "$3" /f < /dev/null > /dev/null 2>&1; }
set_internet_setting ProxyEnable REG_DWORD 1
set_internet_setting ProxyServer REG_SZ "http=127.0.0.1:$proxy_port;https=127.0.0.1:$proxy_port"
set_internet_setting ProxyOverride REG_SZ "*.corp.example;<local>"
# No cache (a grant each time): only the route matters here.
win "${cc_args[@]}" --cache-storage=none -v > /dev/null || fail "windows through the system proxy: $(cat "$work/win.stderr")"
grep -q "goes through the proxy http://127.0.0.1:$proxy_port (from the Windows proxy settings)" "$work/win.stderr" \
    || fail "windows: -v does not say the system proxy was used: $(cat "$work/win.stderr")"
grep -q "POST http://127.0.0.1:[0-9]*/token" "$work/tinyproxy.log" || fail "windows: the token request did not reach the proxy"
set_internet_setting ProxyOverride REG_SZ "*.corp.example;127.0.0.1;<local>"
win "${cc_args[@]}" --cache-storage=none -v > /dev/null || fail "windows direct by the exceptions: $(cat "$work/win.stderr")"
grep -q "goes direct: the exceptions of the Windows proxy settings match its host (entry 127.0.0.1)" "$work/win.stderr" \
    || fail "windows: the exception list was not applied: $(cat "$work/win.stderr")"
set_internet_setting ProxyEnable REG_DWORD 0
kill "$tinyproxy_pid" 2> /dev/null || true
echo "    the Windows proxy settings: through the proxy they name, direct for their exceptions: ok" >&2
echo "==> the other platforms' builds pass" >&2
