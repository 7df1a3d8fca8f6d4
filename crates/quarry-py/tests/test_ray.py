"""quarry.ray: Reuters built into 1, 2 and 4 shards by parallel Ray tasks and searched by one
actor per shard with dfs_query_then_fetch gives, for every Lucene oracle query, the single
index's counts and top-10 (ids and scores; equal scores may come in another order)."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray")

import quarry  # noqa: E402
from quarry.ray import ShardedSearcher, build_sharded  # noqa: E402

from conftest import reuters_schema, same_ranking  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_sharded_equals_single_index(local_ray, reuters_jsonl, reuters_index, oracle, tmp_path, shards):
    manifest = build_sharded([reuters_jsonl], tmp_path / "sharded", shards=shards, schema=reuters_schema())
    assert manifest["docs"] == 21578 and len(manifest["shards"]) == shards
    sizes = [s["docs"] for s in manifest["shards"]]
    assert max(sizes) - min(sizes) <= 1
    single = reuters_index.searcher()
    _, queries = oracle
    failures = []
    with ShardedSearcher(tmp_path / "sharded") as sharded:
        assert sharded.num_docs == 21578 and sharded.num_shards == shards
        for q in queries:
            text = q["query"]
            want = single.search(text, limit=10, default_fields=["body"])
            got = sharded.search(text, limit=10, default_fields=["body"])
            if got.count != want.count or got.count != q["hits"]:
                failures.append(f"{text}: count {got.count}, single {want.count}, lucene {q['hits']}")
            g = [(h.score, h.fields["id"]) for h in got]
            w = [(h.score, h.fields["id"]) for h in want]
            if not same_ranking(g, w):
                failures.append(f"{text}:\n  sharded {g}\n  single  {w}")
            if sharded.count(text, default_fields=["body"]) != q["hits"]:
                failures.append(f"{text}: count() differs")
        # Hits carry their shard and the fields asked for.
        r = sharded.search("oil", limit=5, fields=["id"])
        assert all(set(h.fields) == {"id"} and 0 <= h.shard < shards for h in r)
        assert sharded.search("oil", mode="count").count == single.count("oil")
    assert not failures, f"{len(failures)} of {len(queries)} queries differ:\n" + "\n".join(failures)


def test_inferred_schema_and_reload(local_ray, reuters_docs, tmp_path):
    src = tmp_path / "in.jsonl"
    with open(src, "w") as f:
        for d in reuters_docs[:300]:
            f.write(json.dumps(d) + "\n\n")  # blank lines are skipped
    build_sharded(src, tmp_path / "s", shards=3)
    schema = json.loads((tmp_path / "s" / "shards.json").read_text())["schema"]
    assert [(f["name"], f["type"]) for f in schema["fields"]] == [
        ("body", "text"), ("id", "integer"), ("title", "text")
    ]
    with ShardedSearcher(tmp_path / "s") as s:
        before = s.count("zebra")
        assert before == 0 and s.num_docs == 300
        idx = quarry.Index.open(tmp_path / "s" / "shard-001")
        with idx.writer(threads=1) as w:
            w.add({"id": 99999, "title": "zebra", "body": "zebra crossing"})
        assert s.count("zebra") == 0
        assert s.reload() is True
        assert s.count("zebra") == 1
        assert s.search("zebra")[0].fields["id"] == 99999


def test_errors(local_ray, tmp_path):
    with pytest.raises(quarry.IndexNotFoundError):
        ShardedSearcher(tmp_path / "nothing")
    with pytest.raises(quarry.InvalidArgumentError):
        build_sharded([], tmp_path / "x", shards=0)
    with pytest.raises(quarry.QuarryIOError):
        build_sharded([tmp_path / "missing.jsonl"], tmp_path / "x", shards=2)
