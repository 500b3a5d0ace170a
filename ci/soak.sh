#!/usr/bin/env bash
# The soak benchmark of issue 10 (not part of CI's quick tier; ci/test.sh runs a 1-minute smoke):
# a real Flink 2.2.1 cluster in cluster mode with the README's fragstate lines (RS(4,2)), RocksDB
# with incremental checkpoints, a checkpoint every second, the Traffic Monitoring job fed by the
# vehicle generator, a kill -9 of a TaskManager that runs window subtasks every --kill-every
# minutes (started again after the recovery). Every --sample-every seconds each fragstate node
# (JobManager, TaskManagers, 2 standalone nodes) is sampled: RSS, open fds (all and on fragment
# files), tombstones and their file, stored bytes, manifests deleted; and the job: checkpoint
# durations p50/p99, failed checkpoints, input records/s, objects deleted so far. A progress line
# per sample. Pass: exact output (read_committed vs the reference computation), every kill
# recovered, >= --min-deletes objects deleted, tombstones/fds under their stated bounds, no growth
# (runs >= 30 min: mean of the last 10 minutes <= mean of minutes 10-20 + 10 %), no ERROR or
# panic in any Flink or fragstate log. Exit code 0 only when everything passed.
#
#   ci/soak.sh                                   # 60 min, kill every 10 min, sample every 60 s
#   ci/soak.sh --minutes 1 --kill-every 0.6 --sample-every 20 --out target/soak-smoke   # the CI smoke
#   ci/soak.sh --help
# Options (all passed to io.fragstate.it.RunSoak): --minutes N, --kill-every MINUTES (fractions
# allowed), --sample-every SECONDS, --min-deletes N (default 500,000 x minutes / 60),
# --parallelism P (8), --task-managers T (5), --standalone-nodes N (2; up to 64: a larger storage
# cluster for the same job), --out DIR (default
# integration-tests/soak/results/<UTC date>). FRAGSTATE_SOAK_SKIP_BUILD=1 uses the jars already
# built; FRAGSTATE_CARGO_PROFILE=ci|release (default release) picks the Rust build.
#
# Writes DIR/nodes.csv, DIR/job.csv, DIR/summary.json, DIR/RESULTS.md and a PNG per series
# (matplotlib, pinned, installed into $FRAGSTATE_CACHE/soak-venv on first use). Everything the
# run started is stopped at the end, also on Ctrl-C, TERM or an error.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

need java "install a Java 17 JDK"
need python3 "install Python 3 (apt-get install python3)"
profile="${FRAGSTATE_CARGO_PROFILE:-release}"

if [ "${FRAGSTATE_SOAK_SKIP_BUILD:-}" != 1 ]; then
  need cargo "install Rust (https://rustup.rs)"
  need mvn "install Maven (apt-get install maven)"
  step "building the fragstate plugin and CLI (cargo profile $profile), the job, the generator and the harness"
  mvn -B -ntp -q -pl java-bridge,integration-tests -am package -DskipTests -Dfragstate.cargoProfile="$profile"
fi

# where RunSoak writes (the same default as SoakPlan), for the plots
out="integration-tests/soak/results/$(date -u +%F)"
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  [ "${args[$i]}" = --out ] && out="${args[$((i + 1))]}"
done

step "soak: ${*:-defaults (60 min, kill -9 every 10 min, a sample every 60 s)}"
java -Dfragstate.cargoProfile="$profile" -cp "integration-tests/target/integration-tests-$(project_version)-all.jar" \
  io.fragstate.it.RunSoak --repo . "$@" &
soak_pid=$!
# Ctrl-C reaches the JVM with the terminal's process group; TERM to this script is passed on.
# Either way the JVM's shutdown hook stops the job, the Flink cluster, the nodes and Kafka.
trap 'kill -TERM "$soak_pid" 2>/dev/null || true; wait "$soak_pid" || true; exit 130' INT TERM
rc=0
wait "$soak_pid" || rc=$?
trap - INT TERM

if [ -f "$out/nodes.csv" ]; then
  step "plots"
  ci/lib/soak-plots.sh "$out"
fi
exit "$rc"
