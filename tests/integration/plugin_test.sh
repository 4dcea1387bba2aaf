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
  labels: {infrastructure.silogen.ai/plan: $plan, infrastructure.silogen.ai/node: $node}
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
  kubectl plugin list 2>/dev/null | grep "kubectl-partitioning" >/dev/null
  kubectl partitioning --help | grep -Eq "^  status PLAN +the plan"
}

# json_check FILE PYTHON_EXPR: the expression, over the JSON document `d` read from FILE,
# must be true.
json_check() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" ||
    { echo "not true of $1: $2"; head -c 2000 "$1"; return 1; }
}

output_json_is_a_list_of_the_objects_as_the_server_returned_them() {
  local out
  out=$(mktemp)
  kubectl partitioning status "$plan" -o json >"$out"
  json_check "$out" 'd["kind"] == "List" and d["apiVersion"] == "v1"'
  # The plan, then its items in rollout order (status.order: node-b, node-a, node-c).
  json_check "$out" '[i["kind"] for i in d["items"]] == ["PartitioningPlan"] + ["NodePartitioning"] * 3'
  json_check "$out" "[i['metadata']['name'] for i in d['items']] == ['$plan', '$plan-node-b', '$plan-node-a', '$plan-node-c']"
  # As the server returned them: fields no codec of ours reads (managedFields) are there,
  # and the resourceVersion is the server's.
  json_check "$out" 'all("managedFields" in i["metadata"] for i in d["items"])'
  json_check "$out" "d['items'][0]['metadata']['resourceVersion'] == '$(kubectl get partitioningplan "$plan" -o jsonpath='{.metadata.resourceVersion}')'"
  kubectl partitioning list -o json >"$out"
  json_check "$out" "d['kind'] == 'List' and '$plan' in [i['metadata']['name'] for i in d['items']]"
  json_check "$out" 'all(i["kind"] == "PartitioningPlan" and i["apiVersion"] == "infrastructure.silogen.ai/v1alpha1" for i in d["items"])'
  rm -f "$out"
}

output_yaml_and_wide() {
  local out
  out=$(kubectl partitioning status "$plan" -o yaml)
  grep -q "^kind: List$" <<<"$out"
  grep -q "^- apiVersion: infrastructure.silogen.ai/v1alpha1$" <<<"$out"
  grep -q "^    name: $plan-node-a$" <<<"$out"
  grep -q '^    lastError: "DCM reported failure: GPU busy"$' <<<"$out"
  # Times are quoted, as kubectl quotes them: YAML would read them as timestamps.
  grep -Eq '^    creationTimestamp: "20[0-9-]+T[0-9:]+Z"$' <<<"$out"
  out=$(kubectl partitioning list -o wide)
  grep -Eq "^PLAN +PHASE .* AGE +MAXPARALLEL +MAXUNAVAILABLE +PAUSED +DRYRUN$" <<<"$out"
  grep -Eq "^$plan +Degraded +1/3 .* +2 +50% +false +false$" <<<"$out"
  out=$(kubectl partitioning status "$plan" -o wide)
  grep -Eq "^NODE +PHASE +FOR +PROFILE +ITEM +STARTED +COMPLETED +DETAIL$" <<<"$out"
  grep -Eq "^node-a +Failed +[0-9m]+s +mi300x-cpx-nps4 +$plan-node-a +- +- +DCM reported failure" <<<"$out"
  expect_fail_with '^error: --output "xml" is not a format this command prints; use json, yaml or wide$' \
    kubectl partitioning status "$plan" -o xml
}

# wait_for FILE PATTERN SECONDS: until FILE holds a line matching PATTERN.
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -Eq -- "$2" "$1" && return 0
    sleep 0.1
  done
  echo "no /$2/ in $1 within $3 s:"
  cat "$1"
  return 1
}

watch_prints_each_change_and_ends_when_the_plan_completes() {
  local out log pid rc generation
  out=$(mktemp)
  log=$(mktemp)
  kubectl partitioning status "$plan" --watch -o json -v 6 >"$out" 2>"$log" &
  pid=$!
  wait_for "$out" '"phase": "Draining"' 10
  # A change made while watching appears as a new version of that one object.
  kubectl patch nodepartitioning "$plan-node-b" --subresource=status --type=merge \
    -p '{"status":{"phase":"Verifying"}}' >/dev/null
  wait_for "$out" '"phase": "Verifying"' 10
  # The plan reaches Completed (for the generation it has): the watch ends by itself, 0.
  generation=$(kubectl get partitioningplan "$plan" -o jsonpath='{.metadata.generation}')
  kubectl patch partitioningplan "$plan" --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"Completed\",\"observedGeneration\":$generation}}" >/dev/null
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    echo "the watch did not end within 10 s of the plan completing"
    cat "$out"
    return 1
  fi
  wait "$pid"
  rc=$?
  [ "$rc" -eq 0 ] || { echo "watch exited $rc"; cat "$out"; return 1; }
  grep -q '"phase": "Completed"' "$out"
  # Each object printed on its own (kubectl get -w -o json), not a List.
  ! grep -q '"kind": "List"' "$out"
  # Every item of the plan carries its plan label: after the first read, only those are
  # listed.
  [ "$(grep -c 'GET .*/nodepartitionings' "$log")" -ge 2 ] || { cat "$log"; return 1; }
  head -n 3 "$log" | grep 'GET .*/nodepartitionings' | grep -v labelSelector >/dev/null || { cat "$log"; return 1; }
  grep -q 'GET .*/nodepartitionings?.*labelSelector=infrastructure.silogen.ai' "$log" || { cat "$log"; return 1; }
  rm -f "$out" "$log"
}

watch_ends_with_0_on_sigint_and_sigterm() {
  local out pid rc sig
  for sig in INT TERM; do
    out=$(mktemp)
    kubectl partitioning list --watch >"$out" 2>&1 &
    pid=$!
    wait_for "$out" "^$plan " 10
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 0 ] || { echo "SIG$sig: exit $rc"; cat "$out"; return 1; }
    rm -f "$out"
  done
}

impersonation_reaches_the_api_server() {
  # A user no RBAC rule names may not list plans: the API server answers Forbidden for it.
  expect_fail_with 'Forbidden \(403\).*plugin-test-nobody' \
    kubectl partitioning list --as plugin-test-nobody
  local rc=0
  kubectl partitioning status "$plan" --as=plugin-test-nobody >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { echo "exit $rc, not 1"; return 1; }
  # The same user in system:masters may: the groups reach the server too.
  kubectl partitioning list --as plugin-test-nobody --as-group system:masters | grep "^$plan " >/dev/null
}

request_timeout_bounds_each_request() {
  local dir port pid start elapsed
  dir=$(mktemp -d)
  # A server that accepts connections and never answers.
  python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' >"$dir/port" &
  pid=$!
  wait_for "$dir/port" '^[0-9]+$' 5
  port=$(cat "$dir/port")
  cat >"$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
current-context: silent
contexts: [{name: silent, context: {cluster: silent}}]
clusters: [{name: silent, cluster: {server: "https://127.0.0.1:$port", insecure-skip-tls-verify: true}}]
KC
  start=$(date +%s%N)
  expect_fail_with 'Timeout|timed out' kubectl partitioning list --kubeconfig "$dir/kubeconfig" --request-timeout=1s
  elapsed=$((($(date +%s%N) - start) / 1000000))
  kill "$pid"
  rm -rf "$dir"
  # One attempt of one second, not the default 30 s nor retries.
  [ "$elapsed" -lt 5000 ] || { echo "took $elapsed ms"; return 1; }
  expect_fail_with '^error: --request-timeout "soon" is neither' kubectl partitioning list --request-timeout soon
}

verbosity_6_logs_each_request_as_kubectl_does() {
  local err
  err=$(kubectl partitioning list -v 6 2>&1 >/dev/null)
  echo "$err"
  grep -Eq "^I[0-9]{4} [0-9:.]+ [0-9]+ kubectl-partitioning\] GET https://[^ ]+/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans\?limit=500 200 OK in [0-9]+ milliseconds$" <<<"$err"
  grep -q "Config loaded from kubeconfig" <<<"$err"
  # Below 6, nothing.
  [ -z "$(kubectl partitioning list --v=5 2>&1 >/dev/null)" ]
}

exit_codes_are_kubectls() {
  local rc
  for args in "stauts" "status" "list --frobnicate" "pause $plan -o json" "status no-such-plan" \
    "--kubeconfig /nonexistent list"; do
    rc=0
    # shellcheck disable=SC2086
    kubectl partitioning $args >/dev/null 2>&1 || rc=$?
    [ "$rc" -eq 1 ] || { echo "kubectl partitioning $args: exit $rc, not 1"; return 1; }
  done
  for args in "" "--help" "status --help" "help status" "version" "list -n whatever -A"; do
    # shellcheck disable=SC2086
    kubectl partitioning $args >/dev/null || { echo "kubectl partitioning $args failed"; return 1; }
  done
  kubectl partitioning status --help | grep "^Examples:$" >/dev/null
  expect_fail_with "^See 'kubectl partitioning pause --help' for usage.$" kubectl partitioning pause "$plan" --watch
}

a_kubeconfig_list_is_merged_as_kubectl_merges_it() {
  local dir
  dir=$(mktemp -d)
  # The context in one file, the cluster and user in another (the admin's), a missing file
  # between them: kubectl reads the three as one.
  kubectl config view --raw -o json | python3 -c '
import json, sys
c = json.load(sys.stdin)
ctx = c["contexts"][0]["context"]
print("apiVersion: v1\nkind: Config\ncurrent-context: merged\ncontexts:\n- name: merged\n  context: {cluster: %s, user: %s}" % (json.dumps(ctx["cluster"]), json.dumps(ctx["user"])))
' >"$dir/context-only"
  local out
  out=$(KUBECONFIG="$dir/context-only:$dir/missing:$KUBECONFIG" kubectl partitioning list -v 6 2>&1)
  echo "$out"
  grep -q "^$plan " <<<"$out"
  grep -q "Config loaded from kubeconfig \"$dir/context-only\" context \"merged\"" <<<"$out"
  rm -rf "$dir"
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
  kubectl partitioning pause "$plan" | grep "partitioningplan/$plan paused" >/dev/null
  [ "$(kubectl get partitioningplan "$plan" -o jsonpath='{.spec.paused}')" = true ]
  kubectl partitioning resume "$plan" | grep "partitioningplan/$plan resumed" >/dev/null
  [ "$(kubectl get partitioningplan "$plan" -o jsonpath='{.spec.paused}')" = false ]
}

retry_of_a_node_not_failed_is_refused_and_writes_nothing() {
  expect_fail_with "not retrying node node-b of plan $plan: it is Draining, not Failed" \
    kubectl partitioning retry "$plan" node-b
  [ -z "$(kubectl get nodepartitioning "$plan-node-b" -o jsonpath="{.metadata.annotations['infrastructure\.silogen\.ai/retry']}")" ]
}

retry_of_a_failed_node_sets_the_annotation() {
  kubectl partitioning retry "$plan" node-a | grep "nodepartitioning/$plan-node-a will be retried" >/dev/null
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
run_case output_json_is_a_list_of_the_objects_as_the_server_returned_them output_json_is_a_list_of_the_objects_as_the_server_returned_them
run_case output_yaml_and_wide output_yaml_and_wide
run_case impersonation_reaches_the_api_server impersonation_reaches_the_api_server
run_case request_timeout_bounds_each_request request_timeout_bounds_each_request
run_case verbosity_6_logs_each_request_as_kubectl_does verbosity_6_logs_each_request_as_kubectl_does
run_case exit_codes_are_kubectls exit_codes_are_kubectls
run_case a_kubeconfig_list_is_merged_as_kubectl_merges_it a_kubeconfig_list_is_merged_as_kubectl_merges_it
run_case watch_ends_with_0_on_sigint_and_sigterm watch_ends_with_0_on_sigint_and_sigterm
# Last: it completes the plan.
run_case watch_prints_each_change_and_ends_when_the_plan_completes watch_prints_each_change_and_ends_when_the_plan_completes
finish
