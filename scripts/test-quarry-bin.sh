#!/usr/bin/env bash
# Prints the path of the `quarry` binary that `cargo test --workspace` builds for quarry-cli's
# integration tests (test profile, the workspace's features), building it if needed: after the
# suite's test step this rebuilds nothing, where `cargo build -p quarry-cli` compiled the engine,
# server and CLI again (dev profile, the features of quarry-cli alone). Its path comes from
# cargo's own report of the artifact. Used by scripts/server-tests.sh and scripts/mcp-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --workspace --no-run --test serve_kill \
  --message-format=json-render-diagnostics |
  python3 -c 'import json, sys
msgs = [json.loads(line) for line in sys.stdin]  # all of it: cargo fails on a closed pipe
print(next(m["executable"] for m in msgs
           if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "quarry"
           and m["target"]["kind"] == ["bin"]))'
