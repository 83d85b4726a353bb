#!/usr/bin/env bash
# The release archives and manifests in dist/ as their users meet them (scripts/archive_test.py
# says what is checked): README's install and completions lines run as written on a fresh HOME,
# archives that leave the directory they are extracted into alone, and the krew, Homebrew,
# scoop and winget manifests against the archives. Builds dist/ first when it has no
# SHA256SUMS. Usage: scripts/archive-test.sh   (run by scripts/test.sh and the release workflow)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/system-deps.sh

ensure_deps "${KUBECRED_ARCHIVE_TEST_DEPS[@]}"
[ -f dist/SHA256SUMS ] || bash scripts/release.sh
python3 scripts/archive_test.py dist
