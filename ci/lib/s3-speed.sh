#!/usr/bin/env bash
# Throughput of the S3 server started by ci/lib/s3.sh: PUT, then GET, of N objects of SIZE_MB
# each with STREAMS parallel clients, one object per request; prints MB/s (MB = 10^6 bytes) and
# the CPU seconds of the server and of the clients.
#
#   s3-speed.sh RUN_DIR [N [SIZE_MB [STREAMS [CLIENT]]]]   defaults: 8 64 4 curl
#
# CLIENT curl: one `curl --aws-sigv4` process per object (the machine's curl, >= 7.75; payload
#   not hashed: x-amz-content-sha256 UNSIGNED-PAYLOAD), GET bodies to /dev/null: the server's speed.
# CLIENT s3a: Hadoop's FsShell through S3AFileSystem with the jars and core-site.xml Flink uses
#   (s3.sh flink-env): PUT = one JVM `-put -d -t STREAMS`, GET = one JVM `-get -t STREAMS` into
#   tmpfs. The times include the JVM's start; "net" leaves out the time of one FsShell -ls (JVM
#   start + S3A init), measured just before: take volumes that last well beyond it.
# Objects go to bucket `speed` (created), under speed-<pid>/, and are deleted at the end.
# LAUNCH (as for s3.sh): the words that run the clients on the host they should run on.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

run="${1:-}"
n="${2:-8}"
size_mb="${3:-64}"
streams="${4:-4}"
client="${5:-curl}"
[ -n "$run" ] || die "usage: s3-speed.sh RUN_DIR [N [SIZE_MB [STREAMS [curl|s3a]]]]"
run="$(cd "$run" && pwd)"
read -ra launch <<<"${LAUNCH:-}"
"$here/s3.sh" status "$run" || die "no S3 server is running in $run (run: s3.sh start $run ADDR)"
endpoint="$("$here/s3.sh" endpoint "$run")"
"$here/s3.sh" bucket "$run" speed
prefix="speed-$$"
work="$(mktemp -d "$run/speed.XXXXXX")"
trap 'rm -rf "$work" "$run/data/speed/$prefix"' EXIT
head -c "$((size_mb * 1048576))" /dev/urandom >"$work/object"
bytes=$((n * size_mb * 1048576))
server_pid="$(cat "$run/s3.pid")"

# cpu_ticks PID: user+system clock ticks of PID so far
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# children_secs: user+system seconds of this shell's finished children (bash `times`, 2nd line;
# run in this shell: a $(...) subshell would report its own, empty, children)
children_secs() {
  times >"$work/times"
  tail -n 1 "$work/times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}

case "$client" in
  curl)
    need curl "needed as the S3 client (curl >= 7.75 signs requests with --aws-sigv4)"
    s3curl=("${launch[@]}" curl -sS --fail -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3"
      --user "$(sed -n 's:.*<name>fs.s3a.access.key</name><value>\(.*\)</value>.*:\1:p' "$run/hadoop-conf/core-site.xml"):$(sed -n 's:.*<name>fs.s3a.secret.key</name><value>\(.*\)</value>.*:\1:p' "$run/hadoop-conf/core-site.xml")"
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
    put_all() { seq 1 "$n" | xargs -P "$streams" -I{} "${s3curl[@]}" -T "$work/object" "$endpoint/speed/$prefix/o{}"; }
    get_all() { seq 1 "$n" | xargs -P "$streams" -I{} "${s3curl[@]}" "$endpoint/speed/$prefix/o{}"; }
    ;;
  s3a)
    need java "needed to run Hadoop's FsShell"
    eval "$("$here/s3.sh" flink-env "$run")"
    flink_home="$("$here/fetch-flink.sh")"
    # flink-dist carries the slf4j API and log4j binding that the s3a jars leave out
    fsshell=("${launch[@]}" java -Xmx512m -Dlog4j2.level=ERROR
      -cp "$HADOOP_CONF_DIR:$HADOOP_CLASSPATH:$flink_home/lib/*" org.apache.hadoop.fs.FsShell
      -D io.file.buffer.size=1048576)
    for ((i = 1; i <= n; i++)); do ln -s object "$work/o$i"; done
    # one JVM each way, STREAMS threads (-t): -put without _COPYING_ file and rename (-d); -get
    # into a folder on tmpfs (/dev/shm when there is one), removed after
    put_all() { "${fsshell[@]}" -put -d -f -t "$streams" $(seq -f "$work/o%g" 1 "$n") "s3a://speed/$prefix/"; }
    sink="$work/get"
    [ -d /dev/shm ] && sink="$(mktemp -d /dev/shm/s3-speed.XXXXXX)"
    trap 'rm -rf "$work" "$run/data/speed/$prefix" "$sink"' EXIT
    get_all() { mkdir -p "$sink" && "${fsshell[@]}" -get -f -t "$streams" $(seq -f "s3a://speed/$prefix/o%g" 1 "$n") "$sink/"; }
    "${fsshell[@]}" -mkdir -p "s3a://speed/$prefix" || die "FsShell -mkdir through s3a failed"
    t0="$(date +%s.%N)"
    "${fsshell[@]}" -ls "s3a://speed/$prefix" >/dev/null || die "FsShell -ls through s3a failed"
    jvm_secs="$(awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.2f", t1 - t0 }')"
    log "one FsShell JVM start + S3A init + -ls: $jvm_secs s (in the times below; 'net' leaves it out)"
    ;;
  *) die "unknown client '$client' (curl or s3a)" ;;
esac

hz="$(getconf CLK_TCK)"
jvm_secs="${jvm_secs:-0}"
measure() {
  local what=$1 t0 t1 s0 s1 c0 c1
  children_secs >"$work/c0"
  c0="$(cat "$work/c0")"
  s0="$(cpu_ticks "$server_pid")"
  t0="$(date +%s.%N)"
  "${what}_all" || die "$what of $n objects through $client failed"
  t1="$(date +%s.%N)"
  s1="$(cpu_ticks "$server_pid")"
  children_secs >"$work/c1"
  c1="$(cat "$work/c1")"
  awk -v w="$what" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v s="$((s1 - s0))" -v hz="$hz" -v c0="$c0" -v c1="$c1" \
    -v n="$n" -v mb="$size_mb" -v p="$streams" -v cl="$client" -v j="$jvm_secs" 'BEGIN {
      d = t1 - t0
      net = ""
      if (j > 0 && d > j) net = sprintf(" (net of %.2f s JVM start: %.0f MB/s)", j, b / (d - j) / 1e6)
      printf "%-3s %d x %d MiB, %d streams, %s: %.2f s, %.0f MB/s%s; CPU s: server %.2f, clients %.2f\n",
        toupper(w), n, mb, p, cl, d, b / d / 1e6, net, s / hz, c1 - c0 }'
}
log "S3 speed: $n objects of $size_mb MiB, $streams streams, client $client, server $endpoint; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
measure put
sync
measure get
