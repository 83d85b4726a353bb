# Sourced by scripts/test.sh, scripts/release.sh, bench/ and .ci/run: the build a Linux user
# downloads, a static musl binary linked at a fixed address (no dynamic loader, no shared
# libraries to map and no relocations to apply at every start, which is most of a cache hit's
# cost; .cargo/config.toml sets it, bench/RESULTS.md measures it), and the Rust targets and
# cross tools the other builds and lints need. ring's C code is compiled with musl-gcc (Debian's
# musl-tools, installed by scripts/system-deps.sh). Messages go to stderr.

# The musl target for this machine's architecture: x86_64-unknown-linux-musl on x86_64.
static_target() {
    local host
    host=$(rustc -vV | sed -n 's/^host: //p')
    echo "${host%-gnu}-musl"
}

# ensure_rust_target TARGET...: adds each target's standard library with rustup when missing.
ensure_rust_target() {
    local target
    for target in "$@"; do
        rustup target list --installed 2>/dev/null | grep -qx "$target" && continue
        echo "adding the Rust target $target (rustup)..." >&2
        rustup target add "$target" >&2
    done
}

# build_static ROOT: builds the release binary for static_target (adding the target's standard
# library with rustup when it is missing), checks that it is linked at a fixed address, and
# prints its path.
build_static() {
    local root="${1:?usage: build_static ROOT}" target binary
    target=$(static_target)
    ensure_rust_target "$target"
    echo "building the static release binary ($target)..." >&2
    # From ROOT, so that its .cargo/config.toml applies whatever the caller's directory.
    (cd "$root" && cargo build --quiet --release --locked --target "$target") >&2
    binary="$root/target/$target/release/kubecred"
    require_fixed_address "$binary" || return 1
    echo "$binary"
}

# require_fixed_address BINARY: fails, saying why, unless BINARY is an ELF executable linked at a
# fixed address (type EXEC, the 2 bytes at offset 16) rather than position-independent (DYN).
require_fixed_address() {
    [ "$(od -An -t u2 -j 16 -N 2 "$1" | tr -d ' ')" = 2 ] && return 0
    echo "$1 is position-independent, not linked at a fixed address as .cargo/config.toml asks:" \
        "RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in the environment replace that file's flags;" \
        "unset them, or add -C relocation-model=static to them" >&2
    return 1
}

# ensure_zigbuild: cargo-zigbuild and zig (PyPI), the C compiler and linker of the aarch64 musl
# build (ring has C code; Debian has no aarch64 musl cross compiler).
ensure_zigbuild() {
    command -v cargo-zigbuild > /dev/null && return 0
    echo "installing cargo-zigbuild and ziglang (pip)..." >&2
    python3 -m pip install --quiet ziglang==0.17.1 cargo-zigbuild==0.24.1 >&2
}
