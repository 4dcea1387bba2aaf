#!/usr/bin/env python3
"""Another controller's traffic on tools/bench's cluster (--churn R): as ServiceAccount
bench-churn/bench-churn (its token in $BENCH_CHURN_TOKEN), R merge patches a second to the
ConfigMaps churn-0..9, and every 10 s the Deployment churn-web scaled between K and 2K
replicas (pods created on and deleted from the plain nodes: work for the controller
manager, the scheduler and kubelet). User-Agent bench-churn/1; one connection, kept alive.
Logs its counts, and every answer other than 200, each minute.

    BENCH_CHURN_TOKEN=... bench_churn.py SERVER CA_FILE RATE K"""
import http.client
import json
import os
import signal
import ssl
import sys
import time
import urllib.parse

NS = "bench-churn"


def main():
    server, ca, rate, k = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    token = os.environ["BENCH_CHURN_TOKEN"]
    url = urllib.parse.urlparse(server)
    ctx = ssl.create_default_context(cafile=ca)
    headers = {"Authorization": "Bearer " + token, "User-Agent": "bench-churn/1",
               "Content-Type": "application/merge-patch+json", "Accept": "application/json"}
    conn = None
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    counts, codes = 0, {}
    last_log = time.time()
    next_at = time.time()
    scaled_at = time.time()
    up = False
    i = 0
    while not stop:
        now = time.time()
        if now < next_at:
            time.sleep(min(next_at - now, 0.5))
            continue
        next_at += 1.0 / rate
        if next_at < now - 5:  # far behind (the server was slow): do not burst to catch up
            next_at = now
        if now - scaled_at >= 10:
            scaled_at = now
            up = not up
            path = f"/apis/apps/v1/namespaces/{NS}/deployments/churn-web"
            body = {"spec": {"replicas": 2 * k if up else k}}
        else:
            path = f"/api/v1/namespaces/{NS}/configmaps/churn-{i % 10}"
            body = {"data": {"tick": str(i)}}
            i += 1
        try:
            if conn is None:
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=30)
            conn.request("PATCH", path, body=json.dumps(body), headers=headers)
            r = conn.getresponse()
            r.read()
            counts += 1
            if r.status != 200:
                codes[r.status] = codes.get(r.status, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            codes[type(e).__name__] = codes.get(type(e).__name__, 0) + 1
            conn = None
            time.sleep(0.5)
        if time.time() - last_log >= 60:
            last_log = time.time()
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} bench-churn: {counts} patches, "
                  f"not 200: {codes or 'none'}", flush=True)
    print(f"bench-churn: stopped after {counts} patches, not 200: {codes or 'none'}", flush=True)


if __name__ == "__main__":
    main()
