#!/usr/bin/env python3
"""Peer engines of `quarry-bench vectors`: FAISS (flat inner product, HNSW), hnswlib, usearch.

Spawned by `quarry-bench vectors` in the venv of scripts/vectors-venv.sh; prints one JSON object
per line on stdout. Every engine builds its index from the same unit float32 vectors, then answers
the same queries one at a time on one thread (OMP_NUM_THREADS=1, faiss.omp_set_num_threads(1),
hnswlib num_threads=1, usearch threads=1); only the search calls are timed. Recall@k is against
the exact top-k ids quarry-bench computed (--truth: rows of k little-endian uint32).

    vectors-peers.py --docs D.f32 --count N --queries Q.f32 --nq M --dims 384 --truth T.u32 \
        --k 10 --m 16 --ef-construction 100 --ef 10,20,40 --engines faiss-flat,faiss-hnsw,hnswlib,usearch
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def emit(rec):
    print(json.dumps(rec), flush=True)


def recall(ids, truth, k):
    hits = 0
    for got, want in zip(ids, truth):
        hits += len(set(int(x) for x in got[:k] if x >= 0) & set(int(x) for x in want[:k]))
    return hits / (len(truth) * k)


def timed_queries(search, queries, k):
    """search(q) -> ids; returns (ids list, latencies in µs)."""
    ids, lat = [], []
    for q in queries:
        t = time.perf_counter_ns()
        r = search(q)
        lat.append((time.perf_counter_ns() - t) / 1000.0)
        ids.append(r)
    return ids, lat


def summary(lat):
    a = np.sort(np.asarray(lat))
    return {
        "p50_us": float(np.percentile(a, 50)),
        "p99_us": float(np.percentile(a, 99)),
        "mean_us": float(a.mean()),
        "qps": float(len(a) / (a.sum() / 1e6)),
    }


def index_bytes(path):
    return os.path.getsize(path) if os.path.exists(path) else None


def run_engine(name, args, docs, queries, truth, tmp):
    k = args.k
    efs = [int(x) for x in args.ef.split(",") if x]
    base_rss = rss_bytes()
    if name == "faiss-flat":
        import faiss

        faiss.omp_set_num_threads(1)
        t = time.perf_counter()
        index = faiss.IndexFlatIP(args.dims)
        index.add(docs)
        build = time.perf_counter() - t
        path = os.path.join(tmp, "faiss-flat.index")
        faiss.write_index(index, path)
        rec = {"engine": name, "version": faiss.__version__, "op": "build", "seconds": build,
               "index_bytes": index_bytes(path), "rss_delta_bytes": rss_bytes() - base_rss}
        emit(rec)
        for q in queries[: min(len(queries), 5)]:
            index.search(q[None, :], k)
        ids, lat = timed_queries(lambda q: index.search(q[None, :], k)[1][0], queries, k)
        emit({"engine": name, "op": "exact", "recall": recall(ids, truth, k), **summary(lat)})
        return
    if name == "faiss-hnsw":
        import faiss

        faiss.omp_set_num_threads(1)
        t = time.perf_counter()
        index = faiss.IndexHNSWFlat(args.dims, args.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = args.ef_construction
        index.add(docs)
        build = time.perf_counter() - t
        path = os.path.join(tmp, "faiss-hnsw.index")
        faiss.write_index(index, path)
        emit({"engine": name, "version": faiss.__version__, "op": "build", "seconds": build,
              "index_bytes": index_bytes(path), "rss_delta_bytes": rss_bytes() - base_rss})
        for ef in efs:
            index.hnsw.efSearch = max(ef, k)
            for q in queries[:5]:
                index.search(q[None, :], k)
            ids, lat = timed_queries(lambda q: index.search(q[None, :], k)[1][0], queries, k)
            emit({"engine": name, "op": "sweep", "ef": ef, "recall": recall(ids, truth, k),
                  **summary(lat)})
        return
    if name == "hnswlib":
        import hnswlib

        t = time.perf_counter()
        index = hnswlib.Index(space="ip", dim=args.dims)
        index.init_index(max_elements=len(docs), ef_construction=args.ef_construction, M=args.m)
        index.set_num_threads(1)
        index.add_items(docs, np.arange(len(docs)), num_threads=1)
        build = time.perf_counter() - t
        path = os.path.join(tmp, "hnswlib.index")
        index.save_index(path)
        emit({"engine": name, "version": getattr(hnswlib, "__version__", "0.8.0"), "op": "build",
              "seconds": build, "index_bytes": index_bytes(path),
              "rss_delta_bytes": rss_bytes() - base_rss})
        for ef in efs:
            index.set_ef(max(ef, k))
            for q in queries[:5]:
                index.knn_query(q, k=k, num_threads=1)
            ids, lat = timed_queries(lambda q: index.knn_query(q, k=k, num_threads=1)[0][0],
                                     queries, k)
            emit({"engine": name, "op": "sweep", "ef": ef, "recall": recall(ids, truth, k),
                  **summary(lat)})
        return
    if name == "usearch":
        import usearch
        from usearch.index import Index

        t = time.perf_counter()
        index = Index(ndim=args.dims, metric="ip", dtype="f32", connectivity=args.m,
                      expansion_add=args.ef_construction)
        index.add(np.arange(len(docs)), docs, threads=1)
        build = time.perf_counter() - t
        path = os.path.join(tmp, "usearch.index")
        index.save(path)
        emit({"engine": name, "version": usearch.__version__, "op": "build", "seconds": build,
              "index_bytes": index_bytes(path), "rss_delta_bytes": rss_bytes() - base_rss})
        for ef in efs:
            index.expansion_search = max(ef, k)
            for q in queries[:5]:
                index.search(q, k, threads=1)
            ids, lat = timed_queries(lambda q: index.search(q, k, threads=1).keys, queries, k)
            emit({"engine": name, "op": "sweep", "ef": ef, "recall": recall(ids, truth, k),
                  **summary(lat)})
        return
    raise SystemExit(f"unknown engine {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--nq", type=int, required=True)
    ap.add_argument("--dims", type=int, required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=100)
    ap.add_argument("--ef", default="10,20,40,80,160,320")
    ap.add_argument("--engines", default="faiss-flat,faiss-hnsw,hnswlib,usearch")
    ap.add_argument("--tmp", required=True)
    args = ap.parse_args()
    os.makedirs(args.tmp, exist_ok=True)
    docs = np.fromfile(args.docs, dtype="<f4", count=args.count * args.dims).reshape(-1, args.dims)
    queries = np.fromfile(args.queries, dtype="<f4", count=args.nq * args.dims).reshape(-1, args.dims)
    truth = np.fromfile(args.truth, dtype="<u4").reshape(len(queries), -1)
    docs = np.ascontiguousarray(docs)
    queries = np.ascontiguousarray(queries)
    for name in args.engines.split(","):
        name = name.strip()
        if not name:
            continue
        try:
            run_engine(name, args, docs, queries, truth, args.tmp)
        except Exception as e:  # one engine's failure is reported, the others still run
            emit({"engine": name, "op": "error", "error": f"{type(e).__name__}: {e}"})
        for f in os.listdir(args.tmp):
            os.remove(os.path.join(args.tmp, f))


if __name__ == "__main__":
    sys.exit(main())
