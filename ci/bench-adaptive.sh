#!/usr/bin/env bash
# Issue 14's proof (not part of CI's quick tier; ci/test.sh runs --quick): adaptive mode against
# every fixed coding setting on emulated heterogeneous clusters. Eight storage nodes (`fragstate
# node`, memory stores), a writer host tm-w and a reader host tm-r, every host its own network
# namespace with a 1 Gbit/s link shaped both ways (ci/lib/netns.sh), except:
#   a   n-1 and n-2 behind 20 Mbit/s links
#   b   n-1 .. n-4 at 100 Mbit/s (half of the nodes)
#   c   equal links; n-1 and n-2 limited to 20 % of one core (cgroup CPU quota)
#   d   equal links, then n-1's drops to 20 Mbit/s mid-run ("follows a change"): the writer
#       writes the state, the link is slowed (ci/lib/netns.sh rate), the writer writes a phase of
#       4 MiB checkpoints one a second and the state again (`--rounds 2`); both states are read
#       back over the slowed link, and the writer reports where n-1's fragments went (data or
#       parity) in each. Its configurations: adaptive and the default rs42-none-1m (unless --configs).
# For every setting and configuration, `fragstate bench restore write` on tm-w plays a TaskManager:
# 6 warm-up objects of 4 MiB (earlier checkpoints; adaptive mode measures its peers on them and
# decides its second phase after --phase seconds), then the state (--state, 30 objects), then it
# exits. `fragstate bench restore read` on tm-r plays the TaskManager that takes over: a fresh
# process reads the whole state back, 4 objects at a time, comparing every byte — --reads times.
# In a, b and c it then reads it --down-reads times more with n-8 (a fast node) killed (kill -9),
# as another TaskManager of a whole-job restart does after n-8's loss, and n-8 is started again
# (empty). Then the run's objects are deleted.
#
#   ci/bench-adaptive.sh                      # settings a,b,c (adaptive and the 8 fixed settings) and d; 300 MiB; 3 reads
#   ci/bench-adaptive.sh --quick              # CI: settings a and d, adaptive vs rs42-none-1m, 24 MiB, 1 read (+1 with n-8 down), phase 5 s
#   ci/bench-adaptive.sh --settings a --configs adaptive,rs42-none-1m,rs42-none-256k
# Options: --settings a,b,c  --configs LIST  --state BYTES (300MiB)  --reads N (3)  --down-reads N (1)  --phase S (30)
# --out DIR (default integration-tests/bench/results/<UTC date>-adaptive).
# Configurations: adaptive (configured RS(4,2), 1 MiB cells, no compression; at most the same
# storage overhead 1.5 and never fewer than 2 parity fragments) and rsKM-{none,zstd1}-{256k,1m}
# (k = K, m = M; by default RS(2,1) and RS(4,2): the issue's RS(6,3) needs 9 nodes, one per
# fragment, and these clusters have 8). FRAGSTATE_BENCH_SKIP_BUILD=1 uses the binary already built;
# FRAGSTATE_CARGO_PROFILE=ci|release (default release).
#
# Writes DIR/<setting>/<config>/{write.json,read-N.json,down-read-N.json,*.log}, then RESULTS.md, summary.json and
# PNG plots (ci/lib/adaptive_report.py). Needs root (network namespaces, tc, cgroups). Everything it
# started is stopped and the namespaces are removed at the end, also on Ctrl-C, TERM or an error.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh

help_on_request "$@"

# RS(6,3) is not among them: its 9 fragments need 9 failure domains, these clusters have 8 nodes
all_fixed=""
for km in 21 42; do
  for comp in none zstd1; do
    for cell in 256k 1m; do all_fixed+="rs$km-$comp-$cell,"; done
  done
done
settings=a,b,c,d
configs="adaptive,${all_fixed%,}"
configs_given=
state=300MiB
reads=3
down_reads=1
phase=30
out="integration-tests/bench/results/$(date -u +%F)-adaptive"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) settings=a,d configs=adaptive,rs42-none-1m state=24MiB reads=1 down_reads=1 phase=5 ;;
    --settings) settings=$2; shift ;;
    --configs) configs=$2 configs_given=1; shift ;;
    --state) state=$2; shift ;;
    --reads) reads=$2; shift ;;
    --down-reads) down_reads=$2; shift ;;
    --phase) phase=$2; shift ;;
    --out) out=$2; shift ;;
    *) die "unknown option '$1' (see ci/bench-adaptive.sh --help)" ;;
  esac
  shift
done
[[ "$reads" =~ ^[1-9][0-9]*$ ]] || die "--reads must be a whole number >= 1, got '$reads'"
[[ "$down_reads" =~ ^[0-9]+$ ]] || die "--down-reads must be a whole number >= 0, got '$down_reads'"
[[ "$phase" =~ ^[1-9][0-9]*$ ]] || die "--phase must be whole seconds >= 1, got '$phase'"
for s in ${settings//,/ }; do
  case $s in a | b | c | d) ;; *) die "unknown setting '$s': allowed are a, b, c, d" ;; esac
done
# coding arguments of a configuration name
coding_of() {
  case $1 in
    adaptive) echo "--k 4 --m 2 --cell-size 1MiB --adaptive --phase $phase" ;;
    rs[0-9][0-9]-none-256k | rs[0-9][0-9]-none-1m | rs[0-9][0-9]-zstd1-256k | rs[0-9][0-9]-zstd1-1m)
      local km=${1:2:2} rest=${1#rs??-} comp cell
      comp=${rest%-*} cell=${rest#*-}
      echo "--k ${km:0:1} --m ${km:1:1} --cell-size $([ "$cell" = 1m ] && echo 1MiB || echo 256KiB)$([ "$comp" = zstd1 ] && echo " --zstd 1")" ;;
    *) die "unknown configuration '$1': adaptive or rsKM-{none,zstd1}-{256k,1m}" ;;
  esac
}
for c in ${configs//,/ }; do coding_of "$c" >/dev/null; done

need python3 "install Python 3 (apt-get install python3)"
[ "$(id -u)" = 0 ] || die "the emulated hosts need root (network namespaces, tc, cgroups)"
profile="${FRAGSTATE_CARGO_PROFILE:-release}"
if [ "${FRAGSTATE_BENCH_SKIP_BUILD:-}" != 1 ]; then
  need cargo "install Rust (https://rustup.rs)"
  step "building the fragstate CLI (cargo profile $profile)"
  cargo build -q --locked --profile "$profile" -p fragstate-cli
fi
bin="$(pwd)/target/$profile/fragstate"
[ -x "$bin" ] || die "no fragstate binary at $bin (build it, or unset FRAGSTATE_BENCH_SKIP_BUILD)"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
netrun="$(mktemp -d "${TMPDIR:-/tmp}/fragstate-adaptive.XXXXXX")"
key="$netrun/cluster.key"
"$bin" keygen "$key" >/dev/null
nodes=(n-1 n-2 n-3 n-4 n-5 n-6 n-7 n-8)
node_pids=()
cgroups=()

# throttle_cpu PID NAME PERCENT: the process (all its threads) gets PERCENT of one core (cgroup v2
# cpu.max, else v1 cpu.cfs_quota_us).
throttle_cpu() {
  local pid=$1 name=$2 pct=$3 d
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    d=/sys/fs/cgroup/fsn-$name
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    mkdir -p "$d"
    echo "$((pct * 1000)) 100000" >"$d/cpu.max"
  else
    d=/sys/fs/cgroup/cpu/fsn-$name
    [ -d /sys/fs/cgroup/cpu ] || die "no cgroup CPU controller (neither /sys/fs/cgroup/cgroup.controllers nor /sys/fs/cgroup/cpu)"
    mkdir -p "$d"
    echo 100000 >"$d/cpu.cfs_period_us"
    echo "$((pct * 1000))" >"$d/cpu.cfs_quota_us"
  fi
  echo "$pid" >"$d/cgroup.procs"
  cgroups+=("$d")
  log "$name (pid $pid) limited to $pct % of one core ($d)"
}

stop_nodes() {
  local p d
  for p in "${node_pids[@]}"; do stop_pid "$p" "storage node" 5; done
  node_pids=()
  for d in "${cgroups[@]}"; do rmdir "$d" 2>/dev/null || true; done
  cgroups=()
}

cleanup() {
  stop_nodes
  ci/lib/netns.sh down "$netrun" || true
  rm -rf "$netrun"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

on() { ci/lib/netns.sh exec "$netrun" "$@"; }

# start_node DIR I: storage node I (its log appended to DIR/<host>.log; its pid in node_pids[I])
start_node() {
  local dir=$1 i=$2 first addr boot=()
  first="$(ci/lib/netns.sh addr "$netrun" n-1)"
  addr="$(ci/lib/netns.sh addr "$netrun" "${nodes[$i]}")"
  [ "$i" -gt 0 ] && boot=(--bootstrap "/ip4/$first/tcp/7710")
  on "${nodes[$i]}" "$bin" node --listen "/ip4/$addr/tcp/7710" --memory 4GiB --domain "${nodes[$i]}" \
    --key-file "$key" --repair-rate 0 --scrub-rate 0 "${boot[@]}" >>"$dir/${nodes[$i]}.log" 2>&1 &
  node_pids[i]=$!
  disown "${node_pids[i]}" # stopped by pid (stop_pid); no "Killed" job notice when n-8 is killed

}

start_nodes() {
  local i
  for i in "${!nodes[@]}"; do start_node "$1" "$i"; done
}

# cluster_args [NODES]: how a client reaches the cluster, waiting for NODES (8) storage nodes
cluster_args() { echo "--bootstrap /ip4/$(ci/lib/netns.sh addr "$netrun" n-1)/tcp/7710 --key-file $key --wait-nodes ${1:-8} --wait-timeout 60 --request-timeout 120"; }

rc=0
for s in ${settings//,/ }; do
  rates=""
  case $s in
    a) rates="n-1=20mbit,n-2=20mbit" ;;
    b) rates="n-1=100mbit,n-2=100mbit,n-3=100mbit,n-4=100mbit" ;;
  esac
  step "setting $s${rates:+: $rates}$([ "$s" = c ] && echo ": n-1, n-2 at 20 % of one core")$([ "$s" = d ] && echo ": n-1's link slowed to 20 Mbit/s after the first state")"
  mkdir -p "$out/$s"
  FRAGSTATE_NETNS_RATES="$rates" ci/lib/netns.sh up "$netrun" dc "$(IFS=,; echo "${nodes[*]}"),tm-w,tm-r"
  start_nodes "$out/$s"
  if [ "$s" = c ]; then
    throttle_cpu "${node_pids[0]}" n-1 20
    throttle_cpu "${node_pids[1]}" n-2 20
  fi
  setting_configs=$configs
  [ "$s" = d ] && [ -z "$configs_given" ] && setting_configs=adaptive,rs42-none-1m
  for c in ${setting_configs//,/ }; do
    dir="$out/$s/$c"
    rm -rf "$dir"
    mkdir -p "$dir"
    prefix="bench-$s-$c"
    # shellcheck disable=SC2046 # word splitting of the argument lists is intended
    # the writer logs adaptive mode's phase decisions with their inputs (write.log)
    rounds=()
    [ "$s" = d ] && rounds=(--rounds 2 --round-gate "$dir/link-slowed")
    if [ "$s" = d ]; then
      ci/lib/netns.sh rate "$netrun" n-1 1gbit >/dev/null
      # slows n-1's link once the first state is written, then lets the writer go on
      (
        until grep -q "round 1 written" "$dir/write.log" 2>/dev/null; do sleep 0.2; done
        ci/lib/netns.sh rate "$netrun" n-1 20mbit >"$dir/link.log" 2>&1
        date +%s.%N >"$dir/link-slowed"
      ) &
      gate_pid=$!
    fi
    # shellcheck disable=SC2046
    if ! FRAGSTATE_LOG=warn,fragstate_client::adaptive=info on tm-w "$bin" bench restore write $(cluster_args) $(coding_of "$c") --prefix "$prefix" --state "$state" \
      "${rounds[@]}" >"$dir/write.json" 2>"$dir/write.log"; then
      log "setting $s, $c: the write failed: $(tail -n 2 "$dir/write.log")"
      [ "$s" = d ] && kill "$gate_pid" 2>/dev/null
      rc=1
      continue
    fi
    [ "$s" = d ] && wait "$gate_pid"
    # d: the state of the second round (after the change) is the one compared; the first beside it
    read_prefixes=("$prefix=read")
    [ "$s" = d ] && read_prefixes=("$prefix/round-2=read" "$prefix=round1-read")
    # read_state PREFIX NAME COUNT [NODES]: COUNT fresh readers of the state, NAME-N.json each
    read_state() {
      local r
      for r in $(seq 1 "$3"); do
        # shellcheck disable=SC2046
        if ! on tm-r "$bin" bench restore read $(cluster_args "${4:-8}") --prefix "$1" --state "$state" \
          >"$dir/$2-$r.json" 2>"$dir/$2-$r.log"; then
          log "setting $s, $c: $2 $r failed: $(tail -n 2 "$dir/$2-$r.log")"
          rc=1
          return
        fi
      done
    }
    for rp in "${read_prefixes[@]}"; do read_state "${rp%%=*}" "${rp#*=}" "$reads"; done
    if [ "$s" != d ] && [ "$down_reads" -gt 0 ]; then
      # n-8 (fast in every setting) lost: what the other TaskManagers of a whole-job restart read
      kill -KILL "${node_pids[7]}" 2>/dev/null || true
      wait_until 10 "" pid_gone "${node_pids[7]}" || log "WARNING: n-8 (pid ${node_pids[7]}) still alive after KILL"
      read_state "$prefix" down-read "$down_reads" 7
      start_node "$out/$s" 7
    fi
    python3 - "$dir" <<'EOF' || rc=1
import json, pathlib, statistics, sys
d = pathlib.Path(sys.argv[1])
w = json.loads((d / "write.json").read_text())
reads = [json.loads(p.read_text())["seconds"] for p in sorted(d.glob("read-*.json")) if p.stat().st_size]
a = w["client"].get("adaptive") or {}
a = a if a.get("lastDecision") else {}
print(f"  {d.name:18} write {w['writeSeconds']:6.1f} s   restore median {statistics.median(reads) if reads else float('nan'):6.2f} s of {len(reads)}"
      + (f"   chosen: {a['lastDecision']['reason']} {a['dataFragments']}+{a['parityFragments']} cells {a['cellSize'] >> 10} KiB zstd {a['zstdLevel']}" if a else ""))
EOF
    # shellcheck disable=SC2046
    on tm-w "$bin" rm $(cluster_args) --recursive "$prefix" >"$dir/rm.log" 2>&1 || log "setting $s, $c: deleting $prefix failed (see $dir/rm.log)"
  done
  stop_nodes
  ci/lib/netns.sh down "$netrun"
done

step "report"
python="$(ci/lib/plot-venv.sh)"
"$python" ci/lib/adaptive_report.py "$out" || rc=1
exit "$rc"
