"""``Index.create(..., index_sort=...)``: the sort is kept (``Index.index_sort``), fields without a
column and bad orders are refused, and sorted searches (with ``after`` paging) give the same hits
as on an index without the sort."""

from __future__ import annotations

import random

import pytest

import quarry


def schema() -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id", stored=True, indexed=True, fast=True)
        .add_integer_field("n", fast=True)
        .add_keyword_field("k")
        .add_text_field("note", stored=True)
        .build()
    )


def fill(idx: quarry.Index) -> None:
    rnd = random.Random(11)
    with idx.writer(threads=1, memory_mb=16) as w:
        for part in range(3):
            for i in range(part * 400, part * 400 + 400):
                d = {"id": i, "note": rnd.choice(["red", "green", "red blue"])}
                if rnd.random() < 0.9:
                    d["n"] = rnd.randrange(-50, 50)
                if rnd.random() < 0.8:
                    d["k"] = rnd.choice(["a", "b", "c"])
                w.add(d)
            w.commit()
        for i in range(0, 1200, 13):
            w.delete(("id", i))
        w.commit()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    base = tmp_path_factory.mktemp("isort")
    plain = quarry.Index.create(base / "plain", schema())
    srt = quarry.Index.create(base / "sorted", schema(), index_sort=[("n", "desc"), "k:asc"])
    fill(plain)
    fill(srt)
    return quarry.Index.open(base / "plain"), quarry.Index.open(base / "sorted")


def test_index_sort_is_kept(pair):
    plain, srt = pair
    assert plain.index_sort is None
    assert srt.index_sort == [("n", "desc"), ("k", "asc")]


@pytest.mark.parametrize("query", ["*:*", "note:red"])
@pytest.mark.parametrize("order_by", [["-n", "id"], ["-n", "k", "id"], ["n", "id"], ["k", "id"]])
def test_sorted_searches_match_the_unsorted_index(pair, query, order_by):
    plain, srt = pair
    a, b = plain.searcher(), srt.searcher()

    def page(s, after=None):
        r = s.search(query, limit=7, order_by=order_by, fields=["id"], after=after)
        return [(h.fields["id"], h.sort) for h in r], r.count

    first = page(a)
    assert page(b) == first
    after = first[0][-1][1]
    assert page(b, after) == page(a, after)


def test_bad_index_sorts_are_refused(tmp_path):
    with pytest.raises(quarry.InvalidArgumentError, match="no column") as e:
        quarry.Index.create(tmp_path / "a", schema(), index_sort=["note"])
    assert e.value.field == "note"
    with pytest.raises(quarry.InvalidArgumentError, match="asc"):
        quarry.Index.create(tmp_path / "b", schema(), index_sort=[("n", "down")])
    with pytest.raises(TypeError):
        quarry.Index.create(tmp_path / "c", schema(), index_sort=[3])
