"""The official Python Kubernetes client (PyPI `kubernetes`) as a second real exec-plugin caller.

    target/python-venv/bin/python tests/support/python_client.py KUBECONFIG

Loads KUBECONFIG with kubernetes.config.load_kube_config, which runs the kubeconfig's exec plugin
itself (its own KUBERNETES_EXEC_INFO, its strict check of the ExecCredential), then calls the API
server: GET /version and POST /apis/authentication.k8s.io/v1/selfsubjectreviews. Prints one JSON
line {"gitVersion": ..., "username": ...} on stdout and exits 0; otherwise exits 1 with the error on
stderr. The client only *logs* a failing plugin (exec: ...) and goes on without a token, so every
log record the client emits is kept and repeated on stderr when the calls fail.
"""

import json
import logging
import sys


class _Recorder(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append("%s: %s" % (record.levelname, record.getMessage()))


def main(argv):
    if len(argv) != 2:
        print("usage: python_client.py KUBECONFIG", file=sys.stderr)
        return 2
    recorder = _Recorder()
    logging.getLogger().addHandler(recorder)

    try:
        import kubernetes
        from kubernetes import client, config
    except ImportError as err:
        print("python_client.py: the kubernetes package is missing (%s): run scripts/test.sh" % err,
              file=sys.stderr)
        return 1

    try:
        config.load_kube_config(config_file=argv[1])
        version = client.VersionApi().get_code(_request_timeout=60)
        review = client.AuthenticationV1Api().create_self_subject_review(
            body=client.V1SelfSubjectReview(
                api_version="authentication.k8s.io/v1", kind="SelfSubjectReview"),
            _request_timeout=60)
        username = review.status.user_info.username
    except Exception as err:  # noqa: BLE001 - everything the client raises is a test failure
        print("python_client.py (kubernetes %s): %s: %s"
              % (kubernetes.__version__, type(err).__name__, err), file=sys.stderr)
        for message in recorder.messages:
            print("python_client.py: client log: %s" % message, file=sys.stderr)
        return 1

    if recorder.messages:
        # Anything the client logged as a warning or error (e.g. "exec: ...") is a failure too,
        # even when the calls went through.
        for message in recorder.messages:
            print("python_client.py: client log: %s" % message, file=sys.stderr)
        return 1

    sys.stdout.write(json.dumps({"gitVersion": version.git_version, "username": username}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
