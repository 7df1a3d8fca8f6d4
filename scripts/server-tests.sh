#!/usr/bin/env bash
# Drives `quarry serve` with the official Elasticsearch Python clients 9.x and 8.x, pinned to
# exact versions in crates/quarry-server/tests/python/requirements.txt.
# Creates a virtual environment under target/ (reused when present), builds the server (the
# `quarry` binary of the test profile, as `cargo test --workspace` builds it) and runs the pytest
# suite in crates/quarry-server/tests/python.
# QUARRY_CLIENT_DOCS sets how many Reuters documents are bulk-indexed (default 5000).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/server-tests-venv
REQ=crates/quarry-server/tests/python/requirements.txt
# Exact versions from $REQ; a venv made from another version of that file is brought up to it.
if [ ! -x "$VENV/bin/pytest" ] || ! cmp -s "$REQ" "$VENV/requirements.txt"; then
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet -r "$REQ"
  cp "$REQ" "$VENV/requirements.txt"
fi
echo "[server-tests] clients: $("$VENV/bin/pip" freeze | grep -E '^(elasticsearch8?|pytest)==' | tr '\n' ' ')" >&2
# The `quarry` binary of the test profile (after the suite's test step this rebuilds nothing).
QUARRY_BIN=$(bash scripts/test-quarry-bin.sh)
echo "[server-tests] server: $QUARRY_BIN" >&2
QUARRY_BIN="$QUARRY_BIN" "$VENV/bin/pytest" -q crates/quarry-server/tests/python "$@"
