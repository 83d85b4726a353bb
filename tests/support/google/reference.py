"""Google's endpoints on loopback, and google-auth (PyPI) as the reference client.

    reference.py serve LOG PORTFILE   a stand-in for Google's OAuth token endpoint, STS, the IAM
                                      Credentials API, a subject-token URL and the metadata
                                      server, on 127.0.0.1; every request it receives is appended
                                      to LOG as one JSON line (method, path, headers, body)
    reference.py adc SCOPE...         google.auth.default(scopes) and one refresh, as a Google
                                      client does, with this process's environment (the
                                      variables and files the test set); prints the token

tests/it/google.rs runs both, and kubecred's module beside google-auth, against the same server.
"""

import datetime
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(log_path, port_file):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def handle_one(self, method):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8") if length else ""
            record = {
                "method": method,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
            with lock, open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            status, headers, answer = route(method, self.path, body)
            data = answer.encode("utf-8")
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.handle_one("GET")

        def do_POST(self):
            self.handle_one("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    import os

    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


JSON = [("Content-Type", "application/json")]
FLAVOR = [("Metadata-Flavor", "Google")]

# The end-to-end mode (tests/it/google.rs's kubectl tests): /e2e/token issues a new token per
# request, remembered with whose it is (a service account's JWT bearer assertion names it in
# `iss`; a refresh token's user is ADC_USER), and /review says whose a token is, as GKE's webhook
# token authentication asks Google (the test bed's API stand-in calls it: apiWebhook).
ADC_USER = "ada@example.com"
ISSUED = {}
ISSUED_LOCK = threading.Lock()


def issue(body):
    import base64
    import urllib.parse

    form = dict(urllib.parse.parse_qsl(body))
    who = ADC_USER
    assertion = form.get("assertion")
    if assertion:
        payload = assertion.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        who = claims["iss"]
    with ISSUED_LOCK:
        token = "ya29.e2e-%d" % (len(ISSUED) + 1)
        ISSUED[token] = who
    return 200, JSON, json.dumps({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})


def exchange(body):
    """Google's STS for a workforce pool: the subject token (a kubecred login's ID token) is the
    pool's principal, by its `sub` (unverified: the test bed's provider signed it)."""
    import base64
    import urllib.parse

    form = dict(urllib.parse.parse_qsl(body))
    payload = form["subject_token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    pool = form["audience"].split("/providers/")[0].replace("//iam.googleapis.com/", "")
    who = "principal://iam.googleapis.com/%s/subject/%s" % (pool, claims["sub"])
    with ISSUED_LOCK:
        token = "ya29.sts-e2e-%d" % (len(ISSUED) + 1)
        ISSUED[token] = who
    return 200, JSON, json.dumps(
        {
            "access_token": token,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer",
            "expires_in": 3600,
        }
    )


def review(body):
    token = json.loads(body or "{}").get("token")
    with ISSUED_LOCK:
        who = ISSUED.get(token)
    if who is None:
        return 401, JSON, json.dumps({"error": "unknown token"})
    return 200, JSON, json.dumps({"username": who, "groups": ["google-users"]})


def route(method, path, body=""):
    bare = path.split("?", 1)[0]
    if method == "POST" and bare == "/e2e/token":
        return issue(body)
    if method == "POST" and bare == "/review":
        return review(body)
    if method == "POST" and bare == "/e2e/sts":
        return exchange(body)
    if method == "POST" and bare == "/token":
        return 200, JSON, json.dumps(
            {"access_token": "ya29.user", "expires_in": 3599, "token_type": "Bearer"}
        )
    if method == "POST" and bare == "/v1/token":
        return 200, JSON, json.dumps(
            {
                "access_token": "ya29.sts",
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        )
    if method == "POST" and bare.endswith(":generateAccessToken"):
        expire = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        return 200, JSON, json.dumps(
            {"accessToken": "ya29.impersonated", "expireTime": expire.strftime("%Y-%m-%dT%H:%M:%SZ")}
        )
    if method == "GET" and bare == "/subject":
        return 200, JSON, json.dumps({"id_token": "eyJ.from.url"})
    if method == "GET" and bare == "/":
        return 200, FLAVOR, ""
    if method == "GET" and bare == "/computeMetadata/v1/instance/service-accounts/default/":
        return 200, FLAVOR + JSON, json.dumps(
            {
                "aliases": ["default"],
                "email": "node@p.iam.gserviceaccount.com",
                "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
            }
        )
    if method == "GET" and bare == "/computeMetadata/v1/instance/service-accounts/default/token":
        return 200, FLAVOR + JSON, json.dumps(
            {"access_token": "ya29.gce", "expires_in": 3000, "token_type": "Bearer"}
        )
    if method == "GET" and bare == "/computeMetadata/v1/instance/service-accounts/default/email":
        return 200, FLAVOR, "node@p.iam.gserviceaccount.com"
    return 404, JSON, json.dumps({"error": "not_found", "error_description": path})


def adc(scopes):
    import os

    import google.auth
    import google.auth.impersonated_credentials
    import google.auth.transport.requests
    import google.oauth2.credentials
    import google.oauth2.service_account

    # google-auth sends an authorized_user's refresh to Google's fixed token endpoint whatever the
    # file's token_uri says, and signs a service account's assertion for that endpoint; Google's
    # Go library (and kubecred) use the file's token_uri for both. The stand-in takes the
    # endpoint's place here, so that both clients' requests reach it (for a real file the two
    # are the same URL).
    endpoint = os.environ.get("REFERENCE_GOOGLE_OAUTH2_TOKEN_ENDPOINT")
    if endpoint:
        for module in (
            google.oauth2.credentials,
            google.oauth2.service_account,
            google.auth.impersonated_credentials,
        ):
            if hasattr(module, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT"):
                module._GOOGLE_OAUTH2_TOKEN_ENDPOINT = endpoint
    # Likewise an impersonated_service_account file's service_account_impersonation_url, which
    # google-auth replaces with the IAM Credentials API's global URL (an external_account's it
    # honours).
    iam_endpoint = os.environ.get("REFERENCE_GOOGLE_IAM_ENDPOINT")
    if iam_endpoint:
        import google.auth.iam

        google.auth.iam._IAM_ENDPOINT = iam_endpoint

    credentials, _ = google.auth.default(scopes=scopes)
    credentials.refresh(google.auth.transport.requests.Request())
    print(credentials.token)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "adc":
        adc(sys.argv[2:])
    else:
        sys.exit("usage: reference.py serve LOG PORTFILE | adc SCOPE...")
