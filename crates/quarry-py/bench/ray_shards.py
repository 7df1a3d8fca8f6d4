"""Shard benchmark for quarry.ray: build time and query latency for 1, 2 and 4 shards.

Input: W2 (the English Wikipedia 2015 sample split into paragraphs, 1,218,896 documents, as
`quarry-bench prepare --workload w2` writes it to bench/results/tmp/w2/docs.jsonl; prepared
here with the same tool when missing), the first --docs lines of it, or any JSON Lines file
(--jsonl). Queries: the search-benchmark-game set (/work/shared/data/queries/queries.txt,
962 queries; --queries N takes the first N).

Baseline: one local quarry.Index (no Ray) built from the same file by one writer thread.
Then for each shard count: build_sharded (one Ray task per shard, one writer thread each),
and every query through ShardedSearcher in each mode (dfs_query_then_fetch: statistics, query
and fetch round trips; `count` mode: one round trip). Both sides return the stored fields of
the 10 hits. Every sharded answer is checked against the local index (exact counts, top-10
scores). Prints a Markdown report (also written to --out).

    target/pyvenv/bin/python crates/quarry-py/bench/ray_shards.py            # full W2
    target/pyvenv/bin/python crates/quarry-py/bench/ray_shards.py --docs 50000 --queries 100

Ray: a local one with --cpus CPUs (default 2), or an existing cluster (--address, e.g. the
network-namespace cluster of bench/netns.sh); --actor-resource NAME places the shard actors
and build tasks on nodes offering the custom resource NAME. On a 2-core machine more than
two shards cannot build faster; the table shows the overhead of sharding, not a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray

import quarry
from quarry.ray import ShardedSearcher, build_sharded

REPO = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("QUARRY_SHARED_DIR", REPO.parent / "shared"))
if not (SHARED / "data").is_dir():
    SHARED = Path("/work/shared")
W2_JSONL = REPO / "bench/results/tmp/w2/docs.jsonl"
QUERIES = SHARED / "data/queries/queries.txt"
MODES = [("top", "top10"), ("top_count", "top10+count"), ("count", "count")]


def prepare_w2() -> Path:
    """W2 as JSON Lines, converted with the shared tool when not yet prepared."""
    if W2_JSONL.with_suffix(".jsonl.done").exists():
        return W2_JSONL
    W2_JSONL.parent.mkdir(parents=True, exist_ok=True)
    part = W2_JSONL.with_suffix(".jsonl.part")
    tool = SHARED / "tools/wiki_to_jsonl.py"
    print(f"preparing W2 with {tool} -> {W2_JSONL}", file=sys.stderr)
    subprocess.run(
        [sys.executable, str(tool), "--unit", "paragraph", "-o", str(part)],
        check=True, cwd=tool.parent,
    )
    part.replace(W2_JSONL)
    n = sum(1 for line in open(W2_JSONL, encoding="utf-8") if line.strip())
    W2_JSONL.with_suffix(".jsonl.done").write_text(str(n))
    return W2_JSONL


def head(src: Path, n: int, out: Path) -> Path:
    with open(src, encoding="utf-8") as r, open(out, "w", encoding="utf-8") as w:
        for i, line in enumerate(r):
            if i >= n:
                break
            w.write(line)
    return out


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p * len(s) + 0.5)) - 1))]


def run_queries(search, queries, rounds):
    """{mode: [seconds per call]} over all queries, modes interleaved per query."""
    lat: dict[str, list[float]] = {m: [] for m, _ in MODES}
    for _ in range(rounds):
        for q in queries:
            for mode, _ in MODES:
                t = time.perf_counter()
                search(q, mode)
                lat[mode].append(time.perf_counter() - t)
    return lat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jsonl", type=Path, help="index this JSON Lines file instead of W2")
    ap.add_argument("--docs", type=int, help="only the first N documents")
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--queries", type=int, help="first N queries of the set (default: all)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes over the queries")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray")
    ap.add_argument("--address", help="connect to this Ray cluster instead of starting one")
    ap.add_argument("--actor-resource", help="custom resource the shard actors and tasks need")
    ap.add_argument("--spread", action="store_true",
                    help="SPREAD scheduling: shard actors and tasks on different nodes")
    ap.add_argument("--work", type=Path, help="directory for the indexes (default: a temp dir)")
    ap.add_argument("--label", default="", help="added to the setup names, e.g. 'netns'")
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="quarry-ray-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = args.jsonl or prepare_w2()
    if args.docs:
        src = head(src, args.docs, work / "input.jsonl")
    ndocs = sum(1 for line in open(src, encoding="utf-8") if line.strip())
    queries = [json.loads(l)["query"] for l in QUERIES.read_text().splitlines() if l.strip()]
    queries = queries[: args.queries] if args.queries else queries
    schema = (quarry.SchemaBuilder().add_integer_field("id").add_text_field("title")
              .add_text_field("body").build())
    load_start = os.getloadavg()

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    res: dict = {"resources": {args.actor_resource: 0.01}} if args.actor_resource else {}
    if args.spread:
        res["scheduling_strategy"] = "SPREAD"

    rows = []
    # Baseline: one local index, no Ray.
    t0 = time.perf_counter()
    single = quarry.Index.create(work / "single", schema, overwrite=True)
    with single.writer(threads=1, memory_mb=256) as w:
        with open(src, encoding="utf-8") as f:
            w.add_many(json.loads(line) for line in f if line.strip())
    build_single = time.perf_counter() - t0
    s = single.searcher()

    def local(q, mode):
        return s.search(q, limit=10, mode=mode)

    run_queries(local, queries, args.warmup)
    rows.append(("local Index (no Ray)", build_single, run_queries(local, queries, args.rounds)))
    truth = {q: (s.count(q), [h.score for h in s.search(q, limit=10)]) for q in queries}

    mismatches = 0
    placement: dict[int, list[str]] = {}
    for n in [int(x) for x in args.shards.split(",")]:
        t0 = time.perf_counter()
        build_sharded([src], work / f"s{n}", shards=n, schema=schema, task_options=res)
        build = time.perf_counter() - t0
        with ShardedSearcher(work / f"s{n}", actor_options=res) as sh:

            def sharded(q, mode, sh=sh):
                return sh.search(q, limit=10, mode=mode)

            placement[n] = sh.node_ips()
            run_queries(sharded, queries, args.warmup)
            lat = run_queries(sharded, queries, args.rounds)
            for q in queries:
                count, scores = truth[q]
                r = sh.search(q, limit=10)
                if r.count != count or [h.score for h in r] != scores:
                    mismatches += 1
                    print(f"MISMATCH {n} shards: {q!r}", file=sys.stderr)
        name = f"{n} shard{'s' if n > 1 else ''} (Ray{', ' + args.label if args.label else ''})"
        rows.append((name, build, lat))
    nodes = len([x for x in ray.nodes() if x.get("Alive")])
    ray.shutdown()

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    lines = [
        f"Input: {src} ({ndocs:,} documents, {src.stat().st_size / 1e6:.0f} MB); "
        f"{len(queries)} queries x {args.rounds} round(s) after {args.warmup} warm-up pass(es), "
        "limit 10 with stored fields; "
        + (f"Ray cluster {args.address} ({nodes} nodes)" if args.address else f"local Ray num_cpus={args.cpus}")
        + f"; commit {commit}; {platform.node()}, {os.cpu_count()} CPUs; load average at start "
        f"{load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, at end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; sharded answers differing from the local index: {mismatches}; shard actors on "
        + "; ".join(f"{n} shard(s): {', '.join(ips)}" for n, ips in placement.items()),
        "",
        "| setup | build (s) | docs/s | " + " | ".join(f"{label} p50 / p99 (ms)" for _, label in MODES) + " |",
        "|---|---:|---:|" + "---:|" * len(MODES),
    ]
    for name, build, lat in rows:
        cells = " | ".join(
            f"{pct(lat[m], 0.5) * 1e3:.2f} / {pct(lat[m], 0.99) * 1e3:.2f}" for m, _ in MODES
        )
        lines.append(f"| {name} | {build:.1f} | {ndocs / build:,.0f} | {cells} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
