# shellcheck shell=bash
# Shared helpers for the bash tools under tools/. Source it; it defines functions only
# (no side effects), so the caller keeps control of `set -euo pipefail`.

# Name of the calling tool, used as the prefix of every message.
: "${GP_TOOL:=$(basename "$0")}"

# log MSG...: progress message on stderr (stdout stays free for machine-readable output).
log() { printf '%s: %s\n' "$GP_TOOL" "$*" >&2; }

# warn MSG...: like log, but marked as a warning.
warn() { printf '%s: warning: %s\n' "$GP_TOOL" "$*" >&2; }

# die MSG...: print an error and exit 1.
die() {
  printf '%s: error: %s\n' "$GP_TOOL" "$*" >&2
  exit 1
}

# need CMD...: fail early, with a clear message, if a required command is missing.
need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || die "required command '$c' not found on PATH"
  done
}

# tail_log FILE [LINES]: print the last lines of a log on stderr, indented.
tail_log() {
  local file=$1 lines=${2:-20}
  if [ -s "$file" ]; then
    printf '%s: --- last %s lines of %s ---\n' "$GP_TOOL" "$lines" "$file" >&2
    tail -n "$lines" "$file" | sed 's/^/    /' >&2
  else
    printf '%s: (log %s is empty or missing)\n' "$GP_TOOL" "$file" >&2
  fi
}

# pick_free_ports N: print N distinct TCP ports, one per line, that are free on
# 127.0.0.1 right now. They are drawn at random from 20000-32767, below Linux's default
# ephemeral range (32768-60999): a port picked there could be taken by the kernel for an
# outgoing connection (e.g. apiserver -> etcd) before our component binds it.
pick_free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
want, ports, held = int(sys.argv[1]), [], []
for _ in range(1000):
    if len(ports) == want:
        break
    port = random.randint(20000, 32767)
    if port in ports:
        continue
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    held.append(s)  # keep it bound until all are picked, so the N ports are distinct
    ports.append(port)
for s in held:
    s.close()
if len(ports) != want:
    sys.exit("could not find %d free ports" % want)
print("\n".join(map(str, ports)))
EOF
}

# wait_until TIMEOUT_S CMD...: run CMD (quietly) every 0.5 s until it succeeds; return 1
# if it has not succeeded after TIMEOUT_S seconds.
wait_until() {
  local timeout=$1
  shift
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

# pid_runs PID EXE [NEEDLE]: true if PID is alive, its argv[0] (from /proc/PID/cmdline)
# is EXE, and, if NEEDLE is given, its command line contains NEEDLE. Guards against
# signalling an unrelated process that reused a recorded pid.
pid_runs() {
  local pid=$1 exe=$2 needle=${3:-} argv0 cmdline
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  cmdline=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  argv0=${cmdline%%$'\n'*}
  [ "$argv0" = "$exe" ] || return 1
  [ -z "$needle" ] || [[ $cmdline == *"$needle"* ]]
}

# stop_pid PID [GRACE_S]: SIGTERM, wait up to GRACE_S (default 10) seconds, then SIGKILL.
# The caller must have checked (pid_runs) that PID is the process it means.
stop_pid() {
  local pid=$1 grace=${2:-10}
  kill -TERM "$pid" 2>/dev/null || return 0
  local deadline=$((SECONDS + grace))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      warn "pid $pid did not exit ${grace}s after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
      break
    fi
    sleep 0.1
  done
}

# start_detached PIDFILE LOGFILE EXE ARGS...: start EXE in its own session (setsid, so it
# survives the calling shell and gets no SIGHUP), stdin from /dev/null, stdout and stderr
# appended to LOGFILE. The pid is written by the wrapper shell itself just before it
# execs EXE, so PIDFILE holds EXE's pid whether or not setsid had to fork. Every other
# inherited file descriptor is closed first: a long-lived EXE must not keep the caller's
# flock(1) lock files (or pipes) open. (No redirection on that loop: bash would park a copy
# of stderr on a high fd for it, the loop would close that copy, and stderr would be lost.)
start_detached() {
  local pidfile=$1 logfile=$2
  shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016 # $$ and $@ are expanded by the inner shell on purpose.
  setsid bash -c '
    for fd in /proc/$$/fd/*; do
      fd=${fd##*/}
      [ "$fd" -le 2 ] || eval "exec $fd>&-"
    done
    echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidfile" "$@" \
    </dev/null >>"$logfile" 2>&1 &
  local _
  for _ in $(seq 50); do
    [ -s "$pidfile" ] && return 0
    sleep 0.1
  done
  die "could not start $1 (no pid file $pidfile after 5 s; see $logfile)"
}
