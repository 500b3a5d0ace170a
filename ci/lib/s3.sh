#!/usr/bin/env bash
# An S3 server for Flink's checkpoint storage: versitygw (ci/lib/fetch-versitygw.sh) with its
# posix backend on a directory, and the Hadoop s3a:// client settings Flink needs to use it
# (jars from ci/lib/fetch-s3a.sh). One daemon per RUN_DIR.
#
#   s3.sh start RUN_DIR ADDR      versitygw on ADDR:PORT (PORT: RUN_DIR/s3.port, kept across
#                                 restarts, else a free one), objects under RUN_DIR/data (a
#                                 top-level directory is a bucket); waits until it listens; writes
#                                 RUN_DIR/hadoop-conf/core-site.xml; prints the endpoint URL
#   s3.sh bucket RUN_DIR NAME     create bucket NAME (versitygw's own `admin create-bucket`);
#                                 nothing to do when it exists
#   s3.sh endpoint RUN_DIR        http://ADDR:PORT
#   s3.sh flink-env RUN_DIR       `export HADOOP_CLASSPATH=...` and `export HADOOP_CONF_DIR=...`
#                                 lines (eval them before starting Flink's JVMs)
#   s3.sh flink-config RUN_DIR [BUCKET]
#                                 Flink config lines (`key: value`); with BUCKET also the
#                                 checkpoint and savepoint directories s3a://BUCKET/...
#   s3.sh bytes RUN_DIR [written] bytes served by GetObject since start (Content-Length of the
#                                 answers, from versitygw's StatsD counters); `written`: bytes
#                                 received by PutObject/UploadPart
#   s3.sh stop RUN_DIR            stop (TERM, then KILL) versitygw and its StatsD sink
#   s3.sh status RUN_DIR          exit 0 when running
#
# LAUNCH: when set, its words prefix every command that runs on the S3 host (the server, its
# StatsD sink, the port probe, the bucket client), e.g. LAUNCH="ip netns exec fsn-s3".
# Credentials are fixed (test data only): access key $S3_ACCESS_KEY, secret $S3_SECRET_KEY.
# RUN_DIR keeps data/, s3.addr, s3.port, s3.pid, s3.log, s3-stats.{pid,port,txt}, hadoop-conf/.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

S3_ACCESS_KEY=fragstate
S3_SECRET_KEY=fragstate-secret-key
S3_REGION=us-east-1

usage() { die "usage: s3.sh start RUN_DIR ADDR | bucket RUN_DIR NAME | endpoint RUN_DIR | flink-env RUN_DIR | flink-config RUN_DIR [BUCKET] | bytes RUN_DIR [written] | stop RUN_DIR | status RUN_DIR"; }
cmd="${1:-}"
run="${2:-}"
[ -n "$cmd" ] && [ -n "$run" ] || usage
read -ra launch <<<"${LAUNCH:-}"

# the address clients use: ADDR, or loopback when the server listens on every address
client_addr() {
  local a
  a="$(cat "$run/s3.addr" 2>/dev/null)" || die "no S3 server was started in $run (run: s3.sh start $run ADDR)"
  case "$a" in "" | 0.0.0.0) echo 127.0.0.1 ;; *) echo "$a" ;; esac
}
endpoint() { echo "http://$(client_addr):$(cat "$run/s3.port")"; }

# listening: true when the server accepts connections (probed from the S3 host's side)
listening() {
  "${launch[@]}" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$(client_addr)" "$(cat "$run/s3.port")" 2>/dev/null
}

running() {
  [ -f "$run/s3.pid" ] && pid_matches "$(cat "$run/s3.pid")" "$run/data"
}

# core-site.xml for Hadoop's S3AFileSystem (see ci/lib/README.md for why each setting)
write_core_site() {
  mkdir -p "$run/hadoop-conf" "$run/s3a-buffer"
  cat >"$run/hadoop-conf/core-site.xml" <<XML
<?xml version="1.0"?>
<!-- written by ci/lib/s3.sh start: s3a:// on the versitygw server of $run -->
<configuration>
  <property><name>fs.s3a.endpoint</name><value>$(endpoint)</value></property>
  <property><name>fs.s3a.endpoint.region</name><value>$S3_REGION</value></property>
  <property><name>fs.s3a.path.style.access</name><value>true</value></property>
  <property><name>fs.s3a.connection.ssl.enabled</name><value>false</value></property>
  <property><name>fs.s3a.aws.credentials.provider</name><value>org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider</value></property>
  <property><name>fs.s3a.access.key</name><value>$S3_ACCESS_KEY</value></property>
  <property><name>fs.s3a.secret.key</name><value>$S3_SECRET_KEY</value></property>
  <property><name>fs.s3a.connection.maximum</name><value>500</value></property>
  <property><name>fs.s3a.threads.max</name><value>96</value></property>
  <property><name>fs.s3a.experimental.input.fadvise</name><value>sequential</value></property>
  <property><name>fs.s3a.readahead.range</name><value>1M</value></property>
  <property><name>fs.s3a.performance.flags</name><value>create,mkdir</value></property>
  <property><name>fs.s3a.buffer.dir</name><value>$run/s3a-buffer</value></property>
</configuration>
XML
}

start() {
  local addr="${1:-}" bin port stats_port pid spid
  [ -n "$addr" ] || usage
  mkdir -p "$run/data"
  run="$(cd "$run" && pwd)"
  running && die "an S3 server from $run is already running (pid $(cat "$run/s3.pid"))"
  bin="$("$here/fetch-versitygw.sh")"
  need python3 "needed for the StatsD sink that counts the bytes versitygw serves"
  echo "$addr" >"$run/s3.addr"
  if [ -s "$run/s3.port" ]; then
    port="$(cat "$run/s3.port")" # a restart keeps the endpoint that clients were given
  else
    port="$(free_port)"
    echo "$port" >"$run/s3.port"
  fi
  listening && die "port $port on $(client_addr) is already in use; cannot start versitygw there"
  stats_port="$(free_port)"
  echo "$stats_port" >"$run/s3-stats.port"
  : >"$run/s3-stats.txt"

  trap 'stop' EXIT # a server that does not come up is not left behind
  # each in its own session, so that stop can end whatever a LAUNCH wrapper forked as well
  setsid nohup "${launch[@]}" python3 "$here/s3_stats.py" "$stats_port" "$run/s3-stats.txt" \
    >>"$run/s3-stats.log" 2>&1 </dev/null &
  spid=$!
  echo "$spid" >"$run/s3-stats.pid"
  # --keep-alive: without it versitygw closes the connection after every answer
  setsid nohup "${launch[@]}" env "ROOT_ACCESS_KEY=$S3_ACCESS_KEY" "ROOT_SECRET_KEY=$S3_SECRET_KEY" \
    "$bin" --port "$addr:$port" --region "$S3_REGION" --keep-alive --quiet \
    --metrics-statsd-servers "127.0.0.1:$stats_port" \
    posix "$run/data" >>"$run/s3.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$run/s3.pid"
  local rc=0
  wait_until 30 "$pid" listening || rc=$?
  case $rc in
    0) ;;
    2) tail -n 20 "$run/s3.log" >&2; die "versitygw (pid $pid) exited before it listened on $addr:$port (log: $run/s3.log)" ;;
    *) die "versitygw did not listen on $addr:$port within 30 s (log: $run/s3.log)" ;;
  esac
  pid_gone "$spid" && die "the StatsD sink s3_stats.py exited at start (log: $run/s3-stats.log)"
  trap - EXIT
  write_core_site
  log "versitygw $VERSITYGW_VERSION serving $run/data at $(endpoint) (pid $pid, log $run/s3.log)"
  endpoint
}

bucket() {
  local name="${1:-}" bin
  [ -n "$name" ] || usage
  run="$(cd "$run" && pwd)"
  running || die "no S3 server is running in $run"
  [ -d "$run/data/$name" ] && return 0 # posix backend: a top-level directory is a bucket
  bin="$("$here/fetch-versitygw.sh")"
  "${launch[@]}" "$bin" admin --access "$S3_ACCESS_KEY" --secret "$S3_SECRET_KEY" --region "$S3_REGION" \
    --endpoint-url "$(endpoint)" create-bucket --owner "$S3_ACCESS_KEY" --bucket "$name" >&2 \
    || die "creating bucket '$name' on $(endpoint) failed"
  [ -d "$run/data/$name" ] || die "bucket '$name' was created, but $run/data/$name does not exist"
  log "bucket $name created on $(endpoint)"
}

flink_env() {
  local jars
  run="$(cd "$run" && pwd)"
  [ -f "$run/hadoop-conf/core-site.xml" ] || die "no $run/hadoop-conf/core-site.xml (run: s3.sh start $run ADDR)"
  jars="$("$here/fetch-s3a.sh")"
  # the jars one by one (a dir/* wildcard would go through Flink's scripts unexpanded or globbed)
  printf "export HADOOP_CLASSPATH='%s'\n" "$(printf '%s\n' "$jars"/*.jar | paste -sd:)"
  printf "export HADOOP_CONF_DIR='%s'\n" "$run/hadoop-conf"
}

flink_config() {
  local b="${1:-}"
  # Flink 2.x refuses s3a:// without its own S3 plugin unless Hadoop may serve the scheme
  echo "fs.allowed-fallback-filesystems: s3a"
  if [ -n "$b" ]; then
    echo "execution.checkpointing.dir: s3a://$b/checkpoints"
    echo "execution.checkpointing.savepoint-dir: s3a://$b/savepoints"
  fi
}

bytes() {
  local what="${1:-read}"
  case "$what" in read) ;; written) ;; *) usage ;; esac
  running || die "no S3 server is running in $run"
  pid_matches "$(cat "$run/s3-stats.pid")" "$run/s3-stats.txt" || die "the StatsD sink of $run is not running"
  sleep 0.3 # versitygw's StatsD client flushes every 100 ms
  awk -v k="bytes_$what" '$1 == k { n = $2 } END { print n + 0 }' "$run/s3-stats.txt"
}

# stop_group PIDFILE MARKER WHAT: TERM the session of the pid (LAUNCH wrappers and all), then
# TERM/KILL the pid itself; only when its command line shows MARKER (a stale file's pid is skipped)
stop_group() {
  local file=$1 marker=$2 what=$3 pid
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  if [ -n "$pid" ] && pid_matches "$pid" "$marker"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    stop_pid "$pid" "$what" 15
  fi
  rm -f "$file"
}

stop() {
  [ -d "$run" ] || return 0
  run="$(cd "$run" && pwd)"
  stop_group "$run/s3.pid" "$run/data" "versitygw"
  stop_group "$run/s3-stats.pid" "$run/s3-stats.txt" "StatsD sink"
  if [ -f "$run/s3.port" ] && [ -f "$run/s3.addr" ] && listening; then
    log "WARNING: $(endpoint) still answers after stopping versitygw"
  fi
}

case "$cmd" in
  start) start "${3:-}" ;;
  bucket) bucket "${3:-}" ;;
  endpoint) endpoint ;;
  flink-env) flink_env ;;
  flink-config) flink_config "${3:-}" ;;
  bytes) bytes "${3:-}" ;;
  stop) stop ;;
  status) running ;;
  *) usage ;;
esac
