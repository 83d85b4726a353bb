#!/usr/bin/env bash
# Runs every test: unit tests, and the integration tests against a real OpenID Provider
# (npm oidc-provider), the real kubectl, the official Python client (PyPI kubernetes) and
# Debian's headless Chromium. The keyring tests run for real: inside a private D-Bus session
# with gnome-keyring (Secret Service), and inside a private kernel session keyring (keyutils).
# Installs what the tests need first: the Debian packages (with apt-get when run as root; else
# it prints the command), the test bed's npm packages, the Python client's venv and the kube-rs
# client (examples/kube-client, its own crate).
# Then the release (scripts/release.sh: dist/, every target this machine builds, each built once
# and used by all that follows): the build a Linux user downloads, the static musl binary out of
# its archive, alone in an empty directory, runs the integration tests that its build can change
# again (they run KUBECRED_TEST_BINARY when it is set; see STATIC_BINARY_TESTS), the other
# platforms' archives run under Wine and qemu (scripts/cross-test.sh), and the archives and
# manifests are used as their users would (scripts/archive-test.sh).
# Extra arguments go to `cargo test` (and skip the release's runs: a subset is being tried).
# KUBECRED_RELEASE_BUILT=1: dist/ is this checkout's release already (.ci/run builds it first).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/node-deps.sh
. scripts/python-deps.sh
. scripts/google-deps.sh
. scripts/azure-reference.sh
. scripts/aws-deps.sh
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
ensure_google_deps "$root"
ensure_azure_reference "$root"
ensure_aws_deps "$root"
ensure_kube_client "$root"

# What the second run covers, with the static release binary: the tests of what differs between
# the debug glibc build and the static musl release build, and only those (the rest is the same
# code doing the same thing, already run above, and the whole suite twice costs CI about 15
# minutes it does not have). What differs: the C library under std (musl: its own start-up, no
# dynamic loader, its resolver, file and terminal calls, process spawning), the allocator behind
# the startup arena, the TLS roots found without a loader's help, panic=abort, and LTO's
# optimisation of the unsafe code and of timing. So:
#   cache_hit_io      the system calls of a hit (strace): a static binary's differ by design
#   exec_protocol     the process boundary: stdin, stdout, exit codes, one stderr line
#   kubectl           the real kubectl running the binary end to end
#   cli_behaviour     the binary alone in an empty directory, a reader that goes away (SIGPIPE),
#                     completions, man page, --version
#   client_credentials  a grant over TLS with the CA given and the roots found
#   cache_storage     the cache files, and the keyrings (D-Bus Secret Service, keyutils syscalls)
#   faults_local      O_NOFOLLOW, modes, other users' files, FIFOs, killed writers, closed stderr
#                     (panic=abort must not turn a failed write into an abort)
#   proxy             HTTP CONNECT and SOCKS5, socks5h name resolution (musl's resolver)
#   background, concurrency, refresh  the detached renewal (spawn, inherited lock descriptor),
#                     file locks and single flight across many processes
#   login, paste      the browser login's loopback listener and browser start, the terminal
#                     (termios) of the paste fallback
# Not again: the provider conformance, quirks, federation, shared logins, setup, whoami,
# convert, sessions, docs and troubleshooting texts, samples, tidy, and the Python, JavaScript
# and kube-rs clients (the process boundary they use is exec_protocol's and kubectl's).
STATIC_BINARY_TESTS=(cache_hit_io:: exec_protocol:: kubectl:: cli_behaviour:: client_credentials::
    cache_storage:: faults_local:: proxy:: background:: concurrency:: refresh:: login:: paste::
    --skip remote_login:: --skip shared_login::)

# Build first so the test clock does not include compilation.
cargo test --no-run --quiet
alone=""
if [ $# -eq 0 ]; then
    [ -n "${KUBECRED_RELEASE_BUILT:-}" ] || bash scripts/release.sh
    alone=$(mktemp -d)
    version=$(python3 scripts/release_files.py version)
    folder="kubecred-$version-$(static_target)"
    tar -xzf "dist/$folder.tar.gz" -C "$alone" --strip-components=1 "$folder/kubecred"
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
ALONE="$alone" STATIC_BINARY_TESTS="${STATIC_BINARY_TESTS[*]}" dbus-run-session -- sh -c '
    echo -n kubecred-test | XDG_DATA_HOME="$0" gnome-keyring-daemon --unlock --components=secrets >/dev/null
    export KUBECRED_TEST_KEYRING=1
    cargo test "$@" || exit
    [ -n "$1" ] && exit
    echo "==> the integration tests its build can change, with the static release binary alone in $ALONE" >&2
    # $STATIC_BINARY_TESTS unquoted: the list, split into its words on purpose.
    KUBECRED_TEST_BINARY="$ALONE/kubecred" cargo test --test it -- $STATIC_BINARY_TESTS
' "$keyring_home" "$@"

if [ $# -eq 0 ]; then
    bash scripts/cross-test.sh
    bash scripts/archive-test.sh
fi
