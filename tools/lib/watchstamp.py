#!/usr/bin/env python3
"""The bench's own watch: when each change the operator waits for reached a watcher.

    watchstamp.py OUT

Watches pods and nodes (through kubectl, with the current KUBECONFIG) and writes one line
per change that matters to OUT, stamped with the time it arrived here:

    <unix time> pod DELETED <namespace>/<name>
    <unix time> node <name> <what the operator waits for, as one token>

A node's line is written only when its token changes: its DCM labels, amd.com/gpu.ready,
its amd.com/gpu allocatable and its taints. The bench puts these stamps between the other
party's write (the audit log) and the operator's request (the audit log again), which
splits a reaction into the API server's delivery of the watch event and the operator's own
part. Each watch runs in a thread of its own and stamps a line before decoding it.
"""
import json
import subprocess
import sys
import threading
import time


def watch(path, on_line):
    # The API server ends a watch after 30 to 60 minutes: start it again.
    while True:
        p = subprocess.Popen(["kubectl", "get", "--raw", path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        for line in p.stdout:
            on_line(time.time(), line)
        p.wait()
        time.sleep(0.5)


def main():
    out = open(sys.argv[1], "w", buffering=1)
    lock = threading.Lock()
    tokens = {}

    def emit(text):
        with lock:
            out.write(text + "\n")

    def on_pod(t, line):
        if b'"DELETED"' not in line[:40]:
            return
        try:
            e = json.loads(line)
            m = e["object"]["metadata"]
        except (ValueError, KeyError, TypeError):
            return
        emit(f'{t:.6f} pod DELETED {m.get("namespace", "")}/{m.get("name", "")}')

    def on_node(t, line):
        try:
            e = json.loads(line)
            o = e["object"]
            name = o["metadata"]["name"]
        except (ValueError, KeyError, TypeError):
            return
        if e.get("type") == "DELETED":
            tokens.pop(name, None)
            return
        labels = o["metadata"].get("labels") or {}
        keep = sorted(f"{k}={v}" for k, v in labels.items()
                      if k.startswith("dcm.amd.com/") or k == "amd.com/gpu.ready")
        gpus = (o.get("status", {}).get("allocatable") or {}).get("amd.com/gpu", "-")
        taints = sorted(f'{x.get("key")}:{x.get("effect")}' for x in (o.get("spec", {}).get("taints") or []))
        token = ",".join(keep) + "|" + gpus + "|" + ",".join(taints)
        if tokens.get(name) != token:
            tokens[name] = token
            emit(f"{t:.6f} node {name} {token.replace(' ', '_')}")

    threads = [threading.Thread(target=watch, args=("/api/v1/pods?watch=true", on_pod), daemon=True),
               threading.Thread(target=watch, args=("/api/v1/nodes?watch=true", on_node), daemon=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


if __name__ == "__main__":
    main()
