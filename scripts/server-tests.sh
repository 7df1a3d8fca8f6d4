#!/usr/bin/env bash
# Drives `quarry serve` with the official Elasticsearch Python clients (9.x and 8.x).
# Creates a virtual environment under target/ (reused when present), builds the server and runs
# the pytest suite in crates/quarry-server/tests/python.
# QUARRY_CLIENT_DOCS sets how many Reuters documents are bulk-indexed (default 5000).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/server-tests-venv
if [ ! -x "$VENV/bin/pytest" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "elasticsearch==9.*" "elasticsearch8" "pytest" "zstandard"
fi
cargo build --quiet -p quarry-cli
QUARRY_BIN="$PWD/target/debug/quarry" "$VENV/bin/pytest" -q crates/quarry-server/tests/python "$@"
