#!/usr/bin/env bash
# PNG plots of a soak's samples (one per series) with matplotlib, installed from PyPI at a pinned
# version into a virtualenv under the cache ($FRAGSTATE_CACHE/soak-venv) on first use.
#
#   soak-plots.sh OUT_DIR      reads OUT_DIR/nodes.csv and job.csv, writes OUT_DIR/*.png
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MATPLOTLIB_VERSION=3.9.2
out="${1:-}"
[ -n "$out" ] && [ -f "$out/nodes.csv" ] && [ -f "$out/job.csv" ] || die "usage: soak-plots.sh OUT_DIR (with nodes.csv and job.csv)"

venv="$FRAGSTATE_CACHE/soak-venv"
if ! "$venv/bin/python" -c "import matplotlib, sys; sys.exit(matplotlib.__version__ != '$MATPLOTLIB_VERSION')" 2>/dev/null; then
  log "installing matplotlib $MATPLOTLIB_VERSION from PyPI into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (install python3-venv)"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "matplotlib==$MATPLOTLIB_VERSION" >"$venv.log" 2>&1; then
    cat "$venv.log" >&2
    rm -rf "$venv"
    die "could not install matplotlib==$MATPLOTLIB_VERSION from PyPI (pip install failed; is PyPI reachable?)"
  fi
fi
"$venv/bin/python" "$(dirname "${BASH_SOURCE[0]}")/soak_plots.py" "$out"
