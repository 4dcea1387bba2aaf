#!/usr/bin/env bash
# The CRDs and samples against a real kube-apiserver (started by tools/test through
# tools/cluster; KUBECONFIG and PATH come from the test environment): the samples are
# accepted as written and read back intact, and invalid objects are refused naming the
# field.
#
# The cluster is shared with the end-to-end tests, whose nodes the sample plans would
# select: the samples are checked by server-side dry runs (the API server validates,
# defaults and answers with the object as it would store it, and stores nothing). The few
# cases that need an object that exists (printer columns, the status subresource) create
# their own under a name of this run, selecting a label no node carries, with no owner to
# be collected for and no plan to be reconciled by; the last case deletes them and fails
# if it cannot, and a trap deletes them on any earlier exit.
set -uo pipefail
source tests/support/shtest.sh

crds=manifests/crds
samples=manifests/samples
group=infrastructure.silogen.ai

# This run's own objects: the plan and item it creates, and its dry runs' names.
run_id="crd-test-$(date +%s)-$$"
own_plan=$run_id
own_item=$run_id-item
# A label no node carries: this run's plans select nothing.
no_node_selector="{matchLabels: {gpu-partitioner-crd-test: $run_id}}"

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

good_partitionings="  partitionings:
  - name: training
    selector: $no_node_selector
    profileRef: {name: mi300x-cpx-nps4}"

good_payload='  operatorPayload: {kind: ConfigMap, name: p, namespace: kube-amd-gpu}'

# -- cases --

crds_install_and_are_established() {
  install_crds
}

# The samples, as written, against the API server: validated (unknown fields refused),
# defaulted, admitted, and not stored. The payload ConfigMaps' namespace need not exist on
# this cluster (a dry run creates no Namespace), so they are checked in `default`.
samples_are_accepted_as_written() {
  local f crs=()
  local cms=()
  for f in "$samples"/*.yaml "$samples"/real-cluster/*.yaml; do
    if grep -q '^kind: ConfigMap$' "$f"; then cms+=("$f"); else crs+=(-f "$f"); fi
  done
  kubectl apply --dry-run=server --validate=strict "${crs[@]}"
  local cm
  for cm in "${cms[@]}"; do
    sed 's/^  namespace: kube-amd-gpu$/  namespace: default/' "$cm" |
      kubectl apply --dry-run=server --validate=strict -f -
  done
}

# stored FILE JSONPATH: the sample FILE as the API server would store it, through a dry run.
stored() {
  kubectl apply --dry-run=server --validate=strict -f "$1" -o jsonpath="$2"
}

plan_reads_back_intact() {
  local out
  out=$(stored "$samples/plan-training-pool-partition.yaml" '{.spec.rollout.maxUnavailable}|{.spec.rollout.maxParallel}|{.spec.partitionings[0].profileRef.name}|{.spec.rollout.drainPolicy.evictionKind}')
  [ "$out" = "1|2|mi300x-cpx-nps4|Eviction" ] || { echo "read back: $out"; return 1; }
}

profile_reads_back_with_seed_count() {
  local out
  out=$(stored "$samples/profile-mi300x-cpx-nps4.yaml" '{.spec.expectedResources[0].name}={.spec.expectedResources[0].count}|{.spec.operatorPayload.kind}')
  [ "$out" = "amd.com/gpu=63|ConfigMap" ] || { echo "read back: $out"; return 1; }
}

node_item_owner_reference_uses_our_group() {
  local out
  out=$(stored "$samples/nodepartitioning-training-pool-partition-gpu-node-02.yaml" '{.metadata.ownerReferences[0].apiVersion}|{.spec.desiredHash}')
  [[ "$out" =~ ^$group/v1alpha1\|sha256:[0-9a-f]{64}$ ]] || { echo "read back: $out"; return 1; }
}

defaults_are_applied_by_the_server() {
  local out
  out=$(plan "$good_partitionings" | sed "s/name: bad-plan/name: $run_id-defaults/" |
    kubectl create --dry-run=server -f - -o jsonpath='{.spec.rollout.maxParallel}|{.spec.rollout.maxUnavailable}|{.spec.rollout.drainPolicy.respectPDB}|{.spec.paused}')
  [ "$out" = "1|1|true|false" ] || { echo "defaults: $out"; return 1; }
}

# This run's stored objects: a paused plan that selects no node, and an item whose plan
# and node do not exist, with no owner reference: no garbage collector, operator or
# scheduler on the cluster has a reason to touch either.
own_objects_are_created() {
  plan "  paused: true
$good_partitionings" | sed "s/name: bad-plan/name: $own_plan/" | kubectl create -f - >/dev/null
  printf 'apiVersion: %s/v1alpha1\nkind: NodePartitioning\nmetadata: {name: %s}\nspec:\n  planRef: {name: %s-absent, uid: %s}\n  nodeName: %s-absent\n  desiredHash: "sha256:%s"\n  profileRef: {name: mi300x-cpx-nps4}\n' \
    "$group" "$own_item" "$run_id" "$run_id" "$run_id" "$(printf '%064d' 0)" | kubectl create -f - >/dev/null
}

printer_columns_show_progress() {
  local header
  # sed reads the whole table: `head -n1` may close the pipe while kubectl still writes,
  # and under pipefail kubectl's SIGPIPE (141) fails the case.
  header=$(kubectl get partitioningplan "$own_plan" | sed -n 1p)
  for col in PHASE DONE TOTAL FAILED; do
    grep -qw "$col" <<<"$header" || { echo "no $col column in: $header"; return 1; }
  done
  header=$(kubectl get nodepartitioning "$own_item" | sed -n 1p)
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

# Cross-field rules (CEL): refused at apply time, not only marked Invalid by the operator.
refuses_window_of_no_length() {
  plan "  rollout: {windows: [{start: \"22:00\", end: \"22:00\"}]}
$good_partitionings" | refuse 'spec.rollout.windows\[0\]: Invalid value: start and end are the same time' &&
  # 00:00 to 24:00 is the whole day: accepted.
  plan "  rollout: {windows: [{start: \"00:00\", end: \"24:00\"}]}
$good_partitionings" | kubectl create --dry-run=server -f - >/dev/null
}

refuses_empty_selector() {
  plan '  partitionings:
  - name: all
    selector: {}
    profileRef: {name: x}' | refuse 'spec.partitionings\[0\].selector: Invalid value: empty; it would select every node' &&
  plan '  partitionings:
  - name: all
    selector: {matchLabels: {}, matchExpressions: []}
    profileRef: {name: x}' | refuse 'spec.partitionings\[0\].selector: Invalid value: empty'
}

refuses_canary_nodes_and_selector() {
  plan "  rollout: {canary: {nodes: 1, selector: {matchLabels: {canary: \"yes\"}}}}
$good_partitionings" | refuse 'spec.rollout.canary: Invalid value: set nodes or selector, not both' &&
  plan "  rollout: {canary: {selector: {}}}
$good_partitionings" | refuse 'spec.rollout.canary.selector: Invalid value: empty; name the canary'"'"'s labels'
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
  # The status subresource is validated too: a status write with an unknown phase fails
  # (a dry run: were it accepted, this run's item would still not change).
  expect_fail_with 'status.phase: Unsupported value: "Exploding"' \
    kubectl patch nodepartitioning "$own_item" --dry-run=server --subresource=status --type=merge -p '{"status":{"phase":"Exploding"}}'
}

# delete_own_objects: this run's objects deleted, and gone; fails naming what is left.
delete_own_objects() {
  kubectl delete partitioningplan "$own_plan" --ignore-not-found --wait --timeout=60s &&
    kubectl delete nodepartitioning "$own_item" --ignore-not-found --wait --timeout=60s || return 1
  local left
  left=$(kubectl get "partitioningplan/$own_plan" "nodepartitioning/$own_item" --ignore-not-found -o name) || return 1
  [ -z "$left" ] || { echo "still there: $left"; return 1; }
}

own_objects_are_deleted() {
  delete_own_objects
}

# On any exit (a case that ended the script, a signal from the test runner) what this run
# created goes; the last case has already checked that it could.
trap 'delete_own_objects >/dev/null 2>&1' EXIT
trap 'exit 143' TERM INT

run_case crds_install_and_are_established crds_install_and_are_established
run_case samples_are_accepted_as_written samples_are_accepted_as_written
run_case plan_reads_back_intact plan_reads_back_intact
run_case profile_reads_back_with_seed_count profile_reads_back_with_seed_count
run_case node_item_owner_reference_uses_our_group node_item_owner_reference_uses_our_group
run_case defaults_are_applied_by_the_server defaults_are_applied_by_the_server
run_case own_objects_are_created own_objects_are_created
run_case printer_columns_show_progress printer_columns_show_progress
run_case explain_documents_fields explain_documents_fields
for c in refuses_plan_without_partitionings refuses_empty_partitionings refuses_unknown_eviction_kind \
  refuses_zero_max_parallel refuses_malformed_percentage refuses_percentage_over_100 \
  refuses_zero_max_unavailable refuses_zero_drain_timeout refuses_string_timeout \
  refuses_malformed_window_times refuses_window_of_no_length refuses_empty_selector \
  refuses_canary_nodes_and_selector refuses_negative_max_failures_and_soak \
  refuses_bad_partitioning_name refuses_partitioning_without_profile_ref_name \
  refuses_profile_without_operator_payload refuses_payload_kind_other_than_configmap \
  refuses_negative_expected_count refuses_expected_resource_without_name \
  refuses_malformed_desired_hash refuses_unknown_node_phase_in_status; do
  run_case "$c" "$c"
done
run_case own_objects_are_deleted own_objects_are_deleted
finish
