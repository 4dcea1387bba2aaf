#!/usr/bin/env bash
# kubectl-partitioning against a real kube-apiserver, run the way users run it: as a
# kubectl plugin found on PATH. No operator runs here: the plan selects no node, and the
# test writes the plan's and the items' status itself, as the operator would.
set -uo pipefail
source tests/support/shtest.sh

group=infrastructure.silogen.ai
plan=plugin-test-plan
bin_dir=$(mktemp -d)
cp cli/kubectl-partitioning "$bin_dir/"
export PATH="$bin_dir:$PATH"

cleanup() {
  kubectl delete partitioningplan "$plan" --ignore-not-found --wait=false >/dev/null 2>&1
  for n in a b c; do
    kubectl patch nodepartitioning "$plan-node-$n" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    kubectl delete nodepartitioning "$plan-node-$n" --ignore-not-found --wait=false >/dev/null 2>&1
  done
  rm -rf "$bin_dir"
}
trap cleanup EXIT

now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
ago() { date -u -d "-$1 seconds" +%Y-%m-%dT%H:%M:%SZ; }

# item NODE STATUS_JSON: a NodePartitioning of the plan for NODE with that status.
item() {
  local node=$1 status=$2 uid
  uid=$(kubectl get partitioningplan "$plan" -o jsonpath='{.metadata.uid}')
  kubectl apply -f - >/dev/null <<YAML
apiVersion: $group/v1alpha1
kind: NodePartitioning
metadata:
  name: $plan-$node
  ownerReferences:
  - {apiVersion: $group/v1alpha1, kind: PartitioningPlan, name: $plan, uid: $uid, controller: true}
spec:
  planRef: {name: $plan, uid: $uid}
  nodeName: $node
  desiredHash: sha256:75cc631b7bafd7db8980425749892f275713248b205bb47e5809951cdeb9733d
  profileRef: {name: mi300x-cpx-nps4}
YAML
  kubectl patch nodepartitioning "$plan-$node" --subresource=status --type=merge -p "{\"status\":$status}" >/dev/null
}

setup_plan() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: $group/v1alpha1
kind: PartitioningPlan
metadata: {name: $plan}
spec:
  rollout: {maxParallel: 2, maxUnavailable: "50%"}
  partitionings:
  - name: none
    selector: {matchLabels: {plugin-test.gpu-partitioner.io/selects: nothing}}
    profileRef: {name: mi300x-cpx-nps4}
YAML
  kubectl patch partitioningplan "$plan" --subresource=status --type=merge -p "{\"status\":{
    \"observedGeneration\":1,\"phase\":\"Degraded\",
    \"nodes\":{\"total\":3,\"draining\":1,\"succeeded\":1,\"failed\":1},
    \"order\":[\"node-b\",\"node-a\",\"node-c\"],
    \"conditions\":[{\"type\":\"Degraded\",\"status\":\"True\",\"lastTransitionTime\":\"$(now)\",
      \"reason\":\"NodesFailed\",\"message\":\"1 node failed: node-a\"}]}}" >/dev/null
  item node-a "{\"phase\":\"Failed\",\"lastError\":\"DCM reported failure: GPU busy\",
    \"history\":[{\"phase\":\"Failed\",\"time\":\"$(ago 300)\"}]}"
  item node-b "{\"phase\":\"Draining\",\"history\":[{\"phase\":\"Draining\",\"time\":\"$(ago 30)\"}],
    \"drain\":{\"podsTotal\":2,\"podsBlocked\":1,
      \"blockingPDBs\":[{\"namespace\":\"gpu-workloads\",\"name\":\"training-job\"}],
      \"blockingPods\":[{\"namespace\":\"gpu-workloads\",\"name\":\"training-job-x1\",\"reason\":\"PDB\"}]}}"
  item node-c "{\"phase\":\"Succeeded\",\"history\":[{\"phase\":\"Succeeded\",\"time\":\"$(ago 10)\"}]}"
}

# -- cases --

kubectl_finds_the_plugin() {
  kubectl plugin list 2>/dev/null | grep -q "kubectl-partitioning"
  kubectl partitioning --help | grep -q "kubectl partitioning status PLAN"
}

status_shows_the_plan_and_each_node() {
  local out
  out=$(kubectl partitioning status "$plan")
  echo "$out"
  grep -q "^Plan $plan: Degraded, 1/3 nodes succeeded, 1 failed" <<<"$out"
  grep -q "maxParallel 2, maxUnavailable 50%" <<<"$out"
  grep -q "Degraded: NodesFailed: 1 node failed: node-a" <<<"$out"
  # Rows in rollout order, with time in phase and what holds each node.
  [ "$(awk '/^NODE/{f=1;next} f{print $1}' <<<"$out" | tr '\n' ' ')" = "node-b node-a node-c " ]
  grep -Eq "^node-b +Draining +3[0-9]s +mi300x-cpx-nps4 +drain blocked by PDB gpu-workloads/training-job; pod gpu-workloads/training-job-x1$" <<<"$out"
  grep -Eq "^node-a +Failed +5m0[0-9]s +mi300x-cpx-nps4 +DCM reported failure: GPU busy$" <<<"$out"
  grep -Eq "^node-c +Succeeded +" <<<"$out"
}

list_shows_the_plan() {
  kubectl partitioning list | grep -Eq "^$plan +Degraded +1/3 +1 +1 +"
}

pause_and_resume_write_spec_paused() {
  kubectl partitioning pause "$plan" | grep -q "partitioningplan/$plan paused"
  [ "$(kubectl get partitioningplan "$plan" -o jsonpath='{.spec.paused}')" = true ]
  kubectl partitioning resume "$plan" | grep -q "partitioningplan/$plan resumed"
  [ "$(kubectl get partitioningplan "$plan" -o jsonpath='{.spec.paused}')" = false ]
}

retry_of_a_node_not_failed_is_refused_and_writes_nothing() {
  expect_fail_with "not retrying node node-b of plan $plan: it is Draining, not Failed" \
    kubectl partitioning retry "$plan" node-b
  [ -z "$(kubectl get nodepartitioning "$plan-node-b" -o jsonpath="{.metadata.annotations['infrastructure\.silogen\.ai/retry']}")" ]
}

retry_of_a_failed_node_sets_the_annotation() {
  kubectl partitioning retry "$plan" node-a | grep -q "nodepartitioning/$plan-node-a will be retried"
  local v
  v=$(kubectl get nodepartitioning "$plan-node-a" -o jsonpath="{.metadata.annotations['infrastructure\.silogen\.ai/retry']}")
  [[ "$v" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T ]] || { echo "retry annotation: '$v'"; return 1; }
}

errors_name_the_problem() {
  expect_fail_with 'NotFound \(404\).*no-such-plan' kubectl partitioning status no-such-plan
  expect_fail_with 'NotFound \(404\).*no-such-plan' kubectl partitioning pause no-such-plan
  # Items are found by plan and node (their names may be derived): the plugin says which.
  expect_fail_with "plan $plan has no NodePartitioning for node node-z" kubectl partitioning retry "$plan" node-z
  expect_fail_with 'unknown command "stauts"' kubectl partitioning stauts "$plan"
  expect_fail_with 'kubeconfig "/nonexistent"|/nonexistent' kubectl partitioning --kubeconfig /nonexistent list
}

if ! setup_plan; then
  echo "setup failed"
  exit 1
fi
run_case kubectl_finds_the_plugin kubectl_finds_the_plugin
run_case status_shows_the_plan_and_each_node status_shows_the_plan_and_each_node
run_case list_shows_the_plan list_shows_the_plan
run_case pause_and_resume_write_spec_paused pause_and_resume_write_spec_paused
run_case retry_of_a_node_not_failed_is_refused_and_writes_nothing retry_of_a_node_not_failed_is_refused_and_writes_nothing
run_case retry_of_a_failed_node_sets_the_annotation retry_of_a_failed_node_sets_the_annotation
run_case errors_name_the_problem errors_name_the_problem
finish
