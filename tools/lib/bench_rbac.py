#!/usr/bin/env python3
"""The RBAC part of a `helm template` of the chart: its ServiceAccount, ClusterRoles, Roles
and their bindings, for tools/bench --operator-sa (the operator then runs outside the
cluster as that ServiceAccount, with exactly the chart's permissions).

    python3 tools/lib/bench_rbac.py RENDERED.yaml > rbac.yaml"""
import re
import sys

KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def rbac_documents(text):
    for doc in re.split(r"^---\s*$", text, flags=re.M):
        kind = re.search(r"^kind:\s*(\S+)", doc, flags=re.M)
        if kind and kind.group(1) in KINDS:
            yield doc.strip("\n")


if __name__ == "__main__":
    docs = list(rbac_documents(open(sys.argv[1]).read()))
    if not any(re.search(r"^kind:\s*ServiceAccount", d, flags=re.M) for d in docs):
        sys.exit("bench_rbac.py: the rendered chart has no ServiceAccount")
    print("\n---\n".join(docs))
