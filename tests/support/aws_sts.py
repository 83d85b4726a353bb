"""An STS stand-in on 127.0.0.1 for tests/it/aws.rs, which checks every signature with botocore.

Run with target/aws-venv/bin/python: aws_sts.py CONFIG_JSON, where CONFIG_JSON is
  {"keys": {"AKID": {"secret": "...", "arn": "arn:aws:iam::123456789012:user/dev"}},
   "refuse": ["arn:aws:iam::123456789012:role/forbidden"]}
Prints {"url": "http://127.0.0.1:PORT"} on one line, then serves until its stdin closes.

- GetCallerIdentity, presigned (a GET with the auth in the query and x-k8s-aws-id signed, as EKS
  forwards a token): the signature is recomputed with botocore's SigV4QueryAuth at the request's
  X-Amz-Date; a match answers the caller's ARN, as STS does.
- AssumeRole (a signed POST): the Authorization header is recomputed with botocore's SigV4Auth;
  AssumeRoleWithWebIdentity (unsigned). Both answer credentials derived from the role and session
  (so two clients asking alike get the same), valid until 2099, which this stand-in then accepts.
- GET /requests: every request so far (method, path, headers, body, and whether its signature
  was botocore's), as JSON.
"""

# awscli 1.46 vendors its botocore as awscli.botocore, importable as `botocore` once awscli is.
import awscli  # noqa: F401
import datetime
import hashlib
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import botocore.auth
import botocore.credentials
from botocore.awsrequest import AWSRequest

CONFIG = json.loads(sys.argv[1])
KEYS = dict(CONFIG.get("keys", {}))
REFUSE = set(CONFIG.get("refuse", []))
REQUESTS = []
LOCK = threading.Lock()


def pinned(amz_date):
    at = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")

    def now(remove_tzinfo=True):
        return at if remove_tzinfo else at.replace(tzinfo=datetime.timezone.utc)

    return now


def with_clock(amz_date, sign):
    saved = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = pinned(amz_date)
    try:
        return sign()
    finally:
        botocore.auth.get_current_datetime = saved


def credentials_of(key_id, token):
    key = KEYS.get(key_id)
    if key is None:
        return None
    return botocore.credentials.Credentials(key_id, key["secret"], token)


def verify_presigned(host, path, query, headers):
    """botocore's signature of this presigned GET, and whether it is the one sent."""
    params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    key_id, day, region, service, _ = params["X-Amz-Credential"].split("/")
    credentials = credentials_of(key_id, params.get("X-Amz-Security-Token"))
    if credentials is None:
        return False, key_id
    request = AWSRequest(
        method="GET",
        url=f"http://{host}{path}?Action={params['Action']}&Version={params['Version']}",
        headers={"x-k8s-aws-id": headers.get("x-k8s-aws-id", "")},
    )
    signer = botocore.auth.SigV4QueryAuth(credentials, service, region, expires=int(params["X-Amz-Expires"]))
    with_clock(params["X-Amz-Date"], lambda: signer.add_auth(request))
    signed = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(request.url).query))
    return signed["X-Amz-Signature"] == params["X-Amz-Signature"], key_id


def verify_signed_post(host, path, headers, body):
    """botocore's Authorization for this POST, and whether it is the one sent."""
    authorization = headers.get("authorization", "")
    fields = dict(part.strip().split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
    key_id, day, region, service, _ = fields["Credential"].split("/")
    credentials = credentials_of(key_id, headers.get("x-amz-security-token"))
    if credentials is None:
        return False, key_id
    signed = [name for name in fields["SignedHeaders"].split(";") if name not in ("host", "x-amz-date", "x-amz-security-token")]
    request = AWSRequest(method="POST", url=f"http://{host}{path}", headers={name: headers[name] for name in signed}, data=body)
    signer = botocore.auth.SigV4Auth(credentials, service, region)
    with_clock(headers["x-amz-date"], lambda: signer.add_auth(request))
    return request.headers["Authorization"] == authorization, key_id


def role_credentials(role_arn, session):
    seed = hashlib.sha256(f"{role_arn}|{session}".encode()).hexdigest()
    key_id = "ASIA" + seed[:16].upper()
    KEYS[key_id] = {
        "secret": "secret-" + seed[16:40],
        "arn": f"arn:aws:sts::123456789012:assumed-role/{role_arn.rsplit('/', 1)[-1]}/{session}",
    }
    return key_id, KEYS[key_id]["secret"], "session-" + seed[40:], KEYS[key_id]["arn"]


def error(code, message, status=403):
    return status, f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>r</RequestId></ErrorResponse>"


def assumed(action, role_arn, session):
    if role_arn in REFUSE:
        return error("AccessDenied", f"Not authorized to perform sts:{action} on {role_arn}")
    key_id, secret, token, arn = role_credentials(role_arn, session)
    return 200, (
        f"<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result>"
        f"<AssumedRoleUser><AssumedRoleId>AROA:{session}</AssumedRoleId><Arn>{arn}</Arn></AssumedRoleUser>"
        f"<Credentials><AccessKeyId>{key_id}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>"
        f"<SessionToken>{token}</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
        f"</{action}Result><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></{action}Response>"
    )


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="text/xml"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/requests":
            with LOCK:
                return self.answer(200, json.dumps(REQUESTS), "application/json")
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = {"method": "GET", "path": url.path, "query": url.query, "headers": headers, "body": ""}
        try:
            verified, key_id = verify_presigned(headers["host"], url.path, url.query, headers)
        except (KeyError, ValueError) as e:
            verified, key_id = False, None
            record["problem"] = repr(e)
        record["verified"] = verified
        with LOCK:
            REQUESTS.append(record)
        if not verified:
            return self.answer(*error("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."))
        arn = KEYS[key_id]["arn"]
        self.answer(200, f"<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>{arn}</Arn><UserId>U</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>")

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        headers = {name.lower(): value for name, value in self.headers.items()}
        params = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
        record = {"method": "POST", "path": url.path, "query": url.query, "headers": headers, "body": body}
        action = params.get("Action")
        if action == "AssumeRole":
            try:
                verified, _ = verify_signed_post(headers["host"], url.path, headers, body)
            except (KeyError, ValueError, IndexError) as e:
                verified = False
                record["problem"] = repr(e)
            record["verified"] = verified
            with LOCK:
                REQUESTS.append(record)
            if not verified:
                return self.answer(*error("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."))
            return self.answer(*assumed(action, params["RoleArn"], params["RoleSessionName"]))
        if action == "AssumeRoleWithWebIdentity":
            record["verified"] = None
            with LOCK:
                REQUESTS.append(record)
            return self.answer(*assumed(action, params["RoleArn"], params["RoleSessionName"]))
        with LOCK:
            REQUESTS.append(record)
        self.answer(*error("InvalidAction", f"Could not find operation {action}", 400))


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}"}), flush=True)
sys.stdin.read()
server.shutdown()
