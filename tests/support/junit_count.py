#!/usr/bin/env python3
"""Counts test cases across one `bazel test` run for tools/test.

Reads the run's build event file (one JSON object per line) for each test target's
overall status and the path of its JUnit report, then counts <testcase> elements. A
target that failed without a report that says why (a crash, a timeout, a build error)
counts as one failed case, so nothing that failed can be counted as passed.
Prints "PASSED FAILED" and, on stderr, the failed cases.
"""
import json
import sys
import xml.etree.ElementTree as ET
from urllib.parse import urlparse, unquote


def cases_in(path):
    """(name, failed) for each case that ran; skipped cases are left out."""
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        bad = case.find("failure") is not None or case.find("error") is not None
        yield case.get("name", "?"), bad


def main(bep_path, extra_passed, extra_failed):
    passed, failed = int(extra_passed), int(extra_failed)
    summaries = {}
    reports = {}
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
                for out in event.get("testResult", {}).get("testActionOutput", []):
                    if out.get("name") == "test.xml":
                        reports.setdefault(label, []).append(unquote(urlparse(out["uri"]).path))
            elif "targetCompleted" in ident and event.get("completed", {}).get("success") is False:
                aborted.add(ident["targetCompleted"]["label"])
            elif "aborted" in event and "targetCompleted" in ident:
                aborted.add(ident["targetCompleted"]["label"])
    for label in sorted(aborted - set(summaries)):
        summaries[label] = "FAILED_TO_BUILD"
    for label, status in sorted(summaries.items()):
        p = f = 0
        for path in reports.get(label, []):
            try:
                for name, bad in cases_in(path):
                    if bad:
                        f += 1
                        print(f"failed: {label} {name}", file=sys.stderr)
                    else:
                        p += 1
            except (OSError, ET.ParseError) as err:
                print(f"unreadable report for {label}: {err}", file=sys.stderr)
        if status != "PASSED" and f == 0:
            f = 1
            print(f"failed: {label} ({status})", file=sys.stderr)
        passed += p
        failed += f
    print(passed, failed)


if __name__ == "__main__":
    main(*sys.argv[1:4])
