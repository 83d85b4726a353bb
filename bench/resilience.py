"""The provider off kubectl's path, measured over whole token lifetimes (bench/run.sh 7 and 8).

expiries: get-token and kubectl called in turn, every CALL_GAP seconds, across several expiries
of a short-lived token while the provider takes a second per token request; each call's wall
time is recorded, with refresh-ahead on (the default) and then off, beside the cache hit.

outage: the provider's connections reset (the test bed's providerDown) for longer than
--min-validity while kubectl runs in a loop: kubectl failures while the cached token was still
valid, after it lapsed, and the provider's token requests once it is back.

Usage: resilience.py expiries|outage CONFIG_JSON   (written by bench/run.sh; prints markdown)
"""

import json
import ssl
import statistics
import subprocess
import sys
import time
import urllib.request

CALL_GAP = 0.25


def admin(config, method, path, body=None):
    context = ssl.create_default_context(cafile=config["ca_file"])
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        config["admin"] + path, data=data, method=method,
        headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def timed(command, env=None):
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return (time.perf_counter() - started) * 1000, done.returncode, done.stderr.decode()


def ms(values):
    return f"{statistics.median(values):.2f} ms median, slowest {max(values):.2f} ms"


def expiries(config):
    seconds = config["seconds"]
    hit = [timed(config["get_token"])[0] for _ in range(50)]
    hit_median = statistics.median(hit)
    rows = []
    for label, extra in (("refresh-ahead on (default)", []), ("refresh-ahead off", ["--refresh-ahead=0"])):
        subprocess.run(config["logout"], check=True, stdout=subprocess.DEVNULL)
        admin(config, "POST", "/config", {"tokenDelayMs": 0})
        subprocess.run(config["get_token"] + extra, check=True, stdout=subprocess.DEVNULL)
        admin(config, "POST", "/config", {"tokenDelayMs": config["delay_ms"]})
        admin(config, "POST", "/reset")
        kubeconfig = config["kubeconfig_off"] if extra else config["kubeconfig"]
        kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "get", "--raw", "/version"]
        plugin, through_kubectl, failures = [], [], 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            took, code, _ = timed(config["get_token"] + extra)
            plugin.append(took)
            failures += code != 0
            took, code, _ = timed(kubectl, env=config["kubectl_env"])
            through_kubectl.append(took)
            failures += code != 0
            time.sleep(CALL_GAP)
        requests = admin(config, "GET", "/stats")["token"]["client_credentials"]
        rows.append((label, plugin, through_kubectl, failures, requests))
    lines = [
        f"| run | get-token | slowest ÷ hit median | kubectl get --raw /version | failures | token requests |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, plugin, through_kubectl, failures, requests in rows:
        lines.append(
            f"| {label} | {ms(plugin)} ({len(plugin)} calls) | {max(plugin) / hit_median:.1f}× "
            f"| {ms(through_kubectl)} | {failures} | {requests} |")
    lines.append("")
    lines.append(f"The cache hit alone: {hit_median:.2f} ms (median of 50). Goal: slowest get-token "
                 "≤ 3× the hit with refresh-ahead on.")
    print("\n".join(lines))


def outage(config):
    # The token lives `ttl` s; fresh for ttl - min_validity; handed out through an outage until
    # ttl - 30 s (the printed expiry's margin).
    ttl, min_validity, down_from, down_until = (config[k] for k in ("ttl", "min_validity", "down_from", "down_until"))
    subprocess.run(config["logout"], check=True, stdout=subprocess.DEVNULL)
    started = time.monotonic()
    subprocess.run(config["get_token"], check=True, stdout=subprocess.DEVNULL)
    admin(config, "POST", "/reset")
    kubectl = ["kubectl", f"--kubeconfig={config['kubeconfig']}", "get", "--raw", "/version"]
    valid_failures = lapsed_failures = valid_calls = lapsed_calls = 0
    down = False
    while time.monotonic() - started < down_until:
        if not down and time.monotonic() - started >= down_from:
            admin(config, "POST", "/config", {"providerDown": True})
            down = True
        _, code, _ = timed(kubectl, env=config["kubectl_env"])
        # Judged by when kubecred answered: a call that began while the token was valid may
        # spend its retries until after it lapsed, and then has nothing valid to hand out.
        answered = time.monotonic() - started
        if answered < ttl - 30:
            valid_calls += 1
            valid_failures += code != 0
        else:
            lapsed_calls += 1
            lapsed_failures += code != 0
        time.sleep(CALL_GAP)
    admin(config, "POST", "/config", {"providerDown": False})
    before = admin(config, "GET", "/stats")["token"]["total"]
    _, code, _ = timed(kubectl, env=config["kubectl_env"])
    requests_after = admin(config, "GET", "/stats")["token"]["total"] - before
    back = "succeeded" if code == 0 else "failed"
    print(f"Token lifetime {ttl} s, `--min-validity {min_validity}s`; the provider down from "
          f"{down_from} s to {down_until} s ({down_until - down_from} s, longer than --min-validity); "
          f"kubectl every {CALL_GAP} s.\n")
    print("| kubecred answered while | kubectl calls | failures |")
    print("|---|---:|---:|")
    print(f"| the cached token was valid (printed expiry ahead) | {valid_calls} | {valid_failures} |")
    print(f"| it had lapsed, provider still down | {lapsed_calls} | {lapsed_failures} |")
    print(f"\nWhen the provider came back, the first kubectl call {back} with {requests_after} token request(s) (goal 1).")


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    config = json.load(open(path))
    {"expiries": expiries, "outage": outage}[mode](config)
