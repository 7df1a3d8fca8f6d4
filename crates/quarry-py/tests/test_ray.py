"""quarry.ray: Reuters built into 1, 2 and 4 shards by parallel Ray tasks and searched by one
actor per shard with dfs_query_then_fetch gives, for every Lucene oracle query, the single
index's counts and top-10 (ids and scores; equal scores may come in another order)."""

from __future__ import annotations

import json
import pickle

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
        # The actors' readers also look for new commits on their own (every 250 ms), so the
        # commit may already be visible; after reload() it must be.
        s.reload()
        assert s.count("zebra") == 1
        assert s.reload() is False  # nothing newer since
        assert s.search("zebra")[0].fields["id"] == 99999


def test_errors(local_ray, tmp_path):
    with pytest.raises(quarry.IndexNotFoundError):
        ShardedSearcher(tmp_path / "nothing")
    with pytest.raises(quarry.InvalidArgumentError):
        build_sharded([], tmp_path / "x", shards=0)
    with pytest.raises(quarry.QuarryIOError):
        build_sharded([tmp_path / "missing.jsonl"], tmp_path / "x", shards=2)


@pytest.fixture(scope="module")
def sharded3(local_ray, reuters_jsonl, tmp_path_factory):
    path = tmp_path_factory.mktemp("sharded3") / "s"
    build_sharded([reuters_jsonl], path, shards=3, schema=reuters_schema())
    with ShardedSearcher(path) as s:
        yield s


def _ranking(result):
    return [(h.score, h.fields["id"]) for h in result]


@pytest.mark.parametrize("mode", ["top_count", "top", "count"])
def test_sharded_takes_strings_and_query_objects_in_every_mode(sharded3, reuters_index, oracle, mode):
    single = reuters_index.searcher()
    _, queries = oracle
    failures = []
    for q in queries[::4]:
        text = q["query"]
        parsed = single.parse(text, default_fields=["body"])
        assert sharded3.parse(text, default_fields=["body"]) == parsed
        want = single.search(parsed, limit=10, mode=mode)
        for query, kw in ((text, {"default_fields": ["body"]}), (parsed, {})):
            got = sharded3.search(query, limit=10, mode=mode, **kw)
            assert type(got) is quarry.SearchResult
            assert all(type(h) is quarry.Hit and 0 <= h.shard < 3 for h in got)
            if mode == "count":
                ok = len(got) == 0 and got.count == want.count == q["hits"] and got.count_exact
            elif mode == "top_count":
                ok = got.count == q["hits"] and got.count_exact and same_ranking(_ranking(got), _ranking(want))
            else:  # top: the count may be a lower bound, flagged by count_exact
                ok = (got.count == q["hits"] if got.count_exact else got.count <= q["hits"]) and same_ranking(
                    _ranking(got), _ranking(want)
                )
            if not ok:
                failures.append(f"{mode} {text!r} ({type(query).__name__}): {got!r} vs {want!r}")
            if sharded3.count(query, **kw) != q["hits"]:
                failures.append(f"count({text!r}) ({type(query).__name__}) differs")
    assert not failures, "\n".join(failures)


def test_sharded_fields_limit_stats_and_hits(sharded3, reuters_index):
    single = reuters_index.searcher()
    q = single.parse("oil prices", default_fields=["body"])
    want = single.search(q, limit=25)
    got = sharded3.search(q, limit=25)
    assert len(got) == 25 and same_ranking(_ranking(got), _ranking(want))
    by_id = {h.fields["id"]: h.fields for h in want}
    assert all(h.fields == by_id[h.fields["id"]] for h in got if h.fields["id"] in by_id)
    assert all(set(h.fields) == {"title"} for h in sharded3.search(q, fields=["title"]))
    assert all(h.fields == {} for h in sharded3.search(q, fields=[]))
    assert len(sharded3.search(q, limit=0)) == 0 and sharded3.search(q, limit=0).count == want.count
    # Hits address documents within their shard, and pickle with their shard.
    for h in sharded3.search("grain", limit=5):
        again = pickle.loads(pickle.dumps(h))
        assert (again.shard, again.doc, again.seq, again.score) == (h.shard, h.doc, h.seq, h.score)
    # Supplied statistics replace the dfs phase; the single index's own give the same scores.
    stats = sharded3.collection_stats(q)
    assert stats == single.collection_stats(q)
    assert _ranking(sharded3.search(q, stats=stats)) == _ranking(got)[:10]


class _NoActor:
    def __getattr__(self, name):
        raise AssertionError(f"actor called ({name}) for a query that should fail first")


def test_sharded_errors_are_the_single_searchers(sharded3, reuters_index):
    single = reuters_index.searcher()
    actors = sharded3.actors
    sharded3.actors = [_NoActor()] * len(actors)
    try:
        for call in (sharded3.search, sharded3.count, sharded3.collection_stats):
            with pytest.raises(quarry.QuerySyntaxError) as got:
                call("oil AND (prices")
            with pytest.raises(quarry.QuerySyntaxError) as want:
                single.search("oil AND (prices")
            assert got.value.column == want.value.column == 16
            with pytest.raises(quarry.UnknownFieldError) as e:
                call("nosuch:oil")
            assert e.value.field == "nosuch"
            with pytest.raises(quarry.UnknownFieldError):
                call("oil", default_fields=["nosuch"])
            with pytest.raises(TypeError):
                call(42)
        with pytest.raises(quarry.InvalidArgumentError, match="unknown search mode"):
            sharded3.search("oil", mode="fast")
        with pytest.raises(OverflowError):
            sharded3.search("oil", limit=-1)
    finally:
        sharded3.actors = actors
    # Errors found on the shards come back as the same class, not wrapped by Ray.
    with pytest.raises(quarry.InvalidArgumentError, match="lack") as e:
        sharded3.search("oil wheat", stats=single.collection_stats("oil"))
    assert type(e.value) is quarry.InvalidArgumentError
    assert sharded3.count("oil") == single.count("oil")
