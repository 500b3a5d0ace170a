#!/usr/bin/env bash
# Single-node Apache Kafka broker in KRaft mode (broker + controller in one JVM), run straight
# from the Maven Central jars of ci/lib/fetch-kafka.sh with `java kafka.Kafka`, on loopback.
#
#   kafka.sh start RUN_DIR PORT     start (formats RUN_DIR/data on first use), wait until it listens
#   kafka.sh stop RUN_DIR           KILL, wait until the process is gone (the end of a run: its
#                                   topics go with RUN_DIR; a graceful shutdown took ~6 s)
#   kafka.sh status RUN_DIR         exit 0 when running
#
# RUN_DIR keeps server.properties, data/, kafka.log, kafka.pid and the ports.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { die "usage: kafka.sh start RUN_DIR PORT | stop RUN_DIR | status RUN_DIR"; }
cmd="${1:-}"
run="${2:-}"
[ -n "$cmd" ] && [ -n "$run" ] || usage

start() {
  local port="$1" kafka ctl_port cluster_id pid
  [ -n "$port" ] || usage
  if [ -f "$run/kafka.pid" ] && kill -0 "$(cat "$run/kafka.pid")" 2>/dev/null; then
    die "a Kafka broker from $run is already running (pid $(cat "$run/kafka.pid"))"
  fi
  port_open "$port" && die "port $port on 127.0.0.1 is already in use; cannot start Kafka there"
  kafka="$("$(dirname "${BASH_SOURCE[0]}")/fetch-kafka.sh")"
  mkdir -p "$run/data"
  run="$(cd "$run" && pwd)"
  ctl_port="$(free_port)"
  cat >"$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctl_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctl_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$run/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# events carry simulated timestamps (often years old): no time-based deletion
log.retention.ms=-1
PROPS
  cat >"$run/log4j2.properties" <<'L4J'
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
L4J
  local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$run/log4j2.properties" -cp "$kafka/libs/*")
  if [ ! -f "$run/data/meta.properties" ]; then
    cluster_id="$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid 2>>"$run/kafka.log" | tail -n 1)"
    [ -n "$cluster_id" ] || die "Kafka's StorageTool random-uuid printed nothing (see $run/kafka.log)"
    java "${java_opts[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$run/server.properties" \
      >>"$run/kafka.log" 2>&1 || die "formatting the Kafka storage in $run/data failed (see $run/kafka.log)"
  fi
  nohup java "${java_opts[@]}" kafka.Kafka "$run/server.properties" >>"$run/kafka.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$run/kafka.pid"
  echo "$port" >"$run/kafka.port"
  echo "$ctl_port" >"$run/kafka.controller.port"
  trap 'stop' EXIT # a broker that does not come up is not left behind
  wait_port "$port" 90 "Kafka broker (log: $run/kafka.log)" "$pid"
  trap - EXIT
  log "Kafka $KAFKA_VERSION listening on 127.0.0.1:$port (pid $pid, log $run/kafka.log)"
}

stop() {
  [ -f "$run/kafka.pid" ] || return 0
  run="$(cd "$run" && pwd)"
  local pid port
  pid="$(cat "$run/kafka.pid")"
  port="$(cat "$run/kafka.port" 2>/dev/null || true)"
  if pid_matches "$pid" "$run/server.properties"; then
    stop_pid "$pid" "Kafka broker" 0
  fi
  rm -f "$run/kafka.pid"
  if [ -n "$port" ] && port_open "$port"; then
    log "WARNING: port $port is still open after stopping Kafka"
  fi
}

case "$cmd" in
  start) start "${3:-}" ;;
  stop) stop ;;
  status) [ -f "$run/kafka.pid" ] && pid_matches "$(cat "$run/kafka.pid")" "server.properties" ;;
  *) usage ;;
esac
