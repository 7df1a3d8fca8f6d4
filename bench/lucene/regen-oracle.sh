#!/usr/bin/env bash
# Rebuild the driver and regenerate the Lucene oracles tests/fixtures/lucene-reuters-{oracle,
# structured-oracle,compound-oracle,explain-oracle,simple-oracle}.jsonl from repo files only
# (bundled corpus data/reuters21578.jsonl.zst, bench/lucene/seed-queries.jsonl,
# tests/fixtures/reuters-queries-public.jsonl, tests/fixtures/reuters-structured-queries.jsonl,
# tests/fixtures/reuters-queries-compound.jsonl, tests/fixtures/reuters-queries-explain.jsonl,
# tests/fixtures/reuters-queries-simple.jsonl).
#   bench/lucene/regen-oracle.sh            rewrite the fixtures in place
#   bench/lucene/regen-oracle.sh --check    write to temp files and cmp against the fixtures
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
if ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then
  export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
fi
fixture="$root/tests/fixtures/lucene-reuters-oracle.jsonl"
structured="$root/tests/fixtures/lucene-reuters-structured-oracle.jsonl"
compound="$root/tests/fixtures/lucene-reuters-compound-oracle.jsonl"
explain="$root/tests/fixtures/lucene-reuters-explain-oracle.jsonl"
simple="$root/tests/fixtures/lucene-reuters-simple-oracle.jsonl"
mode="${1:-write}"

mvn -q -f "$here/pom.xml" package >&2

# The driver reads .zst itself (zstd-jni, falling back to the zstd CLI); decompress to a temp
# file only if neither works: set LUCENE_ORACLE_PLAIN=1 to force that path.
tmpdir="$(mktemp -d)"
trap 'rm -rf "$tmpdir"' EXIT
input="$root/data/reuters21578.jsonl.zst"
if [[ "${LUCENE_ORACLE_PLAIN:-0}" == 1 ]]; then
  zstd -dqc "$input" > "$tmpdir/reuters.jsonl"
  input="$tmpdir/reuters.jsonl"
fi

out="$fixture"
out_structured="$structured"
out_compound="$compound"
out_explain="$explain"
out_simple="$simple"
if [[ "$mode" == "--check" ]]; then
  out="$tmpdir/oracle.jsonl"
  out_structured="$tmpdir/structured.jsonl"
  out_compound="$tmpdir/compound.jsonl"
  out_explain="$tmpdir/explain.jsonl"
  out_simple="$tmpdir/simple.jsonl"
fi

java=("$JAVA_HOME/bin/java" -Xmx2g --enable-native-access=ALL-UNNAMED -jar "$here/target/lucene-bench.jar")
"${java[@]}" oracle \
  --input "$input" \
  --queries-set "seed-queries=$here/seed-queries.jsonl" \
  --queries-set "reuters-queries-public=$root/tests/fixtures/reuters-queries-public.jsonl" \
  --out "$out"
"${java[@]}" oracle-structured \
  --input "$input" \
  --queries "$root/tests/fixtures/reuters-structured-queries.jsonl" \
  --out "$out_structured"
"${java[@]}" oracle-dsl \
  --input "$input" \
  --queries-set "compound=$root/tests/fixtures/reuters-queries-compound.jsonl" \
  --out "$out_compound"
"${java[@]}" oracle-dsl \
  --input "$input" \
  --queries-set "explain=$root/tests/fixtures/reuters-queries-explain.jsonl" \
  --explain 3 \
  --out "$out_explain"
"${java[@]}" oracle-dsl \
  --input "$input" \
  --queries-set "simple=$root/tests/fixtures/reuters-queries-simple.jsonl" \
  --out "$out_simple"

if [[ "$mode" == "--check" ]]; then
  status=0
  check() { # check GOT WANT
    if cmp "$1" "$2"; then
      echo "oracle: identical to $2" >&2
    else
      diff <(head -c 100000 "$1") <(head -c 100000 "$2") | head -20 >&2 || true
      echo "oracle: DIFFERS from $2" >&2
      status=1
    fi
  }
  check "$out" "$fixture"
  check "$out_structured" "$structured"
  check "$out_compound" "$compound"
  check "$out_explain" "$explain"
  check "$out_simple" "$simple"
  exit "$status"
else
  echo "oracle: wrote $out, $out_structured, $out_compound, $out_explain and $out_simple" >&2
  (cd "$root" && git diff --stat -- tests/fixtures/lucene-reuters-oracle.jsonl \
    tests/fixtures/lucene-reuters-structured-oracle.jsonl \
    tests/fixtures/lucene-reuters-compound-oracle.jsonl \
    tests/fixtures/lucene-reuters-explain-oracle.jsonl \
    tests/fixtures/lucene-reuters-simple-oracle.jsonl) >&2 || true
fi
