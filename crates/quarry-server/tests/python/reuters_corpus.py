"""The bundled Reuters-21578 corpus as dicts, for the Python client suites (the Elasticsearch
clients' here, the MCP client's in tests/mcp)."""
import io
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CORPUS = os.path.join(ROOT, "data", "reuters21578.jsonl.zst")


def reuters(n):
    """The first `n` documents of the corpus."""
    import zstandard as zstd

    with open(CORPUS, "rb") as f:
        text = io.TextIOWrapper(zstd.ZstdDecompressor().stream_reader(f), encoding="utf-8")
        for i, line in enumerate(text):
            if i >= n:
                break
            yield json.loads(line)
