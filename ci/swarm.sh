#!/usr/bin/env bash
# Swarm runs (issue 13): N real `fragstate node` processes on loopback, full mesh versus SWIM
# membership. Per mode and size: time until a client sees all N, idle CPU, bytes written and TCP
# connections per node, resident memory, an 8 MiB put and get, and a get right after a holder was
# killed with SIGKILL (ci/lib/swarm_bench.py). Writes table.md, summary.json and swarm.png.
#
#   ci/swarm.sh                                   # mesh at 8..32, SWIM at 8..128 nodes
#   ci/swarm.sh --nodes 8,16,32,64,128,256        # other sizes (--mesh-max 32 caps the mesh runs)
#   ci/swarm.sh --quick                           # the CI variant: 8 nodes, both modes, short windows
#   ci/swarm.sh --out DIR ...                     # default: target/swarm/<time>
#   ci/swarm.sh --in-process --nodes 16,50,100,200,400,1000 --mesh-max 16 --tcp-max 400 \
#               --transports tcp,memory [--join-rate 20]
#                                                 # all nodes of a run in one process (fragstate bench
#                                                 # swarm): formation, idle cost, membership messages,
#                                                 # restores, failure detection, at sizes one process per
#                                                 # node cannot reach on 2 cores, over loopback TCP and
#                                                 # libp2p's memory transport (no file per connection);
#                                                 # a mesh of 32 in one process does not form on 2 cores;
#                                                 # --join-rate: nodes started per second (default: back
#                                                 # to back); --timeout: seconds a run may take to form
#                                                 # (default 300) (NETWORK.md "Swarm runs")
#   ci/swarm.sh --in-process --modes swim --transports memory --nodes 50,100,200,500,1000 \
#               --time-dilation 16 --join-rate 10
#                                                 # every membership timing 16× slower, so that one 2-core
#                                                 # process runs 1,000 nodes without saturating; times and
#                                                 # rates reported in protocol time (wall ÷ 16), --settle
#                                                 # and --idle are protocol seconds
#   ci/swarm.sh --in-process --modes swim --transports memory --nodes 1000 --control-nodes 50 \
#               --time-dilation 16 --join-rate 10
#                                                 # a control cluster of 50 nodes in the same process, its
#                                                 # restores alternating with the 1,000 nodes': the ratio of
#                                                 # their medians is the protocol's growth with N, measured
#                                                 # side by side (NETWORK.md "Time-dilated runs")
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"
need cargo "install Rust (https://rustup.rs)"
need python3 "install Python 3 (apt-get install python3)"

out="target/swarm/$(date -u +%Y%m%d-%H%M%S)"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --quick) args+=(--nodes 8 --settle 2 --idle 3 --strict); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
step "building fragstate (cargo profile ${FRAGSTATE_CARGO_PROFILE:-release})"
bin="$(cargo_binary fragstate-cli fragstate)"
python="$(ci/lib/plot-venv.sh)"
# every process this run starts is a child of the Python driver, stopped by it (SIGTERM, then SIGKILL)
step "swarm runs: ${args[*]:-defaults}"
"$python" ci/lib/swarm_bench.py --bin "$bin" --out "$out" "${args[@]}"
