# Sourced by scripts/test.sh (and by tests/it/azure.rs on first use): installs Azure's own Python
# credential library (PyPI azure-identity, with the msal it sends its managed identity requests
# through), pinned, into target/azure-venv, so that the tests run it beside kubecred's Azure
# sources against the same stand-ins and compare what each sends. Reinstalls only when the pins
# change. Messages go to stderr; stdout stays empty.
KUBECRED_AZURE_REQUIREMENTS="azure-identity==1.27.0 azure-core==1.41.0 msal==1.39.0 PyJWT==2.15.1 cryptography==50.0.2"

ensure_azure_reference() {
    local root="${1:?usage: ensure_azure_reference ROOT}"
    local venv="$root/target/azure-venv"
    local stamp="$venv/.kubecred-requirements"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] \
        && [ "$(cat "$stamp")" = "$KUBECRED_AZURE_REQUIREMENTS" ]; then
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "ensure_azure_reference: python3 is missing; on Debian: apt-get install python3 python3-venv" >&2
        return 1
    fi
    echo "installing azure-identity ($KUBECRED_AZURE_REQUIREMENTS) into target/azure-venv..." >&2
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        echo "ensure_azure_reference: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2
        return 1
    fi
    # shellcheck disable=SC2086 # the requirements are words
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        $KUBECRED_AZURE_REQUIREMENTS >&2 || return 1
    echo "$KUBECRED_AZURE_REQUIREMENTS" > "$stamp"
}
