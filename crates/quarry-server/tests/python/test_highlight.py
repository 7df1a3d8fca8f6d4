"""Highlighting through the official Elasticsearch Python clients (9.x and 8.x): the
`highlight` section's shapes and options, phrase- and prefix-aware fragments, and 400s that
name a bad option."""
import importlib
import os
import subprocess
import tempfile

import pytest

QUARRY = os.environ["QUARRY_BIN"]

DOCS = {
    "1": {"title": "Oil prices rise", "body": "Crude oil prices rose on Monday. Prices of oil fell later; oil traders sold."},
    "2": {"title": "Gas", "body": "Natural gas prices fell. The <gas> & oil market was calm."},
    "3": {"title": "Grain", "body": ["Wheat exports grew.", "Oil seeds too, and oil prices"]},
}


@pytest.fixture(scope="module")
def url():
    data = tempfile.mkdtemp(prefix="quarry-highlight-test-")
    proc = subprocess.Popen([QUARRY, "serve", "--data", data, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("quarry listening on "), line
    yield line.split(" on ", 1)[1]
    proc.terminate()
    assert proc.wait(timeout=60) == 0


def client(module, url):
    es_mod = importlib.import_module(module)
    es = es_mod.Elasticsearch(url, request_timeout=60)
    index = "hl-" + module
    if not es.indices.exists(index=index):
        es.indices.create(index=index, mappings={"properties": {
            "title": {"type": "text"}, "body": {"type": "text"}}})
        for i, d in DOCS.items():
            es.index(index=index, id=i, document=d)
        es.indices.refresh(index=index)
    return es_mod, es, index


def highlights(es, index, query, highlight):
    r = es.search(index=index, query=query, highlight=highlight)
    return {h["_id"]: h.get("highlight") for h in r["hits"]["hits"]}


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_phrases_prefixes_and_fields(url, module):
    _, es, index = client(module, url)
    # A phrase marks its occurrence only, as one stretch; "Prices of oil" stays plain.
    got = highlights(es, index, {"match_phrase": {"body": "oil prices"}}, {"fields": {"body": {}}})
    assert got["1"] == {"body": ["Crude <em>oil prices</em> rose on Monday. Prices of oil fell later; oil traders sold."]}
    # Multi-valued: fragments never mix values; the phrase matches inside the second value.
    assert got["3"] == {"body": ["Oil seeds too, and <em>oil prices</em>"]}
    # A prefix marks the words it expanded to; fields as a list, with wildcards.
    got = highlights(es, index, {"prefix": {"body": "pric"}}, {"fields": ["*"]})
    assert got["2"] == {"body": ["Natural gas <em>prices</em> fell. The <gas> & oil market was calm."]}
    # require_field_match (default true): a title query does not highlight the body.
    got = highlights(es, index, {"match": {"title": "oil"}}, {"fields": {"body": {}, "title": {}}})
    assert got["1"] == {"title": ["<em>Oil</em> prices rise"]}
    got = highlights(es, index, {"match": {"title": "oil"}},
                     {"require_field_match": False, "fields": {"body": {"number_of_fragments": 1}}})
    assert got["1"] == {"body": ["Crude <em>oil</em> prices rose on Monday. Prices of <em>oil</em> fell later; <em>oil</em> traders sold."]}
    # must_not terms are not highlighted.
    got = highlights(es, index, {"bool": {"must": [{"match": {"body": "fell"}}],
                                          "must_not": [{"match": {"body": "wheat"}}],
                                          "filter": [{"match": {"body": "gas"}}]}},
                     {"fields": {"body": {}}})
    assert got == {"2": {"body": ["Natural <em>gas</em> prices <em>fell</em>. The <<em>gas</em>> & oil market was calm."]}}


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_options(url, module):
    _, es, index = client(module, url)
    q = {"match": {"body": "gas"}}
    got = highlights(es, index, q, {"pre_tags": ["["], "post_tags": ["]"], "encoder": "html",
                                    "type": "unified", "fields": {"body": {"fragment_size": 40}}})
    assert got["2"] == {"body": ["Natural [gas] prices fell.", "The &lt;[gas]&gt; &amp; oil market was calm."]}
    got = highlights(es, index, q, {"fields": {"body": {"number_of_fragments": 1, "fragment_size": 40}}})
    assert got["2"] == {"body": ["Natural <em>gas</em> prices fell."]}
    got = highlights(es, index, q, {"fields": [{"body": {"number_of_fragments": 0}}]})
    assert got["2"] == {"body": ["Natural <em>gas</em> prices fell. The <<em>gas</em>> & oil market was calm."]}
    # No match in the field: no highlight key.
    r = es.search(index=index, query={"match": {"title": "grain"}}, highlight={"fields": {"body": {}}})
    assert "highlight" not in r["hits"]["hits"][0]


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_bad_options_are_400_naming_the_option(url, module):
    es_mod, es, index = client(module, url)
    for hl, needle in [
        ({"fields": {"body": {"fragment_size": -3}}}, "fragment_size"),
        ({"fields": {"body": {}}, "number_of_fragments": "many"}, "number_of_fragments"),
        ({"fields": {"body": {}}, "type": "fvh"}, "type"),
        ({"fields": {"body": {}}, "tags_schema": "styled"}, "tags_schema"),
        ({"fields": 7}, "fields"),
    ]:
        with pytest.raises(es_mod.BadRequestError) as e:
            es.search(index=index, query={"match": {"body": "oil"}}, highlight=hl)
        assert needle in str(e.value), (hl, str(e.value))
