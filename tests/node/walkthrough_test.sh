#!/usr/bin/env bash
# tests/node/walkthrough_test.sh: docs/install.md's walkthrough, its commands as written,
# on a cluster with a real node (`tools/cluster up --with-node`) and simulated MI300X nodes
# (tools/sim, standing in for AMD's GPU operator: DCM, device plugin, labeller, NFD).
# Each ```sh block after a `<!-- walkthrough: NAME -->` line of the doc is one step, run
# by bash -euo pipefail in a scratch checkout (the repository's helm/ and manifests/) with
# the doc's variables block before it; the test runs every such step once, in the doc's
# order, and fails on a step it does not know or one it misses. Between steps it checks
# the outcome: the dry run touches no node, the plan completes with every node CPX+NPS4
# (gpu-sim's modes), none cordoned or tainted, a failed node is retried, the uninstall
# leaves nothing of the operator.
# What a real cluster has and this machine does not is made before the doc's commands,
# and said so where it is done: the image on the node, AMD's GPU operator (gpu-sim), a
# node whose GPUs fail, and its repair.
# Needs root and tools/setup's packages. Run by tools/test (full runs) between
# tests/node/node_test.sh and helm_pod_test.sh, on their cluster, leaving it as it found
# it; its last line is "N passed, N failed".
# WALKTHROUGH_TEST_CLUSTER (else HELM_POD_TEST_CLUSTER, else walk-PID) names the cluster;
# with NODE_SUITE_SHARED=1 (tools/test) it is up already and stays up, else the test
# brings it up and down.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=tests/support/shtest.sh
source tests/support/shtest.sh
# shellcheck source=tools/lib/common.sh
source tools/lib/common.sh # wait_until

cluster=${WALKTHROUGH_TEST_CLUSTER:-${HELM_POD_TEST_CLUSTER:-walk-$$}}
shared=${NODE_SUITE_SHARED:-0}
state_root=${GPU_PARTITIONER_STATE:-$HOME/.local/state/gpu-partitioner}
cluster_dir=$state_root/clusters/$cluster
work=$(mktemp -d)
readonly doc=docs/install.md
# The steps, in the doc's order. A step the doc gains or renames fails the test until it is
# run here: every command of the walkthrough is tested.
readonly steps=(variables look dcm taint install dry-run roll-out watch why-failed retry upgrade uninstall)
# The simulated stack at 1/20 of its real delays; the chart's own waits stay as installed.
readonly time_scale=0.05
# Bounds each step of the doc: its own waits are sized for real nodes (up to an hour).
readonly step_timeout=240
# The image under the chart's default name and tag (its appVersion).
readonly image_ref=docker.io/library/gpu-partitioner:0.1.0-dev
readonly failing_node=gpu-node-02

cleanup() {
  # gpu-sim's objects too when the cluster stays (after a failure midway).
  (use_cluster 2>/dev/null && tools/sim down --name "$cluster") >/dev/null 2>&1
  [ "$shared" = 1 ] || tools/cluster down --name "$cluster" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

use_cluster() { eval "$(tools/cluster env --name "$cluster")"; }
note() { printf '%s\n' "$@" | tee -a "$work/notes"; }

# doc_step NAME: the commands of the ```sh block after `<!-- walkthrough: NAME -->`.
doc_step() {
  awk -v want="<!-- walkthrough: $1 -->" '
    $0 == want { armed = 1; next }
    armed && /^```sh$/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }
    armed && !inside && NF { exit 1 }' "$doc"
}

# run_doc NAME: runs the doc's step NAME as written, with its variables block first, in the
# scratch checkout; its output is kept in $work/NAME.out and shown.
run_doc() {
  local body
  body=$(doc_step "$1") && [ -n "$body" ] || { echo "no \`\`\`sh block after <!-- walkthrough: $1 --> in $doc"; return 1; }
  echo "$1" >>"$work/ran"
  printf '%s\n' "$(doc_step variables)" "set -x" "$body" >"$work/$1.sh"
  (cd "$work/checkout" && timeout "$step_timeout" bash -euo pipefail "$work/$1.sh") >"$work/$1.out" 2>&1
  local rc=$?
  cat "$work/$1.out"
  return "$rc"
}

# Nodes, one line each: name cordoned amd-dcm-taint profile state allocatable modes ours,
# the modes as gpu-sim keeps them (AMD's labeller sets no partition label by default) and
# "ours" any annotation of the operator's.
node_table() {
  kubectl get nodes -l gpu.vendor=amd,'!node-role.kubernetes.io/control-plane' -o json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["items"]:
    labels, ann = n["metadata"].get("labels", {}), n["metadata"].get("annotations", {})
    taint = any(t["key"] == "amd-dcm" for t in n["spec"].get("taints") or [])
    ours = [k for k in ann if k.startswith("infrastructure.silogen.ai/")]
    print(n["metadata"]["name"], bool(n["spec"].get("unschedulable")), taint,
          labels.get("dcm.amd.com/gpu-config-profile", "-"), labels.get("dcm.amd.com/gpu-config-profile-state", "-"),
          n["status"].get("allocatable", {}).get("amd.com/gpu", "-"),
          ann.get("sim.gpu-partitioner.io/partition", "-"), ",".join(ours) or "-")
'
}

# -- the environment: what a real cluster has --

# The image, as `tools/image` builds it, under the chart's default name, imported into the
# node's containerd: this machine has no registry (the doc recommends one; with the image
# on the node, the chart's IfNotPresent finds it). The plugin on PATH, as krew would put it.
environment_image_plugin_cluster() {
  tools/image --fastbuild --out "$work/image" >"$work/image.log" 2>&1 || { tail -20 "$work/image.log"; return 1; }
  grep -q "^image: ${image_ref#docker.io/library/}$" "$work/image.log" || { cat "$work/image.log"; return 1; }
  bazel build --noshow_progress //cli:kubectl-partitioning >"$work/plugin.log" 2>&1 || { tail -20 "$work/plugin.log"; return 1; }
  mkdir -p "$work/bin" && cp bazel-bin/cli/kubectl-partitioning "$work/bin/"
  if [ "$shared" = 1 ]; then
    tools/cluster status --name "$cluster"
  else
    tools/cluster up --name "$cluster" --with-node >"$work/up.log" 2>&1 || { tail -40 "$work/up.log"; return 1; }
  fi
  use_cluster
  tools/cluster import --name "$cluster" "$work/image/image.tar"
  # The doc's commands read helm/ and manifests/ from a checkout; helm package writes there.
  mkdir -p "$work/checkout"
  ln -s "$root/helm" "$root/manifests" "$work/checkout/"
}

# AMD's GPU operator, played by gpu-sim: two MI300X nodes with a GPU pod each, NFD's and
# the labeller's labels, the device plugin, and DCM 1.5 as the GPU operator runs it for a
# DeviceConfig naming config-manager-config (gpu-sim does not play the GPU operator's
# controller, which would re-render DCM's DaemonSet from the doc's DeviceConfig patch: it
# starts as that patch leaves it). No site readiness labeller: only AMD's labels.
environment_amd_gpu_operator() {
  use_cluster
  tools/sim up --name "$cluster" --training 2 --inference 0 --pods-per-node 1 --time-scale "$time_scale" \
    --dcm-configmap config-manager-config --dcm-version 1.5 --no-ready-label >"$work/sim.log" 2>&1 ||
    { tail -30 "$work/sim.log"; return 1; }
  node_table | tee "$work/nodes.before"
}

# -- the doc's steps, each followed by what it must have done --

variables_look_dcm_taint() {
  use_cluster
  run_doc variables
  run_doc look
  grep -q "^gpu-node-01 .*74a1" "$work/look.out"
  grep -Eq "^gpu-node-0[12] +8$" "$work/look.out"
  run_doc dcm
  [ "$(kubectl get deviceconfig default -n kube-amd-gpu -o jsonpath='{.spec.configManager.config.name}')" = config-manager-config ]
  run_doc taint
  # AMD's device plugin loses its pods to the taint (as it must, to restart), DCM does not.
  grep -qx kube-amd-gpu/amd-gpu-device-plugin "$work/taint.out"
  if grep -q device-config-manager "$work/taint.out"; then echo "DCM listed as stopped by the taint"; return 1; fi
}

install_with_default_values() {
  use_cluster
  run_doc install
  # The chart's defaults: two replicas; the one on the real node leads (the other may be
  # scheduled on a simulated GPU node, where gpu-sim plays its kubelet and runs nothing).
  local holder
  holder=$(kubectl get lease gpu-partitioner -n gpu-partitioner -o jsonpath='{.spec.holderIdentity}')
  [ "$(kubectl get pod -n gpu-partitioner "${holder%%_*}" -o jsonpath='{.spec.nodeName} {.spec.containers[0].image} {.spec.containers[0].imagePullPolicy}')" = \
    "worker gpu-partitioner:0.1.0-dev IfNotPresent" ]
  note "installed: leader ${holder%%_*} on worker"
}

dry_run_touches_no_node() {
  use_cluster
  run_doc dry-run
  # Each node previewed: its GPU pod would be evicted (and an operator replica the chart's
  # affinity put on a GPU node, where there is one), no finding.
  grep -Eq '^gpu-node-01 +([a-z0-9-]+,)*training-job-' "$work/dry-run.out"
  grep -Eq '^gpu-node-02 +([a-z0-9-]+,)*training-job-' "$work/dry-run.out"
  grep -Eq '^2/2 node\(s\) previewed: [23] pod\(s\) would be evicted, 0 preflight finding' "$work/dry-run.out"
  sleep 5 # a dry run that wrongly started would have cordoned by now (maxParallel 1)
  node_table >"$work/nodes.dry"
  diff <(awk '{$6 = ""; print}' "$work/nodes.before") <(awk '{$6 = ""; print}' "$work/nodes.dry") ||
    { echo "the dry run changed a node"; return 1; }
}

# The environment: gpu-node-02's amd-smi fails (AMDSMIAPIFailure, as on a host whose driver
# is broken), so that the rollout stops there and the doc's retry has a node to retry.
rollout_stops_at_the_failing_node() {
  use_cluster
  kubectl label node "$failing_node" sim.gpu-partitioner.io/fault=dcm-failure
  local t=$SECONDS
  run_doc roll-out
  run_doc watch
  note "watch returned after $((SECONDS - t)) s"
  [ "$(kubectl get partitioningplan mi300x-to-cpx -o jsonpath='{.status.phase}')" = Degraded ]
  grep -Eq "^$failing_node +Failed" "$work/watch.out"
  grep -Eq "^gpu-node-01 +Succeeded" "$work/watch.out"
  run_doc why-failed
  grep -q "mi300x-to-cpx-$failing_node" "$work/why-failed.out"
  grep -q AMDSMIAPIFailure "$work/why-failed.out"
}

retry_completes_the_plan() {
  use_cluster
  # The environment: the cause fixed (the driver repaired).
  kubectl label node "$failing_node" sim.gpu-partitioner.io/fault-
  local t=$SECONDS
  run_doc retry
  note "retry: plan completed $((SECONDS - t)) s after it"
  [ "$(kubectl get partitioningplan mi300x-to-cpx -o jsonpath='{.status.phase}')" = Completed ]
  local table
  table=$(node_table)
  echo "$table"
  # Both nodes CPX+NPS4 with 64 partitions, as DCM reported, neither cordoned nor tainted.
  [ "$(awk '{print $2, $3, $4, $5, $6, $7}' <<<"$table" | sort -u)" = "False False cpx-profile success 64 CPX/NPS4" ]
  [ "$(grep -c . <<<"$table")" -eq 2 ]
}

upgrade_applies_crds_and_keeps_the_release() {
  use_cluster
  run_doc upgrade
  [ "$(helm status gpu-partitioner -n gpu-partitioner -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" = 2 ]
}

uninstall_leaves_nothing() {
  use_cluster
  run_doc uninstall
  local left=() kind
  for kind in crd/partitioningplans.infrastructure.silogen.ai crd/partitioningprofiles.infrastructure.silogen.ai \
    crd/nodepartitionings.infrastructure.silogen.ai namespace/gpu-partitioner clusterrole/gpu-partitioner \
    clusterrolebinding/gpu-partitioner; do
    kubectl get "$kind" -o name 2>/dev/null | grep . >/dev/null && left+=("$kind")
  done
  kubectl get roles,rolebindings,configmaps -n kube-amd-gpu -o name | grep -E 'gpu-partitioner' && left+=(kube-amd-gpu)
  kubectl get roles,rolebindings -n default -o name | grep -E 'gpu-partitioner' && left+=(default)
  [ "${#left[@]}" -eq 0 ] || { echo "left behind: ${left[*]}"; return 1; }
  # No node cordoned, tainted or annotated by the operator; DCM's label stays (the doc says why).
  [ "$(node_table | awk '{print $2, $3, $4, $8}' | sort -u)" = "False False cpx-profile -" ]
  [ -z "$(kubectl get pods -A --field-selector spec.nodeName=worker -o name)" ]
}

# Every walkthrough block of the doc was run, in the doc's order.
every_doc_step_ran() {
  local in_doc
  in_doc=$(sed -n 's/^<!-- walkthrough: \(.*\) -->$/\1/p' "$doc")
  diff <(printf '%s\n' "$in_doc") "$work/ran" || { echo "the doc's steps (<) and those run (>) differ"; return 1; }
  diff <(printf '%s\n' "$in_doc") <(printf '%s\n' "${steps[@]}")
}

# The cluster as the test found it: gpu-sim's objects, the image and the DeviceConfig CRD gone.
environment_removed() {
  use_cluster
  tools/sim down --name "$cluster" >/dev/null
  ctr --address "$cluster_dir/node/containerd.sock" -n k8s.io images rm "$image_ref" >/dev/null
  [ -z "$(kubectl get crd -o name | grep -E 'amd.com|silogen.ai')" ]
  [ -z "$(kubectl get nodes -o name | grep -v '^node/worker$')" ] || { kubectl get nodes; return 1; }
}

# -- run --

timed_case() {
  local t=$SECONDS
  run_case "$1" "$1"
  printf '%-45s %4d s\n' "$1" $((SECONDS - t)) | tee -a "$work/steps.time"
}

export PATH="$work/bin:$PATH"
start=$SECONDS
timed_case environment_image_plugin_cluster
[ "$_sh_failures" -gt 0 ] || timed_case environment_amd_gpu_operator
if [ "$_sh_failures" -eq 0 ]; then
  timed_case variables_look_dcm_taint
  [ "$_sh_failures" -gt 0 ] || timed_case install_with_default_values
  [ "$_sh_failures" -gt 0 ] || timed_case dry_run_touches_no_node
  [ "$_sh_failures" -gt 0 ] || timed_case rollout_stops_at_the_failing_node
  [ "$_sh_failures" -gt 0 ] || timed_case retry_completes_the_plan
  [ "$_sh_failures" -gt 0 ] || timed_case upgrade_applies_crds_and_keeps_the_release
  timed_case uninstall_leaves_nothing
  timed_case every_doc_step_ran
fi
timed_case environment_removed
echo "== per step"
cat "$work/steps.time"
echo "== notes"
cat "$work/notes" 2>/dev/null
echo "walkthrough_test took $((SECONDS - start)) s"
finish
echo "$((${#_sh_cases[@]} - _sh_failures)) passed, $_sh_failures failed"
[ "$_sh_failures" -eq 0 ]
