#!/usr/bin/env bash
# Fetch (once) and cache the jars Flink needs for s3a:// through Hadoop's S3AFileSystem as a
# fallback file system, print the folder that holds them (HADOOP_CLASSPATH=<folder>/*).
#
# A tiny generated pom depends on org.apache.hadoop:hadoop-aws, hadoop-client-api and
# hadoop-client-runtime ($HADOOP_VERSION of common.sh, 3.4.2, as HDFS); hadoop-aws brings the AWS SDK v2 it declares
# (software.amazon.awssdk:bundle 2.29.52 for 3.4.2) and analyticsaccelerator-s3;
# `mvn dependency:copy-dependencies` puts every runtime jar in the folder. slf4j-api is left out:
# Flink's flink-dist already carries slf4j 1.7 with its log4j binding.
# (The flink-s3-fs-hadoop/-presto plugin jars are not used.)
# Cache: $FRAGSTATE_CACHE/s3a-$HADOOP_VERSION (default .cache/ in the repo).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# hadoop-aws declares the AWS SDK version that goes with it
v="$HADOOP_VERSION"
dest="$FRAGSTATE_CACHE/s3a-$v"
if [ -f "$dest/.complete" ] && ls "$dest"/hadoop-aws-"$v".jar >/dev/null 2>&1; then
  echo "$dest"
  exit 0
fi
need mvn "needed to resolve hadoop-aws and the AWS SDK from Maven Central"

mkdir -p "$FRAGSTATE_CACHE" || die "cannot create the cache directory $FRAGSTATE_CACHE"
tmp="$(mktemp -d "$FRAGSTATE_CACHE/.s3a-dl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.fragstate.cache</groupId>
  <artifactId>s3a-jars</artifactId>
  <version>$v</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId><version>$v</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId><version>$v</version></dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId><version>$v</version>
      <exclusions><exclusion><groupId>org.slf4j</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
POM
log "resolving org.apache.hadoop:hadoop-aws:$v (+ hadoop-client-api/-runtime, AWS SDK v2 bundle) from Maven Central"
if ! (cd "$tmp" && mvn -B -ntp -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/jars") >"$tmp/mvn.log" 2>&1; then
  tail -n 30 "$tmp/mvn.log" >&2
  die "could not fetch org.apache.hadoop:hadoop-aws:$v, hadoop-client-api:$v, hadoop-client-runtime:$v and the AWS SDK v2 bundle they need from Maven Central (mvn dependency:copy-dependencies failed; is Maven Central reachable?)"
fi
for j in hadoop-aws hadoop-client-api hadoop-client-runtime; do
  ls "$tmp"/jars/"$j-$v".jar >/dev/null 2>&1 || die "Maven resolved no $j-$v.jar"
done
ls "$tmp"/jars/bundle-2.*.jar >/dev/null 2>&1 || die "Maven resolved no software.amazon.awssdk:bundle jar for hadoop-aws $v"
rm -rf "$dest"
mv "$tmp/jars" "$dest"
cp "$tmp/pom.xml" "$dest/s3a-jars.pom"
touch "$dest/.complete"
log "s3a jars for Hadoop $v cached at $dest ($(ls "$dest"/*.jar | wc -l) jars, $(du -sh "$dest" | cut -f1))"
echo "$dest"
