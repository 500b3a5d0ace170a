#!/usr/bin/env bash
# Fetch (once) and cache an Apache Flink distribution, print its FLINK_HOME.
#
# The distribution comes from PyPI: the wheels apache-flink and
# apache-flink-libraries carry bin/, conf/, lib/, opt/ and plugins/ inside the
# pyflink/ package folder, which works as FLINK_HOME with Java 17 (Flink 1.20's
# libraries come as an sdist with those folders under deps/: merged the same way).
# FLINK_VERSION picks the release (default 2.2.1; the plugin also runs on 1.20.5 and 2.3.0).
# Cache: $FRAGSTATE_CACHE/flink-$FLINK_VERSION/pyflink (default .cache/ in the repo).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

dest="$FRAGSTATE_CACHE/flink-$FLINK_VERSION"
home="$dest/pyflink"
if [ -x "$home/bin/jobmanager.sh" ] && [ -f "$dest/.complete" ]; then
  echo "$home"
  exit 0
fi

need python3 "needed to download and unpack the Flink wheels"
python3 -m pip --version >/dev/null 2>&1 || die "python3 -m pip is not available (needed to download Flink $FLINK_VERSION from PyPI)"

mkdir -p "$FRAGSTATE_CACHE" || die "cannot create the cache directory $FRAGSTATE_CACHE"
tmp="$(mktemp -d "$FRAGSTATE_CACHE/.flink-dl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
log "downloading Flink $FLINK_VERSION from PyPI (apache-flink, apache-flink-libraries) into $tmp"
# apache-flink is a CPython-specific wheel, but the parts used here (bin/, conf/) are
# plain scripts: ask for the CPython 3.11 manylinux wheel whatever the local Python is.
# apache-flink-libraries (lib/, opt/, plugins/) is a pure wheel.
for pkg in "apache-flink==$FLINK_VERSION" "apache-flink-libraries==$FLINK_VERSION"; do
  extra=()
  if [ "$pkg" = "apache-flink==$FLINK_VERSION" ]; then
    extra=(--only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 --implementation cp)
  fi
  if ! python3 -m pip download --no-deps --disable-pip-version-check -q "${extra[@]}" -d "$tmp/wheels" "$pkg" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    die "could not fetch the Flink distribution package '$pkg' from PyPI (pip download failed; is PyPI reachable?)"
  fi
done

mkdir -p "$tmp/unpacked"
for f in "$tmp"/wheels/*; do
  case "$f" in
    *.whl) python3 -m zipfile -e "$f" "$tmp/unpacked" ;;
    *.tar.gz) tar -xzf "$f" -C "$tmp/unpacked" ;;
    *) die "unexpected file from PyPI: $f" ;;
  esac
done
# An sdist unpacks into <name>-<version>/pyflink; a wheel straight into pyflink/.
found=""
for cand in "$tmp/unpacked/pyflink" "$tmp"/unpacked/*/pyflink; do
  [ -x "$cand/bin/jobmanager.sh" ] || [ -f "$cand/bin/jobmanager.sh" ] || continue
  found="$cand"
done
[ -n "$found" ] || die "the Flink $FLINK_VERSION packages from PyPI contain no pyflink/bin/jobmanager.sh"
if [ "$found" != "$tmp/unpacked/pyflink" ]; then
  # merge (libraries sdist + main wheel)
  cp -a "$tmp"/unpacked/*/pyflink/. "$tmp/unpacked/pyflink/" 2>/dev/null || true
  found="$tmp/unpacked/pyflink"
fi
# Flink 1.20's apache-flink-libraries is an sdist only: its lib/, opt/, plugins/, licenses/ and
# bin/*.jar sit in <name>-<version>/deps/, not below pyflink/ as in the 2.x wheels.
for deps in "$tmp"/unpacked/*/deps; do
  [ -d "$deps/lib" ] || continue
  for part in lib opt plugins licenses; do
    if [ -d "$deps/$part" ]; then
      mkdir -p "$found/$part"
      cp -a "$deps/$part/." "$found/$part/"
    fi
  done
  if ls "$deps"/bin/*.jar >/dev/null 2>&1; then
    cp -a "$deps"/bin/*.jar "$found/bin/"
  fi
done
ls "$found"/lib/flink-dist*.jar >/dev/null 2>&1 || die "the Flink $FLINK_VERSION packages from PyPI contain no lib/flink-dist*.jar"
chmod +x "$found"/bin/*
rm -rf "$dest"
mkdir -p "$dest"
mv "$found" "$home"
touch "$dest/.complete"
log "Flink $FLINK_VERSION cached at $home"
echo "$home"
