"""The Python examples of README.md, docs/python.md and docs/ray.md run as written and print
what the Markdown says they print.

The rule, for whoever writes docs: every ```python block is followed by a ```text block with
its expected standard output. In it `...` stands for any text within a line (a path, a score
whose digits do not matter), and a line that is only `...` for any number of lines. The Ray
example starts and stops its own local Ray (skipped when Ray is not installed)."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

FILES = ("README.md", "docs/python.md", "docs/ray.md")
BLOCK = re.compile(r"```python\n(.*?)```\n(?:\s*```text\n(.*?)```)?", re.S)


def examples():
    for name in FILES:
        path = ROOT / name
        if not path.exists():
            continue
        for i, (code, expected) in enumerate(BLOCK.findall(path.read_text())):
            ray = "quarry.ray" in code
            yield pytest.param(code, expected, id=f"{name}#{i}{'-ray' if ray else ''}")


def line_matches(pattern: str, line: str) -> bool:
    return re.fullmatch(".*".join(map(re.escape, pattern.split("..."))), line) is not None


def lines_match(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(lines_match(rest, actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and line_matches(head, actual[0]) and lines_match(rest, actual[1:])


def test_the_matcher_follows_the_documented_rule():
    assert line_matches("2.1... (0, 0)", "2.1345 (0, 0)")
    assert not line_matches("a", "ab")
    assert lines_match(["x", "...", "z"], ["x", "y", "y", "z"])
    assert not lines_match(["x", "z"], ["x", "y", "z"])


def test_every_example_is_found_and_states_its_output():
    params = list(examples())
    ids = [p.id for p in params]
    assert "README.md#0" in ids and any(i.endswith("-ray") for i in ids), ids
    for p in params:
        assert p.values[1].strip(), f"{p.id}: no ```text block with the expected output"


@pytest.mark.parametrize("code,expected", list(examples()))
def test_example_prints_what_the_docs_say(code, expected, capsys):
    if "quarry.ray" in code:
        ray = pytest.importorskip("ray")
        assert not ray.is_initialized(), "the Ray example starts its own Ray"
    exec(compile(code, "<example>", "exec"), {})
    actual = [line.rstrip() for line in capsys.readouterr().out.strip().splitlines()]
    want = [line.rstrip() for line in expected.strip().splitlines()]
    assert lines_match(want, actual), "expected:\n" + "\n".join(want) + "\n\ngot:\n" + "\n".join(actual)
