#!/usr/bin/env bash
# The release archives and manifests in dist/ as their users meet them (scripts/archive_test.py
# says what is checked): README's install and completions lines run as written on a fresh HOME,
# archives that leave the directory they are extracted into alone, the SBOM, the dependency list
# embedded in each binary and its licences against each other, and the krew, Homebrew,
# scoop and winget manifests against the archives. Builds dist/ first when it has no
# SHA256SUMS. Usage: scripts/archive-test.sh   (run by scripts/test.sh and the release workflow)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh
# ensure_cargo_tool.
. scripts/static-build.sh

ensure_deps "${KUBECRED_ARCHIVE_TEST_DEPS[@]}"
# Reads the dependency list cargo auditable embeds in a binary, offline (cargo audit bin needs the
# advisory database from the network), from crates.io; pinned.
ensure_cargo_tool rust-audit-info 0.5.4
[ -f dist/SHA256SUMS ] || bash scripts/release.sh
python3 scripts/archive_test.py dist
