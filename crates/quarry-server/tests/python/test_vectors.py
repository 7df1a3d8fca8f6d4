"""Dense vectors through the official Elasticsearch Python clients (9.x and 8.x): dense_vector
mappings, vectors in documents, knn searches (alone, several, beside a query, filtered, with a
similarity threshold) checked against a brute-force computation in plain Python, retrievers
(standard, knn, rrf, linear, nested), Elasticsearch's documented RRF example with its documented
scores, and bad input that gets a 400 naming it."""
import importlib
import math
import random
import tempfile

import pytest

from test_clients import start_server, stop_server

N = 400
DIMS = 8
WORDS = ["oil", "wheat", "gold", "coffee", "sugar"]


@pytest.fixture(scope="module")
def url():
    data = tempfile.mkdtemp(prefix="quarry-vectors-test-")
    proc, url = start_server(data)
    yield url
    stop_server(proc)


def docs():
    rnd = random.Random(20261129)
    out = {}
    for i in range(N):
        out[str(i)] = {
            "v": [round(rnd.uniform(-1, 1), 4) for _ in range(DIMS)],
            "c": [round(rnd.uniform(-1, 1), 4) for _ in range(DIMS)],
            "body": " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(1, 4))),
            "tag": "even" if i % 2 == 0 else "odd",
        }
    return out


DOCS = docs()

MAPPINGS = {"properties": {
    "v": {"type": "dense_vector", "dims": DIMS, "similarity": "l2_norm",
          "index_options": {"type": "hnsw", "m": 8, "ef_construction": 64}},
    "c": {"type": "dense_vector", "dims": DIMS, "similarity": "cosine", "index": True,
          "index_options": {"type": "int8_hnsw"}},
    "d": {"type": "dense_vector", "dims": DIMS, "similarity": "max_inner_product",
          "index_options": {"type": "flat"}},
    "u": {"type": "dense_vector", "dims": DIMS, "similarity": "dot_product",
          "index_options": {"type": "int8_flat"}},
    "body": {"type": "text"},
    "tag": {"type": "keyword"},
}}


def client(module, url):
    from elasticsearch import helpers as helpers9
    from elasticsearch8 import helpers as helpers8

    es_mod = importlib.import_module(module)
    es = es_mod.Elasticsearch(url, request_timeout=120)
    index = "vec-" + module
    if not es.indices.exists(index=index):
        es.indices.create(index=index, mappings=MAPPINGS)
        helpers = helpers9 if module == "elasticsearch" else helpers8
        items = list(DOCS.items())
        # Two batches with a refresh between: two segments.
        for part in (items[: N // 2], items[N // 2:]):
            actions = ({"_index": index, "_id": i, "_source": dict(d, d=d["v"], u=unit(d["v"]))}
                       for i, d in part)
            ok, errors = helpers.bulk(es, actions, chunk_size=200)
            assert ok == len(part) and not errors
            es.indices.refresh(index=index)
    return es_mod, es, index


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


# Elasticsearch's scores, computed by brute force.
def l2_score(a, b):
    return 1.0 / (1.0 + sum((x - y) ** 2 for x, y in zip(a, b)))


def cosine_score(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return (1.0 + dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))) / 2.0


def mip_score(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return 1.0 / (1.0 - dot) if dot < 0 else dot + 1.0


def dot_score(a, b):
    return max(0.0, (1.0 + sum(x * y for x, y in zip(a, b))) / 2.0)


def brute(field, q, score, keep=lambda i, d: True):
    vec = {"d": lambda d: d["v"], "u": lambda d: unit(d["v"])}.get(field, lambda d: d[field])
    return sorted(((i, score(vec(d), q)) for i, d in DOCS.items() if keep(i, d)),
                  key=lambda x: -x[1])


def ranking(r):
    return [(h["_id"], h["_score"]) for h in r["hits"]["hits"]]


def assert_ranking(got, want, n=None):
    """`got` is `n` hits (default: all of `want`) with the scores of `want`'s first `n`, in
    order; an id may differ from `want`'s only where another document of `want` (which may be
    longer) has the same score."""
    n = len(want) if n is None else n
    assert len(got) == n, (got, want[:n])
    for (gid, gs), (wid, ws) in zip(got, want):
        assert abs(gs - ws) <= 1e-5 * max(1.0, abs(ws)), (got, want[:n])
        if gid != wid:
            assert any(i == gid and abs(s - gs) <= 1e-5 for i, s in want), (got, want[:n])


def query_vector(seed):
    rnd = random.Random(seed)
    return [round(rnd.uniform(-1, 1), 3) for _ in range(DIMS)]


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_mapping_and_documents(url, module):
    _, es, index = client(module, url)
    props = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]
    assert props["v"] == {"type": "dense_vector", "dims": DIMS, "index": True,
                          "similarity": "l2_norm",
                          "index_options": {"type": "hnsw", "m": 8, "ef_construction": 64}}
    assert props["c"]["index_options"]["type"] == "int8_hnsw"
    assert props["d"]["index_options"] == {"type": "flat"}
    assert props["u"]["index_options"] == {"type": "int8_flat"}
    assert props["u"]["similarity"] == "dot_product"
    got = es.get(index=index, id="7")["_source"]
    assert got["v"] == DOCS["7"]["v"]
    assert es.count(index=index)["count"] == N


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_knn_matches_brute_force(url, module):
    _, es, index = client(module, url)
    for seed in range(3):
        q = query_vector(seed)
        for field, score in (("v", l2_score), ("c", cosine_score), ("d", mip_score),
                             ("u", dot_score)):
            qv = unit(q) if field == "u" else q
            r = es.search(index=index, knn={"field": field, "query_vector": qv, "k": 10,
                                            "num_candidates": 1000}, source=False)
            assert_ranking(ranking(r), brute(field, qv, score), 10)
            assert r["hits"]["total"]["value"] == 10
    q = query_vector(9)
    # size and from page through the k best.
    r = es.search(index=index, knn={"field": "v", "query_vector": q, "k": 10, "num_candidates": 1000},
                  size=4, from_=3)
    assert_ranking(ranking(r), brute("v", q, l2_score)[3:10], 4)
    # A filter (a list of queries) and a similarity threshold, in l2_norm's units: a distance.
    r = es.search(index=index, size=100, knn={
        "field": "v", "query_vector": q, "k": 100, "num_candidates": 1000,
        "filter": [{"term": {"tag": "even"}}, {"match": {"body": "oil"}}], "similarity": 2.5})
    want = brute("v", q, l2_score, lambda i, d: int(i) % 2 == 0 and "oil" in d["body"].split()
                 and l2_score(d["v"], q) >= 1.0 / (1.0 + 2.5 * 2.5) - 1e-7)
    assert 0 < len(want) < 100
    assert_ranking(ranking(r), want)
    # The cosine threshold is a cosine, not a _score.
    r = es.search(index=index, size=100, knn={"field": "c", "query_vector": q, "k": 100,
                                              "num_candidates": 1000, "similarity": 0.5})
    want = [x for x in brute("c", q, cosine_score) if x[1] >= 0.75 - 1e-7]
    assert 0 < len(want) < 100
    assert_ranking(ranking(r), want)
    # Default k is size; num_candidates defaults to 1.5 k (approximate, but k hits).
    r = es.search(index=index, size=7, knn={"field": "v", "query_vector": q})
    assert len(r["hits"]["hits"]) == 7


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_knn_sections_and_query_sum(url, module):
    _, es, index = client(module, url)
    q1, q2 = query_vector(21), query_vector(22)
    # Several knn sections: each contributes its k best, scores summed per document.
    r = es.search(index=index, size=25, knn=[
        {"field": "v", "query_vector": q1, "k": 15, "num_candidates": 1000, "boost": 0.5},
        {"field": "c", "query_vector": q2, "k": 15, "num_candidates": 1000}])
    want = {}
    for i, s in brute("v", q1, l2_score)[:15]:
        want[i] = want.get(i, 0.0) + 0.5 * s
    for i, s in brute("c", q2, cosine_score)[:15]:
        want[i] = want.get(i, 0.0) + s
    assert r["hits"]["total"]["value"] == len(want)
    assert_ranking(ranking(r), sorted(want.items(), key=lambda x: -x[1]), 25)
    # knn beside a query: the union, a document found by both scores the sum.
    text = es.search(index=index, query={"match": {"body": "gold"}}, size=N)
    text_scores = {h["_id"]: h["_score"] for h in text["hits"]["hits"]}
    assert len(text_scores) > 50
    r = es.search(index=index, query={"match": {"body": "gold"}}, size=20,
                  knn={"field": "v", "query_vector": q1, "k": 10, "num_candidates": 1000, "boost": 4})
    combined = dict(text_scores)
    for i, s in brute("v", q1, l2_score)[:10]:
        combined[i] = combined.get(i, 0.0) + 4 * s
    assert r["hits"]["total"]["value"] == len(combined)
    assert_ranking(ranking(r), sorted(combined.items(), key=lambda x: -x[1]), 20)
    both = [i for i, _ in brute("v", q1, l2_score)[:10] if i in text_scores]
    assert both, "the test needs documents found by both"


def rrf(lists, constant, window):
    out = {}
    for lst in lists:
        for rank, (i, _) in enumerate(lst[:window], 1):
            out[i] = out.get(i, 0.0) + 1.0 / (constant + rank)
    return sorted(out.items(), key=lambda x: (-x[1]))


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_retrievers(url, module):
    _, es, index = client(module, url)
    q = query_vector(31)
    text = ranking(es.search(index=index, query={"match": {"body": "wheat sugar"}}, size=N))
    knn = brute("v", q, l2_score)
    knn_retriever = {"knn": {"field": "v", "query_vector": q, "k": 40, "num_candidates": 1000}}
    standard = {"standard": {"query": {"match": {"body": "wheat sugar"}}}}
    # rrf with the default rank_constant (60) and rank_window_size (size).
    r = es.search(index=index, size=10, retriever={"rrf": {"retrievers": [standard, knn_retriever]}})
    assert_ranking(ranking(r), rrf([text, knn[:40]], 60, 10), 10)
    r = es.search(index=index, size=10, from_=5, retriever={"rrf": {
        "retrievers": [standard, knn_retriever], "rank_constant": 5, "rank_window_size": 30}})
    assert_ranking(ranking(r), rrf([text, knn[:40]], 5, 30)[5:30], 10)
    # linear with weights and normalizers.
    def l2norm(lst):
        n = math.sqrt(sum(s * s for _, s in lst))
        return [(i, s / n) for i, s in lst]

    r = es.search(index=index, size=10, retriever={"linear": {"rank_window_size": 25, "retrievers": [
        {"retriever": standard, "weight": 1.5, "normalizer": "l2_norm"},
        {"retriever": knn_retriever, "weight": 3, "normalizer": "l2_norm"}]}})
    want = {}
    for w, lst in ((1.5, l2norm(text[:25])), (3.0, l2norm(knn[:25]))):
        for i, s in lst:
            want[i] = want.get(i, 0.0) + w * s
    assert_ranking(ranking(r), sorted(want.items(), key=lambda x: -x[1]), 10)
    # A standard retriever with a filter; a knn retriever alone.
    r = es.search(index=index, size=N, retriever={"standard": {
        "query": {"match": {"body": "wheat"}}, "filter": {"term": {"tag": "odd"}}}})
    assert r["hits"]["hits"] and all(int(h["_id"]) % 2 == 1 for h in r["hits"]["hits"])
    r = es.search(index=index, size=5, retriever=knn_retriever)
    assert_ranking(ranking(r), knn, 5)
    # Nested: rrf of a linear and a knn.
    inner = {"linear": {"rank_window_size": 20, "retrievers": [
        {"retriever": standard, "weight": 1, "normalizer": "minmax"},
        {"retriever": knn_retriever, "weight": 1, "normalizer": "minmax"}]}}
    r = es.search(index=index, size=10, retriever={"rrf": {"rank_window_size": 20, "retrievers": [
        inner, {"knn": {"field": "c", "query_vector": q, "k": 20, "num_candidates": 1000}}]}})
    def minmax(lst):
        lo, hi = min(s for _, s in lst), max(s for _, s in lst)
        return [(i, (s - lo) / (hi - lo)) for i, s in lst]
    lin = {}
    for lst in (minmax(text[:20]), minmax(knn[:20])):
        for i, s in lst:
            lin[i] = lin.get(i, 0.0) + s
    lin = sorted(lin.items(), key=lambda x: -x[1])[:20]
    want = rrf([lin, brute("c", q, cosine_score)[:20]], 60, 20)[:10]
    got = ranking(r)
    assert [round(s, 5) for _, s in got] == [round(s, 5) for _, s in want], (got, want)


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_elasticsearch_documented_rrf_example(url, module):
    """The "Reciprocal rank fusion full example" of Elasticsearch's RRF documentation, with the
    scores and aggregation that page documents."""
    es_mod = importlib.import_module(module)
    es = es_mod.Elasticsearch(url, request_timeout=60)
    index = "example-index-" + module
    es.indices.create(index=index, mappings={"properties": {
        "text": {"type": "text"},
        "vector": {"type": "dense_vector", "dims": 1, "index": True, "similarity": "l2_norm",
                   "index_options": {"type": "hnsw"}},
        "integer": {"type": "integer"}}})
    es.index(index=index, id="1", document={"text": "rrf", "vector": [5], "integer": 1})
    es.index(index=index, id="2", document={"text": "rrf rrf", "vector": [4], "integer": 2})
    es.index(index=index, id="3", document={"text": "rrf rrf rrf", "vector": [3], "integer": 1})
    es.index(index=index, id="4", document={"text": "rrf rrf rrf rrf", "integer": 2})
    es.index(index=index, id="5", document={"vector": [0], "integer": 1})
    es.indices.refresh(index=index)
    r = es.search(index=index, retriever={"rrf": {"retrievers": [
        {"standard": {"query": {"term": {"text": "rrf"}}}},
        {"knn": {"field": "vector", "query_vector": [3], "k": 5, "num_candidates": 5}}],
        "rank_window_size": 5, "rank_constant": 1}},
        size=3, aggs={"int_count": {"terms": {"field": "integer"}}})
    assert [h["_id"] for h in r["hits"]["hits"]] == ["3", "2", "4"]
    for h, documented in zip(r["hits"]["hits"], [0.8333334, 0.5833334, 0.5]):
        assert abs(h["_score"] - documented) < 1e-6, r
    assert r["hits"]["hits"][0]["_source"] == {"text": "rrf rrf rrf", "vector": [3], "integer": 1}
    assert r["hits"]["total"] == {"value": 5, "relation": "eq"}
    assert r["aggregations"]["int_count"]["buckets"] == [
        {"key": 1, "doc_count": 3}, {"key": 2, "doc_count": 2}]
    # The two rankings the page shows before fusing them.
    r = es.search(index=index, query={"term": {"text": "rrf"}})
    assert [h["_id"] for h in r["hits"]["hits"]] == ["4", "3", "2", "1"]
    r = es.search(index=index, knn={"field": "vector", "query_vector": [3], "k": 5, "num_candidates": 5})
    assert_ranking(ranking(r), [("3", 1.0), ("2", 0.5), ("1", 0.2), ("5", 0.1)])


def bad(es_mod, call, needle):
    with pytest.raises(es_mod.BadRequestError) as e:
        call()
    assert e.value.meta.status == 400
    assert needle in str(e.value.body["error"]["reason"]), e.value.body


@pytest.mark.parametrize("module", ["elasticsearch", "elasticsearch8"])
def test_bad_input_is_400_naming_it(url, module):
    es_mod, es, index = client(module, url)
    q = query_vector(1)
    for mapping, needle in (
        ({"type": "dense_vector", "dims": 5000}, "dims"),
        ({"type": "dense_vector", "dims": 3, "element_type": "bit"}, "bit"),
        ({"type": "dense_vector", "dims": 3, "index_options": {"type": "bbq_hnsw"}}, "bbq_hnsw"),
        ({"type": "dense_vector", "dims": 3, "similarity": "l1"}, "l1"),
        ({"type": "dense_vector", "dims": 3, "shape": "round"}, "shape"),
    ):
        bad(es_mod, lambda: es.indices.create(index="bad-" + module,
                                              mappings={"properties": {"x": mapping}}), needle)
    bad(es_mod, lambda: es.index(index=index, id="x", document={"v": [1, 2]}), "v")
    bad(es_mod, lambda: es.index(index=index, id="x", document={"v": ["a"] * DIMS}), "v")
    bad(es_mod, lambda: es.index(index=index, id="x", document={"v": [1e39] * DIMS}), "v")
    knn = {"field": "v", "query_vector": q, "k": 5, "num_candidates": 10}
    for extra, needle in (
        ({"query_vector": [1, 2]}, "dimensions"),
        ({"field": "body"}, "[body]"),
        ({"field": "nope"}, "[nope]"),
        ({"k": 20}, "num_candidates"),
        ({"num_candidates": 10001}, "10000"),
        ({"k": 0}, "[k]"),
        ({"colour": 1}, "colour"),
        ({"query_vector": [1] * (DIMS - 1) + ["x"]}, "query_vector"),
    ):
        bad(es_mod, lambda: es.search(index=index, knn=dict(knn, **extra)), needle)
    bad(es_mod, lambda: es.search(index=index, retriever={"knn": knn}, query={"match_all": {}}),
        "[query]")
    bad(es_mod, lambda: es.search(index=index, retriever={"knn": knn}, knn=knn), "[knn]")
    bad(es_mod, lambda: es.search(index=index, retriever={"rrf": {"retrievers": [{"knn": knn}],
                                                                  "rank_constant": 0}}), "rank_constant")
    bad(es_mod, lambda: es.search(index=index, retriever={"linear": {"retrievers": [
        {"retriever": {"knn": knn}, "weight": -1}]}}), "weight")
    bad(es_mod, lambda: es.search(index=index, retriever={"text_similarity_reranker": {}}),
        "text_similarity_reranker")
    bad(es_mod, lambda: es.count(index=index, body={"knn": knn}), "knn")
