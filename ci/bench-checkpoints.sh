#!/usr/bin/env bash
# What one Flink checkpoint's file-system calls cost in requests as the cluster grows, with the
# directory index and without it (issue 13; NETWORK.md "What still goes to every node"): `fragstate
# bench checkpoints` runs the calls Flink 2.2's JobManager and TaskManagers make per checkpoint
# (mkdirs, the state files, exists(_metadata), _metadata, the subsumed checkpoint's files and its
# directory) on in-process meshes of N nodes, every request counted where it arrives. Writes
# rows.jsonl, table.md, summary.json and checkpoints.png (ci/lib/checkpoints_report.py) in --out.
# CPU only, no network, no root; a request on the mesh is a function call, so the times are not
# network times (the request counts are what the runs are for).
#
#   ci/bench-checkpoints.sh                              # 10..10,000 nodes, 20 checkpoints, RS(4,2)
#   ci/bench-checkpoints.sh --quick                      # the CI variant: 10,40,160 nodes, 4 checkpoints
#   ci/bench-checkpoints.sh --nodes 10,100 --files 8     # other sizes; every option: fragstate bench checkpoints --help
#   ci/bench-checkpoints.sh --out DIR ...                # default: target/bench-checkpoints/<time>
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"
need cargo "install Rust (https://rustup.rs)"
need python3 "install Python 3 (apt-get install python3)"

out="target/bench-checkpoints/$(date -u +%Y%m%d-%H%M%S)"
args=()
sizes=(--nodes 10,40,160,640,2560,10000 --checkpoints 20)
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --quick) sizes=(--nodes 10,40,160 --checkpoints 4); shift ;;
    --nodes) sizes=(--nodes "${2:?--nodes needs sizes}"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
step "building fragstate (cargo profile ${FRAGSTATE_CARGO_PROFILE:-release})"
bin="$(cargo_binary fragstate-cli fragstate)"
step "checkpoints on meshes: ${sizes[*]} ${args[*]}"
"$bin" bench checkpoints "${sizes[@]}" "${args[@]}" >"$out/rows.jsonl"
python="$(ci/lib/plot-venv.sh)"
"$python" ci/lib/checkpoints_report.py "$out"
