#!/usr/bin/env python3
"""Tokenize load over several TokenVault instances and tenants, then every acknowledged token
read back: the instrument of docs/operations.md's Citus measurements (a worker added and the
shards rebalanced, a worker stopped, two instances on one coordinator). Standard library only.

    python3 xtask/citus_load.py --servers http://127.0.0.1:18081,http://127.0.0.1:18082 \
        --tenants tenants.json --seconds 90 [--stop-file F] [--threads 8] [--report out.json]

tenants.json: [{"tenant_id": "...", "key": "key_..."}], each key allowed `token:create` and
`token:read` with a reveal rule on `/`. Prints each tenant's answers per second while the load
runs (201 and errors by status; a tenant by the last six characters of its id), until the
seconds are over or the stop file exists, then the read-back: every token answered 201 must read 200
with its value, on the other instance than the one that wrote it.
"""

import argparse
import collections
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse


def connection(base):
    u = urllib.parse.urlparse(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)


class Client:
    """One keep-alive connection per instance, reopened after a failure."""

    def __init__(self, servers):
        self.servers = servers
        self.conns = {}

    def call(self, server, method, path, key, body=None):
        conn = self.conns.get(server) or connection(server)
        self.conns[server] = conn
        headers = {"SVC-API-KEY": key}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            res = conn.getresponse()
            payload = res.read()
            return res.status, payload
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            self.conns.pop(server, None)
            return "io:" + type(e).__name__, b""


def load(args, tenants, stop, records, lock, worker):
    client = Client(args.servers)
    n = 0
    while not stop.is_set():
        t = tenants[(worker + n) % len(tenants)]
        server = args.servers[n % len(args.servers)]
        value = f"v-{worker}-{n}-{time.time_ns()}"
        status, payload = client.call(
            server, "POST", "/tokens", t["key"], {"type": "token", "data": value}
        )
        token_id = None
        if status == 201:
            token_id = json.loads(payload)["id"]
        with lock:
            records.append((time.time(), t["tenant_id"], server, status, token_id, value))
        n += 1


def read_back(args, tenants, records):
    keys = {t["tenant_id"]: t["key"] for t in tenants}
    client = Client(args.servers)
    missing = []
    checked = 0
    for _, tenant, server, status, token_id, value in records:
        if status != 201:
            continue
        other = args.servers[(args.servers.index(server) + 1) % len(args.servers)]
        got, payload = client.call(other, "GET", f"/tokens/{token_id}", keys[tenant])
        checked += 1
        if got != 200 or json.loads(payload).get("data") != value:
            missing.append((tenant, token_id, got))
    return checked, missing


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--servers", required=True)
    p.add_argument("--tenants", required=True)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--stop-file")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--report")
    args = p.parse_args()
    args.servers = args.servers.split(",")
    with open(args.tenants) as f:
        tenants = json.load(f)
    stop, lock, records = threading.Event(), threading.Lock(), []
    threads = [
        threading.Thread(target=load, args=(args, tenants, stop, records, lock, w))
        for w in range(args.threads)
    ]
    started = time.time()
    for t in threads:
        t.start()
    shown = 0
    while time.time() - started < args.seconds and not (
        args.stop_file and os.path.exists(args.stop_file)
    ):
        time.sleep(1)
        with lock:
            fresh, shown = records[shown:], len(records)
        line = collections.defaultdict(collections.Counter)
        for _, tenant, _, status, _, _ in fresh:
            line[tenant[-6:]][status] += 1
        cells = " ".join(
            f"{t}:" + ",".join(f"{s}={c}" for s, c in sorted(line[t].items(), key=str))
            for t in sorted(line)
        )
        print(f"t={time.time() - started:5.1f}s {cells}", flush=True)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.time() - started
    by_status = collections.Counter(r[3] for r in records)
    print(f"requests {len(records)} in {elapsed:.1f}s ({len(records) / elapsed:.0f}/s): "
          + ", ".join(f"{s}={c}" for s, c in sorted(by_status.items(), key=str)))
    per_tenant = collections.defaultdict(collections.Counter)
    windows = {}
    for at, tenant, _, status, _, _ in records:
        per_tenant[tenant][status] += 1
        if status != 201:
            first, last = windows.get(tenant, (at, at))
            windows[tenant] = (min(first, at), max(last, at))
    for tenant in sorted(per_tenant):
        window = windows.get(tenant)
        span = (f" errors from t={window[0] - started:.1f}s to t={window[1] - started:.1f}s"
                if window else "")
        print(f"  {tenant}: " + ", ".join(
            f"{s}={c}" for s, c in sorted(per_tenant[tenant].items(), key=str)) + span)
    checked, missing = read_back(args, tenants, records)
    print(f"read back {checked} acknowledged tokens: {len(missing)} missing")
    for m in missing[:20]:
        print("  missing", m)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"records": records, "started": started, "missing": missing}, f)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
