"""Highlighting from Python: ``search(..., highlight=[...])`` gives each hit ``snippets``."""

from __future__ import annotations

import pickle

import pytest

import quarry

DOCS = [
    {"id": 1, "title": "Oil prices rise", "body": "Crude oil prices rose. Prices of oil fell later."},
    {"id": 2, "title": "Gas", "body": "Natural gas prices fell."},
]


@pytest.fixture
def searcher(tmp_path):
    schema = (
        quarry.SchemaBuilder()
        .add_integer_field("id")
        .add_text_field("title")
        .add_text_field("body")
        .build()
    )
    idx = quarry.Index.create(tmp_path / "idx", schema)
    with idx.writer(threads=1) as w:
        for d in DOCS:
            w.add(d)
    return idx.searcher()


def test_snippets_mark_phrases_and_prefixes(searcher):
    r = searcher.search('body:"oil prices"', highlight=["body", "title"])
    assert [h.fields["id"] for h in r] == [1]
    # Only the phrase's occurrence, as one stretch; the title was not queried.
    assert r[0].snippets == {"body": ["Crude <em>oil prices</em> rose. Prices of oil fell later."]}
    r = searcher.search("pric*", highlight="*")
    by_id = {h.fields["id"]: h.snippets for h in r}
    assert by_id[2] == {"body": ["Natural gas <em>prices</em> fell."]}
    assert by_id[1]["title"] == ["Oil <em>prices</em> rise"]
    # Hits pickle with their snippets.
    assert pickle.loads(pickle.dumps(r[0])).snippets == r[0].snippets


def test_no_highlight_no_snippets_and_bad_fields(searcher):
    assert searcher.search("oil")[0].snippets == {}
    with pytest.raises(quarry.QuarryError, match="id"):
        searcher.search("oil", highlight=["id"])
    with pytest.raises(quarry.QuarryError, match="order_by"):
        searcher.search("oil", highlight=["body"], order_by="id")
