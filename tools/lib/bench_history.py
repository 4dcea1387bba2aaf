"""One row per rollout of a tools/bench report, for bench/results/history.md.

    python3 tools/lib/bench_history.py REPORT.json...   # prints the rows
tools/bench appends its run's rows to history.md in its --out directory."""
import json
import os
import sys

HEADER = """# Every bench run

One row per rollout, appended by `tools/bench`. The directory keeps the latest report of
each kind; the others are in git history under the name in the first column. "per wave"
is the overhead (wall minus ideal) per wave; reaction p99 is the operator's metric and
the audit log's. Runs up to `8cad1cb` were on the simulator before issue 21, whose node
took 185 s at time scale 1 (no host services, no config lag); later runs take 205 s.

| report | commit | nodes | maxParallel | namespaces | time scale | ideal | wall | per wave | reaction p99 | peak RSS | operator CPU |
|---|---|---|---|---|---|---|---|---|---|---|---|
"""


def ms(v):
    return f"{v * 1000:.0f}" if isinstance(v, (int, float)) else "-"


def rows(path):
    with open(path) as f:
        d = json.load(f)
    name = os.path.basename(path)[:-len(".json")]
    out = []
    for r in d["runs"]:
        if "wall_seconds" not in r:
            continue
        metric = (r.get("reaction_metric") or {}).get("p99")
        audit = (r.get("reaction_audit") or {}).get("p99")
        mp = (f'{r["max_parallel"]}' + (f' {r["operator"]}' if r.get("operator") else "") +
              (f' #{r["round"] + 1}' if r.get("rounds", 1) > 1 else ""))
        out.append(f'| {name} | `{d.get("commit", "?")}` | {r["nodes"]} | {mp} | '
                   f'{d.get("namespaces", 1)} | {r["time_scale"]:g} | {r["ideal_seconds"]:.1f} s | '
                   f'{r["wall_seconds"]:.1f} s | {r.get("overhead_per_wave", 0):.2f} s | '
                   f'{ms(metric)} / {ms(audit)} ms | {r.get("operator_peak_rss_kb", 0) / 1024:.1f} MiB | '
                   f'{r.get("operator_cpu_seconds", 0):.1f} s |')
    return out


def append(history, report_json):
    """Adds a report's rows to history (created with its header if missing)."""
    new = not os.path.exists(history)
    with open(history, "a") as f:
        if new:
            f.write(HEADER)
        for line in rows(report_json):
            f.write(line + "\n")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print("\n".join(rows(p)))
