#!/usr/bin/env python3
"""How fast does a fresh driver process answer its first query, and how much memory does it
touch? Cold start of one or more (binary, engine) pairs side by side, interleaved so that machine
load hits them alike: the suite's cold-start measurement (`quarry-bench run`, section "Cold start")
without its indexing and query phases.

Each round, for each cache state, runs every pair once (order rotating per round) as
`<binary> driver <engine> coldstart --index <index> --query <query>`, after reading every index
file (`warm`, as the orchestrator does: only what is missing from the page cache is read, so the
cache keeps whatever shape earlier runs left), after evicting every index file and then reading it
whole (`reread`: the same page-cache state for every engine and run, the files held in the large
folios Linux readahead builds, which a mapping then maps whole), or after fsync +
posix_fadvise(DONTNEED) of every index file (`evicted`, as the orchestrator does). Reported per (pair, cache): median spawn -> first result line (measured here, from
just before spawn), median open -> first result (measured by the driver), the largest driver
VmHWM (peak RSS), and the hit count; then, for drivers that report it (the Rust ones), the median
time of each part of open -> first result: open, parse, search, fetching the hits' stored ids.

    scripts/coldstart-ab.py --rounds 15 \
        --pair quarry=target/release/quarry-bench:quarry:<quarry index> \
        --pair tantivy=target/release/quarry-bench:tantivy:<tantivy index>

A pair is `label=binary:engine:index`. The index directories are only read (and evicted).
"""
import argparse
import json
import os
import statistics
import subprocess
import time


def index_files(index):
    return [os.path.join(index, n) for n in sorted(os.listdir(index))
            if os.path.isfile(os.path.join(index, n))]


def warm(index):
    for f in index_files(index):
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def evict(index):
    for f in index_files(index):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_once(binary, engine, index, query):
    cmd = [binary, "driver", engine, "coldstart", "--index", index, "--query", query]
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    spawn_us = (time.perf_counter() - start) * 1e6
    rest = p.stdout.read()
    if p.wait() != 0:
        raise SystemExit(f"{cmd} failed")
    for l in [line] + rest.splitlines():
        if not l.strip():
            continue
        r = json.loads(l)
        if r.get("op") == "coldstart":
            r["spawn_us"] = spawn_us
            return r
    raise SystemExit(f"{cmd}: no coldstart record")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", action="append", required=True,
                    help="label=binary:engine:index (repeat)")
    ap.add_argument("--query", default="griffith observatory")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--caches", default="warm,reread,evicted")
    args = ap.parse_args()
    pairs = []
    for p in args.pair:
        label, rest = p.split("=", 1)
        binary, engine, index = rest.split(":", 2)
        pairs.append((label, binary, engine, index))
    caches = [c for c in args.caches.split(",") if c]
    res = {(l, c): [] for (l, _, _, _) in pairs for c in caches}
    for rnd in range(args.rounds):
        order = pairs[rnd % len(pairs):] + pairs[:rnd % len(pairs)]
        for cache in caches:
            for label, binary, engine, index in order:
                if cache != "warm":
                    evict(index)
                if cache != "evicted":
                    warm(index)
                res[(label, cache)].append(run_once(binary, engine, index, args.query))
    print(f"load average {os.getloadavg()}, {args.rounds} rounds, query {args.query!r}")
    print("| pair | cache | runs | spawn -> first result ms (median) | open -> first result ms "
          "(median) | peak RSS MiB (max) | peak RSS MiB (median) | major faults (median) | hits |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (label, cache), rs in res.items():
        sp = statistics.median(r["spawn_us"] for r in rs) / 1000
        op = statistics.median(r["open_to_first_result_us"] for r in rs) / 1000
        rss = [r["peak_rss_bytes"] / 1048576 for r in rs]
        mf = statistics.median(r.get("major_faults") or 0 for r in rs)
        hits = sorted({r["hits"] for r in rs})
        print(f"| {label} | {cache} | {len(rs)} | {sp:.2f} | {op:.2f} | {max(rss):.1f} | "
              f"{statistics.median(rss):.1f} | {mf:g} | {','.join(map(str, hits))} |")
    # Where open -> first result went (drivers that report it: the Rust ones).
    rows = [(k, [r["phases_us"] for r in rs if r.get("phases_us")]) for k, rs in res.items()]
    if any(ph for _, ph in rows):
        print()
        print("| pair | cache | open µs | parse µs | search µs | fetch stored ids µs (medians) |")
        print("|---|---|---:|---:|---:|---:|")
        for (label, cache), ph in rows:
            if ph:
                med = [statistics.median(p[k] for p in ph) for k in ("open", "parse", "search", "fetch")]
                print(f"| {label} | {cache} | " + " | ".join(f"{m:.0f}" for m in med) + " |")


if __name__ == "__main__":
    main()
