#!/usr/bin/env bash
# tools/lib/demo_check.sh CASE: the README's first command end to end, as a newcomer meets
# it. Prints the demo's last lines and exits 0 if the case holds.
#
#   rollout-then-hangup  tools/demo on 4 nodes completes the seed's rollout; the terminal
#                        then closes (SIGHUP to the demo's process group) and nothing the
#                        demo started is left: no state, no cluster, no process.
#   orphan-stop          a demo whose shell is SIGKILLed leaves its operator and cluster
#                        running; the next tools/demo refuses and names
#                        'tools/demo --stop', which removes everything.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

name=democheck-$$
state_root=${GPU_PARTITIONER_STATE:-$HOME/.local/state/gpu-partitioner}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fail() {
  echo "demo_check: $*" >&2
  tail -n 40 "$log" >&2
  tools/demo --stop --name "$name" >/dev/null 2>&1
  exit 1
}

# wait_for_line PID PATTERN SECONDS: until the demo's log has PATTERN; fails if the demo
# exits first or the time runs out.
wait_for_line() {
  local pid=$1 pattern=$2 deadline=$((SECONDS + $3))
  until grep -q -- "$pattern" "$log"; do
    kill -0 "$pid" 2>/dev/null || fail "the demo exited before '$pattern'"
    [ "$SECONDS" -lt "$deadline" ] || fail "no '$pattern' within $3 s"
    sleep 1
  done
}

# Nothing of the demo may remain: its state, its cluster, its simulated nodes, or any
# process whose command line names one of their directories.
assert_gone() {
  local where
  for where in "$state_root/demo-$name" "$state_root/clusters/$name" "$state_root/sims/$name"; do
    [ ! -e "$where" ] || fail "$1: $where is still there"
    if pgrep -f -- "$where" >/dev/null; then
      fail "$1: processes still run under $where: $(pgrep -a -f -- "$where" | head -5)"
    fi
  done
}

# start_demo ARGS...: the demo in a session of its own, as a terminal would hold it; its
# pid is that session's process group. SIGHUP back to its default first: a shell started
# with it ignored (under nohup, say) can never trap it, and no terminal leaves it so.
start_demo() {
  env --default-signal=HUP setsid tools/demo --no-ui --name "$name" "$@" >"$log" 2>&1 &
  demo=$!
}

case ${1:-} in
  rollout-then-hangup)
    start_demo --nodes 4
    wait_for_line "$demo" "Press Ctrl-C" 1500
    grep -q "^plan phase: Completed;" "$log" || fail "the summary does not say the plan completed"
    kill -HUP -- "-$demo"
    deadline=$((SECONDS + 180))
    while kill -0 "$demo" 2>/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || fail "the demo still runs 180 s after SIGHUP"
      sleep 1
    done
    wait "$demo"
    rc=$?
    [ "$rc" -eq 0 ] || fail "the demo exited with $rc after SIGHUP (0: the rollout had completed)"
    assert_gone "after SIGHUP"
    ;;
  orphan-stop)
    start_demo --nodes 2
    wait_for_line "$demo" "applying the samples" 900
    kill -KILL "$demo"
    wait "$demo" 2>/dev/null
    second=$(tools/demo --no-ui --name "$name" 2>&1) && fail "a second demo started beside the orphan: $second"
    [[ $second == *"tools/demo --stop --name $name"* ]] ||
      fail "the refusal does not name 'tools/demo --stop --name $name': $second"
    tools/demo --stop --name "$name" >>"$log" 2>&1 || fail "tools/demo --stop failed"
    assert_gone "after tools/demo --stop"
    ;;
  *)
    echo "usage: $0 rollout-then-hangup|orphan-stop" >&2
    exit 2
    ;;
esac
tail -n 8 "$log"
