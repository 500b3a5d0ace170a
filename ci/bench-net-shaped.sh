#!/usr/bin/env bash
# Parallel read from k peers versus one peer when every storage node's link is
# the bottleneck: each `fragstate node` runs in its own network namespace
# behind a veth pair whose egress is shaped with `tc tbf` (default 200 Mbit/s);
# the client's link is not shaped. Namespaces, addresses (10.77.0.0/24) and
# processes are created here and removed on exit. Needs root (ip, tc).
#   ci/bench-net-shaped.sh [rate, default 200mbit] [object size MiB, default 100]
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/common.sh
source ci/lib/common.sh
need ip "iproute2 (apt-get install iproute2); run as root"
need tc "iproute2 (apt-get install iproute2); run as root"
RATE=${1:-200mbit}
MIB=${2:-100}
NODES=6
if [ -n "${FRAGSTATE_BIN:-}" ]; then B=$FRAGSTATE_BIN; else cargo build --release -p fragstate-cli --bin fragstate >/dev/null; B=$PWD/target/release/fragstate; fi
T=$(mktemp -d)
P=fsb$$
: > "$T/pids"
cleanup() {
  for p in $(cat "$T/pids"); do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  for i in $(seq 0 $NODES) hub; do ip netns del "$P-$i" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$P-hub"
ip -n "$P-hub" link add br0 type bridge
ip -n "$P-hub" link set br0 up
# Namespace 0 is the client (unshaped); 1..NODES are storage nodes.
for i in $(seq 0 $NODES); do
  ns=$P-$i
  ip netns add "$ns"
  ip link add "v$P$i" netns "$ns" type veth peer name "h$i" netns "$P-hub"
  ip -n "$P-hub" link set "h$i" master br0 up
  ip -n "$ns" addr add "10.77.0.$((i + 10))/24" dev "v$P$i"
  ip -n "$ns" link set "v$P$i" up
  ip -n "$ns" link set lo up
  if [ "$i" -gt 0 ]; then
    ip netns exec "$ns" tc qdisc add dev "v$P$i" root tbf rate "$RATE" burst 256kb latency 50ms
  fi
done
$B keygen "$T/key" >/dev/null
BOOT=/ip4/10.77.0.11/tcp/7710
head -c $((MIB << 20)) /dev/urandom >"$T/in.bin"
echo "bench: $NODES storage nodes, each link shaped to $RATE egress; client unshaped; $MIB MiB object"
for mode in key open; do
  if [ $mode = key ]; then SEC=(--key-file "$T/key"); else SEC=(--insecure-no-cluster-key); fi
  : > "$T/node-pids"
  for i in $(seq 1 $NODES); do
    : > "$T/n$i.out"
    ip netns exec "$P-$i" "$B" node --listen "/ip4/10.77.0.$((i + 10))/tcp/7710" --memory 4GiB "${SEC[@]}" \
      --domain "n$i" --repair-rate 0 $([ "$i" -gt 1 ] && echo --bootstrap $BOOT) >"$T/n$i.out" 2>"$T/n$i.err" &
    echo $! >>"$T/pids"; echo $! >>"$T/node-pids"
    wait_until 5 $! grep -q LISTEN "$T/n$i.out" || die "node n$i printed no LISTEN line within 5 s: $(tail -n 3 "$T/n$i.err")"
  done
  run() { ip netns exec "$P-0" "$B" "$@" --bootstrap $BOOT "${SEC[@]}" --wait-nodes $NODES; }
  echo "[$mode: $([ $mode = key ] && echo 'noise keyed by the cluster key + yamux' || echo 'noise + yamux, no cluster key')]"
  for km in "4 2" "1 1"; do
    set -- $km
    run put --overwrite --k "$1" --m "$2" "$T/in.bin" "/obj-k$1" 2>/dev/null | sed 's/; replaced.*//; s/^/  /'
    run get "/obj-k$1" "$T/out.bin" 2>&1 | grep '^get ' | sed "s/; ReadStats.*//; s/^/  (k=$1) /"
    cmp -s "$T/in.bin" "$T/out.bin" || echo "  READ BACK DIFFERS"
  done
  for p in $(cat "$T/node-pids"); do kill "$p"; done
  wait $(cat "$T/node-pids") 2>/dev/null
done
