#!/usr/bin/env bash
# The README's demo command: the Daedalus Traffic Monitoring job, unmodified, on
# a real Flink 2.2.1 standalone cluster (1 JobManager + 4 TaskManagers as
# separate JVMs) with the fragstate jar in lib/ and fragstate switched on in
# config.yaml (cluster mode: one networked fragstate node per JVM, RS(2,2)),
# reading from and writing to a real Kafka broker (KRaft). After a few
# completed checkpoints a TaskManager that runs stateful window subtasks is
# killed with kill -9; the run prints the recovery timeline and checks the
# committed output (read_committed) against the reference computation:
# nothing lost, nothing duplicated. Everything it started is stopped at the
# end, also on Ctrl-C or an error.
#
# Downloads (first run only) go to $FRAGSTATE_CACHE (default .cache/):
# Flink 2.2.1 from PyPI, Kafka from Maven Central.
#
#   ci/demo.sh                 # scenario a: kill -9 one TaskManager
#   ci/demo.sh --scenario b    # kill -9 two TaskManagers at once (m = 2)
#   ci/demo.sh --scenario d    # stop the whole cluster (disk-backed fragment stores), start it, resume
#   ci/demo.sh --scenario e    # stop with a savepoint in fragstate, resume at parallelism 3
#   ci/demo.sh --scenario h    # the same job with plain Flink (hashmap + file://), for comparison
#   ci/demo.sh --job ysb       # scenario a with the Yahoo Streaming Benchmark job instead
#                              # (also with --scenario: e.g. --job ysb --scenario f)
#   ci/demo.sh --help          # this text; every other argument goes to the harness (RunScenario)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

need cargo "install Rust (https://rustup.rs)"
need mvn "install Maven (apt-get install maven)"
need java "install a Java 17 JDK"

step "building the Rust core, the fragstate plugin jar, the job, the generator and the harness"
mvn -B -ntp -q package -DskipTests

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--scenario a)
step "running: ${args[*]}"
exec java -jar "integration-tests/target/integration-tests-$(project_version)-all.jar" --repo . "${args[@]}"
