"""The Python API: schema, create/open, the writer context manager, search results, reload,
pickling, and every error as a typed exception."""

from __future__ import annotations

import pickle

import pytest

import quarry

DOCS = [
    {"id": 1, "title": "Oil prices rise", "body": "Crude oil prices rose sharply on Monday.", "tag": "energy"},
    {"id": 2, "title": "Wheat exports", "body": "Wheat exports fell as oil costs climbed.", "tag": "grain"},
    {"id": 3, "title": "Dollar steady", "body": "The dollar was steady against the yen.", "tag": ["fx", "usd"]},
]


def schema() -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_integer_field("id")
        .add_text_field("title")
        .add_text_field("body", stored=False)
        .add_keyword_field("tag")
        .build()
    )


@pytest.fixture
def index(tmp_path):
    idx = quarry.Index.create(tmp_path / "idx", schema())
    with idx.writer(threads=1) as w:
        for d in DOCS:
            w.add(d)
    return idx


def test_schema_builder_json_and_infer():
    s = schema()
    assert s.field_names == ["id", "title", "body", "tag"]
    assert s.text_fields == ["title", "body"]
    assert s.fields[2] == {"name": "body", "type": "text", "stored": False, "analyzer": "standard"}
    assert quarry.Schema.from_json(s.to_json()) == s
    # Inferred as the CLI does (fields in name order).
    inferred = quarry.Schema.infer([{"id": 1, "title": "x", "tags": ["a", "b"]}])
    assert [(f["name"], f["type"]) for f in inferred.fields] == [
        ("id", "integer"), ("tags", "text"), ("title", "text")
    ]
    assert pickle.loads(pickle.dumps(s)) == s
    assert "body:text" in repr(s)


def test_schema_errors():
    with pytest.raises(quarry.SchemaError, match="declared twice"):
        quarry.SchemaBuilder().add_text_field("a").add_integer_field("a").build()
    with pytest.raises(quarry.SchemaError, match="unknown analyzer"):
        quarry.SchemaBuilder().add_text_field("a", analyzer="klingon").build()
    with pytest.raises(quarry.SchemaError):
        quarry.Schema.from_json("{not json")
    with pytest.raises(quarry.SchemaError, match="holds text"):
        quarry.Schema.infer([{"a": 1}, {"a": "x"}])


def test_search_returns_scores_addresses_and_stored_fields(index):
    s = index.searcher()
    assert s.num_docs == 3 and index.num_docs == 3
    r = s.search("oil", limit=10)
    assert r.count == 2 and r.count_exact and len(r) == 2
    assert [h.fields["id"] for h in r] == [1, 2]
    top = r[0]
    assert top.score > r[1].score > 0
    assert top.fields == {"id": 1, "title": "Oil prices rise", "tag": "energy"}  # body not stored
    assert s.doc(top.doc) == top.fields
    assert top.shard is None and r[-1] is r.hits[1]
    # Only some fields, or none.
    assert s.search("oil", fields=["id"])[0].fields == {"id": 1}
    assert s.search("oil", fields=[])[0].fields == {}
    # Default fields, keyword and integer terms, multi-valued keywords.
    assert s.count("oil", default_fields=["title"]) == 1
    assert s.count("tag:usd") == 1 and s.count("tag:fx") == 1
    assert s.count("id:3") == 1
    assert s.search("oil", mode="count").hits == []
    assert s.docs([h.doc for h in r], fields=["title"]) == [
        {"title": "Oil prices rise"}, {"title": "Wheat exports"}
    ]


def test_results_pickle(index):
    r = index.searcher().search("oil")
    r2 = pickle.loads(pickle.dumps(r))
    assert [(h.score, h.doc, h.seq, h.fields) for h in r2] == [
        (h.score, h.doc, h.seq, h.fields) for h in r
    ]
    assert r2.count == r.count
    assert "Hit(score=" in repr(r[0]) and "SearchResult(count=2" in repr(r)


def test_parse_and_query_objects(index):
    s = index.searcher()
    q = s.parse("oil AND prices", default_fields=["body"])
    assert str(q) == "+body:oil +body:prices"
    assert s.count(q) == 1
    assert s.search(q)[0].fields["id"] == 1


def test_query_objects_pickle_exactly(index):
    s = index.searcher()
    texts = [
        "oil AND prices",
        'title:"oil prices"~2 -wheat',
        "pri* OR tag:fx^2.5",
        "+(oil dollar) +title:prices^0.3",
        "*:*",
        "the",  # every word may analyze away: an empty boolean
    ]
    for text in texts:
        q = s.parse(text)
        q2 = pickle.loads(pickle.dumps(q))
        assert q2 == q and str(q2) == str(q)
        assert quarry.Query.from_state(q.state()) == q
        want = s.search(q, limit=10)
        got = s.search(q2, limit=10)
        assert [(h.score, h.doc) for h in got] == [(h.score, h.doc) for h in want]
        assert got.count == want.count
    assert s.parse("oil") != s.parse("wheat")
    assert s.parse("title:oil^2").state() == ("boost", ("term", "title", "oil"), 2.0)


def test_multi_phrase_and_phrase_prefix_states(index):
    s = index.searcher()
    state = ("phrase_prefix", "body", [(0, ["oil"]), (1, ["c"])], 0, 50)
    pp = quarry.Query.from_state(state)
    assert str(pp) == 'body:"oil c*"'
    assert pp.state() == state
    assert pickle.loads(pickle.dumps(pp)) == pp
    assert [h.fields["id"] for h in s.search(pp)] == [2]  # "oil costs"
    phrase = s.parse('body:"oil prices"')
    mp = quarry.Query.from_state(("multi_phrase", "body", [(0, ["oil"]), (1, ["prices", "zzz"])], 0))
    assert str(mp) == 'body:"oil (prices zzz)"'
    assert [(h.score, h.doc) for h in s.search(mp)] == [(h.score, h.doc) for h in s.search(phrase)]
    both = quarry.Query.from_state(("multi_phrase", "body", [(0, ["oil"]), (1, ["prices", "costs"])], 0))
    assert sorted(h.fields["id"] for h in s.search(both)) == [1, 2]


@pytest.mark.parametrize(
    "state, where",
    [
        ("term", "expected a tuple"),
        (("term", "title"), "expected 3"),
        (("nosuch", "a", "b"), "unknown node"),
        (("bool", [("sometimes", ("all",))], 0), "unknown occur"),
        (("bool", [("must", ("term", "title", 3))], 0), "state[1][0][1]: term"),
        (("boost", ("all",), -1.0), "non-negative"),
        (("boost", ("all",), 0.1), "float32"),
        (("phrase", "body", [(2, "a"), (1, "b")], 0), "ascending"),
        (("multi_phrase", "body", [(0, ["a"]), (1, [])], 0), "every position"),
        (("phrase_prefix", "body", [(0, ["a"])], 0), "expected 5"),
    ],
)
def test_bad_query_states_are_typed_errors(state, where):
    with pytest.raises(quarry.InvalidArgumentError, match=where.replace("[", r"\[")):
        quarry.Query.from_state(state)


def test_deep_query_state_is_bounded():
    state = ("all",)
    for _ in range(2000):
        state = ("boost", state, 1.0)
    with pytest.raises(quarry.InvalidArgumentError, match="deeper"):
        quarry.Query.from_state(state)


def test_query_syntax_error_has_column(index):
    s = index.searcher()
    with pytest.raises(quarry.QuerySyntaxError) as e:
        s.parse("oil AND (prices")
    assert e.value.column == 16
    assert e.value.kind == "syntax"
    assert isinstance(e.value, quarry.QueryError) and isinstance(e.value, quarry.QuarryError)
    with pytest.raises(quarry.QuerySyntaxError) as e:
        s.search('title:"oil', limit=3)
    assert e.value.column == 7
    with pytest.raises(quarry.QuerySyntaxError) as e:
        s.count("*oil")  # a leading wildcard, refused as Lucene does by default
    assert e.value.kind == "unsupported"
    assert s.count("oil~2") == s.count("oil")


def test_unknown_fields(index):
    s = index.searcher()
    with pytest.raises(quarry.UnknownFieldError) as e:
        s.search("nosuch:oil")
    assert e.value.field == "nosuch" and "title" in e.value.known
    with pytest.raises(quarry.UnknownFieldError):
        s.search("oil", default_fields=["nosuch"])


def test_bad_arguments(index):
    s = index.searcher()
    with pytest.raises(quarry.InvalidArgumentError, match="unknown search mode"):
        s.search("oil", mode="fast")
    with pytest.raises(TypeError):
        s.search(42)
    with pytest.raises(quarry.InvalidArgumentError, match="lack"):
        s.search("oil wheat", stats=s.collection_stats("oil"))
    with pytest.raises(quarry.DocumentError):
        s.search("oil", stats={"fields": 3})


def test_document_errors_name_the_field(index):
    with index.writer(threads=1) as w:
        with pytest.raises(quarry.DocumentError) as e:
            w.add({"id": "one"})
        assert e.value.field == "id"
        with pytest.raises(quarry.DocumentError, match="unknown field"):
            w.add({"color": "red"})
        with pytest.raises(quarry.DocumentError):
            w.add({"id": True})
        with pytest.raises(quarry.DocumentError):
            w.add({"id": 1.5})
        with pytest.raises(quarry.DocumentError, match="found dict"):
            w.add({"id": {"a": 1}})
        with pytest.raises(TypeError):
            w.add(["not", "a", "dict"])
        w.add({"id": 4, "title": None, "body": "fine"})
    assert index.searcher().count("fine") == 1


def test_writer_commits_on_success_and_discards_on_exception(index):
    reader = index.reader()
    s0 = reader.searcher()
    with pytest.raises(RuntimeError):
        with index.writer(threads=1) as w:
            w.add({"id": 10, "title": "gold rush"})
            raise RuntimeError("boom")
    assert index.searcher().count("gold") == 0
    assert reader.reload() is False
    with index.writer(threads=2) as w:
        assert w.add_many(({"id": 10 + i, "title": f"gold {i}"} for i in range(100))) == 100
        stats = w.commit()
        assert stats["docs"] == 103 and stats["generation"] > reader.generation
        w.add({"id": 500, "title": "gold again"})
    # A reader keeps its view until reloaded; index.searcher() sees the newest commit.
    assert s0.count("gold") == 0 and reader.searcher().count("gold") == 0
    assert reader.reload() is True
    assert reader.searcher().count("gold") == 101
    assert index.searcher().count("gold") == 101
    with pytest.raises(quarry.WriterError):
        w.add({"id": 1})


def test_force_merge(index):
    with index.writer(threads=1) as w:
        w.add({"id": 9, "title": "more oil"})
        w.commit()
        w.force_merge(1)
    s = index.searcher()
    assert s.num_segments == 1 and s.count("oil") == 3


def test_open_errors(tmp_path):
    with pytest.raises(quarry.IndexNotFoundError) as e:
        quarry.Index.open(tmp_path / "missing")
    assert "missing" in e.value.path
    quarry.Index.create(tmp_path / "a", schema())
    with pytest.raises(quarry.InvalidArgumentError, match="already holds an index"):
        quarry.Index.create(tmp_path / "a", schema())
    again = quarry.Index.create(tmp_path / "a", schema(), overwrite=True)
    assert again.num_docs == 0


def test_corruption_is_a_typed_error(index):
    from pathlib import Path

    metas = sorted(Path(index.path).glob("*.meta"))
    assert metas
    data = bytearray(metas[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    metas[0].write_bytes(bytes(data))
    with pytest.raises(quarry.CorruptIndexError) as e:
        quarry.Index.open(index.path)
    assert e.value.file.endswith(".meta")
    assert e.value.offset is None


def test_a_damaged_chunk_names_its_file_and_offset(index):
    from pathlib import Path

    norms = sorted(Path(index.path).glob("*.norms"))
    assert norms
    data = bytearray(norms[0].read_bytes())
    data[20] ^= 0xFF  # inside the first 4 KiB chunk, after the 16-byte header
    norms[0].write_bytes(bytes(data))
    searcher = quarry.Index.open(index.path).searcher()
    with pytest.raises(quarry.CorruptIndexError) as e:
        searcher.search("title:oil")
    assert e.value.file.endswith(".norms")
    assert e.value.offset == 0


def test_help_is_useful():
    assert "context manager" in quarry.IndexWriter.__doc__
    assert "Creates an empty index" in quarry.Index.create.__doc__
    assert "stats" in quarry.Searcher.search.__doc__
    assert issubclass(quarry.LockedError, quarry.QuarryError)
    assert issubclass(quarry.QuarryIOError, quarry.QuarryError)
    assert issubclass(quarry.CorruptIndexError, quarry.QuarryError)


def test_merge_stats_sums():
    a = {"fields": {"body": {"doc_count": 2, "sum_total_term_freq": 10}},
         "terms": {"body": {"oil": {"doc_freq": 1}}}}
    b = {"fields": {"body": {"doc_count": 3, "sum_total_term_freq": 5}},
         "terms": {"body": {"oil": {"doc_freq": 2}, "gas": {"doc_freq": 1}}}}
    m = quarry.merge_stats([a, b])
    assert m == {"fields": {"body": {"doc_count": 5, "sum_total_term_freq": 15}},
                 "terms": {"body": {"oil": {"doc_freq": 3}, "gas": {"doc_freq": 1}}}}


def test_update_delete_refresh_and_lock(index):
    with index.writer(threads=1) as w:
        with pytest.raises(quarry.LockedError) as e:
            index.writer()
        assert isinstance(e.value, quarry.QuarryError)
        nrt = w.reader()
        assert isinstance(w.update("id", {"id": 1, "title": "Gold prices rise", "tag": "metals"}), int)
        w.delete(("tag", "grain"))
        assert nrt.searcher().count("gold") == 0
        w.refresh()
        assert nrt.reload() is True
        s = nrt.searcher()
        assert s.count("gold") == 1 and s.count("tag:grain") == 0 and s.count("oil") == 0
        assert index.searcher().count("gold") == 0  # not committed yet
        w.delete("dollar")
        with pytest.raises(quarry.QuerySyntaxError):
            w.delete("dollar AND (")
        with pytest.raises(quarry.DocumentError):
            w.update("id", {"title": "no key"})
    s = index.searcher()
    assert s.num_docs == 1 and index.num_docs == 1
    assert [h.fields["id"] for h in s.search("gold OR dollar OR wheat")] == [1]
    with index.writer(threads=1) as w:
        w.delete_all()
    assert index.searcher().num_docs == 0


def test_query_builders(index):
    """tantivy-py's builder names: fuzzy, regex, wildcard, dis-max, constant-score and boost
    queries, equal to what the query syntax builds, pickled exactly."""
    s, sc = index.searcher(), schema()
    Q = quarry.Query
    fuzzy = Q.fuzzy_term_query(sc, "body", "oli", distance=1)
    assert str(fuzzy) == "body:oli~1" and fuzzy == s.parse("oli~1", default_fields=["body"])
    assert s.count(fuzzy) == 2  # oil
    assert s.count(Q.fuzzy_term_query(sc, "body", "oil", distance=0)) == 2
    assert Q.fuzzy_term_query(sc, "body", "olis", transposition_cost_one=False).state()[6] is False
    regex = Q.regex_query(sc, "body", "pri[cz]es?")
    assert str(regex) == "body:/pri[cz]es?/" and s.count(regex) == 1
    wild = Q.wildcard_query(sc, "title", "pr?ce*")
    assert str(wild) == "title:pr?ce*" and s.count(wild) == 1
    assert s.count(Q.term_query(sc, "tag", "fx")) == 1
    dm = Q.disjunction_max_query([Q.term_query(sc, "title", "oil"), Q.term_query(sc, "body", "oil")], 0.5)
    assert str(dm) == "(title:oil | body:oil)~0.5"
    t = {h.doc: h.score for h in s.search(Q.term_query(sc, "title", "oil"))}
    b = {h.doc: h.score for h in s.search(Q.term_query(sc, "body", "oil"))}
    for h in s.search(dm):
        x, y = t.get(h.doc, 0.0), b.get(h.doc, 0.0)
        assert h.score == pytest.approx(max(x, y) + 0.5 * min(x, y), rel=1e-6)
    const = Q.const_score_query(Q.term_query(sc, "body", "oil"), 2.0)
    assert [h.score for h in s.search(const)] == [2.0, 2.0]
    assert str(Q.boost_query(Q.term_query(sc, "body", "oil"), 3.0)) == "(body:oil)^3.0"
    for q in [fuzzy, regex, wild, dm, const]:
        assert pickle.loads(pickle.dumps(q)) == q
    with pytest.raises(quarry.UnknownFieldError):
        Q.fuzzy_term_query(sc, "nope", "x")
    with pytest.raises(quarry.InvalidArgumentError, match="expected '\\)'"):
        Q.regex_query(sc, "body", "a(b")
    with pytest.raises(quarry.InvalidArgumentError, match="distance"):
        Q.fuzzy_term_query(sc, "body", "x", distance=3)
    with pytest.raises(quarry.InvalidArgumentError, match="tie_breaker"):
        Q.disjunction_max_query([], 2.0)
