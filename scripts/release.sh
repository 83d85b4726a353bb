#!/usr/bin/env bash
# Builds a release from this checkout into dist/:
#   kubecred-<version>-<target>.tar.gz   x86_64 and aarch64 Linux (static musl), and macOS where
#                                        the machine can link it (a macOS runner; see below)
#   kubecred-<version>-<target>.zip      x86_64 Windows (kubecred.exe, mingw)
#   SHA256SUMS                           of every archive
#   kubecred.yaml                        the krew plugin manifest, with those checksums
#   kubecred.rb                          the Homebrew formula, with those checksums
# Each archive holds the binary, LICENSE, README.md, the shell completions (bash, zsh, fish,
# PowerShell) and the man page. The manifest and the formula are generated here, never edited.
#
# Cross builds: aarch64 Linux with cargo-zigbuild (zig as the C compiler and linker for ring),
# Windows with Debian's mingw-w64. macOS cannot be linked here without Apple's SDK; on a macOS
# machine (the release workflow's runner) both macOS targets are built natively instead.
#
# Usage: scripts/release.sh [TARGET...]   (default: every target this machine can build)
# Env: GITHUB_REPOSITORY (owner/name, for the download URLs; set by GitHub Actions),
#      RELEASE_TAG (default v<version from Cargo.toml>).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
. scripts/static-build.sh

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
tag=${RELEASE_TAG:-v$version}
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
archives=()
for target in "${targets[@]}"; do
    binary=$(build "$target")
    if [ -z "$runner" ] && "$binary" --version > /dev/null 2>&1; then
        runner=$binary
    fi
    name="kubecred-$version-$target"
    mkdir -p "$stage/$name"
    cp "$binary" LICENSE README.md "$stage/$name/"
    archives+=("$name")
done
[ -n "$runner" ] || { echo "release: no target built for this machine; cannot write the docs" >&2; exit 1; }
docs "$runner" "$stage/docs"

cd "$stage"
for name in "${archives[@]}"; do
    cp -r docs/completions docs/man "$name/"
    case "$name" in
    *windows*) python3 - "$name" "$dist/$name.zip" <<'PY' ;;
import os, sys, zipfile
folder, out = sys.argv[1:]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for directory, _, files in sorted(os.walk(folder)):
        for file in sorted(files):
            path = os.path.join(directory, file)
            archive.write(path, os.path.relpath(path, folder))
PY
    *) tar -C "$name" -czf "$dist/$name.tar.gz" . ;;
    esac
done
cd "$dist"
# sha256sum's format, written portably (macOS has no sha256sum).
python3 - > SHA256SUMS <<'PY'
import glob, hashlib
for name in sorted(glob.glob("*.tar.gz") + glob.glob("*.zip")):
    print(f"{hashlib.sha256(open(name, 'rb').read()).hexdigest()}  {name}")
PY
python3 "$root/scripts/release_manifests.py" "$version" "$tag" "$repository" SHA256SUMS
echo "==> dist/ ($tag):" >&2
ls -l "$dist" >&2
