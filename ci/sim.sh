#!/usr/bin/env bash
# Placement and membership at scale (issue 13): fragstate-sim, the real placement and SWIM code over
# simulated clusters, for every strategy and cluster size asked; tables, summary.json and PNG plots
# (ci/lib/sim_report.py) in --out. CPU only, no network, no root.
#
#   ci/sim.sh                                   # 50..1000 nodes, 100,000 objects, RS(4,2), 5 % churn; SWIM
#   ci/sim.sh --measure membership --loss 0.01  # SWIM only, 1 % of the messages lost
#   ci/sim.sh --measure membership --stops 5    # failure detection over 5 nodes stopped in turn
#   ci/sim.sh --nodes 50,100 --objects 20000    # the quick variant CI runs
#   ci/sim.sh --drift 0.3                       # writer and reader weigh nodes by free capacities 30 % apart
#   ci/sim.sh --out DIR ...                     # default: target/sim/<time>; every other option: fragstate-sim --help
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"
need cargo "install Rust (https://rustup.rs)"

out="target/sim/$(date -u +%Y%m%d-%H%M%S)"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
step "building fragstate-sim (cargo profile ${FRAGSTATE_CARGO_PROFILE:-release})"
bin="$(cargo_binary fragstate-sim fragstate-sim)"
step "simulating: ${args[*]:-defaults}"
"$bin" --out "$out" "${args[@]}"
python="$(ci/lib/plot-venv.sh)"
"$python" ci/lib/sim_report.py "$out"
