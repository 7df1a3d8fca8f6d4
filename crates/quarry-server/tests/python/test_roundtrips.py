"""Delete/update by query, searches over several indexes, aliases and explanations through the
official Elasticsearch Python clients (9.x and 8.x), and 400s naming what is wrong.

Scores over several indexes must equal those of one index holding all their documents
(quarry always sums BM25 statistics over the indexes searched, Elasticsearch's
dfs_query_then_fetch); an explanation's top value must equal the hit's score."""
import importlib
import tempfile

import pytest

from test_clients import reuters, start_server, stop_server

N = 1200
MAPPINGS = {
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "text"},
        "body": {"type": "text"},
        "date": {"type": "keyword"},
        "topics": {"type": "keyword"},
    }
}
# The same fields and one more: a different mapping (searched through the statistics path).
OTHER_MAPPINGS = {"properties": {**MAPPINGS["properties"], "extra": {"type": "keyword"}}}
QUERIES = [
    {"match": {"body": "oil prices"}},
    {"match": {"body": {"query": "crude oil exports", "operator": "or"}}},
    {"bool": {"must": [{"match": {"body": "wheat"}}], "should": [{"match": {"title": "grain"}}]}},
    {"match_phrase": {"body": "crude oil"}},
    {"multi_match": {"query": "cocoa", "fields": ["title", "body"]}},
]


@pytest.fixture(scope="module")
def server():
    data = tempfile.mkdtemp(prefix="quarry-roundtrips-test-")
    proc, url = start_server(data)
    docs = list(reuters(N))
    yield url, docs
    stop_server(proc)


def client(module, url):
    es_mod = importlib.import_module(module)
    helpers = importlib.import_module(module + ".helpers")
    return es_mod, helpers, es_mod.Elasticsearch(url, request_timeout=120)


def load(es, helpers, index, docs, mappings=MAPPINGS):
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, mappings=mappings, settings={"refresh_interval": "-1"})
    actions = ({"_index": index, "_id": str(d["id"]), "_source": d} for d in docs)
    ok, errors = helpers.bulk(es, actions, chunk_size=500)
    assert ok == len(docs) and not errors
    es.indices.refresh(index=index)


def scores(r):
    return {(h["_id"]): h["_score"] for h in r["hits"]["hits"]}


def close(a, b):
    return abs(a - b) <= 1e-5 * max(1.0, abs(b))


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_delete_and_update_by_query(server, module):
    url, docs = server
    es_mod, helpers, es = client(module, url)
    index = "dbq-" + module
    load(es, helpers, index, docs[:600])
    grain = es.count(index=index, query={"term": {"topics": "grain"}})["count"]
    assert grain > 0
    r = es.delete_by_query(index=index, query={"term": {"topics": "grain"}}, refresh=True)
    assert r["deleted"] == grain and r["total"] == grain and r["failures"] == []
    assert r["version_conflicts"] == 0 and r["batches"] == 1 and r["noops"] == 0
    assert es.count(index=index, query={"term": {"topics": "grain"}})["count"] == 0
    assert es.count(index=index)["count"] == 600 - grain
    # q= and max_docs
    r = es.delete_by_query(index=index, q="body:oil", max_docs=3, refresh=True)
    assert r["deleted"] == 3
    assert es.count(index=index)["count"] == 600 - grain - 3
    # A document changed after the last refresh is a version conflict.
    hit = es.search(index=index, query={"match": {"body": "coffee"}}, size=1)["hits"]["hits"][0]
    es.index(index=index, id=hit["_id"], document={**hit["_source"], "title": "changed"})
    coffee = es.count(index=index, query={"match": {"body": "coffee"}})["count"]
    with pytest.raises(es_mod.ConflictError) as e:
        es.delete_by_query(index=index, query={"match": {"body": "coffee"}})
    body = e.value.body
    assert body["version_conflicts"] == 1 and body["failures"][0]["id"] == hit["_id"]
    assert body["deleted"] == coffee - 1
    es.indices.refresh(index=index)
    # update_by_query without a script re-indexes unchanged; conflicts=proceed counts them.
    before = es.get(index=index, id=hit["_id"])
    r = es.update_by_query(index=index, query={"ids": {"values": [hit["_id"]]}}, refresh=True,
                           conflicts="proceed")
    assert r["updated"] == 1 and r["version_conflicts"] == 0
    after = es.get(index=index, id=hit["_id"])
    assert after["_version"] == before["_version"] + 1 and after["_source"] == before["_source"]
    for call, name in [
        (lambda: es.update_by_query(index=index, script={"source": "ctx._source.x = 1"}), "script"),
        (lambda: es.delete_by_query(index=index, query={"match_all": {}}, conflicts="maybe"), "conflicts"),
        (lambda: es.delete_by_query(index=index, query={"nope": {}}), "nope"),
        (lambda: es.delete_by_query(index=index, query={"match_all": {}}, scroll="1m"), "scroll"),
    ]:
        with pytest.raises(es_mod.BadRequestError) as e:
            call()
        assert name in str(e.value)
    with pytest.raises(es_mod.NotFoundError):
        es.delete_by_query(index="no-such-index", query={"match_all": {}})
    es.indices.delete(index=index)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_search_over_several_indexes_scores_as_one(server, module):
    url, docs = server
    es_mod, helpers, es = client(module, url)
    one, a, b, c = (f"{p}-{module}" for p in ("all", "part-a", "part-b", "part-c"))
    load(es, helpers, one, docs)
    load(es, helpers, a, docs[:500])
    load(es, helpers, b, docs[500:900])
    load(es, helpers, c, docs[900:], mappings=OTHER_MAPPINGS)
    home = {str(d["id"]): (a if i < 500 else b if i < 900 else c) for i, d in enumerate(docs)}
    for q in QUERIES:
        want = es.search(index=one, query=q, size=20, track_total_hits=True)
        for target in [f"{a},{b},{c}", f"part-*-{module}", [a, b, c]]:
            got = es.search(index=target, query=q, size=20, track_total_hits=True)
            assert got["hits"]["total"] == want["hits"]["total"], (q, target)
            assert got["_shards"]["total"] == 3
            ws, gs = scores(want), scores(got)
            assert list(gs) == list(ws), (q, target)
            for i in ws:
                assert close(gs[i], ws[i]), (q, target, i)
            for h in got["hits"]["hits"]:
                assert h["_index"] == home[h["_id"]], (q, h)
    # Same mappings: searched as one index, with sort and aggs.
    two = es.search(index=f"{a},{b}", size=5, sort=[{"id": "desc"}],
                    aggs={"t": {"terms": {"field": "topics", "size": 3}}})
    ids = sorted((int(d["id"]) for d in docs[:900]), reverse=True)[:5]
    assert [h["sort"][0] for h in two["hits"]["hits"]] == ids
    counts = {}
    for d in docs[:900]:
        topics = d.get("topics") or []
        for t in set(topics if isinstance(topics, list) else [topics]):
            counts[t] = counts.get(t, 0) + 1
    buckets = {bk["key"]: bk["doc_count"] for bk in two["aggregations"]["t"]["buckets"]}
    assert buckets and all(counts[k] == v for k, v in buckets.items())
    assert min(buckets.values()) >= sorted(counts.values())[-3]
    assert es.count(index=f"{a},{b},{c}")["count"] == len(docs)
    assert es.count(index=f"part-*-{module},-{c}")["count"] == 900
    # Different mappings: sort over them is a 400 naming it.
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index=f"{a},{c}", sort=[{"id": "desc"}])
    assert "[sort]" in str(e.value)
    # Missing indexes: 404, unless ignore_unavailable; a wildcard matching nothing is empty
    # unless allow_no_indices=false.
    with pytest.raises(es_mod.NotFoundError):
        es.search(index=f"{a},nope-{module}")
    r = es.search(index=f"{a},nope-{module}", ignore_unavailable=True, size=0)
    assert r["hits"]["total"]["value"] == 500
    r = es.search(index=f"nothing-{module}-*", size=0)
    assert r["hits"]["total"]["value"] == 0 and r["_shards"]["total"] == 0
    with pytest.raises(es_mod.NotFoundError):
        es.search(index=f"nothing-{module}-*", allow_no_indices=False)
    # All indexes, and _msearch headers with several indexes.
    r = es.search(query={"match": {"body": "oil"}}, size=0)
    assert r["hits"]["total"]["value"] >= es.count(index=one, query={"match": {"body": "oil"}})["count"] * 2
    r = es.msearch(searches=[{"index": [a, b, c]}, {"query": QUERIES[0], "size": 20},
                             {"index": one}, {"query": QUERIES[0], "size": 20}])
    m, single = r["responses"]
    assert m["status"] == 200 and list(scores(m)) == list(scores(single))
    for i, s in scores(single).items():
        assert close(scores(m)[i], s)
    for i in (one, a, b, c):
        es.indices.delete(index=i)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_aliases(module):
    """Aliases: actions, put/delete/get, reads and writes through them, and persistence across
    a restart (this test starts and stops its own server)."""
    es_mod = importlib.import_module(module)
    data = tempfile.mkdtemp(prefix="quarry-alias-test-")
    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        for i in ("logs-1", "logs-2"):
            es.indices.create(index=i, mappings={"properties": {"msg": {"type": "text"}}})
        es.index(index="logs-1", id="a", document={"msg": "disk full"}, refresh=True)
        es.index(index="logs-2", id="b", document={"msg": "disk ok"}, refresh=True)
        assert es.indices.update_aliases(actions=[
            {"add": {"index": "logs-1", "alias": "logs"}},
            {"add": {"indices": ["logs-2"], "aliases": ["logs", "recent"]}},
        ])["acknowledged"]
        es.indices.put_alias(index="logs-2", name="current")
        assert es.indices.exists_alias(name="logs")
        assert not es.indices.exists_alias(name="nope")
        got = es.indices.get_alias(name="logs")
        assert set(got) == {"logs-1", "logs-2"}
        assert es.indices.get_alias(index="logs-2")["logs-2"]["aliases"].keys() == {"logs", "recent", "current"}
        assert es.indices.get_alias()["logs-1"]["aliases"] == {"logs": {}}
        with pytest.raises(es_mod.NotFoundError):
            es.indices.get_alias(name="nope")
        # Reads through an alias: search and count over both, get through a one-index alias.
        assert es.count(index="logs", query={"match": {"msg": "disk"}})["count"] == 2
        assert {h["_index"] for h in es.search(index="logs")["hits"]["hits"]} == {"logs-1", "logs-2"}
        assert es.get(index="current", id="b")["_index"] == "logs-2"
        # _mget through an alias names the index it reached, as a get does.
        got = es.mget(index="current", ids=["b", "zz"])["docs"]
        assert [(d["_index"], d["_id"], d["found"]) for d in got] == [
            ("logs-2", "b", True), ("logs-2", "zz", False)]
        got = es.mget(docs=[{"_index": "current", "_id": "b"}, {"_index": "logs-1", "_id": "a"},
                            {"_index": "no-such", "_id": "a"}])["docs"]
        assert [d["_index"] for d in got] == ["logs-2", "logs-1", "no-such"]
        assert got[0]["_source"] == {"msg": "disk ok"} and "error" in got[2]
        # Writes: one index → it; several without a write index → 400 naming the alias.
        r = es.index(index="current", id="c", document={"msg": "new"}, refresh=True)
        assert r["_index"] == "logs-2"
        with pytest.raises(es_mod.BadRequestError) as e:
            es.index(index="logs", id="d", document={"msg": "x"})
        assert "[logs]" in str(e.value)
        es.indices.update_aliases(actions=[{"add": {"index": "logs-1", "alias": "logs", "is_write_index": True}}])
        assert es.index(index="logs", id="d", document={"msg": "x"})["_index"] == "logs-1"
        assert es.indices.get_alias(name="logs")["logs-1"]["aliases"]["logs"] == {"is_write_index": True}
        # Bad input: 400 or 404 naming it.
        with pytest.raises(es_mod.BadRequestError) as e:
            es.indices.update_aliases(actions=[{"add": {"index": "logs-1", "alias": "x", "filter": {"match_all": {}}}}])
        assert "filter" in str(e.value)
        with pytest.raises(es_mod.BadRequestError) as e:
            es.indices.put_alias(index="logs-1", name="logs-2")
        assert "logs-2" in str(e.value)
        with pytest.raises(es_mod.NotFoundError):
            es.indices.put_alias(index="no-such-index", name="y")
        with pytest.raises(es_mod.BadRequestError):
            es.indices.create(index="recent")
        with pytest.raises(es_mod.NotFoundError):
            es.indices.delete_alias(index="logs-1", name="recent")
        es.indices.delete_alias(index="logs-2", name="recent")
        assert not es.indices.exists_alias(name="recent")
    finally:
        stop_server(proc)
    # The aliases survive a restart; deleting an index removes it from its aliases.
    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        assert set(es.indices.get_alias(name="logs")) == {"logs-1", "logs-2"}
        assert es.indices.get_alias(name="current") == {"logs-2": {"aliases": {"current": {}}}}
        assert es.count(index="logs")["count"] == 4
        es.indices.delete(index="logs-2")
        assert not es.indices.exists_alias(name="current")
        assert set(es.indices.get_alias(name="logs")) == {"logs-1"}
        es.indices.update_aliases(actions=[{"remove_index": {"index": "logs-1"}}])
        assert not es.indices.exists(index="logs-1")
        assert not es.indices.exists_alias(name="logs")
    finally:
        stop_server(proc)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_explain(server, module):
    url, docs = server
    es_mod, helpers, es = client(module, url)
    index = "explain-" + module
    load(es, helpers, index, docs[:800])
    for q in QUERIES:
        r = es.search(index=index, query=q, size=5, explain=True)
        for h in r["hits"]["hits"]:
            e = h["_explanation"]
            assert close(e["value"], h["_score"]), (q, h["_id"])
            one = es.explain(index=index, id=h["_id"], query=q)
            assert one["matched"] and close(one["explanation"]["value"], h["_score"])
            assert one["explanation"] == e
    r = es.search(index=index, query={"match": {"body": "cocoa"}}, size=1, explain=True)
    e = r["hits"]["hits"][0]["_explanation"]
    assert e["description"].startswith("weight(body:cocoa in ") and e["description"].endswith(
        ") [BM25Similarity], result of:")
    score = e["details"][0]
    assert score["description"].startswith("score(freq=")
    assert [d["description"].split(",")[0] for d in score["details"]] == ["idf", "tf"]
    assert [d["description"] for d in score["details"][0]["details"]] == [
        "n, number of documents containing term", "N, total number of documents with field"]
    # A document the query does not match, and one that does not exist.
    miss = es.search(index=index, query={"bool": {"must_not": {"match": {"body": "cocoa"}}}}, size=1)
    doc = miss["hits"]["hits"][0]["_id"]
    r = es.explain(index=index, id=doc, query={"match": {"body": "cocoa"}})
    assert not r["matched"] and r["explanation"]["value"] == 0
    with pytest.raises(es_mod.NotFoundError):
        es.explain(index=index, id="no-such-doc", query={"match_all": {}})
    with pytest.raises(es_mod.BadRequestError) as e:
        es.explain(index=index, id=doc, query={"nope": {}})
    assert "nope" in str(e.value)
    es.indices.delete(index=index)
