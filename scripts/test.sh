#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this script):
#   1. formatting (`cargo fmt --check`), lints (`cargo clippy`, warnings denied) and API docs
#      (`cargo doc`, warnings denied) of every crate of the workspace;
#   2. unit, property and integration tests of every crate, quarry-bench included (Reuters parity
#      with Lucene, corruption, crash and CLI tests);
#   3. the Python package's tests (scripts/python-tests.sh: a venv under target/pyvenv, the
#      package built from source with maturin, pytest incl. the Ray sharding exactness test);
#   3a. the HTTP server driven by the official Elasticsearch Python clients 9.x and 8.x
#      (scripts/server-tests.sh, its own venv under target/);
#   3b. a build of the fuzz targets (fuzz/, its own workspace; plain stable cargo, no cargo-fuzz);
#   4. the benchmark suite's smoke run (W1, --quick, reports under target/bench-quick/), which
#      builds the Lucene harness with Maven when Java 21+ and Maven are present and fails when
#      quarry's hit counts or top-10 ids differ from Lucene's; without them Lucene is skipped,
#      with a note, and only quarry and Tantivy run.
# Each step prints its time. QUARRY_SKIP_BENCH_SMOKE=1 leaves out step 4,
# QUARRY_SKIP_FUZZ_BUILD=1 step 3b, QUARRY_SKIP_PYTHON=1 step 3,
# QUARRY_SKIP_SERVER_CLIENTS=1 step 3a.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "==> $name: $*" >&2
  "$@"
  echo "==> $name: $((SECONDS - start)) s" >&2
}

step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --locked -- -D warnings
step doc env RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps --locked
step test cargo test --workspace --locked

if [[ "${QUARRY_SKIP_PYTHON:-0}" != "1" ]]; then
  step python-tests bash scripts/python-tests.sh
fi

if [[ "${QUARRY_SKIP_SERVER_CLIENTS:-0}" != "1" ]]; then
  step server-client-tests bash scripts/server-tests.sh
fi

if [[ "${QUARRY_SKIP_FUZZ_BUILD:-0}" != "1" ]]; then
  step fuzz-build cargo build --locked --manifest-path fuzz/Cargo.toml
fi

if [[ "${QUARRY_SKIP_BENCH_SMOKE:-0}" != "1" ]]; then
  step bench-build cargo build --locked --release -p quarry-bench
  step bench-smoke cargo run --locked --release -p quarry-bench -- run --workload w1 --quick --check-parity
  step online-parity cargo run --locked --release -p quarry-bench -- online-parity
fi
