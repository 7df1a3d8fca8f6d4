"""Searcher.parse_simple: Lucene's SimpleQueryParser (Elasticsearch's simple_query_string)."""

from __future__ import annotations

import pickle

import pytest

import quarry


def test_operators_render_like_lucene(reuters_index):
    s = reuters_index.searcher()
    cases = {
        "oil + prices": "+body:oil +body:prices",
        "coffee | cocoa + brazil": "+(body:coffee body:cocoa) +body:brazil",
        "oil -gas": "body:oil (-body:gas *:*)",
        '"crude oil prices"~2 petro* roam~1': 'body:"crude oil prices"~2 body:petro* body:roam~1',
        '(oil | gas "prices': "body:oil body:gas body:prices",
    }
    for text, lucene in cases.items():
        assert str(s.parse_simple(text, ["body"])) == lucene, text
    assert str(s.parse_simple("oil", ["title^3", "body"])) == "(title:oil)^3.0 body:oil"
    assert str(s.parse_simple("oil prices", ["body"], default_operator="AND")) == "+body:oil +body:prices"
    assert str(s.parse_simple("oil -gas*", ["body"], flags="OR|AND")) == "body:oil body:gas"
    assert str(s.parse_simple("Oil-Pri*", ["body"], analyze_wildcard=True)) == "body:oil body:pri*"


def test_searches_like_the_same_query_in_lucene_syntax(reuters_index):
    s = reuters_index.searcher()
    q = s.parse_simple('wheat + ("corn belt" | soybeans)', ["body"])
    same = s.parse('+wheat +("corn belt" soybeans)', ["body"])
    got = s.search(q, limit=10, fields=[])
    want = s.search(same, limit=10, fields=[])
    assert got.count == want.count > 0
    assert [h.score for h in got] == [h.score for h in want]
    assert str(pickle.loads(pickle.dumps(q))) == str(q)


def test_bad_arguments_name_the_problem(reuters_index):
    s = reuters_index.searcher()
    with pytest.raises(quarry.UnknownFieldError):
        s.parse_simple("oil", ["nope"])
    with pytest.raises(quarry.InvalidArgumentError, match="BOGUS"):
        s.parse_simple("oil", ["body"], flags="OR|BOGUS")
    with pytest.raises(quarry.InvalidArgumentError, match="xor"):
        s.parse_simple("oil", ["body"], default_operator="xor")
    with pytest.raises(quarry.InvalidArgumentError, match="title\\^x"):
        s.parse_simple("oil", ["title^x"])
