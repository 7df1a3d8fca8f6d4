"""Shard benchmark for quarry.ray: build time and query latency for 1, 2 and 4 shards.

Input: W2 (the English Wikipedia sample, wikiextractor files under
/work/shared/data/enwiki-2015-sample, the first --docs documents) or any JSON Lines file
(--jsonl). Queries: the search-benchmark-game set (/work/shared/data/queries/queries.txt).
For each shard count it builds the sharded index with build_sharded (parallel Ray tasks) and
runs every query through ShardedSearcher (dfs_query_then_fetch: statistics, query and fetch
round trips) --rounds times, and prints a Markdown table; the same queries on one local
quarry.Index (no Ray) are the baseline. Run it with the test venv:

    target/pyvenv/bin/python crates/quarry-py/bench/ray_shards.py --docs 50000

Ray runs locally with --cpus CPUs (default 2). On a 2-core machine more than two shards
cannot build faster; the table shows the overhead of sharding, not a speed-up.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ray
import zstandard

import quarry
from quarry.ray import ShardedSearcher, build_sharded

W2 = Path("/work/shared/data/enwiki-2015-sample")
QUERIES = Path("/work/shared/data/queries/queries.txt")
DOC_START = re.compile(r'<doc id="(\d+)"[^>]*title="([^"]*)"')


def w2_to_jsonl(limit: int, out: Path) -> int:
    """Writes the first `limit` W2 documents as {"id", "title", "body"} lines."""
    n = 0
    with open(out, "w", encoding="utf-8") as w:
        for part in sorted(W2.glob("*.zst")):
            with open(part, "rb") as f:
                text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), encoding="utf-8")
                doc = None
                body: list[str] = []
                for line in text:
                    m = DOC_START.match(line)
                    if m:
                        doc = {"id": int(m.group(1)), "title": m.group(2)}
                        body = []
                    elif line.startswith("</doc>") and doc is not None:
                        doc["body"] = "".join(body[1:]).strip()  # first line repeats the title
                        w.write(json.dumps(doc) + "\n")
                        n += 1
                        doc = None
                        if n >= limit:
                            return n
                    elif doc is not None:
                        body.append(line)
    return n


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=50_000, help="W2 documents to index")
    ap.add_argument("--jsonl", type=Path, help="index this JSON Lines file instead of W2")
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--queries", type=int, default=200, help="first N queries of the set")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="quarry-ray-bench-"))
    src = args.jsonl
    if src is None:
        src = work / "w2.jsonl"
        t0 = time.perf_counter()
        n = w2_to_jsonl(args.docs, src)
        print(f"W2: {n} documents, {src.stat().st_size / 1e6:.0f} MB JSON Lines "
              f"({time.perf_counter() - t0:.1f}s to convert)", file=sys.stderr)
    queries = [json.loads(l)["query"] for l in QUERIES.read_text().splitlines()[: args.queries]]
    schema = (quarry.SchemaBuilder().add_integer_field("id").add_text_field("title")
              .add_text_field("body").build())

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    # Baseline: one local index, no Ray.
    t0 = time.perf_counter()
    single = quarry.Index.create(work / "single", schema)
    with single.writer(threads=1, memory_mb=256) as w:
        w.add_many(json.loads(l) for l in open(src, encoding="utf-8"))
    build_single = time.perf_counter() - t0
    s = single.searcher()
    lat = []
    for _ in range(args.rounds):
        for q in queries:
            t = time.perf_counter()
            s.search(q, limit=10)
            lat.append(time.perf_counter() - t)
    rows.append(("local Index (no Ray)", build_single, lat))

    for n in [int(x) for x in args.shards.split(",")]:
        t0 = time.perf_counter()
        build_sharded([src], work / f"s{n}", shards=n, schema=schema)
        build = time.perf_counter() - t0
        lat = []
        with ShardedSearcher(work / f"s{n}") as sh:
            for _ in range(args.rounds):
                for q in queries:
                    t = time.perf_counter()
                    r = sh.search(q, limit=10)
                    lat.append(time.perf_counter() - t)
                    assert r.count == s.count(q), q
        rows.append((f"{n} shard{'s' if n > 1 else ''} (Ray)", build, lat))
    ray.shutdown()

    print(f"\n{len(queries)} queries x {args.rounds} rounds, top 10 with exact count, "
          f"Ray num_cpus={args.cpus}\n")
    print("| setup | build (s) | p50 latency (ms) | p95 (ms) | mean (ms) |")
    print("|---|---:|---:|---:|---:|")
    for name, build, lat in rows:
        print(f"| {name} | {build:.1f} | {pct(lat, 0.5) * 1e3:.2f} | {pct(lat, 0.95) * 1e3:.2f} "
              f"| {statistics.mean(lat) * 1e3:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
