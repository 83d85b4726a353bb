# Sourced by the other scripts: installs the official Python Kubernetes client (PyPI `kubernetes`,
# pinned) into target/python-venv for the Python-client end-to-end test
# (tests/it/python_client.rs runs target/python-venv/bin/python tests/support/python_client.py).
# Reinstalls only when the pinned requirement changes. Messages go to stderr; stdout stays empty.
KUBECRED_PYTHON_REQUIREMENT="kubernetes==37.0.2"

ensure_python_deps() {
    local root="${1:?usage: ensure_python_deps ROOT}"
    local venv="$root/target/python-venv"
    local stamp="$venv/.kubecred-requirement"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] \
        && [ "$(cat "$stamp")" = "$KUBECRED_PYTHON_REQUIREMENT" ]; then
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "ensure_python_deps: python3 is missing; on Debian: apt-get install python3 python3-venv" >&2
        return 1
    fi
    echo "installing the Python Kubernetes client ($KUBECRED_PYTHON_REQUIREMENT) into target/python-venv..." >&2
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        echo "ensure_python_deps: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2
        return 1
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        "$KUBECRED_PYTHON_REQUIREMENT" >&2 || return 1
    echo "$KUBECRED_PYTHON_REQUIREMENT" > "$stamp"
}
