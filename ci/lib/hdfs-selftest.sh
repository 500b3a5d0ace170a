#!/usr/bin/env bash
# Self-test of ci/lib/hdfs.sh on loopback: NameNode + 5 DataNodes (separate JVMs on 127.0.0.1),
# a file of MB MiB written with 3x replication (/rep) and into an RS-3-2-1024k directory (/ec),
# both read back and compared (cmp); then kill -9 of a DataNode holding a replica of the first
# block of /rep and a data cell of /ec, and both read again. Prints MiB/s of every transfer
# (through Hadoop's FsShell -put/-get; "net" subtracts the JVM start of an empty FsShell call)
# and each DataNode's bytes read/written. Stops everything it started, also on failure.
#
#   hdfs-selftest.sh [MB]     (default 300; run dir: a new /tmp/hdfs-selftest.XXXXXX, its logs kept)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hdfs="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hdfs.sh"

mb="${1:-300}"
[[ "$mb" =~ ^[0-9]+$ ]] || die "usage: hdfs-selftest.sh [MB]"
unset LAUNCH
run="$(mktemp -d /tmp/hdfs-selftest.XXXXXX)"
# the daemons stop and the big files go, also on failure; logs stay in $run
trap '"$hdfs" stop "$run"; rm -f "$run"/data.bin "$run"/back-*.bin' EXIT

now() { date +%s.%N; }
# elapsed T0 T1: seconds from T0 to T1 (two nows)
elapsed() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }
# rate LABEL SECONDS: one result line (gross and net of the JVM start)
rate() {
  python3 -c 'import sys
mb, s, jvm = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
net = "%7.1f MiB/s" % (mb / (s - jvm)) if s > jvm + 0.05 else "n/a (too small to tell)"
print("%-34s %6.2f s  %7.1f MiB/s  (net of JVM start %.1f s: %s)" % (sys.argv[1], s, mb / s, jvm, net))' \
    "$1" "$mb" "$2" "$jvm" | tee -a "$run/results.txt"
}
# timed LABEL ARG...: hdfs.sh shell ARG..., its rate
timed() {
  local label=$1 t0 t1
  shift
  t0="$(now)"
  # the client's WARNs (with stack traces when a DataNode is dead) go to client.log
  "$hdfs" shell "$run" "$@" 2>>"$run/client.log" || die "$label: FsShell $* failed (see $run/client.log)"
  t1="$(now)"
  rate "$label" "$(elapsed "$t0" "$t1")"
  grep -q ' WARN ' "$run/client.log" 2>/dev/null \
    && echo "   client warnings: $(grep ' WARN ' "$run/client.log" | sed -E 's/^[^ ]+ [^ ]+ WARN ([^:]+):.*/\1/' | sort | uniq -c | tr -s ' \n' ' ')(see $run/client.log)"
  mv "$run/client.log" "$run/client-$(date +%s%N).log" 2>/dev/null || true
}
# locations PATH: the DataNode addresses of the first block (group) of PATH, in fsck's order
# (for an erasure-coded file: internal block 0, 1, ... i.e. data cells first)
locations() {
  "$hdfs" fsck "$run" "$1" -files -blocks -locations 2>/dev/null \
    | grep -m1 '^0\. ' | grep -o 'DatanodeInfoWithStorage\[[0-9.]*:[0-9]*' | sed 's/.*\[//'
}
name_of() { grep -l "^${1%:*} ${1#*:} " "$run"/hdfs/datanodes/* | xargs -n1 basename; }

step "HDFS on loopback: NameNode + 5 DataNodes ($run)"
uri="$("$hdfs" namenode "$run" 127.0.0.1)"
for i in 1 2 3 4 5; do "$hdfs" datanode "$run" "dn-$i" 127.0.0.1 >/dev/null; done
"$hdfs" wait-datanodes "$run" 5 60
"$hdfs" ec "$run" /ec RS-3-2-1024k
"$hdfs" shell "$run" -mkdir -p /rep

step "$mb MiB of random data"
head -c "${mb}M" /dev/urandom >"$run/data.bin"
t0="$(now)"
"$hdfs" shell "$run" -test -d / || die "FsShell -test -d / failed"
t1="$(now)"
jvm="$(elapsed "$t0" "$t1")"
log "an empty FsShell call (JVM start + NameNode round trip) takes ${jvm}s"

step "write"
timed "write 3x replicated ($uri/rep)" -put "$run/data.bin" /rep/data.bin
timed "write RS-3-2-1024k (/ec)" -put "$run/data.bin" /ec/data.bin
"$hdfs" shell "$run" -stat 'replication of /rep/data.bin: %r, size %b' /rep/data.bin
"$hdfs" fsck "$run" /ec/data.bin -files 2>/dev/null | grep -o '^/ec/data.bin .*policy=[^,]*' || die "/ec/data.bin is not erasure-coded"
"$hdfs" bytes "$run" | sed 's/^/bytes (name read written): /'

step "read back"
for f in rep ec; do
  rm -f "$run/back-$f.bin"
  timed "read $f" -get "/$f/data.bin" "$run/back-$f.bin"
  cmp "$run/data.bin" "$run/back-$f.bin" || die "/$f/data.bin read back differs from what was written"
  echo "cmp /$f/data.bin: identical"
done

step "kill -9 a DataNode"
mapfile -t rep_locs < <(locations /rep/data.bin)
mapfile -t ec_locs < <(locations /ec/data.bin)
[ ${#rep_locs[@]} -eq 3 ] && [ ${#ec_locs[@]} -eq 5 ] \
  || die "unexpected block locations: /rep ${rep_locs[*]:-none}, /ec ${ec_locs[*]:-none}"
victim=""
for a in "${ec_locs[@]:0:3}"; do # a data cell of /ec ...
  for b in "${rep_locs[@]}"; do [ "$a" = "$b" ] && victim="$a" && break 2; done # ... and a replica of /rep
done
[ -n "$victim" ] || die "no DataNode holds both a data cell of /ec and a replica of /rep (impossible with 5 nodes)"
vname="$(name_of "$victim")"
echo "first block of /rep on ${rep_locs[*]}; /ec block group on ${ec_locs[*]} (data cells first)"
echo "killing $vname ($victim): a replica of /rep and data cell $(($(printf '%s\n' "${ec_locs[@]}" | grep -nx "$victim" | cut -d: -f1) - 1)) of /ec"
kill -9 "$("$hdfs" pid "$run" "$vname")"
"$hdfs" bytes "$run" | sed 's/^/bytes before the reads (name read written): /'
for f in rep ec; do
  rm -f "$run/back-$f.bin"
  timed "read $f with $vname dead" -get "/$f/data.bin" "$run/back-$f.bin"
  cmp "$run/data.bin" "$run/back-$f.bin" || die "/$f/data.bin read with $vname dead differs from what was written"
  echo "cmp /$f/data.bin with $vname dead: identical"
done
"$hdfs" bytes "$run" | sed 's/^/bytes after (name read written): /'

step "summary ($run/results.txt)"
cat "$run/results.txt"
echo "HDFS self-test passed (logs: $run)"
