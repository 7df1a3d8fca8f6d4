"""The Python examples of README.md and docs/python.md run as written, the Ray one included
(it writes its own input files and starts and stops a local Ray)."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def examples():
    for name in ("README.md", "docs/python.md"):
        for i, code in enumerate(BLOCK.findall((ROOT / name).read_text())):
            yield pytest.param(code, id=f"{name}#{i}{'-ray' if 'quarry.ray' in code else ''}")


def test_every_example_is_found():
    ids = [p.id for p in examples()]
    assert "README.md#0" in ids and any(i.endswith("-ray") for i in ids), ids


@pytest.mark.parametrize("code", list(examples()))
def test_example_runs(code, capsys):
    if "quarry.ray" in code:
        ray = pytest.importorskip("ray")
        assert not ray.is_initialized(), "the Ray example starts its own Ray"
    exec(compile(code, "<example>", "exec"), {})
    out = capsys.readouterr().out
    assert out.strip()
    if "quarry.ray" in code:  # the values its comments promise
        assert "334 334" in out.splitlines() and "column 16" in out.splitlines()
