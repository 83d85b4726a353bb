# Sourced by the other scripts: installs the test bed's npm packages (oidc-provider,
# playwright-core) from the lock file, again only when the lock file changed.
ensure_node_deps() {
    local support="$1/tests/support"
    local stamp="$support/node_modules/.kubecred-lock-sha256"
    local want
    want=$(sha256sum "$support/package-lock.json" | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "installing the test bed's npm packages (tests/support)..." >&2
        npm ci --prefix "$support" --no-audit --no-fund --loglevel=error >&2
        echo "$want" > "$stamp"
    fi
}
