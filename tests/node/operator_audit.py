#!/usr/bin/env python3
"""The operator's requests in the API server's audit log (tools/cluster keeps every request
of a service account), as tests/node/helm_pod_test.sh checks them.

  operator_audit.py identity LOG USER POD=IP... [--from TIME] [--to TIME]
      every request of USER comes from one of the pods POD, from that pod's IP, with a
      token bound to it (the projected token: user.extra names the pod and the token's
      JTI); each pod named made at least one request.
  operator_audit.py writers LOG USER [--from TIME] [--to TIME]
      one replica acts at a time: every write of USER that is not its Lease (nor a
      self-review) was sent by the pod, from the address, whose write of the Lease last
      succeeded before it, and each replica's run of writes ended before the next
      replica's began. Prints the runs (POD@IP) and the Lease's takeovers.
  operator_audit.py refused LOG USER [--from TIME] [--to TIME]
      no request of USER was refused (403).

--from and --to (RFC 3339, UTC) bound the requests looked at by when they were received;
the Lease's history before --from still counts.
"""
import argparse
import datetime
import json
import sys

LEASE = ("coordination.k8s.io", "leases")
SELF_REVIEWS = {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
POD_NAME = "authentication.kubernetes.io/pod-name"
CREDENTIAL = "authentication.kubernetes.io/credential-id"


def when(text):
    # Audit times are RFC 3339 with microseconds and a Z.
    return datetime.datetime.strptime(text.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f")


def entries(log, user):
    """The requests of `user`, each once (the last stage logged)."""
    by_id = {}
    with open(log) as f:
        for line in f:
            if user not in line:
                continue
            e = json.loads(line)
            if e.get("user", {}).get("username") == user:
                by_id[e["auditID"]] = e
    return sorted(by_id.values(), key=lambda e: e["requestReceivedTimestamp"])


def pod_of(e):
    return (e["user"].get("extra", {}).get(POD_NAME) or ["?"])[0]


def replica(e):
    """Who sent it: the pod its token is bound to, at the address it came from."""
    return "%s@%s" % (pod_of(e), ",".join(e.get("sourceIPs", [])))


def describe(e):
    ref = e.get("objectRef", {})
    what = "/".join(x for x in (ref.get("apiGroup", ""), ref.get("resource", ""), ref.get("subresource", "")) if x)
    return "%s %s %s %s -> %s from %s (pod %s)" % (
        e["requestReceivedTimestamp"], e["verb"], what, ref.get("name", ""),
        e.get("responseStatus", {}).get("code"), ",".join(e.get("sourceIPs", [])), pod_of(e))


def is_lease_write(e):
    ref = e.get("objectRef", {})
    return e["verb"] in WRITES and (ref.get("apiGroup", ""), ref.get("resource")) == LEASE


def is_acting_write(e):
    ref = e.get("objectRef", {})
    return e["verb"] in WRITES and not is_lease_write(e) and ref.get("resource") not in SELF_REVIEWS


def within(e, start, end):
    received = when(e["requestReceivedTimestamp"])
    return (start is None or received >= start) and (end is None or received <= end)


def identity(log, user, pods, start, end):
    want = dict(p.split("=", 1) for p in pods)
    seen = {name: 0 for name in want}
    bad = []
    for e in entries(log, user):
        if not within(e, start, end):
            continue
        pod = pod_of(e)
        extra = e["user"].get("extra", {})
        if pod not in want:
            bad.append("from no pod of the release: " + describe(e))
        elif e.get("sourceIPs") != [want[pod]]:
            bad.append("not from %s's IP %s: %s" % (pod, want[pod], describe(e)))
        elif not any(c.startswith("JTI=") for c in extra.get(CREDENTIAL, [])):
            bad.append("not with a bound token (no JTI): " + describe(e))
        else:
            seen[pod] += 1
    for pod, n in sorted(seen.items()):
        print("%s (%s): %d requests as %s, each from its IP with its bound token" % (pod, want[pod], n, user))
        if n == 0:
            bad.append("no request from %s" % pod)
    return bad


def writers(log, user, start, end):
    all_entries = entries(log, user)
    # Who held the Lease when: the pods whose writes of it succeeded, in order.
    held = [(when(e["stageTimestamp"]), replica(e), e) for e in all_entries
            if is_lease_write(e) and e.get("responseStatus", {}).get("code") in (200, 201)]
    bad = []
    runs = []
    takeovers = []
    previous = None
    for t, pod, e in held:
        if pod != previous and (start is None or t >= start) and (end is None or t <= end):
            takeovers.append("%s Lease written by %s (was %s)" % (e["stageTimestamp"], pod, previous))
        previous = pod
    for e in all_entries:
        if not is_acting_write(e):
            continue
        if not within(e, start, end):
            continue
        received = when(e["requestReceivedTimestamp"])
        holder = None
        for t, pod, _ in held:
            if t > received:
                break
            holder = pod
        who = replica(e)
        if who != holder:
            bad.append("written while %s held the Lease: %s" % (holder, describe(e)))
        # Runs of writes by one replica, in the order they were received.
        if runs and runs[-1][0] == who:
            runs[-1][2] = max(runs[-1][2], when(e["stageTimestamp"]))
            runs[-1][3] += 1
        else:
            runs.append([who, received, when(e["stageTimestamp"]), 1])
    for who, first, last, n in runs:
        print("%s: %d writes from %s to %s" % (who, n, first.isoformat(), last.isoformat()))
    for line in takeovers:
        print(line)
    for (a, _, a_last, _), (b, b_first, _, _) in zip(runs, runs[1:]):
        if b_first < a_last:
            bad.append("%s wrote from %s while a write of %s ran until %s" % (b, b_first.isoformat(), a, a_last.isoformat()))
    return bad


def refused(log, user, start, end):
    return ["refused: " + describe(e) for e in entries(log, user)
            if e.get("responseStatus", {}).get("code") == 403 and within(e, start, end)]


def main(argv):
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("mode", choices=["identity", "writers", "refused"])
    parser.add_argument("log")
    parser.add_argument("user")
    parser.add_argument("pods", nargs="*", metavar="POD=IP")
    parser.add_argument("--from", dest="start", type=when)
    parser.add_argument("--to", dest="end", type=when)
    a = parser.parse_args(argv[1:])
    if a.mode == "identity":
        bad = identity(a.log, a.user, a.pods, a.start, a.end)
    elif a.mode == "writers":
        bad = writers(a.log, a.user, a.start, a.end)
    else:
        bad = refused(a.log, a.user, a.start, a.end)
    for line in bad:
        print("FAIL: " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
