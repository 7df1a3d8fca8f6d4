#!/usr/bin/env bash
# The Python package's test suite: creates a virtual environment under target/pyvenv (reused
# when present), installs the pinned tools (crates/quarry-py/requirements-test.txt: maturin,
# pytest, ray, psutil, zstandard, numpy), builds and installs the `quarry` package from source
# (pip + maturin, release build) and runs pytest on crates/quarry-py/tests (API, errors,
# Reuters vs the Lucene oracle, threads, streaming memory, Ray sharding exactness, text
# embedding with all-MiniLM-L6-v2: scripts/fetch-model.sh downloads it into target/models/ once
# and its directory is exported as QUARRY_TEST_MODEL_DIR, as scripts/test.sh does).
#   scripts/python-tests.sh            # everything
#   scripts/python-tests.sh -k ray     # extra arguments go to pytest
# PYTHON selects the interpreter that creates the venv (default python3, >= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/pyvenv
if [[ ! -x "$VENV/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$VENV"
fi
# Tools of the venv (maturin) first on PATH, as an activated venv would have them.
export VIRTUAL_ENV="$PWD/$VENV" PATH="$PWD/$VENV/bin:$PATH"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install -r crates/quarry-py/requirements-test.txt
# --no-build-isolation: use the pinned maturin of the venv instead of fetching one per build.
"${PIP[@]}" install --no-build-isolation --force-reinstall --no-deps ./crates/quarry-py
# The embedding model for tests/test_embed.py (which fails under CI without it).
QUARRY_TEST_MODEL_DIR=$(bash scripts/fetch-model.sh)
export QUARRY_TEST_MODEL_DIR
cd crates/quarry-py
exec ../../"$VENV/bin/python" -m pytest tests -q -p no:cacheprovider "$@"
