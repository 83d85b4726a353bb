# Sourced by scripts/test.sh and bench/: the build a Linux user downloads, a static musl binary
# (static-pie: no dynamic loader, no shared libraries to map at every start, which is most of a
# cache hit's cost; bench/RESULTS.md). ring's C code is compiled with musl-gcc (Debian's
# musl-tools, installed by scripts/system-deps.sh). Messages go to stderr.

# The musl target for this machine's architecture: x86_64-unknown-linux-musl on x86_64.
static_target() {
    local host
    host=$(rustc -vV | sed -n 's/^host: //p')
    echo "${host%-gnu}-musl"
}

# build_static ROOT: builds the release binary for static_target (adding the target's standard
# library with rustup when it is missing) and prints its path.
build_static() {
    local root="${1:?usage: build_static ROOT}" target
    target=$(static_target)
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        echo "adding the Rust target $target (rustup)..." >&2
        rustup target add "$target" >&2
    fi
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
