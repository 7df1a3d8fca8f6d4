"""Structured data through the official Elasticsearch client, checked against SQLite over the
same rows: sorting (with search_after paging), range queries on integers, floats, dates and
keywords (with date math), and the answers staying right across segments and deletions."""
import datetime
import random
import sqlite3
import tempfile

import pytest

from test_clients import start_server, stop_server

N = 3000
CARRIERS = ["AA", "B6", "DL", "EV", "UA", "US", "WN", "9E"]
EPOCH = datetime.datetime(2013, 1, 1, tzinfo=datetime.timezone.utc)


def rows():
    rnd = random.Random(20261129)
    out = []
    for i in range(N):
        dep = EPOCH + datetime.timedelta(minutes=rnd.randrange(0, 365 * 24 * 60))
        row = {
            "id": i,
            "carrier": rnd.choice(CARRIERS),
            "distance": rnd.randrange(80, 5000),
            "delay": None if rnd.random() < 0.1 else round(rnd.uniform(-30, 300), 2),
            "dep": dep,
            "origin": rnd.choice(["JFK", "LGA", "EWR"]),
            "note": "flight %d to %s" % (i, rnd.choice(["boston", "chicago", "denver"])),
        }
        out.append(row)
    return out


def source(r):
    d = {k: v for k, v in r.items() if k != "dep" and v is not None}
    # Half as ISO 8601 text, half as epoch milliseconds: the same instant either way.
    ms = int(r["dep"].timestamp() * 1000)
    d["dep"] = r["dep"].strftime("%Y-%m-%dT%H:%M:%SZ") if r["id"] % 2 else ms
    return d


MAPPINGS = {
    "properties": {
        "id": {"type": "long"},
        "carrier": {"type": "keyword"},
        "distance": {"type": "integer"},
        "delay": {"type": "double"},
        "dep": {"type": "date"},
        "origin": {"type": "keyword"},
        "note": {"type": "text"},
    }
}


@pytest.fixture(scope="module")
def setup():
    import elasticsearch
    from elasticsearch import helpers

    data = tempfile.mkdtemp(prefix="quarry-structured-test-")
    proc, url = start_server(data)
    es = elasticsearch.Elasticsearch(url, request_timeout=120)
    es.indices.create(index="flights", mappings=MAPPINGS)
    all_rows = rows()
    # Three bulk batches with refreshes between them: several segments.
    for part in (all_rows[:1000], all_rows[1000:2000], all_rows[2000:]):
        actions = ({"_index": "flights", "_id": str(r["id"]), "_source": source(r)} for r in part)
        ok, errors = helpers.bulk(es, actions, chunk_size=500)
        assert ok == len(part) and not errors
        es.indices.refresh(index="flights")
    # Every 13th flight deleted.
    for r in all_rows[::13]:
        es.delete(index="flights", id=str(r["id"]))
    es.indices.refresh(index="flights")
    live = [r for r in all_rows if r["id"] % 13 != 0]
    db = sqlite3.connect(":memory:")
    db.execute("create table f (id int, carrier text, distance int, delay real, dep int, origin text)")
    db.executemany(
        "insert into f values (?,?,?,?,?,?)",
        [(r["id"], r["carrier"], r["distance"], r["delay"], int(r["dep"].timestamp() * 1000), r["origin"])
         for r in live],
    )
    yield es, db
    stop_server(proc)


def ids(resp):
    return [int(h["_id"]) for h in resp["hits"]["hits"]]


def sql_ids(db, where="1", order="id", limit=None):
    q = "select id from f where %s order by %s" % (where, order)
    if limit is not None:
        q += " limit %d" % limit
    return [r[0] for r in db.execute(q)]


RANGES = [
    ({"distance": {"gte": 1000, "lt": 2000}}, "distance >= 1000 and distance < 2000"),
    ({"distance": {"gt": 4990}}, "distance > 4990"),
    ({"delay": {"gte": -5.5, "lte": 0}}, "delay >= -5.5 and delay <= 0"),
    ({"delay": {"lt": 10.25}}, "delay < 10.25"),
    ({"carrier": {"gte": "B6", "lt": "UA"}}, "carrier >= 'B6' and carrier < 'UA'"),
    ({"dep": {"gte": "2013-03-01", "lt": "2013-04-01"}},
     "dep >= %d and dep < %d" % (1362096000000, 1364774400000)),
    # `lte` rounds up: all of 2013-06-30 is included.
    ({"dep": {"gt": "2013-06-01", "lte": "2013-06-30"}},
     "dep > %d and dep <= %d" % (1370131199999, 1372636799999)),
    ({"dep": {"gte": "2013-12-01||/M", "lt": "2013-12-01||+1M/M"}},
     "dep >= %d and dep < %d" % (1385856000000, 1388534400000)),
    ({"dep": {"gte": "01/02/2013", "lte": "28/02/2013", "format": "dd/MM/yyyy"}},
     "dep >= %d and dep <= %d" % (1359676800000, 1362095999999)),
    ({"dep": {"gte": "2013-01-10T00:00:00", "lt": "2013-01-11T00:00:00", "time_zone": "+05:00"}},
     "dep >= %d and dep < %d" % (1357758000000, 1357844400000)),
]


@pytest.mark.parametrize("rng,where", RANGES)
def test_range_counts_and_hits_match_sqlite(setup, rng, where):
    es, db = setup
    want = sql_ids(db, where)
    r = es.search(index="flights", query={"range": rng}, size=10000, track_total_hits=True,
                  sort=["id"])
    assert r["hits"]["total"]["value"] == len(want), rng
    assert ids(r) == want, rng
    assert es.count(index="flights", query={"bool": {"filter": [{"range": rng}]}})["count"] == len(want)


SORTS = [
    (["distance", "id"], "distance, id"),
    ([{"delay": "desc"}, "id"], "delay is null, delay desc, id"),
    ([{"delay": {"order": "asc", "missing": "_first"}}, "id"], "delay is not null, delay, id"),
    ([{"carrier": "asc"}, {"dep": "desc"}, "id"], "carrier, dep desc, id"),
    ([{"dep": "asc"}, "id"], "dep, id"),
]


@pytest.mark.parametrize("sort,order", SORTS)
def test_sort_and_search_after_match_sqlite(setup, sort, order):
    es, db = setup
    want = sql_ids(db, order=order)
    r = es.search(index="flights", sort=sort, size=25, track_total_hits=True)
    assert r["hits"]["total"]["value"] == len(want)
    assert ids(r) == want[:25]
    assert all(h["_score"] is None for h in r["hits"]["hits"])
    # Page through everything with search_after.
    got, after = [], None
    while True:
        kw = {"search_after": after} if after is not None else {}
        r = es.search(index="flights", sort=sort, size=700, **kw)
        hits = r["hits"]["hits"]
        if not hits:
            break
        got += [int(h["_id"]) for h in hits]
        after = hits[-1]["sort"]
    assert got == want


def test_sort_with_a_query_and_track_scores(setup):
    es, db = setup
    r = es.search(index="flights", query={"match": {"note": "denver"}}, sort=[{"distance": "desc"}, "id"],
                  size=5, track_scores=True)
    hits = r["hits"]["hits"]
    assert len(hits) == 5 and all(h["_score"] > 0 for h in hits)
    dists = [h["sort"][0] for h in hits]
    assert dists == sorted(dists, reverse=True)


def test_refusals_name_the_problem(setup):
    import elasticsearch

    es, _ = setup
    with pytest.raises(elasticsearch.BadRequestError) as e:
        es.search(index="flights", sort=["note"])
    assert "note" in str(e.value.info)
    with pytest.raises(elasticsearch.BadRequestError) as e:
        es.search(index="flights", query={"range": {"distance": {"gte": "far"}}})
    assert "far" in str(e.value.info)
    with pytest.raises(elasticsearch.BadRequestError) as e:
        es.search(index="flights", query={"range": {"dep": {"gte": "2013-13-45"}}})
    assert "2013-13-45" in str(e.value.info)
    with pytest.raises(elasticsearch.BadRequestError):
        es.search(index="flights", sort=["id"], search_after=[1, 2])


def test_aggregations_match_sqlite(setup):
    es, db = setup
    r = es.search(index="flights", size=0, aggs={
        "carriers": {"terms": {"field": "carrier", "size": 20},
                     "aggs": {"dist": {"stats": {"field": "distance"}}}},
        "by_month": {"date_histogram": {"field": "dep", "calendar_interval": "month"}},
        "dist_hist": {"histogram": {"field": "distance", "interval": 1000}},
        "origins": {"cardinality": {"field": "origin"}},
        "delay_avg": {"avg": {"field": "delay"}},
        "short": {"range": {"field": "distance", "ranges": [{"to": 500}, {"from": 500, "to": 2000}, {"from": 2000}]}},
    })
    assert r["hits"]["hits"] == []
    a = r["aggregations"]
    want = db.execute("select carrier, count(*), min(distance), max(distance), sum(distance) from f "
                      "group by carrier order by count(*) desc, carrier").fetchall()
    got = [(b["key"], b["doc_count"], b["dist"]["min"], b["dist"]["max"], b["dist"]["sum"])
           for b in a["carriers"]["buckets"]]
    assert got == [(c, n, float(lo), float(hi), float(s)) for c, n, lo, hi, s in want]
    assert a["carriers"]["sum_other_doc_count"] == 0
    months = db.execute("select strftime('%Y-%m', dep / 1000, 'unixepoch'), count(*) from f "
                        "group by 1 order by 1").fetchall()
    assert [(b["key_as_string"][:7], b["doc_count"]) for b in a["by_month"]["buckets"]] == months
    hist = db.execute("select (distance / 1000) * 1000, count(*) from f group by 1 order by 1").fetchall()
    assert [(b["key"], b["doc_count"]) for b in a["dist_hist"]["buckets"]] == [(float(k), n) for k, n in hist]
    assert a["origins"]["value"] == db.execute("select count(distinct origin) from f").fetchone()[0]
    avg = db.execute("select avg(delay) from f").fetchone()[0]
    assert abs(a["delay_avg"]["value"] - avg) <= 1e-9 * abs(avg)
    counts = [db.execute("select count(*) from f where %s" % w).fetchone()[0]
              for w in ("distance < 500", "distance >= 500 and distance < 2000", "distance >= 2000")]
    assert [b["doc_count"] for b in a["short"]["buckets"]] == counts
    # Aggregations over a query's matches only.
    r = es.search(index="flights", size=0, query={"range": {"distance": {"gte": 3000}}},
                  aggs={"c": {"terms": {"field": "carrier", "size": 3}}})
    want = db.execute("select carrier, count(*) from f where distance >= 3000 group by carrier "
                      "order by count(*) desc, carrier limit 3").fetchall()
    assert [(b["key"], b["doc_count"]) for b in r["aggregations"]["c"]["buckets"]] == want
