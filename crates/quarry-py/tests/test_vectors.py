"""Dense vectors from Python: vector fields, kNN (exact against a NumPy brute force, HNSW recall,
filters, deletions), hybrid fusion computed by hand, NumPy input, errors, and the stub's
signatures."""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

import quarry  # noqa: E402

STUB = Path(quarry.__file__).with_name("_quarry.pyi")
DIMS = 16


def vector_schema(similarity: str = "cosine", index: str = "hnsw", dims: int = DIMS) -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id")
        .add_keyword_field("tag")
        .add_text_field("body")
        .add_vector_field("embedding", dims, similarity=similarity, index=index)
        .build()
    )


def random_vectors(n: int, dims: int = DIMS, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)


WORDS = ["wheat", "oil", "grain", "crude", "corn", "gold"]


def build(tmp_path: Path, vectors: np.ndarray, batches: int = 3, **schema_args) -> quarry.Index:
    """An index of ``vectors`` (doc ``id`` i has vector i), committed in ``batches`` parts so it
    has several segments; ``tag`` is even/odd, ``body`` two words."""
    index = quarry.Index.create(tmp_path / "idx", vector_schema(dims=vectors.shape[1], **schema_args))
    n = len(vectors)
    bounds = [i * n // batches for i in range(batches + 1)]
    for lo, hi in zip(bounds, bounds[1:]):
        with index.writer(threads=1) as w:
            for i in range(lo, hi):
                w.add(
                    {
                        "id": i,
                        "tag": "even" if i % 2 == 0 else "odd",
                        "body": f"{WORDS[i % len(WORDS)]} {WORDS[(i // 3) % len(WORDS)]}",
                        "embedding": vectors[i],
                    }
                )
    return index


def brute_force(vectors: np.ndarray, q: np.ndarray, similarity: str = "cosine") -> np.ndarray:
    """Elasticsearch's score of every vector for ``q``."""
    x = vectors.astype(np.float64)
    qq = q.astype(np.float64)
    if similarity == "cosine":
        cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (qq / np.linalg.norm(qq))
        return (1 + cos) / 2
    if similarity == "l2_norm":
        return 1 / (1 + ((x - qq) ** 2).sum(axis=1))
    raise AssertionError(similarity)


def top_ids(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[int]:
    order = np.argsort(-scores, kind="stable")
    if allowed is not None:
        order = [i for i in order if allowed[i]]
    return [int(i) for i in order[:k]]


def test_schema_builder_vector_field():
    schema = vector_schema()
    f = schema.fields[-1]
    assert f["name"] == "embedding" and f["type"] == "vector" and f["dims"] == DIMS
    assert (f["similarity"], f["element_type"], f["index"], f["m"], f["ef_construction"]) == (
        "cosine", "float32", "hnsw", 16, 100
    )
    same = quarry.Schema.from_json(schema.to_json())
    assert same == schema
    written = quarry.Schema.from_json(
        '{"fields": [{"name": "id", "type": "integer"}, {"name": "tag", "type": "keyword"},'
        ' {"name": "body", "type": "text"},'
        ' {"name": "embedding", "type": "vector", "dims": 16, "similarity": "cosine"}]}'
    )
    assert written == schema
    flat = quarry.SchemaBuilder().add_vector_field(
        "v", 3, similarity="l2_norm", element_type="int8", index="hnsw", m=8, ef_construction=50,
        stored=False,
    ).build().fields[0]
    assert (flat["similarity"], flat["element_type"], flat["m"], flat["ef_construction"], flat["stored"]) == (
        "l2_norm", "int8", 8, 50, False
    )
    assert quarry.SchemaBuilder().add_vector_field("v", 3, index="flat").build().fields[0]["index"] == "flat"
    for kwargs, word in [
        ({"similarity": "euclid"}, "similarity"),
        ({"element_type": "float16"}, "element_type"),
        ({"index": "ivf"}, "index"),
        ({"m": 1}, "m"),
    ]:
        with pytest.raises(quarry.SchemaError, match=f"vec.*{word}"):
            quarry.SchemaBuilder().add_vector_field("vec", 3, **kwargs).build()
    with pytest.raises(quarry.SchemaError, match='"vec".*dims'):
        quarry.SchemaBuilder().add_vector_field("vec", 0).build()
    with pytest.raises(quarry.SchemaError, match="dims"):
        quarry.SchemaBuilder().add_vector_field("vec", 4097).build()


@pytest.mark.parametrize("similarity", ["cosine", "l2_norm"])
def test_exact_knn_equals_numpy_brute_force(tmp_path, similarity):
    vectors = random_vectors(600)
    index = build(tmp_path, vectors, similarity=similarity)
    s = index.searcher()
    assert s.num_segments >= 2
    queries = random_vectors(20, seed=99)
    for q in queries:
        want = brute_force(vectors, q, similarity)
        for exact in (True, False):
            r = s.knn("embedding", q, k=10, exact=exact, num_candidates=600 if not exact else None)
            got = [h.fields["id"] for h in r]
            if exact:
                assert got == top_ids(want, 10)
            else:
                # A beam as wide as the index finds the exact answer too.
                assert got == top_ids(want, 10)
            for h in r:
                assert math.isclose(h.score, want[h.fields["id"]], rel_tol=1e-5), (h.score, want[h.fields["id"]])
            assert r.count == 10 and r.count_exact
            assert [h.score for h in r] == sorted((h.score for h in r), reverse=True)


def test_list_and_numpy_query_and_stored_vector(tmp_path):
    vectors = random_vectors(50)
    index = build(tmp_path, vectors, batches=1)
    s = index.searcher()
    q = vectors[3]
    a = s.knn("embedding", q, k=5, exact=True)
    b = s.knn("embedding", q.tolist(), k=5, exact=True)
    c = s.knn("embedding", tuple(q.astype(np.float64)), k=5, exact=True)
    d = s.knn("embedding", q.astype(np.float64), k=5, exact=True)
    assert [(h.score, h.doc) for h in a] == [(h.score, h.doc) for h in b] == [(h.score, h.doc) for h in c] == [(h.score, h.doc) for h in d]
    assert a[0].fields["id"] == 3
    # The stored vector comes back as given (float32 values).
    assert np.array_equal(np.asarray(a[0].fields["embedding"], dtype=np.float32), vectors[3])
    assert set(s.knn("embedding", q, k=2, fields=["id"])[0].fields) == {"id"}
    assert s.knn("embedding", q, k=2, fields=[])[0].fields == {}
    assert len(s.knn("embedding", q, k=0)) == 0


def test_numpy_input_read_through_the_buffer(tmp_path):
    vectors = random_vectors(8, dims=4)
    index = quarry.Index.create(tmp_path / "i", vector_schema(dims=4))
    big = np.ascontiguousarray(np.repeat(vectors, 2, axis=1))  # columns 0, 0, 1, 1, ...
    readonly = np.frombuffer(vectors[1].tobytes(), dtype=np.float32)
    assert not readonly.flags.writeable
    with index.writer(threads=1) as w:
        w.add({"id": 0, "embedding": vectors[0]})  # C-contiguous float32
        w.add({"id": 1, "embedding": readonly})  # a read-only buffer
        w.add({"id": 2, "embedding": big[2, ::2]})  # strided: copied in order
        w.add({"id": 3, "embedding": memoryview(vectors[3])})  # any float32 buffer
        w.add({"id": 4, "embedding": vectors[4].astype(np.float64)})  # converted
        w.add({"id": 5, "embedding": vectors[5].tolist()})
        w.add({"id": 6, "embedding": None})  # no vector
        w.add({"id": 7})
    s = index.searcher()
    stored = {h.fields["id"]: h.fields.get("embedding") for h in s.search("*:*", limit=10)}
    for i in range(6):
        assert np.array_equal(np.asarray(stored[i], dtype=np.float32), vectors[i]), i
    assert stored[6] is None and stored[7] is None
    for i in range(6):
        assert s.knn("embedding", vectors[i], k=1, exact=True)[0].fields["id"] == i
    assert len(s.knn("embedding", vectors[0], k=10)) == 6  # documents without a vector are not hits


def test_bad_vectors_raise_naming_the_field(tmp_path):
    index = quarry.Index.create(tmp_path / "i", vector_schema(dims=3))
    bad = [
        ([1.0, 2.0], "2 values.*3 dimensions"),
        ([1.0, float("nan"), 0.0], "finite"),
        ([1.0, float("inf"), 0.0], "finite"),
        ([0.0, 0.0, 0.0], "zero"),
        ("abc", "expected a vector"),
        (["a", 1.0, 2.0], "value 0 .* not a number"),
        ([True, 1.0, 2.0], "value 0 .* not a number"),
        (np.ones((1, 3), dtype=np.float32), "1-D"),
        (np.ones(3, dtype=np.int64), "astype"),
        (7, "expected a vector"),
    ]
    with index.writer(threads=1) as w:
        for value, msg in bad:
            with pytest.raises(quarry.DocumentError, match=msg) as e:
                w.add({"id": 1, "embedding": value})
            assert e.value.field == "embedding"
            assert "embedding" in str(e.value)
        w.add({"id": 1, "embedding": [1.0, 0.0, 0.0], "body": "x"})
    s = index.searcher()
    with pytest.raises(quarry.QueryError, match='"embedding".*2 values.*3 dimensions'):
        s.knn("embedding", [1.0, 0.0])
    with pytest.raises(quarry.QueryError, match='"embedding".*not a finite'):
        s.knn("embedding", np.array([1.0, np.nan, 0.0], dtype=np.float32))
    with pytest.raises(quarry.QueryError, match='"embedding".*not a number'):
        s.knn("embedding", ["x", 0.0, 0.0])
    with pytest.raises(quarry.QueryError, match='"body" is a text field, not a vector field'):
        s.knn("body", [1.0, 0.0, 0.0])
    with pytest.raises(quarry.UnknownFieldError) as e:
        s.knn("nope", [1.0, 0.0, 0.0])
    assert e.value.field == "nope"
    with pytest.raises(quarry.QueryError, match="num_candidates"):
        s.knn("embedding", [1.0, 0.0, 0.0], k=5, num_candidates=2)
    with pytest.raises(quarry.QuerySyntaxError):
        s.knn("embedding", [1.0, 0.0, 0.0], filter="body:(")
    with pytest.raises(quarry.InvalidArgumentError, match="fusion"):
        s.hybrid("x", {"field": "embedding", "vector": [1.0, 0.0, 0.0]}, fusion="sum")
    with pytest.raises(quarry.InvalidArgumentError, match="normalization"):
        s.hybrid("x", {"field": "embedding", "vector": [1.0, 0.0, 0.0]}, fusion="linear", normalization="z")
    with pytest.raises(quarry.InvalidArgumentError, match="vectr"):
        s.hybrid("x", {"field": "embedding", "vectr": [1.0, 0.0, 0.0]})
    with pytest.raises(quarry.QueryError, match='"embedding".*2 values'):
        s.hybrid("x", {"field": "embedding", "vector": [1.0, 0.0]})


def test_hnsw_recall_on_random_vectors(tmp_path):
    vectors = random_vectors(3000, dims=24, seed=1)
    index = build(tmp_path, vectors, batches=2)
    s = index.searcher()
    queries = random_vectors(40, dims=24, seed=2)
    found = 0
    for q in queries:
        want = set(top_ids(brute_force(vectors, q), 10))
        exact = {h.fields["id"] for h in s.knn("embedding", q, k=10, exact=True)}
        assert exact == want
        approx = {h.fields["id"] for h in s.knn("embedding", q, k=10, num_candidates=100)}
        found += len(approx & want)
    recall = found / (10 * len(queries))
    assert recall >= 0.95, recall


def test_filtered_knn_returns_only_filter_matches(tmp_path):
    vectors = random_vectors(1200)
    index = build(tmp_path, vectors)
    s = index.searcher()
    even = np.arange(len(vectors)) % 2 == 0
    for q in random_vectors(10, seed=5):
        want = top_ids(brute_force(vectors, q), 10, allowed=even)
        for exact in (True, False):
            r = s.knn("embedding", q, k=10, filter="tag:even", exact=exact, num_candidates=50)
            ids = [h.fields["id"] for h in r]
            assert len(ids) == 10 and all(i % 2 == 0 for i in ids), ids
            if exact:
                assert ids == want
        # A query object works as a filter too, and a filter matching few documents still
        # gives every match.
        few = s.parse("id:[0 TO 6] AND tag:odd")
        assert sorted(h.fields["id"] for h in s.knn("embedding", q, k=10, filter=few)) == [1, 3, 5]


def test_deleted_documents_never_come_back(tmp_path):
    vectors = random_vectors(800)
    index = build(tmp_path, vectors)
    q = random_vectors(1, seed=11)[0]
    nearest = top_ids(brute_force(vectors, q), 20)
    with index.writer(threads=1) as w:
        for i in nearest[:10]:
            w.delete(("id", i))
    s = index.searcher()
    for exact in (True, False):
        r = s.knn("embedding", q, k=10, exact=exact, num_candidates=800 if not exact else None)
        ids = [h.fields["id"] for h in r]
        assert not set(ids) & set(nearest[:10])
        assert ids == nearest[10:20]
    r = s.knn("embedding", q, k=10, filter="tag:even", exact=True)
    assert not {h.fields["id"] for h in r} & set(nearest[:10])
    # After a merge the deleted documents are gone for good.
    with index.writer(threads=1) as w:
        w.force_merge(1)
    s = index.searcher()
    assert [h.fields["id"] for h in s.knn("embedding", q, k=10, exact=True)] == nearest[10:20]


def test_hybrid_rrf_and_linear_by_hand(tmp_path):
    vectors = random_vectors(300)
    index = build(tmp_path, vectors, batches=2)
    s = index.searcher()
    text = "wheat OR oil"
    window = 20
    t = s.search(text, limit=window, mode="top")
    # A query vector near a document of the text ranking, so that both rankings share one.
    q = vectors[t[5].fields["id"]] + 0.01 * random_vectors(1, seed=3)[0]
    k = s.knn("embedding", q, k=window, exact=True)
    assert len(t) == window and len(k) == window
    knn_args = {"field": "embedding", "vector": q, "exact": True}

    def by_hand(parts):
        fused: dict = {}
        for weight, hits in parts:
            for rank, h in enumerate(hits, start=1):
                fused[h.doc] = fused.get(h.doc, 0.0) + weight(rank, h)
        return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))

    want = by_hand([(lambda r, h: 1 / (60 + r), t), (lambda r, h: 1 / (60 + r), k)])
    got = s.hybrid(text, knn_args, limit=10, window_size=window)
    assert len(got) == 10 and got.count == 10
    assert [h.doc for h in got] == [d for d, _ in want[:10]]
    for h, (_, score) in zip(got, want):
        assert math.isclose(h.score, score, rel_tol=1e-6)
    # Some document is in both rankings, so fusion matters.
    assert set(h.doc for h in t) & set(h.doc for h in k)

    # Weights and rank constant.
    want = by_hand([(lambda r, h: 2.0 / (10 + r), t), (lambda r, h: 0.5 / (10 + r), k)])
    got = s.hybrid(text, knn_args, limit=10, window_size=window, rank_constant=10, weights=(2.0, 0.5))
    assert [h.doc for h in got] == [d for d, _ in want[:10]]
    for h, (_, score) in zip(got, want):
        assert math.isclose(h.score, score, rel_tol=1e-6)

    # Linear with min-max normalization.
    def minmax(hits):
        lo, hi = min(h.score for h in hits), max(h.score for h in hits)
        return lambda r, h: (h.score - lo) / (hi - lo)

    want = by_hand([(minmax(t), t), (minmax(k), k)])
    got = s.hybrid(text, knn_args, limit=10, window_size=window, fusion="linear")
    for h, (d, score) in zip(got, want):
        assert math.isclose(h.score, score, rel_tol=1e-5, abs_tol=1e-6), (h.doc, d)

    # L2 normalization.
    def l2(hits):
        norm = math.sqrt(sum(h.score**2 for h in hits))
        return lambda r, h: h.score / norm

    want = by_hand([(l2(t), t), (l2(k), k)])
    got = s.hybrid(text, knn_args, limit=10, window_size=window, fusion="linear", normalization="l2")
    for h, (d, score) in zip(got, want):
        assert math.isclose(h.score, score, rel_tol=1e-5), (h.doc, d)

    # A filter in knn= applies to the kNN ranking only.
    got = s.hybrid("gold", {"field": "embedding", "vector": q, "filter": "tag:odd", "exact": True}, limit=50)
    kn = s.knn("embedding", q, k=50, filter="tag:odd", exact=True)
    gold = s.search("gold", limit=50, mode="top")
    assert {h.doc for h in got} <= {h.doc for h in kn} | {h.doc for h in gold}


def test_fuse_matches_hybrid(tmp_path):
    vectors = random_vectors(200)
    index = build(tmp_path, vectors, batches=1)
    s = index.searcher()
    q = vectors[0]
    t = s.search("grain", limit=10, mode="top")
    k = s.knn("embedding", q, k=10, exact=True)
    rankings = [[(h.doc, h.score) for h in t], [(h.doc, h.score) for h in k]]
    for fusion in ("rrf", "linear"):
        got = s.hybrid("grain", {"field": "embedding", "vector": q, "exact": True}, limit=10, fusion=fusion)
        fused = quarry.fuse(rankings, fusion=fusion, window_size=10)[:10]
        assert [(h.doc, h.score) for h in got] == [(tuple(d), sc) for d, sc in fused]
    with pytest.raises(quarry.InvalidArgumentError, match="weights"):
        quarry.fuse(rankings, weights=[1.0])


def test_searches_release_the_gil(tmp_path):
    import threading

    vectors = random_vectors(2000, dims=64)
    index = build(tmp_path, vectors, batches=1)
    s = index.searcher()
    queries = random_vectors(8, dims=64, seed=4)
    want = [[h.doc for h in s.knn("embedding", q, k=5, exact=True)] for q in queries]
    got: dict[int, list] = {}

    def run(i):
        got[i] = [h.doc for h in s.knn("embedding", queries[i], k=5, exact=True)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(queries))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [got[i] for i in range(len(queries))] == want


def _stub_signatures() -> dict[str, list[str]]:
    tree = ast.parse(STUB.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = [a.arg for a in node.args.args]
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = [a.arg for a in item.args.args]
    return out


@pytest.mark.parametrize(
    "name", ["SchemaBuilder.add_vector_field", "Searcher.knn", "Searcher.hybrid", "fuse"]
)
def test_stub_matches_the_module(name):
    """The .pyi stub declares the vector API with the native signatures' parameters and
    defaults."""
    stub = _stub_signatures()[name]
    obj = quarry
    for part in name.split("."):
        obj = getattr(obj, part)
    sig = inspect.signature(obj)
    params = [p for p in sig.parameters if p not in ("self", "$self")]
    assert [p for p in stub if p != "self"] == params
    tree = ast.parse(STUB.read_text())
    defaults = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name.split(".")[-1]:
            args = node.args.args
            for a, d in zip(args[len(args) - len(node.args.defaults):], node.args.defaults):
                defaults[a.arg] = ast.literal_eval(d)
    for p in sig.parameters.values():
        if p.default is not inspect.Parameter.empty:
            assert defaults.get(p.name, "missing") == p.default, p.name
