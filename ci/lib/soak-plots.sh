#!/usr/bin/env bash
# PNG plots of a soak's samples (one per series), drawn with the pinned matplotlib of
# plot-venv.sh.
#
#   soak-plots.sh OUT_DIR      reads OUT_DIR/nodes.csv and job.csv, writes OUT_DIR/*.png
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

out="${1:-}"
[ -n "$out" ] && [ -f "$out/nodes.csv" ] && [ -f "$out/job.csv" ] || die "usage: soak-plots.sh OUT_DIR (with nodes.csv and job.csv)"
python="$("$(dirname "${BASH_SOURCE[0]}")/plot-venv.sh")"
"$python" "$(dirname "${BASH_SOURCE[0]}")/soak_plots.py" "$out"
