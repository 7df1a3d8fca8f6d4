#!/usr/bin/env bash
# Drives `quarry mcp` with the official Python MCP SDK (2.x, pinned in tests/mcp/requirements.txt)
# over stdio and streamable HTTP on a free loopback port: tools listed, each called on Reuters and
# compared with the library (`quarry search --json`), bad input, caps, API keys, and a recorded
# session (docs/mcp-transcript.jsonl).
# Creates a virtual environment under target/ (reused when present), builds the `quarry` binary
# of the test profile (as `cargo test --workspace` builds it) and runs the pytest suite in
# tests/mcp. QUARRY_MCP_DOCS sets how many Reuters documents are indexed (default 5000);
# QUARRY_MCP_WRITE_TRANSCRIPT=1 rewrites docs/mcp-transcript.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/mcp-tests-venv
REQ=tests/mcp/requirements.txt
if [ ! -x "$VENV/bin/pytest" ] || ! cmp -s "$REQ" "$VENV/requirements.txt"; then
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet -r "$REQ"
  cp "$REQ" "$VENV/requirements.txt"
fi
echo "[mcp-tests] client: $("$VENV/bin/pip" freeze | grep -E '^(mcp|pytest)==' | tr '\n' ' ')" >&2
# The `quarry` binary of the test profile (scripts/test-quarry-bin.sh; after the suite's test
# step this rebuilds nothing); a QUARRY_BIN already set is used as it is (local runs).
[ -n "${QUARRY_BIN:-}" ] || QUARRY_BIN=$(bash scripts/test-quarry-bin.sh)
echo "[mcp-tests] server: $QUARRY_BIN" >&2
QUARRY_BIN="$QUARRY_BIN" "$VENV/bin/pytest" -q -p no:cacheprovider tests/mcp "$@"
