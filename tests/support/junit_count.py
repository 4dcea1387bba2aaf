#!/usr/bin/env python3
"""The case ledger of tools/test.

  junit_count.py count BEP RUN LEDGER
      Reads one `bazel test` run's build event file (one JSON object per line): each test
      target's overall status and its JUnit reports. Appends one line per case to LEDGER
      and prints the number of failed cases. A target that failed without a report that
      says why (a crash, a timeout, a build error) is one failed case, so nothing that
      failed can be counted as passed. On stderr: the failed cases and the slowest targets.
  junit_count.py xml REPORT RUN LABEL LEDGER
      The same for one JUnit report of a suite run outside Bazel (tests/node).
  junit_count.py summary LEDGER
      The closing lines of tools/test: what ran beside the distinct cases (data points,
      sanitizer re-runs), the failed cases by name (the first 20), then "N passed, N
      failed" over distinct cases. Exits 1 if any case failed.

A ledger line is RUN <tab> LABEL <tab> CASE <tab> pass|fail. RUN is the build a case ran
in ("plain", "asan", "tsan", or a suite of tools/test's own). A distinct case is a test
body: LABEL and CASE with a data-driven case's instance ("_0", "_1", ...) left out. It
fails if any of its runs or instances failed.

A Boost.Test case that checked no assertion at all fails: it cannot fail when its subject
breaks. (Boost writes assertions="N" for each case; shell suites write no count.)
"""
import json
import re
import sys
import xml.etree.ElementTree as ET
from urllib.parse import urlparse, unquote

# Boost.Test names a data-driven case's instances _0, _1, ... inside a suite named after it.
INSTANCE = re.compile(r"^_\d+$")


def cases_in(path):
    """(case name, failed, why) for each case that ran; skipped cases are left out."""
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        name = case.get("name", "?")
        classname = case.get("classname", "")
        full = f"{classname}/{name}" if classname else name
        if case.find("failure") is not None or case.find("error") is not None:
            yield full, True, "failed"
        elif case.get("assertions") == "0":
            yield full, True, "checked no assertion"
        else:
            yield full, False, ""


def record(ledger, run, label, path):
    """Appends the cases of one report; returns (passed, failed)."""
    p = f = 0
    try:
        for name, bad, why in cases_in(path):
            ledger.write(f"{run}\t{label}\t{name}\t{'fail' if bad else 'pass'}\n")
            if bad:
                f += 1
                print(f"failed ({run}): {label} {name}: {why}", file=sys.stderr)
            else:
                p += 1
    except (OSError, ET.ParseError) as err:
        print(f"unreadable report for {label}: {err}", file=sys.stderr)
    return p, f


def count(bep_path, run, ledger_path):
    summaries = {}
    reports = {}
    seconds = {}
    aborted = set()
    with open(bep_path) as f:
        for line in f:
            event = json.loads(line)
            ident = event.get("id", {})
            if "testSummary" in ident:
                label = ident["testSummary"]["label"]
                summaries[label] = event.get("testSummary", {}).get("overallStatus", "NO_STATUS")
            elif "testResult" in ident:
                label = ident["testResult"]["label"]
                result = event.get("testResult", {})
                ms = int(result.get("testAttemptDurationMillis", 0) or 0)
                seconds[label] = seconds.get(label, 0) + ms / 1000
                for out in result.get("testActionOutput", []):
                    if out.get("name") == "test.xml":
                        reports.setdefault(label, []).append(unquote(urlparse(out["uri"]).path))
            elif "targetCompleted" in ident and event.get("completed", {}).get("success") is False:
                aborted.add(ident["targetCompleted"]["label"])
            elif "aborted" in event and "targetCompleted" in ident:
                aborted.add(ident["targetCompleted"]["label"])
    for label in sorted(aborted - set(summaries)):
        summaries[label] = "FAILED_TO_BUILD"
    failed = 0
    with open(ledger_path, "a") as ledger:
        for label, status in sorted(summaries.items()):
            p = f = 0
            for path in reports.get(label, []):
                dp, df = record(ledger, run, label, path)
                p, f = p + dp, f + df
            if status != "PASSED" and f == 0:
                f = 1
                ledger.write(f"{run}\t{label}\t({status})\tfail\n")
                print(f"failed ({run}): {label} ({status})", file=sys.stderr)
            failed += f
    slowest = sorted(seconds.items(), key=lambda kv: -kv[1])[:5]
    if slowest:
        print(f"slowest targets ({run}): " +
              ", ".join(f"{label} {s:.0f} s" for label, s in slowest), file=sys.stderr)
    print(failed)


def one_report(path, run, label, ledger_path):
    with open(ledger_path, "a") as ledger:
        _, f = record(ledger, run, label, path)
    print(f)


def summary(ledger_path):
    bodies = {}  # (label, body) -> failed
    instances = set()  # (label, case) over every run
    runs = 0
    with open(ledger_path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            run, label, case, status = parts
            runs += 1
            instances.add((label, case))
            head, _, last = case.rpartition("/")
            body = head if head and INSTANCE.match(last) else case
            key = (label, body)
            bodies[key] = bodies.get(key, False) or status != "pass"
    bad = sorted(key for key, is_bad in bodies.items() if is_bad)
    failed = len(bad)
    data_points = len(instances) - len(bodies)
    reruns = runs - len(instances)
    # Named again at the very end, where a reader of the run's last lines finds them: the
    # lines that reported them may be thousands of lines up.
    for label, body in bad[:20]:
        print(f"failed: {label} {body}")
    if len(bad) > 20:
        print(f"failed: and {len(bad) - 20} more")
    print(f"beside the distinct cases: {data_points} more data points of data-driven cases "
          f"(seeds, grid points, table rows) and {reruns} re-runs in another build "
          f"(sanitizers); {runs} case runs in all")
    print(f"{len(bodies) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if len(argv) == 4 and argv[0] == "count":
        count(*argv[1:])
    elif len(argv) == 5 and argv[0] == "xml":
        one_report(*argv[1:])
    elif len(argv) == 2 and argv[0] == "summary":
        return summary(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
