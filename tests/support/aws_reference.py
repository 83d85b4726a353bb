"""The AWS CLI and botocore as the reference for kubecred's EKS source (tests/it/aws.rs).

Run with target/aws-venv/bin/python (scripts/aws-deps.sh installs awscli, pinned, with its botocore):

  aws_reference.py get-token AT ARGS...
      runs `aws eks get-token ARGS...` in this process, its clock pinned to AT (an RFC 3339 time),
      in the environment it was given, and prints what the AWS CLI prints (the ExecCredential).
  aws_reference.py assume-role-with-web-identity ROLE_ARN SESSION_NAME TOKEN_FILE
      calls botocore's sts.assume_role_with_web_identity (region and endpoint from the environment)
      and prints the answer's Credentials as JSON.
"""

# awscli 1.46 vendors its botocore as awscli.botocore, importable as `botocore` once awscli is.
import awscli  # noqa: F401
import datetime
import json
import sys


def pin_clock(at):
    """botocore signs, and awscli's get-token sets the expiry, at `at` (naive UTC, as they use it)."""
    pinned = datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)

    def now(remove_tzinfo=True):
        return pinned.replace(tzinfo=None) if remove_tzinfo else pinned

    import botocore.auth
    import awscli.customizations.eks.get_token as get_token

    botocore.auth.get_current_datetime = now
    get_token.get_current_datetime = now


def get_token(at, args):
    pin_clock(at)
    from awscli.clidriver import create_clidriver

    return create_clidriver().main(["eks", "get-token", *args])


def assume_role_with_web_identity(role_arn, session_name, token_file):
    import botocore.session

    sts = botocore.session.get_session().create_client("sts")
    with open(token_file) as f:
        token = f.read().strip()
    answer = sts.assume_role_with_web_identity(
        RoleArn=role_arn, RoleSessionName=session_name, WebIdentityToken=token
    )
    credentials = answer["Credentials"]
    credentials["Expiration"] = credentials["Expiration"].isoformat()
    print(json.dumps(credentials))
    return 0


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "get-token":
        sys.exit(get_token(rest[0], rest[1:]))
    if command == "assume-role-with-web-identity":
        sys.exit(assume_role_with_web_identity(*rest))
    sys.exit(f"aws_reference.py: unknown command {command}")
