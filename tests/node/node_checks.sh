# shellcheck shell=bash
# shellcheck disable=SC2154 # cluster, cluster_dir and work are the sourcing test's
# What `tools/cluster down` of a cluster with a node must leave: no process, mount,
# namespace, link, route, iptables rule or cgroup, and the machine's sysctls as they were.
# Shared by the tests under tests/node/. Source it after setting `cluster` (the cluster's
# name), `cluster_dir` (its state dir) and `work` (a scratch dir), and call
# `snapshot_host` before `tools/cluster up`. The snapshot goes to $NODE_HOST_SNAPSHOT when
# set (a directory two suites on one cluster share, as tools/test runs them), else $work.

# The machine's state that nothing of the cluster may change or outlive.
node_check_sysctls=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
snapshot_sysctls() { for s in "${node_check_sysctls[@]}"; do echo "$s=$(cat "/proc/sys/$s")"; done; }
host_iptables() { { iptables-save 2>/dev/null; iptables-legacy-save 2>/dev/null; } | grep -v '^#' | sed 's/\[[0-9:]*\]//'; }

node_snapshot_dir() { echo "${NODE_HOST_SNAPSHOT:-$work}"; }

snapshot_host() {
  snapshot_sysctls >"$(node_snapshot_dir)/sysctls.before"
  host_iptables >"$(node_snapshot_dir)/iptables.before"
}

host_sysctls_unchanged() {
  diff <(cat "$(node_snapshot_dir)/sysctls.before") <(snapshot_sysctls)
}

# node_cgroup_pids: every process in the node's cgroup (any hierarchy), pods included.
node_cgroup_pids() {
  find /sys/fs/cgroup/gpu-partitioner-"$cluster" /sys/fs/cgroup/*/gpu-partitioner-"$cluster" \
    -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un | tr '\n' ' ' || true
}

# processes_naming DIR: processes (but this one) whose command line names DIR.
processes_naming() {
  python3 - "$1" <<'EOF'
import os, sys
me = os.getpid()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if int(pid) != me and sys.argv[1] in cmd:
        print(pid, cmd[:200])
EOF
}

# down_leaves_nothing: `tools/cluster down`, then nothing of the cluster is left.
down_leaves_nothing() {
  local net pids t=$SECONDS
  net=$(sed -n 's/^NODE_NET=//p' "$cluster_dir/cluster.env")
  [ -n "$net" ] || { echo "no NODE_NET in $cluster_dir/cluster.env"; return 1; }
  pids=$(node_cgroup_pids)
  [ -n "$pids" ] || { echo "no process in the node's cgroup before down"; return 1; }
  tools/cluster down --name "$cluster"
  echo "tools/cluster down took $((SECONDS - t)) s" >"$work/down.time"
  local bad=0 p
  for p in $pids; do
    if [ -e "/proc/$p" ]; then echo "process $p survives: $(tr '\0' ' ' <"/proc/$p/cmdline")"; bad=1; fi
  done
  if [ -n "$(processes_naming "$cluster_dir/")" ]; then
    echo "processes still name $cluster_dir: $(processes_naming "$cluster_dir/")"
    bad=1
  fi
  if mount | grep -F -- "$cluster_dir"; then bad=1; fi
  # The node's network namespace is a bind mount under $cluster_dir (the line above): with
  # the mount and every process gone, nothing holds it.
  if ip link | grep -E "gpnode${net}[:@]"; then bad=1; fi
  if ip route show table all | grep -E "10\.24[34]\.$net\."; then bad=1; fi
  if ls -d /sys/fs/cgroup/gpu-partitioner-"$cluster" /sys/fs/cgroup/*/gpu-partitioner-"$cluster" 2>/dev/null; then bad=1; fi
  if ! diff <(cat "$(node_snapshot_dir)/iptables.before") <(host_iptables); then
    echo "the machine's iptables rules changed"
    bad=1
  fi
  [ ! -e "$cluster_dir" ] || { echo "$cluster_dir is still there"; bad=1; }
  host_sysctls_unchanged || bad=1
  return "$bad"
}
