#!/usr/bin/env bash
# The other platforms' builds, run here against the test provider (tests/support/testbed.mjs on
# loopback): the Windows build under Wine, the aarch64 Linux build under qemu-aarch64. It tests
# the archives scripts/release.sh built into dist/ (building them first when dist/ has none):
# what a user downloads, not a debug build.
#   Windows (Wine 8): --version; a client-credentials grant; the next run answered from the cache
#     (no token request); a --force-refresh replaces the entry; `status` lists it; `logout` forgets it; the same with
#     --cache-storage keyring. Then device-flow logins as large as real ones (an ID token over
#     4 KB, a 2,000-character refresh token), completed in headless Chromium (browser.mjs) from
#     the URL kubecred prints, with `keyring` and `auto`: stored, the next run answered from the
#     cache, the secrets only in DPAPI-protected files (no token in the clear anywhere in the
#     Wine prefix), `status` naming them, `logout` leaving no file and no Credential Manager item;
#     and a cache that cannot be written (the directory, or the DPAPI store in it) still handing out
#     the completed login with one warning.
#     Refresh-ahead: a hit in the window ends its stdout as fast as a plain hit while the
#     renewal waits for a slow provider, and starts one renewal however many hits come.
#     The Windows proxy settings (the registry's Internet settings, as the settings app writes
#     them): requests go through the proxy they name (a real tinyproxy, whose log shows them),
#     or direct for a host in their exceptions.
#   Linux arm64 (qemu-user): --version; a client-credentials grant; a cache hit.
# Wine 8 lacks bcryptprimitives.dll, which Rust's std needs: a one-function stand-in
# (tests/support/wine/bcryptprimitives.c) is built with mingw and put beside the exe, for Wine
# only; tests/support/wine/credman.c lists Credential Manager items, as cmdkey would.
# Usage: scripts/cross-test.sh   (run by .ci/run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/node-deps.sh
. bench/lib.sh

ensure_cross_deps
ensure_node_deps "$root"
version=$(python3 scripts/release_files.py version)
windows_folder="kubecred-$version-x86_64-pc-windows-gnu"
arm_folder="kubecred-$version-aarch64-unknown-linux-musl"
windows_zip="dist/$windows_folder.zip"
arm_tar="dist/$arm_folder.tar.gz"
if [ ! -f "$windows_zip" ] || [ ! -f "$arm_tar" ]; then
    bash scripts/release.sh
fi

work=$(mktemp -d)
# The prefix's wineserver outlives the last wine process by a few seconds and writes into the
# prefix meanwhile: it is ended (it is this prefix's alone) before the prefix is removed.
cleanup() {
    stop_testbed 2> /dev/null || true
    if [ -n "${WINEPREFIX:-}" ]; then wineserver -k 2> /dev/null || true; wineserver -w 2> /dev/null || true; fi
    rm -rf "$work"
}
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
arm=(qemu-aarch64 "$work/arm/$arm_folder/kubecred")
# The ELF header's type (offset 16): 2 is an executable linked at a fixed address, as
# .cargo/config.toml asks; its machine (offset 18): 183 is aarch64.
python3 -c 'import sys; h=open(sys.argv[1],"rb").read(20); sys.exit(h[:4]!=b"\x7fELF" or h[16:18]!=b"\x02\x00" or int.from_bytes(h[18:20],"little")!=183)' \
    "$work/arm/$arm_folder/kubecred" || fail "the arm64 archive does not hold an aarch64 executable linked at a fixed address"
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
x86_64-w64-mingw32-gcc -O2 -shared -o "$work/win/$windows_folder/bcryptprimitives.dll" \
    tests/support/wine/bcryptprimitives.c -lbcrypt
x86_64-w64-mingw32-gcc -O2 -municode -o "$work/credman.exe" tests/support/wine/credman.c -ladvapi32
export WINEPREFIX="$work/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
mkdir -p "$WINEPREFIX"
# The prefix's services first, with stdio on /dev/null: a wine process started before they run
# hands its standard handles to them, and whoever reads its stdout to the end would wait for
# them (they live as long as the wineserver, which -p keeps until cleanup's `wineserver -k`).
wineserver -p < /dev/null > /dev/null 2>&1
wine wineboot -i < /dev/null > /dev/null 2>&1 || true
exe="$work/win/$windows_folder/kubecred.exe"
# Wine maps the Unix root to Z:, and kubecred's cache directory is under %LOCALAPPDATA%.
win() { wine "$exe" "$@" 2> "$work/win.stderr" < /dev/null; }
credman() { wine "$work/credman.exe" "$@" < /dev/null | tr -d '\r'; }
windows_path() { winepath -w "$1" 2> /dev/null; }
unix_path() { winepath -u "$1" 2> /dev/null; }
win --version | tr -d '\r' | grep -q "^kubecred $version" || fail "windows --version: $(cat "$work/win.stderr")"
for storage in disk keyring; do
    before=$(token_requests)
    first=$(win "${cc_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage grant: $(cat "$work/win.stderr")"
    again=$(win "${cc_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage hit: $(cat "$work/win.stderr")"
    [ "$first" = "$again" ] || fail "windows $storage: the second run was not answered from the cache"
    [ "$(token_requests)" = $((before + 1)) ] || fail "windows $storage: expected one token request"
    # A new token replaces the entry: the run that read the entry (and keeps it open for the
    # hand-out stamp) renames the new file over it, which Wine, like Windows without POSIX
    # rename semantics, refuses while the file is open.
    renewed=$(win "${cc_args[@]}" "--cache-storage=$storage" --force-refresh | token_of) \
        || fail "windows $storage --force-refresh: $(cat "$work/win.stderr")"
    grep -q "warning" "$work/win.stderr" && fail "windows $storage --force-refresh: $(cat "$work/win.stderr")"
    again=$(win "${cc_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage hit after --force-refresh: $(cat "$work/win.stderr")"
    [ "$renewed" != "$first" ] && [ "$again" = "$renewed" ] \
        || fail "windows $storage: the entry was not replaced by the new token"
    win status | tr -d '\r' | grep -q "$issuer" || fail "windows $storage: status does not list the entry"
    if [ "$storage" = keyring ]; then
        win status | tr -d '\r' | grep -q "keyring (DPAPI file store)" || fail "windows: the entry is not in the DPAPI store"
    fi
    win logout "${cc_args[@]:1}" "--cache-storage=$storage" > /dev/null || fail "windows $storage logout: $(cat "$work/win.stderr")"
    win status | tr -d '\r' | grep -q "no cached logins" || fail "windows $storage: logout left an entry"
    echo "    --cache-storage $storage: a grant, a cache hit, a replaced entry, status and logout: ok" >&2
done

# refresh-ahead on Windows: a hit in the window starts the renewal without handing it kubectl's
# pipes (std creates children with bInheritHandles set), so reading the hit's stdout to its end,
# as client-go does, takes as long as for a plain hit while the provider takes 15 s for the
# renewal; and hits that come while it runs start no other. stderr goes to a file, as client-go
# passes its own stderr on: Wine (not Windows) gives every child the unix descriptor 2 of its
# parent whatever its handles say (dlls/ntdll/unix/process.c, spawn_process), so a pipe there
# would measure Wine.
# (The prefix's services run already, started above with stdio on /dev/null: a wine process
# started before them would hand its standard handles to them.)
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
first=$(win "${cc_args[@]}" --refresh-ahead=0 | token_of) || fail "windows plain hit: $(cat "$work/win.stderr")"
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
renewed=$(win "${cc_args[@]}" --refresh-ahead=0 | token_of) || fail "windows hit after the renewal: $(cat "$work/win.stderr")"
[ "$renewed" != "$first" ] || fail "windows: the background renewal did not replace the cached token"
bed_admin POST /config '{"tokenDelayMs": 0}' > /dev/null
win logout "${cc_args[@]:1}" > /dev/null || fail "windows refresh-ahead logout: $(cat "$work/win.stderr")"
echo "    refresh-ahead: the window hit's stdout ended in ${window}s (a plain hit's in ${plain}s) with the provider taking 15 s; one renewal for four hits: ok" >&2

# A failure with no terminal (stdin the null device, stderr a file), as an IDE meets one: the
# desktop detection (Wine's desktop is an interactive session) and the notification path run —
# Wine has no toast service, which the notification's deadline bounds — and the failure stays what
# it is: exit 3, the one error line, nothing on stdout, within that deadline of a plain failure.
started=$(date +%s.%N)
out=$(KUBECRED_CLIENT_SECRET=not-the-secret win "${cc_args[@]}" -v --force-refresh) && fail "windows: a refused client secret succeeded"
status=$?
took=$(python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 1))' "$started")
[ "$status" = 3 ] || fail "windows: a refused client secret exited $status, expected 3: $(cat "$work/win.stderr")"
[ -z "$out" ] || fail "windows: a failure printed on stdout: $out"
tr -d '\r' < "$work/win.stderr" | grep -q "desktop notification" \
    || fail "windows: -v says nothing of the desktop notification: $(cat "$work/win.stderr")"
[ "$(tr -d '\r' < "$work/win.stderr" | grep -c '^kubecred: error: ')" = 1 ] \
    || fail "windows: not one error line: $(cat "$work/win.stderr")"
python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 20)' "$took" \
    || fail "windows: the failure took ${took}s: the notification path is not bounded"
# The one notification per hold-off is noted in the state file of that entry (the secret is in
# its key); logout removes it, leaving the cache directory as the device logins below expect.
KUBECRED_CLIENT_SECRET=not-the-secret win logout "${cc_args[@]:1}" > /dev/null \
    || fail "windows: logout after the refused secret: $(cat "$work/win.stderr")"
echo "    a failure without a terminal: the desktop detection and the notification path ran, exit 3, one error line, ${took}s: ok" >&2

# ---- Windows: device-flow logins as large as real ones ---------------------------------------
# alice in 70 groups makes an ID token over 4 KB; every token answer carries a 2,000-character
# refresh token (Entra ID's are that long), known here so that the disk can be searched for it.
# The public client: no client secret.
unset KUBECRED_CLIENT_SECRET
refresh_token=$(python3 -c 'import secrets; print("rt-" + secrets.token_hex(1000)[:1997])')
groups=$(python3 -c 'import json; print(json.dumps(["kubecred-cross-test-group-%03d-with-a-long-name" % i for i in range(70)]))')
bed_admin POST /config "{\"accounts\": {\"alice\": {\"groups\": $groups}}, \"tokenResponsePatch\": {\"refresh_token\": \"$refresh_token\"}}" > /dev/null
total_token_requests() { bed_admin GET /stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"]["total"])'; }
device_args=(get-token "--issuer-url=$issuer" --client-id=kubecred --grant-type=device-code
    --scope=groups --skip-open-browser)

# device_login OUT ARGS...: kubecred.exe's device flow with ARGS, approved in headless Chromium
# (browser.mjs signs in as alice) at the URL kubecred prints; its stdout in OUT, stderr in
# OUT.stderr.
device_login() {
    local out=$1 url="" pid status
    shift
    # Made here, so that the loop below never reads a file the background job has yet to open.
    : > "$out.stderr"
    wine "$exe" "${device_args[@]}" "$@" > "$out" 2>> "$out.stderr" < /dev/null &
    pid=$!
    for _ in $(seq 300); do
        url=$(tr -d '\r' < "$out.stderr" | sed -n 's/^.*[Tt]o log in, open \(http[^ ]*\) in a browser.*$/\1/p' | head -1)
        [ -n "$url" ] && break
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        wait "$pid" || true
        fail "windows device login ($*): no login URL on stderr: $(cat "$out.stderr")"
    fi
    node tests/support/browser.mjs "$url" > /dev/null 2> "$out.browser" \
        || fail "windows device login ($*): the browser did not sign in: $(cat "$out.browser")"
    status=0
    wait "$pid" || status=$?
    [ "$status" = 0 ] || fail "windows device login ($*) exited $status: $(cat "$out.stderr")"
}

# kubecred's notices on stderr (warnings, errors), without \r: its lines other than the
# device flow's instructions (the QR code's lines have no prefix).
notices() {
    tr -d '\r' < "$1" | grep '^kubecred: ' \
        | grep -v -e '^kubecred: to log in, open ' -e '^kubecred: or scan this with a phone:$' \
            -e '^kubecred: the code expires in ' || true
}

# in_the_clear DIR TEXT...: the files under DIR (no link followed) holding any TEXT, as UTF-8 or
# UTF-16 (what Windows APIs write); a 64-character piece of each is looked for.
in_the_clear() {
    python3 - "$@" << 'EOF'
import os, sys
root, texts = sys.argv[1], sys.argv[2:]
needles = []
for text in texts:
    piece = text[len(text) // 2 - 32:len(text) // 2 + 32]
    needles += [piece.encode(), piece.encode("utf-16-le")]
for directory, _, files in os.walk(root):
    for name in files:
        path = os.path.join(directory, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        if any(needle in data for needle in needles):
            print(path)
EOF
}

for storage in keyring auto; do
    device_login "$work/login-$storage" "--cache-storage=$storage"
    id_token=$(token_of < "$work/login-$storage") || fail "windows $storage login printed no credential"
    [ "${#id_token}" -ge 4096 ] || fail "windows $storage: the ID token has ${#id_token} bytes, the test wants over 4 KB"
    [ -z "$(notices "$work/login-$storage.stderr")" ] \
        || fail "windows $storage login: $(notices "$work/login-$storage.stderr")"
    before=$(total_token_requests)
    again=$(win "${device_args[@]}" "--cache-storage=$storage" | token_of) \
        || fail "windows $storage device hit: $(cat "$work/win.stderr")"
    [ "$again" = "$id_token" ] || fail "windows $storage: the second run was not answered from the cache"
    [ "$(total_token_requests)" = "$before" ] || fail "windows $storage: the second run asked the provider"

    # Where the secrets are: status names DPAPI-protected files, and they exist.
    win status --output json | tr -d '\r' > "$work/status-$storage.json" || fail "windows status: $(cat "$work/win.stderr")"
    python3 - "$storage" "$work/status-$storage.json" > "$work/secrets-$storage" << 'EOF' \
        || fail "windows $storage status: $(cat "$work/status-$storage.json")"
import json, sys
storage, status = sys.argv[1], json.load(open(sys.argv[2]))
[entry] = status["entries"]
secrets = {piece["holds"]: piece for piece in entry["secrets"]}
if storage == "keyring":
    assert entry["storage"] == "keyring" and entry["keyring_store"] == "dpapi", entry
    assert list(secrets) == ["all_tokens"] and secrets["all_tokens"]["store"] == "dpapi", secrets
    protected = secrets["all_tokens"]["location"]
else:
    assert entry["storage"] == "file" and entry["refresh_token_in"] == "dpapi", entry
    assert secrets["refresh_token"]["store"] == "dpapi", secrets
    assert secrets["id_and_access_tokens"]["store"] == "file", secrets
    protected = secrets["refresh_token"]["location"]
assert protected.endswith(".dpapi") and protected[1:3] == ":\\", protected
print(entry["key"])
print(protected)
EOF
    protected=$(unix_path "$(sed -n 2p "$work/secrets-$storage")")
    [ -s "$protected" ] || fail "windows $storage: status names $protected, which is not there"
    win status | tr -d '\r' | grep -q "DPAPI file store" || fail "windows $storage: status table: $(win status)"
    cache_dir=$(dirname "$(dirname "$protected")")
    # No token in the clear anywhere in the prefix (the cache directory is in it): none at all
    # with `keyring`; with `auto` the promise is the refresh token's, and the ID token is in the
    # private file beside it.
    if [ "$storage" = keyring ]; then
        leaks=$(in_the_clear "$WINEPREFIX" "$refresh_token" "$id_token")
        [ -z "$(ls -A "$cache_dir/tokens" 2> /dev/null)" ] || fail "windows keyring: token files: $(ls "$cache_dir/tokens")"
    else
        leaks=$(in_the_clear "$WINEPREFIX" "$refresh_token")
        [ -n "$(in_the_clear "$cache_dir/tokens" "$id_token")" ] || fail "windows auto: the ID token is not in the entry file"
    fi
    [ -z "$leaks" ] || fail "windows $storage: a token in the clear in: $leaks"
    [ -z "$(credman list)" ] || fail "windows $storage: Credential Manager items: $(credman list)"

    win logout "${device_args[@]:1}" "--cache-storage=$storage" > /dev/null || fail "windows $storage logout: $(cat "$work/win.stderr")"
    win status | tr -d '\r' | grep -q "no cached logins" || fail "windows $storage: logout left an entry"
    left=$(cd "$cache_dir" && find . -type f ! -path './locks/*' ! -path './oidc/*')
    [ -z "$left" ] || fail "windows $storage: logout left files behind: $left"
    [ -z "$(in_the_clear "$WINEPREFIX" "$refresh_token")" ] || fail "windows $storage: a copy of the refresh token outlived logout"
    echo "    device flow, --cache-storage $storage: a 4 KB ID token and a 2,000-character refresh token in DPAPI-protected files, a cache hit, status, logout: ok" >&2
done

# A cache that cannot be written still hands out the completed login, with one warning: a cache
# directory that cannot be made (under a regular file), and one whose DPAPI store cannot be
# written (a regular file where its directory goes).
: > "$work/a-file"
mkdir -p "$work/refusing"
: > "$work/refusing/dpapi"
for storage in keyring auto; do
    for case in unusable refusing; do
        if [ "$case" = unusable ]; then
            dir="$(windows_path "$work/a-file")\\cache"
        else
            dir=$(windows_path "$work/refusing")
        fi
        out="$work/uncached-$storage-$case"
        device_login "$out" "--cache-storage=$storage" "--cache-dir=$dir"
        token=$(token_of < "$out") || fail "windows $storage, $case cache: no credential"
        [ "${#token}" -ge 4096 ] || fail "windows $storage, $case cache: not the ID token"
        lines=$(notices "$out.stderr")
        [ "$(printf '%s\n' "$lines" | wc -l)" = 1 ] || fail "windows $storage, $case cache: expected one warning: $lines"
        case "$case/$storage" in
        unusable/*) expected="cannot use the cache directory" ;;
        refusing/keyring) expected="warning: the new token is handed out but not cached: the DPAPI file store failed with the cache entry (cannot write " ;;
        refusing/auto) expected="the DPAPI file store failed with the refresh token (cannot write " ;;
        esac
        printf '%s\n' "$lines" | grep -qF "$expected" || fail "windows $storage, $case cache: $lines"
    done
    echo "    device flow, --cache-storage $storage: a cache that cannot be written still hands out the login, with one warning: ok" >&2
done

# The Windows proxy settings, with no proxy variable set: kubecred reads the registry itself
# (src/http/proxy/system.rs). A tinyproxy of our own on loopback is the proxy. The grant is
# client credentials again (the device-flow part above unset its secret).
export KUBECRED_CLIENT_SECRET=testbed-cc-secret
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
