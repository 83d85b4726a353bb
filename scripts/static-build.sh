# Sourced by scripts/test.sh, scripts/release.sh, bench/ and .ci/run: the build a Linux user
# downloads, a static musl binary (static-pie: no dynamic loader, no shared libraries to map at
# every start, which is most of a cache hit's cost; bench/RESULTS.md), and the Rust targets and
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
# library with rustup when it is missing) and prints its path.
build_static() {
    local root="${1:?usage: build_static ROOT}" target
    target=$(static_target)
    ensure_rust_target "$target"
    echo "building the static release binary ($target)..." >&2
    cargo build --quiet --release --locked --target "$target" --manifest-path "$root/Cargo.toml" >&2
    echo "$root/target/$target/release/kubecred"
}

# ensure_zigbuild: cargo-zigbuild and zig (PyPI), the C compiler and linker of the aarch64 musl
# build (ring has C code; Debian has no aarch64 musl cross compiler).
ensure_zigbuild() {
    command -v cargo-zigbuild > /dev/null && return 0
    echo "installing cargo-zigbuild and ziglang (pip)..." >&2
    python3 -m pip install --quiet ziglang==0.17.1 cargo-zigbuild==0.24.1 >&2
}
