#!/usr/bin/env python3
"""The operator's scaling curve from several tools/bench reports of one commit, each at its
own number of nodes (run with --same-operator, so that each holds the operator's memory
before, at the peak of and after each of its plans):

    /usr/bin/python3 tools/lib/bench_curve.py --out bench/results/DATE-curve-COMMIT A.json B.json ...

Writes OUT.md (a table per size: medians over the size's plans with min and max, and the
slope of each figure against the number of nodes on log-log axes) and OUT.png (the same,
log-log). Exits non-zero when the reports are of different commits or lack the figures."""
import argparse
import json
import math
import os
import statistics
import sys


def mib(kb):
    return None if not kb else kb / 1024


# (key, what it is, unit, how it is taken from a run)
FIGURES = [
    ("rss_idle", "RSS before the plan", "MiB", lambda r, n: mib(r.get("rss_idle_kb"))),
    ("rss_peak", "RSS at the plan's peak", "MiB", lambda r, n: mib(r.get("rss_peak_kb"))),
    ("rss_after", "RSS after the plan was gone", "MiB", lambda r, n: mib(r.get("rss_after_gone_kb"))),
    ("cpu_per_node", "operator CPU per node", "ms", lambda r, n: 1000 * r["operator_cpu_seconds"] / n
     if r.get("operator_cpu_seconds") else None),
    ("requests_per_node", "operator requests per node (audit log)", "",
     lambda r, n: r.get("audit_requests_per_node_total")),
    ("writes_per_node", "operator writes per node (audit log)", "",
     lambda r, n: r.get("audit_writes_per_node_total")),
    ("overhead_per_wave", "overhead per wave", "s", lambda r, n: r.get("overhead_per_wave")),
]


def slope(points):
    """The least-squares slope of log(y) on log(x): 1 is linear in the nodes, 0 flat."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y and y > 0]
    if len(pts) < 2:
        return None
    mx = statistics.mean(p[0] for p in pts)
    my = statistics.mean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return None if den == 0 else sum((p[0] - mx) * (p[1] - my) for p in pts) / den


def load(paths):
    sizes = {}
    commits = set()
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        commits.add(doc.get("commit"))
        runs = [r for r in doc["runs"] if r.get("outcome") == "completed"]
        if not runs:
            sys.exit(f"{p}: no completed rollout")
        n = runs[0]["nodes"]
        sizes.setdefault(n, {"runs": [], "files": [], "doc": doc})
        sizes[n]["runs"] += runs
        sizes[n]["files"].append(os.path.basename(p))
    if len(commits) != 1:
        sys.exit(f"the reports are of different commits: {sorted(str(c) for c in commits)}")
    return sizes, commits.pop()


def summarise(sizes):
    out = {}
    for n, s in sorted(sizes.items()):
        row = {}
        for key, _, _, take in FIGURES:
            values = [v for v in (take(r, n) for r in s["runs"]) if v is not None]
            if values:
                row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                            "values": values}
        out[n] = row
    return out


def fmt(x):
    if x is None:
        return "n/a"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def report(out, sizes, table, commit):
    L = [f"# The operator's scaling curve at `{commit}`", ""]
    first = next(iter(sizes.values()))["doc"]
    m = first.get("machine", {})
    L.append(f"From the tools/bench reports {', '.join(f for s in sizes.values() for f in s['files'])}, "
             f"on {m.get('cpu', 'this machine')} ({m.get('cores', '?')} cores). Each size's plans ran one "
             "after the other in one operator process (--same-operator), each moving every node to the "
             "other profile; the figures are medians over them, with min and max.")
    L.append("")
    L.append("| nodes | plans | " + " | ".join(f"{what}{' (' + unit + ')' if unit else ''}"
                                                 for _, what, unit, _ in FIGURES) + " |")
    L.append("|---|---|" + "---|" * len(FIGURES))
    for n, row in table.items():
        cells = []
        for key, _, _, _ in FIGURES:
            c = row.get(key)
            cells.append("n/a" if not c else f"{fmt(c['median'])} ({fmt(c['min'])}-{fmt(c['max'])})")
        L.append(f"| {n} | {len(sizes[n]['runs'])} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Slope on log-log axes against the number of nodes (1: grows with the fleet; 0: flat):")
    L.append("")
    for key, what, _, _ in FIGURES:
        b = slope([(n, row[key]["median"]) for n, row in table.items() if key in row])
        L.append(f"- {what}: {'n/a' if b is None else f'{b:.2f}'}")
    L.append("")
    L.append("Across the plans of one size, in the order they ran (RSS before / peak / after, MiB):")
    L.append("")
    for n, s in sorted(sizes.items()):
        seq = "; ".join(f"{fmt(mib(r.get('rss_idle_kb')))} / {fmt(mib(r.get('rss_peak_kb')))} / "
                        f"{fmt(mib(r.get('rss_after_gone_kb')))}" for r in s["runs"])
        L.append(f"- {n} nodes: {seq}")
    with open(out + ".md", "w") as f:
        f.write("\n".join(L) + "\n")


def chart(out, table, commit):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = [("RSS, MiB", ["rss_idle", "rss_peak", "rss_after"]),
              ("CPU per node, ms", ["cpu_per_node"]),
              ("per node", ["requests_per_node", "writes_per_node"])]
    fig, axes = plt.subplots(1, len(groups), figsize=(13, 4))
    names = {k: w for k, w, _, _ in FIGURES}
    for ax, (title, keys) in zip(axes, groups):
        for key in keys:
            pts = [(n, row[key]) for n, row in table.items() if key in row]
            if not pts:
                continue
            xs = [n for n, _ in pts]
            ys = [c["median"] for _, c in pts]
            err = [[c["median"] - c["min"] for _, c in pts], [c["max"] - c["median"] for _, c in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=names[key])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", linewidth=0.3)
    fig.suptitle(f"gpu-partitioner at {commit}: scaling with the fleet", fontsize=10)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="the report's path without .md/.png")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()
    sizes, commit = load(args.reports)
    table = summarise(sizes)
    report(args.out, sizes, table, commit)
    chart(args.out, table, commit)
    print(f"{args.out}.md, {args.out}.png")


if __name__ == "__main__":
    main()
