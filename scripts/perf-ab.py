#!/usr/bin/env python3
"""Which quarry build answers a query set faster? An A/B comparison of two `quarry-bench`
binaries on the same index, interleaved so that machine load hits both alike.

Each round runs `quarry-bench driver quarry query` once with binary A and once with binary B
(order alternating per round) on QUERIES (the JSON-lines files the suite writes, e.g.
`bench/results/tmp/w2/q-union.jsonl`). Per (query, mode) the best p50 over the rounds is kept;
the report gives, per (class, mode), the geometric mean of p50(B) / p50(A), and the mean ratio.
Hit counts of A and B must agree (the script fails otherwise). With `--engine-b` (and
`--index-b` for that engine's index) B is a peer's driver instead, for a side-by-side ratio
against Tantivy or Lucene in the same minutes; hit counts are then not compared (the analyzers
differ).

    scripts/perf-ab.py --a /tmp/quarry-bench-base --b target/release/quarry-bench \
        --index bench/results/tmp/w2/<quarry index> --queries bench/results/tmp/w2/q-union.jsonl \
        --modes count --rounds 3 --iters 10
"""
import argparse
import json
import math
import subprocess
import sys
from collections import defaultdict


def run(binary, engine, index, args):
    cmd = [binary, "driver", engine, "query", "--index", index, "--queries", args.queries,
           "--modes", args.modes, "--warmup", str(args.warmup), "--iters", str(args.iters),
           "--global-warmup-rounds", str(args.global_rounds)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    recs = {}
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("op") != "query":
            continue
        if r.get("error"):
            sys.exit(f"{binary}: {r['query']} {r['mode']}: {r['error']}")
        recs[(r["query"], r["mode"])] = r
    return recs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", required=True, help="baseline quarry-bench binary")
    p.add_argument("--b", required=True, help="candidate quarry-bench binary")
    p.add_argument("--index", required=True)
    p.add_argument("--engine-b", default="quarry", help="B's driver: quarry, tantivy, lucene")
    p.add_argument("--index-b", help="B's index (default: --index)")
    p.add_argument("--queries", required=True)
    p.add_argument("--modes", default="top10,top10_count,count")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--global-rounds", type=int, default=1)
    p.add_argument("--worst", type=int, default=5, help="list the N biggest changes per cell")
    p.add_argument("--stat", default="p50_us", choices=["p50_us", "min_us", "mean_us"],
                   help="per-query figure (the best over rounds is kept); min_us resists load best")
    args = p.parse_args()

    best = {"a": {}, "b": {}}
    sides = [("a", args.a, "quarry", args.index),
             ("b", args.b, args.engine_b, args.index_b or args.index)]
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for name, binary, engine, index in order:
            for key, rec in run(binary, engine, index, args).items():
                cur = best[name].get(key)
                if cur is None or rec[args.stat] < cur[args.stat]:
                    best[name][key] = rec
    cells = defaultdict(list)
    for key, ra in best["a"].items():
        rb = best["b"].get(key)
        if rb is None:
            continue
        if (args.engine_b == "quarry" and ra["hits"] != rb["hits"]
                and ra["hits_relation"] == rb["hits_relation"] == "eq"):
            sys.exit(f"hit counts differ for {key}: {ra['hits']} vs {rb['hits']}")
        cells[(ra["class"], key[1])].append((key[0], ra, rb))
    print(f"figure: {args.stat}, best of {args.rounds} rounds per binary")
    print(f"{'class':<14}{'mode':<13}{'n':>5}{'A geo µs':>11}{'B geo µs':>11}{'B/A geo':>9}"
          f"{'A mean':>10}{'B mean':>10}{'B/A mean':>9}")
    for (cls, mode), rows in sorted(cells.items()):
        ga = math.exp(sum(math.log(max(a[args.stat], 1e-3)) for _, a, _ in rows) / len(rows))
        gb = math.exp(sum(math.log(max(b[args.stat], 1e-3)) for _, _, b in rows) / len(rows))
        ma = sum(a[args.stat] for _, a, _ in rows) / len(rows)
        mb = sum(b[args.stat] for _, _, b in rows) / len(rows)
        print(f"{cls:<14}{mode:<13}{len(rows):>5}{ga:>11.2f}{gb:>11.2f}{gb / ga:>9.3f}"
              f"{ma:>10.1f}{mb:>10.1f}{mb / ma:>9.3f}")
        if args.worst:
            rows.sort(key=lambda t: t[2][args.stat] / max(t[1][args.stat], 1e-3))
            for q, a, b in rows[:args.worst] + rows[-args.worst:]:
                print(f"    {b[args.stat] / max(a[args.stat], 1e-3):6.3f}  {a[args.stat]:9.1f} -> "
                      f"{b[args.stat]:9.1f} µs  {q}")


if __name__ == "__main__":
    main()
