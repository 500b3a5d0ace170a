#!/usr/bin/env bash
# The checkpoint-interval evaluation of issue 15 (not part of CI's quick tier; ci/test.sh runs
# --quick). Every run is a real Flink 2.2.1 cluster in cluster mode (the README's fragstate lines,
# RS(4,2), RocksDB incremental, 5 TaskManagers, 2 standalone nodes), the Traffic Monitoring job fed
# the Daedalus rate profile time-compressed into --minutes, and kill -9 of a TaskManager at the same
# seeded moments in every run. In order:
#   1. experiments: the failure experiments on a shadow copy of the job (Khaos phase 2; the harness
#      triggers checkpoints at 10, 60, 30 and 120 s and kills a TaskManager within an interval, each
#      interval at a high and at a low load) -> DIR/experiments/experiments.json and figures.json
#      (skipped with --experiments FILE);
#   2. fixed:10, fixed:30, fixed:60, fixed:120: Flink's own periodic checkpoints;
#   3. controller: fragstate tune beside the job, triggering checkpoints at the interval it chooses
#      (the job's configured interval is a 1-hour fallback), recovery predicted from fragstate's
#      figures (figures.json beside the experiments), told the run's failure rate (--mtbf: minutes
#      x 60 / kills) so that it weighs checkpoint time against recovery time; controller-regression:
#      the same with the regression fitted to the experiments; controller-khaos (not run by
#      default): Khaos's own objective, latency/constraint + recovery/constraint; controller-budget
#      (not run by default): fragstate's figures under a checkpoint budget of 0.4 % of the time
#      (--checkpoint-budget, planned over the experiments run's input rate), candidates to 300 s;
# then ci/lib/tune_report.py: DIR/RESULTS.md, DIR/summary.json and PNG plots.
#
#   ci/tune-eval.sh                      # the whole evaluation (~90 min: 20 + 6 x 8 min + start-ups)
#   ci/tune-eval.sh --quick              # CI: the controller alone, 3 min, one kill, fitted to the
#                                        # committed experiments (see integration-tests/tune/README.md)
# Options: --out DIR (default integration-tests/tune/results/<UTC date>), --minutes N (8),
# --experiments-minutes N (20), --scale S (0.15: peak 15,000 events/s), --kills N (3), --seed N (42),
# --experiments FILE (use these instead of running phase 2), --runs "fixed:10 ... controller"
# (controller:LATENCY_MS:RECOVERY_S runs the controller under other constraints than Khaos's
# 1,000 ms and 120 s; --runs "" runs only the experiments).
# FRAGSTATE_TUNE_SKIP_BUILD=1 uses the jars and binary already built; FRAGSTATE_CARGO_PROFILE=ci|release.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

need java "install a Java 17 JDK"
need python3 "install Python 3 (apt-get install python3)"
profile="${FRAGSTATE_CARGO_PROFILE:-release}"

out="integration-tests/tune/results/$(date -u +%F)"
minutes=8
exp_minutes=20
scale=0.15
kills=3
seed=42
experiments=""
runs="fixed:10 fixed:30 fixed:60 fixed:120 controller controller-regression"
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --experiments-minutes) exp_minutes="$2"; shift 2 ;;
    --scale) scale="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --experiments) experiments="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
if [ "$quick" = 1 ]; then
  minutes=3
  kills=1
  runs="controller"
  [ -n "$experiments" ] || experiments="$(ls -d integration-tests/tune/results/*/experiments/experiments.json 2>/dev/null | sort | tail -1)"
  [ -n "$experiments" ] || die "--quick needs committed experiments (integration-tests/tune/results/*/experiments/experiments.json) or --experiments FILE"
fi

if [ "${FRAGSTATE_TUNE_SKIP_BUILD:-}" != 1 ]; then
  need cargo "install Rust (https://rustup.rs)"
  need mvn "install Maven (apt-get install maven)"
  step "building the fragstate plugin and CLI (cargo profile $profile), the job, the generator and the harness"
  mvn -B -ntp -q -pl java-bridge,integration-tests -am package -DskipTests -Dfragstate.cargoProfile="$profile"
fi
jar="integration-tests/target/integration-tests-$(project_version)-all.jar"
mkdir -p "$out"
# every run plays the Daedalus profile (25,000 s) at the same speed: all of it in --minutes; the
# longer experiments run plays it more than once
compression=$(( (25000 + minutes * 60 - 1) / (minutes * 60) ))

run() {
  java -Dfragstate.cargoProfile="$profile" -cp "$jar" io.fragstate.it.RunTuneEval --repo . --out "$out" \
    --scale "$scale" --seed "$seed" --compression "$compression" "$@"
}

if [ -z "$experiments" ]; then
  step "phase 2: failure experiments on a shadow copy of the job ($exp_minutes min)"
  run --mode experiments --minutes "$exp_minutes"
  experiments="$out/experiments/experiments.json"
fi
[ -f "$experiments" ] || die "no experiments file at $experiments"
figures_file="$(dirname "$experiments")/figures.json"
[ -f "$figures_file" ] || die "no fragstate figures beside the experiments ($figures_file; the experiments run writes it)"
figures=(--recovery fragstate --figures "$figures_file")

failed=()
for r in $runs; do
  step "run $r: $minutes min, $kills kills (seed $seed)"
  if [ "$r" = controller ]; then
    # recovery predicted from fragstate's figures (measured by the experiments run)
    run --mode controller --experiments "$experiments" --minutes "$minutes" --kills "$kills" "${figures[@]}" || failed+=("$r")
  elif [ "$r" = controller-regression ]; then
    # recovery predicted by the regression fitted to the experiments (Khaos's own way)
    run --mode controller --experiments "$experiments" --minutes "$minutes" --kills "$kills" --recovery experiments \
      --name controller-regression || failed+=("$r")
  elif [ "$r" = controller-khaos ]; then
    run --mode controller --experiments "$experiments" --minutes "$minutes" --kills "$kills" "${figures[@]}" \
      --objective khaos --name controller-khaos || failed+=("$r")
  elif [ "$r" = controller-budget ]; then
    # at most 0.4 % of the time checkpointing (fixed 120 s spent 0.45-0.6 s per checkpoint in the
    # evaluations: 0.4-0.5 %), planned over the experiments run's input rate; candidates up to
    # 300 s so that calm hours can pay for the peaks
    run --mode controller --experiments "$experiments" --minutes "$minutes" --kills "$kills" "${figures[@]}" \
      --checkpoint-budget 0.004 --candidates 10,20,30,40,50,60,70,80,90,100,110,120,150,180,240,300 \
      --name controller-budget || failed+=("$r")
  elif [[ "$r" == controller:* ]]; then
    # controller:LATENCY_MS:RECOVERY_S — the controller under other constraints than Khaos's defaults
    IFS=: read -r _ lat rec <<<"$r"
    run --mode controller --experiments "$experiments" --minutes "$minutes" --kills "$kills" "${figures[@]}" \
      --max-latency-ms "$lat" --max-recovery-s "$rec" --name "controller-${lat}ms-${rec}s" || failed+=("$r")
  else
    run --mode "$r" --minutes "$minutes" --kills "$kills" || failed+=("$r")
  fi
done

step "report"
"$(ci/lib/plot-venv.sh)" ci/lib/tune_report.py "$out" "target/$profile/fragstate"
[ ${#failed[@]} -eq 0 ] || die "runs failed: ${failed[*]} (see their output above and $out/*/summary.json)"
