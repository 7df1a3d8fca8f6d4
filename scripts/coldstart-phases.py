#!/usr/bin/env python3
"""Where does a fresh process's open -> first result go? Splits a call-graph profile of many
cold starts into the driver's phases (open, parse, search, fetching the stored ids) by the
frames on each sample's stack, and prints per phase the time per process and its hottest leaf
functions, then the fetch phase by cause (zstd decoding, zstd's `cpuid`, CRC32C, ...).

    perf record -F 20000 -e cpu-clock --call-graph dwarf,32768 -o cs.data -- bash -c \\
        'for i in $(seq 100); do target/release/quarry-bench driver quarry coldstart \\
            --index <index> --query "griffith observatory" >/dev/null; done'
    perf script -i cs.data --comm quarry-bench -F ip,sym > cs.txt
    scripts/coldstart-phases.py cs.txt --runs 100 --freq 20000

The VMs expose no hardware counters, hence `-e cpu-clock`; `--comm` is the binary's file name.
Drivers of other engines (`driver tantivy coldstart`) split the same way.
"""
import argparse
import collections

PHASES = [
    ("fetch", ["SearchEngine>::top", "stored_fields"]),
    ("search", ["search_with", "SearchEngine>::search"]),
    ("parse", ["parse_query", "SearchEngine>::parse"]),
    ("open", ["SearchEngine>::open", "Index::open"]),
]
FETCH_CAUSES = [
    ("zstd cpuid", ["ZSTD_cpuSupportsBmi2", "ZSTD_cpuid"]),
    ("zstd context", ["ZSTD_createDCtx"]),
    ("zstd decoding", ["ZSTD_", "HUF_", "FSE_", "BIT_"]),
    ("CRC32C", ["crc32", "check_chunk"]),
    ("positioned reads", ["sys_pread64"]),
    ("stored block index", ["stored_block"]),
    ("document decoding", ["decode_doc"]),
    ("page faults", ["exc_page_fault"]),
]


def stacks(path):
    stack = []
    for line in open(path):
        line = line.strip()
        if not line:
            if stack:
                yield stack
            stack = []
            continue
        parts = line.split(None, 1)
        stack.append(parts[1] if len(parts) > 1 else parts[0])
    if stack:
        yield stack


def first_match(stack, table, default):
    for name, keys in table:
        if any(any(k in frame for k in keys) for frame in stack):
            return name
    return default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script", help="`perf script -F ip,sym` output")
    ap.add_argument("--runs", type=int, required=True, help="cold starts recorded")
    ap.add_argument("--freq", type=int, required=True, help="perf record -F")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    us = 1e6 / args.freq / args.runs
    leaves = collections.defaultdict(collections.Counter)
    causes = collections.Counter()
    for st in stacks(args.script):
        phase = first_match(st, PHASES, "other (process start-up and exit)")
        leaves[phase][st[0]] += 1
        if phase == "fetch":
            causes[first_match(st, FETCH_CAUSES, "other")] += 1
    for phase, c in sorted(leaves.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"== {phase}: {sum(c.values()) * us:.0f} us per process")
        for leaf, n in c.most_common(args.top):
            print(f"   {n * us:6.1f} us  {leaf[:100]}")
    print("== fetch by cause")
    for cause, n in causes.most_common():
        print(f"   {n * us:6.1f} us  {cause}")


if __name__ == "__main__":
    main()
