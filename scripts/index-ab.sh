#!/usr/bin/env bash
# Indexing throughput of several builds or engines side by side, alternating run by run, so that
# a slow spell of a shared host falls on all of them alike (bench/results/indexing-2026-11-26.md).
#
#   scripts/index-ab.sh ROUNDS THREADS BINARY[:ENGINE] ...
#
# Each round runs every BINARY's `driver ENGINE index` (ENGINE defaults to quarry) into a fresh
# directory on the W2 corpus (`quarry-bench prepare --workload w2` writes it) and prints docs/s,
# segments and the peak RSS above the pre-loaded corpus from the driver's `index` record.
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${QUARRY_AB_DOCS:-bench/results/tmp/w2/docs.jsonl}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rounds=$1
threads=$2
shift 2
for r in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    bin=${spec%%:*}
    engine=quarry
    [[ "$spec" == *:* ]] && engine=${spec##*:}
    rm -rf "$out/index"
    rec=$("$bin" driver "$engine" index --input "$docs" --index "$out/index" --threads "$threads" \
      --memory-mb 256 2>/dev/null | tail -1)
    echo "$spec threads=$threads round=$r $(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
above = (d["peak_rss_bytes"] - d["rss_before_timing_bytes"]) / 2**20
print("%.0f docs/s, %s segments, %.0f MiB above the corpus" % (d["docs_per_sec"], d["segments"], above))
' "$rec")"
  done
done
