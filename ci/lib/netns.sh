#!/usr/bin/env bash
# Emulated hosts for benchmarks: every host a network namespace with its own address, host name
# and shaped link, so services that run on "other machines" in production cross a real (veth)
# network with a set bandwidth and delay here. Needs root (ip, tc, unshare).
#
#   netns.sh up RUN_DIR PROFILE LAN_HOSTS [REMOTE_HOSTS]
#       LAN_HOSTS / REMOTE_HOSTS: comma-separated host names (e.g. jm,tm-1,tm-2 and nn,dn-1).
#       The host `ctl` is always added to the LAN, unshaped: the benchmark driver runs there.
#       PROFILE (links; each host's own link is shaped in both directions with tbf):
#         dc    one site: every host 1 Gbit/s; REMOTE_HOSTS are ordinary hosts of the same site
#               (storage services on links like the workers').
#         edge  LAN_HOSTS on an edge LAN (1 Gbit/s each); REMOTE_HOSTS in a "cloud" site
#               (1 Gbit/s each) reached over one shared WAN link: 100 Mbit/s each way, 20 ms
#               each way (RTT 40 ms), made by the delay line ci/lib/wan_delay.py.
#         none  as dc, no shaping at all (veth speed; for checking the harness itself).
#       FRAGSTATE_NETNS_RATES="host=rate,...": those hosts' own links at another tbf rate
#       (e.g. n-1=20mbit,n-2=20mbit: the heterogeneous clusters of ci/bench-adaptive.sh).
#       Delays: this kernel has no netem, so hops inside a site keep the veth's own delay
#       (measured RTT 0.04–0.08 ms; the issue's dc 0.2 ms and edge-LAN 1 ms are not emulated).
#       Measured (tput over TCP, one stream): LAN 958 Mbit/s; WAN 92–93 Mbit/s each way with a
#       connect RTT of 40.6–41.8 ms.
#       Addresses: LAN 10.78.1.10+, remote site 10.78.2.10+ (edge) or LAN (dc, none).
#       /etc/netns/<ns>/hosts maps every host name to its address (ip netns exec mounts it
#       over /etc/hosts), so host names resolve as on a real cluster; its resolv.conf names no
#       reachable DNS server.
#   netns.sh exec RUN_DIR HOST CMD...   CMD in HOST's namespace, with HOST as its host name
#   netns.sh rate RUN_DIR HOST RATE     the host's link shaped at RATE (e.g. 20mbit) both ways from
#                                       now on, connections kept (a link degrading mid-run)
#   netns.sh addr RUN_DIR HOST          the host's address
#   netns.sh hosts RUN_DIR              "name address site" lines
#   netns.sh down RUN_DIR               kills every process left in the namespaces, removes them
#
# One topology per machine at a time (fixed subnet 10.78.0.0/16): `up` fails naming the run that
# holds it. Namespaces are named fsn-<host>; their state is RUN_DIR/netns/.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { die "usage: netns.sh up RUN_DIR dc|edge|none LAN_HOSTS [REMOTE_HOSTS] | exec RUN_DIR HOST CMD... | rate RUN_DIR HOST RATE | addr RUN_DIR HOST | hosts RUN_DIR | down RUN_DIR"; }
cmd="${1:-}"
run="${2:-}"
[ -n "$cmd" ] && [ -n "$run" ] || usage
LOCK=/run/fragstate-netns.lock
LAN_RT=fsn-lanrt
REMOTE_RT=fsn-remrt

ns_of() { echo "fsn-$1"; }
state() { echo "$run/netns"; }
hosts_file() { echo "$(state)/hosts"; }

host_line() {
  local line
  line="$(awk -v h="$1" '$1 == h' "$(hosts_file)" 2>/dev/null)"
  [ -n "$line" ] || die "host '$1' is not part of the topology in $(state) (hosts: $(awk '{print $1}' "$(hosts_file)" 2>/dev/null | tr '\n' ' '))"
  echo "$line"
}

# reshape HOST RATE: the host's link at RATE both ways (its veth and the bridge port).
reshape() {
  local host=$1 rate=$2 ns site
  host_line "$host" >/dev/null
  [[ "$rate" =~ ^[0-9]+(k|m|g)bit$ ]] || die "rate '$rate' for host $host: expected a tc rate such as 20mbit or 1gbit"
  ns="$(ns_of "$host")"
  site="$LAN_RT"
  ip -n "$REMOTE_RT" link show "p-${host:0:12}" >/dev/null 2>&1 && site="$REMOTE_RT"
  ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
  ip netns exec "$site" tc qdisc del dev "p-${host:0:12}" root 2>/dev/null || true
  shape eth0 "$ns" "$rate"
  shape "p-${host:0:12}" "$site" "$rate"
  log "$host's link now at $rate both ways"
}

# shape DEV NS RATE: rate limit (tbf) on DEV's egress in NS. This kernel has no netem (no delay
# qdisc at all): LAN hops keep the veth's own delay (RTT ≈ 0.05 ms); the WAN's delay comes from
# the delay line between the two site routers (see up).
shape() {
  local dev=$1 ns=$2 rate=$3 burst
  # tbf needs a burst of at least one (GSO) packet; a larger one lets a fast link reach its rate
  case $rate in *gbit) burst=512kb ;; *) burst=128kb ;; esac
  ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms
}

# rate_of HOST DEFAULT: the host's rate from FRAGSTATE_NETNS_RATES, else DEFAULT.
rate_of() {
  local pair
  for pair in ${FRAGSTATE_NETNS_RATES:+${FRAGSTATE_NETNS_RATES//,/ }}; do
    [ "${pair%%=*}" = "$1" ] && { echo "${pair#*=}"; return; }
  done
  echo "$2"
}

# router NS BRIDGE ADDR: a namespace holding the site's bridge, with ADDR/24 on it, forwarding.
router() {
  local ns=$1 addr=$2
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add br0 type bridge
  ip -n "$ns" addr add "$addr/24" dev br0
  ip -n "$ns" link set br0 up
  ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
}

# attach HOST ADDR SITE_NS GATEWAY RATE: the host's namespace, its veth to the site bridge,
# its link shaped both ways (RATE "" = unshaped).
attach() {
  local host=$1 addr=$2 site=$3 gw=$4 rate=$5 ns port
  ns="$(ns_of "$host")"
  port="p-${host:0:12}"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add eth0 netns "$ns" type veth peer name "$port" netns "$site"
  ip -n "$site" link set "$port" master br0 up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$gw"
  if [ -n "$rate" ]; then
    shape eth0 "$ns" "$rate"
    shape "$port" "$site" "$rate"
  fi
  mkdir -p "/etc/netns/$ns"
}

up() {
  local profile=$1 lan=$2 remote=${3:-} i h rate host_rate
  need ip "iproute2 (apt-get install iproute2); run as root"
  need tc "iproute2 (apt-get install iproute2); run as root"
  need unshare "util-linux"
  [ "$(id -u)" = 0 ] || die "emulated hosts need root (network namespaces, tc)"
  case $profile in
    dc | edge) rate=1gbit ;;
    none) rate="" ;;
    *) die "unknown network profile '$profile': allowed are dc, edge, none" ;;
  esac
  mkdir -p "$run"
  run="$(cd "$run" && pwd)"
  if [ -f "$LOCK" ] && [ -d "$(cat "$LOCK")" ] && [ "$(cat "$LOCK")" != "$(state)" ]; then
    die "another emulated topology is up ($(cat "$LOCK")); run: ci/lib/netns.sh down $(dirname "$(cat "$LOCK")")"
  fi
  # namespaces a killed earlier run left behind (its run folder is gone, or it is this run)
  local ns
  for ns in $(ip netns list | awk '$1 ~ /^fsn-/ {print $1}'); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns"
    rm -rf "/etc/netns/$ns"
  done
  pkill -f "ci/lib/wan_delay.py" 2>/dev/null || true
  mkdir -p "$(state)"
  echo "$(state)" >"$LOCK"
  : >"$(hosts_file)"
  echo "$profile" >"$(state)/profile"
  router "$LAN_RT" 10.78.1.1
  if [ "$profile" = edge ]; then
    router "$REMOTE_RT" 10.78.2.1
    # the WAN: a TUN device in each site router carries the other site's routes; the delay line
    # (wan_delay.py) moves packets between the two, 20 ms late; tbf on each sets 100 Mbit/s
    local rt
    for rt in "$LAN_RT" "$REMOTE_RT"; do
      ip -n "$rt" tuntap add dev wan0 mode tun
      ip -n "$rt" link set wan0 up
      shape wan0 "$rt" 100mbit
    done
    ip -n "$LAN_RT" route add 10.78.2.0/24 dev wan0
    ip -n "$REMOTE_RT" route add 10.78.1.0/24 dev wan0
    python3 "$(dirname "${BASH_SOURCE[0]}")/wan_delay.py" 20 "$LAN_RT" wan0 "$REMOTE_RT" wan0 \
      >"$(state)/wan-delay.log" 2>&1 &
    echo $! >"$(state)/wan-delay.pid"
    wait_until 10 $! grep -q "delay line up" "$(state)/wan-delay.log" \
      || die "the WAN delay line did not start: $(tail -n 3 "$(state)/wan-delay.log")"
  fi
  i=10
  attach ctl 10.78.1.2 "$LAN_RT" 10.78.1.1 ""
  echo "ctl 10.78.1.2 lan" >>"$(hosts_file)"
  for h in ${lan//,/ }; do
    # (assigned first: a failing rate_of inside the argument list would go unnoticed and leave
    # the host's link unshaped, as an unset FRAGSTATE_NETNS_RATES did from 2026-12-02 to 12-07)
    host_rate="$(rate_of "$h" "$rate")"
    attach "$h" "10.78.1.$i" "$LAN_RT" 10.78.1.1 "$host_rate"
    echo "$h 10.78.1.$i lan" >>"$(hosts_file)"
    i=$((i + 1))
  done
  for h in ${remote//,/ }; do
    if [ "$profile" = edge ]; then
      attach "$h" "10.78.2.$i" "$REMOTE_RT" 10.78.2.1 "$rate"
      echo "$h 10.78.2.$i remote" >>"$(hosts_file)"
    else
      attach "$h" "10.78.1.$i" "$LAN_RT" 10.78.1.1 "$rate"
      echo "$h 10.78.1.$i remote" >>"$(hosts_file)"
    fi
    i=$((i + 1))
  done
  # every namespace resolves every host name (and its own as itself)
  while read -r h addr _; do
    { echo "127.0.0.1 localhost"; awk '{print $2, $1}' "$(hosts_file)"; } >"/etc/netns/$(ns_of "$h")/hosts"
    # no DNS server is reachable from an emulated host: a lookup of any other name must fail at
    # once (refused on loopback), not wait out the machine's resolver (a JVM then starts in 90 s)
    printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$(ns_of "$h")/resolv.conf"
  done <"$(hosts_file)"
  log "emulated hosts up ($profile${FRAGSTATE_NETNS_RATES:+; $FRAGSTATE_NETNS_RATES}): $(awk '{printf "%s=%s ", $1, $2}' "$(hosts_file)")"
}

down() {
  local ns
  [ -f "$(hosts_file)" ] || return 0
  if [ -f "$(state)/wan-delay.pid" ]; then
    pid_matches "$(cat "$(state)/wan-delay.pid")" wan_delay.py && kill "$(cat "$(state)/wan-delay.pid")"
    rm -f "$(state)/wan-delay.pid"
  fi
  for ns in $(awk '{print "fsn-" $1}' "$(hosts_file)") $LAN_RT $REMOTE_RT; do
    ip netns list | awk '{print $1}' | grep -qxF "$ns" || continue
    # processes started in a namespace that nobody stopped would keep it alive
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
    rm -rf "/etc/netns/$ns"
  done
  [ "$(cat "$LOCK" 2>/dev/null)" = "$(state)" ] && rm -f "$LOCK"
  rm -f "$(hosts_file)"
  log "emulated hosts removed"
}

case $cmd in
  up) [ $# -ge 4 ] || usage; up "$3" "$4" "${5:-}" ;;
  exec)
    [ $# -ge 4 ] || usage
    host="$3"
    shift 3
    host_line "$host" >/dev/null
    # its own UTS namespace gives the process its host name (Flink and fragstate read it)
    exec ip netns exec "$(ns_of "$host")" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
    ;;
  rate) [ $# -ge 4 ] || usage; reshape "$3" "$4" ;;
  addr) [ $# -ge 3 ] || usage; host_line "$3" | awk '{print $2}' ;;
  hosts) cat "$(hosts_file)" ;;
  down) down ;;
  *) usage ;;
esac
