"""Azure's own credential library beside kubecred, for tests/it/azure.rs.

Two roles, by the first argument:

  serve DIR       a stand-in for every Azure endpoint the sources talk to, on 127.0.0.1 (the port
                  is written to DIR/port): the instance metadata service, App Service's and Azure
                  Arc's IDENTITY_ENDPOINT (Arc answers 401 with a challenge naming DIR/arc.key
                  first), Cloud Shell's MSI_ENDPOINT and the Azure Pipelines OIDC endpoint. Each
                  request is appended to DIR/requests.jsonl as it arrived (method, path, query,
                  headers, body).
  <credential>    runs azure-identity's credential with the environment this process was given
                  and prints {"token": ..., "expires_on": ...} (or {"error": ...}) as one line:
                  managed-identity [client_id=ID | resource_id=ID] SCOPE, azure-cli SCOPE
                  [TENANT], azure-developer-cli SCOPE [TENANT], pipelines-oidc CONNECTION,
                  assertion FILE PASSWORD CLIENT AUDIENCE (MSAL's assertion for a PKCS#12 file),
                  verify FILE PASSWORD AUDIENCE (reads an assertion on stdin, checks it with the
                  certificate's public key, prints its header and claims).

Azure Arc's key directory is MSAL's constant (/var/opt/azcmagent/tokens on Linux); the runner
points it at AZURE_ARC_KEY_DIR for the test, the one thing changed in the library.
"""

import base64
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def fake_jwt(claims):
    def encode(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{encode({'alg': 'RS256', 'typ': 'JWT'})}.{encode(claims)}.c2ln"


def serve(directory):
    record = os.path.join(directory, "requests.jsonl")
    token = fake_jwt({"oid": "mi-object", "appid": "mi-app"})

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            path, _, query = self.path.partition("?")
            entry = {
                "method": self.command,
                "path": path,
                "query": urllib.parse.parse_qsl(query, keep_blank_values=True),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
            with open(record, "a") as out:
                out.write(json.dumps(entry) + "\n")
            params = dict(entry["query"])
            # Valid an hour from this answer: expires_on and expires_in agree, as Azure's do.
            expires = int(time.time()) + 3600
            if path == "/metadata/identity/oauth2/token":
                self.answer(200, {"access_token": token, "expires_in": "3600",
                                  "expires_on": str(expires), "resource": params.get("resource"),
                                  "token_type": "Bearer"})
            elif path == "/appservice/token":
                self.answer(200, {"access_token": token, "expires_on": str(expires),
                                  "resource": params.get("resource"), "token_type": "Bearer"})
            elif path == "/arc/token":
                if "authorization" not in entry["headers"]:
                    self.answer(401, {"error": "unauthorized"}, [
                        ("WWW-Authenticate", "Basic realm=" + os.path.join(directory, "arc.key"))])
                else:
                    answer = {"access_token": token, "expires_in": "3600",
                              "expires_on": str(expires), "token_type": "Bearer"}
                    for name in ("client_id", "msi_res_id"):
                        if name in params:
                            answer[name] = params[name]
                    self.answer(200, answer)
            elif path == "/cloudshell/token":
                form = dict(urllib.parse.parse_qsl(body))
                self.answer(200, {"access_token": token, "expires_on": str(expires),
                                  "expires_in": "3600", "resource": form.get("resource"),
                                  "token_type": "Bearer"})
            elif path == "/pipelines/oidc":
                self.answer(200, {"oidcToken": fake_jwt({"sub": "sc://org/project/connection"})})
            else:
                self.answer(404, {"error": "not_found"})

        do_GET = handle_any
        do_POST = handle_any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(os.path.join(directory, "port.tmp"), "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    server.serve_forever()


def result(get):
    try:
        token = get()
        print(json.dumps({"token": token.token, "expires_on": token.expires_on}))
    except Exception as error:  # the test compares what failed, not a traceback
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "serve":
        serve(args[0])
        return
    from azure import identity

    if mode == "managed-identity":
        if "AZURE_ARC_KEY_DIR" in os.environ:
            import msal.managed_identity
            msal.managed_identity._supported_arc_platforms_and_their_prefixes["linux"] = (
                os.environ["AZURE_ARC_KEY_DIR"])
        kwargs = {}
        if args[0].startswith("client_id="):
            kwargs["client_id"] = args.pop(0).split("=", 1)[1]
        elif args[0].startswith("resource_id="):
            kwargs["identity_config"] = {"resource_id": args.pop(0).split("=", 1)[1]}
        credential = identity.ManagedIdentityCredential(**kwargs)
        result(lambda: credential.get_token(args[0]))
    elif mode == "azure-cli":
        credential = identity.AzureCliCredential(tenant_id=args[1] if len(args) > 1 else "")
        result(lambda: credential.get_token(args[0]))
    elif mode == "azure-developer-cli":
        credential = identity.AzureDeveloperCliCredential(
            tenant_id=args[1] if len(args) > 1 else "")
        result(lambda: credential.get_token(args[0]))
    elif mode == "pipelines-oidc":
        credential = identity.AzurePipelinesCredential(
            tenant_id="tenant-1", client_id="client-1", service_connection_id=args[0],
            system_access_token=os.environ["SYSTEM_ACCESSTOKEN"])
        print(json.dumps({"oidc_token": credential._get_oidc_token()}))
    elif mode == "assertion":
        # What MSAL signs for a PKCS#12 certificate (private_key_pfx_path): PS256, x5t#S256, x5c.
        import msal
        from msal.application import _parse_pfx
        from msal.oauth2cli.assertion import JwtAssertionCreator

        path, password, client, audience = args
        key, sha256, _sha1, x5c = _parse_pfx(path, password.encode() or None)
        creator = JwtAssertionCreator(key, algorithm="PS256", sha256_thumbprint=sha256,
                                      headers={"x5c": x5c})
        assertion = creator.create_normal_assertion(audience=audience, issuer=client)
        print(json.dumps({"assertion": assertion.decode(), "msal": msal.__version__}))
    elif mode == "verify":
        import jwt
        from cryptography.hazmat.primitives.serialization import pkcs12

        path, password, audience = args
        with open(path, "rb") as data:
            _key, certificate, _chain = pkcs12.load_key_and_certificates(
                data.read(), password.encode() or None)
        assertion = sys.stdin.read().strip()
        header = jwt.get_unverified_header(assertion)
        claims = jwt.decode(assertion, certificate.public_key(), algorithms=[header["alg"]],
                            audience=audience)
        print(json.dumps({"header": header, "claims": claims}))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
