# shellcheck shell=bash
# Bash drivers (ci/demo.sh, manual runs) source this to bring up Kafka and a Flink cluster
# for one run and to tear everything down on exit, error or Ctrl-C:
#
#   source ci/lib/stack.sh
#   stack_init RUN_DIR                       # installs the EXIT/INT/TERM trap
#   stack_kafka_up                           # exports KAFKA_BROKERS=127.0.0.1:PORT
#   stack_flink_up [EXTRA_CONFIG] [JAR...]   # 4 TaskManagers (STACK_TMS); exports FLINK_REST, FLINK_HOME, FLINK_CONF_DIR
#   stack_down                               # idempotent; also what the trap runs
#
# Processes are found through the pid files under RUN_DIR, never by name.

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STACK_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

stack_init() {
  STACK_RUN="$1"
  mkdir -p "$STACK_RUN"
  STACK_RUN="$(cd "$STACK_RUN" && pwd)"
  trap 'stack_down' EXIT
  trap 'log "interrupted: tearing down"; exit 130' INT
  trap 'log "terminated: tearing down"; exit 143' TERM
}

stack_kafka_up() {
  local port
  port="$(free_port)"
  bash "$STACK_LIB/kafka.sh" start "$STACK_RUN/kafka" "$port"
  export KAFKA_BROKERS="127.0.0.1:$port"
}

stack_flink_up() {
  local extra="${1:-}"
  shift || true
  bash "$STACK_LIB/flink-cluster.sh" prepare "$STACK_RUN/flink" ${extra:+"$extra"} "$@"
  bash "$STACK_LIB/flink-cluster.sh" start "$STACK_RUN/flink" "${STACK_TMS:-4}"
  FLINK_REST="$(bash "$STACK_LIB/flink-cluster.sh" rest-url "$STACK_RUN/flink")"
  export FLINK_REST
  export FLINK_HOME="$STACK_RUN/flink/home"
  export FLINK_CONF_DIR="$FLINK_HOME/conf"
  export FLINK_LOG_DIR="$STACK_RUN/flink/log"
}

stack_down() {
  [ -n "${STACK_RUN:-}" ] || return 0
  [ -d "$STACK_RUN/flink" ] && bash "$STACK_LIB/flink-cluster.sh" stop "$STACK_RUN/flink" || true
  [ -d "$STACK_RUN/kafka" ] && bash "$STACK_LIB/kafka.sh" stop "$STACK_RUN/kafka" || true
}
