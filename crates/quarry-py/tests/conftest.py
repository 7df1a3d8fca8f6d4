"""Shared fixtures: the bundled Reuters corpus (id, title, body, as the Lucene oracle indexed
it), the oracle's queries, and one Reuters index built from Python for the whole session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

import quarry

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "data" / "reuters21578.jsonl.zst"
ORACLE = ROOT / "tests" / "fixtures" / "lucene-reuters-oracle.jsonl"


def reuters_schema() -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id")
        .add_text_field("title")
        .add_text_field("body")
        .build()
    )


@pytest.fixture(scope="session")
def reuters_docs() -> list[dict]:
    with open(CORPUS, "rb") as f:
        text = zstandard.ZstdDecompressor().stream_reader(f).read().decode("utf-8")
    docs = []
    for line in text.splitlines():
        if line.strip():
            d = json.loads(line)
            docs.append({k: d[k] for k in ("id", "title", "body") if k in d})
    assert len(docs) == 21578
    return docs


@pytest.fixture(scope="session")
def reuters_jsonl(reuters_docs, tmp_path_factory) -> Path:
    """The oracle's view of Reuters (id, title, body) as a JSON Lines file."""
    p = tmp_path_factory.mktemp("input") / "reuters.jsonl"
    with open(p, "w", encoding="utf-8") as f:
        for d in reuters_docs:
            f.write(json.dumps(d) + "\n")
    return p


@pytest.fixture(scope="session")
def oracle() -> tuple[dict, list[dict]]:
    lines = [json.loads(l) for l in ORACLE.read_text().splitlines() if l.strip()]
    return lines[0], lines[1:]


@pytest.fixture(scope="session")
def reuters_index(reuters_docs, tmp_path_factory) -> quarry.Index:
    path = tmp_path_factory.mktemp("reuters") / "index"
    index = quarry.Index.create(path, reuters_schema())
    with index.writer(threads=2) as w:
        assert w.add_many(iter(reuters_docs)) == len(reuters_docs)
    return quarry.Index.open(path)


def same_ranking(got: list[tuple[float, int]], want: list[tuple[float, int]]) -> bool:
    """Equal (score, id) lists, except that equal scores may come in another order (and the
    lowest score's group may be cut at the limit differently)."""
    if [s for s, _ in got] != [s for s, _ in want]:
        return False
    low = want[-1][0] if want else None

    def groups(v):
        g: dict[float, list[int]] = {}
        for s, i in v:
            if s != low:
                g.setdefault(s, []).append(i)
        return {s: sorted(ids) for s, ids in g.items()}

    return groups(got) == groups(want)
