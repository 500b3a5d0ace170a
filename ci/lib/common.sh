# shellcheck shell=bash
# Shared helpers for the ci/lib scripts: repo root, the one cache directory,
# logging, port helpers. Source it; it defines functions and variables only.

FRAGSTATE_REPO="${FRAGSTATE_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
FRAGSTATE_CACHE="${FRAGSTATE_CACHE:-$FRAGSTATE_REPO/.cache}"

# Pinned versions of the external services (see integration-tests/README.md).
FLINK_VERSION="${FLINK_VERSION:-2.2.1}"
KAFKA_VERSION="${KAFKA_VERSION:-4.2.0}"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# port_open PORT: true when something accepts connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_port PORT SECONDS WHAT [PID]: wait until PORT accepts connections;
# fails early when PID (the process that should open it) has died.
wait_port() {
  local port=$1 secs=$2 what=$3 pid=${4:-} i
  for ((i = 0; i < secs * 5; i++)); do
    port_open "$port" && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      die "$what (pid $pid) exited before it opened port $port"
    fi
    sleep 0.2
  done
  die "$what did not open port $port within ${secs}s"
}

# pid_matches PID MARKER: true when PID is alive and its command line contains MARKER
# (guards against a recycled pid from a stale pid file).
pid_matches() {
  [ -r "/proc/$1/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2"
}

# stop_pid PID WHAT [GRACE_SECONDS]: TERM, wait, then KILL; waits until gone.
stop_pid() {
  local pid=$1 what=$2 grace=${3:-15} i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  log "$what (pid $pid) ignored TERM for ${grace}s; sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "WARNING: $what (pid $pid) still alive after KILL"
}
