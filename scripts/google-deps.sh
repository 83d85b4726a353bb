# Sourced by the other scripts: installs Google's own Python auth library (PyPI `google-auth`,
# pinned, with `requests`, its HTTP transport) into target/google-venv, the reference client
# tests/it/google.rs runs beside kubecred's Google module (tests/support/google/reference.py).
# Reinstalls only when the pinned requirement changes. Messages go to stderr; stdout stays empty.
KUBECRED_GOOGLE_REQUIREMENT="google-auth[requests]==2.63.0"

ensure_google_deps() {
    local root="${1:?usage: ensure_google_deps ROOT}"
    local venv="$root/target/google-venv"
    local stamp="$venv/.kubecred-requirement"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] \
        && [ "$(cat "$stamp")" = "$KUBECRED_GOOGLE_REQUIREMENT" ]; then
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "ensure_google_deps: python3 is missing; on Debian: apt-get install python3 python3-venv" >&2
        return 1
    fi
    echo "installing Google's auth library ($KUBECRED_GOOGLE_REQUIREMENT) into target/google-venv..." >&2
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        echo "ensure_google_deps: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2
        return 1
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        "$KUBECRED_GOOGLE_REQUIREMENT" >&2 || return 1
    echo "$KUBECRED_GOOGLE_REQUIREMENT" > "$stamp"
}
