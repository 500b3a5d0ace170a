#!/usr/bin/env bash
# Fetch (once) and cache the jars of an Apache Hadoop HDFS (NameNode, DataNodes, clients) from
# Maven Central, print the folder that holds them (its libs/ is the classpath; ci/lib/hdfs.sh).
#
# A tiny generated pom depends on the three shaded Hadoop artifacts:
#   hadoop-client-minicluster  NameNode, DataNode and the admin tools (DFSAdmin, ECAdmin)
#   hadoop-client-api          the client classes (FileSystem, FsShell, DistributedFileSystem)
#   hadoop-client-runtime      their shaded third-party dependencies
# plus reload4j and slf4j-reload4j (the logging binding of Hadoop's own distribution, same
# versions) so the daemons write logs; junit, which the minicluster jar declares for its test
# harness, is left out. `mvn dependency:copy-dependencies` puts every runtime jar in libs/.
# Cache: $FRAGSTATE_CACHE/hadoop-$HADOOP_VERSION (default .cache/ in the repo).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

dest="$FRAGSTATE_CACHE/hadoop-$HADOOP_VERSION"
have_jars() {
  local a
  for a in minicluster api runtime; do
    [ -f "$1/hadoop-client-$a-$HADOOP_VERSION.jar" ] || return 1
  done
}
if [ -f "$dest/.complete" ] && have_jars "$dest/libs"; then
  echo "$dest"
  exit 0
fi
need mvn "needed to resolve the Hadoop jars from Maven Central"
need java "needed to run the HDFS daemons"

mkdir -p "$FRAGSTATE_CACHE" || die "cannot create the cache directory $FRAGSTATE_CACHE"
tmp="$(mktemp -d "$FRAGSTATE_CACHE/.hadoop-dl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.fragstate.cache</groupId>
  <artifactId>hadoop-hdfs-jars</artifactId>
  <version>$HADOOP_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-minicluster</artifactId><version>$HADOOP_VERSION</version>
      <!-- only for the in-JVM MiniDFSCluster test harness, not for the daemons -->
      <exclusions><exclusion><groupId>junit</groupId><artifactId>junit</artifactId></exclusion></exclusions>
    </dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId><version>$HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId><version>$HADOOP_VERSION</version></dependency>
    <!-- the shaded jars log through slf4j 1.7 and carry no binding: Hadoop's own (reload4j) -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.22</version></dependency>
  </dependencies>
</project>
POM
log "resolving org.apache.hadoop:hadoop-client-{minicluster,api,runtime}:$HADOOP_VERSION and their runtime dependencies from Maven Central"
if ! (cd "$tmp" && mvn -B -ntp -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/libs") >"$tmp/mvn.log" 2>&1; then
  tail -n 30 "$tmp/mvn.log" >&2
  die "could not fetch Hadoop org.apache.hadoop:hadoop-client-minicluster/-api/-runtime:$HADOOP_VERSION (with reload4j 1.2.22, slf4j-reload4j 1.7.36) from Maven Central (mvn dependency:copy-dependencies failed; is Maven Central reachable?)"
fi
have_jars "$tmp/libs" || die "Maven resolved no hadoop-client-{minicluster,api,runtime} jars for $HADOOP_VERSION"
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/libs" "$dest/libs"
cp "$tmp/pom.xml" "$dest/pom.xml"
touch "$dest/.complete"
log "Hadoop $HADOOP_VERSION jars cached at $dest/libs ($(ls "$dest/libs" | wc -l) jars)"
echo "$dest"
