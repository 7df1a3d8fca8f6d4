#!/usr/bin/env bash
# Run the Lucene benchmark driver with the documented JVM flags.
#   bench/lucene/lucene-bench.sh SUBCOMMAND [options]     (see README.md)
# Environment:
#   JAVA_HOME               JDK 21+ (default: /usr/lib/jvm/temurin-25-jdk-amd64)
#   LUCENE_BENCH_JAVA_OPTS  replaces the JVM flags of jvm.options (the ones quarry-bench uses)
#   LUCENE_BENCH_JAR        jar to run (default: bench/lucene/target/lucene-bench.jar, built if missing)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
if [[ ! -x "$JAVA_HOME/bin/java" ]] || ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then
  export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
fi
jar="${LUCENE_BENCH_JAR:-$here/target/lucene-bench.jar}"
if [[ ! -f "$jar" ]]; then
  echo "[lucene-bench] building $jar" >&2
  mvn -q -f "$here/pom.xml" package >&2
fi
default_opts=$(sed 's/#.*//' "$here/jvm.options" | tr -s '[:space:]' ' ')
# shellcheck disable=SC2086
exec "$JAVA_HOME/bin/java" ${LUCENE_BENCH_JAVA_OPTS:-$default_opts} -jar "$jar" "$@"
