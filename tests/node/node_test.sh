#!/usr/bin/env bash
# tests/node/node_test.sh: `tools/cluster up --with-node` end to end, on a cluster of its
# own. A pod on the real node becomes Running and Ready, reaches the API server from its
# network namespace through the `kubernetes` Service's IP with its projected token, a
# Deployment selecting the real node (non-root, no capabilities, read-only root: as the
# chart runs the operator) lands there and not on simulated GPU nodes, and `tools/cluster
# down` leaves no process, mount, namespace, link, route, iptables rule or cgroup behind.
# Needs root and tools/setup's packages; builds its probe image with gcc.
# Run by tools/test (full runs); its last line is "N passed, N failed".
# NODE_TEST_CLUSTER names the cluster (default nodetest-PID). With NODE_SUITE_SHARED=1
# (tools/test) the cluster outlives the test for the next suite: the test
# removes what it made instead of bringing the cluster down.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=tests/support/shtest.sh
source tests/support/shtest.sh
# shellcheck source=tools/lib/common.sh
source tools/lib/common.sh
# shellcheck source=tests/node/node_checks.sh
source tests/node/node_checks.sh # down_leaves_nothing, host_sysctls_unchanged

cluster=${NODE_TEST_CLUSTER:-nodetest-$$}
state_root=${GPU_PARTITIONER_STATE:-$HOME/.local/state/gpu-partitioner}
cluster_dir=$state_root/clusters/$cluster
work=$(mktemp -d)
readonly probe_image=gpu-partitioner.local/api-probe:1
readonly pause_image=gpu-partitioner.local/pause:1
readonly ns=node-test
timeout=${NODE_TEST_TIMEOUT:-120}

shared=${NODE_SUITE_SHARED:-0}

cleanup() {
  [ "$shared" = 1 ] || tools/cluster down --name "$cluster" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

k() { kubectl "$@"; }

# -- cases --

up_with_node() {
  local t=$SECONDS
  tools/cluster up --name "$cluster" --with-node >"$work/up.log" 2>&1 || {
    tail -n 40 "$work/up.log"
    return 1
  }
  echo "tools/cluster up --with-node took $((SECONDS - t)) s" >"$work/up.time"
  eval "$(tools/cluster env --name "$cluster")"
  k get node worker >/dev/null
  [ "$(k get node worker -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
  tools/cluster status --name "$cluster"
}

# Nodes shaped like tools/sim's simulated MI300X nodes: no taint, Ready, plenty of room.
add_gpu_nodes() {
  local n
  for n in gpu-node-01 gpu-node-02; do
    k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $n
  labels: {sim.gpu-partitioner.io/managed: "true", kubernetes.io/hostname: $n, kubernetes.io/os: linux, gpu.vendor: amd, nodepool: training-gpu}
EOF
    k patch node "$n" --subresource=status --type=merge -p '{"status":{"capacity":{"cpu":"192","memory":"2000Gi","pods":"110"},"allocatable":{"cpu":"190","memory":"1900Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"simulated"}]}}' >/dev/null
  done
}

pod_runs_with_projected_token() {
  eval "$(tools/cluster env --name "$cluster")"
  gcc -static -Os -s -o "$work/api-probe" tests/node/api_probe.c -lssl -lcrypto -pthread 2>"$work/gcc.log" || {
    cat "$work/gcc.log"
    return 1
  }
  python3 tools/lib/oci_image.py static --ref "$probe_image" --entrypoint /api-probe \
    --out "$work/api-probe.tar" "/api-probe=$work/api-probe"
  tools/cluster import --name "$cluster" "$work/api-probe.tar"
  k create namespace "$ns" >/dev/null
  wait_until 60 kubectl get serviceaccount default -n "$ns" || { echo "no ServiceAccount $ns/default"; return 1; }
  # The readiness probe is the program again, run by the kubelet inside the pod: Ready
  # means the pod reached the API server.
  k apply -n "$ns" -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: api-probe}
spec:
  nodeSelector: {kubernetes.io/hostname: worker}
  dnsPolicy: Default
  terminationGracePeriodSeconds: 2
  containers:
  - name: probe
    image: $probe_image
    imagePullPolicy: Never
    readinessProbe:
      exec: {command: [/api-probe, --once]}
      periodSeconds: 2
EOF
  k wait -n "$ns" --for=condition=Ready pod/api-probe --timeout="${timeout}s" || {
    k describe -n "$ns" pod/api-probe | tail -20
    return 1
  }
  [ "$(k get -n "$ns" pod/api-probe -o jsonpath='{.status.phase} {.spec.nodeName}')" = "Running worker" ]
  # The token is the projected service-account token (not a legacy Secret).
  k get -n "$ns" pod/api-probe -o jsonpath='{.spec.volumes[*].projected.sources[*].serviceAccountToken.path}' | grep -x token >/dev/null
}

pod_reaches_api_server_through_service_ip() {
  eval "$(tools/cluster env --name "$cluster")"
  local ip line service_ip
  ip=$(k get -n "$ns" pod/api-probe -o jsonpath='{.status.podIP}')
  service_ip=$(k get service kubernetes -o jsonpath='{.spec.clusterIP}')
  [[ $ip == 10.244.* ]] || { echo "pod IP '$ip' is not in the node's pod range"; return 1; }
  line=$(k logs -n "$ns" pod/api-probe)
  echo "$line"
  [ "$line" = "api-probe: GET https://$service_ip:443/api from $ip: HTTP 200" ]
  # The API server saw the request come from the pod's own address (no masquerade), as the
  # pod's service account.
  python3 - "$cluster_dir/logs/audit.log" "$ip" "system:serviceaccount:$ns:default" <<'EOF'
import json, sys
log, ip, user = sys.argv[1:]
for line in open(log):
    e = json.loads(line)
    if (e.get("requestURI") == "/api" and e["user"]["username"] == user
            and e.get("sourceIPs") == [ip] and e.get("responseStatus", {}).get("code") == 200):
        sys.exit(0)
sys.exit("no audit event of GET /api by %s from %s" % (user, ip))
EOF
}

deployment_lands_on_real_node() {
  eval "$(tools/cluster env --name "$cluster")"
  add_gpu_nodes
  k apply -n "$ns" -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: on-worker}
spec:
  replicas: 3
  selector: {matchLabels: {app: on-worker}}
  template:
    metadata: {labels: {app: on-worker}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker}
      terminationGracePeriodSeconds: 2
      # As the chart runs the operator: not root and without capabilities (no
      # DAC_OVERRIDE: the image's root directory, as unpacked by the node's containerd,
      # must be open to every user), on a read-only root file system.
      securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true}
      containers:
      - name: pause
        image: $pause_image
        imagePullPolicy: Never
        securityContext:
          readOnlyRootFilesystem: true
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
EOF
  k rollout status -n "$ns" deployment/on-worker --timeout="${timeout}s" || {
    k describe pods -n "$ns" -l app=on-worker | grep -E 'Warning|Error' | sort -u | head
    return 1
  }
  local nodes
  nodes=$(k get pods -n "$ns" -l app=on-worker -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}' | sort | uniq -c)
  echo "$nodes"
  [ "$(awk '{print $1, $2, $3}' <<<"$nodes")" = "3 worker Running" ]
}

# On a cluster the next suite uses: what this test made is gone (its namespace and the
# two GPU-shaped nodes, whose names tools/sim gives its own nodes).
objects_removed() {
  eval "$(tools/cluster env --name "$cluster")"
  k delete namespace "$ns" --wait --timeout="${timeout}s"
  k delete node gpu-node-01 gpu-node-02 --wait --timeout=60s
  [ -z "$(k get pods -A --field-selector spec.nodeName=worker -o name)" ] || {
    k get pods -A -o wide --field-selector spec.nodeName=worker
    return 1
  }
}

# -- run --

snapshot_host
start=$SECONDS
run_case up_with_node up_with_node
if [ "$_sh_failures" -eq 0 ]; then
  run_case host_sysctls_unchanged host_sysctls_unchanged
  run_case pod_runs_with_projected_token pod_runs_with_projected_token
  run_case pod_reaches_api_server_through_service_ip pod_reaches_api_server_through_service_ip
  run_case deployment_lands_on_real_node deployment_lands_on_real_node
fi
if [ "$shared" = 1 ]; then
  run_case objects_removed objects_removed
else
  run_case down_leaves_nothing down_leaves_nothing
fi
cat "$work"/*.time 2>/dev/null
echo "node_test took $((SECONDS - start)) s"
finish
echo "$((${#_sh_cases[@]} - _sh_failures)) passed, $_sh_failures failed"
[ "$_sh_failures" -eq 0 ]
