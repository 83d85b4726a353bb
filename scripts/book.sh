#!/usr/bin/env bash
# Builds the manual's site: docs/ with mdBook (book.toml) into target/book/. Installs mdBook at
# the pinned version with cargo when it is missing (a fresh machine, CI): about 3 minutes on 2
# cores, only the HTML renderer and its search (no `mdbook serve` or `watch`).
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
mdbook="${CARGO_HOME:-$HOME/.cargo}/bin/mdbook"
command -v mdbook >/dev/null && mdbook=$(command -v mdbook)
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
    cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search
    mdbook="${CARGO_HOME:-$HOME/.cargo}/bin/mdbook"
fi
"$mdbook" build
# Every link within the site and its anchor, as mdBook rendered them (absolute ones, the 404
# page's, are left to the site's address).
python3 scripts/book_links.py check target/book
echo "scripts/book.sh: the manual is in target/book/ (open target/book/index.html)"
