#!/usr/bin/env python3
"""Renders a PartitioningPlan's rollout for tools/demo: a table of nodes with their phase
and time in phase, a progress bar, drains blocked by PDBs, the latest events; or, with
--plain, one line per change (for logs and CI). Reads `kubectl get -o json` output."""
import datetime
import json
import subprocess
import sys

PHASES = ["Pending", "Draining", "Applying", "WaitingOperator", "Verifying", "Succeeded", "Failed"]


def kubectl(*args):
    out = subprocess.run(["kubectl", *args, "-o", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def parse_time(text):
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def seconds(delta):
    return int(delta.total_seconds()) if delta else 0


def snapshot(plan_name):
    plan = kubectl("get", "partitioningplan", plan_name)
    items = kubectl("get", "nodepartitionings")
    events = kubectl("get", "events", "-A", "--sort-by=.lastTimestamp")
    rows = []
    now = datetime.datetime.now(datetime.timezone.utc)
    for item in (items or {}).get("items", []):
        if item["spec"]["planRef"]["name"] != plan_name:
            continue
        st = item.get("status", {})
        history = st.get("history", [])
        since = parse_time(history[-1]["time"]) if history else None
        drain = st.get("drain", {})
        rows.append({
            "node": item["spec"]["nodeName"],
            "profile": item["spec"]["profileRef"]["name"],
            "phase": st.get("phase", "Pending"),
            "in_phase": seconds(now - since) if since else 0,
            "blocked": [p["namespace"] + "/" + p["name"] for p in drain.get("blockingPDBs", [])],
            "error": st.get("lastError", ""),
            "history": history,
            "evicted": drain.get("podsEvicted", 0),
        })
    rows.sort(key=lambda r: r["node"])
    recent = []
    for e in (events or {}).get("items", [])[-6:]:
        obj = e.get("involvedObject", {})
        recent.append(f'{e.get("reason", "")} {obj.get("kind", "")}/{obj.get("name", "")}: '
                      f'{e.get("message", "")[:90]}')
    return plan, rows, recent


def bar(done, total, width=40):
    filled = int(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total}"


def render(plan, rows, recent):
    st = (plan or {}).get("status", {})
    nodes = st.get("nodes", {})
    lines = [f'plan {plan["metadata"]["name"] if plan else "?"}: {st.get("phase", "Pending")}   '
             + bar(nodes.get("succeeded", 0), nodes.get("total", len(rows))), ""]
    lines.append(f'{"NODE":<16} {"PROFILE":<22} {"PHASE":<16} {"IN PHASE":>8}  NOTE')
    for r in rows:
        note = ("blocked by PDB " + ", ".join(r["blocked"])) if r["blocked"] else r["error"][:60]
        lines.append(f'{r["node"]:<16} {r["profile"]:<22} {r["phase"]:<16} {r["in_phase"]:>7}s  {note}')
    lines += ["", "latest events:"] + ["  " + e for e in recent]
    return "\n".join(lines)


def summary(plan, rows, started):
    per_phase = {p: [] for p in PHASES}
    for r in rows:
        h = r["history"]
        for a, b in zip(h, h[1:]):
            ta, tb = parse_time(a["time"]), parse_time(b["time"])
            if ta and tb:
                per_phase[a["phase"]].append((tb - ta).total_seconds())
    st = (plan or {}).get("status", {})
    out = [f'plan phase: {st.get("phase")}; {st.get("nodes", {}).get("succeeded", 0)} of '
           f'{len(rows)} nodes succeeded, {st.get("nodes", {}).get("failed", 0)} failed',
           f"wall time: {int(datetime.datetime.now().timestamp() - started)} s"]
    for p in PHASES[1:5]:
        v = per_phase[p]
        if v:
            out.append(f"  {p:<16} mean {sum(v) / len(v):6.1f} s   max {max(v):6.1f} s   ({len(v)} nodes)")
    blocked = kubectl("get", "events", "-A", "--field-selector", "reason=DrainBlocked")
    prefix = (plan or {}).get("metadata", {}).get("name", "") + "-"
    waited = {e["involvedObject"]["name"][len(prefix):] for e in (blocked or {}).get("items", [])
              if e["involvedObject"]["name"].startswith(prefix)}
    out.append(f'pods evicted: {sum(r["evicted"] for r in rows)}')

    def drain_seconds(r):
        h = r["history"]
        for a, b in zip(h, h[1:]):
            if a["phase"] == "Draining":
                ta, tb = parse_time(a["time"]), parse_time(b["time"])
                if ta and tb:
                    return (tb - ta).total_seconds()
        return None

    def mean(v):
        return sum(v) / len(v) if v else 0.0

    if waited:
        slow = [d for r in rows if r["node"] in waited for d in [drain_seconds(r)] if d is not None]
        fast = [d for r in rows if r["node"] not in waited for d in [drain_seconds(r)] if d is not None]
        line = (f"PDB waits: {len(waited)} of {len(rows)} nodes had an eviction refused by a "
                f"PodDisruptionBudget and waited; their drains took {mean(slow):.1f} s on average")
        if fast:
            line += f", against {mean(fast):.1f} s for the others"
        out.append(line)
    else:
        out.append("PDB waits: none (no eviction was refused by a PodDisruptionBudget)")
    return "\n".join(out)


def main():
    plan_name, mode, started = sys.argv[1], sys.argv[2], float(sys.argv[3])
    plan, rows, recent = snapshot(plan_name)
    if mode == "table":
        print(render(plan, rows, recent))
    elif mode == "plain":
        st = (plan or {}).get("status", {})
        phases = " ".join(f'{r["node"]}={r["phase"]}' for r in rows)
        print(f'{st.get("phase", "Pending")} {phases}')
    elif mode == "summary":
        print(summary(plan, rows, started))
    elif mode == "done":
        phase = (plan or {}).get("status", {}).get("phase")
        sys.exit(0 if phase in ("Completed", "Degraded") else 1)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The reader went (the demo's shell was closed): nothing is left to show it to.
        sys.exit(1)
