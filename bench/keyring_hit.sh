#!/usr/bin/env bash
# Proves that a cache hit in `--cache-storage auto` never touches the OS keyring, even when the
# entry's refresh token is in it: logs in through the (headless) browser so that the refresh
# token goes to a real Secret Service (gnome-keyring in a private D-Bus session), then runs a
# cache hit under strace and counts socket, connect and keyring system calls. Prints a markdown
# paragraph; fails if the hit touched the keyring or the refresh token did not reach it.
# Usage: bench/keyring_hit.sh KUBECRED WORKDIR          (called by bench/run.sh)
set -euo pipefail
kubecred=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${KUBECRED_BENCH_IN_SESSION:-}" ]; then
    mkdir -p "$work/keyrings"
    exec dbus-run-session -- env KUBECRED_BENCH_IN_SESSION=1 XDG_DATA_HOME="$work/keyrings" \
        bash "$0" "$@"
fi
echo -n bench | gnome-keyring-daemon --unlock --components=secrets > /dev/null
cd "$root"
. bench/lib.sh
start_testbed "$work"
trap stop_testbed EXIT
args=(get-token "--issuer-url=$(bed_field issuer)" --client-id=kubecred --grant-type=authcode
    --listen-address=127.0.0.1:0 "--browser-command=node $root/tests/support/browser.mjs"
    --scope=email "--cache-dir=$work/cache" --cache-storage=auto)
unset KUBECRED_CLIENT_SECRET
"$kubecred" "${args[@]}" > /dev/null 2> "$work/login.log" || { cat "$work/login.log"; exit 1; }
where=$(python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1])[0]))["refresh"]["in"])' "$work/cache/tokens/*.json")
[ "$where" = keyring ] || { echo "the refresh token is in the $where, not the keyring"; exit 1; }
strace -f -qq -o "$work/hit.strace" -e trace=%network,%ipc,keyctl,add_key,request_key \
    "$kubecred" "${args[@]}" > /dev/null
calls=$(grep -cE '^[0-9]+ +(socket|connect|sendmsg|keyctl|add_key|request_key)\(' "$work/hit.strace" || true)
[ "$calls" = 0 ] || { echo "the cache hit made $calls socket or keyring calls:"; cat "$work/hit.strace"; exit 1; }
echo "The refresh token went to a real Secret Service (gnome-keyring, private D-Bus session) at"
echo "login, and the cache file says so (\`\"refresh\":{\"in\":\"keyring\"}\`). A cache hit then, with"
echo "\`--cache-storage auto\`, under \`strace -f\`: 0 socket, connect or keyring (keyctl, add_key,"
echo "request_key) calls. The same is checked on every test run by tests/it/cache_hit_io.rs."
