"""What tools/bench measures beyond the operator's own figures, for runs a skeptic accepts
(bench/README.md, "A cluster like a real one"): the API server's API Priority and Fairness
figures and etcd's writes from their /metrics, the machine's CPU pressure and steal, every
client's requests in the audit log, the nodes' measured simulated times (with gpu-sim's
--jitter) and the ideal schedule they give, medians over repeated runs, and the other
controller's traffic (tools/lib/bench_churn.py) with the servers without GPUs it runs on."""
import heapq
import json
import math
import os
import re
import ssl
import statistics
import subprocess
import sys
import time
import urllib.request

# -- the API server's and etcd's /metrics --

APF_PREFIXES = ("apiserver_flowcontrol_request_wait_duration_seconds",
                "apiserver_flowcontrol_rejected_requests_total",
                "apiserver_flowcontrol_dispatched_requests_total",
                "apiserver_flowcontrol_current_inqueue_requests",
                "apiserver_flowcontrol_request_queue_length_after_enqueue")
ETCD_NAMES = ("etcd_disk_wal_write_bytes_total", "etcd_disk_wal_fsync_duration_seconds_count",
              "etcd_disk_wal_fsync_duration_seconds_sum", "etcd_disk_backend_commit_duration_seconds_count",
              "etcd_disk_backend_commit_duration_seconds_sum", "etcd_mvcc_put_total", "etcd_mvcc_delete_total",
              "etcd_mvcc_txn_total", "etcd_mvcc_db_total_size_in_bytes", "etcd_server_proposals_committed_total")
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text, prefixes):
    """{(name, ((label, value), ...)): float} for the lines whose name starts with a prefix."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(prefixes):
            continue
        m = LINE.match(line)
        if not m:
            continue
        try:
            out[(m.group(1), tuple(sorted(LABEL.findall(m.group(2) or ""))))] = float(m.group(3))
        except ValueError:
            pass
    return out


class Scrapes:
    """The cluster's /metrics endpoints: the API server's (as admin, by client certificate)
    and etcd's (plain http on loopback)."""

    def __init__(self, cluster_dir):
        env = {}
        with open(os.path.join(cluster_dir, "cluster.env")) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    k, v = line.strip().split("=", 1)
                    env[k] = v
        self.etcd_url = f'http://127.0.0.1:{env["ETCD_CLIENT_PORT"]}/metrics'
        self.api_url = f'https://127.0.0.1:{env["APISERVER_PORT"]}/metrics'
        self.fsync = env.get("ETCD_FSYNC", "0") == "1"
        pki = os.path.join(cluster_dir, "pki")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def apiserver(self, prefixes=APF_PREFIXES):
        with urllib.request.urlopen(self.api_url, timeout=20, context=self.ctx) as r:
            return samples(r.read().decode(), prefixes)

    def etcd(self):
        with urllib.request.urlopen(self.etcd_url, timeout=10) as r:
            return samples(r.read().decode(), ETCD_NAMES)


def delta(before, after):
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def bucket_quantiles(buckets, count, qs):
    """Quantiles from cumulative buckets {le: count}, as histogram_quantile interpolates."""
    out = {}
    for q in qs:
        if count <= 0:
            out[q] = None
            continue
        rank, prev_b, prev_c, value = q * count, 0.0, 0.0, None
        for b in sorted(buckets):
            if buckets[b] >= rank:
                if math.isinf(b):
                    value = prev_b
                else:
                    span = buckets[b] - prev_c
                    value = prev_b + (b - prev_b) * ((rank - prev_c) / span if span else 1.0)
                break
            prev_b, prev_c = b, buckets[b]
        out[q] = value
    return out


def apf_figures(before, after, inqueue_peaks):
    """Per (flow schema, priority level): requests dispatched, those that went through APF's
    queueing (the wait histogram's count: every request of a non-exempt level, most of
    them dispatched at once) and their wait's mean, p50 and p99, those put in a queue
    (request_queue_length_after_enqueue: every request is put in a queue, so its count
    is theirs; the mean length it found, 1 when alone), those that waited over 5 ms and
    over 100 ms,
    rejections by reason, and the most in queue at once as sampled."""
    d = delta(before, after)
    flows = {}

    def flow(labels):
        lab = dict(labels)
        key = f'{lab.get("flow_schema", "?")} / {lab.get("priority_level", "?")}'
        return flows.setdefault(key, {"flow_schema": lab.get("flow_schema"), "priority_level": lab.get("priority_level"),
                                      "dispatched": 0, "waited": 0, "wait_sum": 0.0, "_buckets": {},
                                      "enqueued": 0, "queue_length_sum": 0.0,
                                      "rejected": {}, "inqueue_peak": 0})

    for (name, labels), v in d.items():
        lab = dict(labels)
        if name == "apiserver_flowcontrol_dispatched_requests_total":
            flow(labels)["dispatched"] += v
        elif name == "apiserver_flowcontrol_request_wait_duration_seconds_count" and lab.get("execute") == "true":
            flow(labels)["waited"] += v
        elif name == "apiserver_flowcontrol_request_wait_duration_seconds_sum" and lab.get("execute") == "true":
            flow(labels)["wait_sum"] += v
        elif name == "apiserver_flowcontrol_request_wait_duration_seconds_bucket" and lab.get("execute") == "true":
            le = float("inf") if lab["le"] == "+Inf" else float(lab["le"])
            b = flow(tuple((k, x) for k, x in labels if k != "le" and k != "execute"))["_buckets"]
            b[le] = b.get(le, 0.0) + v
        elif name == "apiserver_flowcontrol_request_queue_length_after_enqueue_count":
            flow(labels)["enqueued"] += v
        elif name == "apiserver_flowcontrol_request_queue_length_after_enqueue_sum":
            flow(labels)["queue_length_sum"] += v
        elif name == "apiserver_flowcontrol_rejected_requests_total" and v > 0:
            f = flow(labels)
            f["rejected"][lab.get("reason", "?")] = f["rejected"].get(lab.get("reason", "?"), 0) + v
    for key, peak in inqueue_peaks.items():
        fl, pl = key
        flow((("flow_schema", fl), ("priority_level", pl)))["inqueue_peak"] = peak
    out = {}
    for key, f in flows.items():
        f["_b"] = f.pop("_buckets")
        q = bucket_quantiles(f["_b"], f["waited"], [0.5, 0.99])
        f["wait_p50"], f["wait_p99"] = q[0.5], q[0.99]
        f["wait_mean"] = f["wait_sum"] / f["waited"] if f["waited"] else None
        f["queue_length_mean"] = f["queue_length_sum"] / f["enqueued"] if f["enqueued"] else None
        f["waited_over_5ms"] = f["waited"] - f["_b"].get(0.005, f["waited"]) if f["waited"] else 0
        f["waited_over_100ms"] = f["waited"] - f["_b"].get(0.1, f["waited"]) if f["waited"] else 0
        del f["_b"]
        if f["dispatched"] or f["waited"] or f["rejected"] or f["inqueue_peak"]:
            out[key] = f
    return out


def inqueue(sample):
    """{(flow schema, priority level): requests in queue now} from one scrape."""
    return {(dict(l).get("flow_schema"), dict(l).get("priority_level")): v
            for (n, l), v in sample.items() if n == "apiserver_flowcontrol_current_inqueue_requests"}


def etcd_figures(before, after, fsync):
    d = delta(before, after)
    g = lambda n: d.get((n, ()), 0.0)
    fsyncs = g("etcd_disk_wal_fsync_duration_seconds_count")
    commits = g("etcd_disk_backend_commit_duration_seconds_count")
    return {"fsync_flag": fsync, "wal_bytes": g("etcd_disk_wal_write_bytes_total"), "wal_fsyncs": fsyncs,
            "wal_fsync_mean": g("etcd_disk_wal_fsync_duration_seconds_sum") / fsyncs if fsyncs else None,
            "backend_commits": commits,
            "backend_commit_mean": g("etcd_disk_backend_commit_duration_seconds_sum") / commits if commits else None,
            "puts": g("etcd_mvcc_put_total"), "deletes": g("etcd_mvcc_delete_total"), "txns": g("etcd_mvcc_txn_total"),
            "proposals": g("etcd_server_proposals_committed_total"),
            "db_bytes_after": after.get(("etcd_mvcc_db_total_size_in_bytes", ()))}


# -- the machine --

def cpu_pressure():
    """/proc/pressure/cpu: {"some": {"avg10", "avg60", "avg300", "total"}, "full": ...}."""
    out = {}
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                parts = line.split()
                out[parts[0]] = {k: float(v) for k, v in (p.split("=") for p in parts[1:])}
    except (OSError, ValueError, IndexError):
        return None
    return out


def cpu_ticks():
    """The aggregate cpu line of /proc/stat: every field, and steal (the 8th) apart."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return {"total": sum(fields[:8]), "steal": fields[7] if len(fields) > 7 else 0}


def machine_figures(p0, p1, t0, t1, seconds):
    """CPU pressure (the share of the run's wall time some / every runnable task waited
    for a CPU, from the totals' delta, and avg60 at the end) and steal (ticks the
    hypervisor gave another guest, as a share of all CPU ticks) over one run."""
    out = {"seconds": seconds}
    if p0 and p1:
        for kind in ("some", "full"):
            if kind in p0 and kind in p1:
                us = p1[kind]["total"] - p0[kind]["total"]
                out[f"{kind}_percent"] = 100.0 * us / 1e6 / seconds if seconds > 0 else None
                out[f"{kind}_avg60_end"] = p1[kind]["avg60"]
    ticks = t1["total"] - t0["total"]
    out["steal_seconds"] = (t1["steal"] - t0["steal"]) / os.sysconf("SC_CLK_TCK")
    out["steal_percent"] = 100.0 * (t1["steal"] - t0["steal"]) / ticks if ticks > 0 else None
    return out


# -- clients in the audit log --

def short_user(user):
    return user[len("system:serviceaccount:"):] if user.startswith("system:serviceaccount:") else user


def client_of(a, operator_user):
    """A client as the audit log names it: its User-Agent's program (heartbeat lanes keep
    their /heartbeats) and its user."""
    agent = a["agent"].split(" ")[0]
    program = agent if agent.endswith("/heartbeats") else agent.split("/")[0]
    if a["user"] == operator_user and program == "gpu-partitioner":
        return "operator (gpu-partitioner)"
    return f"{program or '?'} as {short_user(a['user'])}"


def client_role(name):
    if name.startswith("operator"):
        return "the operator"
    if "/heartbeats" in name:
        return "kubelet heartbeats (Leases, Ready)"
    if name.startswith("gpu-sim-plain"):
        return "kubelet of the plain nodes"
    if name.startswith("gpu-sim"):
        return "DCM, device plugin, kubelet (gpu-sim)"
    if name.startswith("bench-churn"):
        return "another controller (bench-churn)"
    if name.startswith("kube-controller-manager"):
        return "controller manager"
    if name.startswith("kube-scheduler"):
        return "scheduler"
    if name.startswith("kube-apiserver"):
        return "the API server itself"
    if name.startswith("kubectl") or name.startswith("python") or name.startswith("Python"):
        return "the bench itself"
    return ""


def clients(audit, start, end, operator_user):
    """Every client's requests in [start, end]: count, by verb, a second, the API
    server's time for them (arrival to completion; watches apart) and the answers 429."""
    by = {}
    for a in audit:
        if not start <= a["t"] <= end:
            continue
        c = by.setdefault(client_of(a, operator_user), {"count": 0, "verbs": {}, "_lat": [], "code_429": 0,
                                                         "resources": {}})
        c["count"] += 1
        c["verbs"][a["verb"]] = c["verbs"].get(a["verb"], 0) + 1
        key = f'{a["verb"]} {a["resource"]}'
        c["resources"][key] = c["resources"].get(key, 0) + 1
        if a["verb"] != "watch":
            c["_lat"].append(a["done"] - a["t"])
        if a["code"] == 429:
            c["code_429"] += 1
    span = max(end - start, 1.0)
    for name, c in by.items():
        lat = sorted(c.pop("_lat"))
        c["role"] = client_role(name)
        c["per_second"] = c["count"] / span
        c["latency_p50"] = lat[len(lat) // 2] if lat else None
        c["latency_p99"] = lat[min(len(lat) - 1, math.ceil(0.99 * len(lat)) - 1)] if lat else None
        c["resources"] = dict(sorted(c["resources"].items(), key=lambda kv: -kv[1])[:6])
    return dict(sorted(by.items(), key=lambda kv: -kv[1]["count"]))


# -- measured simulated times and the ideal schedule --

def jitter_factors(sim_log):
    """Each node's jitter factors as gpu-sim logged them: {node: (dcm, plugin)}."""
    out = {}
    try:
        with open(sim_log) as f:
            for line in f:
                m = re.search(r"node (\S+): jitter: DCM's delays x([0-9.]+), the plugin's restart x([0-9.]+)", line)
                if m:
                    out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    except OSError:
        pass
    return out


def list_schedule(durations, slots, head_start=0.0):
    """When the last of `durations` (in the order given) ends if each starts as soon as one
    of `slots` is free: the ideal of a rollout that keeps maxParallel nodes in flight."""
    free = [head_start] * max(1, slots)
    heapq.heapify(free)
    end = 0.0
    for d in durations:
        t = heapq.heappop(free)
        heapq.heappush(free, t + d)
        end = max(end, t + d)
    return end


def spread(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return {"min": v[0], "p50": statistics.median(v), "max": v[-1], "count": len(v),
            "stdev": statistics.pstdev(v) if len(v) > 1 else 0.0}


# -- repeats --

HEADLINES = [  # key, label, how to read it from a run
    ("wall_seconds", "wall, s", lambda r: r.get("wall_seconds")),
    ("overhead_percent", "overhead vs configured ideal, %", lambda r: r.get("overhead_percent")),
    ("overhead_measured_percent", "overhead vs measured ideal, %", lambda r: r.get("overhead_measured_percent")),
    ("reaction_metric_p99", "reaction p99, metric, ms", lambda r: 1000 * r["reaction_metric"]["p99"]
     if r.get("reaction_metric", {}).get("p99") is not None else None),
    ("reaction_audit_p99", "reaction p99, audit log, ms", lambda r: 1000 * r["reaction_audit"]["p99"]
     if (r.get("reaction_audit") or {}).get("p99") is not None else None),
    ("operator_cpu_seconds", "operator CPU, s", lambda r: r.get("operator_cpu_seconds")),
    ("operator_peak_rss_mib", "operator peak RSS, MiB", lambda r: (r.get("operator_peak_rss_kb") or 0) / 1024),
    ("requests_per_node", "operator requests per node until the plan is gone",
     lambda r: r.get("requests_until_gone_per_node")),
    # The mean: APF's wait histogram starts at 5 ms, and quantiles within it are interpolation.
    ("apf_wait_mean_ms", "operator's APF wait mean, ms", lambda r: 1000 * r["operator_apf"]["wait_mean"]
     if (r.get("operator_apf") or {}).get("wait_mean") is not None else None),
    ("apf_waited_over_5ms", "operator's requests APF held over 5 ms",
     lambda r: (r.get("operator_apf") or {}).get("waited_over_5ms")),
    ("cpu_some_percent", "CPU pressure some, %", lambda r: (r.get("machine") or {}).get("some_percent")),
    ("steal_percent", "steal, %", lambda r: (r.get("machine") or {}).get("steal_percent")),
]


def repeats(runs):
    """Per maxParallel (and operator, with --operators): each headline figure's median, min
    and max over its runs."""
    out = {}
    configs = sorted({(r["max_parallel"], r.get("operator") or "") for r in runs})
    for mp, op in configs:
        mine = [r for r in runs if r["max_parallel"] == mp and (r.get("operator") or "") == op
                and r.get("outcome") == "completed"]
        row = {"runs": len(mine)}
        for key, _, get in HEADLINES:
            vals = [v for v in (get(r) for r in mine) if v is not None]
            if vals:
                row[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
        out[f"{mp} {op}" if op else str(mp)] = row
    return out


# -- the other controller and the plain nodes --

CHURN_NS = "bench-churn"
PLAIN_POOL = "cpu"


def plain_objects(k, pods_per_node):
    """K servers without GPUs (nodepool=cpu) and their pods: a Deployment of K x P
    replicas of 100 m each, and the churn's Deployment, which the other controller scales."""
    docs = [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"cpu-node-{i:03d}",
                          "labels": {"sim.gpu-partitioner.io/managed": "true", "nodepool": PLAIN_POOL,
                                     "kubernetes.io/hostname": f"cpu-node-{i:03d}", "kubernetes.io/os": "linux"}}}
            for i in range(1, k + 1)]
    docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CHURN_NS}})
    pod = lambda app: {"metadata": {"labels": {"app": app}},
                       "spec": {"automountServiceAccountToken": False, "nodeSelector": {"nodepool": PLAIN_POOL},
                                "terminationGracePeriodSeconds": 2,
                                "containers": [{"name": "web", "image": "nginx:sim",
                                                "resources": {"requests": {"cpu": "100m"}}}]}}
    for name, replicas in (("plain-web", k * pods_per_node), ("churn-web", k)):
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": name, "namespace": CHURN_NS},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                              "template": pod(name)}})
    # The other controller: a ServiceAccount of its own, allowed its ConfigMaps and
    # Deployments only.
    docs += [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench-churn", "namespace": CHURN_NS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "bench-churn", "namespace": CHURN_NS},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                    "verbs": ["get", "list", "create", "update", "patch"]},
                   {"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"],
                    "verbs": ["get", "list", "update", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "bench-churn", "namespace": CHURN_NS},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-churn"},
         "subjects": [{"kind": "ServiceAccount", "name": "bench-churn", "namespace": CHURN_NS}]}]
    # Its own FlowSchema, into the priority level service accounts share (workload-low), so
    # that the API server's APF figures tell its waits from the operator's.
    docs.append({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                 "metadata": {"name": "bench-churn"},
                 "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 8999,
                          "distinguisherMethod": {"type": "ByUser"},
                          "rules": [{"subjects": [{"kind": "ServiceAccount",
                                                   "serviceAccount": {"name": "bench-churn", "namespace": CHURN_NS}}],
                                     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                        "namespaces": ["*"], "clusterScope": True}]}]}})
    for i in range(10):
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"churn-{i}", "namespace": CHURN_NS}, "data": {"tick": "0"}})
    return docs
