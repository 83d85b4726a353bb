"""The provider off kubectl's path, measured over whole token lifetimes (bench/run.sh 7 and 8).

expiries: get-token and kubectl called in turn, every CALL_GAP seconds, across several expiries
of a short-lived token while the provider takes a second per token request; each call's wall
time is recorded, with refresh-ahead on (the default) and then off, beside the cache hit.

spawn: the hit that starts the background renewal, alone: plain hits (--refresh-ahead=0) and
hits in the window that find no renewal under way (so each starts one) in turn, the renewal
failing at once (the provider refusing the client) and over before the next pair; then hits in
the window while a renewal is under way. What one spawn adds, apart from the scheduler's noise
that the slowest of hundreds of calls in the expiries run also holds.

backoff: hits in the window while every background renewal fails, first refused (the provider
refusing the client), then in an outage (503): how many renewals started and how many token
requests the provider saw for hundreds of hits, one every CALL_GAP seconds.

outage: the provider's connections reset (the test bed's providerDown) for longer than
--min-validity while kubectl runs in a loop: kubectl failures while the cached token was still
valid, after it lapsed, and the provider's token requests once it is back.

Usage: resilience.py expiries|spawn|backoff|outage CONFIG_JSON   (written by bench/run.sh; prints markdown)
"""

import fcntl
import glob
import json
import os
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


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


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
    # The hit in the same rhythm (one call every CALL_GAP, kubectl between): the median of the
    # run with refresh-ahead off, where all but the calls at an expiry are plain hits. A hit in a
    # tight loop (`hit`) is faster than one after a pause, so both are given.
    rhythm_hit = statistics.median(rows[1][1])
    lines = [
        "| run | get-token | slowest ÷ a hit in this rhythm | slowest ÷ a hit in a tight loop "
        "| kubectl get --raw /version | failures | token requests |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, plugin, through_kubectl, failures, requests in rows:
        lines.append(
            f"| {label} | {ms(plugin)} ({len(plugin)} calls) | {max(plugin) / rhythm_hit:.1f}× "
            f"| {max(plugin) / hit_median:.1f}× | {ms(through_kubectl)} | {failures} | {requests} |")
    lines.append("")
    lines.append(f"A hit in this rhythm: {rhythm_hit:.2f} ms (the median of the run with refresh-ahead "
                 f"off); in a tight loop: {hit_median:.2f} ms (median of 50). Goal: slowest get-token "
                 "≤ 3× the hit with refresh-ahead on.")
    print("\n".join(lines))


def entry_locked(cache_dir):
    """Whether a process (the background renewal) holds an entry lock in `cache_dir`."""
    for path in glob.glob(f"{cache_dir}/locks/*.lock"):
        with open(path) as file:
            try:
                fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return False


def wait_unlocked(cache_dir):
    deadline = time.monotonic() + 30
    while entry_locked(cache_dir):
        if time.monotonic() > deadline:
            sys.exit("bench: the background renewal did not end within 30 s")
        time.sleep(0.01)


def spawn(config):
    calls, cache_dir = config["calls"], config["cache_dir"]
    # One parent (this script) runs every call: without KUBERNETES_EXEC_INFO kubecred does not
    # take a second call from it for client-go's re-run after a 401 (hand_out.rs), which would
    # refresh in the foreground instead of measuring the hit.
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_EXEC_INFO"}
    plain = config["get_token"] + ["--refresh-ahead=0"]
    # The token lives 600 s: with a window of 599 s every hit after the first second is in it.
    window = config["get_token"] + ["--refresh-ahead=599s"]
    subprocess.run(config["logout"], check=True, stdout=subprocess.DEVNULL)
    admin(config, "POST", "/config", {"tokenDelayMs": 0, "tokenError": None})
    subprocess.run(plain, check=True, stdout=subprocess.DEVNULL, env=env)
    time.sleep(1.5)
    admin(config, "POST", "/config", {"tokenError": "invalid_client"})
    admin(config, "POST", "/reset")
    plain_hits, spawning_hits = [], []
    for _ in range(calls):
        plain_hits.append(checked(timed(plain, env=env)))
        spawning_hits.append(checked(timed(window, env=env)))
        wait_unlocked(cache_dir)
        # The failure's back-off would keep the next hit from starting one: forgotten, so that
        # every hit in the window measured here spawns.
        forget_renewal_notes(cache_dir)
    spawned = admin(config, "GET", "/stats")["token"]["client_credentials"]
    # A renewal that waits for the provider for the rest of the run: every hit in the window
    # finds it under way.
    admin(config, "POST", "/config", {"tokenError": None, "tokenDelayMs": 600_000})
    subprocess.run(window, check=True, stdout=subprocess.DEVNULL, env=env)
    time.sleep(0.5)
    if not entry_locked(cache_dir):
        sys.exit("bench: no background renewal is under way")
    plain_again, under_way = [], []
    for _ in range(calls):
        plain_again.append(checked(timed(plain, env=env)))
        under_way.append(checked(timed(window, env=env)))
    admin(config, "POST", "/config", {"tokenDelayMs": 0})
    lines = [
        "| calls, in turn | median | 90th percentile | 99th percentile | slowest |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, values in (
        ("plain hit", plain_hits),
        (f"hit in the window, starting a renewal ({spawned} started)", spawning_hits),
        ("plain hit", plain_again),
        ("hit in the window, a renewal under way", under_way),
    ):
        lines.append(f"| {label} | {statistics.median(values):.2f} ms | {percentile(values, 0.9):.2f} ms "
                     f"| {percentile(values, 0.99):.2f} ms | {max(values):.2f} ms |")
    ratio = statistics.median(spawning_hits) / statistics.median(plain_hits)
    worst = max(spawning_hits) / statistics.median(plain_hits)
    lines.append("")
    lines.append(f"{calls} calls of each. The hit that starts a renewal: {ratio:.2f}× the plain hit's median; "
                 f"its slowest {worst:.1f}× the plain hit's median (the plain hit's own slowest: "
                 f"{max(plain_hits) / statistics.median(plain_hits):.1f}×).")
    print("\n".join(lines))


def forget_renewal_notes(cache_dir):
    for path in glob.glob(f"{cache_dir}/state/*.json"):
        os.remove(path)


def backoff(config):
    calls = config["calls"]
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_EXEC_INFO"}
    window = config["get_token"] + ["--refresh-ahead=599s"]
    lines = [
        "| the renewals meet | hits in the window | over | renewals started | token requests |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, knobs in (
        ("a refusal (`invalid_client`)", {"tokenError": "invalid_client"}),
        ("an outage (503 `temporarily_unavailable`, retried 3 times per renewal)",
         {"tokenError": "temporarily_unavailable"}),
    ):
        subprocess.run(config["logout"], check=True, stdout=subprocess.DEVNULL)
        admin(config, "POST", "/config", {"tokenDelayMs": 0, "tokenError": None})
        subprocess.run(config["get_token"], check=True, stdout=subprocess.DEVNULL, env=env)
        time.sleep(1.5)
        admin(config, "POST", "/config", knobs)
        admin(config, "POST", "/reset")
        started = time.monotonic()
        for _ in range(calls):
            checked(timed(window, env=env))
            time.sleep(CALL_GAP)
        wait_unlocked(config["cache_dir"])
        over = time.monotonic() - started
        requests = admin(config, "GET", "/stats")["token"]["client_credentials"]
        status = json.loads(subprocess.run(config["status"], check=True, capture_output=True).stdout)
        failed = status["entries"][0]["renewal_failed"] or {}
        lines.append(f"| {label} | {calls} | {over:.0f} s | {failed.get('attempts', 0)} | {requests} |")
    admin(config, "POST", "/config", {"tokenError": None})
    lines.append("")
    lines.append("A refusal is not retried for the same token; after an outage the next renewal waits "
                 "10 s, then 20 s, 40 s, … (never past half the time left before `--min-validity`). "
                 "Before the back-off, every hit that found no renewal under way started one.")
    print("\n".join(lines))


def checked(result):
    took, code, stderr = result
    if code != 0:
        sys.exit(f"bench: get-token failed: {stderr.strip()}")
    return took


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
    {"expiries": expiries, "spawn": spawn, "backoff": backoff, "outage": outage}[mode](config)
