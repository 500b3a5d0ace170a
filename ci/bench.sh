#!/usr/bin/env bash
# The recovery benchmark of issue 11 (not part of CI's quick tier; ci/test.sh runs --quick):
# fragstate side by side with HDFS (3x replication and RS-3-2 erasure coding), S3 (versitygw
# through s3a) and local file:// as Flink's checkpoint storage, every host its own network
# namespace with a shaped link (ci/lib/netns.sh: profile dc = one site at 1 Gbit/s; edge = the
# workers on an edge LAN, HDFS and S3 in a cloud site behind a 100 Mbit/s, 40 ms RTT WAN). Each run
# starts the storage service, a Flink 2.2.1 cluster (JobManager + 6 TaskManagers, RocksDB
# incremental checkpoints every 5 s), the state-bench job filled to the state size, measures the
# steady state, kill -9s TaskManagers running stateful subtasks and times the recovery (kill ->
# failure detected -> all subtasks RUNNING -> throughput back to 95 %), then checks the committed
# output (nothing lost or duplicated, restored state byte-exact).
#
#   ci/bench.sh                     # the matrix: dc and edge, every system, 300 and 3000 MiB, one and two kills, job restart
#   ci/bench.sh --quick             # dc, fragstate-rs42 vs hdfs, 32 MiB, one kill (the CI variant)
#   ci/bench.sh --profile edge --systems fragstate-rs42,s3 --state-mb 300 --failures one
#   ci/bench.sh --help
# Options: --profile dc,edge|none  --systems fragstate-rs42,fragstate-rs22,fragstate-rs42-zstd,fragstate-rs42-local,hdfs,hdfs-local,hdfs-ec,s3,file
# --state-mb 300,3000  --failures one,two,job  --steady-seconds S (30)  --rate EVENTS/S (2000)
# --cpu-profile (perf samples every core from the failure until every subtask runs again; the
# shares by process and shared object go into the run's JSON and RESULTS.md)
# --out DIR (default integration-tests/bench/results/<UTC date>). FRAGSTATE_BENCH_SKIP_BUILD=1
# uses the jars already built; FRAGSTATE_CARGO_PROFILE=ci|release (default release).
#
# Writes one JSON per run, then summary.json, RESULTS.md and PNG plots into DIR
# (ci/lib/bench_report.py). Needs root (network namespaces, tc). Everything it started is stopped
# and the namespaces are removed at the end, also on Ctrl-C, TERM or an error.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

profiles=dc,edge
systems=fragstate-rs42,fragstate-rs22,fragstate-rs42-zstd,fragstate-rs42-local,hdfs,hdfs-local,hdfs-ec,s3,file
states=300,3000
failures=one,two,job
out="integration-tests/bench/results/$(date -u +%F)"
extra=()
cpu_profile=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) profiles=dc systems=fragstate-rs42,hdfs states=32 failures=one
      extra+=(--steady-seconds 10) ;;
    --profile) profiles=$2; shift ;;
    --systems) systems=$2; shift ;;
    --state-mb) states=$2; shift ;;
    --failures) failures=$2; shift ;;
    --out) out=$2; shift ;;
    --steady-seconds | --rate | --task-managers | --parallelism) extra+=("$1" "$2"); shift ;;
    --cpu-profile) extra+=(--cpu-profile); cpu_profile=1 ;;
    *) die "unknown option '$1' (see ci/bench.sh --help)" ;;
  esac
  shift
done

need java "install a Java 17 JDK"
need python3 "install Python 3 (apt-get install python3)"
[ "$(id -u)" = 0 ] || die "the benchmark's emulated hosts need root (network namespaces, tc)"
if [ -n "$cpu_profile" ] && ! command -v perf >/dev/null; then
  step "installing perf (Debian package linux-perf) for --cpu-profile"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf; } >/dev/null \
    || die "could not install linux-perf with apt-get (needed by --cpu-profile; is the Debian mirror reachable?)"
fi
cargo_profile="${FRAGSTATE_CARGO_PROFILE:-release}"
if [ "${FRAGSTATE_BENCH_SKIP_BUILD:-}" != 1 ]; then
  need cargo "install Rust (https://rustup.rs)"
  need mvn "install Maven (apt-get install maven)"
  step "building the fragstate plugin and CLI (cargo profile $cargo_profile), the state-bench job and the harness"
  mvn -B -ntp -q -pl java-bridge,flink-examples/state-bench,integration-tests -am package -DskipTests \
    -Dfragstate.cargoProfile="$cargo_profile"
fi
ci/lib/fetch-flink.sh >/dev/null
case ",$systems," in *,hdfs,* | *,hdfs-ec,*) ci/lib/fetch-hadoop.sh >/dev/null ;; esac
case ",$systems," in *,s3,*) ci/lib/fetch-versitygw.sh >/dev/null; ci/lib/fetch-s3a.sh >/dev/null ;; esac

mkdir -p "$out"
out="$(cd "$out" && pwd)"
jar="integration-tests/target/integration-tests-$(project_version)-all.jar"
bench() { java -Dfragstate.cargoProfile="$cargo_profile" -cp "$jar" io.fragstate.it.RunBench --repo . "$@"; }
netrun="$(mktemp -d "${TMPDIR:-/tmp}/fragstate-bench.XXXXXX")"
cleanup() {
  ci/lib/netns.sh down "$netrun" || true
  rm -rf "$netrun"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rc=0
for profile in ${profiles//,/ }; do
  mapfile -t hosts < <(bench --hosts --profile "$profile" "${extra[@]}")
  step "profile $profile: hosts ${hosts[0]} | storage ${hosts[1]}"
  ci/lib/netns.sh up "$netrun" "$profile" "${hosts[0]}" "${hosts[1]}"
  ci/lib/netns.sh exec "$netrun" ctl java -Dfragstate.cargoProfile="$cargo_profile" -cp "$jar" \
    io.fragstate.it.RunBench --repo . --netns-run "$netrun" --profile "$profile" --systems "$systems" \
    --state-mb "$states" --failures "$failures" --out "$out" "${extra[@]}" || rc=1
  ci/lib/netns.sh down "$netrun"
done

step "report"
python="$(ci/lib/plot-venv.sh)"
"$python" ci/lib/bench_report.py "$out" || rc=1
exit "$rc"
