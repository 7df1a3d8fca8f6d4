"""Text embedded by the server, through the official Elasticsearch Python clients (9.x and 8.x):
a model registered with the data directory (`quarry models add --data`), listed by
GET _inference; a `semantic_text` field and a `dense_vector` field with `embed`; documents
embedded at `_bulk`; the `semantic` query, `knn` with `query_vector_builder`, an `rrf`
retriever over a text query and the semantic highlighter, compared with the library (`quarry search --semantic --json` on the
same index directory); unknown model ids, fields without a model and damaged model files as
4xx naming them; an acknowledged write that survives `kill -9`.

The model comes from QUARRY_TEST_MODEL_DIR (scripts/test.sh sets it from scripts/fetch-model.sh);
without it the tests skip, except under CI where they fail."""
import importlib
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from reuters_corpus import reuters
from test_clients import QUARRY, start_server, stop_server

N = 120
QUESTIONS = ["which countries export wheat?", "oil prices fell", "central bank interest rates"]


def model_dir():
    d = os.environ.get("QUARRY_TEST_MODEL_DIR")
    if d:
        return d
    if os.environ.get("CI"):
        pytest.fail("QUARRY_TEST_MODEL_DIR is not set under CI; scripts/test.sh sets it (scripts/fetch-model.sh)")
    pytest.skip("set QUARRY_TEST_MODEL_DIR to the directory `bash scripts/fetch-model.sh` prints")


MAPPINGS = {"properties": {
    "title": {"type": "text"},
    "body": {"type": "semantic_text", "inference_id": "minilm"},
    "tv": {"type": "dense_vector", "dims": 384, "index_options": {"type": "flat"},
           "embed": {"from": "title", "model": "minilm"}},
}}


@pytest.fixture(scope="module")
def server():
    model = model_dir()
    data = tempfile.mkdtemp(prefix="quarry-semantic-test-")
    subprocess.run([QUARRY, "models", "add", "minilm", model, "--data", data], check=True,
                   capture_output=True)
    proc, url = start_server(data)
    from elasticsearch import Elasticsearch, helpers

    es = Elasticsearch(url, request_timeout=300)
    es.indices.create(index="sem", mappings=MAPPINGS)
    docs = [d for d in reuters(N * 2) if d.get("body") and d.get("title")][:N]
    ok, errors = helpers.bulk(es, ({"_index": "sem", "_id": str(d["id"]),
                                    "_source": {"title": d["title"], "body": d["body"]}}
                                   for d in docs), chunk_size=60)
    assert ok == N and not errors
    es.indices.refresh(index="sem")
    es.indices.flush(index="sem")
    yield {"url": url, "data": data, "proc": proc, "docs": docs}
    if proc.poll() is None:
        stop_server(proc)
    shutil.rmtree(data, ignore_errors=True)


def library(data, *args):
    out = subprocess.run([QUARRY, "search", "--index", os.path.join(data, "sem", "index"), "--json",
                          *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["top"]


def same(es_hits, lib_top):
    assert [h["_id"] for h in es_hits] == [t["doc"]["_id"] for t in lib_top]
    for h, t in zip(es_hits, lib_top):
        assert abs(h["_score"] - t["score"]) <= 1e-5, (h, t)


def client(module, url):
    return importlib.import_module(module).Elasticsearch(url, request_timeout=120)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_inference_endpoints_and_mapping(server, module):
    es = client(module, server["url"])
    r = es.perform_request("GET", "/_inference", headers={"accept": "application/json"}).body
    [ep] = r["endpoints"]
    assert ep["inference_id"] == "minilm" and ep["task_type"] == "text_embedding"
    assert ep["service_settings"]["dimensions"] == 384
    m = es.indices.get_mapping(index="sem")["sem"]["mappings"]["properties"]
    assert m["body"] == {"type": "semantic_text", "inference_id": "minilm"}
    assert m["tv"]["embed"] == {"from": "title", "model": "minilm"}
    assert not any(k.startswith("_inference") for k in m)
    # _source holds the text only, never the computed vectors.
    doc = es.get(index="sem", id=server["docs"][0]["id"])["_source"]
    assert set(doc) == {"title", "body"}


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_semantic_query_and_query_vector_builder_rank_as_the_library(server, module):
    es = client(module, server["url"])
    for q in QUESTIONS:
        r = es.search(index="sem", query={"semantic": {"field": "body", "query": q}}, size=5,
                      source=False)
        assert r["hits"]["hits"], q
        same(r["hits"]["hits"], library(server["data"], "--semantic", "_inference.body", q,
                                        "-k", "5", "--num-candidates", "100"))
        knn = {"field": "tv", "k": 5, "num_candidates": 50,
               "query_vector_builder": {"text_embedding": {"model_id": "minilm", "model_text": q}}}
        r = es.search(index="sem", knn=knn, source=False)
        same(r["hits"]["hits"], library(server["data"], "--semantic", "tv", q, "-k", "5",
                                        "--num-candidates", "50"))
        # The semantic_text field's own name works in a knn section as well.
        knn = {"field": "body", "k": 5, "num_candidates": 100,
               "query_vector_builder": {"text_embedding": {"model_id": "minilm", "model_text": q}}}
        r2 = es.search(index="sem", knn=knn, source=False)
        same(r2["hits"]["hits"], library(server["data"], "--semantic", "_inference.body", q,
                                         "-k", "5", "--num-candidates", "100"))


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_semantic_highlighter_returns_the_passage_that_matched(server, module):
    """Elasticsearch's semantic highlighter (`"type": "semantic"`) returns the text of each hit's
    best passages; the first is the passage that matched, the one the hit's `_passage` names and
    the library names (`quarry search --semantic --json`): the source text at its byte span."""
    es_mod = importlib.import_module(module)
    es = client(module, server["url"])
    bodies = {str(d["id"]): d["body"].encode() for d in server["docs"]}
    highlight = {"fields": {"body": {"type": "semantic", "number_of_fragments": 2, "order": "score"}}}
    for q in QUESTIONS:
        r = es.search(index="sem", query={"semantic": {"field": "body", "query": q}}, size=5,
                      source=False, highlight=highlight)
        lib = library(server["data"], "--semantic", "_inference.body", q, "-k", "5",
                      "--num-candidates", "100")
        same(r["hits"]["hits"], lib)
        for h, t in zip(r["hits"]["hits"], lib):
            p = t["passage"]
            assert h["_passage"] == {"field": "body", "index": p["index"], "start": p["start"],
                                     "end": p["end"]}
            frags = h["highlight"]["body"]
            assert frags[0] == p["text"] == bodies[h["_id"]][p["start"]:p["end"]].decode()
            # A second fragment only for a text of several passages.
            assert len(frags) == (2 if p["end"] - p["start"] < len(bodies[h["_id"]]) else 1), h
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index="sem", query={"semantic": {"field": "body", "query": "wheat"}},
                  highlight={"fields": {"nope": {"type": "semantic"}}})
    assert "field [nope]" in str(e.value) and "semantic highlighter" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index="sem", query={"semantic": {"field": "body", "query": "wheat"}},
                  highlight={"fields": {"body": {"type": "semantic", "number_of_fragments": -2}}})
    assert "[number_of_fragments] of field [body]" in str(e.value)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_rrf_over_a_text_query_fuses_the_two_rankings(server, module):
    es = client(module, server["url"])
    q = "wheat exports"
    window = 10
    bm25 = es.search(index="sem", query={"match": {"title": q}}, size=window, source=False)
    sem = es.search(index="sem", query={"semantic": {"field": "body", "query": q}}, size=window,
                    source=False)
    r = es.search(index="sem", size=5, source=False, retriever={"rrf": {
        "retrievers": [{"standard": {"query": {"match": {"title": q}}}},
                       {"standard": {"query": {"semantic": {"field": "body", "query": q}}}}],
        "rank_window_size": window}})
    expect = {}
    for hits in (bm25["hits"]["hits"], sem["hits"]["hits"]):
        for rank, h in enumerate(hits, 1):
            expect[h["_id"]] = expect.get(h["_id"], 0.0) + 1.0 / (60 + rank)
    got = r["hits"]["hits"]
    assert len(got) == 5
    for h in got:
        assert abs(h["_score"] - expect[h["_id"]]) <= 1e-6, (h, expect[h["_id"]])
    best = sorted(expect.values(), reverse=True)[:5]
    assert [round(h["_score"], 6) for h in got] == [round(s, 6) for s in best]


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_model_errors_are_4xx_naming_them(server, module):
    es_mod = importlib.import_module(module)
    es = client(module, server["url"])
    with pytest.raises(es_mod.NotFoundError) as e:
        es.indices.create(index=f"bad-{module}", mappings={"properties": {
            "t": {"type": "semantic_text", "inference_id": "nope"}}})
    assert "nope" in str(e.value)
    assert not es.indices.exists(index=f"bad-{module}")
    with pytest.raises(es_mod.BadRequestError) as e:
        es.indices.create(index=f"bad-{module}", mappings={"properties": {
            "t": {"type": "text"},
            "v": {"type": "dense_vector", "dims": 3, "embed": {"from": "t", "model": "minilm"}}}})
    assert "[dims]" in str(e.value) and "384" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index="sem", query={"semantic": {"field": "title", "query": "x"}})
    assert "title" in str(e.value) and "no embedding model" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index="sem", knn={"field": "tv", "k": 1, "query_vector_builder": {
            "text_embedding": {"model_id": "other", "model_text": "x"}}})
    assert "other" in str(e.value) and "minilm" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index="sem", query={"bool": {"must": [
            {"semantic": {"field": "body", "query": "x"}}]}})
    assert "semantic" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.index(index="sem", id="x", document={"title": "t", "_inference.body": [0.0] * 384})
    assert "_inference.body" in str(e.value)
    with pytest.raises(es_mod.NotFoundError):
        es.perform_request("GET", "/_inference/text_embedding/nope",
                           headers={"accept": "application/json"})


def test_damaged_models_are_4xx_naming_the_file(server):
    from elasticsearch import BadRequestError, Elasticsearch

    data = server["data"]
    subprocess.run([QUARRY, "models", "add", "damaged", model_dir(), "--data", data], check=True,
                   capture_output=True)
    es = Elasticsearch(server["url"], request_timeout=120)
    es.indices.create(index="dmg", mappings={"properties": {
        "t": {"type": "semantic_text", "inference_id": "damaged"}}})
    # The index's own copy damaged before its first use: the write is refused, nothing logged.
    copy = os.path.join(data, "dmg", "index", "models", "damaged", "tokenizer.json")
    with open(copy, "ab") as f:
        f.write(b" ")
    with pytest.raises(BadRequestError) as e:
        es.index(index="dmg", id="1", document={"t": "wheat"})
    assert "models/damaged/tokenizer.json" in str(e.value), str(e.value)
    with pytest.raises(BadRequestError) as e:
        es.search(index="dmg", query={"semantic": {"field": "t", "query": "wheat"}})
    assert "models/damaged/tokenizer.json" in str(e.value)
    assert es.count(index="dmg")["count"] == 0
    # The data directory's copy damaged: an index cannot be created with it.
    reg = os.path.join(data, "_inference", "models", "damaged", "config.json")
    with open(reg, "ab") as f:
        f.write(b" ")
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="dmg2", mappings={"properties": {
            "t": {"type": "semantic_text", "inference_id": "damaged"}}})
    assert "models/damaged/config.json" in str(e.value)


def test_an_acknowledged_embedded_write_survives_kill_9(server):
    from elasticsearch import Elasticsearch

    data = tempfile.mkdtemp(prefix="quarry-semantic-kill-")
    subprocess.run([QUARRY, "models", "add", "minilm", model_dir(), "--data", data], check=True,
                   capture_output=True)
    proc, url = start_server(data)
    es = Elasticsearch(url, request_timeout=120)
    es.indices.create(index="k", mappings={"properties": {
        "t": {"type": "semantic_text", "inference_id": "minilm"}}},
        settings={"refresh_interval": "-1"})
    es.index(index="k", id="1", document={"t": "Wheat exports rose sharply in March."})
    es.index(index="k", id="2", document={"t": "Crude oil prices fell."})
    proc.kill()
    proc.wait()
    proc, url = start_server(data)
    try:
        es = Elasticsearch(url, request_timeout=120)
        r = es.search(index="k", query={"semantic": {"field": "t", "query": "grain shipments"}},
                      size=2, source=False)
        assert [h["_id"] for h in r["hits"]["hits"]] == ["1", "2"]
    finally:
        stop_server(proc)
        shutil.rmtree(data, ignore_errors=True)
