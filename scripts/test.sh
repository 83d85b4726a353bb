#!/usr/bin/env bash
# Runs every test: unit tests, and the integration tests against a real OpenID Provider
# (npm oidc-provider), the real kubectl, the official Python client (PyPI kubernetes) and
# Debian's headless Chromium. The keyring tests run for real: inside a private D-Bus session
# with gnome-keyring (Secret Service), and inside a private kernel session keyring (keyutils).
# Installs what the tests need first: the Debian packages (with apt-get when run as root; else
# it prints the command), the test bed's npm packages, the Python client's venv and the kube-rs
# client (examples/kube-client, its own crate).
# Then the build a Linux user downloads, the static musl release binary copied alone into an empty
# directory, runs the integration tests again (they run KUBECRED_TEST_BINARY when it is set), and
# the other platforms' release builds run under Wine and qemu (scripts/cross-test.sh), and the
# release archives and manifests are used as their users would (scripts/archive-test.sh).
# Extra arguments go to `cargo test` (and skip the static binary's and the other platforms' runs:
# a subset is being tried).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/node-deps.sh
. scripts/python-deps.sh
. scripts/kube-client.sh
. scripts/static-build.sh

for tool in cargo node npm python3 kubectl; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "scripts/test.sh: $tool is required (README: Rust, Node.js 20+, python3, kubectl 1.30+)" >&2
        exit 1
    }
done
ensure_system_deps || exit 1
ensure_node_deps "$root"
ensure_python_deps "$root"
ensure_kube_client "$root"

# Build first so the test clock does not include compilation.
cargo test --no-run --quiet
alone=""
if [ $# -eq 0 ]; then
    static_binary=$(build_static "$root")
    alone=$(mktemp -d)
    cp "$static_binary" "$alone/kubecred"
fi

# The kernel keyring store, in a private session keyring with no D-Bus in reach (the
# headless SSH case).
env -u DBUS_SESSION_BUS_ADDRESS -u XDG_RUNTIME_DIR KUBECRED_TEST_KEYUTILS=1 \
    keyctl session - cargo test --quiet --lib cache::keyring

# Everything, with a real Secret Service daemon (gnome-keyring) in a private D-Bus session. Its
# keyrings live in a throwaway XDG_DATA_HOME, so a developer's own login keyring (locked, with
# another password) cannot get in the way.
keyring_home=$(mktemp -d)
trap 'rm -rf "$keyring_home" ${alone:+"$alone"}' EXIT
ALONE="$alone" dbus-run-session -- sh -c '
    echo -n kubecred-test | XDG_DATA_HOME="$0" gnome-keyring-daemon --unlock --components=secrets >/dev/null
    export KUBECRED_TEST_KEYRING=1
    cargo test "$@" || exit
    [ -n "$1" ] && exit
    echo "==> the integration tests again, with the static release binary alone in $ALONE" >&2
    KUBECRED_TEST_BINARY="$ALONE/kubecred" cargo test --test it
' "$keyring_home" "$@"

if [ $# -eq 0 ]; then
    bash scripts/cross-test.sh
    bash scripts/archive-test.sh
fi
