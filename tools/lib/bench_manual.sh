#!/usr/bin/env bash
# The documented manual procedure for one node (shared/reference/amd-dcm.md, "The
# documented manual procedure"), as a careful user scripts it with kubectl today; run by
# tools/bench side by side with the operator.
#   bench_manual.sh NODE DCM_PROFILE EXPECTED_GPU_COUNT
set -euo pipefail
node=$1 profile=$2 expected=$3
timeout=${BENCH_MANUAL_TIMEOUT:-3600s}

# 3. Taint the node: every pod that does not tolerate amd-dcm=up:NoExecute is deleted at
#    once, PodDisruptionBudgets or not (no cordon, no drain).
kubectl taint nodes "$node" amd-dcm=up:NoExecute
# 4. Wait until those pods are gone (here every pod but DCM's own, which tolerates it).
others=app.kubernetes.io/name!=device-config-manager
pods_left() { kubectl get pods -A -l "$others" --field-selector "spec.nodeName=$node" -o name | grep -q .; }
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
