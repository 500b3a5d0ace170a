#!/usr/bin/env bash
# The Python that draws the benchmarks' PNG plots: a virtualenv under the cache
# ($FRAGSTATE_CACHE/soak-venv) with matplotlib at a pinned version from PyPI, made on first use.
# Prints the path of its python.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MATPLOTLIB_VERSION=3.9.2
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
echo "$venv/bin/python"
