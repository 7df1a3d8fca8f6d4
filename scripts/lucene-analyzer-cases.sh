#!/usr/bin/env bash
# Differential test of the standard analyzer against Lucene's own: Lucene's StandardAnalyzer
# tokenizes QUARRY_ANALYZER_CASES (default 3000) random strings drawn with a fixed seed
# (QUARRY_ANALYZER_SEED, default 20261129) by crates/quarry/src/analysis/gen/LuceneCases.java,
# then quarry's analyzer must give the same tokens for every one (the test
# `lucene_differential_cases` of crates/quarry/tests/analyzer_reuters.rs).
# Needs a JDK 21+ ($JAVA_HOME, see scripts/ensure-java.sh) and the Lucene driver jar (built with
# Maven under bench/lucene/target when missing); fails, never skips, when they are not there.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${QUARRY_ANALYZER_CASES:-3000}
SEED=${QUARRY_ANALYZER_SEED:-20261129}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
jar() { ls -S bench/lucene/target/*.jar 2> /dev/null | grep -v -e '/original-' -e sources | head -n1; }
if [ -z "$(jar)" ]; then
  echo "[analyzer-cases] building the Lucene driver jar: mvn -q -f bench/lucene/pom.xml package" >&2
  mvn -q -B -f bench/lucene/pom.xml package -DskipTests >&2
fi
JAR=$(jar)
if [ -z "$JAR" ]; then
  echo "[analyzer-cases] ERROR: no Lucene jar under bench/lucene/target (install a JDK 21+ and Maven: scripts/ensure-java.sh)" >&2
  exit 1
fi
OUT="$PWD/target/lucene-analyzer-cases-$SEED-$N.jsonl"
mkdir -p target
echo "[analyzer-cases] $N cases, seed $SEED, Lucene's StandardAnalyzer from $JAR" >&2
"$JAVA" -cp "$JAR" crates/quarry/src/analysis/gen/LuceneCases.java \
  crates/quarry/src/analysis/tables.rs "$N" "$SEED" "$OUT"
# --workspace (not -p quarry): the features of the test step's build, so nothing is rebuilt.
QUARRY_LUCENE_CASES="$OUT" cargo test --locked --workspace --test analyzer_reuters -- \
  --ignored --exact lucene_differential_cases --nocapture
