"""The Python examples of README.md and docs/python.md run as written (the Ray one excepted:
it needs input files; tests/test_ray.py covers the same calls)."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def examples():
    for name in ("README.md", "docs/python.md"):
        for i, code in enumerate(BLOCK.findall((ROOT / name).read_text())):
            if "quarry.ray" not in code:
                yield pytest.param(code, id=f"{name}#{i}")


@pytest.mark.parametrize("code", list(examples()))
def test_example_runs(code, capsys):
    exec(compile(code, "<example>", "exec"), {})
    out = capsys.readouterr().out
    assert out.strip()
