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
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in cargo mvn java; do
  command -v "$tool" >/dev/null 2>&1 || { echo "ci/demo.sh: '$tool' not found on PATH (Rust via rustup, Maven and a Java 17 JDK are needed)" >&2; exit 1; }
done

echo "==> building the Rust core, the fragstate plugin jar, the job, the generator and the harness"
mvn -B -ntp -q package -DskipTests

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--scenario a)
echo "==> running: ${args[*]}"
exec java -jar integration-tests/target/integration-tests-0.1.0-SNAPSHOT-all.jar --repo . "${args[@]}"
