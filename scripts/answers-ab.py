#!/usr/bin/env python3
"""Do two quarry builds, or two indexes of the same documents, give the same answers?

Runs `quarry-bench driver quarry query` once per (query, mode) for A and B (no warm-up, one
iteration) and compares the top 10 (ids and scores) and the exact hit counts. Top-10 mode's
lower-bound counts (`gte`) depend on how far a pruned walk went and are not compared.

    scripts/answers-ab.py --a target/release/quarry-bench --index-a IDX_V5 --index-b IDX_V6 \
        --queries bench/results/tmp/w2/queries.jsonl
"""
import argparse
import json
import subprocess
import sys


def run(binary, index, queries, modes):
    out = subprocess.run(
        [binary, "driver", "quarry", "query", "--index", index, "--queries", queries,
         "--modes", modes, "--warmup", "0", "--iters", "1", "--global-warmup-rounds", "0"],
        check=True, capture_output=True, text=True).stdout
    answers = {}
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("op") != "query":
            continue
        hits = None if r.get("hits_relation") == "gte" else r.get("hits")
        answers[(r["query"], r["mode"])] = (hits, json.dumps(r.get("top")), r.get("error"))
    return answers


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="quarry-bench binary A")
    p.add_argument("--b", help="quarry-bench binary B (default: A)")
    p.add_argument("--index-a", required=True)
    p.add_argument("--index-b", help="B's index (default: A's)")
    p.add_argument("--queries", required=True)
    p.add_argument("--modes", default="top10,top10_count,count")
    args = p.parse_args()
    a = run(args.a, args.index_a, args.queries, args.modes)
    b = run(args.b or args.a, args.index_b or args.index_a, args.queries, args.modes)
    differ = [k for k in a if a[k] != b.get(k)]
    print(f"(query, mode) pairs: A {len(a)}, B {len(b)}; differing: {len(differ)}")
    for k in differ[:10]:
        print(f"  {k}: A {a[k][:1]} B {b.get(k, (None,))[:1]}")
    sys.exit(1 if differ or len(a) != len(b) else 0)


if __name__ == "__main__":
    main()
