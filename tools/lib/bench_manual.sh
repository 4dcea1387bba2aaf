#!/usr/bin/env bash
# The manual procedure for one node as a careful user scripts it with kubectl today: AMD's
# documented steps (shared/reference/amd-dcm.md, "The documented manual procedure") with a
# PodDisruptionBudget-respecting drain before the taint and the uncordon after the check;
# run by tools/bench side by side with the operator.
#   bench_manual.sh NODE DCM_PROFILE EXPECTED_GPU_COUNT
set -euo pipefail
node=$1 profile=$2 expected=$3
timeout=${BENCH_MANUAL_TIMEOUT:-3600s}

# 1. Cordon and drain: kubectl evicts every pod but DaemonSets' through the Eviction API,
#    retrying one a budget refuses every 5 s, and waits until they are gone.
kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout="$timeout" >/dev/null 2>&1
# 3. Taint the node: the pods left that do not tolerate amd-dcm=up:NoExecute (the device
#    plugin's) are deleted.
kubectl taint nodes "$node" amd-dcm=up:NoExecute
# 4. Wait until those pods are gone (here every pod but DCM's own, which tolerates it).
others=app.kubernetes.io/name!=device-config-manager
pods_left() { kubectl get pods -A -l "$others" --field-selector "spec.nodeName=$node" -o name | grep . >/dev/null; }
if pods_left; then
  # (kubectl wait fails when the last pod went between the two commands: check again.)
  kubectl wait --for=delete pods -A -l "$others" --field-selector "spec.nodeName=$node" \
    --timeout="$timeout" >/dev/null || ! pods_left
fi
# 5. Hand the profile to DCM. The stale state label goes in the same command: DCM does not
#    remove it, and a `success` left from the last change would end the wait below at once.
kubectl label node "$node" "dcm.amd.com/gpu-config-profile=$profile" dcm.amd.com/gpu-config-profile-state- --overwrite
# 6. Wait for DCM's answer.
kubectl wait node "$node" --for=jsonpath='{.metadata.labels.dcm\.amd\.com/gpu-config-profile-state}'=success \
  --timeout="$timeout" >/dev/null
# 7. Untaint; the device plugin restarts and reports the new partitions.
kubectl taint nodes "$node" amd-dcm=up:NoExecute-
# Check the result before going on to the next node.
kubectl wait node "$node" --for=jsonpath='{.status.allocatable.amd\.com/gpu}'="$expected" --timeout="$timeout" >/dev/null
kubectl wait node "$node" --for=jsonpath='{.metadata.labels.amd\.com/gpu\.ready}'=true --timeout="$timeout" >/dev/null
# Back into service.
kubectl uncordon "$node" >/dev/null
