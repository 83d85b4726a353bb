# Sourced by scripts/test.sh, scripts/release.sh, bench/ and .ci/run: the release build, as
# scripts/release.sh ships it and the benchmarks and tests measure it (release_build, and
# build_static for this machine's musl target), and the Rust targets and cross tools the other
# builds and lints need. Messages go to stderr.
#
# The Linux downloads are static musl binaries linked at a fixed address (no dynamic loader, no
# shared libraries to map and no relocations to apply at every start, which is most of a cache
# hit's cost; .cargo/config.toml sets it, bench/RESULTS.md measures it). ring's C code is compiled
# with musl-gcc (Debian's musl-tools, installed by scripts/system-deps.sh); on aarch64 by zig.
#
# Every release build is reproducible (scripts/reproduce.sh): the same commit builds to the same
# bytes whatever the checkout's path, the user or the day, with the same toolchain —
#   - SOURCE_DATE_EPOCH is the commit's time (build.rs's build date; ld's PE timestamp);
#   - no path of this machine in the binary: --remap-path-prefix for the checkout, cargo's home
#     (the crates' sources: panic locations) and the toolchain's sysroot, -ffile-prefix-map for
#     the C compiler (cargo does not hash these flags into symbol names, since cargo 1.39);
#   - the dependency list is embedded (cargo auditable: a `.dep-v0` section, which `cargo audit
#     bin`, trivy, syft and rust-audit-info read from an installed kubecred).

# The tools of the release build from crates.io, pinned: cargo install --locked NAME@VERSION
# when missing.
KUBECRED_CARGO_AUDITABLE=0.7.7

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

# ensure_cargo_tool CRATE VERSION [ARG...]: installs CRATE's binaries at VERSION (cargo install
# --locked, with ARGs) unless that version is installed.
ensure_cargo_tool() {
    local crate=$1 version=$2
    shift 2
    cargo install --list | grep -qx "$crate v$version:" && return 0
    echo "installing $crate $version (cargo install --locked)..." >&2
    cargo install --quiet --locked "$crate@$version" "$@" >&2
}

# release_cfg TARGET: the --cfg flags of TARGET's release build, as words. They decide which
# crates the binary is built from, so whatever resolves its dependencies (the SBOM's `cargo
# tree`, scripts/release.sh) sets them too: with_release_cfg.
#   windows-gnu: windows-targets imports with raw-dylib (its switch; see release_build), and
#   then depends on no windows_x86_64_gnu (the import library crate).
release_cfg() {
    case "$1" in
    *-windows-gnu) echo --cfg windows_raw_dylib ;;
    esac
}

# with_release_cfg TARGET COMMAND...: runs COMMAND (a cargo command for TARGET that resolves
# dependencies; a shell function too) with TARGET's release_cfg flags as cargo's rustflags for
# that target.
with_release_cfg() {
    local target=$1 flags
    shift
    flags=$(release_cfg "$target")
    [ -n "$flags" ] || { "$@"; return; }
    (
        export "CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_RUSTFLAGS=$flags"
        "$@"
    )
}

# release_build ROOT TARGET: builds ROOT's release binary for TARGET (adding the target's
# standard library with rustup when it is missing), reproducibly and with its dependency list
# embedded (see the top of this file), and prints its path. aarch64 musl off an aarch64 machine
# with cargo-zigbuild (ensure_zigbuild), Windows with mingw-w64's gcc.
release_build() {
    local root="${1:?usage: release_build ROOT TARGET}" target="${2:?usage: release_build ROOT TARGET}"
    local exe=kubecred build=build cargo_home=${CARGO_HOME:-$HOME/.cargo} sysroot epoch rustflags flag
    # The paths rustc and cc see: cargo works in the physical directory (symlinks resolved).
    root=$(cd "$root" && pwd -P)
    [ -d "$cargo_home" ] && cargo_home=$(cd "$cargo_home" && pwd -P)
    case "$target" in
    *windows*) exe=kubecred.exe ;;
    esac
    [ "$target" = aarch64-unknown-linux-musl ] && [ "$target" != "$(static_target)" ] && build=zigbuild
    ensure_rust_target "$target"
    ensure_cargo_tool cargo-auditable "$KUBECRED_CARGO_AUDITABLE"
    sysroot=$(rustc --print sysroot)
    epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2> /dev/null || true)}
    # The later prefix wins where two match (cargo's home inside the checkout).
    rustflags="\"--remap-path-prefix=$root/=\", \"--remap-path-prefix=$sysroot=/rust\", \"--remap-path-prefix=$cargo_home=/cargo\""
    if [[ $target == *-windows-gnu ]]; then
        # GNU ld orders the import table's pieces (.idata$N sections; SORT(*) in its PE script)
        # by the paths of the archives they come from, and several archives import from one DLL
        # (kernel32, ntdll...): crates' rlibs, with their raw-dylib import libraries bundled
        # (the LTO link reads them from a directory under the target directory); mingw-w64's
        # import libraries (/usr/...); and windows-targets' (an import library shipped in a
        # crate, in cargo's home). Whether the checkout's path sorts before or after /usr or
        # ~/.cargo would decide the order, and the bytes (a checkout in /check against one in
        # /tmp did). So the link reads them all under the target directory: mingw-w64's import
        # libraries through links in it (ld keeps the path it found them by), and windows-targets
        # imports with raw-dylib, as windows-link does (release_cfg).
        local libs="$root/target/$target/mingw-w64-lib" mingw
        mingw=$(dirname "$(x86_64-w64-mingw32-gcc -print-file-name=libkernel32.a)")
        mkdir -p "$libs"
        ln -sf "$mingw"/lib*.a "$libs/"
        rustflags="$rustflags, \"-C\", \"link-arg=-L$libs\""
    fi
    for flag in $(release_cfg "$target"); do
        rustflags="$rustflags, \"$flag\""
    done
    echo "building the release binary for $target..." >&2
    # From ROOT, so that its .cargo/config.toml applies whatever the caller's directory; its
    # rustflags for the target are joined with these.
    (
        cd "$root" || exit
        [ -n "$epoch" ] && export SOURCE_DATE_EPOCH=$epoch
        export CFLAGS="${CFLAGS:+$CFLAGS }-ffile-prefix-map=$root/= -ffile-prefix-map=$cargo_home=/cargo"
        cargo auditable "$build" --quiet --release --locked --target "$target" \
            --config "target.$target.rustflags=[$rustflags]"
    ) >&2
    echo "$root/target/$target/release/$exe"
}

# build_static ROOT: the release binary for static_target (release_build), checked to be linked
# at a fixed address; prints its path.
build_static() {
    local root="${1:?usage: build_static ROOT}" binary
    binary=$(release_build "$root" "$(static_target)") || return 1
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
