"""The official Python MCP SDK (2.x) drives `quarry mcp` over stdio and streamable HTTP: it lists
the tools and calls each on Reuters, and the answers are compared with the library's, through
`quarry search --json` on the same index directory."""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

QUARRY = os.environ["QUARRY_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N_DOCS = int(os.environ.get("QUARRY_MCP_DOCS", "5000"))
DIMS = 8
sys.path.insert(0, os.path.join(ROOT, "crates", "quarry-server", "tests", "python"))
from reuters_corpus import reuters  # noqa: E402  (the corpus reader the server's client tests use)

READ_TOOLS = ["count", "get_document", "get_mapping", "hybrid_search", "list_indices", "search",
              "semantic_search"]
WRITE_TOOLS = ["create_index", "delete_documents", "index_documents"]


def reuters_mappings():
    """Elasticsearch mappings for the bundled Reuters schema (data/reuters-schema.json), plus a
    vector field `v` searched exactly (flat), so that kNN answers can be compared exactly."""
    with open(os.path.join(ROOT, "data", "reuters-schema.json"), encoding="utf-8") as f:
        fields = json.load(f)["fields"]
    props = {f["name"]: {"type": f["type"]} for f in fields}
    props["v"] = {"type": "dense_vector", "dims": DIMS, "similarity": "cosine",
                  "index_options": {"type": "flat"}}
    return {"properties": props}


PRIMES = [3, 5, 7, 11, 13, 17, 19, 23]


def vector(i):
    """A deterministic vector per document id, distinct for every id below 1009 * 997 (so a kNN
    ranking has no ties to order differently) and never all zeros."""
    return [((i * p) % 1009) / 100.0 - 5.0 + ((i * (p + 2)) % 997) / 10000.0 + 0.001
            for p in PRIMES[:DIMS]]


def stdio(data, *extra, wrap=None):
    args = ["mcp", "--data", data, *extra]
    if wrap is None:
        return Client(StdioServerParameters(command=QUARRY, args=args))
    return Client(StdioServerParameters(command=sys.executable,
                                        args=[os.path.join(HERE, "tee_stdio.py"), wrap, QUARRY, *args]))


def run(coro):
    return asyncio.run(coro)


async def call(client, tool, **arguments):
    """A tool's structured answer (the test fails on a tool error)."""
    r = await client.call_tool(tool, arguments)
    assert not r.is_error, (tool, arguments, r.content)
    text = json.loads(r.content[0].text)
    assert text == r.structured_content
    return text


async def call_error(client, tool, **arguments):
    """A tool error's text."""
    r = await client.call_tool(tool, arguments)
    assert r.is_error, (tool, arguments, r.structured_content)
    return r.content[0].text


def library(data, *args):
    """`quarry search --json` on the index directory the MCP server wrote."""
    out = subprocess.run(
        [QUARRY, "search", "--index", os.path.join(data, "reuters", "index"), "--json", *args],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def same_ranking(mcp_hits, lib_top):
    """Same ids with the same scores, in order; equal scores may be in any order."""
    assert len(mcp_hits) == len(lib_top)
    got = sorted((-round(h["score"], 4), h["id"]) for h in mcp_hits)
    want = sorted((-round(t["score"], 4), t["doc"]["_id"]) for t in lib_top)
    assert got == want
    for h, t in zip(mcp_hits, lib_top):
        assert abs(h["score"] - t["score"]) <= 1e-5 * max(1.0, abs(t["score"]))


@pytest.fixture(scope="module")
def data():
    """A data directory holding Reuters, indexed through `index_documents` (writes allowed)."""
    d = tempfile.mkdtemp(prefix="quarry-mcp-test-")

    async def build():
        async with stdio(d, "--allow-writes") as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == sorted(READ_TOOLS + WRITE_TOOLS)
            a = await call(client, "create_index", index="reuters", mappings=reuters_mappings())
            assert a == {"acknowledged": True, "index": "reuters"}
            batch, total = [], 0
            for doc in reuters(N_DOCS):
                batch.append({"id": str(doc["id"]), "source": {**doc, "v": vector(doc["id"])}})
                if len(batch) == 1000:
                    total += await index_batch(client, batch)
                    batch = []
            if batch:
                total += await index_batch(client, batch)
            assert total == N_DOCS
            assert (await call(client, "count", index="reuters"))["count"] == N_DOCS

    async def index_batch(client, batch):
        a = await call(client, "index_documents", index="reuters", documents=batch)
        assert a["acknowledged"] and a["durable"] and a["searchable"], a
        assert a["counts"] == {"created": len(batch)}, a
        return len(batch)

    run(build())
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_read_only_server_lists_the_read_tools_with_schemas_and_caps(data):
    async def go():
        async with stdio(data) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(tools) == READ_TOOLS
            for t in tools.values():
                assert t.description and len(t.description) > 60, t.name
                assert t.input_schema["type"] == "object"
                assert t.annotations.read_only_hint is True
            search = tools["search"]
            assert "at most 100" in search.description
            assert "2000 bytes" in search.description and "65536 bytes" in search.description
            props = search.input_schema["properties"]
            assert {"index", "query", "query_dsl", "size", "fields", "highlight"} <= set(props)
            assert search.input_schema["required"] == ["index"]
            # A write tool is not there: calling it fails without ending the session.
            try:
                r = await client.call_tool("delete_documents", {"index": "reuters", "ids": ["1"]})
                assert r.is_error
            except Exception as e:  # a protocol error (unknown tool) is as good
                assert "delete_documents" in str(e) or "not found" in str(e).lower(), e
            listed = await call(client, "list_indices")
            assert listed["indices"] == [{
                "name": "reuters", "docs": N_DOCS,
                "fields": {"body": "text", "date": "keyword", "id": "long", "title": "text",
                           "topics": "keyword", "v": "dense_vector"},
            }]
    run(go())


QUERIES = [
    ("oil AND prices", ["body"]),
    ('title:"crude oil"', None),
    ("wheat AND (export OR exports)", ["body"]),
    ("pric* -gas", ["body", "title"]),
    ("coffee~1", None),
]


@pytest.mark.parametrize("query,fields", QUERIES)
def test_search_ranks_as_the_library(data, query, fields):
    args = ["--top", "10"]
    for f in fields or []:
        args += ["--default-field", f]
    lib = library(data, *args, query)

    async def go():
        async with stdio(data) as client:
            kw = {"default_fields": fields} if fields else {}
            return await call(client, "search", index="reuters", query=query, size=10, **kw)
    a = run(go())
    assert a["total"] == lib["hits"] and a["total_relation"] == "eq"
    same_ranking(a["hits"], lib["top"])
    assert a["truncated"] is False


def test_query_dsl_count_get_document_and_highlight(data):
    async def go():
        async with stdio(data) as client:
            dsl = await call(client, "search", index="reuters", size=5, fields=["title"],
                             query_dsl={"bool": {"must": {"match": {"body": "oil prices"}},
                                                 "filter": {"term": {"topics": "crude"}}}})
            lucene = await call(client, "search", index="reuters", size=5, fields=["title"],
                                query="+(body:oil body:prices) +topics:crude")
            assert dsl["total"] == lucene["total"] > 0
            assert [h["id"] for h in dsl["hits"]] == [h["id"] for h in lucene["hits"]]
            for h in dsl["hits"]:
                assert set(h["fields"]) <= {"title"}
            n = await call(client, "count", index="reuters", query="oil AND prices")
            assert n == {"index": "reuters", "count": library(data, "--mode", "count",
                                                              "oil AND prices")["hits"]}
            n = await call(client, "count", index="reuters", query_dsl={"term": {"topics": "grain"}})
            assert n["count"] == library(data, "--mode", "count", "topics:grain")["hits"]

            hl = await call(client, "search", index="reuters", query="cocoa", size=3,
                            fields=[], highlight=["body"])
            for h in hl["hits"]:
                assert "fields" not in h or h["fields"] == {}
                assert any("<em>cocoa</em>" in s.lower() for s in h["highlight"]["body"]), h

            top = hl["hits"][0]["id"]
            doc = await call(client, "get_document", index="reuters", id=top)
            want = next(d for d in reuters(N_DOCS) if str(d["id"]) == top)
            assert doc["found"] and doc["version"] == 1
            assert doc["fields"]["body"] == want["body"]
            assert len(doc["fields"]["v"]) == DIMS
            assert all(abs(a - b) < 1e-5 for a, b in zip(doc["fields"]["v"], vector(want["id"])))
            some = await call(client, "get_document", index="reuters", id=top, fields=["ti*"])
            assert some["fields"] == {"title": want["title"]}
            missing = await call(client, "get_document", index="reuters", id="no-such-id")
            assert missing == {"index": "reuters", "id": "no-such-id", "found": False}
            mapping = await call(client, "get_mapping", index="reuters")
            assert mapping["mappings"]["properties"]["v"]["dims"] == DIMS
            assert mapping["mappings"]["dynamic"] == "strict"
    run(go())


def test_semantic_and_hybrid_search_rank_as_the_library(data):
    q = vector(4242)
    lib_knn = library(data, "--knn", "v", "--vector", json.dumps(q), "--exact", "-k", "10")
    lib_hybrid = library(data, "--knn", "v", "--vector", json.dumps(q), "-k", "10",
                         "--default-field", "body", "--hybrid", "oil prices")

    async def go():
        async with stdio(data) as client:
            knn = await call(client, "semantic_search", index="reuters", field="v", vector=q, k=10,
                             fields=["title"])
            hybrid = await call(client, "hybrid_search", index="reuters", field="v", vector=q,
                                query="oil prices", default_fields=["body"], size=10, fields=[])
            filtered = await call(client, "semantic_search", index="reuters", field="v", vector=q,
                                  k=5, filter="topics:crude", fields=["topics"])
            no_model = await call_error(client, "semantic_search", index="reuters", field="v",
                                        question="oil prices in 1987")
            return knn, hybrid, filtered, no_model
    knn, hybrid, filtered, no_model = run(go())
    same_ranking(knn["hits"], lib_knn["top"])
    same_ranking(hybrid["hits"], lib_hybrid["top"])
    assert len(filtered["hits"]) == 5
    for h in filtered["hits"]:
        assert "crude" in h["fields"]["topics"]
    assert "field [v] has no embedding model" in no_model and "pass `vector`" in no_model


NOTES_DOCS = 100
QUESTIONS = ["which countries export wheat?", "oil prices fell", "central bank interest rates"]


def model_dir():
    """The embedding model (QUARRY_TEST_MODEL_DIR, set by scripts/test.sh): skipped without it,
    except under CI where that fails."""
    d = os.environ.get("QUARRY_TEST_MODEL_DIR")
    if d:
        return d
    if os.environ.get("CI"):
        pytest.fail("QUARRY_TEST_MODEL_DIR is not set under CI; scripts/test.sh sets it (scripts/fetch-model.sh)")
    pytest.skip("set QUARRY_TEST_MODEL_DIR to the directory `bash scripts/fetch-model.sh` prints")


@pytest.fixture(scope="module")
def notes(data):
    """A second index of `data`, `notes`: Reuters bodies in a semantic_text field embedded by
    the model registered with the data directory (`quarry models add minilm PATH --data`)."""
    subprocess.run([QUARRY, "models", "add", "minilm", model_dir(), "--data", data], check=True,
                   capture_output=True)

    async def build():
        async with stdio(data, "--allow-writes") as client:
            await call(client, "create_index", index="notes", mappings={"properties": {
                "title": {"type": "text"},
                "body": {"type": "semantic_text", "inference_id": "minilm"}}})
            docs = [d for d in reuters(2 * NOTES_DOCS) if d.get("body")][:NOTES_DOCS]
            batch = [{"id": str(d["id"]), "source": {"title": d.get("title", ""), "body": d["body"]}}
                     for d in docs]
            a = await call(client, "index_documents", index="notes", documents=batch)
            assert a["acknowledged"] and a["durable"] and a["searchable"], a
            assert a["counts"] == {"created": NOTES_DOCS}, a
    run(build())
    return data


def notes_library(data, *args):
    out = subprocess.run(
        [QUARRY, "search", "--index", os.path.join(data, "notes", "index"), "--json", *args],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["top"]


def same_passages(mcp_hits, lib_top, max_text_bytes=2000):
    """Each hit's `passage` is the library's for the same document: the same number and byte
    span, and its text (cut to the text cap, ending in …, when longer); none when the library
    has none."""
    lib = {t["doc"]["_id"]: t.get("passage") for t in lib_top}
    for h in mcp_hits:
        want = lib[h["id"]]
        if want is None:
            assert "passage" not in h, h
            continue
        got = h["passage"]
        assert [got[k] for k in ("index", "start", "end")] == \
            [want[k] for k in ("index", "start", "end")], (h["id"], got, want)
        if len(want["text"].encode()) <= max_text_bytes:
            assert got["text"] == want["text"]
        else:
            assert got["text"].endswith("…") and len(got["text"].encode()) <= max_text_bytes
            assert want["text"].startswith(got["text"][:-1])


def test_questions_are_embedded_by_the_field_s_model(notes):
    """`semantic_search` and `hybrid_search` with a text question on a semantic_text field
    answer as `quarry search --semantic` on the same index: same ids, scores within 1e-5, and
    the passage that matched each hit (number, byte span, text), its text cut to the cap."""
    async def go():
        async with stdio(notes) as client:
            out = []
            for q in QUESTIONS:
                sem = await call(client, "semantic_search", index="notes", field="body",
                                 question=q, k=5, num_candidates=100, fields=["title"])
                hyb = await call(client, "hybrid_search", index="notes", field="body",
                                 question=q, query="wheat exports", default_fields=["body"],
                                 num_candidates=100, size=10, fields=[])
                out.append((q, sem, hyb))
            no_model = await call_error(client, "semantic_search", index="notes", field="title",
                                        question="wheat")
            return out, no_model

    async def capped():
        async with stdio(notes, "--max-text-bytes", "100") as client:
            return await call(client, "semantic_search", index="notes", field="body",
                              question=QUESTIONS[0], k=5, num_candidates=100, fields=[])
    out, no_model = run(go())
    later = 0
    for q, sem, hyb in out:
        assert sem["hits"], q
        lib_sem = notes_library(notes, "--semantic", "_inference.body", q, "-k", "5",
                                "--num-candidates", "100")
        same_ranking(sem["hits"], lib_sem)
        same_passages(sem["hits"], lib_sem)
        for h in sem["hits"]:
            # Every vector of a semantic_text field is a passage; the text field itself was
            # not asked for, so it is not returned.
            assert "passage" in h and set(h["fields"]) == {"title"}, h
            later += h["passage"]["index"] > 0
        lib_hyb = notes_library(notes, "--semantic", "_inference.body", q, "-k", "10",
                                "--num-candidates", "100", "--default-field", "body",
                                "--hybrid", "wheat exports")
        same_ranking(hyb["hits"], lib_hyb)
        same_passages(hyb["hits"], lib_hyb)
        assert any("passage" in h for h in hyb["hits"]), q
    print(f"hits matched by a passage after the first: {later}")
    assert "field [title] has no embedding model" in no_model and "pass `vector`" in no_model
    cut = run(capped())
    same_passages(cut["hits"], notes_library(notes, "--semantic", "_inference.body", QUESTIONS[0],
                                             "-k", "5", "--num-candidates", "100"),
                  max_text_bytes=100)


def test_bad_input_is_a_tool_error_naming_it_and_the_session_goes_on(data):
    async def go():
        async with stdio(data) as client:
            for bad in ["../x", "/etc", "..", "reuters/../../x", "Reuters"]:
                e = await call_error(client, "search", index=bad, query="oil")
                assert "Invalid index name" in e, e
            e = await call_error(client, "get_document", index="../reuters", id="1")
            assert "Invalid index name" in e
            e = await call_error(client, "count", index="nope", query="oil")
            assert "no such index [nope]" in e
            e = await call_error(client, "search", index="reuters", query="oil AND (")
            assert "query_shard_exception" in e or "parsing" in e, e
            e = await call_error(client, "search", index="reuters", query="oil", size=1000)
            assert "`size` is 1000" in e and "cap of 100" in e, e
            e = await call_error(client, "search", index="reuters", qeury="oil")
            assert "qeury" in e, e
            e = await call_error(client, "search", index="reuters", size="ten")
            assert "size" in e or "invalid type" in e, e
            e = await call_error(client, "search", index="reuters",
                                 query_dsl={"match": {"nofield": "x"}, "term": {"a": "b"}})
            assert e, e
            e = await call_error(client, "semantic_search", index="reuters", field="v",
                                 vector=[1.0, 2.0])
            assert "dimensions" in e, e
            e = await call_error(client, "semantic_search", index="reuters", field="title",
                                 vector=[1.0] * DIMS)
            assert "title" in e, e
            # Still alive and answering.
            assert (await call(client, "count", index="reuters"))["count"] == N_DOCS
    run(go())


def test_answers_are_capped_in_bytes(data):
    proc_args = ["--max-text-bytes", "100", "--max-answer-bytes", "3000"]

    async def go():
        async with stdio(data, *proc_args) as client:
            a = await call(client, "search", index="reuters", query="oil", size=50)
            doc = await call(client, "get_document", index="reuters", id=a["hits"][0]["id"])
            return a, doc
    a, doc = run(go())
    assert a["truncated"] is True and 0 < len(a["hits"]) < 50
    assert "3000 bytes" in a["note"]
    assert len(json.dumps(a, ensure_ascii=False).encode()) < 3000 + 500
    for h in a["hits"]:
        assert len(h["fields"]["body"].encode()) <= 100
        assert h["cut_fields"] == ["body"]
    assert len(json.dumps(doc, ensure_ascii=False).encode()) <= 3000 + 200


def start_http(data, *extra):
    proc = subprocess.Popen([QUARRY, "mcp", "--data", data, "--listen", "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("quarry mcp listening on http://"), line
    return proc, line.split(" on ", 1)[1]


def stop_http(proc):
    proc.terminate()  # SIGTERM: the server finishes and commits
    assert proc.wait(timeout=60) == 0


def test_streamable_http_answers_as_stdio(data):
    async def answers(client):
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        s = await call(client, "search", index="reuters", query="oil AND prices", size=10,
                       default_fields=["body"], fields=["title"])
        c = await call(client, "count", index="reuters", query="grain")
        e = await call_error(client, "search", index="../etc", query="x")
        return tools, s, c, e

    async def via_stdio():
        async with stdio(data) as client:
            return await answers(client)
    want = run(via_stdio())
    proc, url = start_http(data)
    try:
        async def via_http():
            async with Client(url) as client:
                return await answers(client)
        got = run(via_http())
    finally:
        stop_http(proc)
    assert got == want
    assert got[0] == READ_TOOLS
    lib = library(data, "--top", "10", "--default-field", "body", "oil AND prices")
    same_ranking(got[1]["hits"], lib["top"])


def test_http_needs_keys_off_loopback_and_checks_them(data, tmp_path):
    r = subprocess.run([QUARRY, "mcp", "--data", data, "--listen", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "not a loopback address" in r.stderr, r.stderr
    keys = tmp_path / "keys"
    keys.write_text("# MCP clients\nsecret-1\n")
    proc, url = start_http(data, "--api-key-file", str(keys))
    try:
        req = urllib.request.Request(url, data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 401

        async def go():
            http = create_mcp_http_client(headers={"Authorization": "Bearer secret-1"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return sorted(t.name for t in (await client.list_tools()).tools)
        assert run(go()) == READ_TOOLS
    finally:
        stop_http(proc)


TRANSCRIPT_DOC = os.path.join(ROOT, "docs", "mcp-transcript.jsonl")


def test_session_transcript(data, notes, tmp_path):
    """A short session recorded off the pipes; docs/mcp-transcript.jsonl is one such session
    (QUARRY_MCP_WRITE_TRANSCRIPT=1 rewrites it), and its requests must be this test's."""
    log = tmp_path / "transcript.jsonl"

    async def go():
        async with stdio(data, wrap=str(log)) as client:
            await client.list_tools()
            await call(client, "list_indices")
            hits = await call(client, "search", index="reuters", query="cocoa AND bahia", size=2,
                              fields=["title"], highlight=["body"])
            assert hits["hits"][0]["id"] == "1", hits  # BAHIA COCOA REVIEW
            await call(client, "get_document", index="reuters", id="1",
                       fields=["title", "date", "topics"])
            await call(client, "count", index="reuters", query_dsl={"term": {"topics": "cocoa"}})
            await call(client, "semantic_search", index="reuters", field="v", vector=vector(7),
                       k=2, fields=["title"])
            await call(client, "semantic_search", index="notes", field="body",
                       question="which countries export wheat?", k=2, fields=["title"])
            await call(client, "hybrid_search", index="notes", field="body",
                       question="oil prices fell", size=2, fields=["title"])
            await call_error(client, "search", index="../../etc", query="passwd")
    run(go())
    lines = [json.loads(l) for l in log.read_text().splitlines()]
    assert {l["from"] for l in lines} == {"client", "server"}
    for l in lines:
        assert l["message"].get("jsonrpc") == "2.0", l
    calls = [l["message"] for l in lines if l["from"] == "client"
             and l["message"].get("method") == "tools/call"]
    assert len(calls) == 8
    if os.environ.get("QUARRY_MCP_WRITE_TRANSCRIPT") == "1":
        shutil.copy(log, TRANSCRIPT_DOC)

    def requests(path):
        out = []
        for l in open(path, encoding="utf-8"):
            m = json.loads(l)["message"]
            if m.get("method") == "tools/call":
                out.append(m["params"]["name"] + json.dumps(m["params"].get("arguments"), sort_keys=True))
        return out
    assert requests(TRANSCRIPT_DOC) == requests(log), "rerun with QUARRY_MCP_WRITE_TRANSCRIPT=1"


def test_one_index_directory(data):
    async def go():
        args = ["mcp", "--index", os.path.join(data, "reuters")]
        async with Client(StdioServerParameters(command=QUARRY, args=args)) as client:
            listed = await call(client, "list_indices")
            e = await call_error(client, "count", index="other", query="oil")
            n = await call(client, "count", index="reuters", query="oil")
            return listed, e, n
    listed, e, n = run(go())
    assert [i["name"] for i in listed["indices"]] == ["reuters"]
    assert "serves only [reuters]" in e, e
    assert n["count"] == library(data, "--mode", "count", "oil")["hits"]
    r = subprocess.run([QUARRY, "mcp", "--index", data], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "is not an index directory" in r.stderr, r.stderr


def rpc(proc, message):
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == message["id"]:
            return answer


def test_acknowledged_writes_survive_a_kill(data):
    """A write acknowledged without refresh or commit is in the translog: after SIGKILL the next
    server replays it."""
    proc = subprocess.Popen([QUARRY, "mcp", "--data", data, "--allow-writes"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        init = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert init["result"]["serverInfo"]["name"] == "quarry", init
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        def tool(i, name, **arguments):
            a = rpc(proc, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": name, "arguments": arguments}})
            assert not a["result"].get("isError"), a
            return a["result"]["structuredContent"]
        tool(2, "create_index", index="scratch",
             mappings={"properties": {"note": {"type": "text"}}})
        a = tool(3, "index_documents", index="scratch", refresh=False,
                 documents=[{"id": "k1", "source": {"note": "written before the kill"}}])
        assert a["acknowledged"] and a["durable"] and not a["searchable"], a
    finally:
        proc.kill()
        proc.wait(timeout=60)

    async def after():
        async with stdio(data) as client:
            return await call(client, "get_document", index="scratch", id="k1")
    doc = run(after())
    assert doc["found"] and doc["fields"] == {"note": "written before the kill"}, doc


def test_one_index_with_writes_is_refreshed_on_schedule(data):
    """--index --allow-writes: the scheduler refreshes the one index (refresh_interval 1 s), so a
    write made without `refresh` becomes searchable; creating indexes needs --data."""
    async def go():
        args = ["mcp", "--index", os.path.join(data, "scratch"), "--allow-writes"]
        async with Client(StdioServerParameters(command=QUARRY, args=args)) as client:
            e = await call_error(client, "create_index", index="more", mappings={})
            assert "--data" in e, e
            a = await call(client, "index_documents", index="scratch", refresh=False,
                           documents=[{"id": "k2", "source": {"note": "refreshed later"}}])
            assert not a["searchable"]
            for _ in range(100):
                n = await call(client, "count", index="scratch", query="refreshed")
                if n["count"] == 1:
                    return True
                await asyncio.sleep(0.1)
            return False
    assert run(go()), "the write never became searchable"


def test_sigterm_ends_a_stdio_session_cleanly(data):
    """SIGTERM while the client keeps stdin open: the server commits and exits 0 (it does not wait
    for a line that never comes)."""
    proc = subprocess.Popen([QUARRY, "mcp", "--data", data], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        init = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert "result" in init, init
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
