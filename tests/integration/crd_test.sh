#!/usr/bin/env bash
# The CRDs and samples against a real kube-apiserver (started by tools/test through
# tools/cluster; KUBECONFIG and PATH come from the test environment): the samples apply
# unchanged and read back intact, and invalid objects are refused naming the field.
set -uo pipefail
source tests/support/shtest.sh

crds=manifests/crds
samples=manifests/samples
group=infrastructure.silogen.ai

# -- fixtures --

install_crds() {
  kubectl apply --server-side --force-conflicts -f "$crds" >/dev/null
  kubectl wait --for condition=established --timeout=60s \
    "crd/partitioningprofiles.$group" "crd/partitioningplans.$group" "crd/nodepartitionings.$group" >/dev/null
}

# refuse NAME PATTERN: the object on stdin must be refused by the API server with a
# message matching PATTERN (which names the field).
refuse() {
  local pattern=$1
  local manifest
  manifest=$(cat)
  expect_fail_with "$pattern" kubectl create --dry-run=server -f - <<<"$manifest"
}

plan() { # plan SPEC_YAML: a PartitioningPlan named bad-plan with the given spec body
  printf 'apiVersion: %s/v1alpha1\nkind: PartitioningPlan\nmetadata:\n  name: bad-plan\nspec:\n%s\n' "$group" "$1"
}

profile() {
  printf 'apiVersion: %s/v1alpha1\nkind: PartitioningProfile\nmetadata:\n  name: bad-profile\nspec:\n%s\n' "$group" "$1"
}

good_partitionings='  partitionings:
  - name: training
    selector: {matchLabels: {nodepool: training-gpu}}
    profileRef: {name: mi300x-cpx-nps4}'

good_payload='  operatorPayload: {kind: ConfigMap, name: p, namespace: kube-amd-gpu}'

# -- cases --

crds_install_and_are_established() {
  install_crds
}

samples_apply_unchanged() {
  kubectl apply -f "$samples"
}

# The sample item's owner reference names a fixed uid, so the garbage collector
# deletes it as an orphan once it notices; give the remaining cases one owned by the
# live plan.
# The collector works by uid, so a re-created item with the live owner is safe from it.
adopt_node_item() {
  local uid item
  uid=$(kubectl get partitioningplan training-pool-partition -o jsonpath='{.metadata.uid}')
  item=$samples/nodepartitioning-training-pool-partition-gpu-node-02.yaml
  kubectl delete -f "$item" --ignore-not-found --wait >/dev/null
  sed "s/uid: 12345678-1234-1234-1234-123456789abc/uid: $uid/" "$item" | kubectl create -f - >/dev/null
}

plan_reads_back_intact() {
  local out
  out=$(kubectl get partitioningplan training-pool-partition -o jsonpath='{.spec.rollout.maxUnavailable}|{.spec.rollout.maxParallel}|{.spec.partitionings[0].profileRef.name}|{.spec.rollout.drainPolicy.evictionKind}')
  [ "$out" = "1|2|mi300x-cpx-nps4|Eviction" ] || { echo "read back: $out"; return 1; }
}

profile_reads_back_with_seed_count() {
  local out
  out=$(kubectl get partitioningprofile mi300x-cpx-nps4 -o jsonpath='{.spec.expectedResources[0].name}={.spec.expectedResources[0].count}|{.spec.operatorPayload.kind}')
  [ "$out" = "amd.com/gpu=63|ConfigMap" ] || { echo "read back: $out"; return 1; }
}

node_item_owner_reference_uses_our_group() {
  local out
  out=$(kubectl get nodepartitionings -o jsonpath='{.items[0].metadata.ownerReferences[0].apiVersion}|{.items[0].spec.desiredHash}')
  [[ "$out" =~ ^$group/v1alpha1\|sha256:[0-9a-f]{64}$ ]] || { echo "read back: $out"; return 1; }
}

defaults_are_applied_by_the_server() {
  kubectl apply -f - <<EOF2 >/dev/null
$(plan "$good_partitionings" | sed 's/bad-plan/defaults-plan/')
EOF2
  local out
  out=$(kubectl get partitioningplan defaults-plan -o jsonpath='{.spec.rollout.maxParallel}|{.spec.rollout.maxUnavailable}|{.spec.rollout.drainPolicy.respectPDB}|{.spec.paused}')
  kubectl delete partitioningplan defaults-plan >/dev/null
  [ "$out" = "1|1|true|false" ] || { echo "defaults: $out"; return 1; }
}

printer_columns_show_progress() {
  # The sample item may be between its re-creation and its first read: wait for it.
  local i
  for i in $(seq 20); do
    kubectl get nodepartitioning training-pool-partition-gpu-node-02 >/dev/null 2>&1 && break
    sleep 0.5
  done
  local header
  # sed reads the whole table: `head -n1` may close the pipe while kubectl still writes,
  # and under pipefail kubectl's SIGPIPE (141) fails the case.
  header=$(kubectl get partitioningplans | sed -n 1p)
  for col in PHASE DONE TOTAL FAILED; do
    grep -qw "$col" <<<"$header" || { echo "no $col column in: $header"; return 1; }
  done
  header=$(kubectl get nodepartitioning training-pool-partition-gpu-node-02 | sed -n 1p)
  for col in NODE PROFILE PHASE; do
    grep -qw "$col" <<<"$header" || { echo "no $col column in: $header"; return 1; }
  done
}

# explain <path> <pattern>: the field's documentation matches. The API server publishes a
# new CRD's OpenAPI a few seconds after it is established, so give it up to 30 s.
explain() {
  local i
  for i in $(seq 60); do
    kubectl explain "$1" 2>/dev/null | grep -Eqi -- "$2" && return 0
    sleep 0.5
  done
  echo "kubectl explain $1 does not document /$2/:"
  kubectl explain "$1"
  return 1
}

explain_documents_fields() {
  explain partitioningplan.spec.rollout.maxUnavailable "percentage" &&
    explain partitioningprofile.spec.operatorPayload.profileName "DCM" &&
    explain nodepartitioning.status.drain "PodDisruptionBudget"
}

refuses_plan_without_partitionings() {
  plan '  paused: false' | refuse 'spec.partitionings: Required value'
}

refuses_empty_partitionings() {
  plan '  partitionings: []' | refuse 'spec.partitionings: Invalid value.*(at least 1|should have at least 1)'
}

refuses_unknown_eviction_kind() {
  plan "  rollout: {drainPolicy: {evictionKind: Drain}}
$good_partitionings" | refuse 'spec.rollout.drainPolicy.evictionKind: Unsupported value: "Drain"'
}

refuses_zero_max_parallel() {
  plan "  rollout: {maxParallel: 0}
$good_partitionings" | refuse 'spec.rollout.maxParallel: Invalid value: 0'
}

refuses_malformed_percentage() {
  plan "  rollout: {maxUnavailable: \"12x\"}
$good_partitionings" | refuse 'spec.rollout.maxUnavailable: Invalid value: "12x"'
}

refuses_percentage_over_100() {
  plan "  rollout: {maxUnavailable: \"150%\"}
$good_partitionings" | refuse 'spec.rollout.maxUnavailable: Invalid value: "150%"'
}

refuses_zero_max_unavailable() {
  plan "  rollout: {maxUnavailable: 0}
$good_partitionings" | refuse 'spec.rollout.maxUnavailable: Invalid value: 0'
}

refuses_malformed_window_times() {
  plan "  rollout: {windows: [{start: \"25:00\", end: \"06:00\"}]}
$good_partitionings" | refuse 'spec.rollout.windows\[0\].start: Invalid value: "25:00"' &&
  plan "  rollout: {windows: [{start: \"22:00\", end: \"6:00\"}]}
$good_partitionings" | refuse 'spec.rollout.windows\[0\].end: Invalid value: "6:00"' &&
  plan "  rollout: {windows: [{start: \"22:00\", end: \"06:00\", days: [Monday]}]}
$good_partitionings" | refuse 'spec.rollout.windows\[0\].days\[0\]: Unsupported value: "Monday"'
}

refuses_negative_max_failures_and_soak() {
  plan "  rollout: {maxFailures: -1}
$good_partitionings" | refuse 'spec.rollout.maxFailures: Invalid value: -1' &&
  plan "  rollout: {nodeSoakSeconds: -5}
$good_partitionings" | refuse 'spec.rollout.nodeSoakSeconds: Invalid value: -5'
}

refuses_zero_drain_timeout() {
  plan "  rollout: {drainPolicy: {timeoutSeconds: 0}}
$good_partitionings" | refuse 'spec.rollout.drainPolicy.timeoutSeconds: Invalid value: 0'
}

refuses_string_timeout() {
  plan "  verification: {timeoutSeconds: ten}
$good_partitionings" | refuse 'spec.verification.timeoutSeconds: Invalid value: "string"'
}

refuses_bad_partitioning_name() {
  plan '  partitionings:
  - name: Training_Pool
    selector: {matchLabels: {a: b}}
    profileRef: {name: x}' | refuse 'spec.partitionings\[0\].name: Invalid value: "Training_Pool"'
}

refuses_partitioning_without_profile_ref_name() {
  plan '  partitionings:
  - name: training
    selector: {matchLabels: {a: b}}
    profileRef: {kind: PartitioningProfile}' | refuse 'spec.partitionings\[0\].profileRef.name: Required value'
}

refuses_profile_without_operator_payload() {
  profile '  displayName: x' | refuse 'spec.operatorPayload: Required value'
}

refuses_payload_kind_other_than_configmap() {
  profile '  operatorPayload: {kind: Secret, name: p, namespace: kube-amd-gpu}' |
    refuse 'spec.operatorPayload.kind: Unsupported value: "Secret"'
}

refuses_negative_expected_count() {
  profile "$good_payload
  expectedResources: [{name: amd.com/gpu, count: -1}]" | refuse 'spec.expectedResources\[0\].count: Invalid value: -1'
}

refuses_expected_resource_without_name() {
  profile "$good_payload
  expectedResources: [{count: 8}]" | refuse 'spec.expectedResources\[0\].name: Required value'
}

refuses_malformed_desired_hash() {
  printf 'apiVersion: %s/v1alpha1\nkind: NodePartitioning\nmetadata: {name: bad-item}\nspec:\n  planRef: {name: p, uid: u}\n  nodeName: n\n  desiredHash: md5:abc\n  profileRef: {name: x}\n' "$group" |
    refuse 'spec.desiredHash: Invalid value: "md5:abc"'
}

refuses_unknown_node_phase_in_status() {
  # The status subresource is validated too: a status write with an unknown phase fails.
  local item
  item=$(kubectl get nodepartitionings -o jsonpath='{.items[0].metadata.name}')
  expect_fail_with 'status.phase: Unsupported value: "Exploding"' \
    kubectl patch nodepartitioning "$item" --subresource=status --type=merge -p '{"status":{"phase":"Exploding"}}'
}

cleanup() {
  kubectl delete -f "$samples" --ignore-not-found >/dev/null 2>&1 || true
}

run_case crds_install_and_are_established crds_install_and_are_established
run_case samples_apply_unchanged samples_apply_unchanged
adopt_node_item
run_case plan_reads_back_intact plan_reads_back_intact
run_case profile_reads_back_with_seed_count profile_reads_back_with_seed_count
run_case node_item_owner_reference_uses_our_group node_item_owner_reference_uses_our_group
run_case defaults_are_applied_by_the_server defaults_are_applied_by_the_server
run_case printer_columns_show_progress printer_columns_show_progress
run_case explain_documents_fields explain_documents_fields
for c in refuses_plan_without_partitionings refuses_empty_partitionings refuses_unknown_eviction_kind \
  refuses_zero_max_parallel refuses_malformed_percentage refuses_percentage_over_100 \
  refuses_zero_max_unavailable refuses_zero_drain_timeout refuses_string_timeout \
  refuses_malformed_window_times refuses_negative_max_failures_and_soak \
  refuses_bad_partitioning_name refuses_partitioning_without_profile_ref_name \
  refuses_profile_without_operator_payload refuses_payload_kind_other_than_configmap \
  refuses_negative_expected_count refuses_expected_resource_without_name \
  refuses_malformed_desired_hash refuses_unknown_node_phase_in_status; do
  run_case "$c" "$c"
done
cleanup
finish
