"""Structured fields from Python: tantivy-py's schema keywords, dates, ranges in the query syntax,
``order_by`` with ``after`` paging, checked against SQLite over the same rows."""

from __future__ import annotations

import datetime
import pickle
import random
import sqlite3

import pytest

import quarry

N = 2500
EPOCH = datetime.datetime(2013, 1, 1, tzinfo=datetime.timezone.utc)


def schema() -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id", stored=True, indexed=True, fast=True)
        .add_keyword_field("carrier")
        .add_integer_field("distance", fast=True)
        .add_float_field("delay")
        .add_date_field("dep")
        .add_keyword_field("tags")
        .add_text_field("note", stored=True)
        .build()
    )


def make_rows():
    rnd = random.Random(7)
    rows = []
    for i in range(N):
        dep = EPOCH + datetime.timedelta(minutes=rnd.randrange(0, 365 * 24 * 60))
        rows.append({
            "id": i,
            "carrier": rnd.choice(["AA", "B6", "DL", "UA", "WN"]),
            "distance": rnd.randrange(80, 5000),
            "delay": None if rnd.random() < 0.1 else round(rnd.uniform(-30, 300), 2),
            "dep": dep,
            "tags": rnd.sample(["red", "eye", "late", "long"], rnd.randrange(0, 3)),
            "note": "flight %d" % i,
        })
    return rows


@pytest.fixture(scope="module")
def flights(tmp_path_factory):
    rows = make_rows()
    idx = quarry.Index.create(tmp_path_factory.mktemp("flights") / "idx", schema())
    with idx.writer(threads=1) as w:
        for part in (rows[:800], rows[800:1600], rows[1600:]):
            for r in part:
                d = {k: v for k, v in r.items() if v is not None and k != "dep"}
                ms = int(r["dep"].timestamp() * 1000)
                d["dep"] = r["dep"].strftime("%Y-%m-%dT%H:%M:%SZ") if r["id"] % 2 else ms
                w.add(d)
            w.commit()
        for r in rows[::11]:
            w.delete(("id", r["id"]))
        w.commit()
    live = [r for r in rows if r["id"] % 11 != 0]
    db = sqlite3.connect(":memory:")
    db.execute("create table f (id int, carrier text, distance int, delay real, dep int)")
    db.executemany("insert into f values (?,?,?,?,?)", [
        (r["id"], r["carrier"], r["distance"], r["delay"], int(r["dep"].timestamp() * 1000)) for r in live
    ])
    return idx.searcher(), db


def sql(db, where="1", order="id"):
    return [r[0] for r in db.execute("select id from f where %s order by %s" % (where, order))]


def test_tantivy_py_keywords_and_refusals():
    s = schema()
    assert [f["type"] for f in s.fields] == [
        "integer", "keyword", "integer", "float", "date", "keyword", "text"]
    assert pickle.loads(pickle.dumps(s)) == s
    no_col = quarry.SchemaBuilder().add_integer_field("n", fast=False).build()
    assert no_col.fields[0]["doc_values"] is False
    with pytest.raises(ValueError, match="indexed=False"):
        quarry.SchemaBuilder().add_integer_field("n", indexed=False)
    with pytest.raises(ValueError, match="fast=True"):
        quarry.SchemaBuilder().add_text_field("t", fast=True)
    with pytest.raises(quarry.SchemaError, match="format"):
        quarry.SchemaBuilder().add_date_field("d", format="yyyy-QQ-nonsense[").build()


@pytest.mark.parametrize("query,where", [
    ("distance:[1000 TO 2000}", "distance >= 1000 and distance < 2000"),
    ("delay:{-5 TO 0.5]", "delay > -5 and delay <= 0.5"),
    ("delay:<-29", "delay < -29"),
    ("carrier:[B6 TO UA]", "carrier >= 'B6' and carrier <= 'UA'"),
    ("dep:[2013-03-01 TO 2013-03-31]", "dep >= 1362096000000 and dep <= 1364774399999"),
    ("dep:>=2013-12-01 AND distance:<500", "dep >= 1385856000000 and distance < 500"),
])
def test_ranges_match_sqlite(flights, query, where):
    s, db = flights
    want = sql(db, where)
    assert s.count(query) == len(want)
    r = s.search(query, limit=10000, order_by=["id"], fields=["id"])
    assert [h.fields["id"] for h in r] == want
    assert r.count == len(want) and r.count_exact


@pytest.mark.parametrize("order_by,order", [
    (["-distance", "id"], "distance desc, id"),
    ([("delay", "asc"), "id"], "delay is null, delay, id"),
    ([{"delay": {"order": "desc", "missing": "_first"}}, "id"], "delay is not null, delay desc, id"),
    (["carrier", {"dep": "desc"}, "id"], "carrier, dep desc, id"),
])
def test_order_by_and_after_match_sqlite(flights, order_by, order):
    s, db = flights
    want = sql(db, order=order)
    top = s.search("*:*", limit=20, order_by=order_by, fields=["id"])
    assert [h.fields["id"] for h in top] == want[:20]
    assert all(h.sort is not None and len(h.sort) == len(order_by) for h in top)
    got, after = [], None
    while True:
        page = s.search("*:*", limit=333, order_by=order_by + ["_doc"], after=after, fields=["id"])
        if len(page) == 0:
            break
        got += [h.fields["id"] for h in page]
        after = page[len(page) - 1].sort
    assert got == want


def test_order_by_errors_name_the_problem(flights):
    s, _ = flights
    with pytest.raises(quarry.UnknownFieldError):
        s.search("*:*", order_by=["nope"])
    with pytest.raises(quarry.QuarryError, match="note"):
        s.search("*:*", order_by=["note"])
    with pytest.raises(quarry.QuarryError, match="after"):
        s.search("*:*", after=[1])
    with pytest.raises(quarry.QuarryError, match="sort keys"):
        s.search("*:*", order_by=["id"], after=[1, 2])


def test_aggregate_matches_sqlite(flights):
    s, db = flights
    a = s.aggregate("distance:[1000 TO *]", {
        "carriers": {"terms": {"field": "carrier"}, "aggs": {"avg_delay": {"avg": {"field": "delay"}}}},
        "tags": {"terms": {"field": "tags", "order": {"_key": "asc"}}},
        "stats": {"stats": {"field": "distance"}},
    })
    want = db.execute("select carrier, count(*), avg(delay) from f where distance >= 1000 "
                      "group by carrier order by count(*) desc, carrier").fetchall()
    got = [(b["key"], b["doc_count"], b["avg_delay"]["value"]) for b in a["carriers"]["buckets"]]
    assert [(k, n) for k, n, _ in got] == [(k, n) for k, n, _ in want]
    for (_, _, x), (_, _, y) in zip(got, want):
        assert abs(x - y) <= 1e-9 * max(1.0, abs(y))
    n, lo, hi, total = db.execute(
        "select count(*), min(distance), max(distance), sum(distance) from f where distance >= 1000").fetchone()
    assert (a["stats"]["count"], a["stats"]["min"], a["stats"]["max"], a["stats"]["sum"]) == (n, lo, hi, total)
    assert [b["key"] for b in a["tags"]["buckets"]] == sorted(b["key"] for b in a["tags"]["buckets"])
    with pytest.raises(quarry.QueryError, match="note"):
        s.aggregate("*:*", {"x": {"terms": {"field": "note"}}})
