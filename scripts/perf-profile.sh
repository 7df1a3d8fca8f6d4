#!/usr/bin/env bash
# Where does quarry spend its time on a query set? Records a cpu-clock profile (call graphs) of the
# quarry driver answering QUERIES in MODES, and prints the hottest symbols.
#
#   scripts/perf-profile.sh INDEX QUERIES [MODES] [ITERS]
#   e.g. scripts/perf-profile.sh bench/results/tmp/w2/<quarry index> \
#        bench/results/tmp/w2/q-union.jsonl count 200
#
# The VMs expose no hardware counters, hence `-e cpu-clock`. The profile goes to
# target/perf/<basename of QUERIES>-<MODES>.data; re-read it with `perf report -i FILE`.
set -euo pipefail
index=${1:?index dir}
queries=${2:?queries jsonl}
modes=${3:-count}
iters=${4:-100}
bin=${QUARRY_BENCH_BIN:-target/release/quarry-bench}
mkdir -p target/perf
out="target/perf/$(basename "$queries" .jsonl)-${modes//,/_}.data"
perf record -e cpu-clock -g -o "$out" -- "$bin" driver quarry query --index "$index" \
    --queries "$queries" --modes "$modes" --warmup 0 --iters "$iters" --global-warmup-rounds 0 \
    >/dev/null
perf report -i "$out" --no-children --stdio --percent-limit 1 2>/dev/null | grep -v '^$' | head -80
