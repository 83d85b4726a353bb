#!/usr/bin/env bash
# Builds a release from this checkout into dist/:
#   kubecred-<version>-<target>.tar.gz   x86_64 and aarch64 Linux (static musl), and macOS where
#                                        the machine can link it (a macOS runner; see below)
#   kubecred-<version>-<target>.zip      x86_64 Windows (kubecred.exe, mingw)
#   kubecred-<version>-<target>.cdx.json the SBOM of each target's binary (CycloneDX 1.5, from
#                                        cargo-cyclonedx): every crate it is built from, with
#                                        its version, licence and Cargo.lock checksum
#   SHA256SUMS                           of every archive and SBOM
#   kubecred.yaml                        the krew plugin manifest
#   homebrew-tap/Formula/kubecred.rb     the Homebrew formula, as the tap repository holds it
#   kubecred.json, winget/*.yaml         the scoop manifest and winget's manifests (Windows)
# Each archive holds one folder, kubecred-<version>-<target>/, with the binary, LICENSE,
# THIRD-PARTY-LICENSES.md (the licences of the crates in the release's binaries, from cargo-about
# and about.toml, which fails on a licence it does not accept), README.md (its links into the
# repository made absolute), the shell completions (bash, zsh, fish, PowerShell) and the man page.
# Everything but the binaries, the SBOMs and the licences is written by scripts/release_files.py,
# which also reads the version: the checksums and manifests are generated from the archives,
# never edited.
#
# Reproducible: the binaries are built by release_build (scripts/static-build.sh: the commit's
# time as SOURCE_DATE_EPOCH, no path of this machine, the dependency list embedded by cargo
# auditable), and the archives have sorted members, the commit's time, root's owner and fixed
# modes (release_files.py): one commit builds to the same dist/ with the same toolchain — the Rust
# of Cargo.toml's package.metadata.release (refused otherwise when RELEASE_TAG is set, as in the
# release workflow; a warning else), pinned zig, and Debian 12's C compilers and linkers, as in
# the release workflow's container. scripts/reproduce.sh rebuilds a tag or commit elsewhere and
# compares.
#
# Cross builds: aarch64 Linux with cargo-zigbuild (zig as the C compiler and linker for ring),
# Windows with Debian's mingw-w64. macOS cannot be linked here without Apple's SDK; on a macOS
# machine (the release workflow's runner) both macOS targets are built natively instead.
#
# Usage: scripts/release.sh [TARGET...]   (default: every target this machine can build)
# Env: GITHUB_REPOSITORY (owner/name, for the download URLs; set by GitHub Actions),
#      RELEASE_TAG (default v<version from Cargo.toml>; anything else is refused).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/static-build.sh

release_files() { python3 "$root/scripts/release_files.py" "$@"; }
version=$(release_files version)
tag=${RELEASE_TAG:-v$version}
if [ "$tag" != "v$version" ]; then
    echo "release: the tag $tag does not name Cargo.toml's version $version; tag v$version, or change the version" >&2
    exit 1
fi
repository=${GITHUB_REPOSITORY:-kubecred/kubecred}
dist="$root/dist"
# The tools that write the SBOMs and the licences, pinned (crates.io).
KUBECRED_CARGO_CYCLONEDX=0.5.9
KUBECRED_CARGO_ABOUT=0.9.3

default_targets() {
    case "$(uname -s)" in
    Darwin) echo aarch64-apple-darwin x86_64-apple-darwin ;;
    *) echo x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-pc-windows-gnu ;;
    esac
}
read -r -a targets <<< "${*:-$(default_targets)}"

ensure_release_tools() {
    if [ "$(uname -s)" = Linux ]; then
        ensure_deps "musl-tools:musl-gcc" "gcc-mingw-w64-x86-64:x86_64-w64-mingw32-gcc"
        ensure_zigbuild
    fi
    ensure_rust_target "${targets[@]}"
    ensure_cargo_tool cargo-cyclonedx "$KUBECRED_CARGO_CYCLONEDX"
    # Its command line is behind the feature `cli`.
    ensure_cargo_tool cargo-about "$KUBECRED_CARGO_ABOUT" --features cli
}

# The toolchain of a release: the pinned one, or a release that cannot be rebuilt.
check_toolchain() {
    local want have
    want=$(release_files toolchain)
    have=$(rustc -V | cut -d' ' -f2)
    [ "$have" = "$want" ] && return 0
    if [ -n "${RELEASE_TAG:-}" ]; then
        echo "release: rustc is $have; a release is built with $want (Cargo.toml's package.metadata.release), or nobody can rebuild it: rustup toolchain install $want, and RUSTUP_TOOLCHAIN=$want" >&2
        exit 1
    fi
    echo "release: warning: rustc is $have, not $want (Cargo.toml's package.metadata.release): these archives will not match a release's" >&2
}

# build TARGET: builds the release binary and prints its path.
build() {
    echo "==> building $1" >&2
    if [ "$1" = "$(static_target)" ]; then
        build_static "$root"
    else
        release_build "$root" "$1"
    fi
}

# sbom TARGET OUT: the SBOM of TARGET's binary (CycloneDX 1.5 JSON): cargo-cyclonedx's, made
# exact by release_files.py, which checks it against `cargo tree`. Both resolve the dependencies
# with the build's --cfg flags (with_release_cfg, scripts/static-build.sh).
sbom() {
    # cargo-cyclonedx writes beside Cargo.toml, under a name without a path (.gitignore has it).
    local raw="kubecred-$1.raw.cdx"
    with_release_cfg "$1" cargo cyclonedx --quiet --manifest-path "$root/Cargo.toml" --target "$1" \
        --format json --spec-version 1.5 --no-build-deps --override-filename "$raw" >&2
    mv "$root/$raw.json" "$stage/$raw.json"
    with_release_cfg "$1" release_files sbom "$stage/$raw.json" "$2" "$1"
}

# about.toml may accept only licences deny.toml allows: deny.toml is the policy (cargo deny in
# .ci/run), about.toml the order in which a crate's choice is taken.
check_licence_lists() {
    python3 - "$root" << 'PY'
import sys, tomllib
root = sys.argv[1]
accepted = tomllib.load(open(f"{root}/about.toml", "rb"))["accepted"]
allowed = tomllib.load(open(f"{root}/deny.toml", "rb"))["licenses"]["allow"]
extra = [name for name in accepted if name not in allowed]
if extra:
    sys.exit(f"release: about.toml accepts {extra}, which deny.toml's [licenses] allow does not")
PY
}

# licences OUT TARGET...: the licences of the crates the TARGETs' binaries are built from
# (cargo-about, about.toml: only the licences it accepts; about.hbs: the page). One page for
# all the targets, in every archive: cargo-about reads every crate's licence files, which takes
# it a minute or two of CPU each run, and the targets share most of their crates (a page names a
# few the binary beside it does not have: the other platforms' system bindings).
licences() {
    local out=$1 target args=()
    shift
    for target in "$@"; do args+=(--target "$target"); done
    (cd "$root" && cargo about -L error generate --locked "${args[@]}" --output-file "$out" about.hbs) >&2
}

# The completions and the man page, from a binary that runs here (they are the same text for
# every target).
docs() {
    local runner=$1 out=$2
    mkdir -p "$out/completions" "$out/man"
    "$runner" completion bash > "$out/completions/kubecred.bash"
    "$runner" completion zsh > "$out/completions/_kubecred"
    "$runner" completion fish > "$out/completions/kubecred.fish"
    "$runner" completion powershell > "$out/completions/_kubecred.ps1"
    "$runner" man > "$out/man/kubecred.1"
}

ensure_release_tools
check_toolchain
check_licence_lists
# The commit's time: build.rs's build date, ld's PE timestamp, the archives' times, the SBOMs'.
SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct) || {
    echo "release: $root is not a git checkout: a release is built from a commit" >&2
    exit 1
}
export SOURCE_DATE_EPOCH
rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# A binary for this machine writes the docs: the first target built that runs here.
runner=""
folders=()
for target in "${targets[@]}"; do
    binary=$(build "$target")
    if [ -z "$runner" ] && "$binary" --version > /dev/null 2>&1; then
        runner=$binary
    fi
    folder="kubecred-$version-$target"
    mkdir -p "$stage/$folder"
    cp "$binary" LICENSE "$stage/$folder/"
    sbom "$target" "$dist/$folder.cdx.json"
    release_files readme README.md "$stage/$folder/README.md" "$tag" "$repository"
    folders+=("$folder")
done
[ -n "$runner" ] || { echo "release: no target built for this machine; cannot write the docs" >&2; exit 1; }
docs "$runner" "$stage/docs"
licences "$stage/docs/THIRD-PARTY-LICENSES.md" "${targets[@]}"

for folder in "${folders[@]}"; do
    cp -r "$stage/docs/completions" "$stage/docs/man" "$stage/docs/THIRD-PARTY-LICENSES.md" "$stage/$folder/"
    case "$folder" in
    *windows*) release_files archive "$stage" "$folder" "$dist/$folder.zip" ;;
    *) release_files archive "$stage" "$folder" "$dist/$folder.tar.gz" ;;
    esac
done
release_files dist "$dist" "$tag" "$repository"
echo "==> dist/ ($tag):" >&2
ls -lR "$dist" >&2
