"""Searcher.explain: Lucene's explanation tree of a hit, whose top value is the hit's score."""

from __future__ import annotations

import pytest

QUERIES = ["oil prices", "+crude +oil", '"crude oil"~2 exports', "title:cocoa^2 body:brazil", "pirces~1"]


@pytest.mark.parametrize("query", QUERIES)
def test_explanation_value_is_the_score(reuters_index, query):
    s = reuters_index.searcher()
    hits = s.search(query, limit=5, default_fields=["body"], fields=[])
    assert len(hits.hits) > 0
    for h in hits:
        e = s.explain(query, h.doc, default_fields=["body"])
        assert e["matched"]
        assert abs(e["value"] - h.score) <= 1e-6 * max(1.0, abs(h.score)), (query, e)


def test_term_explanation_has_lucenes_descriptions(reuters_index):
    s = reuters_index.searcher()
    q = s.parse("oil", ["body"])
    top = s.search(q, limit=1, fields=[]).hits[0]
    e = s.explain(q, top.doc)
    assert e["description"].endswith(") [BM25Similarity], result of:")
    assert e["description"].startswith("weight(body:oil in ")
    score = e["details"][0]
    assert score["description"].startswith("score(freq=")
    idf, tf = score["details"]
    assert idf["description"] == "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:"
    n, big_n = (d["value"] for d in idf["details"])
    assert 0 < n <= big_n <= 21578
    assert tf["details"][1]["description"] == "k1, term saturation parameter"
    miss = s.explain(s.parse("zzzqqq", ["body"]), top.doc)
    assert not miss["matched"] and miss["value"] == 0
