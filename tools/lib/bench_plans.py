"""tools/bench --plans K: K PartitioningPlans created at once (one `kubectl create` of a
List) under a fresh operator, on the bench's N simulated nodes. With --select-all every
plan selects every node (`kubernetes.io/hostname Exists`, the control plane included):
each node is then selected by K plans, a conflict the operator must report without
touching the node. Without it, the plans share the nodes out (plan i takes nodes i, i+K,
...) and roll them out side by side.

One run per --api-qps value (the operator's client-side rate limit; none given: its
default), each with a fresh operator, until the operator has been quiet for
--settle-seconds with no node in flight (and, without --select-all, every node
Succeeded), or --max-run-seconds. Then from the API server's audit log: the operator's
requests a second (peak over any 1 s and 10 s, mean), by verb; from the operator: its peak
RSS and CPU, the time its requests waited for the limiter; from the API server: the
largest status the plans and NodePartitionings hold, and how many 429s it answered.
bench/README.md describes the scenario.

Called by bench.py (run_bench) with the Bench and bench.py's module, whose helpers it uses:
the harness's children and audit reading stay in one place."""
import datetime
import json
import os
import time

SCENARIO_LABEL = "bench.gpu-partitioner.io/scenario"
IN_FLIGHT = ["Draining", "Applying", "WaitingOperator", "Verifying"]


def plan_doc(name, profile, selector, max_parallel):
    return {"apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningPlan",
            "metadata": {"name": name, "labels": {SCENARIO_LABEL: "plans"}},
            "spec": {"rollout": {"maxParallel": max_parallel, "maxUnavailable": max_parallel,
                                 "drainPolicy": {"enabled": True, "timeoutSeconds": 7200,
                                                 "evictionKind": "Eviction", "respectPDB": True}},
                     "verification": {"gpuReadyLabel": "amd.com/gpu.ready",
                                      "requirePluginResources": ["amd.com/gpu"], "timeoutSeconds": 7200},
                     "partitionings": [{"name": "all", "selector": selector,
                                        "profileRef": {"kind": "PartitioningProfile", "name": profile}}]}}


def selectors(b, k, select_all):
    if select_all:
        return [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}] * k
    return [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                   "values": b.nodes[i::k]}]} for i in range(k)]


def sample(h, metrics_url, names):
    """What the operator's metrics say now: nodes by phase (all plans), the plans that
    have a phase, and its requests so far (watches and the Lease apart)."""
    phases, plans, requests = {}, set(), 0
    _, text = h.http_get(metrics_url + "/metrics")
    for n, labels, v in h.parse_metrics(text, names):
        if n == "gpu_partitioner_nodes":
            phases[labels["phase"]] = phases.get(labels["phase"], 0) + int(v)
        elif n == "gpu_partitioner_plan_phase" and v == 1:
            plans.add(labels["plan"])
        elif n == "gpu_partitioner_api_requests_total" and labels.get("verb") != "WATCH" \
                and labels.get("resource") != "leases":
            requests += int(v)
    return phases, plans, requests, text


def object_sizes(h, kind, selector=None):
    """How many objects of `kind` there are and the largest: their status and the whole
    object, as compact JSON (what the API server returns; managedFields left out)."""
    args = ["get", kind, "-o", "json"] + (["-l", selector] if selector else [])
    items = json.loads(h.kubectl(*args)).get("items", [])
    compact = lambda v: len(json.dumps(v, separators=(",", ":")))
    out = {"count": len(items), "largest_status_bytes": 0, "largest_status_of": None,
           "largest_object_bytes": 0, "status_bytes_total": 0}
    for item in items:
        item.get("metadata", {}).pop("managedFields", None)
        st = compact(item.get("status", {}))
        out["status_bytes_total"] += st
        if st > out["largest_status_bytes"]:
            out["largest_status_bytes"], out["largest_status_of"] = st, item["metadata"]["name"]
        out["largest_object_bytes"] = max(out["largest_object_bytes"], compact(item))
    if kind == "partitioningplans" and items:
        big = max(items, key=lambda i: compact(i.get("status", {})))
        st = big.get("status", {})
        out["largest"] = {"name": big["metadata"]["name"],
                          "conflicts": len(st.get("conflicts") or []),
                          "conditions": [{k: c.get(k) for k in ("type", "status", "reason")}
                                         for c in st.get("conditions") or []],
                          "message_bytes": max((len(c.get("message", "")) for c in st.get("conditions") or []),
                                               default=0)}
    return out


def one_run(b, h, index, qps):
    args = b.args
    k = args.plans
    profile = h.PROFILES[index % 2]
    scale = b.sim_scale
    max_parallel = max(b.parallel)
    tag = f"plans{k}-{index + 1}"
    op, metrics_url, oplog = b.start_operator(tag, h.DCM_CONFIG_SYNC * scale, qps)
    run = {"tag": tag, "nodes": b.n, "plans": k, "select_all": args.select_all,
           "max_parallel": max_parallel, "time_scale": scale, "profile": profile[0],
           "rate_limit": b.operator_rate_limit(oplog), "operator_log": oplog}
    h.log(f"run {index + 1}: {k} plans at once over {b.n} nodes "
          f"({'each selecting every node' if args.select_all else 'sharing the nodes out'}), "
          f"to {profile[1]}, maxParallel {max_parallel}, rate limit {run['rate_limit']}")
    names = ["gpu_partitioner_nodes", "gpu_partitioner_plan_phase", "gpu_partitioner_api_requests_total"]
    docs = [plan_doc(f"bench-plans-{index + 1}-{i:03d}", profile[0], sel, max_parallel)
            for i, sel in enumerate(selectors(b, k, args.select_all))]
    before = h.apiserver_requests()
    pids = b.component_pids()
    cpu0 = {c: h.proc_cpu_seconds(p) for c, p in pids.items()}
    op_cpu0 = h.proc_cpu_seconds(op.pid)

    t0 = time.time()
    h.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    t_created = time.time()
    samples = []
    last_requests, quiet_since = -1, time.time()
    outcome = "timeout"
    text = ""
    while time.time() - t0 < args.max_run_seconds:
        t = time.time()
        try:
            phases, plans, requests, text = sample(h, metrics_url, names)
        except OSError:
            phases, plans, requests = {}, set(), last_requests
        if requests != last_requests:
            last_requests, quiet_since = requests, t
        in_flight = sum(phases.get(p, 0) for p in IN_FLIGHT)
        samples.append({"t": t - t0, "phases": phases, "plans": len(plans), "requests": requests,
                        "rss_kb": h.proc_memory_kb(op.pid, "VmRSS"), "cpu": h.proc_cpu_seconds(op.pid)})
        if op.poll() is not None:
            outcome = f"operator exited ({op.returncode})"
            break
        if phases.get("Failed", 0) > 0:
            outcome = "a node failed"
            break
        done = args.select_all or phases.get("Succeeded", 0) == b.n
        if len(plans) >= k and in_flight == 0 and done and t - quiet_since >= args.settle_seconds:
            outcome = "settled"
            break
        time.sleep(max(0.0, 1.0 - (time.time() - t)))
    t_done = time.time()
    run.update({"outcome": outcome, "t_create": t0, "create_seconds": t_created - t0,
                "t_quiet": quiet_since, "t_done": t_done, "poll_seconds": t_done - t0,
                "samples": samples})
    run["operator_alive"] = op.poll() is None
    run["operator_peak_rss_kb"] = h.proc_memory_kb(op.pid, "VmHWM")
    run["operator_cpu_seconds"] = (h.proc_cpu_seconds(op.pid) or 0) - (op_cpu0 or 0)
    run["component_cpu_seconds"] = {c: (h.proc_cpu_seconds(p) or 0) - (cpu0[c] or 0)
                                    for c, p in pids.items() if cpu0.get(c) is not None}
    after = h.apiserver_requests()
    run["apiserver_requests"] = {f"{key[0]} {key[1]}": after.get(key, 0) - before.get(key, 0)
                                 for key in after if after.get(key, 0) - before.get(key, 0) > 0}
    if run["operator_alive"]:
        try:
            _, text = h.http_get(metrics_url + "/metrics")
        except OSError:
            pass
    om = h.parse_metrics(text, ["gpu_partitioner_"])
    q, count, total = h.histogram_quantiles(om, "gpu_partitioner_api_rate_limiter_duration_seconds",
                                            [0.5, 0.99])
    run["limiter_wait"] = {"count": count, "seconds_total": total, "p50": q[0.5], "p99": q[0.99]}
    run["operator_requests"] = {}
    for n, labels, v in om:
        if n == "gpu_partitioner_api_requests_total":
            key = f'{labels["verb"]} {labels["resource"]} {labels["code"]}'
            run["operator_requests"][key] = run["operator_requests"].get(key, 0) + int(v)
    final = samples[-1] if samples else {}
    run["final_phases"] = final.get("phases", {})
    run["plans_with_status"] = final.get("plans", 0)
    h.log(f"run {index + 1}: {outcome} after {t_done - t0:.1f} s; operator peak RSS "
          f"{(run['operator_peak_rss_kb'] or 0) / 1024:.1f} MiB, CPU {run['operator_cpu_seconds']:.1f} s")
    run["plans_size"] = object_sizes(h, "partitioningplans", f"{SCENARIO_LABEL}=plans")
    run["items_size"] = object_sizes(h, "nodepartitionings")

    # Clean up for the next run: the plans and their items go (finalizers need the
    # operator), then the operator.
    h.kubectl("delete", "partitioningplans", "-l", f"{SCENARIO_LABEL}=plans", "--wait=false")
    h.kubectl("delete", "nodepartitionings", "--all", "--wait=false", check=False)
    deadline = time.time() + 600 + b.n / 10
    while (h.kubectl("get", "nodepartitionings", "-o", "name").strip()
           or h.kubectl("get", "partitioningplans", "-o", "name").strip()):
        if time.time() > deadline:
            h.log("warning: plans or NodePartitionings still there after the clean-up's wait")
            break
        time.sleep(2)
    h.stop(op.pid)
    op.wait()
    b.plan_runs.append(run)
    return run["operator_alive"]


def analyse(b, h, run):
    """The operator's requests a second in the run, from the audit log (read_audit put
    the run's entries in `_audit`)."""
    audit = sorted(run.pop("_audit", []), key=lambda a: a["t"])
    is_op = lambda a: a["user"] == b.operator_user and a["agent"].startswith("gpu-partitioner/")
    creates = [a["t"] for a in audit if a["resource"] == "partitioningplans" and a["verb"] == "create"
               and not is_op(a)]
    start = min(creates) if creates else run["t_create"]
    op = [a for a in audit if is_op(a) and a["t"] >= start]
    lease = [a for a in op if a["resource"] == "leases"]
    reqs = [a for a in op if a["resource"] != "leases"]
    end = max((a["t"] for a in reqs), default=start)
    run["active_seconds"] = end - start
    run["request_rate"] = h.rates_by_verb(reqs, start, end)
    run["lease_requests"] = len(lease)
    writes = {}
    for a in reqs:
        if a["verb"] not in ("get", "list", "watch"):
            key = f'{a["verb"]} {a["resource"]}'
            writes[key] = writes.get(key, 0) + 1
    run["writes"] = dict(sorted(writes.items(), key=lambda kv: -kv[1]))
    codes = {}
    for a in reqs:
        codes[str(a["code"])] = codes.get(str(a["code"]), 0) + 1
    run["codes"] = codes
    # The API server's 429s (its flow control; an eviction a budget refuses) in the run: to
    # the operator, and to anyone.
    run["throttled_by_server"] = {"operator": sum(1 for a in reqs if a["code"] == 429),
                                  "anyone": sum(1 for a in audit if a["code"] == 429)}
    # Nodes the operator wrote to: with every node in conflict, only a plan that acted
    # before it saw the others would.
    run["nodes_written"] = len({a["name"] for a in reqs
                                if a["resource"].startswith("nodes") and a["verb"] in ("patch", "update")})
    # Per second from the plans' creation, for the chart.
    buckets = [0] * (int(end - start) + 1)
    for a in reqs:
        buckets[int(a["t"] - start)] += 1
    run["per_second"] = buckets


def chart(b, h, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        h.log("warning: no matplotlib (tools/setup installs python3-matplotlib); no chart")
        return False
    runs = b.plan_runs
    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 2.8 * len(runs)), squeeze=False)
    for ax, r in zip(axes[:, 0], runs):
        per = r.get("per_second") or [0]
        # From a zero before the first second, so that a spike there shows.
        ax.step(range(-1, len(per) + 1), [0] + per + [per[-1]], where="post", color="#1f77b4",
                linewidth=0.8, label="operator requests / s (audit log)")
        # The busiest second, marked: one second is under a pixel on a long run.
        top = max(range(len(per)), key=lambda i: per[i])
        ax.plot([top + 0.5], [per[top]], marker="v", color="#1f77b4", markersize=5)
        ax.annotate(f" {per[top]} in second {top}", (top + 0.5, per[top]), fontsize=7, va="center")
        lim = r.get("rate_limit")
        if lim and lim.get("qps"):
            ax.axhline(lim["qps"], color="#d62728", linestyle="--", linewidth=1, label=f'--api-qps {lim["qps"]:g}')
        ax.set_ylabel("requests / s")
        ax.set_xlim(-1, max(len(per), 1))
        rss = [(s["t"], s["rss_kb"] / 1024) for s in r.get("samples", []) if s.get("rss_kb")]
        if rss:
            ax2 = ax.twinx()
            ax2.plot([x for x, _ in rss], [y for _, y in rss], color="k", linewidth=0.8, label="operator RSS (MiB)")
            ax2.set_ylabel("RSS, MiB", fontsize=8)
            ax2.set_ylim(0, max(y for _, y in rss) * 1.1)
            ax2.legend(loc="upper right", fontsize=7)
        ax.legend(loc="upper center", fontsize=7)
        ax.set_title(f'{r["plans"]} plans at once over {r["nodes"]} nodes, rate limit {limit_text(lim)}: '
                     f'{r.get("outcome")}', fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the plans were created")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def server_429(r):
    t = r.get("throttled_by_server")
    return f'{t["operator"]} / {t["anyone"]}' if isinstance(t, dict) else str(t or 0)


def limit_text(lim):
    if not lim:
        return "n/a"
    if not lim.get("qps"):
        return "none (--api-qps 0)"
    return f'{lim["qps"]:g} qps, burst {lim["burst"]}'


def report(b, h, base):
    m = b.machine()
    runs = b.plan_runs
    fmt = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
    kib = lambda v: "n/a" if v is None else f"{v / 1024:.1f} KiB"
    a = b.args
    L = [f"# Bench: {a.plans} plans at once over {b.n} simulated MI300X nodes, {b.date}", ""]
    qps = ",".join(f'{r["rate_limit"]["qps"]:g}' for r in runs if r.get("rate_limit"))
    command = (f"tools/bench --nodes {b.n} --plans {a.plans}{' --select-all' if a.select_all else ''} "
               f"--api-qps {qps} --pods-per-node {a.pods_per_node} --max-parallel {max(b.parallel)} "
               f"--settle-seconds {a.settle_seconds:g} --max-run-seconds {a.max_run_seconds:g}")
    L.append(f"`{command}` at commit `{b.commit}` ({a.build} build), on \"{m['cpu']}\", {m['cores']} cores, "
             f"{m['memory_gib']} GiB, Linux {m['kernel']}; load average {m['load_at_start']} at the start. "
             "The machine runs the API server, etcd, the controller manager, the scheduler, gpu-sim and "
             "the operator at once, and is shared with other work. bench/README.md describes the "
             "scenario.")
    L.append("")
    how = ("every plan selects every node (`kubernetes.io/hostname Exists`): each node is selected by "
           f"{a.plans} plans, a conflict, and no node should change" if a.select_all else
           f"the plans share the nodes out ({b.n // max(a.plans, 1)} or so each) and roll them out side by side")
    L.append(f"{a.plans} PartitioningPlans created at once (one `kubectl create` of a List, "
             f"{fmt(runs[0].get('create_seconds') if runs else None)} s) under a fresh operator: {how}. "
             f"{a.pods_per_node} workload pods per node; maxParallel {max(b.parallel)} in every plan. "
             f"A run ends when the operator has sent nothing for {a.settle_seconds:g} s with no node in flight, "
             f"or after {a.max_run_seconds:g} s.")
    L.append("")
    L.append("## The operator's requests a second")
    L.append("")
    L.append("From the API server's audit log: every request of the operator (its Lease apart) from the "
             "plans' creation to its last request; peaks over any 1 s and any 10 s window, sliding.")
    L.append("")
    L.append("| rate limit | outcome | active | requests | peak 1 s | peak 10 s | mean | waited for the limiter "
             "| 429s from the API server (to the operator / to anyone) |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        rr = (r.get("request_rate") or {}).get("all") or {}
        w = r.get("limiter_wait") or {}
        L.append(f'| {limit_text(r.get("rate_limit"))} | {r["outcome"]} | {fmt(r.get("active_seconds"))} s | '
                 f'{rr.get("count", 0)} | {rr.get("peak_1s", "n/a")} | {fmt(rr.get("peak_10s"))} | '
                 f'{fmt(rr.get("mean"))} | {fmt(w.get("seconds_total"))} s over {w.get("count", 0)} requests '
                 f'(p99 {fmt((w.get("p99") or 0) * 1000, 0)} ms) | {server_429(r)} |')
    L.append("")
    L.append("By verb (peak 1 s / peak 10 s / mean, and how many):")
    L.append("")
    verbs = sorted({v for r in runs for v in (r.get("request_rate") or {}) if v != "all"})
    L.append("| rate limit | " + " | ".join(verbs) + " |")
    L.append("|---|" + "---|" * len(verbs))
    for r in runs:
        rr = r.get("request_rate") or {}
        cells = []
        for v in verbs:
            x = rr.get(v)
            cells.append("-" if not x else f'{x["peak_1s"]} / {x["peak_10s"]:.1f} / {x["mean"]:.2f} ({x["count"]})')
        L.append(f'| {limit_text(r.get("rate_limit"))} | ' + " | ".join(cells) + " |")
    L.append("")
    for r in runs:
        L.append(f'Writes, {limit_text(r.get("rate_limit"))}: ' +
                 (", ".join(f"{k} {v}" for k, v in r.get("writes", {}).items()) or "none") +
                 f'. Answers: ' + ", ".join(f"{k} {v}" for k, v in sorted(r.get("codes", {}).items())) +
                 f'. Lease requests: {r.get("lease_requests", 0)}. Nodes written to: '
                 f'{r.get("nodes_written", 0)}. Answers other than 2xx by the operator\'s own count: ' +
                 (", ".join(f"{k} {v}" for k, v in sorted(r.get("operator_requests", {}).items())
                            if not k.split()[-1].startswith("2")) or "none") + ".")
        L.append("")
    L.append("## What it holds and writes")
    L.append("")
    L.append("| rate limit | operator alive at the end | peak RSS | operator CPU | kube-apiserver CPU | etcd CPU | "
             "plans with a status | nodes by phase at the end | NodePartitionings | largest plan status | "
             "largest plan | largest NodePartitioning status |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        c = r.get("component_cpu_seconds", {})
        ps, its = r.get("plans_size", {}), r.get("items_size", {})
        phases = ", ".join(f"{k} {v}" for k, v in sorted(r.get("final_phases", {}).items()) if v) or "none"
        L.append(f'| {limit_text(r.get("rate_limit"))} | {"yes" if r.get("operator_alive") else "NO"} | '
                 f'{fmt((r.get("operator_peak_rss_kb") or 0) / 1024)} MiB | {fmt(r.get("operator_cpu_seconds"))} s | '
                 f'{fmt(c.get("kube-apiserver"))} s | {fmt(c.get("etcd"))} s | '
                 f'{r.get("plans_with_status", 0)} of {r["plans"]} | {phases} | {its.get("count", 0)} | '
                 f'{kib(ps.get("largest_status_bytes"))} ({ps.get("largest_status_of")}) | '
                 f'{kib(ps.get("largest_object_bytes"))} | {kib(its.get("largest_status_bytes"))} |')
    L.append("")
    for r in runs:
        big = (r.get("plans_size") or {}).get("largest")
        if big:
            L.append(f'The largest plan status, {limit_text(r.get("rate_limit"))}: {big["name"]}, '
                     f'{big["conflicts"]} conflicts listed, conditions ' +
                     ", ".join(f'{c["type"]}={c["status"]} ({c["reason"]})' for c in big["conditions"]) +
                     f', longest condition message {big["message_bytes"]} bytes.')
            L.append("")
    L.append(f"![operator requests a second over time]({os.path.basename(base)}.png)")
    L.append("")
    with open(base + ".md", "w") as f:
        f.write("\n".join(L) + "\n")


def sane(b):
    problems = []
    for r in b.plan_runs:
        tag = limit_text(r.get("rate_limit"))
        if r["outcome"] != "settled":
            problems.append(f"{tag}: {r['outcome']}")
        if not r.get("operator_alive"):
            problems.append(f"{tag}: the operator did not survive")
        if r.get("plans_with_status", 0) < r["plans"]:
            problems.append(f"{tag}: only {r.get('plans_with_status')} of {r['plans']} plans have a phase")
        if not ((r.get("request_rate") or {}).get("all") or {}).get("count"):
            problems.append(f"{tag}: no request of the operator in the audit log")
        if not r.get("operator_peak_rss_kb"):
            problems.append(f"{tag}: no RSS figure")
    return problems


def write(b, h, base, seconds, step=5):
    chart(b, h, base + ".png")
    report(b, h, base)
    with open(base + ".json", "w") as f:
        runs = []
        for r in b.plan_runs:
            r = dict(r)
            r["series"] = [[round(s["t"], 1), s["phases"], s["plans"], s["requests"], s["rss_kb"], s["cpu"]]
                           for s in r.pop("samples", [])[::step]]
            runs.append(r)
        json.dump({"scenario": "plans", "machine": b.machine(), "runs": runs, "seconds": seconds,
                   "commit": b.commit, "date": b.date, "build": b.args.build, "plans": b.args.plans,
                   "select_all": b.args.select_all, "pods_per_node": b.args.pods_per_node,
                   "settle_seconds": b.args.settle_seconds, "max_run_seconds": b.args.max_run_seconds,
                   "max_parallel": max(b.parallel), "nodes": b.n}, f, indent=1, default=str)


def run(b, h):
    """The scenario, after Bench.setup: one run per --api-qps value, the report."""
    args = b.args
    b.plan_runs = []
    t_start = time.time()
    for i, qps in enumerate(args.api_qps):
        if not one_run(b, h, i, qps):
            h.log("the operator did not survive a run; stopping")
            break
    h.log("reading the audit log")
    b.read_audit()
    for r in b.plan_runs:
        analyse(b, h, r)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"{datetime.date.today().isoformat()}-{args.nodes}-plans{args.plans}")
    write(b, h, base, time.time() - t_start)
    h.log(f"report: {base}.md (chart {base}.png)")
    problems = sane(b)
    for p in problems:
        h.log("not sane: " + p)
    raise SystemExit(1 if problems else 0)


def rerender(h, args, d):
    """The report and chart again from a run's JSON."""
    b = h.Bench.__new__(h.Bench)
    b.args = args
    args.plans, args.select_all = d["plans"], d["select_all"]
    args.pods_per_node, args.build = d["pods_per_node"], d.get("build", args.build)
    args.settle_seconds, args.max_run_seconds = d["settle_seconds"], d["max_run_seconds"]
    b.n = d["nodes"]
    b.parallel = [d["max_parallel"]]
    b.stored_machine = d["machine"]
    b.commit = args.commit or d.get("commit", "?")
    b.date = d.get("date")
    b.plan_runs = d["runs"]
    for r in b.plan_runs:
        r["samples"] = [{"t": t, "phases": ph, "plans": pl, "requests": rq, "rss_kb": rss, "cpu": cpu}
                        for t, ph, pl, rq, rss, cpu in r.get("series", [])]
    base = args.from_json[:-len(".json")]
    write(b, h, base, d.get("seconds"), step=1)
    h.log(f"report: {base}.md (chart {base}.png)")
