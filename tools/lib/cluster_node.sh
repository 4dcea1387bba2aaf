# shellcheck shell=bash
# shellcheck disable=SC2154 # dir, name, pki, here, env_file, ... are tools/cluster's
# The real node of `tools/cluster up --with-node`: containerd and runc (Debian's), a kubelet
# and kube-proxy built from the pinned Kubernetes module, and a CNI bridge network (Debian's
# plugins). Sourced by tools/cluster after its paths are set; uses its helpers (sign,
# write_kubeconfig, start_detached, ...).
#
# Everything of the node lives in four things of its own, each removed whole by `down`:
#   - a network namespace, persisted by a bind mount on node/ns/net (not in /run/netns): the
#     node's address, the pods' bridge `cni0` and their veths, kube-proxy's iptables rules,
#     and every sysctl the CNI plugins or kube-proxy set. Its one link to the machine is a
#     veth pair: gpnode<K> (host side, 10.243.K.1/30, where the API server listens) and
#     eth0 (node side, 10.243.K.2/30, the node's InternalIP). Pods get 10.244.K.0/24. The
#     namespace has no default route: pods reach the API server, the node and each other,
#     nothing else.
#   - a mount namespace, persisted on node/ns/mnt: pods' volumes, containers' root file
#     systems, the pods' network-namespace files, a tmpfs on /run (containerd's shim
#     sockets, runc's state, the xtables lock), an overlay on /var/lib (the CNI plugins'
#     cache) and node/var-log on /var/log (pod logs). The machine's mount table gets only
#     node/ns and the two namespace files in it.
#   - a cgroup, /gpu-partitioner-NAME in every hierarchy: containerd, its shims, the
#     kubelet and kube-proxy in node/, the pods in kubepods/ (the kubelet's cgroupRoot).
#     `down` freezes and kills everything in it, so no process of the node outlives it.
#   - node/ under the cluster's state dir: containerd's root and state, the kubelet's root,
#     the configs, the CNI config and IPAM state.
#
# The kubelet sets kernel.panic, kernel.panic_on_oops, vm.overcommit_memory (and three
# more) for the whole machine when they differ from what it wants. On a shared machine it
# must not: the node's mount namespace shows it files with those values over /proc/sys,
# and the machine's settings stay as they are.

readonly NODE_NAME=worker
readonly NODE_COMPONENTS=(containerd kubelet kube-proxy)
readonly PAUSE_IMAGE=gpu-partitioner.local/pause:1
readonly KUBELET_HEALTHZ_PORT=10248
readonly KUBE_PROXY_HEALTHZ_PORT=10256
readonly FALLBACK_METRIC=4242
# What the kubelet wants (pkg/kubelet/cm: setupKernelTunables), shown to it only.
readonly KUBELET_SYSCTLS=(vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
  kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000)

node_dir=$dir/node
node_ns=$node_dir/ns
node_net=$node_ns/net
node_mnt=$node_ns/mnt
node_sock=$node_dir/containerd.sock
node_cgroup=gpu-partitioner-$name
kubelet_kubeconfig=$dir/kubelet.kubeconfig
kube_proxy_kubeconfig=$dir/kube-proxy.kubeconfig

has_node() { [ -n "${NODE_NET:-}" ]; }

# need_node_tools: what a node needs from the machine (tools/setup installs it).
need_node_tools() {
  [ "$(id -u)" -eq 0 ] || die "a node needs root (namespaces, cgroups, mounts)"
  need containerd containerd-shim-runc-v2 ctr runc ip nsenter unshare iptables gcc
  local p
  for p in bridge host-local loopback; do
    [ -x "/usr/lib/cni/$p" ] ||
      die "no CNI plugin /usr/lib/cni/$p (Debian's containernetworking-plugins; run tools/setup)"
  done
  # A unix socket's path has at most 107 bytes.
  [ "${#node_sock}" -le 107 ] ||
    die "$node_sock is too long for a unix socket: use a shorter --name or GPU_PARTITIONER_STATE"
}

# node_net_vars: the node's addresses from its network index NODE_NET (cluster.env).
node_net_vars() {
  host_ip=10.243.$NODE_NET.1
  node_ip=10.243.$NODE_NET.2
  link_cidr=10.243.$NODE_NET.0/30
  pod_cidr=10.244.$NODE_NET.0/24
  host_veth=gpnode$NODE_NET
}

# pick_node_net: print a network index K in 1-250 that no other cluster has taken and
# whose ranges (10.243.K.0/30, 10.244.K.0/24) overlap no route or address of this machine.
# Called with the machine-wide node-network lock held.
pick_node_net() {
  local taken
  taken=$(sed -n 's/^NODE_NET=//p' "$clusters"/*/cluster.env 2>/dev/null | tr '\n' ' ')
  { ip -4 route show table all; ip -4 -o addr show; } |
    python3 -c '
import ipaddress, re, sys
taken = set(sys.argv[1].split())
used = []
for line in sys.stdin:
    for word in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", line):
        net = ipaddress.ip_network(word, strict=False)
        if net.prefixlen > 0:
            used.append(net)
for k in range(1, 251):
    mine = [ipaddress.ip_network("10.243.%d.0/30" % k), ipaddress.ip_network("10.244.%d.0/24" % k)]
    if str(k) not in taken and not any(m.overlaps(u) for m in mine for u in used):
        print(k)
        sys.exit(0)
sys.exit("no free node network in 10.243.1-250.0/30 + 10.244.1-250.0/24")
' "$taken"
}

# choose_node_net: record a network index for this cluster in cluster.env.
choose_node_net() {
  local lock=$clusters/.node-net.lock k
  exec {net_lock_fd}>"$lock"
  flock -w 60 "$net_lock_fd" || die "timed out waiting for $lock"
  k=$(pick_node_net) || die "cannot choose the node's network"
  echo "NODE_NET=$k" >>"$env_file"
  exec {net_lock_fd}>&-
  load_env
}

# -- the namespaces and the cgroup --

in_node_net() { nsenter --net="$node_net" -- "$@"; }

# is_mounted PATH: PATH is a mount point in this mount namespace.
is_mounted() { awk -v p="$1" '$5 == p {found = 1} END {exit !found}' /proc/self/mountinfo; }

# node_ns_up: node/ns, where the namespaces' files are bind-mounted, as a private mount:
# a mount namespace's file cannot be bound on a shared mount (as / is under systemd).
node_ns_up() {
  mkdir -p "$node_ns"
  is_mounted "$node_ns" || { mount --bind "$node_ns" "$node_ns" && mount --make-private "$node_ns"; }
}

node_net_up() {
  node_net_vars
  node_ns_up
  if ! is_mounted "$node_net"; then
    : >"$node_net"
    unshare --net="$node_net" true
  fi
  if ! ip link show "$host_veth" >/dev/null 2>&1; then
    # A name with a slash is a path for ip(8): the namespace's file, not /run/netns/NAME.
    ip link add "$host_veth" type veth peer name eth0 netns "$node_net"
  fi
  # IPv6 off on the link: no router solicitations or DAD on it, only what the node sends.
  echo 1 >"/proc/sys/net/ipv6/conf/$host_veth/disable_ipv6" 2>/dev/null || true
  ip addr replace "$host_ip/30" dev "$host_veth"
  ip link set "$host_veth" up
  in_node_net ip link set lo up
  in_node_net ip addr replace "$node_ip/30" dev eth0
  in_node_net ip link set eth0 up
  # Pods reach the API server (on the host side) through the node, which forwards; the
  # API server answers them (and could reach a webhook pod) by this route.
  ip route replace "$pod_cidr" via "$node_ip" dev "$host_veth"
  # Should the link go while the control plane runs (its clients dial 10.243.K.1), these
  # ranges must not fall to the default route and leave the machine: unreachable instead.
  ip route replace unreachable "$link_cidr" metric "$FALLBACK_METRIC"
  ip route replace unreachable "$pod_cidr" metric "$FALLBACK_METRIC"
  in_node_net sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward'
}

node_mnt_up() {
  is_mounted "$node_mnt" && return 0
  local kv k
  node_ns_up
  mkdir -p "$node_dir"/{var-lib-upper,var-lib-work,var-log,sysctl}
  for kv in "${KUBELET_SYSCTLS[@]}"; do
    k=${kv%%=*}
    echo "${kv#*=}" >"$node_dir/sysctl/${k//\//.}"
  done
  : >"$node_mnt"
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount="$node_mnt" --propagation private bash -euc '
    d=$1; shift
    mount -t tmpfs -o mode=0755,size=256m node-run /run
    mount -t overlay node-var-lib -o "lowerdir=/var/lib,upperdir=$d/var-lib-upper,workdir=$d/var-lib-work" /var/lib
    mount --bind "$d/var-log" /var/log
    for kv in "$@"; do k=${kv%%=*}; mount --bind "$d/sysctl/${k//\//.}" "/proc/sys/$k"; done' \
    node-mnt "$node_dir" "${KUBELET_SYSCTLS[@]}"
}

# node_cgroup_dirs: the node's cgroup in every mounted hierarchy: each of cgroup v1's
# (and the unified one beside them), or cgroup v2's one.
node_cgroup_dirs() {
  local h
  if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
    echo "/sys/fs/cgroup/$node_cgroup"
    return
  fi
  for h in /sys/fs/cgroup/*/; do
    if [ -e "$h/cgroup.procs" ] && mountpoint -q "$h"; then echo "${h%/}/$node_cgroup"; fi
  done
}

node_cgroup_up() {
  local c h
  for c in $(node_cgroup_dirs); do
    h=$(dirname "$c")
    mkdir -p "$c/node"
    # cgroup v2 (untested here: this machine has v1): the kubelet's pods need the
    # controllers below the node's cgroup.
    if [ -e "$c/cgroup.subtree_control" ] && [ -e "$h/cgroup.controllers" ]; then
      sed 's/\([a-z_]\+\)/+\1/g' "$h/cgroup.subtree_control" >"$c/cgroup.subtree_control" 2>/dev/null || true
    fi
    # A new cpuset is empty and takes no task until it has CPUs and memory nodes.
    if [ -e "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$c/cpuset.cpus" && cat "$h/cpuset.mems" >"$c/cpuset.mems"
      cat "$h/cpuset.cpus" >"$c/node/cpuset.cpus" && cat "$h/cpuset.mems" >"$c/node/cpuset.mems"
    fi
  done
}

# node_pids: every process in the node's cgroup, pods included.
node_pids() {
  local c
  for c in $(node_cgroup_dirs); do
    if [ -d "$c" ]; then find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
  done | sort -un
}

# node_kill_all: freeze the node's cgroup (nothing forks meanwhile), SIGKILL every process
# in it, thaw, and wait until it is empty.
node_kill_all() {
  local freezer=/sys/fs/cgroup/freezer/$node_cgroup pids deadline=$((SECONDS + 20))
  pids=$(node_pids)
  [ -n "$pids" ] || return 0
  log "killing the node's $(wc -w <<<"$pids") remaining processes (containerd's shims, pods)"
  while [ -n "$pids" ]; do
    [ ! -d "$freezer" ] || echo FROZEN >"$freezer/freezer.state" 2>/dev/null || true
    # shellcheck disable=SC2086 # a list of pids
    kill -KILL $pids 2>/dev/null || true
    [ ! -d "$freezer" ] || echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
    sleep 0.2
    pids=$(node_pids)
    if [ "$SECONDS" -ge "$deadline" ]; then
      warn "processes of the node survive SIGKILL: $(tr '\n' ' ' <<<"$pids")"
      return 0
    fi
  done
}

node_cgroup_down() {
  local c _
  for c in $(node_cgroup_dirs); do
    [ -d "$c" ] || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$c" ] || break
      sleep 0.3
    done
    [ ! -d "$c" ] || warn "cannot remove cgroup $c: $(find "$c" -depth -type d -exec rmdir {} + 2>&1 | head -1)"
  done
}

# -- certificates, kubeconfigs and configs (once, when the cluster is created) --

node_create() {
  node_net_vars
  mkdir -p "$node_dir"/{cni,ipam,kubelet,containerd}
  sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client_ext"
  sign kubelet-serving "/CN=$NODE_NAME" "$(server_ext "IP:$node_ip, DNS:$NODE_NAME")"
  sign kube-proxy /CN=system:kube-proxy "$client_ext"
  # The API server's identity towards the kubelet (logs, exec): all of the kubelet's API.
  sign kube-apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client "$client_ext"
  write_kubeconfig "$kubelet_kubeconfig" "system:node:$NODE_NAME" cert kubelet
  write_kubeconfig "$kube_proxy_kubeconfig" system:kube-proxy cert kube-proxy
  : >"$node_dir/resolv.conf" # pods get no name server: there is none to reach

  cat >"$node_dir/containerd.toml" <<EOF
version = 2
root = "$node_dir/containerd/root"
state = "$node_dir/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$node_sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # No container's oom_score_adj below containerd's own (0): none is shielded from the OOM
  # killer more than the machine's processes. Lowering it needs CAP_SYS_RESOURCE, which
  # some sandboxes (this project's CI) do not grant; runc then fails every sandbox.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node_dir/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
EOF

  cat >"$node_dir/cni/10-gpu-partitioner.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gpu-partitioner-$name",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$pod_cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$node_dir/ipam"
      }
    }
  ]
}
EOF

  cat >"$node_dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 is deprecated; this machine has it.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$node_cgroup
containerRuntimeEndpoint: unix://$node_sock
address: $node_ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
resolvConf: $node_dir/resolv.conf
volumePluginDir: $node_dir/kubelet/volume-plugins
failSwapOn: false
# A test node on a shared machine: never evict for the machine's disk or memory, never
# collect the images imported into it (they cannot be pulled again).
evictionHard: {memory.available: "1Mi", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%", imagefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF

  cat >"$node_dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $kube_proxy_kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $pod_cidr
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$node_ip/32"]
iptables: {localhostNodePorts: false}
# 0: leave the kernel's conntrack table size and timeouts alone (nf_conntrack_max is
# machine-wide).
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# node_kube_apiserver_args: what the API server needs for a node (appended to `args`).
node_kube_apiserver_args() {
  # shellcheck disable=SC2054 # commas inside flag values
  args+=(
    --kubelet-client-certificate="$pki/kube-apiserver-kubelet-client.crt"
    --kubelet-client-key="$pki/kube-apiserver-kubelet-client.key"
    --kubelet-certificate-authority="$pki/ca.crt"
    --kubelet-preferred-address-types=InternalIP
  )
}

# -- components --

args_containerd() { args=(--config "$node_dir/containerd.toml"); }

args_kubelet() {
  node_net_vars
  args=(
    --config="$node_dir/kubelet.yaml"
    --kubeconfig="$kubelet_kubeconfig"
    --root-dir="$node_dir/kubelet"
    --hostname-override="$NODE_NAME"
    --node-ip="$node_ip"
  )
}

args_kube-proxy() { args=(--config="$node_dir/kube-proxy.yaml"); }

is_node_component() { [[ " ${NODE_COMPONENTS[*]} " == *" $1 "* ]]; }

# component_exe C: the executable C runs as (argv[0], which `running` checks).
component_exe() {
  case $1 in
    containerd) command -v containerd ;;
    *) echo "$BIN/$1" ;;
  esac
}

# start_node_component C: C in the node's cgroup, mount and network namespaces, with
# the umask a service manager gives (022), not tools/cluster's 077: containerd makes each
# image layer's root directory with it, and a 0700 root keeps out every container user
# but root and holders of CAP_DAC_OVERRIDE (the chart runs the operator as 65532 with no
# capability). The state dir above stays private.
start_node_component() {
  local c=$1 args=() exe
  exe=$(component_exe "$c")
  "args_$c"
  log "starting $c (log: $(log_file "$c"))"
  printf '\n==== %s: tools/cluster starting %s\n' "$(date -Is)" "$c" >>"$(log_file "$c")"
  # shellcheck disable=SC2016 # expanded by the inner shell
  start_detached "$(pid_file "$c")" "$(log_file "$c")" bash -c '
    for c in $1; do echo $$ >"$c/node/cgroup.procs"; done
    shift
    export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    umask 022
    exec nsenter --mount="$1" --net="$2" -- "${@:3}"' \
    node-exec "$(node_cgroup_dirs | tr '\n' ' ')" "$node_mnt" "$node_net" "$exe" "${args[@]}"
}

node_healthy() {
  case $1 in
    containerd) ctr --address "$node_sock" version >/dev/null ;;
    kubelet) [ "$(in_node_net curl -fsS --max-time 5 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz")" = ok ] ;;
    kube-proxy) in_node_net curl -fsS --max-time 5 -o /dev/null "http://127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT/healthz" ;;
  esac
}

node_ready() {
  curl_admin "$(server_url)/api/v1/nodes/$NODE_NAME" | python3 -c '
import json, sys
node = json.load(sys.stdin)
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])) else 1)'
}

# import_image FILE: into containerd's k8s.io namespace (the kubelet's), unpacked.
import_image() {
  ctr --address "$node_sock" -n k8s.io images import --snapshotter overlayfs "$1"
}

# The pause image: a static C program (tools/lib/pause.c) in a one-layer image.
import_pause_image() {
  if ctr --address "$node_sock" -n k8s.io images ls -q "name==$PAUSE_IMAGE" | grep . >/dev/null; then
    return 0
  fi
  gcc -static -Os -s -o "$node_dir/pause" "$here/lib/pause.c"
  python3 "$here/lib/oci_image.py" static --ref "$PAUSE_IMAGE" --entrypoint /pause \
    --out "$node_dir/pause.tar" "/pause=$node_dir/pause"
  import_image "$node_dir/pause.tar" >/dev/null
  log "imported $PAUSE_IMAGE (tools/lib/pause.c) into the node"
}

node_up() {
  node_net_up
  node_cgroup_up
  node_mnt_up
  running containerd || start_node_component containerd
  wait_healthy containerd
  import_pause_image
  running kubelet || start_node_component kubelet
  running kube-proxy || start_node_component kube-proxy
  wait_healthy kubelet
  wait_healthy kube-proxy
  wait_until "$TIMEOUT" node_ready ||
    fail_component kubelet "has not made node $NODE_NAME Ready after ${TIMEOUT}s"
  log "node $NODE_NAME is Ready (pods: $pod_cidr, API server for pods: https://$SERVICE_IP:443 -> $(server_url))"
}

# node_stop: stop the node's components, kill what is left in its cgroup (shims, pods)
# and drop its mount namespace (with it every mount of the node). Its network stays: the
# API server listens there until it is stopped too.
node_stop() {
  local c
  for c in kube-proxy kubelet containerd; do stop_component "$c" & done
  wait
  node_kill_all
  if is_mounted "$node_mnt"; then
    umount "$node_mnt" 2>/dev/null || umount -l "$node_mnt"
  fi
}

# node_remove: after the control plane has stopped, the node's network namespace (its
# bridge, veths, iptables rules), its link and routes, its cgroup, and any mount left.
node_remove() {
  local m
  node_net_vars
  for m in "$node_net" "$node_mnt" "$node_ns"; do
    if is_mounted "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
  done
  ! ip link show "$host_veth" >/dev/null 2>&1 || ip link delete "$host_veth"
  ip route delete unreachable "$link_cidr" metric "$FALLBACK_METRIC" 2>/dev/null || true
  ip route delete unreachable "$pod_cidr" metric "$FALLBACK_METRIC" 2>/dev/null || true
  node_cgroup_down
  # Nothing should be mounted under the cluster's dir in this mount namespace now.
  while read -r m; do
    warn "unmounting leftover $m"
    umount -R "$m" 2>/dev/null || umount -l "$m"
  done < <(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
}
