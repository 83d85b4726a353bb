# Sourced by scripts/test.sh, .ci/run and bench/: the Debian packages kubecred's tests and
# benchmarks need beyond Rust, Node.js, npm, python3 and kubectl, and the one function that
# installs the missing ones. Each package is named with a command that proves it is there, so
# the check works on any distribution; the install itself uses apt-get.
#   chromium         headless browser for the login tests (driven by tests/support/browser.mjs)
#   dbus, gnome-keyring, libsecret-tools  a private Secret Service for the keyring tests (dbus:
#                    the session buses of the desktop tests too)
#   keyutils         `keyctl session` for the kernel-keyring tests
#   python3-venv     the venv of the Python-client test
#   hyperfine, time, strace  benchmarks and the cache-hit syscall check
#   zsh              loads the generated zsh completion (fish's is checked where installed)
#   musl-tools       musl-gcc, for ring's C code in the static musl build (scripts/static-build.sh)
#   glewlwyd, sqlite3  the second OpenID Provider of the test bed and the shell that creates its
#                    database (tests/support/glewlwyd.mjs)
#   man-db           renders the man page for its test (no literal markup)
#   tinyproxy, microsocks  real HTTP and SOCKS5 proxies on loopback for the proxy tests
#                    (tests/it/proxy.rs starts its own; the packaged services are not used)
#   xvfb, dunst, libnotify-bin, x11-utils  a desktop session per test without a terminal
#                    (tests/it/support/desktop.rs): an X server, the notification daemon whose
#                    history the tests read (dunstctl), notify-send and xdpyinfo to check them
KUBECRED_SYSTEM_DEPS=(
    "chromium:chromium"
    "dbus:dbus-run-session"
    "gnome-keyring:gnome-keyring-daemon"
    "libsecret-tools:secret-tool"
    "keyutils:keyctl"
    "python3-venv:python3 -m venv --help"
    "hyperfine:hyperfine"
    "time:/usr/bin/time --version"
    "strace:strace -V"
    "ca-certificates:test -s /etc/ssl/certs/ca-certificates.crt"
    "zsh:zsh"
    "musl-tools:musl-gcc"
    "glewlwyd:glewlwyd"
    "sqlite3:sqlite3"
    "man-db:man"
    "tinyproxy:tinyproxy"
    "microsocks:microsocks"
    "xvfb:Xvfb"
    "dunst:dunstctl"
    "libnotify-bin:notify-send"
    "x11-utils:xdpyinfo"
)

# What the release and the other platforms' tests need beyond that (scripts/release.sh,
# scripts/cross-test.sh):
#   gcc-mingw-w64-x86-64  the C compiler and linker of the Windows build
#   qemu-user             runs the aarch64 Linux build here
#   wine                  runs the Windows build here
KUBECRED_CROSS_DEPS=(
    "gcc-mingw-w64-x86-64:x86_64-w64-mingw32-gcc"
    "qemu-user:qemu-aarch64"
    "wine:wine"
)

# What the archives' test needs (scripts/archive-test.sh): README's install line downloads with
# curl and the test reads its manifests with PyYAML; the archives are extracted with unzip too;
# the Homebrew formula is checked and run with ruby; bash-completion loads the installed
# completion.
KUBECRED_ARCHIVE_TEST_DEPS=(
    "curl:curl"
    "unzip:unzip"
    "ruby:ruby"
    "python3-yaml:test -d /usr/lib/python3/dist-packages/yaml"
    "bash-completion:test -f /usr/share/bash-completion/bash_completion"
    "man-db:man"
    "zsh:zsh"
)

# missing_deps ENTRY...: prints the packages whose command is missing, one per line.
missing_deps() {
    local entry package check
    for entry in "$@"; do
        package=${entry%%:*}
        check=${entry#*:}
        if [[ $check == *" "* ]]; then
            # shellcheck disable=SC2086 # a command line, split on purpose
            $check >/dev/null 2>&1 || echo "$package"
        else
            command -v "$check" >/dev/null 2>&1 || echo "$package"
        fi
    done
}

# ensure_deps ENTRY...: installs what is missing with apt-get, as root or through a sudo that
# asks no password (a CI runner); else it prints the exact command to run and fails. Messages go
# to stderr.
ensure_deps() {
    local missing as_root=()
    mapfile -t missing < <(missing_deps "$@")
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null; then
        as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive)
    fi
    if { [ "$(id -u)" = 0 ] || [ ${#as_root[@]} -gt 0 ]; } && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian packages: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        "${as_root[@]}" apt-get update -qq >&2
        "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
        mapfile -t missing < <(missing_deps "$@")
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "still missing after apt-get install: ${missing[*]}" >&2
        return 1
    fi
    echo "missing packages: ${missing[*]}; install them with:" >&2
    echo "    sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    echo "(on another distribution: the packages that provide the same commands)" >&2
    return 1
}

ensure_system_deps() {
    ensure_deps "${KUBECRED_SYSTEM_DEPS[@]}"
}

ensure_cross_deps() {
    ensure_deps "${KUBECRED_CROSS_DEPS[@]}"
}
