#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this script):
#   1. unit, property and integration tests of every library and the CLI (Reuters parity with
#      Lucene, corruption, crash and CLI tests);
#   2. the benchmark suite's build and its smoke run (W1, --quick), which also builds the Lucene
#      harness with Maven and compares the three engines on a small sample.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --locked

if [[ "${QUARRY_SKIP_BENCH_SMOKE:-0}" != "1" ]]; then
  cargo build --locked --release -p quarry-bench
  cargo run --locked --release -p quarry-bench -- run --workload w1 --quick
fi
