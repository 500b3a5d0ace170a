# shellcheck shell=bash
# Shared helpers for every script under ci/: repo root, the one cache directory, the project
# version, messages (step/log/die/need), port and polling helpers, pid helpers. Source it; it
# defines functions and variables only.

FRAGSTATE_REPO="${FRAGSTATE_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
FRAGSTATE_CACHE="${FRAGSTATE_CACHE:-$FRAGSTATE_REPO/.cache}"

# Pinned versions of the external services (see integration-tests/README.md).
FLINK_VERSION="${FLINK_VERSION:-2.2.1}"
KAFKA_VERSION="${KAFKA_VERSION:-4.2.0}"
# S3 server for the checkpoint-storage comparison (Go module, built by ci/lib/fetch-versitygw.sh)
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
# HDFS for the same comparison (NameNode/DataNodes from Maven Central, ci/lib/fetch-hadoop.sh)
HADOOP_VERSION="${HADOOP_VERSION:-3.4.2}"

# step MESSAGE: a heading on stdout, for the phases of a driver script.
step() { printf '\n==> %s\n' "$*"; }
# log MESSAGE: a time-stamped line on stderr (stdout of the ci/lib scripts is their result).
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
# die MESSAGE: the error, naming the script, on stderr; exit 1.
die() { printf 'ERROR: %s: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# within MINUTES WHAT COMMAND...: run COMMAND; die naming WHAT when it still runs after MINUTES
# (then it and its children are stopped). Rust's test harness has no per-test timeout: a hung
# test would hold CI until its 90-minute limit; the one that hung is the last one the harness
# reported as "has been running for over 60 seconds".
within() {
  local minutes=$1 what=$2 rc=0
  shift 2
  timeout -k 30 "${minutes}m" "$@" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    die "$what did not finish within $minutes minutes: stopped (a hang; the test still running is named above as running for over 60 seconds)"
  fi
  return "$rc"
}

# need COMMAND HINT: die naming COMMAND and what to do (HINT) when it is not on PATH.
need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"
}

# project_version: the Maven project version, i.e. <version> of the root pom.xml (the one place
# it is written; the modules' <parent> blocks repeat it because Maven requires that). Read with
# sed rather than `mvn help:evaluate` (seconds per call, a plugin download) or a glob over
# target/*.jar (a stale jar of an older version would match as well).
project_version() {
  local v
  v="$(sed -n '/<artifactId>fragstate-parent<\/artifactId>/,/<\/version>/s:.*<version>\(.*\)</version>.*:\1:p' \
    "$FRAGSTATE_REPO/pom.xml")"
  [ -n "$v" ] || die "cannot read the project <version> from $FRAGSTATE_REPO/pom.xml"
  printf '%s\n' "$v"
}

# cargo_binary PACKAGE BINARY: builds BINARY of the workspace crate PACKAGE with the cargo profile
# $FRAGSTATE_CARGO_PROFILE (default release; cargo's output on stderr) and prints the binary's path.
cargo_binary() {
  local profile="${FRAGSTATE_CARGO_PROFILE:-release}" dir
  cargo build --locked -q -p "$1" --bin "$2" --profile "$profile" >&2
  dir="$profile"
  [ "$profile" = dev ] && dir=debug
  printf '%s\n' "$FRAGSTATE_REPO/target/$dir/$2"
}

# help_on_request "$@": when the first argument is -h or --help, print the calling script's header
# comment (line 2 up to `set -euo pipefail`) and exit 0.
help_on_request() {
  case "${1:-}" in
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  esac
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# port_open PORT [HOST]: true when something accepts connections on HOST:PORT (default 127.0.0.1).
port_open() {
  (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null
}

# wait_until SECONDS PID COMMAND...: run COMMAND every 0.2 s until it succeeds. Returns 0 then,
# 1 when SECONDS have passed, 2 when PID (the process that should get there; "" for none) has
# exited first. The caller says what failed; the one polling loop of the scripts.
wait_until() {
  local secs=$1 pid=$2 i
  shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      return 2
    fi
    sleep 0.2
  done
  return 1
}

# wait_port PORT SECONDS WHAT [PID]: wait until PORT on 127.0.0.1 accepts connections (LISTEN);
# dies when it does not within SECONDS, or earlier when PID (the process that should open it)
# has died.
wait_port() {
  local port=$1 secs=$2 what=$3 pid=${4:-} rc=0
  wait_until "$secs" "$pid" port_open "$port" || rc=$?
  case $rc in
    0) return 0 ;;
    2) die "$what (pid $pid) exited before it opened port $port" ;;
    *) die "$what did not open port $port within ${secs}s" ;;
  esac
}

# pid_matches PID MARKER: true when PID is alive and its command line contains MARKER
# (guards against a recycled pid from a stale pid file).
pid_matches() {
  [ -r "/proc/$1/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2"
}

# pid_gone PID: true when no process PID exists (any more) or it has exited and awaits its reaping
# (state Z): a daemon's parent is PID 1 here, which reaped them 1-1.5 s late on these machines, and
# every stop waited for that.
pid_gone() {
  kill -0 "$1" 2>/dev/null || return 0
  [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]
}

# stop_pid PID WHAT [GRACE_SECONDS]: TERM, wait, then KILL (at once with 0); waits until gone.
stop_pid() {
  local pid=$1 what=$2 grace=${3:-15}
  pid_gone "$pid" && return 0
  if [ "$grace" -gt 0 ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_until "$grace" "" pid_gone "$pid" && return 0
    log "$what (pid $pid) ignored TERM for ${grace}s; sending KILL"
  fi
  kill -KILL "$pid" 2>/dev/null || true
  wait_until 5 "" pid_gone "$pid" && return 0
  log "WARNING: $what (pid $pid) still alive after KILL"
}
