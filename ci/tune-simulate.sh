#!/usr/bin/env bash
# The checkpoint-interval policies of issue 15 over many draws of the failure moments, in numbers
# (`fragstate tune --simulate`; not part of CI's quick tier, ci/test.sh runs --quick). A real
# evaluation run (ci/tune-eval.sh) takes 20 minutes and says one thing about one draw of the kills
# on a noisy 2-core machine; this replays the same 16-minute run — the committed runs' input rate,
# the committed experiments' figures, 5 kills drawn as the harness draws them — for every policy on
# the same kills, per seed:
#   1. calibration: the job's catch-up rate (records/s worked off with a backlog) that reproduces
#      the committed eight-kill runs, their kill moments replayed at several rates beside what the
#      runs measured;
#   2. Flink's periodic trigger at fixed intervals from 10 to 240 s (the frontier: violations
#      against checkpoint time);
#   3. the controller (time-lost objective) and the checkpoint budget at several shares, each with
#      the committed figures (what the real runs' controller believed) and with the catch-up rate
#      corrected.
# then ci/lib/tune_simulate_report.py: DIR/RESULTS.md, DIR/summary.json and PNG plots; every
# simulated run is kept in DIR/*.jsonl.gz.
#
#   ci/tune-simulate.sh                  # 200 seeds (2.5 min on 2 cores)
#   ci/tune-simulate.sh --quick          # CI: 5 seeds, results under target/
# Options: --out DIR (default integration-tests/tune/results/<UTC date>-simulated), --seeds N (200),
# --kills N (5), --capacity RATE (80000: the calibrated catch-up rate of the simulated job).
# FRAGSTATE_CARGO_PROFILE=ci|release (default release): the profile the CLI is built with.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

need python3 "install Python 3 (apt-get install python3)"
profile="${FRAGSTATE_CARGO_PROFILE:-release}"  # cargo_binary's; named in the progress line

out="integration-tests/tune/results/$(date -u +%F)-simulated"
seeds=200
kills=5
capacity=80000
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --capacity) capacity="$2"; shift 2 ;;
    --quick) seeds=5; out="target/tune-simulate-quick/$(date -u +%Y%m%d-%H%M%S)"; shift ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

results=integration-tests/tune/results
experiments="$results/2026-12-04/experiments/experiments.json"
figures="$results/2026-12-04/experiments/figures.json"
# the committed eight-kill runs of the fifth evaluation: their input rate and kill moments, and
# the experiments run's input rate the budget plans over (27x against 53x: 53/27 s per sample)
runs="$results/2026-12-04-eight-kills"
load_profile="$runs/controller-budget/load-profile.json"
for f in "$experiments" "$figures" "$runs/fixed-120s/latency.csv" "$runs/controller/summary.json" "$load_profile"; do
  [ -f "$f" ] || die "committed input missing: $f"
done

need cargo "install Rust (https://rustup.rs)"
step "building the fragstate CLI (cargo profile $profile; nothing to do when it is built)"
fragstate="$(cargo_binary fragstate-cli fragstate)"

mkdir -p "$out"
python3 - "$runs/fixed-120s/latency.csv" "$out/input.json" "$figures" "$capacity" "$out/figures-corrected.json" <<'EOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
json.dump([float(r["input_events_per_s"]) for r in rows], open(sys.argv[2], "w"))
f = json.load(open(sys.argv[3]))
f["max_throughput"] = float(sys.argv[4])
json.dump(f, open(sys.argv[5], "w"), indent=1)
EOF
kills_at="$(python3 -c 'import json,sys; print(",".join("%g" % k["kill_at_s"] for k in json.load(open(sys.argv[1]))["kills"]))' "$runs/controller/summary.json")"
minutes_s=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$out/input.json")
mtbf=$(( minutes_s / kills ))
budget_candidates=10,20,30,40,50,60,70,80,90,100,110,120,150,180,240,300

# sim NAME ARGS...: one `fragstate tune --simulate` into DIR/NAME.jsonl
sim() {
  local name="$1"; shift
  log "simulating $name"
  "$fragstate" tune --experiments "$experiments" --simulate "$out/input.json" "$@" > "$out/$name.jsonl" \
    || die "fragstate tune --simulate failed for $name (its output: $out/$name.jsonl)"
}

step "calibration: the committed eight-kill runs' kills (at $kills_at) at several catch-up rates"
for rate in 17732 40000 60000 "$capacity" 120000; do
  sim "calibration-$rate" --figures "$figures" --mtbf 120 --simulate-kills-at "$kills_at" --simulate-seeds "$seeds" \
    --simulate-fixed 120 --simulate-max-throughput "$rate"
done

step "policies: $seeds draws of $kills kills in ${minutes_s} s, the job working off a backlog at $capacity records/s"
common=(--simulate-kills "$kills" --simulate-seeds "$seeds" --simulate-max-throughput "$capacity" --mtbf "$mtbf")
# the fixed intervals (the frontier) beside the controller with the committed figures
sim controller-committed --figures "$figures" "${common[@]}" --simulate-fixed 10,15,20,30,45,60,90,120,180,240
sim controller-corrected --figures "$out/figures-corrected.json" "${common[@]}" --simulate-fixed 120
for fig in committed corrected; do
  f="$figures"; [ "$fig" = corrected ] && f="$out/figures-corrected.json"
  for share in 0.004 0.008 0.016; do
    sim "budget-$share-$fig" --figures "$f" "${common[@]}" --simulate-fixed 120 --checkpoint-budget "$share" \
      --load-profile "$load_profile" --load-profile-period 1.963 --candidates "$budget_candidates"
  done
done

step "report"
"$(ci/lib/plot-venv.sh)" ci/lib/tune_simulate_report.py "$out" "$runs"
# every simulated run stays, compressed (the report reads them so too)
gzip -nf "$out"/*.jsonl  # -n: no name or time in the header, so a rerun that simulates the same writes the same bytes
