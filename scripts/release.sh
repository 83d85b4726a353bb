#!/usr/bin/env bash
# Builds a release from this checkout into dist/:
#   kubecred-<version>-<target>.tar.gz   x86_64 and aarch64 Linux (static musl), and macOS where
#                                        the machine can link it (a macOS runner; see below)
#   kubecred-<version>-<target>.zip      x86_64 Windows (kubecred.exe, mingw)
#   SHA256SUMS                           of every archive
#   kubecred.yaml                        the krew plugin manifest
#   homebrew-tap/Formula/kubecred.rb     the Homebrew formula, as the tap repository holds it
#   kubecred.json, winget/*.yaml         the scoop manifest and winget's manifests (Windows)
# Each archive holds one folder, kubecred-<version>-<target>/, with the binary, LICENSE,
# README.md (its links into the repository made absolute), the shell completions (bash, zsh,
# fish, PowerShell) and the man page. Everything but the binaries is written by
# scripts/release_files.py, which also reads the version: the checksums and manifests are
# generated from the archives, never edited.
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
}

# build TARGET: builds the release binary and prints its path.
build() {
    local target=$1 exe=kubecred
    case "$target" in
    *windows*) exe=kubecred.exe ;;
    esac
    echo "==> building $target" >&2
    case "$target" in
    "$(static_target)") build_static "$root" > /dev/null ;;
    aarch64-unknown-linux-musl) cargo zigbuild --quiet --release --locked --target "$target" >&2 ;;
    *) cargo build --quiet --release --locked --target "$target" >&2 ;;
    esac
    echo "$root/target/$target/release/$exe"
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
    release_files readme README.md "$stage/$folder/README.md" "$tag" "$repository"
    folders+=("$folder")
done
[ -n "$runner" ] || { echo "release: no target built for this machine; cannot write the docs" >&2; exit 1; }
docs "$runner" "$stage/docs"

for folder in "${folders[@]}"; do
    cp -r "$stage/docs/completions" "$stage/docs/man" "$stage/$folder/"
    case "$folder" in
    *windows*) release_files archive "$stage" "$folder" "$dist/$folder.zip" ;;
    *) release_files archive "$stage" "$folder" "$dist/$folder.tar.gz" ;;
    esac
done
release_files dist "$dist" "$tag" "$repository"
echo "==> dist/ ($tag):" >&2
ls -lR "$dist" >&2
