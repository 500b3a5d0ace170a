#!/usr/bin/env bash
# Apache HDFS (NameNode + DataNodes, each its own JVM) from the Maven Central jars of
# ci/lib/fetch-hadoop.sh, one daemon per call, so a caller can start every daemon on its own
# (emulated) host: each JVM is run behind the words of $LAUNCH when set (e.g.
# LAUNCH="ip netns exec ns-dn1"), directly otherwise, and binds to the address it is given (RPC,
# data transfer and HTTP; never 0.0.0.0), so several DataNodes can also share 127.0.0.1.
#
#   hdfs.sh namenode RUN_DIR ADDR          write the configuration, format (first start only),
#                                          start the NameNode, wait for RPC + HTTP; prints hdfs://ADDR:PORT
#   hdfs.sh datanode RUN_DIR NAME ADDR     start DataNode NAME (own data dir and ports; the same
#                                          ports again when NAME is restarted); prints its ADDR:PORT
#   hdfs.sh wait-datanodes RUN_DIR N [SECONDS]   until N DataNodes are live and safe mode is off
#   hdfs.sh ec RUN_DIR PATH POLICY         enable erasure-coding POLICY (e.g. RS-3-2-1024k), mkdir
#                                          PATH, set POLICY on it, check with -getPolicy
#   hdfs.sh flink-env RUN_DIR              `export HADOOP_CLASSPATH=...` / `export HADOOP_CONF_DIR=...`
#                                          lines for a Flink process that reads and writes hdfs://
#   hdfs.sh bytes RUN_DIR                  "NAME BYTES_READ BYTES_WRITTEN" per DataNode (since its
#                                          start, from its /jmx DataNodeActivity bean; "-" if unreachable)
#   hdfs.sh uri RUN_DIR                    hdfs://ADDR:PORT of the NameNode
#   hdfs.sh pid RUN_DIR namenode|NAME      pid of a running daemon
#   hdfs.sh stop RUN_DIR                   every daemon of this run: TERM, then KILL; waits until gone
#   hdfs.sh shell RUN_DIR ARG...           Hadoop's FsShell (`hdfs dfs`) against this cluster
#   hdfs.sh admin RUN_DIR ARG...           Hadoop's DFSAdmin (`hdfs dfsadmin`), e.g. -report
#   hdfs.sh fsck RUN_DIR ARG...            Hadoop's DFSck (`hdfs fsck`), e.g. PATH -files -blocks -locations
#
# Commands that talk to the cluster (wait-datanodes, ec, bytes, shell, admin, and the port
# checks of the starts) also run behind $LAUNCH: run them with a LAUNCH that reaches the
# NameNode's and DataNodes' addresses.
#
# RUN_DIR/hdfs keeps conf/ (core-site.xml, hdfs-site.xml: the cluster's and its clients'
# configuration, HADOOP_CONF_DIR), nn/ (name dir), dn/NAME/ (conf/ and data/ of each DataNode),
# logs/, pids/ and the chosen ports (namenode.addr, datanodes/NAME).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  die "usage: hdfs.sh namenode RUN_DIR ADDR | datanode RUN_DIR NAME ADDR | wait-datanodes RUN_DIR N [SECONDS] | ec RUN_DIR PATH POLICY | flink-env RUN_DIR | bytes RUN_DIR | uri RUN_DIR | pid RUN_DIR namenode|NAME | stop RUN_DIR | shell RUN_DIR ARG... | admin RUN_DIR ARG... | fsck RUN_DIR ARG..."
}
cmd="${1:-}"
run="${2:-}"
[ -n "$cmd" ] && [ -n "$run" ] || usage
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
read -r -a launch <<<"${LAUNCH:-}"

# hd: this run's HDFS folder (absolute); created by the starts, required by the rest.
hd_dir() {
  if [ "${1:-}" = create ]; then mkdir -p "$run/hdfs"; fi
  [ -d "$run/hdfs" ] || die "no HDFS in $run (start one with: hdfs.sh namenode $run ADDR)"
  hd="$(cd "$run/hdfs" && pwd)"
}

# hadoop_libs: the folder of the Hadoop jars (fetched on first use); exits when they cannot be had
hadoop_libs() {
  local d
  d="$("$here/fetch-hadoop.sh")" || exit 1 # (fetch-hadoop.sh named what failed)
  echo "$d/libs"
}

# valid_addr ADDR: an IPv4 address, the form every bind and check below expects.
valid_addr() {
  [[ "$1" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "address '$1' is not an IPv4 address (give the address to bind to, e.g. 127.0.0.1 or 10.99.0.2)"
}
valid_name() {
  [[ "$1" =~ ^[A-Za-z0-9_.-]+$ ]] && [ "$1" != namenode ] || die "DataNode name '$1' must be [A-Za-z0-9_.-]+ and not 'namenode'"
}

# free_ports_on ADDR N: N distinct TCP ports nothing listens on at ADDR, where LAUNCH runs.
free_ports_on() {
  "${launch[@]}" python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(); s.bind((sys.argv[1], 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$1" "$2" 2>/dev/null || die "cannot bind to $1${LAUNCH:+ (behind LAUNCH=$LAUNCH)}: is the address configured there?"
}

# open_at ADDR PORT: true when something accepts connections on ADDR:PORT, where LAUNCH runs.
open_at() {
  "${launch[@]}" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
}

# wait_open ADDR PORT SECONDS WHAT PID: die unless ADDR:PORT opens in time (or when PID dies).
wait_open() {
  local rc=0
  wait_until "$3" "$5" open_at "$1" "$2" || rc=$?
  case $rc in
    0) return 0 ;;
    2) die "$4 (pid $5) exited before it opened $1:$2" ;;
    *) die "$4 did not open $1:$2 within ${3}s" ;;
  esac
}

# prop NAME VALUE: one <property> of a Hadoop configuration file.
prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }
xml_head() { printf '<?xml version="1.0"?>\n<!-- generated by ci/lib/hdfs.sh -->\n<configuration>\n'; }

# the cluster's settings, shared by the NameNode, every DataNode and every client (Flink too)
cluster_site() {
  local addr=$1 rpc=$2 http=$3
  prop dfs.namenode.rpc-address "$addr:$rpc"
  prop dfs.namenode.http-address "$addr:$http"
  prop dfs.namenode.name.dir "file://$hd/nn/name"
  prop dfs.replication 3
  prop dfs.namenode.safemode.extension 0
  prop dfs.permissions.enabled false
  # DataNodes register by address; no reverse DNS for 127.0.0.1 / namespace addresses
  prop dfs.namenode.datanode.registration.ip-hostname-check false
  # dead-node detection: heartbeat 1 s; stale after 3 s (reads and writes avoid stale nodes);
  # dead after 2 * recheck + 10 * heartbeat = 14 s (default 10.5 min)
  prop dfs.heartbeat.interval 1
  prop dfs.namenode.heartbeat.recheck-interval 2000
  prop dfs.namenode.stale.datanode.interval 3000
  prop dfs.namenode.avoid.read.stale.datanode true
  prop dfs.namenode.avoid.write.stale.datanode true
  # clients: give up on an unresponsive DataNode after 10 s (default 60 s) and on the NameNode's
  # connect after 5 s (default 20 s); a killed process refuses at once anyway
  prop dfs.client.socket-timeout 10000
  prop ipc.client.connect.timeout 5000
  # a 5-node cluster needs every node for RS-3-2 block groups: do not skip "busy" nodes
  prop dfs.namenode.redundancy.considerLoad false
  # no background block scanner: its disk reads would disturb the measured ones
  prop dfs.block.scanner.volume.bytes.per.second 0
}

log4j_files() {
  cat >"$hd/log4j-daemon.properties" <<'L4J'
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
# one line per block operation / namespace change otherwise
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.BlockStateChange=WARN
L4J
  cat >"$hd/log4j-client.properties" <<'L4J'
log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
# "Unable to load native-hadoop library": expected, the pure-Java coders are used
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
# "ISA-L support is not available": expected, the pure-Java Reed-Solomon coder is used
log4j.logger.org.apache.hadoop.io.erasurecode.ErasureCodeNative=ERROR
L4J
}

# java_cmd CONF_DIR MARKER CLASS ARG...: the argv of a Hadoop JVM (daemon or client), in
# the array jcmd. MARKER (a -D argument) identifies a daemon's process for pid_matches.
java_cmd() {
  local conf=$1 marker=$2 cls=$3 libs heap=512m l4j=daemon
  shift 3
  libs="$(hadoop_libs)" || exit 1
  case "$marker" in -Dfragstate.hdfs.client*) heap=256m; l4j=client ;; esac
  jcmd=("${launch[@]}" java -Xms64m "-Xmx$heap" -XX:+UseG1GC -Djava.net.preferIPv4Stack=true
    "-Dlog4j.configuration=file:$hd/log4j-$l4j.properties" "$marker"
    -cp "$conf:$libs/*" "$cls" "$@")
}

# hadoop_client CLASS ARG...: a Hadoop command-line tool against this cluster (behind LAUNCH).
hadoop_client() {
  local cls=$1
  shift
  java_cmd "$hd/conf" -Dfragstate.hdfs.client "$cls" "$@"
  "${jcmd[@]}"
}

daemon_marker() { printf -- '-Dfragstate.hdfs.daemon=%s/%s' "$hd" "$1"; }

# the pid file of daemon NAME holds a live process that is that daemon
daemon_pid() {
  local f="$hd/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  # the marker is followed by a space (an argument of its own): dn-1 does not match dn-10
  pid_matches "$pid" "$(daemon_marker "$1") " || return 1
  echo "$pid"
}

# spawn NAME CONF_DIR CLASS: start a daemon JVM in the background, record its pid.
spawn() {
  local name=$1 conf=$2 cls=$3 pid
  if pid="$(daemon_pid "$name")"; then
    die "HDFS $name of $run is already running (pid $pid)"
  fi
  mkdir -p "$hd/logs" "$hd/pids"
  java_cmd "$conf" "$(daemon_marker "$name")" "$cls"
  {
    echo "=== $(date -u '+%F %T') starting: ${jcmd[*]}"
  } >>"$hd/logs/$name.log"
  nohup "${jcmd[@]}" >>"$hd/logs/$name.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$hd/pids/$name.pid"
  spawned=$pid
}

# stop_daemon NAME: TERM, then KILL, when its pid file holds it.
stop_daemon() {
  local pid
  if pid="$(daemon_pid "$1")"; then stop_pid "$pid" "HDFS $1" 20; fi
  rm -f "$hd/pids/$1.pid"
}

namenode() {
  local addr=${1:-} rpc http pid ports
  [ -n "$addr" ] || usage
  valid_addr "$addr"
  hd_dir create
  mkdir -p "$hd/conf" "$hd/nn" "$hd/datanodes" "$hd/logs"
  if pid="$(daemon_pid namenode)"; then die "the HDFS NameNode of $run is already running (pid $pid)"; fi
  # the same ports again when this NameNode is restarted (the DataNodes' configuration names them)
  if [ -f "$hd/namenode.addr" ] && [ "$(awk '{print $1}' "$hd/namenode.addr")" = "$addr" ]; then
    read -r _ rpc http <"$hd/namenode.addr"
  else
    [ ! -f "$hd/nn/name/current/VERSION" ] || die "$hd already holds a NameNode for another address ($(cat "$hd/namenode.addr" 2>/dev/null)); use a new RUN_DIR"
    ports="$(free_ports_on "$addr" 2)" || exit 1 # (free_ports_on said why)
    read -r rpc http <<<"$ports"
  fi
  open_at "$addr" "$rpc" && die "$addr:$rpc (the NameNode's RPC port) is already in use"
  echo "$addr $rpc $http" >"$hd/namenode.addr"
  log4j_files
  {
    xml_head
    prop fs.defaultFS "hdfs://$addr:$rpc"
    prop hadoop.tmp.dir "$hd/tmp"
    echo '</configuration>'
  } >"$hd/conf/core-site.xml"
  { xml_head; cluster_site "$addr" "$rpc" "$http"; echo '</configuration>'; } >"$hd/conf/hdfs-site.xml"
  # /jmx serves metrics (e.g. a DataNode's BytesRead) from a cache refreshed once per period
  # (default 10 s): 100 ms, so `hdfs.sh bytes` right after a restore sees its reads
  printf '# generated by ci/lib/hdfs.sh\n*.periodMillis=100\n' >"$hd/conf/hadoop-metrics2.properties"

  if [ ! -f "$hd/nn/name/current/VERSION" ]; then
    java_cmd "$hd/conf" -Dfragstate.hdfs.client org.apache.hadoop.hdfs.server.namenode.NameNode \
      -format -nonInteractive -force
    "${jcmd[@]}" >>"$hd/logs/format.log" 2>&1 || die "formatting the NameNode in $hd/nn failed (see $hd/logs/format.log)"
  fi
  spawn namenode "$hd/conf" org.apache.hadoop.hdfs.server.namenode.NameNode
  pid=$spawned
  trap 'stop_daemon namenode' EXIT # a NameNode that does not come up is not left behind
  wait_open "$addr" "$rpc" 90 "HDFS NameNode (log: $hd/logs/namenode.log)" "$pid"
  wait_open "$addr" "$http" 30 "HDFS NameNode HTTP (log: $hd/logs/namenode.log)" "$pid"
  trap - EXIT
  log "HDFS NameNode on hdfs://$addr:$rpc, HTTP $addr:$http (pid $pid, log $hd/logs/namenode.log)"
  echo "hdfs://$addr:$rpc"
}

datanode() {
  local name=${1:-} addr=${2:-} xfer http ipc pid nn_addr nn_rpc nn_http d ports
  [ -n "$name" ] && [ -n "$addr" ] || usage
  valid_name "$name"
  valid_addr "$addr"
  hd_dir
  [ -f "$hd/namenode.addr" ] || die "no NameNode configured in $hd (run hdfs.sh namenode first)"
  read -r nn_addr nn_rpc nn_http <"$hd/namenode.addr"
  if pid="$(daemon_pid "$name")"; then die "HDFS DataNode $name of $run is already running (pid $pid)"; fi
  d="$hd/dn/$name"
  mkdir -p "$d/conf" "$d/data" "$hd/datanodes"
  if [ -f "$hd/datanodes/$name" ] && [ "$(awk '{print $1}' "$hd/datanodes/$name")" = "$addr" ]; then
    read -r _ xfer http ipc <"$hd/datanodes/$name"
  else
    ports="$(free_ports_on "$addr" 3)" || exit 1
    read -r xfer http ipc <<<"$ports"
  fi
  open_at "$addr" "$xfer" && die "$addr:$xfer (data port of DataNode $name) is already in use"
  echo "$addr $xfer $http $ipc" >"$hd/datanodes/$name"
  cp "$hd/conf/core-site.xml" "$hd/conf/hadoop-metrics2.properties" "$d/conf/"
  {
    xml_head
    cluster_site "$nn_addr" "$nn_rpc" "$nn_http"
    prop dfs.datanode.data.dir "file://$d/data"
    prop dfs.datanode.address "$addr:$xfer"
    prop dfs.datanode.http.address "$addr:$http"
    prop dfs.datanode.ipc.address "$addr:$ipc"
    # the name it registers with and clients connect to
    prop dfs.datanode.hostname "$addr"
    echo '</configuration>'
  } >"$d/conf/hdfs-site.xml"
  spawn "$name" "$d/conf" org.apache.hadoop.hdfs.server.datanode.DataNode
  pid=$spawned
  trap 'stop_daemon "$name"' EXIT
  wait_open "$addr" "$xfer" 90 "HDFS DataNode $name (log: $hd/logs/$name.log)" "$pid"
  wait_open "$addr" "$http" 30 "HDFS DataNode $name HTTP (log: $hd/logs/$name.log)" "$pid"
  trap - EXIT
  log "HDFS DataNode $name on $addr:$xfer, HTTP $addr:$http (pid $pid, log $hd/logs/$name.log)"
  echo "$addr:$xfer"
}

# nn_state: "LIVE SAFEMODE" from the NameNode's /jmx (SAFEMODE "-" when off), "? ?" when down.
nn_state() {
  local addr http
  read -r addr _ http <"$hd/namenode.addr"
  "${launch[@]}" python3 - "http://$addr:$http/jmx" <<'PY' 2>/dev/null || echo "? unreachable"
import json, sys, urllib.request
def bean(q):
    with urllib.request.urlopen(sys.argv[1] + "?qry=" + q, timeout=5) as r:
        return json.load(r)["beans"][0]
live = bean("Hadoop:service=NameNode,name=FSNamesystemState")["NumLiveDataNodes"]
safe = bean("Hadoop:service=NameNode,name=NameNodeInfo")["Safemode"]
print(live, "-" if not safe else "on")
PY
}

nn_ready() {
  read -r live safe <<<"$(nn_state)"
  [ "$live" != "?" ] && [ "$live" -ge "$want" ] && [ "$safe" = "-" ]
}

wait_datanodes() {
  want=${1:-}
  local secs=${2:-120} pid rc=0
  [[ "$want" =~ ^[0-9]+$ ]] && [[ "$secs" =~ ^[0-9]+$ ]] || usage
  hd_dir
  pid="$(daemon_pid namenode)" || die "the NameNode of $run is not running"
  live="?" safe="?"
  wait_until "$secs" "$pid" nn_ready || rc=$?
  case $rc in
    0) log "$live DataNodes live, NameNode out of safe mode" ;;
    2) die "the NameNode (pid $pid) exited while waiting for $want DataNodes (log: $hd/logs/namenode.log)" ;;
    *) die "only $live of $want DataNodes live after ${secs}s$([ "$safe" = on ] && echo ', NameNode still in safe mode')$([ "$safe" = unreachable ] && echo ' (NameNode /jmx unreachable)')" ;;
  esac
}

ec() {
  local path=${1:-} policy=${2:-} got
  [ -n "$path" ] && [ -n "$policy" ] || usage
  hd_dir
  daemon_pid namenode >/dev/null || die "the NameNode of $run is not running"
  hadoop_client org.apache.hadoop.hdfs.tools.ECAdmin -enablePolicy -policy "$policy" >&2 \
    || die "ECAdmin -enablePolicy -policy $policy failed (policies: hdfs.sh shell is FsShell; ECAdmin -listPolicies lists them)"
  hadoop_client org.apache.hadoop.fs.FsShell -mkdir -p "$path" || die "mkdir -p $path failed"
  hadoop_client org.apache.hadoop.hdfs.tools.ECAdmin -setPolicy -path "$path" -policy "$policy" >&2 \
    || die "ECAdmin -setPolicy -path $path -policy $policy failed"
  got="$(hadoop_client org.apache.hadoop.hdfs.tools.ECAdmin -getPolicy -path "$path")" \
    || die "ECAdmin -getPolicy -path $path failed"
  [ "$got" = "$policy" ] || die "erasure-coding policy of $path is '$got', expected '$policy'"
  log "erasure-coding policy $policy set on $path"
}

flink_env() {
  local libs cp="" j f
  hd_dir
  [ -f "$hd/conf/core-site.xml" ] || die "no HDFS configuration in $hd/conf (run hdfs.sh namenode first)"
  libs="$(hadoop_libs)" || exit 1
  # the client jars only: the minicluster jar (server side) is not needed by a client
  for j in hadoop-client-api-$HADOOP_VERSION hadoop-client-runtime-$HADOOP_VERSION commons-logging-*; do
    for f in "$libs"/$j.jar; do
      [ -f "$f" ] || die "missing $libs/$j.jar (rerun ci/lib/fetch-hadoop.sh)"
      cp="${cp:+$cp:}$f"
    done
  done
  printf 'export HADOOP_CLASSPATH=%q\n' "$cp"
  printf 'export HADOOP_CONF_DIR=%q\n' "$hd/conf"
}

bytes() {
  local f name addr http
  hd_dir
  local -a args=()
  for f in "$hd"/datanodes/*; do
    [ -f "$f" ] || continue
    name="${f##*/}"
    read -r addr _ http _ <"$f"
    args+=("$name" "http://$addr:$http/jmx?qry=Hadoop:service=DataNode,name=DataNodeActivity-*")
  done
  [ ${#args[@]} -gt 0 ] || die "no DataNodes in $hd"
  "${launch[@]}" python3 - "${args[@]}" <<'PY'
import json, sys, urllib.request
a = sys.argv[1:]
for name, url in zip(a[0::2], a[1::2]):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            b = json.load(r)["beans"][0]
        print(name, b["BytesRead"], b["BytesWritten"])
    except Exception:
        print(name, "-", "-")
PY
}

stop() {
  [ -d "$run/hdfs/pids" ] || return 0
  hd_dir
  local f name pid
  local -a names=() pids=()
  for f in "$hd"/pids/*.pid; do
    [ -e "$f" ] || continue
    name="${f##*/}"
    name="${name%.pid}"
    if pid="$(daemon_pid "$name")"; then
      kill -TERM "$pid" 2>/dev/null || true
      names+=("$name")
      pids+=("$pid")
    fi
    rm -f "$f"
  done
  local i
  for i in "${!pids[@]}"; do stop_pid "${pids[$i]}" "HDFS ${names[$i]}" 20; done
}

case "$cmd" in
  namenode) namenode "${3:-}" ;;
  datanode) datanode "${3:-}" "${4:-}" ;;
  wait-datanodes) wait_datanodes "${3:-}" "${4:-}" ;;
  ec) ec "${3:-}" "${4:-}" ;;
  flink-env) flink_env ;;
  bytes) bytes ;;
  uri) hd_dir; [ -f "$hd/namenode.addr" ] || die "no NameNode in $hd"; awk '{print "hdfs://" $1 ":" $2}' "$hd/namenode.addr" ;;
  pid) hd_dir; [ -n "${3:-}" ] || usage; daemon_pid "$3" || die "HDFS $3 of $run is not running" ;;
  stop) stop ;;
  shell) hd_dir; shift 2; hadoop_client org.apache.hadoop.fs.FsShell "$@" ;;
  admin) hd_dir; shift 2; hadoop_client org.apache.hadoop.hdfs.tools.DFSAdmin "$@" ;;
  fsck) hd_dir; shift 2; hadoop_client org.apache.hadoop.hdfs.tools.DFSck "$@" ;;
  *) usage ;;
esac
