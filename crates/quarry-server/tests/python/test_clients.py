"""The official Elasticsearch Python clients (9.x as `elasticsearch`, 8.x as `elasticsearch8`)
drive `quarry serve`; search results are compared with the library through `quarry search`."""
import importlib
import json
import os
import re
import subprocess
import tempfile

import pytest
import zstandard  # noqa: F401  (only to fail early with a clear message if missing)
from reuters_corpus import reuters

QUARRY = os.environ["QUARRY_BIN"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
N_DOCS = int(os.environ.get("QUARRY_CLIENT_DOCS", "5000"))

MAPPINGS = {
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "text"},
        "body": {"type": "text"},
        "date": {"type": "keyword"},
        "topics": {"type": "keyword"},
    }
}


@pytest.fixture(scope="module")
def server():
    data = tempfile.mkdtemp(prefix="quarry-server-test-")
    proc = subprocess.Popen(
        [QUARRY, "serve", "--data", data, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line.startswith("quarry listening on "), line
    url = line.split(" on ", 1)[1]
    yield url, data
    proc.terminate()  # SIGTERM: clean shutdown with a final commit
    assert proc.wait(timeout=60) == 0


def library_search(data, index, query, k=10):
    """Top hits of `query` (Lucene syntax over `body`) from the library, via `quarry search`."""
    out = subprocess.run(
        [QUARRY, "search", "--index", os.path.join(data, index, "index"), "--json",
         "--default-field", "body", "--top", str(k), query],
        check=True, capture_output=True, text=True,
    ).stdout
    v = json.loads(out)
    return v["hits"], [(h["doc"]["_id"], h["score"]) for h in v["top"]]


DSL_CASES = [
    ({"match": {"body": "oil prices"}}, "body:(oil prices)"),
    ({"match": {"body": {"query": "oil prices", "operator": "and"}}}, "+body:oil +body:prices"),
    ({"match_phrase": {"body": {"query": "crude oil", "slop": 2}}}, 'body:"crude oil"~2'),
    ({"bool": {"must": [{"match": {"title": "cocoa"}}], "should": [{"match": {"body": "brazil"}}]}},
     "+title:cocoa body:brazil"),
    ({"query_string": {"query": "wheat AND (export OR exports)", "default_field": "body"}},
     "body:wheat AND (body:export OR body:exports)"),
    ({"term": {"topics": "grain"}}, "topics:grain"),
    ({"wildcard": {"body": {"value": "pr?ce*"}}}, "body:pr?ce*"),
    ({"wildcard": {"body": {"wildcard": "ex*rt?"}}}, "body:ex*rt?"),
    ({"regexp": {"body": "pric(e|es|ing)"}}, "body:/pric(e|es|ing)/"),
    ({"fuzzy": {"body": {"value": "pirces", "fuzziness": 1}}}, "body:pirces~1"),
    ({"fuzzy": {"body": "tarde"}}, "body:tarde~1"),  # AUTO: 1 edit for 3 to 5 characters
    ({"fuzzy": {"body": {"value": "goverment", "fuzziness": "AUTO", "max_expansions": 5}}},
     None),
    ({"match": {"body": {"query": "oli pirces", "fuzziness": "AUTO"}}}, "body:oli~1 body:pirces~2"),
    ({"multi_match": {"query": "oil", "fields": ["title", "body"], "tie_breaker": 1.0}},
     "title:oil body:oil"),
    # simple_query_string: Lucene's SimpleQueryParser, never a syntax error.
    ({"simple_query_string": {"query": "oil + prices", "fields": ["body"]}}, "+body:oil +body:prices"),
    ({"simple_query_string": {"query": '"crude oil"~2 | opec', "fields": ["body"]}},
     'body:"crude oil"~2 body:opec'),
    ({"simple_query_string": {"query": "cocoa -brazil", "fields": ["body"], "default_operator": "AND"}},
     "+body:cocoa +(-body:brazil *:*)"),
    ({"simple_query_string": {"query": "petro* wheat", "fields": ["title^2", "body"]}},
     "(title:petro*^2 body:petro*) (title:wheat^2 body:wheat)"),
    ({"simple_query_string": {"query": '(wheat | "corn belt" + pirces~1', "fields": ["body"]}},
     '+(body:wheat body:"corn belt") +body:pirces~1'),
    ({"simple_query_string": {"query": "oil -gas", "fields": ["body"], "flags": "OR|AND"}},
     "body:oil body:gas"),
]


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_client_round_trip(server, module):
    es_mod = importlib.import_module(module)
    helpers = importlib.import_module(module + ".helpers")
    url, data = server
    es = es_mod.Elasticsearch(url, request_timeout=120)
    index = "reuters-" + module
    assert es.info()["version"]["build_flavor"] == "default"
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, mappings=MAPPINGS, settings={"refresh_interval": "1s"})
    assert es.indices.exists(index=index)
    assert es.indices.get_mapping(index=index)[index]["mappings"]["properties"]["title"]["type"] == "text"

    actions = ({"_index": index, "_id": str(d["id"]), "_source": d} for d in reuters(N_DOCS))
    ok, errors = helpers.bulk(es, actions, chunk_size=500)
    assert ok == N_DOCS and not errors
    es.indices.refresh(index=index)
    assert es.count(index=index)["count"] == N_DOCS
    es.indices.flush(index=index)  # commit, so that `quarry search` (the library) sees it all

    for dsl, lucene in DSL_CASES:
        if lucene is None:
            r = es.search(index=index, query=dsl, size=10)
            assert r["hits"]["total"]["value"] > 0, dsl
            continue
        r = es.search(index=index, query=dsl, size=10, track_total_hits=True)
        total, top = library_search(data, index, lucene)
        assert r["hits"]["total"] == {"value": total, "relation": "eq"}, dsl
        got = [(h["_id"], h["_score"]) for h in r["hits"]["hits"]]
        assert [g[0] for g in got] == [t[0] for t in top], dsl
        for (_, s1), (_, s2) in zip(got, top):
            assert abs(s1 - s2) <= 1e-6 * max(1.0, abs(s2)), dsl

    r = es.search(index=index, q="title:cocoa", size=3, source=["title"])
    assert len(r["hits"]["hits"]) == 3
    assert set(r["hits"]["hits"][0]["_source"]) == {"title"}

    doc = es.get(index=index, id="1")
    assert doc["found"] and doc["_source"]["title"] == "BAHIA COCOA REVIEW"
    assert not es.exists(index=index, id="no-such-doc")
    r = es.index(index=index, id="new-1", document={"title": "fresh", "body": "brand new text"})
    assert r["result"] == "created"
    assert es.get(index=index, id="new-1")["_source"]["body"] == "brand new text"
    es.indices.refresh(index=index)
    assert es.count(index=index, query={"match": {"body": "brand"}})["count"] >= 1

    r = es.index(index=index, id="new-1", document={"title": "again", "body": "replaced text"})
    assert r["result"] == "updated"
    assert es.update(index=index, id="new-1", doc={"title": "changed"})["result"] == "updated"
    assert es.get(index=index, id="new-1")["_source"] == {"title": "changed", "body": "replaced text"}
    assert es.delete(index=index, id="new-1")["result"] == "deleted"
    assert not es.exists(index=index, id="new-1")
    with pytest.raises(es_mod.NotFoundError):
        es.delete(index=index, id="new-1")
    es.indices.refresh(index=index)
    assert es.count(index=index)["count"] == N_DOCS
    with pytest.raises(es_mod.NotFoundError):
        es.search(index="no-such-index", query={"match_all": {}})
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index=index, query={"fuzzy": {"body": {"value": "oil", "fuzzyness": 1}}})
    assert "fuzzyness" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index=index, query={"regexp": {"body": "pric(e"}})
    assert "expected ')'" in str(e.value)
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index=index, query={"simple_query_string": {"query": "oil", "flags": "OR|NEARLY"}})
    assert "[NEARLY]" in str(e.value)
    check_compound_queries(es, index)
    check_phrase_prefix(es, es_mod, index)
    r = es.search(index=index, query={"range": {"id": {"gte": 3, "lt": 10}}}, sort=["id"], size=20)
    assert [h["_id"] for h in r["hits"]["hits"]] == [str(i) for i in range(3, 10)]

    es.indices.delete(index=index)
    assert not es.indices.exists(index=index)


def check_compound_queries(es, index):
    """`constant_score`, `terms` and `ids` score a constant; `dis_max` (and `multi_match`
    best_fields) takes the best field; `boosting` demotes what the negative query matches."""
    r = es.search(index=index, query={"constant_score": {"filter": {"term": {"topics": "grain"}}, "boost": 2}})
    grain = es.count(index=index, query={"term": {"topics": "grain"}})["count"]
    assert r["hits"]["total"]["value"] == grain
    assert {h["_score"] for h in r["hits"]["hits"]} == {2.0}
    r = es.search(index=index, query={"terms": {"topics": ["grain", "wheat"]}})
    assert {h["_score"] for h in r["hits"]["hits"]} == {1.0}
    r = es.search(index=index, query={"ids": {"values": ["1", "2"]}})
    assert sorted(h["_id"] for h in r["hits"]["hits"]) == ["1", "2"]
    assert {h["_score"] for h in r["hits"]["hits"]} == {1.0}

    both = {"query": "oil", "fields": ["title", "body"]}
    best = es.search(index=index, query={"multi_match": both}, size=50)
    summed = es.search(index=index, query={"multi_match": {**both, "type": "most_fields"}}, size=50)
    assert best["hits"]["total"] == summed["hits"]["total"]
    title = {h["_id"]: h["_score"] for h in es.search(index=index, query={"match": {"title": "oil"}}, size=10000)["hits"]["hits"]}
    body = {h["_id"]: h["_score"] for h in es.search(index=index, query={"match": {"body": "oil"}}, size=10000)["hits"]["hits"]}
    for h in best["hits"]["hits"]:
        want = max(title.get(h["_id"], 0.0), body.get(h["_id"], 0.0))
        assert abs(h["_score"] - want) <= 1e-5 * want, h
    dm = es.search(index=index, query={"dis_max": {"queries": [{"match": {"title": "oil"}}, {"match": {"body": "oil"}}],
                                                   "tie_breaker": 0.3}}, size=50)
    for h in dm["hits"]["hits"]:
        a, b = title.get(h["_id"], 0.0), body.get(h["_id"], 0.0)
        want = max(a, b) + 0.3 * min(a, b)
        assert abs(h["_score"] - want) <= 1e-5 * want, h

    gas = {h["_id"] for h in es.search(index=index, query={"match": {"body": "gas"}}, size=10000)["hits"]["hits"]}
    r = es.search(index=index, query={"boosting": {"positive": {"match": {"body": "oil"}},
                                                   "negative": {"match": {"body": "gas"}},
                                                   "negative_boost": 0.5}}, size=10000)
    assert r["hits"]["total"]["value"] == len(body)
    for h in r["hits"]["hits"]:
        want = body[h["_id"]] * (0.5 if h["_id"] in gas else 1.0)
        assert abs(h["_score"] - want) <= 1e-5 * want, h


def check_phrase_prefix(es, es_mod, index):
    """`match_phrase_prefix`: the phrase with its last word as a prefix (Elasticsearch's
    MultiPhrasePrefixQuery, scored as Lucene's MultiPhraseQuery)."""
    phrase = es.search(index=index, query={"match_phrase": {"body": "crude oil"}}, size=10000)
    # One expansion of `oil` (the smallest term with that prefix: itself) is the phrase.
    one = es.search(index=index, query={"match_phrase_prefix": {"body": {"query": "crude oil", "max_expansions": 1}}},
                    size=10000)
    assert one["hits"]["total"] == phrase["hits"]["total"]
    want = {h["_id"]: h["_score"] for h in phrase["hits"]["hits"]}
    for h in one["hits"]["hits"]:
        assert abs(h["_score"] - want[h["_id"]]) <= 1e-6 * want[h["_id"]], h
    # `oi` expands to oil, oils, oilseeds...: every phrase match and more, each one holding
    # `crude` then a word starting with `oi`.
    r = es.search(index=index, query={"match_phrase_prefix": {"body": "Crude oi"}}, size=10000)
    got = {h["_id"] for h in r["hits"]["hits"]}
    assert set(want) <= got and r["hits"]["total"]["value"] == len(got)
    for h in r["hits"]["hits"]:
        assert re.search(r"\bcrude\W+oi", h["_source"]["body"], re.IGNORECASE), h["_id"]
    # Short form, slop and boost.
    short = es.search(index=index, query={"match_phrase_prefix": {"body": "crude oi"}}, size=10)
    boosted = es.search(index=index, query={"match_phrase_prefix": {"body": {"query": "crude oi", "boost": 2}}},
                        size=10)
    assert [h["_id"] for h in short["hits"]["hits"]] == [h["_id"] for h in boosted["hits"]["hits"]]
    for a, b in zip(short["hits"]["hits"], boosted["hits"]["hits"]):
        assert abs(2 * a["_score"] - b["_score"]) <= 1e-5 * b["_score"]
    sloppy = es.search(index=index, query={"match_phrase_prefix": {"body": {"query": "crude oi", "slop": 2}}},
                       track_total_hits=True)
    assert sloppy["hits"]["total"]["value"] >= len(got)
    # Nothing starts with the last word: no match.
    r = es.search(index=index, query={"match_phrase_prefix": {"body": "crude qqzzx"}})
    assert r["hits"]["total"]["value"] == 0
    with pytest.raises(es_mod.BadRequestError) as e:
        es.search(index=index, query={"match_phrase_prefix": {"body": {"query": "oil", "max_expansion": 5}}})
    assert "max_expansion" in str(e.value)


def start_server(data):
    proc = subprocess.Popen(
        [QUARRY, "serve", "--data", data, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line.startswith("quarry listening on "), line
    return proc, line.split(" on ", 1)[1]


def stop_server(proc):
    proc.terminate()
    assert proc.wait(timeout=60) == 0


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_versions_conflicts_health_and_refusals(module):
    """Real _version / _seq_no / _primary_term, conflicts as ConflictError, figures of
    _cluster/health and _cat/indices, refresh=wait_for, 400s for what quarry lacks, and the
    values surviving a restart (this test starts and stops its own server)."""
    es_mod = importlib.import_module(module)
    data = tempfile.mkdtemp(prefix="quarry-truth-test-")
    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        info = es.info()
        assert info["version"]["build_flavor"] == "default" and info["tagline"]
        assert "quarry" in info and info["quarry"]["version"]
        es.indices.create(index="books", mappings={"properties": {"title": {"type": "text"}}},
                          settings={"refresh_interval": "200ms"})
        r = es.index(index="books", id="1", document={"title": "dune"})
        assert (r["_version"], r["_seq_no"], r["_primary_term"]) == (1, 0, 1)
        r = es.index(index="books", id="1", document={"title": "dune messiah"})
        assert (r["_version"], r["_seq_no"]) == (2, 1)
        with pytest.raises(es_mod.ConflictError):
            es.index(index="books", id="1", document={"title": "x"}, if_seq_no=0, if_primary_term=1)
        r = es.index(index="books", id="1", document={"title": "children of dune"},
                     if_seq_no=1, if_primary_term=1)
        assert (r["_version"], r["_seq_no"]) == (3, 2)
        with pytest.raises(es_mod.ConflictError):
            es.create(index="books", id="1", document={"title": "x"})
        r = es.index(index="books", id="ext", document={"title": "e"}, version=5, version_type="external")
        assert r["_version"] == 5
        with pytest.raises(es_mod.ConflictError):
            es.index(index="books", id="ext", document={"title": "e"}, version=5, version_type="external")
        r = es.index(index="books", id="ext", document={"title": "f"}, version=5, version_type="external_gte")
        assert r["_version"] == 5
        r = es.index(index="books", id="2", document={"title": "emma"}, refresh="wait_for")
        assert es.count(index="books")["count"] == 3
        r = es.delete(index="books", id="2", refresh=True)
        assert (r["result"], r["_version"]) == ("deleted", 2)
        last_seq = r["_seq_no"]
        assert last_seq == 6
        doc = es.get(index="books", id="1")
        assert (doc["_version"], doc["_seq_no"], doc["_primary_term"]) == (3, 2, 1)

        health = es.cluster.health()
        assert health["status"] == "green" and health["active_primary_shards"] == 1
        es.indices.create(index="rep", settings={"number_of_replicas": 1})
        health = es.cluster.health()
        assert health["status"] == "yellow" and health["unassigned_shards"] == 1
        rows = {r["index"]: r for r in es.cat.indices(format="json", bytes="b")}
        # Deleted documents as in Elasticsearch: the delete of "2" and the three overwrites
        # (two of "1", one of "ext") until a merge reclaims them.
        assert rows["books"]["docs.count"] == "2" and rows["books"]["docs.deleted"] == "4"
        assert int(rows["books"]["store.size"]) > 0
        assert rows["rep"]["health"] == "yellow"

        with pytest.raises(es_mod.BadRequestError) as e:
            es.index(index="books", id="1", document={}, routing="a")
        assert "routing" in str(e.value.info)
        with pytest.raises(es_mod.BadRequestError) as e:
            es.perform_request("GET", "/_search_shards", headers={"accept": "application/json"})
        assert "no handler found" in str(e.value.info)
        with pytest.raises(es_mod.BadRequestError):
            es.indices.create(index="m", mappings={"_source": {"enabled": False}})
    finally:
        stop_server(proc)

    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        doc = es.get(index="books", id="1")
        assert (doc["_version"], doc["_seq_no"], doc["_primary_term"]) == (3, 2, 1)
        r = es.index(index="books", id="1", document={"title": "again"})
        assert (r["_version"], r["_seq_no"], r["_primary_term"]) == (4, last_seq + 1, 2)
        with pytest.raises(es_mod.ConflictError):
            es.delete(index="books", id="1", if_seq_no=r["_seq_no"], if_primary_term=1)
    finally:
        stop_server(proc)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_health_of_missing_index_and_unknown_parameters(module):
    """`_cluster/health/{index}` for a missing index waits up to `timeout` for it and then
    answers 408 with a red health (as Elasticsearch does); an index created during the wait
    ends it at once. URL parameters an endpoint does not implement get a 400 naming them,
    `_search` and `_count` included; what the clients send by default passes."""
    import threading
    import time

    es_mod = importlib.import_module(module)
    data = tempfile.mkdtemp(prefix="quarry-health-test-")
    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        es.indices.create(index="books", mappings={"properties": {"title": {"type": "text"},
                                                                  "year": {"type": "long"}}})
        es.index(index="books", id="1", document={"title": "dune", "year": 1965}, refresh=True)

        # The clients raise ApiError on a 408; ignore_status lets the body through.
        start = time.monotonic()
        with pytest.raises(es_mod.ApiError) as e:
            es.cluster.health(index="nope", timeout="0s")
        assert e.value.meta.status == 408
        assert e.value.body["status"] == "red" and e.value.body["timed_out"] is True
        assert time.monotonic() - start < 5
        start = time.monotonic()
        r = es.options(ignore_status=408).cluster.health(index=["books", "nope"], timeout="500ms")
        assert r.meta.status == 408 and time.monotonic() - start >= 0.5
        assert r["status"] == "red" and r["active_primary_shards"] == 0
        r = es.cluster.health(index="books", timeout="0s")
        assert r.meta.status == 200 and r["status"] == "green" and not r["timed_out"]

        creator = threading.Timer(0.5, lambda: es.indices.create(index="late"))
        creator.start()
        start = time.monotonic()
        r = es.cluster.health(index="late", timeout="30s")
        creator.join()
        assert r["status"] == "green" and r["active_primary_shards"] == 1
        assert 0.4 <= time.monotonic() - start < 10

        with pytest.raises(es_mod.BadRequestError) as e:
            es.cluster.health(index="nope", timeout=-1)
        assert "[timeout]" in str(e.value.info)

        # The clients' own parameters quarry lacks, refused by name.
        for call, name in [
            (lambda: es.search(index="books", routing="a"), "routing"),
            (lambda: es.search(index="books", preference="_local"), "preference"),
            (lambda: es.search(index="books", query={"match_all": {}}, filter_path="hits.hits._id"),
             "filter_path"),
            (lambda: es.count(index="books", min_score=1.0), "min_score"),
            (lambda: es.indices.refresh(index="books", ignore_unavailable=True), "ignore_unavailable"),
            (lambda: es.indices.delete(index="books", timeout="1s"), "timeout"),
            (lambda: es.indices.get(index="books", include_defaults=True), "include_defaults"),
        ]:
            with pytest.raises(es_mod.BadRequestError) as e:
                call()
            assert f"unrecognized parameter: [{name}]" in str(e.value.info), e.value.info
        assert es.indices.exists(index="books")
        r = es.search(index="books", q="dune", df="title", size=5, version=True)
        assert r["hits"]["hits"][0]["_version"] == 1
        assert es.count(index="books", q="title:dune")["count"] == 1
        # A sort with a colon goes in the URL (the clients cannot put it in the body).
        r = es.search(index="books", sort="year:desc", track_scores=True)
        assert r["hits"]["hits"][0]["sort"] == [1965]
    finally:
        stop_server(proc)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_mget_and_msearch(module):
    """`mget` answers each document in order (a missing one `found: false`, a missing index
    an `error` in its place, `_source` filtered); `msearch` answers each search as `search`
    would, with a bad search and a missing index failing only their own entries."""
    es_mod = importlib.import_module(module)
    data = tempfile.mkdtemp(prefix="quarry-multi-test-")
    proc, url = start_server(data)
    try:
        es = es_mod.Elasticsearch(url, request_timeout=60)
        mappings = {"properties": {"title": {"type": "text"}, "year": {"type": "long"}}}
        es.indices.create(index="books", mappings=mappings)
        es.indices.create(index="films", mappings=mappings)
        es.index(index="books", id="1", document={"title": "dune", "year": 1965})
        es.index(index="books", id="2", document={"title": "the dispossessed", "year": 1974})
        es.index(index="films", id="1", document={"title": "dune", "year": 2021}, refresh=True)

        r = es.mget(docs=[
            {"_index": "films", "_id": "1"},
            {"_index": "books", "_id": "9"},
            {"_index": "nope", "_id": "1"},
            {"_index": "books", "_id": "2", "_source": ["year"]},
        ])
        docs = r["docs"]
        assert [d["_id"] for d in docs] == ["1", "9", "1", "2"]
        assert docs[0]["found"] and docs[0]["_source"] == {"title": "dune", "year": 2021}
        assert docs[1] == {"_index": "books", "_id": "9", "found": False}
        assert docs[2]["error"]["type"] == "index_not_found_exception"
        assert docs[3]["_source"] == {"year": 1974} and docs[3]["_version"] == 1
        r = es.mget(index="books", ids=["2", "1"], source_excludes=["year"])
        assert [d["_source"] for d in r["docs"]] == [{"title": "the dispossessed"}, {"title": "dune"}]
        r = es.mget(index="books", ids=["1"], realtime=False, refresh=True, source_includes="title")
        assert r["docs"][0]["found"] and r["docs"][0]["_source"] == {"title": "dune"}
        assert es.get(index="books", id="2", realtime=True, source_excludes="title")["_source"] == {"year": 1974}
        with pytest.raises(es_mod.BadRequestError) as e:
            es.mget(docs=[{"_id": "1"}])
        assert "index is missing for doc 0" in str(e.value.info)

        search = {"query": {"match": {"title": "dune"}}, "aggs": {"y": {"max": {"field": "year"}}}}
        r = es.msearch(searches=[
            {"index": "books"}, search,
            {"index": "books"}, {"query": {"nonsense": {}}},
            {"index": "nope"}, {},
            {"index": "films"}, search,
        ])
        rs = r["responses"]
        assert [x["status"] for x in rs] == [200, 400, 404, 200]
        alone = es.search(index="books", **search)
        assert rs[0]["hits"]["hits"] == alone["hits"]["hits"]
        assert rs[0]["aggregations"] == alone["aggregations"]
        assert "nonsense" in rs[1]["error"]["reason"]
        assert rs[2]["error"]["type"] == "index_not_found_exception"
        assert rs[3]["hits"]["hits"][0]["_index"] == "films"
        assert rs[3]["aggregations"]["y"]["value"] == 2021
        r = es.msearch(index="books", searches=[{}, {"size": 0}, {"index": "films"}, {}])
        assert [x["hits"]["total"]["value"] for x in r["responses"]] == [2, 1]
    finally:
        stop_server(proc)
