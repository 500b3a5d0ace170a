#!/usr/bin/env bash
# A Flink standalone cluster on loopback from the cached distribution (ci/lib/fetch-flink.sh):
# one JobManager and N TaskManagers, each its own JVM, started with Flink's own
# bin/jobmanager.sh and bin/taskmanager.sh like a user would.
#
#   flink-cluster.sh prepare RUN_DIR [EXTRA_CONFIG] [LIB_JAR...]
#       Lays out RUN_DIR/home, a per-run FLINK_HOME: bin/ copied, lib/ = links to the
#       distribution's jars plus LIB_JARs (the drop-in place of a plugin jar such as fragstate),
#       conf/config.yaml = the base settings below with every key of EXTRA_CONFIG (a file of
#       flat `key: value` lines) replacing the base one. Ports are chosen here.
#   flink-cluster.sh prepare-stock RUN_DIR EXTRA_CONFIG [LIB_JAR...]
#       The same layout, but conf/config.yaml = the distribution's conf/config.yaml as shipped
#       (JobManager RPC on localhost:6123, REST on 8081, 1 slot per TaskManager) with the lines of
#       EXTRA_CONFIG appended: a user's cluster, for checking documented settings on a stock
#       config. Fixed ports: fails naming the port when 6123, 8081 or 6130 (fragstate's default
#       port) is taken, so only one such cluster runs on a machine at a time.
#   flink-cluster.sh start RUN_DIR NUM_TMS   JobManager + NUM_TMS TaskManagers (ids tm-1..tm-N), waits for REST and registration
#   flink-cluster.sh start-tm RUN_DIR ID     one more TaskManager with resource id ID
#   flink-cluster.sh stop RUN_DIR            every JVM of this run: TERM, then KILL; waits until gone
#   flink-cluster.sh pid RUN_DIR NAME        pid of NAME (jobmanager, tm-1, ...)
#   flink-cluster.sh rest-url RUN_DIR        http://127.0.0.1:PORT (http://jm:PORT on emulated hosts)
#   flink-cluster.sh on-hosts RUN_DIR NETNS_RUN_DIR
#       Emulated hosts (ci/lib/netns.sh, after prepare): the JobManager runs on host `jm`, each
#       TaskManager on the host named like its resource id (tm-1, ...), started through
#       `netns.sh exec`; TaskManagers get `taskmanager.host` = their host name. The config must
#       bind to every interface and name `jm` (jobmanager.rpc.address, rest.address: jm,
#       *.bind-host / rest.bind-address: 0.0.0.0); run this script from a host of the topology.
#
# Base settings: hashmap state backend with file:// checkpoints in RUN_DIR/checkpoints
# (plain Flink, scenario h), temporary files (TaskManager working dirs, RocksDB) in RUN_DIR/tmp,
# fast failure detection (heartbeat 1 s / 5 s), fixed-delay restarts, slots spread evenly,
# small memory (JM 1 GiB, TM 1 GiB with 2 slots) to fit 2 cores / 24 GiB.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { die "usage: flink-cluster.sh prepare RUN_DIR [EXTRA_CONFIG] [LIB_JAR...] | prepare-stock RUN_DIR EXTRA_CONFIG [LIB_JAR...] | on-hosts RUN_DIR NETNS_RUN_DIR | start RUN_DIR NUM_TMS | start-tm RUN_DIR ID | stop RUN_DIR | pid RUN_DIR NAME | rest-url RUN_DIR"; }
cmd="${1:-}"
run="${2:-}"
[ -n "$cmd" ] && [ -n "$run" ] || usage

home_env() {
  [ -d "$run/home/bin" ] || die "$run/home is not prepared (run: flink-cluster.sh prepare $run)"
  run="$(cd "$run" && pwd)"
  export FLINK_HOME="$run/home"
  export FLINK_CONF_DIR="$run/home/conf"
  export FLINK_LOG_DIR="$run/log"
  export FLINK_PID_DIR="$run/pids"
  mkdir -p "$FLINK_LOG_DIR" "$FLINK_PID_DIR"
}

# layout_home DIST LIB_JAR...: the per-run FLINK_HOME without its config.yaml
layout_home() {
  local dist="$1" jar
  shift
  mkdir -p "$run"
  run="$(cd "$run" && pwd)"
  rm -rf "$run/home" "$run/netns.run"
  mkdir -p "$run/home/lib" "$run/home/conf" "$run/checkpoints" "$run/savepoints" "$run/log" "$run/pids" "$run/tmp"
  cp -R "$dist/bin" "$run/home/bin"
  for jar in "$dist"/lib/*.jar; do ln -s "$jar" "$run/home/lib/"; done
  for jar in "$@"; do
    [ -f "$jar" ] || die "jar to put into Flink's lib/ not found: $jar"
    cp "$jar" "$run/home/lib/"
  done
  ln -s "$dist/opt" "$run/home/opt"
  ln -s "$dist/plugins" "$run/home/plugins"
  cp "$dist"/conf/log4j*.properties "$run/home/conf/"
}

prepare() {
  local extra="${1:-}"
  shift || true
  local dist rest_port rpc_port key
  dist="$("$(dirname "${BASH_SOURCE[0]}")/fetch-flink.sh")"
  layout_home "$dist" "$@"
  rest_port="$(free_port)"
  rpc_port="$(free_port)"
  # the distribution's JVM module flags (--add-opens ...) are needed by Flink 2.x on Java 17
  local opens
  opens="$(grep -E '^[[:space:]]+all: --add-' "$dist/conf/config.yaml" | head -n 1 | sed -E 's/^[[:space:]]+all: //')"
  [ -n "$opens" ] || die "could not read env.java.opts.all (--add-opens flags) from $dist/conf/config.yaml"
  cat >"$run/base-config.yaml" <<YAML
jobmanager.rpc.address: localhost
jobmanager.rpc.port: $rpc_port
jobmanager.bind-host: localhost
jobmanager.memory.process.size: 1024m
jobmanager.execution.failover-strategy: region
taskmanager.bind-host: localhost
taskmanager.host: localhost
taskmanager.numberOfTaskSlots: 2
taskmanager.memory.process.size: 1024m
taskmanager.load-balance.mode: SLOTS
rest.address: localhost
rest.bind-address: localhost
rest.port: $rest_port
parallelism.default: 4
# REST answers are cached this long (default 3 s): keep the timeline fresh
web.refresh-interval: 500 ms
heartbeat.interval: 1000
heartbeat.timeout: 5000
restart-strategy.type: fixed-delay
restart-strategy.fixed-delay.attempts: 1000
restart-strategy.fixed-delay.delay: 1 s
state.backend.type: hashmap
execution.checkpointing.storage: filesystem
execution.checkpointing.dir: file://$run/checkpoints
execution.checkpointing.savepoint-dir: file://$run/savepoints
execution.checkpointing.num-retained: 2
# per run: a TaskManager's working dir is io.tmp.dirs/tm_<resource-id>, cleaned when a TaskManager of
# that id starts or stops; with the default /tmp another cluster's tm-1 deletes this one's RocksDB files
io.tmp.dirs: $run/tmp
env.java.opts.all: $opens -XX:+UseG1GC -XX:TieredStopAtLevel=1
YAML
  : >"$run/home/conf/config.yaml"
  if [ -n "$extra" ]; then
    [ -f "$extra" ] || die "extra Flink config file not found: $extra"
    # base lines whose key the extra file sets are dropped, then the extra lines follow
    local keys
    keys="$(grep -E '^[A-Za-z0-9_.-]+:' "$extra" | cut -d: -f1 | sort -u || true)"
    while IFS= read -r line; do
      key="${line%%:*}"
      if [ -n "$keys" ] && grep -qxF "$key" <<<"$keys"; then continue; fi
      printf '%s\n' "$line" >>"$run/home/conf/config.yaml"
    done <"$run/base-config.yaml"
    { echo "# --- scenario settings ($extra)"; cat "$extra"; } >>"$run/home/conf/config.yaml"
  else
    cp "$run/base-config.yaml" "$run/home/conf/config.yaml"
  fi
  grep -E '^rest.port:' "$run/home/conf/config.yaml" | awk '{print $2}' >"$run/rest.port"
  grep -E '^jobmanager.rpc.port:' "$run/home/conf/config.yaml" | awk '{print $2}' >"$run/rpc.port"
  log "Flink home for this run: $run/home (REST port $(cat "$run/rest.port"))"
}

# prepare-stock EXTRA_CONFIG LIB_JAR...: the distribution's config.yaml unchanged + EXTRA_CONFIG
prepare_stock() {
  local extra="${1:-}" dist port
  [ -f "$extra" ] || die "extra Flink config file not found: $extra"
  shift
  dist="$("$(dirname "${BASH_SOURCE[0]}")/fetch-flink.sh")"
  for port in 6123 8081 6130; do
    port_open "$port" && die "port $port on 127.0.0.1 is in use: a stock-config cluster needs it (6123 JobManager RPC, 8081 REST, 6130 the JobManager's fragstate node); stop what listens there (another Flink cluster or fragstate node?)"
  done
  layout_home "$dist" "$@"
  { cat "$dist/conf/config.yaml"; echo; echo "# --- added ($extra)"; cat "$extra"; } >"$run/home/conf/config.yaml"
  echo 8081 >"$run/rest.port"
  echo 6123 >"$run/rpc.port"
  log "Flink home for this run: $run/home (stock config.yaml + $extra; REST port 8081)"
}

# last pid appended to Flink's pid file for DAEMON
last_pid() {
  tail -n 1 "$FLINK_PID_DIR/flink-$USER_IDENT-$1.pid" 2>/dev/null || true
}

USER_IDENT="${FLINK_IDENT_STRING:-${USER:-$(id -un)}}"
export FLINK_IDENT_STRING="$USER_IDENT"
export USER="${USER:-$USER_IDENT}"

# rest_host: where the REST endpoint is reached: 127.0.0.1, or host `jm` on emulated hosts
rest_host() { if [ -f "$run/netns.run" ]; then echo jm; else echo 127.0.0.1; fi; }
rest_url() { echo "http://$(rest_host):$(cat "$run/rest.port")"; }

# on_host HOST CMD...: CMD on HOST of the emulated topology, or here when there is none
on_host() {
  local host=$1
  shift
  if [ -f "$run/netns.run" ]; then
    "$(dirname "${BASH_SOURCE[0]}")/netns.sh" exec "$(cat "$run/netns.run")" "$host" "$@"
  else
    "$@"
  fi
}

# start_tm ID: one TaskManager named ID. Its own FLINK_IDENT_STRING gives it its own pid file and
# log file names, so several can start at once.
start_tm() {
  local id="$1" pid
  local -a host_opt=()
  [ -f "$run/netns.run" ] && host_opt=(-D "taskmanager.host=$id")
  FLINK_IDENT_STRING="$USER_IDENT-$id" on_host "$id" "$FLINK_HOME/bin/taskmanager.sh" start -D "taskmanager.resource-id=$id" "${host_opt[@]}" \
    >>"$run/log/start-$id.log" 2>&1 || die "bin/taskmanager.sh start for $id failed (see $run/log/start-$id.log)"
  pid="$(tail -n 1 "$FLINK_PID_DIR/flink-$USER_IDENT-$id-taskexecutor.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || die "TaskManager $id did not start (see $run/log)"
  echo "$pid" >"$run/pids/$id.pid"
  log "TaskManager $id started (pid $pid)"
}

registered_tms() {
  python3 - "$(rest_url)/taskmanagers" <<'PY' 2>/dev/null || echo 0
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    print(len(json.load(r)["taskmanagers"]))
PY
}

# tms_registered N: true when at least N TaskManagers are registered with the JobManager.
tms_registered() { [ "$(registered_tms)" -ge "$1" ]; }

start() {
  local n="$1" i jm_pid port starter
  [ -n "$n" ] || usage
  home_env
  port="$(cat "$run/rest.port")"
  port_open "$port" "$(rest_host)" && die "port $port is already in use; cannot start the JobManager's REST endpoint there"
  trap 'stop' EXIT # a cluster that does not come up completely is not left behind
  on_host jm "$FLINK_HOME/bin/jobmanager.sh" start >>"$run/log/start.log" 2>&1 || die "bin/jobmanager.sh start failed (see $run/log/start.log)"
  jm_pid="$(last_pid standalonesession)"
  [ -n "$jm_pid" ] || die "JobManager did not start (see $run/log)"
  echo "$jm_pid" >"$run/pids/jobmanager.pid"
  log "JobManager started (pid $jm_pid), waiting for REST on port $port"
  # TaskManagers start in parallel (each start runs a JVM to compute its memory settings)
  local -a starters=()
  for ((i = 1; i <= n; i++)); do
    start_tm "tm-$i" &
    starters+=($!)
  done
  local failed=0
  for starter in "${starters[@]}"; do wait "$starter" || failed=1; done
  [ "$failed" = 0 ] || die "not every TaskManager started (see $run/log)"
  wait_until 120 "$jm_pid" port_open "$port" "$(rest_host)" || die "the JobManager REST endpoint did not open $(rest_host):$port within 120 s (logs: $run/log)"
  wait_until 120 "" tms_registered "$n" \
    || die "only $(registered_tms) of $n TaskManagers registered within 120 s (see $run/log)"
  trap - EXIT
  log "Flink cluster up: $(rest_url) with $n TaskManagers"
}

stop() {
  [ -d "$run/pids" ] || return 0
  run="$(cd "$run" && pwd)"
  local f pid
  local -a pids=()
  # our per-name pid files and Flink's own (which list the same JVMs); a pid only counts when
  # its command line names this run's log directory (a stale file may hold a recycled pid)
  for f in "$run"/pids/*.pid; do
    [ -e "$f" ] || continue
    while read -r pid; do
      [ -n "$pid" ] && pid_matches "$pid" "$run/log" && pids+=("$pid")
    done <"$f"
  done
  for pid in $(printf '%s\n' "${pids[@]}" | sort -u); do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $(printf '%s\n' "${pids[@]}" | sort -u); do stop_pid "$pid" "Flink JVM" 20; done
  rm -f "$run"/pids/*.pid
  if [ -f "$run/rest.port" ] && port_open "$(cat "$run/rest.port")" "$(rest_host)"; then
    log "WARNING: REST port $(cat "$run/rest.port") still open after stop"
  fi
}

case "$cmd" in
  prepare) shift 2; prepare "$@" ;;
  prepare-stock) shift 2; prepare_stock "$@" ;;
  start) start "${3:-}" ;;
  start-tm) home_env; [ -n "${3:-}" ] || usage; start_tm "$3" ;;
  stop) stop ;;
  pid) [ -n "${3:-}" ] || usage; cat "$run/pids/$3.pid" ;;
  rest-url) rest_url ;;
  on-hosts)
    [ -n "${3:-}" ] && [ -f "$3/netns/hosts" ] || die "on-hosts needs the run folder of an emulated topology (ci/lib/netns.sh up), got '${3:-}'"
    (cd "$3" && pwd) >"$run/netns.run"
    ;;
  *) usage ;;
esac
