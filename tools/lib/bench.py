#!/usr/bin/env python3
"""tools/bench's harness, run by tools/bench once the cluster and the simulated nodes are up
(KUBECONFIG, GPU_PARTITIONER_TOKEN_KUBECONFIG and GPU_PARTITIONER_CLUSTER_DIR set).

For each maxParallel value it starts a fresh operator, applies a plan that moves every node
to the other partition profile, samples the operator's metrics and the processes' CPU and
memory while the rollout runs, and keeps the API server's metrics before and after. Then it
runs the documented manual procedure with kubectl on a few nodes, reads the API server's
audit log, and writes the report (Markdown), the chart (PNG) and the figures (JSON).
bench/README.md explains each figure."""
import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_history  # noqa: E402
import bench_plans  # noqa: E402
import bench_real  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The simulated AMD stack's delays at time scale 1, in seconds: tools/simulator/node_model.hpp
# (sim_timing) and kubelet_model.hpp. A memory-mode change (NPS1 <-> NPS4) reloads the driver;
# a compute-only change (SPX <-> CPX in NPS1) does not.
DCM_CHANGE_SECONDS = {"memory": 140.0, "compute": 10.0}
PLUGIN_RESTART = 5.0
# DCM stops each host service of its config (tools/simulator/dcm-config.json has two)
# for 10 s before it partitions.
HOST_SERVICES = 2 * 10.0
# kubelet's delivery of DCM's config to its file (gpu-sim's --dcm-config-lag), and the
# operator's wait for it before the first label (--dcm-config-sync).
DCM_CONFIG_LAG = 60.0
DCM_CONFIG_SYNC = 90.0
WORKLOAD_GRACE = 10  # terminationGracePeriodSeconds of the bench's workload pods
PHASES = ["Pending", "Draining", "Applying", "WaitingOperator", "Verifying", "Succeeded", "Failed"]
PROFILES_BY_CHANGE = {  # name, DCM profile, payload ConfigMap, amd.com/gpu on 8 MI300X
    "memory": [("bench-cpx-nps4", "cpx-nps4", "dcm-profile-cpx-nps4", 64),
               ("bench-spx-nps1", "spx-nps1", "dcm-profile-spx-nps1", 8)],
    "compute": [("bench-cpx-nps1", "cpx-nps1", "dcm-profile-cpx-nps1", 64),
                ("bench-spx-nps1", "spx-nps1", "dcm-profile-spx-nps1", 8)],
}
# What each rollout changes (--change): the nodes go back and forth between two profiles.
CHANGE = "memory"
PROFILES = PROFILES_BY_CHANGE[CHANGE]
DCM_CHANGE = DCM_CHANGE_SECONDS[CHANGE]


def set_change(change):
    global CHANGE, PROFILES, DCM_CHANGE
    CHANGE = change
    PROFILES = PROFILES_BY_CHANGE[change]
    DCM_CHANGE = DCM_CHANGE_SECONDS[change]


def change_words():
    return ("memory-mode change (NPS1 <-> NPS4)" if CHANGE == "memory"
            else "compute-mode change (SPX <-> CPX, NPS1)")
WORKLOADS = "gpu-workloads"
# The cluster's token user (system:masters): the operator's by default (--operator-user
# says otherwise, as with --operator-sa), and the manual procedure's kubectl's always.
OPERATOR_USER = "token-admin"
MANUAL_USER = "token-admin"
CLK_TCK = os.sysconf("SC_CLK_TCK")
# docs/performance.md's count of the operator's writes per node ("API writes per node"), the
# evictions apart: the item 1, node patches 5, item status 11, Events 10, plan status 4.
DOCUMENTED_WRITES_PER_NODE = 31


def log(msg):
    print(f"tools/bench: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log("error: " + msg)
    sys.exit(1)


def kubectl(*args, input=None, check=True, kubeconfig=None):
    env = dict(os.environ)
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    r = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        die(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def parse_time(text):
    # RFC 3339 with up to nanoseconds, as the API server writes them.
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", text)
    if not m:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + (float(m.group(2)) if m.group(2) else 0.0)


# -- processes --

def proc_cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_memory_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_argv0(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode()
    except OSError:
        return None


def stop(pid, grace=15):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    log(f"pid {pid} did not stop within {grace} s of SIGTERM; SIGKILL")
    os.kill(pid, signal.SIGKILL)


# What the harness started and must stop however it ends (gpu-sim is tools/sim's to stop).
CHILDREN = []


def allow_core_dump():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def start(argv, logfile, own=True, cwd=None, core=False):
    """`core`: a crash of the process leaves its core dump in `cwd` (kernel.core_pattern
    permitting)."""
    out = open(logfile, "a")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, close_fds=True, cwd=cwd,
                         preexec_fn=allow_core_dump if core else None)
    out.close()
    if own:
        CHILDREN.append(p)
    return p


def stop_children():
    for p in CHILDREN:
        if p.poll() is None:
            stop(p.pid)
            p.wait()
        try:
            os.killpg(p.pid, signal.SIGTERM)  # what it started (the pod watch's kubectl)
        except (ProcessLookupError, PermissionError):
            pass
    CHILDREN.clear()


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


# -- Prometheus text format --

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text, names):
    """(name, {label: value}, float) for every sample of the given metric names."""
    out = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = LINE.match(line)
        if not m or not any(m.group(1).startswith(n) for n in names):
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        try:
            out.append((m.group(1), labels, float(m.group(3))))
        except ValueError:
            pass
    return out


def heap_of(text):
    """gpu_partitioner_heap_bytes from a scrape of /metrics: {"in_use": bytes, "free": bytes},
    or None from an operator that does not export it."""
    heap = {labels.get("state"): v for n, labels, v in parse_metrics(text, ["gpu_partitioner_heap_bytes"])}
    return heap if "in_use" in heap else None


def metric_delta(after, before):
    """`after` less `before` (both parse_metrics lists), series by series: the counters' and
    histograms' growth between two scrapes of one process. Gauges come out as differences
    too; the callers here read only counters and histograms."""
    if not before:
        return after
    base = {(n, tuple(sorted(labels.items()))): v for n, labels, v in before}
    return [(n, labels, v - base.get((n, tuple(sorted(labels.items()))), 0.0)) for n, labels, v in after]


def histogram_quantiles(samples, name, qs):
    """Quantiles from a Prometheus histogram (all label sets summed), interpolated within
    buckets as Prometheus's histogram_quantile does."""
    buckets = {}
    count = 0.0
    total = 0.0
    for n, labels, v in samples:
        if n == name + "_bucket":
            le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            buckets[le] = buckets.get(le, 0.0) + v
        elif n == name + "_count":
            count += v
        elif n == name + "_sum":
            total += v
    result = bench_real.bucket_quantiles(buckets, count, qs)
    return result, int(count), total


def read_stamps(path):
    """The bench's own watch (watchstamp.py): when each pod's deletion, and each change of
    a node that the operator waits for, arrived there."""
    stamps = {"pods": {}, "nodes": {}}
    if not path or not os.path.exists(path):
        return stamps
    with open(path) as f:
        for line in f:
            parts = line.split()
            try:
                t = float(parts[0])
            except (ValueError, IndexError):
                continue
            if len(parts) >= 4 and parts[1] == "pod":
                stamps["pods"].setdefault(parts[3], t)
            elif len(parts) >= 3 and parts[1] == "node":
                stamps["nodes"].setdefault(parts[2], []).append(t)
    return stamps


def watch_arrival(stamps, cause, write, node):
    """When the other party's write `cause` reached the bench's watch: a pod's deletion by
    its name; a node's change as the last one to arrive between the write's arrival in the
    API server and the operator's request (what the operator acted on), else the first one
    after (the bench's watch slower than the operator). None when the watch missed it."""
    if cause["resource"] == "pods":
        return stamps["pods"].get(f'{cause["ns"]}/{cause["name"]}')
    times = stamps["nodes"].get(node, [])
    within = [t for t in times if cause["t"] <= t <= write["t"]]
    if within:
        return within[-1]
    return next((t for t in times if t >= cause["t"]), None)


def lab(r):
    """A run's name in the report: its maxParallel, with --operators the operator's label,
    and with --repeat its round."""
    return (f'{r["max_parallel"]}' + (f' {r["operator"]}' if r.get("operator") else "") +
            (f' #{r["round"] + 1}' if r.get("rounds", 1) > 1 else ""))


def heartbeat(a):
    """A request of kubelet's keep-alive loops (gpu-sim's heartbeat lanes): nothing the
    operator waits for."""
    return a["agent"].split(" ")[0].endswith("/heartbeats")


def stack_write(a):
    """A write to a Node by the simulated stack (DCM, the device plugin, kubelet's status
    reports), heartbeats apart."""
    return a["agent"].startswith("gpu-sim") and not heartbeat(a)


def quantile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def peak_count(times, width):
    """The most of `times` (sorted) within any span of `width` seconds."""
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - width:
            j += 1
        best = max(best, i - j + 1)
    return best


def request_rates(times, start, end):
    """Requests a second over [start, end] from their arrival times: the peak over any 1 s
    and any 10 s (sliding, not aligned), the mean over the span, and the count."""
    ts = sorted(t for t in times if start <= t <= end)
    span = max(end - start, 1.0)
    return {"count": len(ts), "seconds": span, "peak_1s": peak_count(ts, 1.0),
            "peak_10s": peak_count(ts, 10.0) / 10.0, "mean": len(ts) / span}


def rates_by_verb(requests, start, end):
    """request_rates of every request and of each verb (audit log entries)."""
    out = {"all": request_rates([a["t"] for a in requests], start, end)}
    for verb in sorted({a["verb"] for a in requests}):
        out[verb] = request_rates([a["t"] for a in requests if a["verb"] == verb], start, end)
    return out


def apiserver_requests():
    """apiserver_request_total by (verb, resource/subresource), resource requests only."""
    text = kubectl("get", "--raw", "/metrics")
    out = {}
    for _, labels, v in parse_metrics(text, ["apiserver_request_total"]):
        if not labels.get("resource"):
            continue
        res = labels["resource"] + ("/" + labels["subresource"] if labels.get("subresource") else "")
        key = (labels.get("verb", ""), res)
        out[key] = out.get(key, 0.0) + v
    return out


# -- the bench --

class Bench:
    def __init__(self, args):
        self.args = args
        self.n = args.nodes
        self.state = args.state
        # Where a crashed operator's core dump and its binary are kept: the state directory
        # goes with the cluster's teardown.
        self.cores = os.path.join(os.path.dirname(args.state), "cores")
        os.makedirs(self.cores, exist_ok=True)
        self.token_kubeconfig = os.environ["GPU_PARTITIONER_TOKEN_KUBECONFIG"]
        # The operator's credentials and user: the token user's, or the chart's
        # ServiceAccount's (--operator-sa).
        self.operator_kubeconfig = args.operator_kubeconfig or self.token_kubeconfig
        self.operator_user = args.operator_user or OPERATOR_USER
        self.cluster_dir = os.environ["GPU_PARTITIONER_CLUSTER_DIR"]
        self.audit_log = os.path.join(self.cluster_dir, "logs", "audit.log")
        self.sim_exe = os.path.join(args.sim_state, "gpu-sim")
        self.sim_pidfile = os.path.join(args.sim_state, "gpu-sim.pid")
        self.sim_scale = None
        self.nodes = []
        self.ds_grace = 30
        self.host_services = HOST_SERVICES
        self.runs = []
        self.plan_runs = []  # tools/lib/bench_plans.py
        self.manual = None
        self.scrapes = bench_real.Scrapes(self.cluster_dir)
        self.plain_sim = None
        self.churn = None

    # - the cluster's processes, for CPU figures -
    # --same-operator: (process, metrics URL, log, DCM config sync) once started.
    shared_operator = None

    def component_pids(self):
        pids = {}
        for c in ["kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"]:
            try:
                with open(os.path.join(self.cluster_dir, "run", c + ".pid")) as f:
                    pids[c] = int(f.read().strip())
            except (OSError, ValueError):
                pass
        pid = self.sim_pid()
        if pid:
            pids["gpu-sim"] = pid
        return pids

    def sim_pid(self):
        try:
            with open(self.sim_pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return None
        return pid if proc_argv0(pid) == self.sim_exe else None

    def restart_sim(self, scale):
        """gpu-sim at another time scale (it keeps what the GPUs run in annotations)."""
        pid = self.sim_pid()
        if pid:
            stop(pid)
        shutil.copy2(os.path.join(self.state, "gpu-sim"), self.sim_exe)
        # As tools/sim starts it (its README says why each flag); without heartbeats, on a
        # cluster without the node-lifecycle controller (tools/bench says why), unless
        # --node-lifecycle; with --jitter, each node's DCM and plugin delays its own.
        extra = [] if self.args.heartbeats else ["--no-heartbeats"]
        if self.args.jitter > 0:
            extra += ["--jitter", repr(self.args.jitter), "--jitter-seed", str(self.args.jitter_seed)]
        p = start([self.sim_exe, "--kubeconfig", os.environ["KUBECONFIG"], "--time-scale", repr(scale),
                   "--ready-label", "amd.com/gpu.ready=true", *extra],
                  os.path.join(self.args.sim_state, "gpu-sim.log"), own=False)
        with open(self.sim_pidfile + ".tmp", "w") as f:
            f.write(str(p.pid))
        os.replace(self.sim_pidfile + ".tmp", self.sim_pidfile)
        self.sim_scale = scale
        # Its watches list every node and pod before it acts.
        time.sleep(2 + self.n / 250)
        log(f"gpu-sim running at time scale {scale:g} (pid {p.pid})")

    # - setup -
    def setup(self):
        self.nodes = sorted(kubectl("get", "nodes", "-l", "nodepool=training-gpu", "-o",
                                    "jsonpath={.items[*].metadata.name}").split())
        if len(self.nodes) != self.n:
            die(f"expected {self.n} simulated nodes, found {len(self.nodes)}")
        grace = kubectl("-n", "kube-amd-gpu", "get", "daemonset", "amd-gpu-device-plugin", "-o",
                        "jsonpath={.spec.template.spec.terminationGracePeriodSeconds}").strip()
        self.ds_grace = min(int(grace or 30), 30)  # the simulated kubelet waits at most 30 s
        # Profiles for the two modes, with the counts healthy simulated nodes report.
        docs = []
        # The samples' payloads are there (tools/cluster); a compute-only change's target
        # is not among them.
        for name, dcm, payload, count in PROFILES:
            compute, memory = dcm.upper().split("-")
            docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": payload, "namespace": "kube-amd-gpu"},
                         "data": {"profile.json": json.dumps(
                             {"skippedGPUs": {"ids": []},
                              "profiles": [{"computePartition": compute, "memoryPartition": memory,
                                            "numGPUsAssigned": 8}]})}})
            docs.append({
                "apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningProfile",
                "metadata": {"name": name},
                "spec": {"displayName": name,
                         "targetSelector": {"matchLabels": {"gpu.vendor": "amd", "gpu.family": "mi300x"}},
                         "expectedResources": [{"name": "amd.com/gpu", "count": count}],
                         "verification": {"readyLabel": "amd.com/gpu.ready", "timeoutSeconds": 7200},
                         "operatorPayload": {"kind": "ConfigMap", "name": payload,
                                             "namespace": "kube-amd-gpu", "profileName": dcm}}})
        # Workloads: a Deployment of P replicas (one GPU each) per node's worth, spread by
        # the scheduler, each under a PodDisruptionBudget sized for the plan's parallelism:
        # a wave of maxParallel nodes takes maxParallel/N of a Deployment's pods on average;
        # the budget allows twice that, plus one (P at most). A drain then waits on a PDB
        # only when a Deployment's pods pile up in one wave (the report counts refusals).
        pods = self.args.pods_per_node
        self.pdb_max_unavailable = min(pods, 1 + math.ceil(2 * pods * max(self.parallel) / self.n))
        self.deployments = []
        # The eviction API lists every PodDisruptionBudget in the pod's namespace for each
        # eviction: with all of them in one namespace that list grows with the cluster.
        # --namespaces K spreads the Deployments over K namespaces, in turn.
        spaces = self.workload_namespaces()
        for space in spaces:
            if space != WORKLOADS:
                docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": space}})
        for i in range(self.n if pods > 0 else 0):
            replicas = pods
            name = f"bench-{i:04d}"
            space = spaces[i % len(spaces)]
            self.deployments.append(name)
            docs.append({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": space,
                             "labels": {"sim.gpu-partitioner.io/managed": "true"}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"automountServiceAccountToken": False,
                                               "nodeSelector": {"nodepool": "training-gpu"},
                                               "terminationGracePeriodSeconds": WORKLOAD_GRACE,
                                               "containers": [{"name": "worker", "image": "rocm/pytorch:sim",
                                                               "resources": {"requests": {"amd.com/gpu": "1", "cpu": "1"},
                                                                             "limits": {"amd.com/gpu": "1"}}}]}}}})
            docs.append({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": space,
                             "labels": {"sim.gpu-partitioner.io/managed": "true"}},
                "spec": {"maxUnavailable": self.pdb_max_unavailable,
                         "selector": {"matchLabels": {"app": name}}}})
        kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        self.restart_sim(self.args.time_scale)
        log(f"waiting for {self.n * self.args.pods_per_node} workload pods to run")
        deadline = time.time() + 300 + self.n
        while True:
            ready = 0
            out = kubectl("get", "deployments", "-A", "-l", "sim.gpu-partitioner.io/managed=true", "-o",
                          "jsonpath={range .items[*]}{.status.readyReplicas}{\"\\n\"}{end}")
            ready = sum(int(x) for x in out.split() if x.isdigit())
            if ready >= self.n * self.args.pods_per_node:
                break
            if time.time() > deadline:
                die(f"only {ready} of {self.n * self.args.pods_per_node} workload pods became ready")
            time.sleep(2)
        # Where the nodes start: the profile the sim reports now.
        log("workloads ready")
        if self.args.plain_nodes:
            self.setup_plain()

    def setup_plain(self):
        """Servers without GPUs and their pods (a second gpu-sim plays their kubelets,
        heartbeats included with --node-lifecycle), and with --churn another controller's
        traffic, as a ServiceAccount of its own (tools/lib/bench_churn.py)."""
        k, per = self.args.plain_nodes, self.args.plain_pods
        log(f"{k} servers without GPUs, {k * per} pods on them"
            + (f", another controller writing {self.args.churn:g} a second" if self.args.churn else ""))
        exe = os.path.join(self.state, "gpu-sim")
        self.plain_sim_log = os.path.join(self.state, "gpu-sim-plain.log")
        self.plain_sim = start([exe, "--kubeconfig", os.environ["KUBECONFIG"], "--kubelet-only",
                                "--node-selector", f"nodepool={bench_real.PLAIN_POOL}",
                                "--user-agent", "gpu-sim-plain",
                                *([] if self.args.heartbeats else ["--no-heartbeats"])], self.plain_sim_log)
        kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                      "items": bench_real.plain_objects(k, per)}))
        want = k * per + k
        deadline = time.time() + 300 + want / 5
        while True:
            out = kubectl("-n", bench_real.CHURN_NS, "get", "deployments", "-o",
                          "jsonpath={range .items[*]}{.status.readyReplicas}{\"\\n\"}{end}")
            ready = sum(int(x) for x in out.split() if x.isdigit())
            if ready >= want:
                break
            if time.time() > deadline:
                die(f"only {ready} of {want} pods on the plain nodes became ready")
            time.sleep(2)
        if self.args.churn > 0:
            token = kubectl("-n", bench_real.CHURN_NS, "create", "token", "bench-churn", "--duration", "24h").strip()
            server = kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").strip()
            self.churn_log = os.path.join(self.state, "bench-churn.log")
            out = open(self.churn_log, "a")
            self.churn = subprocess.Popen(
                [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_churn.py"),
                 server, os.path.join(self.cluster_dir, "pki", "ca.crt"), repr(self.args.churn), str(k)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, BENCH_CHURN_TOKEN=token))
            out.close()
            CHILDREN.append(self.churn)
        log("plain nodes ready")

    def workload_namespaces(self):
        k = min(self.args.namespaces, self.n)
        return [WORKLOADS] if k == 1 else [f"{WORKLOADS}-{j:03d}" for j in range(k)]

    # - one rollout -
    def node_seconds(self):
        """The simulated time one node needs at time scale 1: the workload pods' grace
        period, then (after the taint) the device plugin pod's, DCM's host services and
        mode change (--change), and the device plugin's restart."""
        return WORKLOAD_GRACE + self.ds_grace + self.host_services + DCM_CHANGE + PLUGIN_RESTART

    def dcm_config_map(self):
        """DCM's ConfigMap as the API server has it ({} when it cannot be read)."""
        try:
            return json.loads(kubectl("-n", "kube-amd-gpu", "get", "configmap", "default-dcm-config",
                                      "-o", "json", check=False))
        except ValueError:
            return {}

    def first_wave_wait(self, dcm_profile, config_map):
        """What the first wave waits at time scale 1 beyond its drain when DCM's config
        lacks the profile: the operator writes it as the first node drains, and the label
        waits until the change is --dcm-config-sync old. Nothing when DCM has it already
        (the bench's DCM config comes with both of its profiles)."""
        try:
            config = json.loads(config_map.get("data", {}).get("config.json", ""))
            held = dcm_profile in config.get("gpu-config-profiles", {})
        except (ValueError, AttributeError):
            held = False
        return 0.0 if held else max(0.0, DCM_CONFIG_SYNC - (WORKLOAD_GRACE + self.ds_grace))

    def wait_for_dcm_config(self, sync, config_map):
        """Waits until DCM's config is older than --dcm-config-sync: the operator labels no
        node until kubelet can have delivered a config made or changed since (a cluster just
        set up, the last rollout's write), and that wait belongs to no rollout."""
        meta = config_map.get("metadata", {})
        stamps = [meta.get("creationTimestamp") or "",
                  meta.get("annotations", {}).get("infrastructure.silogen.ai/config-written-at", "")]
        times = [t for t in (parse_time(x) for x in stamps) if t is not None]
        if not times:
            return
        left = max(times) + sync + 1 - time.time()
        if left > 0:
            log(f"waiting {left:.0f} s for DCM's config to be older than --dcm-config-sync")
            time.sleep(left)

    def keep_core(self, op, tag, binary):
        """A crashed operator's core dump (core or core.PID in self.cores), renamed for
        `tag`, with a copy of the binary beside it: how to read it, or ""."""
        found = [os.path.join(self.cores, n) for n in (f"core.{op.pid}", "core")
                 if os.path.exists(os.path.join(self.cores, n))]
        if op.returncode is None or op.returncode >= 0 or not found:
            return ""
        core = os.path.join(self.cores, f"core-{tag}-{op.pid}")
        os.replace(found[0], core)
        exe = os.path.join(self.cores, f"gpu-partitioner-{tag}")
        shutil.copyfile(binary or os.path.join(self.state, "gpu-partitioner"), exe)
        return f"; its core dump: gdb {exe} {core}"

    def start_operator(self, tag, sync, api_qps, binary=None):
        """A fresh operator (leader election on, as the token user) that is ready: its
        process, its metrics URL and its log. `api_qps` None leaves the operator's default
        rate limit; --api-burst goes with it when given."""
        oplog = os.path.join(self.state, f"operator-{tag}.log")
        # A kept cluster's earlier bench left its own log under the same name.
        if os.path.exists(oplog):
            os.remove(oplog)
        # Port 0: the operator binds what the kernel gives and writes it down, so no port
        # picked here can be taken by another process before the operator binds it.
        bound = os.path.join(self.state, f"operator-{tag}.addresses")
        if os.path.exists(bound):
            os.remove(bound)
        limit = []
        if api_qps is not None:
            limit += ["--api-qps", str(api_qps)]
        if self.args.api_burst is not None:
            limit += ["--api-burst", str(self.args.api_burst)]
        if self.operator_user != OPERATOR_USER:
            # As the chart runs it: the ConfigMaps its Role lets it write.
            limit += ["--dcm-configmaps", "default-dcm-config,config-manager-config,dcm-st"]
        op = start([binary or os.path.join(self.state, "gpu-partitioner"), "--kubeconfig", self.operator_kubeconfig,
                    "--leader-elect", "--lease-namespace", "kube-amd-gpu",
                    "--dcm-config", "kube-amd-gpu/default-dcm-config",
                    "--dcm-config-sync", repr(sync),
                    "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0",
                    "--bound-addresses-file", bound, *limit], oplog,
                   cwd=self.cores, core=True)
        metrics_url = health_url = None
        # Its watches list every node and pod before it is ready.
        patience = 120 + self.n / 50
        deadline = time.time() + patience
        while True:
            if health_url is None and os.path.exists(bound):
                addresses = dict(line.split(" ", 1) for line in
                                 open(bound).read().splitlines() if " " in line)
                if "metrics" in addresses and "health" in addresses:
                    metrics_url = "http://" + addresses["metrics"].strip()
                    health_url = "http://" + addresses["health"].strip()
            try:
                if health_url and http_get(health_url + "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if op.poll() is not None:
                die(f"the operator exited ({op.returncode}); log: {oplog}")
            if time.time() > deadline:
                die(f"the operator is not ready after {patience:.0f} s; log: {oplog}")
            time.sleep(0.2)
        return op, metrics_url, oplog

    @staticmethod
    def operator_rate_limit(oplog):
        """The operator's client-side rate limit as its log states it at start."""
        try:
            with open(oplog) as f:
                for line in f:
                    m = re.search(r"limited to (\S+) a second, bursts of (\d+)", line)
                    if m:
                        return {"qps": float(m.group(1)), "burst": int(m.group(2))}
                    if "not rate limited" in line:
                        return {"qps": 0, "burst": None}
        except OSError:
            pass
        return None

    def rollout(self, index, max_parallel, round_=0, operator=("", None)):
        waves = math.ceil(self.n / max_parallel)
        per_node = self.node_seconds()
        scale = self.args.time_scale
        if waves * per_node * scale > self.args.max_run_seconds:
            exact = self.args.max_run_seconds / (waves * per_node)
            step = 10 ** (math.floor(math.log10(exact)) - 1)  # two significant digits, down
            scale = round(math.floor(exact / step) * step, 12)
        if scale != self.sim_scale:
            self.restart_sim(scale)
        profile = PROFILES[index % 2]
        config_map = self.dcm_config_map()
        wait = self.first_wave_wait(profile[1], config_map)
        plan = f"bench-{index + 1}-mp{max_parallel}" + (f"-{operator[0]}" if operator[0] else "")
        budget = self.pdb_max_unavailable
        run = {"plan": plan, "max_parallel": max_parallel, "nodes": self.n, "waves": waves,
               "time_scale": scale, "node_seconds": per_node * scale,
               "ideal_seconds": (waves * per_node + wait) * scale,
               "profile": profile[0],
               "pdb_max_unavailable": budget, "pods_per_node": self.args.pods_per_node,
               "round": round_, "rounds": self.args.repeat, "operator": operator[0],
               "operator_binary": operator[1]}
        log(f"rollout {index + 1}: {self.n} nodes to {profile[1]}, maxParallel {max_parallel}, "
            f"time scale {scale:g} ({run['node_seconds']:.2f} s per node, ideal "
            f"{run['ideal_seconds']:.0f} s)")
        sync = DCM_CONFIG_SYNC * scale
        self.wait_for_dcm_config(sync, config_map)

        shared = self.args.same_operator
        if shared and self.shared_operator is not None and self.shared_operator[3] != sync:
            die(f"--same-operator: rollout {index + 1} runs at time scale {scale:g}, whose DCM "
                "config sync differs from the running operator's; give a --max-run-seconds "
                "that fits every rollout at --time-scale")
        if shared and self.shared_operator is not None:
            op, metrics_url, oplog, _ = self.shared_operator
        else:
            op, metrics_url, oplog = self.start_operator("shared" if shared else plan, sync,
                                                         self.args.api_qps[0], operator[1])
            if shared:
                self.shared_operator = (op, metrics_url, oplog, sync)
        run["rate_limit"] = self.operator_rate_limit(oplog)
        run["same_operator"] = shared
        # The operator's counters and histograms before the plan: with one operator for
        # every rollout, each run's figures are what changed during it.
        om0 = parse_metrics(http_get(metrics_url + "/metrics")[1], ["gpu_partitioner_"]) if shared else []
        # Its memory with its caches filled and no plan (after the plan before, if any).
        run["rss_idle_kb"] = proc_memory_kb(op.pid, "VmRSS")
        run["heap_idle"] = heap_of(http_get(metrics_url + "/metrics")[1])
        heap_peak = None

        # Where every pod is, as it moves (the audit log names pods, not their nodes).
        podmap_file = os.path.join(self.state, f"pods-{plan}.txt")
        # The API server ends a watch after 30 to 60 minutes, and kubectl with it: the loop
        # starts it again, or pods created after that are not placed on any node.
        podwatch = subprocess.Popen(
            ["bash", "-c", 'while :; do kubectl get pods -A --watch -o "$1"; sleep 0.5; done', "podwatch",
             "jsonpath={.metadata.namespace}/{.metadata.name} {.spec.nodeName}{\"\\n\"}"],
            stdout=open(podmap_file, "w"), stderr=subprocess.DEVNULL, start_new_session=True)
        CHILDREN.append(podwatch)
        # When each change reached a watcher of the bench's own: splits a reaction into
        # the API server's delivery and the operator's part. A second watch of the pods,
        # beside the one above: this one decodes only deletions, so that placing every
        # pod (the other's work, in kubectl) never delays the stamp of a deletion.
        stamps_file = os.path.join(self.state, f"stamps-{plan}.txt")
        stamps = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "watchstamp.py"),
                                   stamps_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        CHILDREN.append(stamps)
        before = apiserver_requests()
        apf0, etcd0 = self.scrape_apf(), self.scrape_etcd()
        pressure0, ticks0 = bench_real.cpu_pressure(), bench_real.cpu_ticks()
        inqueue_peaks = {}
        last_scrape = 0.0
        pids = self.component_pids()
        cpu0 = {c: proc_cpu_seconds(p) for c, p in pids.items()}
        op_cpu0 = proc_cpu_seconds(op.pid)

        doc = {"apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningPlan",
               "metadata": {"name": plan},
               "spec": {"rollout": {"maxParallel": max_parallel, "maxUnavailable": max_parallel,
                                    "drainPolicy": {"enabled": True, "timeoutSeconds": 7200,
                                                    "evictionKind": "Eviction", "respectPDB": True}},
                        "verification": {"gpuReadyLabel": "amd.com/gpu.ready",
                                         "requirePluginResources": ["amd.com/gpu"], "timeoutSeconds": 7200},
                        "partitionings": [{"name": "all",
                                           "selector": {"matchLabels": {"nodepool": "training-gpu"}},
                                           "profileRef": {"kind": "PartitioningProfile", "name": profile[0]}}]}}
        t0 = time.time()
        kubectl("create", "-f", "-", input=json.dumps(doc))
        samples = []
        # The most requests seen waiting, per rate limiter lane and io pool (0.5 s samples).
        queue_peaks = {}
        limit = self.args.stop_after or max(600, 3 * run["ideal_seconds"] + 300)
        outcome = "timeout"
        while time.time() - t0 < limit:
            t = time.time()
            phases = {}
            try:
                _, text = http_get(metrics_url + "/metrics")
                heap = heap_of(text)
                if heap and (heap_peak is None or heap["in_use"] > heap_peak["in_use"]):
                    heap_peak = heap
                for n, labels, v in parse_metrics(text, ["gpu_partitioner_nodes",
                                                         "gpu_partitioner_api_rate_limiter_waiting",
                                                         "gpu_partitioner_io_queue_depth"]):
                    if n == "gpu_partitioner_nodes" and labels.get("plan") == plan:
                        phases[labels["phase"]] = int(v)
                    elif n == "gpu_partitioner_api_rate_limiter_waiting_requests":
                        key = "lane " + labels.get("lane", "")
                        queue_peaks[key] = max(queue_peaks.get(key, 0), int(v))
                    elif n == "gpu_partitioner_io_queue_depth":
                        key = "pool " + labels.get("pool", "")
                        queue_peaks[key] = max(queue_peaks.get(key, 0), int(v))
            except OSError:
                pass
            samples.append({"t": t - t0, "phases": phases, "rss_kb": proc_memory_kb(op.pid, "VmRSS"),
                            "cpu": proc_cpu_seconds(op.pid)})
            if op.poll() is not None:
                outcome = "operator exited"
                break
            if phases.get("Failed", 0) > 0:
                outcome = "a node failed"
                break
            if phases.get("Succeeded", 0) == self.n:
                outcome = "completed"
                break
            if t - last_scrape >= 5.0:
                # Requests waiting in API Priority and Fairness's queues: a gauge, sampled.
                last_scrape = t
                try:
                    for key, v in bench_real.inqueue(self.scrapes.apiserver(
                            ("apiserver_flowcontrol_current_inqueue_requests",))).items():
                        inqueue_peaks[key] = max(inqueue_peaks.get(key, 0), v)
                except OSError:
                    pass
            time.sleep(max(0.0, 0.5 - (time.time() - t)))
        t_done = time.time()
        if outcome == "operator exited":
            # Nothing to scrape, and the teardown removes the state directory: keep the
            # operator's log where the report would have gone.
            os.makedirs(self.args.out, exist_ok=True)
            kept = os.path.join(self.args.out, f"{datetime.date.today().isoformat()}-{self.n}-{plan}-operator.log")
            shutil.copyfile(oplog, kept)
            die(f"rollout {index + 1}: the operator exited ({op.returncode}) after {t_done - t0:.0f} s; "
                f"its log: {kept}{self.keep_core(op, plan, operator[1])}")
        _, text = http_get(metrics_url + "/metrics")
        after = apiserver_requests()
        run["outcome"] = outcome
        run["poll_seconds"] = t_done - t0
        run["t_create"] = t0
        run["t_done"] = t_done
        run["samples"] = samples
        run["operator_cpu_seconds"] = (proc_cpu_seconds(op.pid) or 0) - (op_cpu0 or 0)
        run["operator_peak_rss_kb"] = proc_memory_kb(op.pid, "VmHWM")
        # This plan's own peak (0.5 s samples): VmHWM is the process's since it began.
        run["rss_peak_kb"] = max((x["rss_kb"] or 0 for x in samples), default=0)
        run["heap_peak"] = heap_peak
        run["component_cpu_seconds"] = {c: (proc_cpu_seconds(p) or 0) - (cpu0[c] or 0)
                                        for c, p in pids.items() if cpu0.get(c) is not None}
        om = metric_delta(parse_metrics(text, ["gpu_partitioner_"]), om0)
        q, count, total = histogram_quantiles(om, "gpu_partitioner_reaction_seconds", [0.5, 0.99])
        run["reaction_metric"] = {"p50": q[0.5], "p99": q[0.99], "count": count,
                                  "mean": total / count if count else None}
        # The histogram's top finite bucket: reactions above it have no value of their own.
        tops = {}
        for n, labels, v in om:
            if n == "gpu_partitioner_reaction_seconds_bucket" and labels.get("le") != "+Inf":
                tops[float(labels["le"])] = tops.get(float(labels["le"]), 0.0) + v
        if tops:
            run["reaction_metric"]["top_bucket"] = max(tops)
            run["reaction_metric"]["above_top"] = int(count - tops[max(tops)])
        by_write = {}
        for n, labels, v in om:
            if n == "gpu_partitioner_reaction_seconds_count":
                by_write[labels["write"]] = int(v)
        run["reaction_metric"]["by_write"] = by_write
        quantiles_by_write = {}
        for w in by_write:
            qw, _, _ = histogram_quantiles([x for x in om if x[1].get("write") == w],
                                           "gpu_partitioner_reaction_seconds", [0.5, 0.99])
            quantiles_by_write[w] = {"p50": qw[0.5], "p99": qw[0.99]}
        run["reaction_metric"]["quantiles_by_write"] = quantiles_by_write
        # The client-side rate limiter's waits by lane (an operator without lanes: "").
        limiter = {}
        for lane in sorted({labels.get("lane", "") for n, labels, _ in om
                            if n == "gpu_partitioner_api_rate_limiter_duration_seconds_count"}):
            ql, cl, tl = histogram_quantiles([x for x in om if x[1].get("lane", "") == lane],
                                             "gpu_partitioner_api_rate_limiter_duration_seconds",
                                             [0.5, 0.99])
            limiter[lane] = {"p50": ql[0.5], "p99": ql[0.99], "count": cl, "mean": tl / cl if cl else None}
        run["rate_limiter_waits"] = limiter
        run["queue_peaks"] = queue_peaks
        run["operator_requests"] = {}
        for n, labels, v in om:
            if n == "gpu_partitioner_api_requests_total":
                key = f'{labels["verb"]} {labels["resource"]}'
                run["operator_requests"][key] = run["operator_requests"].get(key, 0) + int(v)
        run["evictions"] = {labels["result"]: int(v) for n, labels, v in om
                            if n == "gpu_partitioner_evictions_total"}
        run["apiserver_requests"] = {f"{k[0]} {k[1]}": after.get(k, 0) - before.get(k, 0)
                                     for k in after if after.get(k, 0) - before.get(k, 0) > 0}
        log(f"rollout {index + 1}: {outcome} after {t_done - t0:.1f} s (poll); operator CPU "
            f"{run['operator_cpu_seconds']:.1f} s, peak RSS {(run['operator_peak_rss_kb'] or 0) / 1024:.1f} MiB")

        # Clean up for the next plan: items go (their finalizers need the operator), then
        # the operator, then the pod watch. The run's requests are counted until the plan
        # and its items are gone.
        kubectl("delete", "partitioningplan", plan, "--wait=false")
        kubectl("delete", "nodepartitionings", "--all", "--wait=false", check=False)
        deadline = time.time() + 600
        while (kubectl("get", "nodepartitionings", "-o", "name").strip() or
               kubectl("get", "partitioningplan", plan, "-o", "name", "--ignore-not-found").strip()):
            if time.time() > deadline:
                log("warning: the plan or its NodePartitionings still there after 600 s")
                run["cleanup"] = "incomplete after 600 s"
                break
            time.sleep(1)
        run["t_gone"] = time.time()
        run["cleanup_seconds"] = run["t_gone"] - t_done
        seconds = run["t_gone"] - t0
        run["machine"] = bench_real.machine_figures(pressure0, bench_real.cpu_pressure(), ticks0,
                                                    bench_real.cpu_ticks(), seconds)
        apf1, etcd1 = self.scrape_apf(), self.scrape_etcd()
        if apf0 is not None and apf1 is not None:
            run["apf"] = bench_real.apf_figures(apf0, apf1, inqueue_peaks)
        if etcd0 is not None and etcd1 is not None:
            run["etcd"] = bench_real.etcd_figures(etcd0, etcd1, self.scrapes.fsync)
        # What the operator keeps once the plan and its items are gone: it should hand back
        # what the plan took (its caches of nodes and pods stay).
        time.sleep(10)
        run["rss_after_gone_kb"] = proc_memory_kb(op.pid, "VmRSS")
        try:
            run["heap_after_gone"] = heap_of(http_get(metrics_url + "/metrics")[1])
        except OSError:
            run["heap_after_gone"] = None
        if not shared:
            stop(op.pid)
            op.wait()
        os.killpg(podwatch.pid, signal.SIGTERM)
        podwatch.wait()
        os.killpg(stamps.pid, signal.SIGTERM)
        stamps.wait()
        run["podmap_file"] = podmap_file
        run["stamps_file"] = stamps_file
        run["operator_log"] = oplog
        self.runs.append(run)
        return outcome == "completed"

    def scrape_apf(self):
        try:
            return self.scrapes.apiserver()
        except OSError as e:
            log(f"warning: the API server's /metrics: {e}")
            return None

    def scrape_etcd(self):
        try:
            return self.scrapes.etcd()
        except OSError as e:
            log(f"warning: etcd's /metrics: {e}")
            return None

    # - the manual procedure -
    def manual_procedure(self, scale):
        k = min(self.args.manual_nodes, self.n)
        if k <= 0:
            return
        if scale != self.sim_scale:
            self.restart_sim(scale)
        # The profile the last rollout did not leave.
        profile = PROFILES[len(self.runs) % 2]
        nodes = self.nodes[:k]
        log(f"manual procedure (kubectl, one node at a time) on {k} nodes to {profile[1]}, "
            f"time scale {scale:g}")
        script = os.path.join(ROOT, "tools", "lib", "bench_manual.sh")
        env = dict(os.environ, KUBECONFIG=self.token_kubeconfig)
        t0 = time.time()
        per_node = []
        for node in nodes:
            s = time.time()
            r = subprocess.run(["bash", script, node, profile[1], str(profile[3])], env=env,
                               capture_output=True, text=True)
            if r.returncode != 0:
                log(f"manual procedure failed on {node}: {r.stderr.strip()[-400:]}")
                self.manual = {"outcome": f"failed on {node}", "nodes": k}
                return
            per_node.append(time.time() - s)
        t1 = time.time()
        ideal = self.node_seconds() * scale
        self.manual = {"outcome": "completed", "nodes": k, "time_scale": scale, "t_create": t0,
                       "t_done": t1, "seconds": t1 - t0, "per_node": per_node,
                       "ideal_node_seconds": ideal, "profile": profile[1]}
        log(f"manual procedure: {t1 - t0:.1f} s for {k} nodes")

    # - the audit log -
    def read_audit(self):
        windows = [(r["t_create"] - 0.5, r.get("t_gone", r["t_done"]) + 2.0, r) for r in self.runs + self.plan_runs]
        if self.manual and self.manual.get("outcome") == "completed":
            windows.append((self.manual["t_create"] - 0.5, self.manual["t_done"] + 1.0, self.manual))
        for _, _, w in windows:
            w["_audit"] = []
        if not os.path.exists(self.audit_log):
            return
        with open(self.audit_log) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                verb = e.get("verb", "")
                stage = e.get("stage")
                if (verb == "watch" and stage != "ResponseStarted") or (verb != "watch" and stage != "ResponseComplete"):
                    continue
                t = parse_time(e.get("requestReceivedTimestamp", ""))
                if t is None:
                    continue
                for lo, hi, w in windows:
                    if lo <= t <= hi:
                        ref = e.get("objectRef", {})
                        w["_audit"].append({
                            "t": t, "done": parse_time(e.get("stageTimestamp", "")) or t,
                            "verb": verb, "user": e.get("user", {}).get("username", ""),
                            "agent": e.get("userAgent", ""),
                            "resource": ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else ""),
                            "ns": ref.get("namespace", ""), "name": ref.get("name", ""),
                            "code": e.get("responseStatus", {}).get("code", 0)})
                        break

    def analyse_run(self, run):
        everything = sorted(run.pop("_audit", []), key=lambda a: a["t"])
        op_user = self.operator_user
        is_op = lambda a: a["user"] == op_user and a["agent"].startswith("gpu-partitioner/")
        self.analyse_until_gone(run, everything, is_op)
        # The rollout's own figures: up to its completion, the clean-up apart.
        audit = [a for a in everything if a["t"] <= run["t_done"] + 2.0]
        writes = {"create", "update", "patch", "delete", "deletecollection"}
        # Where each pod was: the watch's lines.
        pod_node = {}
        try:
            with open(run["podmap_file"]) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2:
                        pod_node[parts[0]] = parts[1]
        except OSError:
            pass
        plan_create = [a for a in audit if a["resource"] == "partitioningplans" and a["verb"] == "create"
                       and a["name"] == run["plan"]]
        start = plan_create[0]["t"] if plan_create else run["t_create"]
        node_of = lambda a: (a["name"] if a["resource"].split("/")[0] == "nodes"
                             else pod_node.get(f'{a["ns"]}/{a["name"]}') if a["resource"].split("/")[0] == "pods"
                             else None)
        nodes = set(self.nodes)
        op = [a for a in audit if is_op(a)]
        op_node_writes = [a for a in op if a["verb"] in writes and a["resource"].startswith("nodes")]
        end = max((a["done"] for a in op_node_writes), default=run["t_done"])
        run["wall_seconds"] = end - start
        run["overhead_seconds"] = run["wall_seconds"] - run["ideal_seconds"]
        run["overhead_percent"] = 100.0 * run["overhead_seconds"] / run["ideal_seconds"]
        run["overhead_per_wave"] = run["overhead_seconds"] / run["waves"]
        # Requests by verb, and writes by resource, per node; the Lease (leader election)
        # apart, as it does not grow with nodes.
        in_run = [a for a in op if a["t"] <= end + 1.0]
        by_verb, writes_by = {}, {}
        lease = 0
        for a in in_run:
            if a["resource"] == "leases":
                lease += 1
                continue
            by_verb[a["verb"]] = by_verb.get(a["verb"], 0) + 1
            if a["verb"] in writes:
                key = f'{a["verb"]} {a["resource"]}'
                writes_by[key] = writes_by.get(key, 0) + 1
        run["audit_requests_per_node"] = {k: v / self.n for k, v in sorted(by_verb.items())}
        run["audit_writes_per_node"] = {k: v / self.n for k, v in sorted(writes_by.items())}
        run["audit_writes_per_node_total"] = sum(writes_by.values()) / self.n
        # The API server's time for the operator's writes, evictions apart: an eviction
        # updates the PDB's status and, when that conflicts, the API server retries it
        # after 500 ms.
        ev = [a["done"] - a["t"] for a in in_run if a["resource"] == "pods/eviction"]
        other = [a["done"] - a["t"] for a in in_run if a["verb"] in writes and a["resource"] != "pods/eviction"]
        run["write_latency"] = {"eviction_p50": quantile(ev, 0.5), "eviction_p99": quantile(ev, 0.99),
                                "other_p50": quantile(other, 0.5), "other_p99": quantile(other, 0.99)}
        run["audit_requests_per_node_total"] = sum(by_verb.values()) / self.n
        # How fast they came (the client-side rate limit bounds this; the Lease apart).
        run["request_rate"] = rates_by_verb([a for a in in_run if a["resource"] != "leases"], start, end)
        run["lease_requests"] = lease
        # Reaction latency as the API server saw it: for each request of the operator on a
        # node (or its pods) that follows a write by someone else (gpu-sim as DCM, kubelet
        # or device plugin; the taint manager) since the operator's previous request on that
        # node: from that write's completion to the request's arrival.
        last_op, last_ext, first_op, last_op_write = {}, {}, {}, {}
        reactions = []
        for a in audit:
            node = node_of(a)
            if node not in nodes:
                continue
            if is_op(a):
                if node in last_op and node in last_ext and last_ext[node] > last_op[node]:
                    reactions.append(a["t"] - last_ext[node])
                last_op[node] = a["t"]
                first_op.setdefault(node, a["t"])
                if a["verb"] in writes and a["resource"].startswith("nodes"):
                    last_op_write[node] = a["done"]
            elif (a["verb"] in writes and a["resource"].startswith("nodes") and stack_write(a)) or \
                    (a["verb"] == "delete" and a["resource"] == "pods"):
                # What the operator waits for: the node's labels, taints or status, written
                # by gpu-sim (as DCM, the device plugin, kubelet); a pod on it gone.
                last_ext[node] = max(last_ext.get(node, 0.0), a["done"])
        run["reaction_audit"] = {"p50": quantile(reactions, 0.5), "p99": quantile(reactions, 0.99),
                                 "max": max(reactions) if reactions else None, "count": len(reactions)}
        # Per node, from the operator's first request to its last write (the uncordon);
        # and, one node at a time, the hand-over from one node's last write to the next's first.
        spans = [last_op_write[n] - first_op[n] for n in first_op if n in last_op_write]
        run["node_span_mean"] = sum(spans) / len(spans) if spans else None
        if run["max_parallel"] == 1:
            order = sorted((first_op[n], n) for n in first_op if n in last_op_write)
            gaps = [order[i + 1][0] - last_op_write[order[i][1]] for i in range(len(order) - 1)]
            run["handover"] = {"p50": quantile(gaps, 0.5), "p99": quantile(gaps, 0.99),
                               "mean": sum(gaps) / len(gaps) if gaps else None}
        run["first_write_seconds"] = (min(first_op.values()) - start) if first_op else None
        # The operator's status writes, by node: a reaction that changes a node's phase
        # first writes the status (write-ahead), then the node.
        prefix = run["plan"] + "-"
        statuses = {}
        for a in op:
            if a["resource"] == "nodepartitionings/status" and a["name"].startswith(prefix):
                statuses.setdefault(a["name"][len(prefix):], []).append(a)
        run["breakdown"] = self.breakdown(run, audit, is_op, node_of, statuses,
                                          read_stamps(run.get("stamps_file")))
        # The audit log's reaction figure is of the reactions the metric counts (the four a
        # run waits for, found for the nodes of the breakdown); the figure over every request
        # after any other party's write (eviction retries that wait for a budget among
        # them) is kept beside it.
        run["reaction_audit_any"] = run["reaction_audit"]
        if run["breakdown"] and run["breakdown"].get("waited", {}).get("count"):
            run["reaction_audit"] = run["breakdown"]["waited"]
        self.measured_ideal(run, first_op)

    def measured_ideal(self, run, first_op):
        """The ideal schedule from the simulated stack's measured times per node (DCM from
        the profile label to its answer, the plugin from the untaint to its report; the
        grace periods as configured), nodes taken in the operator's order, each starting
        as soon as fewer than maxParallel are in flight. Nodes the breakdown missed take
        the median of the measured ones."""
        sc = run["time_scale"]
        m = (run.get("breakdown") or {}).pop("measured", None) or {}
        if not m:
            return
        dcm = [x["dcm"] for x in m.values()]
        plugin = [x["plugin"] for x in m.values()]
        run["measured_dcm"] = bench_real.spread(dcm)
        run["measured_plugin"] = bench_real.spread(plugin)
        run["configured_dcm"] = (self.host_services + DCM_CHANGE) * sc
        run["configured_plugin"] = PLUGIN_RESTART * sc
        factors = bench_real.jitter_factors(os.path.join(self.args.sim_state, "gpu-sim.log"))
        if factors:
            # Measured over what the node's jitter factor says DCM should take: gpu-sim's
            # lag (its 50 ms tick, the write) on top of its own delay.
            ratios = [m[n]["dcm"] / (run["configured_dcm"] * factors[n][0]) for n in m if n in factors]
            run["measured_dcm_over_jittered"] = bench_real.spread(ratios)
        graces = (WORKLOAD_GRACE + self.ds_grace) * sc
        mid_dcm, mid_plugin = statistics.median(dcm), statistics.median(plugin)
        order = sorted(first_op, key=lambda n: first_op[n])
        order += [n for n in self.nodes if n not in first_op]
        durations = [graces + m.get(n, {}).get("dcm", mid_dcm) + m.get(n, {}).get("plugin", mid_plugin)
                     for n in order]
        ideal = bench_real.list_schedule(durations, run["max_parallel"])
        run["ideal_measured_seconds"] = ideal
        run["ideal_measured_nodes"] = len(m)
        if run.get("wall_seconds") is not None and ideal > 0:
            run["overhead_measured_seconds"] = run["wall_seconds"] - ideal
            run["overhead_measured_percent"] = 100.0 * (run["wall_seconds"] - ideal) / ideal

    def analyse_until_gone(self, run, audit, is_op):
        """Every client's requests from the plan's creation until it and its items were
        gone, and the operator's requests per node over that span."""
        start = run["t_create"]
        plan_create = [a for a in audit if a["resource"] == "partitioningplans" and a["verb"] == "create"
                       and a["name"] == run["plan"]]
        if plan_create:
            start = plan_create[0]["t"]
        end = run.get("t_gone", run["t_done"])
        run["clients"] = bench_real.clients(audit, start, end, self.operator_user)
        run["clients_span"] = end - start
        run["audit_reads_logged"] = "every client" if self.args.realistic else "the operator's only"
        mine = [a for a in audit if is_op(a) and start <= a["t"] <= end and a["resource"] != "leases"]
        by_verb = {}
        for a in mine:
            by_verb[a["verb"]] = by_verb.get(a["verb"], 0) + 1
        run["requests_until_gone_per_node"] = len(mine) / self.n
        run["requests_until_gone_by_verb"] = {k: v / self.n for k, v in sorted(by_verb.items())}
        apf = run.get("apf") or {}
        ops = [f for f in apf.values() if f.get("flow_schema") == "service-accounts"]
        if self.operator_user != OPERATOR_USER and ops:
            run["operator_apf"] = ops[0]

    def breakdown(self, run, audit, is_op, node_of, statuses, stamps):
        """Where one node's time goes, from the audit log: the simulated waits (at their
        configured length), the other parties' lag beyond them (gpu-sim's 50 ms tick, the
        taint manager), the operator's reactions and its writes. Means over the nodes whose
        every step was found."""
        sc = run["time_scale"]
        per = {}
        for a in audit:
            node = node_of(a)
            if node in self.nodes:
                per.setdefault(node, []).append(a)
        parts = {}
        reaction_split = {}
        watch_split = {}
        measured = {}
        found = 0
        for node, events in per.items():
            try:
                op = lambda a: is_op(a)
                nodew = lambda a: a["resource"].startswith("nodes") and a["verb"] in ("patch", "update")
                i = 0

                def next_where(pred, after):
                    for a in events:
                        if a["t"] >= after and pred(a):
                            return a
                    raise LookupError

                cordon = next_where(lambda a: op(a) and nodew(a), 0)
                evs = [a for a in events if op(a) and a["resource"] == "pods/eviction"]
                last_ev = max(a["done"] for a in evs)
                gone = [a for a in events if not op(a) and a["verb"] == "delete" and a["resource"] == "pods"
                        and a["ns"] != "kube-amd-gpu" and a["user"] == "admin"]
                last_gone = max(gone, key=lambda a: a["done"])
                pods_gone = last_gone["done"]
                taint0 = next_where(op, pods_gone + 1e-9)
                taint1 = next_where(lambda a: op(a) and nodew(a), taint0["t"])
                kcm = next_where(lambda a: not op(a) and a["verb"] == "delete" and a["ns"] == "kube-amd-gpu",
                                 taint1["done"])
                ds_gone = next_where(lambda a: a["user"] == "admin" and a["verb"] == "delete" and a["ns"] == "kube-amd-gpu",
                                     kcm["done"])
                label = next_where(lambda a: op(a) and nodew(a), ds_gone["done"])
                dcm = next_where(lambda a: not op(a) and nodew(a) and stack_write(a), label["done"])
                untaint0 = next_where(op, dcm["done"])
                untaint1 = next_where(lambda a: op(a) and nodew(a), untaint0["t"])
                uncordon = next_where(lambda a: op(a) and nodew(a), untaint1["done"])
                report = max((a for a in events
                              if not op(a) and nodew(a) and stack_write(a)
                              and untaint1["done"] <= a["done"] <= uncordon["t"]),
                             key=lambda a: a["done"])
                plugin = report["done"]
            except (LookupError, ValueError):
                continue
            found += 1
            # The simulated stack's own time on this node, as measured: DCM from the
            # profile label to its answer, the plugin from the untaint to its report.
            measured[node] = {"dcm": dcm["done"] - label["done"], "plugin": plugin - untaint1["done"],
                              "start": cordon["t"]}
            # Each reaction in three parts: until the write-ahead status write arrives
            # (the watch's delivery, the operator's step, the status writers' queue), the
            # status write itself, and from its end to the node write (the node writers'
            # queue). A reaction with no status write is all in the first part.
            for kind, cause, write in [("pods gone", last_gone, taint0),
                                       ("plugin pod gone", ds_gone, label),
                                       ("DCM's answer", dcm, untaint0),
                                       ("plugin's report", report, uncordon)]:
                trigger = cause["done"]
                # The same reaction, split at the moment the change reached the bench's
                # own watch: the API server's delivery before it, the operator's part after.
                seen = watch_arrival(stamps, cause, write, node)
                if seen is not None:
                    watch_split.setdefault(kind, []).append((seen - trigger, write["t"] - seen))
                ahead = [a for a in statuses.get(node, []) if trigger <= a["t"] and a["done"] <= write["t"]]
                split = reaction_split.setdefault(kind, [])
                if ahead:
                    split.append((write["t"] - trigger, ahead[0]["t"] - trigger,
                                  ahead[-1]["done"] - ahead[0]["t"], write["t"] - ahead[-1]["done"]))
                else:
                    split.append((write["t"] - trigger, write["t"] - trigger, 0.0, 0.0))
            steps = {
                "operator: cordon and evictions (writes)": last_ev - cordon["t"],
                "simulated: workload pods' grace": WORKLOAD_GRACE * sc,
                "gpu-sim lag: pods deleted after their grace": pods_gone - last_ev - WORKLOAD_GRACE * sc,
                "operator: reaction to the pods gone": taint0["t"] - pods_gone,
                "operator: taint (PATCH; a GET first when the Node moved on)": taint1["done"] - taint0["t"],
                "taint manager: device plugin pod evicted": kcm["done"] - taint1["done"],
                "simulated: device plugin pod's grace": self.ds_grace * sc,
                "gpu-sim lag: plugin pod deleted after its grace": ds_gone["done"] - kcm["done"] - self.ds_grace * sc,
                "operator: reaction to the plugin pod gone": label["t"] - ds_gone["done"],
                "operator: profile label (PATCH)": label["done"] - label["t"],
                "simulated: DCM's host services": self.host_services * sc,
                f"simulated: DCM's {CHANGE}-mode change": DCM_CHANGE * sc,
                "gpu-sim lag: DCM's answer": (dcm["done"] - label["done"]
                                              - (self.host_services + DCM_CHANGE) * sc),
                "operator: reaction to DCM's answer": untaint0["t"] - dcm["done"],
                "operator: untaint (PATCH; a GET first when the Node moved on)": untaint1["done"] - untaint0["t"],
                "simulated: device plugin restart": PLUGIN_RESTART * sc,
                "gpu-sim lag: the plugin's report": plugin - untaint1["done"] - PLUGIN_RESTART * sc,
                "operator: reaction to the plugin's report": uncordon["t"] - plugin,
                "operator: uncordon (PATCH)": uncordon["done"] - uncordon["t"],
            }
            for k, v in steps.items():
                parts[k] = parts.get(k, 0.0) + v
        if not found:
            return None
        everything = sorted(r[0] for rows in reaction_split.values() for r in rows)
        waited = {"p50": quantile(everything, 0.5), "p99": quantile(everything, 0.99),
                  "max": everything[-1] if everything else None, "count": len(everything)}
        reactions = {}
        for kind, rows in reaction_split.items():
            totals = sorted(r[0] for r in rows)
            reactions[kind] = {"p50": quantile(totals, 0.5), "p99": quantile(totals, 0.99),
                               "mean": [sum(r[i] for r in rows) / len(rows) for i in range(4)],
                               "write_ahead": sum(1 for r in rows if r[2] > 0 or r[3] > 0) / len(rows)}
        watched = {}
        for kind, rows in list(watch_split.items()) + [("all", [r for rows in watch_split.values() for r in rows])]:
            d, o = sorted(r[0] for r in rows), sorted(r[1] for r in rows)
            watched[kind] = {"count": len(rows), "delivery_p50": quantile(d, 0.5), "delivery_p99": quantile(d, 0.99),
                             "operator_p50": quantile(o, 0.5), "operator_p99": quantile(o, 0.99),
                             "operator_max": o[-1] if o else None}
        return {"nodes": found, "mean": {k: v / found for k, v in parts.items()}, "reactions": reactions,
                "waited": waited, "watched": watched, "measured": measured}

    def analyse_manual(self):
        m = self.manual
        if not m or m.get("outcome") != "completed":
            return
        audit = m.pop("_audit", [])
        mine = [a for a in audit if a["user"] == MANUAL_USER and a["agent"].startswith("kubectl")]
        by_verb, writes_by = {}, {}
        for a in mine:
            by_verb[a["verb"]] = by_verb.get(a["verb"], 0) + 1
            if a["verb"] in {"create", "update", "patch", "delete"}:
                key = f'{a["verb"]} {a["resource"]}'
                writes_by[key] = writes_by.get(key, 0) + 1
        k = m["nodes"]
        m["requests_per_node"] = {v: c / k for v, c in sorted(by_verb.items())}
        m["writes_per_node"] = {v: c / k for v, c in sorted(writes_by.items())}
        m["node_seconds_mean"] = sum(m["per_node"]) / k

    # - output -
    def conditions(self):
        """How like a real cluster this one was (bench/README.md, "A cluster like a real one")."""
        if getattr(self, "stored_conditions", None):
            return self.stored_conditions
        a = self.args
        return {"realistic": bool(a.realistic), "etcd_fsync": bool(a.etcd_fsync),
                "operator_user": self.operator_user, "node_lifecycle_and_heartbeats": bool(a.heartbeats),
                "plain_nodes": a.plain_nodes, "plain_pods_per_node": a.plain_pods if a.plain_nodes else 0,
                "churn_per_second": a.churn, "jitter": a.jitter, "jitter_seed": a.jitter_seed,
                "repeat": a.repeat}

    def conditions_text(self):
        c = self.conditions()
        if not any([c.get("etcd_fsync"), c.get("operator_user", OPERATOR_USER) != OPERATOR_USER,
                    c.get("node_lifecycle_and_heartbeats"), c.get("plain_nodes"), c.get("churn_per_second"),
                    c.get("jitter")]):
            return ("The control plane runs without the node-lifecycle controller and gpu-sim without "
                    "node heartbeats (Leases, status reports): at this scale their writes would "
                    "outweigh the operator's. etcd runs without fsync, the operator as token-admin "
                    "(system:masters: API Priority and Fairness exempts it), every node has the same "
                    "delays, and nothing else writes.")
        parts = [
            "etcd " + ("fsyncs its WAL" if c.get("etcd_fsync") else "runs without fsync (--unsafe-no-fsync)"),
            "the operator runs as " + (f'`{c["operator_user"]}` under the chart\'s RBAC (API Priority and '
                                       "Fairness queues it, flow schema service-accounts)"
                                       if c.get("operator_user", OPERATOR_USER) != OPERATOR_USER else
                                       "token-admin (system:masters, exempt from API Priority and Fairness)"),
            ("the node-lifecycle controller runs and gpu-sim renews every node's Lease (heartbeats)"
             if c.get("node_lifecycle_and_heartbeats") else
             "without the node-lifecycle controller and node heartbeats"),
            (f'{c["plain_nodes"]} servers without GPUs carry {c["plain_nodes"] * c["plain_pods_per_node"]} pods'
             if c.get("plain_nodes") else "no servers without GPUs"),
            (f'another controller (bench-churn, a ServiceAccount of its own) writes {c["churn_per_second"]:g} '
             "times a second and scales a Deployment on them every 10 s" if c.get("churn_per_second")
             else "no other controller writes"),
            (f'each node\'s DCM and plugin delays vary by up to +-{100 * c["jitter"]:g} % (gpu-sim --jitter, '
             f'seed {c.get("jitter_seed", 1)})' if c.get("jitter") else "every node has the same delays"),
        ]
        return "Conditions: " + "; ".join(parts) + "."

    def report_measured(self, L):
        """The ideal schedule from measured per-node times, and the repeats' medians."""
        fmt = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
        runs = [r for r in self.runs if r.get("ideal_measured_seconds")]
        if runs:
            L.append("The same rollouts against the ideal schedule of the simulated stack's measured "
                     "times: each node's DCM time (from the operator's profile label to DCM's answer, "
                     "as the audit log stamps their completion) and its device plugin's (from the "
                     "untaint to the plugin's report), the grace periods as configured, nodes taken in "
                     "the order the operator cordoned them, each starting as soon as fewer than "
                     "maxParallel are in flight. The measured times include gpu-sim's tick (50 ms) and "
                     "the latency of its write, which the configured ideal counts as overhead.")
            L.append("")
            L.append("| maxParallel | measured ideal | wall | overhead vs measured | DCM s per node: "
                     "configured | measured min / p50 / max | plugin s: configured | measured min / p50 / max | "
                     "nodes measured |")
            L.append("|---|---|---|---|---|---|---|---|---|")
            for r in runs:
                d, pl = r.get("measured_dcm") or {}, r.get("measured_plugin") or {}
                L.append(f'| {lab(r)} | {r["ideal_measured_seconds"]:.1f} s | {fmt(r.get("wall_seconds"))} s | '
                         f'{fmt(r.get("overhead_measured_seconds"))} s ({fmt(r.get("overhead_measured_percent"))} %) | '
                         f'{r["configured_dcm"]:.2f} | {fmt(d.get("min"), 2)} / {fmt(d.get("p50"), 2)} / '
                         f'{fmt(d.get("max"), 2)} | {r["configured_plugin"]:.2f} | {fmt(pl.get("min"), 2)} / '
                         f'{fmt(pl.get("p50"), 2)} / {fmt(pl.get("max"), 2)} | {r.get("ideal_measured_nodes")} |')
            L.append("")
            ratio = [r["measured_dcm_over_jittered"] for r in runs if r.get("measured_dcm_over_jittered")]
            if ratio:
                L.append("Each node's measured DCM time over its configured time times the jitter factor "
                         "gpu-sim logged for it (1 would be no lag at all): " + "; ".join(
                             f'maxParallel {lab(r)} p50 {r["measured_dcm_over_jittered"]["p50"]:.3f}, max '
                             f'{r["measured_dcm_over_jittered"]["max"]:.3f}' for r in runs
                             if r.get("measured_dcm_over_jittered")) + ".")
                L.append("")
        rep = getattr(self, "repeats", None) or {}
        if any(v.get("runs", 0) > 1 for v in rep.values()):
            L.append("## Repeats")
            L.append("")
            L.append("Each maxParallel value was run several times, interleaved with the others; "
                     "median (min to max) of each headline figure over its completed runs.")
            L.append("")
            keys = [(k, label) for k, label, _ in bench_real.HEADLINES
                    if any(k in v for v in rep.values())]
            L.append("| figure | " + " | ".join(f"maxParallel {mp} ({v['runs']} runs)" for mp, v in rep.items()) + " |")
            L.append("|---|" + "---|" * len(rep))
            for k, label in keys:
                cells = []
                for v in rep.values():
                    x = v.get(k)
                    cells.append("n/a" if not x else f'{x["median"]:.2f} ({x["min"]:.2f} to {x["max"]:.2f})')
                L.append(f"| {label} | " + " | ".join(cells) + " |")
            L.append("")

    def report_cluster(self, L):
        """APF, etcd, every client's requests, the machine's pressure, the logs."""
        fmt = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
        ms = lambda v: "n/a" if v is None else f"{v * 1000:.0f} ms"
        runs = [r for r in self.runs if r.get("apf")]
        if runs:
            L.append("## API Priority and Fairness")
            L.append("")
            L.append("From the API server's /metrics before the plan's creation and after it and its items "
                     "were gone: per flow schema and priority level, requests dispatched, their wait in "
                     "API Priority and Fairness (`apiserver_flowcontrol_request_wait_duration_seconds`: "
                     "the mean, and p50 and p99 interpolated in its buckets, whose first ends at 5 ms), "
                     "how many waited over 5 ms and over 100 ms (from its buckets), the mean length of "
                     "the queue a request joined (`apiserver_flowcontrol_request_queue_length_after_enqueue`: "
                     "1 when it was alone there), rejections (`apiserver_flowcontrol_rejected_requests_total`) "
                     "and the most requests in a queue at once (`apiserver_flowcontrol_current_inqueue_requests`, "
                     "sampled every 5 s). The exempt level (system:masters: gpu-sim, the bench's kubectl) "
                     "never waits.")
            L.append("")
            L.append("| maxParallel | flow schema / priority level | dispatched | wait mean | p50 | p99 | "
                     "over 5 ms | over 100 ms | mean queue length | rejected | most in queue |")
            L.append("|---|---|---|---|---|---|---|---|---|---|---|")
            ms1 = lambda v: "n/a" if v is None else f"{v * 1000:.2f} ms"
            for r in runs:
                for key, f in sorted(r["apf"].items(), key=lambda kv: -kv[1]["dispatched"]):
                    rej = ", ".join(f"{k} {v:.0f}" for k, v in f["rejected"].items()) or "0"
                    L.append(f'| {lab(r)} | {key} | {f["dispatched"]:.0f} | {ms1(f["wait_mean"])} | '
                             f'{ms1(f["wait_p50"])} | {ms1(f["wait_p99"])} | {f.get("waited_over_5ms", 0):.0f} | '
                             f'{f.get("waited_over_100ms", 0):.0f} | '
                             f'{fmt(f.get("queue_length_mean"))} | {rej} | {f["inqueue_peak"]:.0f} |')
            L.append("")
        runs = [r for r in self.runs if r.get("etcd")]
        if runs:
            L.append("## etcd")
            L.append("")
            L.append("From etcd's /metrics over the same span: bytes written to its WAL "
                     "(`etcd_disk_wal_write_bytes_total`), WAL fsyncs and their mean time (none are "
                     "counted with --unsafe-no-fsync), backend commits, keys put and deleted, and the "
                     "database's size after.")
            L.append("")
            L.append("| maxParallel | fsync | WAL written | per node | WAL fsyncs | fsync mean | backend commits | "
                     "commit mean | puts | deletes | db size after |")
            L.append("|---|---|---|---|---|---|---|---|---|---|---|")
            for r in runs:
                e = r["etcd"]
                L.append(f'| {lab(r)} | {"on" if e["fsync_flag"] else "off"} | {e["wal_bytes"] / 1048576:.1f} MiB | '
                         f'{e["wal_bytes"] / self.n / 1024:.0f} KiB | {e["wal_fsyncs"]:.0f} | {ms(e["wal_fsync_mean"])} | '
                         f'{e["backend_commits"]:.0f} | {ms(e["backend_commit_mean"])} | {e["puts"]:.0f} | '
                         f'{e["deletes"]:.0f} | {(e["db_bytes_after"] or 0) / 1048576:.1f} MiB |')
            L.append("")
        runs = [r for r in self.runs if r.get("clients")]
        if runs:
            L.append("## Every client's requests, until the plan is gone")
            L.append("")
            L.append("From the audit log, from the plan's creation until it and its NodePartitionings were "
                     "gone (the clean-up included): each client by its User-Agent's program and its user, "
                     "its requests, a second, by verb, the API server's time for them (arrival to "
                     "completion, watches apart; APF's queueing included) and its 429s. "
                     + ("Every client's reads are logged." if self.conditions().get("realistic") else
                        "Only the operator's reads are logged; other clients show their writes only.")
                     + " gpu-sim's heartbeat lanes send as `<agent>/heartbeats`: kubelet's Lease renewals "
                     "and Ready reports, not the operator's.")
            L.append("")
            L.append("| maxParallel | client | role | requests | a second | by verb | p50 | p99 | 429 |")
            L.append("|---|---|---|---|---|---|---|---|---|")
            for r in runs:
                for name, c in r["clients"].items():
                    verbs = ", ".join(f"{v} {n}" for v, n in sorted(c["verbs"].items(), key=lambda kv: -kv[1]))
                    L.append(f'| {lab(r)} | {name} | {c["role"]} | {c["count"]} | {c["per_second"]:.2f} | {verbs} | '
                             f'{ms(c["latency_p50"])} | {ms(c["latency_p99"])} | {c["code_429"]} |')
            L.append("")
            L.append("The operator's requests per node until the plan is gone (the Lease apart): " + "; ".join(
                f'maxParallel {lab(r)}: {r["requests_until_gone_per_node"]:.2f} ('
                + ", ".join(f"{v} {n:.2f}" for v, n in r["requests_until_gone_by_verb"].items())
                + f'; clean-up {r.get("cleanup_seconds", 0):.1f} s)' for r in runs) + ".")
            L.append("")
        runs = [r for r in self.runs if r.get("machine")]
        if runs:
            L.append("## The machine during each run")
            L.append("")
            L.append("From the plan's creation until it was gone: the share of that time some runnable task "
                     "waited for a CPU, and every one did (/proc/pressure/cpu `some` and `full` totals' "
                     "delta; `avg60` at the end beside it), and CPU time stolen by the hypervisor "
                     "(/proc/stat's steal, as a share of all CPU time).")
            L.append("")
            L.append("| maxParallel | seconds | CPU pressure some | avg60 at the end | full | steal |")
            L.append("|---|---|---|---|---|---|")
            for r in runs:
                m = r["machine"]
                L.append(f'| {lab(r)} | {m["seconds"]:.0f} | {fmt(m.get("some_percent"))} % | '
                         f'{fmt(m.get("some_avg60_end"))} % | {fmt(m.get("full_percent"))} % | '
                         f'{fmt(m.get("steal_seconds"))} s ({fmt(m.get("steal_percent"), 2)} %) |')
            L.append("")
        logs = getattr(self, "logs", None)
        if logs:
            L.append(f'Logs (the operator\'s of each run, gpu-sim\'s, the plain nodes\' and the other '
                     f'controller\'s): `{logs["archive"]}` ({logs["bytes"] / 1024:.0f} KiB), beside this report.')
            L.append("")

    def keep_logs(self, base):
        """The operator's logs (one per run), gpu-sim's and the other controller's, compressed
        beside the report: the state directory goes with the cluster."""
        import tarfile
        files = [r["operator_log"] for r in self.runs if r.get("operator_log")]
        files += [os.path.join(self.args.sim_state, "gpu-sim.log")]
        for extra in (getattr(self, "plain_sim_log", None), getattr(self, "churn_log", None)):
            if extra:
                files.append(extra)
        files = [f for f in files if os.path.exists(f)]
        if not files:
            return None
        path = base + "-logs.tar.gz"
        with tarfile.open(path, "w:gz") as t:
            for f in files:
                t.add(f, arcname=os.path.basename(f))
        return {"archive": os.path.basename(path), "bytes": os.path.getsize(path),
                "files": [os.path.basename(f) for f in files]}

    def chart(self, path):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            log("warning: no matplotlib (tools/setup installs python3-matplotlib); no chart")
            return False
        colors = {"Pending": "#c7c7c7", "Draining": "#ff7f0e", "Applying": "#d62728",
                  "WaitingOperator": "#9467bd", "Verifying": "#17becf", "Succeeded": "#2ca02c",
                  "Failed": "#000000"}
        runs = self.runs
        fig, axes = plt.subplots(len(runs), 1, figsize=(10, 2.8 * len(runs)), squeeze=False)
        for ax, r in zip(axes[:, 0], runs):
            t = [s["t"] for s in r["samples"]]
            ys = [[s["phases"].get(p, 0) for s in r["samples"]] for p in PHASES]
            ax.stackplot(t, ys, labels=PHASES, colors=[colors[p] for p in PHASES], step="post")
            ax.axvline(r["ideal_seconds"], color="k", linestyle="--", linewidth=1)
            ax.text(r["ideal_seconds"], self.n * 0.5, " ideal", fontsize=8)
            if r.get("ideal_measured_seconds"):
                ax.axvline(r["ideal_measured_seconds"], color="k", linestyle=":", linewidth=1)
                ax.text(r["ideal_measured_seconds"], self.n * 0.35, " measured ideal", fontsize=8)
            ax.set_xlim(0, max(t[-1] if t else 1, r["ideal_seconds"], r.get("ideal_measured_seconds") or 0) * 1.02)
            ax.set_ylim(0, self.n)
            ax.set_ylabel("nodes")
            rss = [(s["t"], s["rss_kb"] / 1024) for s in r["samples"] if s.get("rss_kb")]
            if rss:
                ax2 = ax.twinx()
                ax2.plot([x for x, _ in rss], [y for _, y in rss], color="k", linewidth=0.8,
                         label="operator RSS (MiB)")
                ax2.set_ylabel("operator RSS, MiB", fontsize=8)
                ax2.set_ylim(0, max(64, max(y for _, y in rss) * 1.1))
                ax2.legend(loc="upper right", fontsize=7)
            ax.set_title(f'{self.n} nodes, maxParallel {lab(r)}, time scale {r["time_scale"]:g} '
                         f'({r["node_seconds"]:.2f} s per node): {r.get("wall_seconds", 0):.0f} s, '
                         f'ideal {r["ideal_seconds"]:.0f} s', fontsize=9)
        axes[-1, 0].set_xlabel("seconds since the plan was created")
        axes[0, 0].legend(loc="upper left", fontsize=7, ncol=4)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return True

    def machine(self):
        if getattr(self, "stored_machine", None):
            return self.stored_machine
        model, cpus = "?", os.cpu_count()
        try:
            out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                if line.startswith("Model name:"):
                    model = line.split(":", 1)[1].strip()
        except OSError:
            pass
        total_kb = 0
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    total_kb = int(line.split()[1])
        return {"cpu": model, "cores": cpus, "memory_gib": round(total_kb / 1048576),
                "kernel": platform.release(), "load_at_start": self.load_at_start}

    def report(self, base):
        m = self.machine()
        commit = self.commit
        fmt = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
        ms = lambda v: "n/a" if v is None else f"{v * 1000:.0f} ms"
        L = []
        L.append(f"# Bench: {self.n} simulated MI300X nodes, {self.date}")
        L.append("")
        L.append(f"`tools/bench --nodes {self.n}` at commit `{commit}` ({self.args.build} build), on "
                 f"\"{m['cpu']}\", {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}; "
                 f"load average {m['load_at_start']} at the start. The machine runs the API server, "
                 "etcd, the controller manager, the scheduler, gpu-sim (every simulated node's DCM, "
                 "device plugin and kubelet) and the operator at once, and is shared with other work: "
                 "the figures are what this machine did, not what the operator needs alone. "
                 + self.conditions_text() + " bench/README.md explains each figure.")
        L.append("")
        spaces = len(self.workload_namespaces())
        layout = ("all in one namespace (an eviction lists every budget of its pod's namespace)"
                  if spaces == 1 else
                  f"spread over {spaces} namespaces (an eviction lists every budget of its pod's "
                  f"namespace: {math.ceil(len(self.deployments) / spaces)} at most here)")
        L.append(f"{self.args.pods_per_node} GPU pods per node: {len(self.deployments)} Deployments of "
                 f"{self.args.pods_per_node} replicas, each under a PodDisruptionBudget with maxUnavailable "
                 f"{self.pdb_max_unavailable}, {layout}; "
                 f"one rollout per maxParallel (maxUnavailable the same), "
                 f"each moving every node to the other profile by a {change_words()}, with a fresh "
                 "operator. Per node the simulated stack takes "
                 f"{WORKLOAD_GRACE} s (workload pods' grace) + {self.ds_grace} s (device plugin pod's "
                 f"grace, after the taint) + {self.host_services:.0f} s (DCM stopping and starting its "
                 f"host services) + {DCM_CHANGE:.0f} s (DCM's {CHANGE}-mode change) + "
                 f"{PLUGIN_RESTART:.0f} s (device plugin restart) = {self.node_seconds():.0f} s at time "
                 "scale 1; the ideal schedule is waves x that x the time scale.")
        L.append("")
        L.append("## Rollouts")
        L.append("")
        L.append("| maxParallel | time scale | s per node | waves | ideal | wall | overhead | per wave | "
                 "at time scale 1 | first write | outcome |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in self.runs:
            proj = 100.0 * r.get("overhead_per_wave", 0) / self.node_seconds()
            L.append(f'| {lab(r)} | {r["time_scale"]:g} | {r["node_seconds"]:.2f} | {r["waves"]} | '
                     f'{r["ideal_seconds"]:.1f} s | {fmt(r.get("wall_seconds"))} s | '
                     f'{fmt(r.get("overhead_seconds"))} s ({fmt(r.get("overhead_percent"))} %) | '
                     f'{fmt(r.get("overhead_per_wave"), 2)} s | {proj:.2f} % | '
                     f'{fmt(r.get("first_write_seconds"), 2)} s | {r["outcome"]} |')
        L.append("")
        L.append("Overhead = wall - ideal, where wall runs from the plan's creation to the operator's "
                 "last write to a Node (as the audit log stamps them). \"At time scale 1\" puts the "
                 "overhead per wave over the real stack's per-node time "
                 f"({self.node_seconds():.0f} s): what the overhead would weigh with real DCM delays, "
                 "assuming it does not grow with them. \"First write\": from the plan's creation to the "
                 "operator's first request on a node.")
        L.append("")
        self.report_measured(L)
        L.append("## Reaction latency")
        L.append("")
        L.append("From a change the operator waits for (pods gone, DCM's state label, the device "
                 "plugin's report) to its next write for that node.")
        L.append("")
        L.append("| maxParallel | operator metric p50 | p99 | reactions | audit log p50 | p99 | max | reactions |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in self.runs:
            rm, ra = r["reaction_metric"], r.get("reaction_audit", {})
            L.append(f'| {lab(r)} | {ms(rm["p50"])} | {ms(rm["p99"])} | {rm["count"]} | '
                     f'{ms(ra.get("p50"))} | {ms(ra.get("p99"))} | {ms(ra.get("max"))} | {ra.get("count", 0)} |')
        L.append("")
        L.append("The metric (`gpu_partitioner_reaction_seconds`) runs from the watch event's arrival "
                 "in the operator to the start of the write (quantiles interpolated in its buckets); the "
                 "audit log's figure from the other party's write completing in the API server to the "
                 "operator's request arriving there, so it adds the watch's delivery. The audit log's "
                 "figure is of the same four reactions per node (pods gone, the device plugin's pod gone, "
                 "DCM's answer, the plugin's report), for the nodes of the breakdown below.")
        above = [r for r in self.runs if r["reaction_metric"].get("above_top")]
        if above:
            L.append("The operator's histogram ends at " + f'{above[0]["reaction_metric"]["top_bucket"]:g} s; '
                     "reactions above it, which its quantiles cannot place: " + "; ".join(
                         f'maxParallel {lab(r)}: {r["reaction_metric"]["above_top"]}' for r in above) +
                     " (the audit log's figure has no top).")
        for r in self.runs:
            anyr = r.get("reaction_audit_any")
            if anyr and anyr != r.get("reaction_audit") and anyr.get("count"):
                L.append(f'Every request of the operator on a node or its pods that follows another '
                         f'party\'s write there, maxParallel {lab(r)}: p50 {ms(anyr["p50"])}, '
                         f'p99 {ms(anyr["p99"])}, max {ms(anyr["max"])} ({anyr["count"]}); it also counts '
                         f'an eviction retried after a PodDisruptionBudget refused it, which waits for the '
                         f'budget (every 5 s, or when its status allows one), not for the write before it.')
        for r in self.runs:
            qbw = r["reaction_metric"].get("quantiles_by_write") or {}
            if qbw:
                parts = [f'{w} {ms(q["p50"])} / {ms(q["p99"])} ({r["reaction_metric"]["by_write"].get(w, 0)})'
                         for w, q in sorted(qbw.items())]
                L.append("")
                L.append(f'By the write that answered (metric p50 / p99, and how many), maxParallel '
                         f'{lab(r)}: ' + "; ".join(parts) + ".")
        for r in self.runs:
            waits = r.get("rate_limiter_waits")
            if waits:
                parts = [f'{lane or "all"} {ms(w["p50"])} / {ms(w["p99"])} ({w["count"]})'
                         for lane, w in waits.items() if w["count"]]
                peaks = ", ".join(f"{k} {v}" for k, v in sorted(r.get("queue_peaks", {}).items()) if v)
                L.append("")
                L.append(f'Waits for the client-side rate limiter by lane (p50 / p99, and how many), '
                         f'maxParallel {lab(r)}: ' + "; ".join(parts) + "." +
                         (f" Most seen waiting at a 0.5 s sample: {peaks}." if peaks else ""))
        for r in self.runs:
            if r.get("handover"):
                h = r["handover"]
                L.append("")
                L.append(f'One node at a time, from one node\'s last write to the next node\'s first: '
                         f'p50 {ms(h["p50"])}, p99 {ms(h["p99"])}, mean {ms(h["mean"])}.')
        L.append("")
        if any(r.get("breakdown") for r in self.runs):
            L.append("## Where one node's time goes")
            L.append("")
            L.append("Mean seconds per node, from the audit log: the simulated waits at their configured "
                     "length, the other parties' lag beyond them (gpu-sim acts on a 50 ms tick; the taint "
                     "manager), and the operator's reactions and writes (a write's time is the API "
                     "server's). The sum is the node's time from its cordon to its uncordon.")
            L.append("")
            shown = [r for r in self.runs if r.get("breakdown")]
            L.append("| step | " + " | ".join(f'maxParallel {lab(r)}' for r in shown) + " |")
            L.append("|---|" + "---|" * len(shown))
            keys = list(shown[0]["breakdown"]["mean"].keys())
            for k in keys:
                L.append(f"| {k} | " + " | ".join(f'{r["breakdown"]["mean"].get(k, 0):.3f}' for r in shown) + " |")
            tot = lambda r, pre: sum(v for k, v in r["breakdown"]["mean"].items() if k.startswith(pre))
            for label, pre in [("all simulated waits", "simulated"), ("all gpu-sim lag", "gpu-sim"),
                               ("the taint manager", "taint manager"), ("all the operator's", "operator")]:
                L.append(f"| **{label}** | " + " | ".join(f"**{tot(r, pre):.3f}**" for r in shown) + " |")
            L.append(f"| nodes measured | " + " | ".join(str(r["breakdown"]["nodes"]) for r in shown) + " |")
            L.append("")
            L.append("The operator's reactions in three parts (audit log; ms, mean over the nodes above): "
                     "from the change to the arrival of the status write that goes first (the watch's "
                     "delivery, the operator's step, the status writers' queue), that write, and from its "
                     "end to the node write (the node writers' queue). The parts are means; p50 and p99 "
                     "are of the whole reaction.")
            L.append("")
            L.append("| maxParallel | reaction to | status written first | until the status write | "
                     "status write | until the node write | mean | p50 | p99 |")
            L.append("|---|---|---|---|---|---|---|---|---|")
            for r in shown:
                for kind, x in r["breakdown"].get("reactions", {}).items():
                    part = x["mean"]
                    L.append(f'| {lab(r)} | {kind} | {100 * x["write_ahead"]:.0f} % | '
                             f'{ms(part[1])} | {ms(part[2])} | {ms(part[3])} | {ms(part[0])} | {ms(x["p50"])} | '
                             f'{ms(x["p99"])} |')
            L.append("")
            watched = [r for r in shown if r["breakdown"].get("watched", {}).get("all", {}).get("count")]
            if watched:
                L.append("The same reactions split where the change reached a watch of the bench's own "
                         "(tools/lib/watchstamp.py: kubectl's watches of pods and nodes, each line stamped on "
                         "arrival): before it, the API server's delivery of the watch event (from the other "
                         "party's write completing); after it, the operator's part (its own delivery from the "
                         "same watch cache, decoding, deciding, writing, until its request arrives in the API "
                         "server). The bench's watch is another client on the same machine, so the split is "
                         "approximate: where the operator's request arrived before the bench saw the change, "
                         "the operator's part is negative.")
                L.append("")
                L.append("| maxParallel | reaction to | matched | delivery p50 | p99 | operator's part p50 | "
                         "p99 | max |")
                L.append("|---|---|---|---|---|---|---|---|")
                for r in watched:
                    for kind, x in r["breakdown"]["watched"].items():
                        L.append(f'| {lab(r)} | {"**all four**" if kind == "all" else kind} | '
                                 f'{x["count"]} | {ms(x["delivery_p50"])} | {ms(x["delivery_p99"])} | '
                                 f'{ms(x["operator_p50"])} | {ms(x["operator_p99"])} | {ms(x["operator_max"])} |')
                L.append("")
        L.append("The API server's time for the operator's requests (arrival to completion): " + "; ".join(
            f'maxParallel {lab(r)}: evictions p50 {ms(r["write_latency"]["eviction_p50"])}, '
            f'p99 {ms(r["write_latency"]["eviction_p99"])}, other writes p50 {ms(r["write_latency"]["other_p50"])}, '
            f'p99 {ms(r["write_latency"]["other_p99"])}' for r in self.runs if r.get("write_latency")) +
            ". An eviction updates the PodDisruptionBudget's status; when that update conflicts "
            "(another eviction, the disruption controller) the API server retries it after 500 ms.")
        L.append("")
        L.append("## API requests per node (the operator's, from the audit log)")
        L.append("")
        verbs = sorted({v for r in self.runs for v in r.get("audit_requests_per_node", {})})
        L.append("| maxParallel | " + " | ".join(verbs) + " | all | writes | Lease requests (whole run) |")
        L.append("|---|" + "---|" * (len(verbs) + 3))
        for r in self.runs:
            rv = r.get("audit_requests_per_node", {})
            L.append(f'| {lab(r)} | ' + " | ".join(fmt(rv.get(v, 0), 2) for v in verbs) +
                     f' | {fmt(r.get("audit_requests_per_node_total"), 2)} | '
                     f'{fmt(r.get("audit_writes_per_node_total"), 2)} | {r.get("lease_requests", 0)} |')
        L.append("")
        L.append("Requests a second (the operator's, from the audit log, the Lease apart; peaks over "
                 "any 1 s and any 10 s, mean from the plan's creation to the last write to a Node), "
                 "and its client-side rate limit:")
        L.append("")
        L.append("| maxParallel | rate limit | peak 1 s | peak 10 s | mean | by verb (peak 1 s / 10 s / mean) |")
        L.append("|---|---|---|---|---|---|")
        for r in self.runs:
            rr = r.get("request_rate") or {}
            a = rr.get("all") or {}
            lim = r.get("rate_limit")
            lim_text = ("n/a" if not lim else "none" if not lim["qps"] else f'{lim["qps"]:g} qps, burst {lim["burst"]}')
            verbs_text = "; ".join(f'{v} {x["peak_1s"]} / {x["peak_10s"]:.1f} / {x["mean"]:.1f}'
                                   for v, x in rr.items() if v != "all")
            L.append(f'| {lab(r)} | {lim_text} | {a.get("peak_1s", "n/a")} | '
                     f'{fmt(a.get("peak_10s"))} | {fmt(a.get("mean"))} | {verbs_text} |')
        L.append("")
        L.append("Writes per node by resource:")
        L.append("")
        keys = sorted({k for r in self.runs for k in r.get("audit_writes_per_node", {})})
        L.append("| write | " + " | ".join(f'maxParallel {lab(r)}' for r in self.runs) + " |")
        L.append("|---|" + "---|" * len(self.runs))
        for k in keys:
            L.append(f"| {k} | " + " | ".join(fmt(r.get("audit_writes_per_node", {}).get(k, 0), 2) for r in self.runs) + " |")
        L.append("")
        L.append("The API server's own count (`apiserver_request_total`, every client: the operator, "
                 "gpu-sim, the controller manager, the scheduler), per node over each rollout:")
        L.append("")
        averbs = sorted({k.split()[0] for r in self.runs for k in r["apiserver_requests"]})
        L.append("| maxParallel | " + " | ".join(averbs) + " |")
        L.append("|---|" + "---|" * len(averbs))
        for r in self.runs:
            tot = {}
            for k, v in r["apiserver_requests"].items():
                tot[k.split()[0]] = tot.get(k.split()[0], 0) + v
            L.append(f'| {lab(r)} | ' + " | ".join(fmt(tot.get(v, 0) / self.n, 1) for v in averbs) + " |")
        L.append("")
        L.append("The operator's own count (`gpu_partitioner_api_requests_total`), per node: " + "; ".join(
            f'maxParallel {lab(r)}: ' + ", ".join(
                f"{k} {v / self.n:.2f}" for k, v in sorted(r["operator_requests"].items()))
            for r in self.runs) + ".")
        L.append("")
        L.append("## The operator's resources")
        L.append("")
        L.append("| maxParallel | peak RSS | CPU | CPU per node | gpu-sim CPU | kube-apiserver CPU | etcd CPU | "
                 "controller manager CPU | scheduler CPU | evictions (evicted / refused by a PDB) |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in self.runs:
            c = r["component_cpu_seconds"]
            ev = r.get("evictions", {})
            L.append(f'| {lab(r)} | {fmt((r["operator_peak_rss_kb"] or 0) / 1024)} MiB | '
                     f'{fmt(r["operator_cpu_seconds"])} s | {fmt(1000 * r["operator_cpu_seconds"] / self.n)} ms | '
                     f'{fmt(c.get("gpu-sim"))} s | {fmt(c.get("kube-apiserver"))} s | {fmt(c.get("etcd"))} s | '
                     f'{fmt(c.get("kube-controller-manager"))} s | {fmt(c.get("kube-scheduler"))} s | '
                     f'{ev.get("evicted", 0)} / {ev.get("pdb_blocked", 0)} |')
        L.append("")
        if any(r.get("rss_idle_kb") for r in self.runs):
            shared = any(r.get("same_operator") for r in self.runs)
            L.append("The operator's RSS by plan: before the plan's creation (its caches of nodes and pods "
                     "filled), the most sampled while it ran (every 0.5 s), and 10 s after the plan and its "
                     "items were gone. " + ("One operator process ran every plan, one after the other."
                                            if shared else "Each plan had a fresh operator."))
            L.append("")
            L.append("| plan | before | peak | after it was gone |")
            L.append("|---|---|---|---|")
            for r in self.runs:
                L.append(f'| {r["plan"]} | {fmt((r.get("rss_idle_kb") or 0) / 1024)} MiB | '
                         f'{fmt((r.get("rss_peak_kb") or 0) / 1024)} MiB | '
                         f'{fmt((r.get("rss_after_gone_kb") or 0) / 1024)} MiB |')
            L.append("")
            if any(r.get("heap_idle") for r in self.runs):
                L.append("The heap at the same moments (`gpu_partitioner_heap_bytes`, glibc's figures): "
                         "in use, what the operator's objects took; free, what they had freed and the "
                         "allocator kept. The peak is the scrape (every 0.5 s) with the most in use.")
                L.append("")
                L.append("| plan | in use before | in use at the peak | in use after it was gone | "
                         "free before | free at the peak | free after it was gone |")
                L.append("|---|---|---|---|---|---|---|")

                def mib(h, state):
                    return f'{fmt(h[state] / 1048576)} MiB' if h and state in h else "n/a"
                for r in self.runs:
                    h0, h1, h2 = r.get("heap_idle"), r.get("heap_peak"), r.get("heap_after_gone")
                    L.append(f'| {r["plan"]} | {mib(h0, "in_use")} | {mib(h1, "in_use")} | '
                             f'{mib(h2, "in_use")} | {mib(h0, "free")} | {mib(h1, "free")} | '
                             f'{mib(h2, "free")} |')
                L.append("")
        L.append("## The manual procedure, side by side")
        L.append("")
        mm = self.manual
        if not mm:
            L.append("Not run (--manual-nodes 0).")
        elif mm.get("outcome") != "completed":
            L.append(f'Did not complete: {mm.get("outcome")}.')
        else:
            one = next((r for r in self.runs if r["max_parallel"] == 1), None)
            L.append(f'The careful manual procedure, scripted with kubectl one node at a time as '
                     f'tools/lib/bench_manual.sh does it: `kubectl drain` (cordon, evictions that respect '
                     f'the budgets), then AMD\'s documented steps (shared/reference/amd-dcm.md): taint, '
                     f'wait for the device plugin\'s pod to go, label (removing the stale state label), wait '
                     f'for DCM\'s state, untaint, wait for the new resources; then uncordon. '
                     f'{mm["nodes"]} nodes at time scale {mm["time_scale"]:g}, on the same cluster after '
                     f'the rollouts.')
            L.append("")
            L.append("| | s per node | ideal s per node | API requests per node | writes per node | "
                     "cordon | PDB-respecting drain |")
            L.append("|---|---|---|---|---|---|---|")
            L.append(f'| manual (kubectl) | {mm["node_seconds_mean"]:.2f} | {mm["ideal_node_seconds"]:.2f} | '
                     f'{sum(mm["requests_per_node"].values()):.1f} | {sum(mm["writes_per_node"].values()):.1f} | yes | '
                     f'yes (kubectl drain) |')
            if one and one["time_scale"] == mm["time_scale"]:
                L.append(f'| operator, maxParallel 1 | {one["wall_seconds"] / self.n:.2f} | {one["node_seconds"]:.2f} | '
                         f'{one.get("audit_requests_per_node_total", 0):.1f} | '
                         f'{one.get("audit_writes_per_node_total", 0):.1f} | yes | yes |')
            L.append("")
            L.append(f'Manual per node: ' + ", ".join(f"{s:.2f} s" for s in mm["per_node"]) +
                     f'. Requests per node by verb: ' + ", ".join(f"{k} {v:.1f}" for k, v in mm["requests_per_node"].items()) +
                     f'. At that pace the {self.n} nodes would take {mm["node_seconds_mean"] * self.n:.0f} s '
                     f'one at a time, with a person or a script watching each step.')
            ops = [r for r in self.runs if r.get("outcome") == "completed" and r.get("wall_seconds")]
            if ops:
                best = min(ops, key=lambda r: r["wall_seconds"])
                manual_all = mm["node_seconds_mean"] * self.n * mm["time_scale"] / best["time_scale"]
                L.append("")
                L.append(f'Against the operator: the {self.n} nodes one at a time by hand, at this pace '
                         f'scaled to the rollouts\' time scale ({best["time_scale"]:g}), take '
                         f'{manual_all:.0f} s; the operator took {best["wall_seconds"]:.0f} s at maxParallel '
                         f'{best["max_parallel"]} ({manual_all / best["wall_seconds"]:.1f} times faster). Per '
                         f'node against its ideal: manual {mm["node_seconds_mean"] / mm["ideal_node_seconds"]:.2f}, '
                         f'the operator at maxParallel {best["max_parallel"]} '
                         f'{best["wall_seconds"] / best["ideal_seconds"]:.2f} of its ideal schedule.')
        L.append("")
        self.report_cluster(L)
        L.append("## Targets")
        L.append("")
        L.append("| target | measured | met |")
        L.append("|---|---|---|")
        best = max(self.runs, key=lambda r: r["max_parallel"])
        ok = lambda b: "yes" if b else "no"
        parts = [f'{fmt(best.get("overhead_percent"))} % at maxParallel {best["max_parallel"]} '
                 f'(time scale {best["time_scale"]:g})']
        parts += [f'{fmt(r.get("overhead_percent"))} % at maxParallel {lab(r)}'
                  for r in self.runs if r is not best]
        L.append("| operator overhead under 2 % of the ideal schedule | " + "; ".join(parts) +
                 f' | {ok(all(r.get("overhead_percent", 1e9) < 2 for r in self.runs))} |')
        p99s = [r["reaction_metric"]["p99"] for r in self.runs if r["reaction_metric"]["p99"] is not None]
        p99a = [r.get("reaction_audit", {}).get("p99") for r in self.runs if r.get("reaction_audit", {}).get("p99") is not None]
        split = [((r.get("breakdown") or {}).get("watched") or {}).get("all", {}) for r in self.runs]
        split = [x for x in split if x.get("count")]
        split_text = ("; by the bench's watch, delivery " + ", ".join(ms(x["delivery_p99"]) for x in split) +
                      " and the operator's part " + ", ".join(ms(x["operator_p99"]) for x in split)) if split else ""
        L.append(f'| reaction latency p99 under 100 ms | metric {", ".join(ms(v) for v in p99s)}; audit log '
                 f'{", ".join(ms(v) for v in p99a)}{split_text} | {ok(p99s and max(p99s) < 0.1 and (not p99a or max(p99a) < 0.1))} |')
        peak = max((r["operator_peak_rss_kb"] or 0) for r in self.runs) / 1024
        L.append(f'| peak RSS under 64 MB (VmHWM, shared libraries included) | {peak:.1f} MiB = '
                 f'{peak * 1048576 / 1e6:.1f} MB | {ok(peak * 1048576 < 64e6)} |')
        bounds = []
        for r in self.runs:
            w = r.get("audit_writes_per_node", {})
            bounds.append((lab(r), r.get("audit_writes_per_node_total", 0),
                           DOCUMENTED_WRITES_PER_NODE + w.get("create pods/eviction", 0)))
        L.append("| API writes per node no more than the documented count (" + str(DOCUMENTED_WRITES_PER_NODE) +
                 " + the pods evicted) | " + "; ".join(f"{w:.2f} of {b:.2f} at maxParallel {mp}" for mp, w, b in bounds) +
                 f' | {ok(all(w <= b for _, w, b in bounds))} |')
        L.append("")
        L.append(f"![nodes by phase over time]({os.path.basename(base)}.png)")
        L.append("")
        with open(base + ".md", "w") as f:
            f.write("\n".join(L) + "\n")

    def sane(self):
        problems = []
        for r in self.runs:
            tag = f'maxParallel {lab(r)}'
            if r["outcome"] != "completed":
                problems.append(f"{tag}: rollout {r['outcome']}")
                continue
            if not (r.get("wall_seconds", 0) >= 0.9 * r["ideal_seconds"]):
                problems.append(f"{tag}: wall time {r.get('wall_seconds')} below the ideal {r['ideal_seconds']}")
            if r["reaction_metric"]["count"] < self.n:
                problems.append(f"{tag}: only {r['reaction_metric']['count']} reactions measured by the metric")
            if r.get("reaction_audit", {}).get("count", 0) < self.n:
                problems.append(f"{tag}: only {r.get('reaction_audit', {}).get('count')} reactions in the audit log")
            w = r.get("audit_writes_per_node_total", 0)
            if not 5 <= w <= 100:
                problems.append(f"{tag}: {w} writes per node")
            if not r["operator_peak_rss_kb"] or not r["operator_cpu_seconds"] > 0:
                problems.append(f"{tag}: no RSS or CPU figure")
            # What the cluster was said to be, it was.
            if self.operator_user != OPERATOR_USER and not r.get("operator_apf"):
                problems.append(f"{tag}: no APF figure for the operator's flow schema (service-accounts)")
            if self.args.etcd_fsync and not (r.get("etcd") or {}).get("wal_fsyncs"):
                problems.append(f"{tag}: etcd counted no WAL fsync with --etcd-fsync")
        if self.manual and self.manual.get("outcome") not in (None, "completed"):
            problems.append("manual procedure: " + self.manual["outcome"])
        return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--max-parallel", default="1,10,50")
    ap.add_argument("--pods-per-node", type=int, default=3)
    ap.add_argument("--namespaces", type=int, default=1)
    ap.add_argument("--time-scale", type=float, default=0.1)
    ap.add_argument("--change", choices=sorted(DCM_CHANGE_SECONDS), default="memory",
                    help="what each rollout changes: the memory mode (and compute) or the compute mode only")
    ap.add_argument("--max-run-seconds", type=float, default=None)
    ap.add_argument("--stop-after", type=float, default=None,
                    help="stop a rollout that has not completed after S seconds "
                         "(default: three times its ideal schedule and 300 s, at least 600)")
    ap.add_argument("--manual-nodes", type=int, default=5)
    ap.add_argument("--manual-time-scale", type=float, default=None,
                    help="the manual procedure's time scale (default: the rollouts')")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--state", required=True)
    ap.add_argument("--sim-state", required=True)
    ap.add_argument("--build", default="opt")
    ap.add_argument("--plans", type=int, default=0,
                    help="instead of the rollouts: K plans created at once (tools/lib/bench_plans.py)")
    ap.add_argument("--select-all", action="store_true",
                    help="with --plans: every plan selects every node (else each its share)")
    ap.add_argument("--settle-seconds", type=float, default=30)
    ap.add_argument("--api-qps", default=None,
                    help="the operator's --api-qps; with --plans a list, one run each (e.g. 50,0)")
    ap.add_argument("--api-burst", type=int, default=None)
    ap.add_argument("--operator-kubeconfig", help="the operator's credentials (default: the token user's)")
    ap.add_argument("--operator-user", help="the operator's user in the audit log (default token-admin)")
    ap.add_argument("--realistic", action="store_true", help="tools/bench --realistic (for the report)")
    ap.add_argument("--heartbeats", action="store_true",
                    help="gpu-sim with node heartbeats (the cluster runs the node-lifecycle controller)")
    ap.add_argument("--etcd-fsync", action="store_true", help="etcd fsyncs (for the report)")
    ap.add_argument("--plain-nodes", type=int, default=0, help="servers without GPUs")
    ap.add_argument("--plain-pods", type=int, default=10, help="pods on each plain node")
    ap.add_argument("--churn", type=float, default=0.0, help="another controller's writes a second")
    ap.add_argument("--jitter", type=float, default=0.0, help="gpu-sim --jitter")
    ap.add_argument("--jitter-seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="each maxParallel this many times, interleaved")
    ap.add_argument("--same-operator", action="store_true",
                    help="one operator process for every rollout: its memory idle, at peak and "
                         "after each plan is gone, across the plans")
    ap.add_argument("--operators", default="",
                    help="LABEL=BINARY,...: each rollout once with each operator binary (BINARY "
                         "empty: the one built from this checkout), one after the other")
    ap.add_argument("--from-json", help="render the report and chart again from a run's JSON")
    ap.add_argument("--commit", help="with --from-json: the commit the run was made at")
    args = ap.parse_args()
    if args.from_json:
        return rerender(args)
    set_change(args.change)
    if args.max_run_seconds is None:
        args.max_run_seconds = min(1200, max(20, args.nodes))
    parallel = [int(x) for x in args.max_parallel.split(",") if x.strip()]
    if not parallel or min(parallel) < 1:
        die("--max-parallel wants whole numbers of at least 1, e.g. 1,10,50")
    args.operators = parse_operators(args.operators)
    if args.stop_after is not None and not args.stop_after > 0:
        die(f"--stop-after wants seconds above 0, not {args.stop_after}")
    if args.repeat < 1:
        die(f"--repeat wants a whole number of at least 1, not {args.repeat}")
    if not 0 <= args.jitter < 1:
        die(f"--jitter wants a fraction from 0 to below 1, not {args.jitter}")
    if args.churn > 0 and not args.plain_nodes:
        die("--churn needs --plain-nodes (its Deployment runs there)")
    if args.same_operator and (len(args.operators) > 1 or args.operators[0][1]):
        die("--same-operator runs the operator built here, once: not with --operators")
    if args.same_operator and args.plans:
        die("--same-operator is for rollouts, not --plans")
    if args.namespaces < 1:
        die(f"--namespaces wants a whole number of at least 1, not {args.namespaces}")
    try:
        args.api_qps = [float(x) for x in args.api_qps.split(",")] if args.api_qps else [None]
    except ValueError:
        die(f"--api-qps wants numbers of requests a second, e.g. 50 or 50,0; not {args.api_qps}")
    if len(args.api_qps) > 1 and not args.plans:
        die("--api-qps takes one value without --plans")
    if args.plans < 0 or (args.plans and args.plans > args.nodes and not args.select_all):
        die(f"--plans wants a whole number from 1 to --nodes (or any with --select-all), not {args.plans}")
    # SIGTERM (tools/bench interrupted) ends the harness through its finally: the operator
    # and the pod watch it started go with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Started in the background by a shell without job control, a process inherits SIGINT
    # ignored; Ctrl-C (or kill -INT) should end the harness wherever it waits.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run_bench(args, parallel)
    finally:
        stop_children()


def parse_operators(text):
    """--operators LABEL=BINARY,...: [(label, path or None)]; none given: the built one."""
    if not text:
        return [("", None)]
    out = []
    for item in text.split(","):
        label, _, path = item.partition("=")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,20}", label):
            die(f"--operators: label '{label}' must be lowercase letters, digits and dashes")
        if path and not os.access(path, os.X_OK):
            die(f"--operators: {label}: '{path}' is not an executable file")
        if label in (l for l, _ in out):
            die(f"--operators: label '{label}' given twice")
        out.append((label, os.path.abspath(path) if path else None))
    return out


def run_bench(args, parallel):
    b = Bench(args)
    b.parallel = parallel
    b.commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    b.date = datetime.date.today().isoformat()
    b.load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
    b.setup()
    if args.plans:
        return bench_plans.run(b, sys.modules[__name__])
    t_start = time.time()
    # With --repeat, the values interleaved (a, b, c, a, b, c, ...): a slow spell of the
    # machine then falls on every configuration alike.
    # With --operators, each configuration once with each operator, one after the other.
    order = [(rnd, mp, op) for rnd in range(args.repeat) for mp in parallel for op in args.operators]
    for i, (rnd, mp, op) in enumerate(order):
        if not b.rollout(i, mp, rnd, op):
            log(f"rollout at maxParallel {mp} did not complete; stopping")
            break
    if b.shared_operator is not None:
        stop(b.shared_operator[0].pid)
        b.shared_operator[0].wait()
    one = next((r for r in b.runs if r["max_parallel"] == 1), b.runs[0] if b.runs else None)
    if one and one["outcome"] == "completed":
        b.manual_procedure(args.manual_time_scale or one["time_scale"])
    log("reading the audit log")
    b.read_audit()
    for r in b.runs:
        b.analyse_run(r)
    b.analyse_manual()
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"{datetime.date.today().isoformat()}-{args.nodes}"
                        + ("-compute" if CHANGE == "compute" else ""))
    b.repeats = bench_real.repeats(b.runs)
    b.logs = b.keep_logs(base)
    b.chart(base + ".png")
    b.report(base)
    with open(base + ".json", "w") as f:
        for r in b.runs:  # every 10th sample: the time series, compactly
            r["series"] = [[round(x["t"], 1), x["phases"], x["rss_kb"], x["cpu"]] for x in r["samples"][::10]]
        json.dump({"machine": b.machine(), "runs": [{k: v for k, v in r.items() if k != "samples"} for r in b.runs],
                   "manual": b.manual, "seconds": time.time() - t_start, "commit": b.commit, "date": b.date,
                   "build": args.build, "ds_grace": b.ds_grace,
                   "host_services": b.host_services, "deployments": len(b.deployments),
                   "change": CHANGE,
                   "pdb_max_unavailable": b.pdb_max_unavailable, "namespaces": args.namespaces,
                   "conditions": b.conditions(), "repeats": b.repeats, "logs": b.logs},
                  f, indent=1, default=str)
    bench_history.append(os.path.join(args.out, "history.md"), base + ".json")
    log(f"report: {base}.md (chart {base}.png)")
    problems = b.sane()
    for p in problems:
        log("not sane: " + p)
    sys.exit(1 if problems else 0)


def rerender(args):
    """The report and chart again from a run's JSON (the samples are every 10th)."""
    with open(args.from_json) as f:
        d = json.load(f)
    set_change(d.get("change", "memory"))
    if d.get("scenario") == "plans":
        return bench_plans.rerender(sys.modules[__name__], args, d)
    runs = d["runs"]
    first = runs[0]
    args.nodes = first["nodes"]
    args.pods_per_node = first["pods_per_node"]
    args.namespaces = d.get("namespaces", 1)
    args.build = d.get("build", args.build)
    b = Bench.__new__(Bench)
    b.args = args
    b.n = args.nodes
    b.runs = runs
    b.manual = d.get("manual")
    b.stored_machine = d["machine"]
    b.load_at_start = d["machine"].get("load_at_start")
    scale = first["time_scale"]
    # Reports from before the real-stack simulator have no host services.
    b.host_services = d.get("host_services", 0.0)
    b.ds_grace = d.get("ds_grace", round(first["node_seconds"] / scale - WORKLOAD_GRACE - b.host_services
                                         - DCM_CHANGE - PLUGIN_RESTART))
    b.deployments = [None] * d.get("deployments", b.n if args.pods_per_node else 0)
    b.pdb_max_unavailable = d.get("pdb_max_unavailable", first.get("pdb_max_unavailable"))
    b.commit = args.commit or d.get("commit", "?")
    b.stored_conditions = d.get("conditions")
    b.operator_user = (d.get("conditions") or {}).get("operator_user", OPERATOR_USER)
    # Again from the runs, so a re-render follows bench_real.HEADLINES as it is now.
    b.repeats = bench_real.repeats(runs)
    b.logs = d.get("logs")
    b.date = d.get("date", os.path.basename(args.from_json)[:10])
    for r in runs:
        r["samples"] = [{"t": t, "phases": ph, "rss_kb": rss, "cpu": cpu} for t, ph, rss, cpu in r.get("series", [])]
    base = args.from_json[:-len(".json")]
    b.chart(base + ".png")
    b.report(base)
    for r in runs:
        r.pop("samples", None)
    log(f"report: {base}.md (chart {base}.png)")


if __name__ == "__main__":
    main()
