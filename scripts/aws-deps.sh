# Sourced by scripts/test.sh and by the AWS reference tests on first use (tests/it/aws.rs,
# `Need::AwsReference`): installs the AWS CLI v1 from PyPI (pinned; it pins its botocore) into
# target/aws-venv, for the tests that run `aws eks get-token` and botocore beside kubecred's EKS
# source (tests/support/aws_reference.py, tests/support/aws_sts.py). Reinstalls only when the pinned
# requirement changes. Messages go to stderr; stdout stays empty.
KUBECRED_AWS_REQUIREMENT="awscli==1.46.2"

ensure_aws_deps() {
    local root="${1:?usage: ensure_aws_deps ROOT}"
    local venv="$root/target/aws-venv"
    local stamp="$venv/.kubecred-requirement"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] \
        && [ "$(cat "$stamp")" = "$KUBECRED_AWS_REQUIREMENT" ]; then
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "ensure_aws_deps: python3 is missing; on Debian: apt-get install python3 python3-venv" >&2
        return 1
    fi
    echo "installing the AWS CLI ($KUBECRED_AWS_REQUIREMENT) into target/aws-venv..." >&2
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        echo "ensure_aws_deps: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2
        return 1
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        "$KUBECRED_AWS_REQUIREMENT" >&2 || return 1
    echo "$KUBECRED_AWS_REQUIREMENT" > "$stamp"
}
