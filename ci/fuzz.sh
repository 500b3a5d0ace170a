#!/usr/bin/env bash
# Coverage-guided fuzzing (issue 12) of every decoder that reads bytes from a peer or a disk: wire
# frames as a server and a client read them, every body kind, hellos, manifests, fragment headers,
# cell frames, stripe reconstruction from forged cells, a disk store reopened on damaged files,
# the tombstone file, the cluster key file and membership messages (targets in rust-core/fuzz/src/lib.rs). AFL++ through
# cargo-afl on the stable toolchain (installed on first use, pinned), in persistent mode; the
# committed corpus (rust-core/fuzz/corpus/<target>/) is the starting point; every past finding sits
# in rust-core/fuzz/regressions/<target>/ and is replayed by `cargo test` (ci/test.sh).
#
#   ci/fuzz.sh                              # every target for 10 minutes, two at a time
#   ci/fuzz.sh --execs 10000000             # every target until 10 M executions
#   ci/fuzz.sh --seconds 15                 # CI's quick variant (ci/test.sh)
#   ci/fuzz.sh --targets manifest,frames --seconds 60 --jobs 1 --out target/fuzz/mine
#   ci/fuzz.sh --help
# Options: --seconds N (per target, default 600; with --execs, whichever ends first), --execs N,
# --targets a,b,... (default all), --jobs J (targets at once, default 2), --out DIR (default
# target/fuzz/<UTC date-time>). The committed corpus is the seeds (rust-core/fuzz/src/seeds.rs);
# what a run finds stays in DIR/<target>/default/queue.
#
# Writes DIR/summary.json and DIR/RESULTS.md: per target executions, executions/s, corpus size,
# edges found, crashes and hangs. Exit code 1 when any target saved a crash or a hang; their inputs
# are listed (reproduce: target/afl/release/fragstate-fuzz <target> < input under `cargo afl`, or
# put the input into regressions/<target>/ and run `cargo test -p fragstate-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

CARGO_AFL_VERSION=0.18.2
seconds=600
execs=""
targets=""
jobs=2
out="target/fuzz/$(date -u +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --execs) execs="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) die "unknown option '$1' (see ci/fuzz.sh --help)" ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a whole number of seconds >= 1, got '$seconds'"
[ -z "$execs" ] || [[ "$execs" =~ ^[1-9][0-9]*$ ]] || die "--execs must be a whole number >= 1, got '$execs'"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a whole number >= 1, got '$jobs'"

need cargo "install Rust (https://rustup.rs)"
need python3 "install Python 3 (apt-get install python3)"
need make "install make and a C compiler (apt-get install build-essential): cargo-afl builds AFL++"

if ! cargo afl --version 2>/dev/null | grep -q "^cargo-afl $CARGO_AFL_VERSION "; then
  step "installing cargo-afl $CARGO_AFL_VERSION (builds AFL++ from the sources it ships)"
  cargo install cargo-afl --locked --version "$CARGO_AFL_VERSION" \
    || die "cargo install cargo-afl $CARGO_AFL_VERSION failed (needs crates.io and a C compiler; output above)"
fi
# AFL++'s runtime for this rustc: built once per toolchain; a second build is refused as "already built".
if ! config_out="$(cargo afl config --build 2>&1)" && ! grep -q "already built" <<<"$config_out"; then
  printf '%s\n' "$config_out" >&2
  die "cargo afl config --build failed (output above)"
fi

step "building the fuzz targets with AFL++ instrumentation (target/afl)"
t0=$SECONDS
CARGO_TARGET_DIR=target/afl cargo afl build --release --locked -p fragstate-fuzz --features afl
echo "instrumented build took $((SECONDS - t0)) s"
bin="target/afl/release/fragstate-fuzz"

all_targets="$("$bin" 2>&1 | sed -n 's/.*targets: //p' | tr -d ' ')" || true
[ -n "$all_targets" ] || die "cannot read the target list from $bin"
targets="${targets:-$all_targets}"
IFS=, read -r -a run <<<"$targets"
for t in "${run[@]}"; do
  [[ ",$all_targets," == *",$t,"* ]] || die "unknown target '$t' (targets: $all_targets)"
done

mkdir -p "$out"
# AFL refuses to start when crashes would go to a core-dump helper, and checks CPU frequency
# scaling: neither matters for finding crashes here (it sees each crash as a signal).
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_QUIET=1
# The disk targets write and reopen files on every execution: in memory (/dev/shm, where the
# machine has it) they run about 5x faster than on a disk-backed /tmp (3.3 k/s vs 0.66 k/s
# measured for store_reopen, both under the same load). FRAGSTATE_FUZZ_SCRATCH picks another place.
scratch_base="${TMPDIR:-/tmp}"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch_base=/dev/shm; fi
if [ -z "${FRAGSTATE_FUZZ_SCRATCH:-}" ]; then
  FRAGSTATE_FUZZ_SCRATCH="$(mktemp -d "$scratch_base/fragstate-fuzz.XXXXXX")"
  # only a directory this script made is removed
  trap 'rm -rf "$FRAGSTATE_FUZZ_SCRATCH"' EXIT
fi
export FRAGSTATE_FUZZ_SCRATCH

fuzz_one() {
  local t="$1" limit=(-V "$seconds")
  [ -z "$execs" ] || limit+=(-E "$execs")
  log "fuzzing $t (${execs:+until $execs executions or }${seconds} s)"
  # -t: a single input may take 1 s (a store reopen on a slow disk); longer is a hang.
  cargo afl fuzz -i "rust-core/fuzz/corpus/$t" -o "$out/$t" "${limit[@]}" -t 1000 -- "$bin" "$t" \
    >"$out/$t.log" 2>&1 || log "afl-fuzz for $t ended with status $? (see $out/$t.log)"
  log "done $t: $(grep -E '^execs_done' "$out/$t/default/fuzzer_stats" 2>/dev/null | tr -s ' ')"
}

step "fuzzing ${#run[@]} targets, $jobs at a time, into $out"
t0=$SECONDS
running=0
for t in "${run[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
echo "fuzzing took $((SECONDS - t0)) s"

"$(ci/lib/plot-venv.sh)" ci/lib/fuzz_report.py "$out" "${run[@]}"
