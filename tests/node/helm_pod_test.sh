#!/usr/bin/env bash
# tests/node/helm_pod_test.sh: the Helm chart end to end with the operator in real pods,
# on a cluster of its own with a real node (`tools/cluster up --with-node`) and simulated
# MI300X nodes (tools/sim). The image is built by `tools/image --fastbuild` under two tags
# and imported into the node; `helm install` runs two replicas there (pullPolicy Never),
# Ready through the kubelet's probes, one of them leading; they talk to the API server
# with their projected tokens and the service CA; a plan completes; `helm upgrade` to the
# second image rolls them with never two replicas acting (the audit log's writes against
# the Lease's holders); the leader's pod deleted, the other takes over (timed); a plan
# paused half-way and `helm uninstall` leave no node cordoned or tainted, and what
# uninstall leaves is checked; `tools/cluster down` leaves nothing.
# Needs root and tools/setup's packages. Run by tools/test (full runs) after
# tests/node/node_test.sh; its last line is "N passed, N failed".
# HELM_POD_TEST_CLUSTER names the cluster (default helmpod-PID). With NODE_SUITE_SHARED=1
# (tools/test) the cluster is already up with its node, left by
# tests/node/node_test.sh, and the host's snapshot is in $NODE_HOST_SNAPSHOT.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=tests/support/shtest.sh
source tests/support/shtest.sh
# shellcheck source=tools/lib/common.sh
source tools/lib/common.sh # wait_until
# shellcheck source=tests/node/node_checks.sh
source tests/node/node_checks.sh # snapshot_host, down_leaves_nothing

cluster=${HELM_POD_TEST_CLUSTER:-helmpod-$$}
state_root=${GPU_PARTITIONER_STATE:-$HOME/.local/state/gpu-partitioner}
cluster_dir=$state_root/clusters/$cluster
work=$(mktemp -d)
readonly release=gp
readonly ns=gpu-partitioner
readonly full=$release-gpu-partitioner
readonly sa_user=system:serviceaccount:$ns:$full
readonly pods_selector=app.kubernetes.io/instance=$release,app.kubernetes.io/name=gpu-partitioner
readonly taint_key=amd-dcm
# The simulated AMD stack at 1/20 of its real delays, and the chart's wait for DCM's
# config (dcm.configSyncSeconds, 90 s) scaled alike.
readonly time_scale=0.05
readonly dcm_config_sync=4.5

# After a failure the cluster's logs (the audit log among them), its pods' and the
# test's own outlive the cluster.
keep_logs() {
  [ "$_sh_failures" -gt 0 ] && [ -d "$cluster_dir/logs" ] || return 0
  local keep=$state_root/test-logs/$cluster
  mkdir -p "$keep"
  cp -r "$cluster_dir/logs/." "$keep/"
  cp "$work"/*.log "$keep/" 2>/dev/null
  # The logs of the pods still there (the kubelet's, under the node's /var/log).
  cp -r "$cluster_dir/node/var-log/pods" "$keep/" 2>/dev/null
  echo "helm_pod_test: the logs are kept in $keep"
}

cleanup() {
  keep_logs
  KUBECONFIG=/nonexistent tools/sim down --name "$cluster" >/dev/null 2>&1
  tools/cluster down --name "$cluster" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

use_cluster() { eval "$(tools/cluster env --name "$cluster")"; }
now() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
# note LINE...: printed now and again at the end (a case's output shows only if it fails).
note() { printf '%s\n' "$@" | tee -a "$work/notes"; }
audit() { python3 tests/node/operator_audit.py "$1" "$cluster_dir/logs/audit.log" "$sa_user" "${@:2}"; }

# The release's pods, one line each: name IP node phase ready image (none being deleted).
release_pods() {
  kubectl get pods -n "$ns" -l "$pods_selector" -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}{"deleting "}{end}' | grep . >/dev/null &&
    return 1
  kubectl get pods -n "$ns" -l "$pods_selector" -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.spec.containers[0].image}{"\n"}{end}'
}

# two_ready_pods IMAGE: exactly two pods of the release, none being deleted, both on
# worker, Running, Ready, with IMAGE; written to $work/pods.
two_ready_pods() {
  local pods
  pods=$(release_pods) || return 1
  [ "$(grep -c . <<<"$pods")" -eq 2 ] || return 1
  [ "$(awk -v i="$1" '$3 == "worker" && $4 == "Running" && $5 == "True" && $6 == i' <<<"$pods" | grep -c .)" -eq 2 ] || return 1
  echo "$pods" >"$work/pods"
}

holder() { kubectl get lease gpu-partitioner -n "$ns" -o jsonpath='{.spec.holderIdentity}'; }

# leader_is_one_of_the_pods: the Lease names one of $work/pods (identity POD_PID_SUFFIX).
leader_is_one_of_the_pods() {
  local h
  h=$(holder) || return 1
  [ -n "$h" ] && grep -q "^${h%%_*} " "$work/pods" || return 1
  echo "${h%%_*}" >"$work/leader"
}

# wait_plan PLAN PHASE SECONDS
wait_plan() {
  wait_until "$3" sh -c "[ \"\$(kubectl get partitioningplan $1 -o jsonpath='{.status.phase}')\" = $2 ]" || {
    kubectl get partitioningplan "$1" -o yaml | sed -n '/^status:/,$p' | head -40
    kubectl get nodepartitionings
    return 1
  }
}

item_phases() { kubectl get nodepartitionings -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}'; }
some_item_in_flight() { item_phases | grep -E '^(Draining|Applying|WaitingOperator|Verifying)$' >/dev/null; }
no_items() { [ -z "$(kubectl get nodepartitionings -o name)" ]; }
no_item_in_flight() {
  local phases
  phases=$(item_phases) || return 1
  if grep -qE '^(Draining|Applying|WaitingOperator|Verifying)$' <<<"$phases"; then return 1; fi
}

# Nodes, one line each: name unschedulable amd-dcm-taint profile state allocatable, and the
# GPUs' modes as gpu-sim keeps them (AMD's labeller sets no partition label by default)
node_table() {
  kubectl get nodes -l gpu.vendor=amd,'!node-role.kubernetes.io/control-plane' -o json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["items"]:
    labels = n["metadata"].get("labels", {})
    taint = any(t["key"] == sys.argv[1] for t in n["spec"].get("taints") or [])
    print(n["metadata"]["name"], bool(n["spec"].get("unschedulable")), taint,
          labels.get("dcm.amd.com/gpu-config-profile", "-"), labels.get("dcm.amd.com/gpu-config-profile-state", "-"),
          n["status"].get("allocatable", {}).get("amd.com/gpu", "-"),
          n["metadata"].get("annotations", {}).get("sim.gpu-partitioner.io/partition", "-"))
' "$taint_key"
}

no_node_cordoned_or_tainted() {
  local table
  table=$(node_table)
  echo "$table"
  if awk '$2 == "True" || $3 == "True"' <<<"$table" | grep .; then
    echo "cordoned or tainted ($taint_key) nodes above"
    return 1
  fi
}

# absent KIND/NAME [-n NS]: the object does not exist.
absent() {
  if kubectl get "$@" -o name 2>/dev/null; then
    echo "still there: $*"
    return 1
  fi
}

# -- cases --

# The same binary under two tags; the second with another revision label, so that its
# digest differs too and each pod's imageID says which of the two it runs.
images_built_under_two_tags() {
  tools/image --fastbuild --tag gpu-partitioner:e2e-1 --out "$work/image-1" >"$work/image-1.log" 2>&1 ||
    { tail -20 "$work/image-1.log"; return 1; }
  tools/image --fastbuild --tag gpu-partitioner:e2e-2 --out "$work/image-2" \
    --revision "$(git rev-parse HEAD)+e2e-2" >"$work/image-2.log" 2>&1 ||
    { tail -20 "$work/image-2.log"; return 1; }
  local d1 d2
  d1=$(sed -n 's/^manifest: //p' "$work/image-1.log")
  d2=$(sed -n 's/^manifest: //p' "$work/image-2.log")
  note "images: gpu-partitioner:e2e-1 $d1, gpu-partitioner:e2e-2 $d2"
  [ -n "$d1" ] && [ -n "$d2" ] && [ "$d1" != "$d2" ]
  echo "$d2" >"$work/digest-2"
}

cluster_up_with_node_and_images() {
  if [ "${NODE_SUITE_SHARED:-0}" = 1 ]; then
    tools/cluster status --name "$cluster" >"$work/up.log" 2>&1 || {
      cat "$work/up.log"
      return 1
    }
  else
    tools/cluster up --name "$cluster" --with-node >"$work/up.log" 2>&1 || {
      tail -n 40 "$work/up.log"
      return 1
    }
  fi
  use_cluster
  [ "$(kubectl get node worker -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
  tools/cluster import --name "$cluster" "$work/image-1/image.tar"
  tools/cluster import --name "$cluster" "$work/image-2/image.tar"
}

# Three simulated MI300X nodes (two training, one inference) with a GPU pod each, DCM,
# the device plugin and the labeller; none of their pods may land on worker.
simulated_gpu_nodes_beside_worker() {
  use_cluster
  tools/sim up --name "$cluster" --training 2 --inference 1 --pods-per-node 1 \
    --time-scale "$time_scale" --training-shows-63 >"$work/sim.log" 2>&1 || {
    tail -n 30 "$work/sim.log"
    return 1
  }
  local on_worker
  on_worker=$(kubectl get pods -A --field-selector spec.nodeName=worker -o name)
  [ -z "$on_worker" ] || { echo "simulated GPU pods on worker: $on_worker"; return 1; }
  kubectl get pods -n gpu-workloads -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep '^gpu-node-' >/dev/null
}

# Both replicas Running and Ready on worker: Ready is the kubelet's readiness probe
# (its prober counted successes for each pod), and the Lease names one of the two.
install_gives_two_ready_replicas_and_one_leader() {
  use_cluster
  now >"$work/install.at"
  helm install "$release" helm/gpu-partitioner --namespace "$ns" --create-namespace \
    --set image.tag=e2e-1 --set image.pullPolicy=Never \
    --set-string 'nodeSelector.kubernetes\.io/hostname=worker' \
    --set dcm.configSyncSeconds="$dcm_config_sync" --wait --timeout 120s >"$work/helm-install.log" 2>&1 || {
    cat "$work/helm-install.log"
    kubectl get pods -n "$ns" -o wide
    kubectl describe pods -n "$ns" | tail -30
    return 1
  }
  wait_until 30 two_ready_pods gpu-partitioner:e2e-1 || { release_pods; return 1; }
  cat "$work/pods"
  wait_until 30 leader_is_one_of_the_pods || { echo "Lease holder: '$(holder)'"; return 1; }
  note "installed: $(awk '{print $1, $2}' "$work/pods" | paste -sd ' '); leader $(cat "$work/leader")"
  local probes pod
  probes=$(kubectl get --raw /api/v1/nodes/worker/proxy/metrics/probes)
  while read -r pod _; do
    grep -E "^prober_probe_total\{.*pod=\"$pod\".*probe_type=\"Readiness\".*result=\"successful\".*\} [1-9]" <<<"$probes" ||
      { echo "the kubelet counted no successful readiness probe of $pod"; grep "$pod" <<<"$probes"; return 1; }
  done <"$work/pods"
  # Each replica says the same: only the Lease's holder leads (from the pods' own
  # /metrics: their IPs are inside the node's namespace).
  local ip leads
  while read -r pod ip _; do
    leads=$(curl -fsS --max-time 5 "http://$ip:8080/metrics" | sed -n 's/^gpu_partitioner_leader //p')
    [ "$leads" = "$([ "$pod" = "$(cat "$work/leader")" ] && echo 1 || echo 0)" ] ||
      { echo "$pod: gpu_partitioner_leader '$leads'"; return 1; }
  done <"$work/pods"
  # The sim's pods stay on the GPU nodes; on worker only the operator runs.
  [ "$(kubectl get pods -A --field-selector spec.nodeName=worker -o jsonpath='{range .items[*]}{.metadata.namespace}{"\n"}{end}' | sort -u)" = "$ns" ]
}

# The projected volume (token, service CA, namespace), nothing secret in the environment,
# the in-cluster configuration in the operator's log, the process as the image's user with
# the token's mount read-only, and the API server's audit log: each pod's requests come
# from its IP with a token bound to that pod.
operator_uses_projected_token_and_service_ca() {
  use_cluster
  local pod ip pid found=0 metrics
  while read -r pod ip _; do
    kubectl get pod -n "$ns" "$pod" -o json >"$work/pod.json"
    python3 - "$pod" "$work/pod.json" <<'EOF'
import json, sys
pod = json.load(open(sys.argv[2]))
spec, name = pod["spec"], sys.argv[1]
assert spec.get("automountServiceAccountToken", True), name + ": automountServiceAccountToken is false"
vols = {v["name"]: v for v in spec["volumes"]}
mounts = [m for m in spec["containers"][0].get("volumeMounts", []) if m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"]
assert len(mounts) == 1 and mounts[0].get("readOnly"), "%s: no read-only service-account mount: %s" % (name, mounts)
sources = vols[mounts[0]["name"]]["projected"]["sources"]
token = [s["serviceAccountToken"] for s in sources if "serviceAccountToken" in s]
ca = [s["configMap"] for s in sources if "configMap" in s]
assert token and token[0]["path"] == "token" and token[0]["expirationSeconds"] > 0, "%s: no projected token: %s" % (name, sources)
assert ca and ca[0]["name"] == "kube-root-ca.crt" and ca[0]["items"][0]["path"] == "ca.crt", "%s: no service CA: %s" % (name, sources)
for c in spec["containers"]:
    assert not c.get("envFrom"), "%s: envFrom %s" % (name, c["envFrom"])
    for e in c.get("env", []):
        assert "TOKEN" not in e["name"].upper() and "secretKeyRef" not in e.get("valueFrom", {}), "%s: env %s" % (name, e)
assert not any("secret" in v for v in spec["volumes"]), name + ": a Secret volume"
print("%s: projected token (%d s, rotated by the kubelet), CA from kube-root-ca.crt, no token in env"
      % (name, token[0]["expirationSeconds"]))
EOF
    kubectl logs -n "$ns" "$pod" | grep -E "starting as ${pod}_[0-9]+_[0-9a-f]+ against https://10\.96\.0\.1:443 \(in-cluster\)" ||
      { echo "$pod: no in-cluster start in its log"; kubectl logs -n "$ns" "$pod" | head; return 1; }
    if kubectl logs -n "$ns" "$pod" | grep -F 'TLS VERIFICATION IS OFF'; then return 1; fi
    # From the pod's own metrics (its IP is inside the node's namespace).
    metrics=$(curl -fsS --max-time 5 "http://$ip:8080/metrics")
    grep -x 'gpu_partitioner_api_tls_verification_disabled 0' <<<"$metrics"
  done <"$work/pods"
  [ -z "$(kubectl get secrets -n "$ns" --field-selector type=kubernetes.io/service-account-token -o name)" ]
  # The processes themselves, by their pods' HOSTNAME.
  for pid in $(node_cgroup_pids); do
    [ "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -1)" = /usr/local/bin/gpu-partitioner ] || continue
    pod=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^HOSTNAME=//p')
    grep -q "^$pod " "$work/pods" || continue
    found=$((found + 1))
    grep -Eq '^Uid:\s+65532\s' "/proc/$pid/status"
    if tr '\0' '\n' <"/proc/$pid/environ" | grep -i token; then return 1; fi
    tr '\0' '\n' <"/proc/$pid/environ" | grep -x KUBERNETES_SERVICE_HOST=10.96.0.1 >/dev/null
    awk '$5 == "/var/run/secrets/kubernetes.io/serviceaccount" && $6 ~ /^ro/ && $9 == "tmpfs"' "/proc/$pid/mountinfo" | grep . >/dev/null
    awk '$5 == "/" && $6 ~ /^ro/' "/proc/$pid/mountinfo" | grep . >/dev/null
    note "$pod: pid $pid, user 65532, read-only root, token on a read-only tmpfs, none in its environment"
  done
  [ "$found" -eq 2 ] || { echo "found $found operator processes of the two pods"; return 1; }
  local pods=()
  while read -r pod ip _; do pods+=("$pod=$ip"); done <"$work/pods"
  audit identity "${pods[@]}" --from "$(cat "$work/install.at")" --to "$(now)"
}

# The specification's samples as written (the sim's training hosts show 63 CPX
# partitions and its labeller sets amd.com/gpu.ready, as the samples expect).
plan_completes() {
  use_cluster
  kubectl apply -f manifests/samples/profile-mi300x-cpx-nps4.yaml -f manifests/samples/profile-mi300x-spx-nps1.yaml \
    -f manifests/samples/plan-training-pool-partition.yaml
  local t=$SECONDS
  wait_plan training-pool-partition Completed 150
  note "plan training-pool-partition (samples) completed in $((SECONDS - t)) s"
  kubectl get nodepartitionings
  if item_phases | grep -vx Succeeded; then return 1; fi
  local table
  table=$(node_table)
  echo "$table"
  [ "$(awk '{$1 = ""; print}' <<<"$table" | sort | uniq -c | sed 's/^ *//')" = \
    "2  False False mi300x-cpx-nps4 success 63 CPX/NPS4
1  False False mi300x-spx-nps1 success 8 SPX/NPS1" ]
}

# helm upgrade to the second image while a plan runs: the Deployment rolls to two new
# Ready pods, one of which leads; from the audit log, every write of the operator's
# account in the window but its Lease's came from the pod that held the Lease then.
upgrade_rolls_with_one_leader_acting() {
  use_cluster
  kubectl delete partitioningplan training-pool-partition --wait --timeout=60s
  wait_until 60 no_items || { kubectl get nodepartitionings; return 1; }
  kubectl apply -f - <<EOF
apiVersion: infrastructure.silogen.ai/v1alpha1
kind: PartitioningPlan
metadata: {name: all-to-spx}
spec:
  rollout: {maxParallel: 1, maxUnavailable: 1}
  partitionings:
  - name: all
    selector: {matchLabels: {gpu.vendor: amd, gpu.family: mi300x}}
    profileRef: {kind: PartitioningProfile, name: mi300x-spx-nps1}
EOF
  wait_until 60 some_item_in_flight || { kubectl get nodepartitionings; return 1; }
  local from t=$SECONDS old
  old=$(awk '{print $1}' "$work/pods" | tr '\n' ' ')
  from=$(now)
  echo "upgrade from $from; the plan's items: $(kubectl get nodepartitionings -o jsonpath='{range .items[*]}{.spec.nodeName}={.status.phase} {end}')"
  helm upgrade "$release" helm/gpu-partitioner --namespace "$ns" --reuse-values --set image.tag=e2e-2 \
    --wait --timeout 120s >"$work/helm-upgrade.log" 2>&1 || { cat "$work/helm-upgrade.log"; return 1; }
  wait_until 60 two_ready_pods gpu-partitioner:e2e-2 || { release_pods; return 1; }
  note "upgrade: rolled to $(awk '{print $1, $2}' "$work/pods" | paste -sd ' ') in $((SECONDS - t)) s"
  local pod
  for pod in $old; do
    if grep "^$pod " "$work/pods"; then echo "an old pod is still there"; return 1; fi
  done
  wait_until 30 leader_is_one_of_the_pods || { echo "Lease holder: '$(holder)'"; return 1; }
  note "upgrade: leader $(cat "$work/leader")"
  # The kubelet ran the second image (its digest differs from the first's).
  local ids
  ids=$(kubectl get pods -n "$ns" -l "$pods_selector" -o jsonpath='{range .items[*]}{.status.containerStatuses[0].imageID}{"\n"}{end}')
  note "upgrade: imageIDs $(paste -sd ' ' <<<"$ids")"
  [ "$(grep -cF "$(cat "$work/digest-2")" <<<"$ids")" -eq 2 ] || python3 - "$work/image-2/layout" "$ids" <<'EOF'
import json, sys
layout, ids = sys.argv[1], sys.argv[2].split()
index = json.load(open(layout + "/index.json"))
manifest = json.load(open(layout + "/blobs/sha256/" + index["manifests"][0]["digest"][7:]))
config = manifest["config"]["digest"]
sys.exit(0 if len(ids) == 2 and all(i.endswith(config) for i in ids) else "imageIDs %s are not image 2's config %s" % (ids, config))
EOF
  wait_plan all-to-spx Completed 150
  local to
  to=$(now)
  note "upgrade: plan all-to-spx completed $((SECONDS - t)) s after the upgrade began; writes in the window:"
  audit writers --from "$from" --to "$to" >"$work/upgrade-writers" || { cat "$work/upgrade-writers"; return 1; }
  note "$(sed 's/^/  /' "$work/upgrade-writers")"
  if [ "$(grep -c ' writes from ' "$work/upgrade-writers")" -ge 2 ]; then
    note "upgrade: the plan was handed over between replicas mid-way"
  else
    note "upgrade: one replica wrote all of the window's writes (the plan was not handed over mid-way)"
  fi
}

# The leader's pod deleted (SIGTERM: it releases its Lease): another replica leads
# within the Lease's duration, and the Deployment is whole again.
leader_failover() {
  use_cluster
  local leader duration start took h
  leader=$(cat "$work/leader")
  duration=$(kubectl get lease gpu-partitioner -n "$ns" -o jsonpath='{.spec.leaseDurationSeconds}')
  start=$(date +%s.%N)
  kubectl delete pod -n "$ns" "$leader" --wait=false
  # Until another replica has written its name into the Lease.
  local deadline=$((SECONDS + duration + 10))
  while :; do
    h=$(holder) || true
    [ -z "$h" ] || [ "${h%%_*}" = "$leader" ] || break
    [ "$SECONDS" -lt "$deadline" ] || { echo "no takeover: holder '$h'"; return 1; }
    sleep 0.1
  done
  took=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
  # The released Lease goes to the first standby to try (each tries every 2 s): the other
  # replica, or the Deployment's replacement of the deleted pod when it starts first.
  local who="the other replica"
  grep -q "^${h%%_*} " "$work/pods" || who="the replacement pod"
  note "failover: $who ${h%%_*} took the Lease ${took} s after the leader's pod was deleted (lease duration $duration s)"
  python3 -c "import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))" "$took" "$duration" ||
    { echo "longer than the lease duration"; return 1; }
  wait_until 90 two_ready_pods gpu-partitioner:e2e-2 || { release_pods; return 1; }
  grep -q "^${h%%_*} " "$work/pods" || { echo "the new holder ${h%%_*} is not a pod of the release"; return 1; }
  wait_until 30 leader_is_one_of_the_pods
  [ "$(cat "$work/leader")" = "${h%%_*}" ] || { echo "the leader changed again: $(cat "$work/leader")"; return 1; }
}

# A plan paused half-way, then `helm uninstall`: the node in flight finishes (pausing
# starts no node and lets those in flight reach a safe state), no node is left cordoned
# or tainted. What uninstall leaves: the CRDs (Helm never deletes a chart's crds/), so the
# profiles, plans and NodePartitionings (with their finalizer, which only the operator
# removes), the Lease and the namespace; everything else of the chart is gone.
uninstall_mid_plan_leaves_no_cordon() {
  use_cluster
  kubectl delete partitioningplan all-to-spx --wait --timeout=60s
  wait_until 60 no_items || { kubectl get nodepartitionings; return 1; }
  kubectl apply -f - <<EOF
apiVersion: infrastructure.silogen.ai/v1alpha1
kind: PartitioningPlan
metadata: {name: training-to-cpx}
spec:
  rollout: {maxParallel: 1, maxUnavailable: 1}
  partitionings:
  - name: training
    selector: {matchLabels: {nodepool: training-gpu}}
    profileRef: {kind: PartitioningProfile, name: mi300x-cpx-nps4}
EOF
  wait_until 60 some_item_in_flight || { kubectl get nodepartitionings; return 1; }
  note "uninstall: paused with $(kubectl get nodepartitionings -o jsonpath='{range .items[*]}{.spec.nodeName}={.status.phase} {end}')"
  kubectl patch partitioningplan training-to-cpx --type merge -p '{"spec":{"paused":true}}'
  wait_plan training-to-cpx Paused 60
  wait_until 90 no_item_in_flight || { kubectl get nodepartitionings; return 1; }
  note "uninstall: helm uninstall with $(kubectl get nodepartitionings -o jsonpath='{range .items[*]}{.spec.nodeName}={.status.phase} {end}')"
  now >"$work/uninstall.at"
  helm uninstall "$release" --namespace "$ns" --wait --timeout 60s
  wait_until 60 sh -c "[ -z \"\$(kubectl get pods -n $ns -l $pods_selector -o name)\" ]" || { kubectl get pods -n "$ns"; return 1; }
  no_node_cordoned_or_tainted
  # Gone.
  local kind
  for kind in deployment/$full serviceaccount/$full service/$full-metrics poddisruptionbudget/$full \
    networkpolicy/$full role/$full-leader-election rolebinding/$full-leader-election; do
    absent -n "$ns" "$kind"
  done
  absent clusterrole "$full"
  absent clusterrolebinding "$full"
  absent -n default role "$full-events"
  absent -n kube-amd-gpu role "$full-dcm-config"
  # Left.
  for kind in partitioningplans partitioningprofiles nodepartitionings; do
    kubectl get crd "$kind.infrastructure.silogen.ai" -o name
  done
  [ "$(kubectl get partitioningplan training-to-cpx -o jsonpath='{.spec.paused}')" = true ]
  [ "$(kubectl get partitioningprofiles -o name | grep -c .)" -eq 2 ]
  [ "$(kubectl get nodepartitionings -o jsonpath='{range .items[*]}{.metadata.finalizers}{"\n"}{end}' | grep -c infrastructure.silogen.ai)" -eq 2 ]
  kubectl get lease gpu-partitioner -n "$ns" -o name
  kubectl get namespace "$ns" -o name
  note "uninstall: no node cordoned or tainted; left: the 3 CRDs, 2 profiles, the paused plan, its 2 items (finalizer on), Lease $ns/gpu-partitioner, namespace $ns"
}

# Over the whole run: every write of the operator's account but its Lease's came from the
# Lease's holder of the moment, no two pods' writes overlap, and none of its requests
# was refused before the uninstall (which deletes the RBAC before the pods are gone).
audit_one_writer_at_a_time_nothing_refused() {
  audit writers >"$work/writers" || { cat "$work/writers"; return 1; }
  note "whole run, runs of writes (POD@IP) and Lease takeovers:" "$(sed 's/^/  /' "$work/writers")"
  audit refused --to "$(cat "$work/uninstall.at")"
  local after
  after=$(audit refused --from "$(cat "$work/uninstall.at")" | grep -c '^FAIL: refused' || true)
  note "after helm uninstall began: $after requests of the pods refused (the RBAC goes while they stop)"
}

sim_and_cluster_down_leave_nothing() {
  KUBECONFIG=/nonexistent tools/sim down --name "$cluster"
  [ ! -e "$state_root/sims/$cluster" ]
  down_leaves_nothing
}

# -- run --

timed_case() { # timed_case NAME: run_case NAME NAME, then its time
  local t=$SECONDS
  run_case "$1" "$1"
  printf '%-50s %4d s\n' "$1" $((SECONDS - t)) | tee -a "$work/steps.time"
}

[ "${NODE_SUITE_SHARED:-0}" = 1 ] || snapshot_host
start=$SECONDS
timed_case images_built_under_two_tags
[ "$_sh_failures" -gt 0 ] || timed_case cluster_up_with_node_and_images
[ "$_sh_failures" -gt 0 ] || timed_case simulated_gpu_nodes_beside_worker
[ "$_sh_failures" -gt 0 ] || timed_case install_gives_two_ready_replicas_and_one_leader
if [ "$_sh_failures" -eq 0 ]; then
  timed_case operator_uses_projected_token_and_service_ca
  timed_case plan_completes
  timed_case upgrade_rolls_with_one_leader_acting
  timed_case leader_failover
  timed_case uninstall_mid_plan_leaves_no_cordon
  timed_case audit_one_writer_at_a_time_nothing_refused
fi
if [ -e "$cluster_dir" ]; then
  keep_logs
  timed_case sim_and_cluster_down_leave_nothing
fi
echo "== per step"
cat "$work/steps.time"
echo "== notes"
cat "$work/notes" 2>/dev/null
echo "helm_pod_test took $((SECONDS - start)) s"
finish
echo "$((${#_sh_cases[@]} - _sh_failures)) passed, $_sh_failures failed"
[ "$_sh_failures" -eq 0 ]
