#!/usr/bin/env bash
# Standalone fragstate storage nodes (`fragstate node`) beside a Flink cluster in cluster mode:
# the bootstrap address every Flink JVM's node joins, and extra storage headroom.
#
#   fragstate-nodes.sh keygen BIN KEY_FILE            a new cluster key (fragstate keygen)
#   fragstate-nodes.sh start RUN_DIR BIN KEY_FILE N   N nodes on free loopback ports, disk stores under
#       RUN_DIR/node-I, failure domain standalone-I; prints their multiaddrs comma-separated. Started
#       again after a stop, node I takes its old port (RUN_DIR/node-I.port) and its stored fragments.
#   fragstate-nodes.sh stop RUN_DIR                   TERM, then KILL, every node of this run
#   fragstate-nodes.sh stats RUN_DIR BIN KEY_FILE [ARG...]   `fragstate stats [ARG...]` of the whole
#       cluster (e.g. --json: one JSON object per node and line)
#
# Pid files are RUN_DIR/pids/node-I.pid; a pid only counts while its command line names RUN_DIR.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { die "usage: fragstate-nodes.sh keygen BIN KEY_FILE | start RUN_DIR BIN KEY_FILE N | stop RUN_DIR | stats RUN_DIR BIN KEY_FILE [ARG...]"; }

start() {
  local run="$1" bin="$2" key="$3" n="$4" i port pid addrs="" first=""
  [ -x "$bin" ] || die "fragstate binary not found: $bin (build it: mvn package, or cargo build --release)"
  mkdir -p "$run/pids"
  run="$(cd "$run" && pwd)"
  trap 'stop "$run"' EXIT # nodes that do not all come up are not left behind
  for ((i = 1; i <= n; i++)); do
    port="$(cat "$run/node-$i.port" 2>/dev/null || free_port)"
    echo "$port" >"$run/node-$i.port"
    mkdir -p "$run/node-$i"
    FRAGSTATE_LOG="${FRAGSTATE_LOG:-info}" "$bin" node --listen "/ip4/127.0.0.1/tcp/$port" --key-file "$key" \
      --store-dir "$run/node-$i" --domain "standalone-$i" ${first:+--bootstrap "$first"} \
      >"$run/node-$i.out" 2>"$run/node-$i.log" &
    pid=$!
    echo "$pid" >"$run/pids/node-$i.pid"
    wait_port "$port" 30 "fragstate node $i (log: $run/node-$i.log)" "$pid"
    addrs="${addrs:+$addrs,}/ip4/127.0.0.1/tcp/$port"
    first="${first:-/ip4/127.0.0.1/tcp/$port}"
    log "fragstate node $i started (pid $pid, port $port)"
  done
  trap - EXIT
  echo "$first" >"$run/bootstrap"
  echo "$addrs"
}

stop() {
  local run="$1" f pid
  [ -d "$run/pids" ] || return 0
  run="$(cd "$run" && pwd)"
  local -a pids=()
  # every node gets its TERM first, then each is waited for: they stop side by side
  for f in "$run"/pids/node-*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"
    if [ -n "$pid" ] && pid_matches "$pid" "$run/node-"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    rm -f "$f"
  done
  for pid in "${pids[@]}"; do stop_pid "$pid" "fragstate node" 10; done
}

case "${1:-}" in
  keygen) [ $# -eq 3 ] || usage; "$2" keygen "$3" >/dev/null ;;
  start) [ $# -eq 5 ] || usage; start "$2" "$3" "$4" "$5" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  stats) [ $# -ge 4 ] || usage; "$3" stats --bootstrap "$(cat "$2/bootstrap")" --key-file "$4" "${@:5}" ;;
  *) usage ;;
esac
