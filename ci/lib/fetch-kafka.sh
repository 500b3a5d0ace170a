#!/usr/bin/env bash
# Fetch (once) and cache the jars of an Apache Kafka broker from Maven Central, print the
# folder that holds them (its libs/ is the broker's classpath).
#
# A tiny generated pom depends on org.apache.kafka:kafka_2.13 (the broker, KRaft mode) and
# log4j for its logging; `mvn dependency:copy-dependencies` puts every runtime jar in libs/.
# Cache: $FRAGSTATE_CACHE/kafka-$KAFKA_VERSION (default .cache/ in the repo).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

dest="$FRAGSTATE_CACHE/kafka-$KAFKA_VERSION"
if [ -f "$dest/.complete" ] && ls "$dest"/libs/kafka_2.13-*.jar >/dev/null 2>&1; then
  echo "$dest"
  exit 0
fi
need mvn "needed to resolve the Kafka broker jars from Maven Central"
need java "needed to run the Kafka broker"

mkdir -p "$FRAGSTATE_CACHE" || die "cannot create the cache directory $FRAGSTATE_CACHE"
tmp="$(mktemp -d "$FRAGSTATE_CACHE/.kafka-dl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.fragstate.cache</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- the broker's slf4j 1.7 would not find the slf4j 2 binding: take slf4j 2 -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.17</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
POM
log "resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION and its runtime dependencies from Maven Central"
if ! (cd "$tmp" && mvn -B -ntp -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/libs") >"$tmp/mvn.log" 2>&1; then
  tail -n 30 "$tmp/mvn.log" >&2
  die "could not fetch the Kafka broker org.apache.kafka:kafka_2.13:$KAFKA_VERSION (with log4j 2.24.3) from Maven Central (mvn dependency:copy-dependencies failed; is Maven Central reachable?)"
fi
ls "$tmp"/libs/kafka_2.13-*.jar >/dev/null 2>&1 || die "Maven resolved no kafka_2.13 jar for $KAFKA_VERSION"
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/libs" "$dest/libs"
cp "$tmp/pom.xml" "$dest/pom.xml"
touch "$dest/.complete"
log "Kafka $KAFKA_VERSION broker jars cached at $dest/libs ($(ls "$dest/libs" | wc -l) jars)"
echo "$dest"
