"""quarry.ray and vectors: exact kNN (plain and filtered) and hybrid search over 2 and 3 shards
give exactly one index's hits and scores, equal scores included (they come in the one index's
order)."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray")
np = pytest.importorskip("numpy")

import quarry  # noqa: E402
from quarry.ray import ShardedSearcher, build_sharded  # noqa: E402

DIMS = 8
N = 400
WORDS = ["wheat", "oil", "grain", "crude", "corn", "gold"]


def schema() -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id")
        .add_keyword_field("tag")
        .add_text_field("body")
        .add_vector_field("embedding", DIMS)
        .build()
    )


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """N documents as JSON Lines and as one index built from them in the same order. Every
    vector of the last quarter repeats one of the first quarter's, so equal scores span shards."""
    rng = np.random.default_rng(17)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors[3 * N // 4 :] = vectors[: N // 4]
    docs = [
        {
            "id": i,
            "tag": "even" if i % 2 == 0 else "odd",
            "body": f"{WORDS[i % 6]} {WORDS[(i // 5) % 6]}",
            "embedding": [float(x) for x in vectors[i]],
        }
        for i in range(N)
    ]
    root = tmp_path_factory.mktemp("vectors")
    src = root / "docs.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    index = quarry.Index.create(root / "single", schema())
    with index.writer(threads=1) as w:
        w.add_many(docs)
    return src, index, vectors


def ranked(result) -> list[tuple[float, int]]:
    return [(h.score, h.fields["id"]) for h in result]


@pytest.mark.parametrize("shards", [2, 3])
def test_sharded_knn_and_hybrid_equal_one_index(local_ray, corpus, tmp_path, shards):
    src, index, vectors = corpus
    build_sharded(src, tmp_path / "s", shards=shards, schema=schema())
    single = index.searcher()
    queries = list(np.random.default_rng(5).standard_normal((6, DIMS)).astype(np.float32))
    queries.append(vectors[10])  # ties: documents 10 and 310 have this vector
    with ShardedSearcher(tmp_path / "s") as sharded:
        for q in queries:
            for k in (1, 10, 40):
                want = single.knn("embedding", q, k=k, exact=True)
                got = sharded.knn("embedding", q, k=k, exact=True)
                assert ranked(got) == ranked(want)
                assert all(h.shard is not None for h in got)
            want = single.knn("embedding", q, k=15, exact=True, filter="tag:odd OR wheat")
            got = sharded.knn("embedding", q, k=15, exact=True, filter="tag:odd OR wheat")
            assert ranked(got) == ranked(want)
            for fusion in ("rrf", "linear"):
                args = {"field": "embedding", "vector": q, "exact": True}
                want = single.hybrid("wheat OR gold", args, limit=15, fusion=fusion)
                got = sharded.hybrid("wheat OR gold", args, limit=15, fusion=fusion)
                assert ranked(got) == ranked(want)
            args = {"field": "embedding", "vector": q.tolist(), "exact": True, "filter": "tag:even", "k": 5}
            want = single.hybrid("crude", args, limit=8, window_size=30, weights=[2.0, 0.5], rank_constant=5)
            got = sharded.hybrid("crude", args, limit=8, window_size=30, weights=[2.0, 0.5], rank_constant=5)
            assert ranked(got) == ranked(want)
        tie = sharded.knn("embedding", vectors[10], k=2, exact=True, fields=["id"])
        assert [h.fields["id"] for h in tie] == [10, 310] and tie[0].score == tie[1].score
        assert tie[0].shard < tie[1].shard
        # Approximate search over shards still finds the nearest (a small index is scanned).
        assert sharded.knn("embedding", vectors[7], k=1)[0].fields["id"] == 7
        # Errors are the single index's.
        with pytest.raises(quarry.QueryError, match='"embedding".*dimensions'):
            sharded.knn("embedding", [1.0, 2.0])
        with pytest.raises(quarry.UnknownFieldError):
            sharded.knn("nope", q)
        with pytest.raises(quarry.InvalidArgumentError, match="fusion"):
            sharded.hybrid("wheat", {"field": "embedding", "vector": q}, fusion="max")
