#!/usr/bin/env bash
# Network figures of fragstate on loopback (issue 3): throughput of separate
# processes versus raw libp2p streams, with and without the cluster key; how
# fast a killed or frozen peer leaves the live set; time to re-protect 1 GiB
# after a holder is lost. Every node is a real `fragstate node` process on
# 127.0.0.1; everything started here is stopped on exit.
#   ci/bench-net.sh [object size, default 1GiB]   (FRAGSTATE_BIN=… to use a built binary)
set -uo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-1GiB}
# FRAGSTATE_BIN=path skips the release build (e.g. target/ci/fragstate).
if [ -n "${FRAGSTATE_BIN:-}" ]; then
  B=$FRAGSTATE_BIN
else
  cargo build --release -p fragstate-cli --bin fragstate >/dev/null
  B=$PWD/target/release/fragstate
fi
T=$(mktemp -d)
: > "$T/pids"
cleanup() { for p in $(cat "$T/pids"); do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
$B keygen "$T/key" >/dev/null

echo "==> bench net, 200 MiB object, 6 storage processes"
$B bench net --size 200MiB --raw-size 512MiB --with-insecure 2>/dev/null
echo "==> bench net, $SIZE object"
$B bench net --size "$SIZE" --raw-size "$SIZE" --with-insecure 2>/dev/null

n=0
start() { # start NAME [bootstrap] [extra args…]
  local name=$1 boot=${2:-}; shift 2 || shift $#
  FRAGSTATE_LOG=info $B node --listen /ip4/127.0.0.1/tcp/0 --memory 4GiB --key-file "$T/key" --domain "$name" \
    ${boot:+--bootstrap "$boot"} "$@" >"$T/$name.out" 2>"$T/$name.err" &
  echo $! >>"$T/pids"; echo $! >"$T/$name.pid"
  for _ in $(seq 100); do grep -q LISTEN "$T/$name.out" && break; sleep 0.05; done
}
peer() { grep PEER "$T/$1.out" | cut -d' ' -f2; }
now() { date +%s.%N; }

echo "==> failure detection (3 nodes): time until the others drop a killed / frozen peer"
start d0; A=$(grep LISTEN "$T/d0.out" | cut -d' ' -f2); start d1 "$A"; start d2 "$A"; sleep 2
for sig in KILL STOP; do
  v=$([ $sig = KILL ] && echo d1 || echo d2); P=$(peer $v); t0=$(now); kill -$sig "$(cat "$T/$v.pid")"
  while ! grep -q "peer left peer=$P" "$T/d0.err"; do sleep 0.01; done
  python3 -c "print(f'  SIG$sig: left the live set after {$(now)-$t0:.3f} s')"
done
kill -CONT "$(cat "$T/d2.pid")"; kill "$(cat "$T/d0.pid")" "$(cat "$T/d2.pid")" 2>/dev/null

echo "==> repair: 7 nodes, one holder of a $SIZE object killed (repair after 1 s, rate limit raised)"
start r0 "" --repair-after 1 --repair-rate 8GiB; A=$(grep LISTEN "$T/r0.out" | cut -d' ' -f2)
for i in 1 2 3 4 5 6; do start r$i "$A" --repair-after 1 --repair-rate 8GiB; done
head -c "$(python3 -c "import sys; s='$SIZE'; print(int(s[:-3])*2**30 if s.endswith('GiB') else int(s[:-3])*2**20)")" /dev/urandom >"$T/in.bin"
$B put --bootstrap "$A" --key-file "$T/key" --wait-nodes 7 "$T/in.bin" /big 2>/dev/null | tee "$T/put.out" | sed 's/; holders.*//'
H=$(sed 's/.*holders \[//; s/\].*//; s/, /\n/g' "$T/put.out" | sed -n 2p)
for i in 1 2 3 4 5 6; do [ "$(peer r$i)" = "$H" ] && V=r$i; done
t0=$(now); kill -9 "$(cat "$T/$V.pid")"
while ! grep -q "object repaired" "$T"/r*.err; do sleep 0.1; done
python3 -c "print(f'  kill -9 -> object repaired: {$(now)-$t0:.2f} s (includes the 1 s grace and up to one 2 s scan)')"
grep -h "object repaired" "$T"/r*.err | sed 's/\x1b\[[0-9;]*m//g; s/.*object repaired/  object repaired/'
$B get --bootstrap "$A" --key-file "$T/key" --wait-nodes 6 /big "$T/out.bin" 2>&1 | grep "^get /big" | sed 's/; ReadStats.*//'
cmp -s "$T/in.bin" "$T/out.bin" && echo "  read back identical"
