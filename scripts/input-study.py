#!/usr/bin/env python3
"""How should `quarry index` read its input files: mmap or streaming reads, and above which
file size does it switch? (issue 11, item 6)

Splits W2's corpus (Wikipedia paragraphs as JSON Lines, 1.2 M documents, about 475 MB) into three
shapes (2 large files, 60 medium, 500 small), then times the release `quarry` binary on each shape
with `--read-mode mmap` and `--read-mode stream`:
  * `--dry-run`: reading + JSON parsing + schema checks only (what the read mode can change),
    with the input files in the page cache (warm) and evicted (posix_fadvise DONTNEED) before
    every run;
  * a full `quarry index` (warm input), to show how much of the end-to-end time reading is.
Runs are interleaved (shape by shape, mode by mode, repetition by repetition) so that machine
noise falls on both modes alike. Reports the median wall time, MB/s, and peak RSS (wait4
ru_maxrss of the child, which counts mapped input pages that are resident), and writes a Markdown
report to bench/results/input-<date>.md.

Usage: python3 scripts/input-study.py [--corpus PATH] [--reps N] [--index-reps N] [--out PATH]
The corpus defaults to bench/results/tmp/w2/docs.jsonl (made by
`cargo run --release -p quarry-bench -- prepare --workload w2` when missing).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHAPES = [("2-large", 2), ("60-medium", 60), ("500-small", 500)]
MODES = ["stream", "mmap"]
SCHEMA = {
    "fields": [
        {"name": "id", "type": "integer", "stored": True},
        {"name": "title", "type": "text", "stored": True},
        {"name": "body", "type": "text"},
    ]
}


def sh(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kw)


def split(corpus: Path, dest: Path, parts: int) -> list[Path]:
    marker = dest / ".done"
    if marker.exists():
        return sorted(dest.glob("*.jsonl"))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    total = corpus.stat().st_size
    per = total // parts + 1
    files, out, written, i = [], None, 0, 0
    with open(corpus, "rb") as f:
        for line in f:
            if out is None or (written >= per and i < parts):
                if out:
                    out.close()
                p = dest / f"part-{i:04d}.jsonl"
                files.append(p)
                out = open(p, "wb")
                written, i = 0, i + 1
            out.write(line)
            written += len(line)
    out.close()
    marker.write_text("ok\n")
    return files


def evict(files: list[Path]) -> None:
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(files: list[Path]) -> None:
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def timed(cmd: list) -> tuple[float, int, str]:
    """Wall seconds, peak RSS in bytes, and stdout of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{out}\n{err}")
    return wall, usage.ru_maxrss * 1024, out.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "bench/results/tmp/w2/docs.jsonl")
    ap.add_argument("--work", type=Path, default=REPO / "target/input-study")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each dry run")
    ap.add_argument("--index-reps", type=int, default=1, help="repetitions of each full index run (0: none)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--shapes", default="2,60,500", help="numbers of files to split the corpus into")
    args = ap.parse_args()
    names = dict((n, name) for name, n in SHAPES)
    shape_list = [(names.get(int(n), f"{int(n)}-files"), int(n)) for n in args.shapes.split(",")]

    if not args.corpus.exists():
        sh(["cargo", "run", "--release", "--locked", "-p", "quarry-bench", "--", "prepare", "--workload", "w2"], cwd=REPO)
    sh(["cargo", "build", "--release", "--locked", "-p", "quarry-cli"], cwd=REPO)
    quarry = REPO / "target/release/quarry"
    args.work.mkdir(parents=True, exist_ok=True)
    schema = args.work / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    corpus_bytes = args.corpus.stat().st_size
    shapes = {name: split(args.corpus, args.work / name, n) for name, n in shape_list}
    load_start = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "crates", "Cargo.lock"], cwd=REPO, capture_output=True, text=True).stdout.strip()

    def cmd(shape, mode, dry):
        c = [quarry, "index", "--quiet", "--overwrite", "--input", args.work / shape, "--index", args.work / "idx",
             "--schema", schema, "--read-mode", mode]
        return c + (["--dry-run"] if dry else [])

    results = {}  # (kind, shape, cache, mode) -> list of (wall, rss)
    for rep in range(args.reps):
        for shape in shapes:
            for cache in ["warm", "evicted"]:
                for mode in MODES:
                    (warm if cache == "warm" else evict)(shapes[shape])
                    wall, rss, out = timed(cmd(shape, mode, True))
                    results.setdefault(("dry-run", shape, cache, mode), []).append((wall, rss))
                    print(f"rep {rep} dry-run {shape} {cache} {mode}: {wall:.2f} s, {rss / 2**20:.0f} MiB: {out}", file=sys.stderr, flush=True)
    for rep in range(args.index_reps):
        for shape in shapes:
            for mode in MODES:
                warm(shapes[shape])
                wall, rss, out = timed(cmd(shape, mode, False))
                results.setdefault(("index", shape, "warm", mode), []).append((wall, rss))
                print(f"rep {rep} index {shape} warm {mode}: {wall:.2f} s, {rss / 2**20:.0f} MiB: {out}", file=sys.stderr, flush=True)
    shutil.rmtree(args.work / "idx", ignore_errors=True)
    load_end = os.getloadavg()

    today = datetime.date.today().isoformat()
    out = args.out or REPO / f"bench/results/input-{today}.md"
    lines = [
        f"# How `quarry index` reads its input: mmap vs streaming reads, {today}",
        "",
        f"- Command: `python3 scripts/input-study.py --reps {args.reps} --index-reps {args.index_reps} --shapes {args.shapes}`",
        f"- quarry commit: `{commit}`" + (" with uncommitted changes" if dirty else ""),
        f"- Corpus: W2 ({args.corpus.name}, {corpus_bytes / 1e6:.0f} MB of JSON Lines), split into "
        + ", ".join(f"{name} ({len(fs)} files of about {corpus_bytes / len(fs) / 1e6:.1f} MB)" for name, fs in shapes.items()),
        f"- Machine: {os.cpu_count()} cores; load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end",
        "- Timed: the whole `quarry` process (wall clock), median of the repetitions. `dry-run` = read + parse + "
        "check against the schema (`--dry-run`, reader threads = one per core); `index` = the full run "
        "(2 indexing threads, 512 MiB budget, commit). *evicted*: the input files were dropped from the page "
        "cache (posix_fadvise DONTNEED) just before the run; *warm*: read just before. Peak RSS = the "
        "child's ru_maxrss (resident mapped input pages count).",
        "",
        "| run | shape | input cache | stream s | mmap s | mmap / stream | stream MB/s | mmap MB/s | stream peak RSS MiB | mmap peak RSS MiB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in ["dry-run", "index"]:
        for shape in shapes:
            for cache in ["warm", "evicted"]:
                r = {m: results.get((kind, shape, cache, m)) for m in MODES}
                if not all(r.values()):
                    continue
                med = {m: statistics.median(w for w, _ in r[m]) for m in MODES}
                rss = {m: max(x for _, x in r[m]) / 2**20 for m in MODES}
                lines.append(
                    f"| {kind} | {shape} | {cache} | {med['stream']:.2f} | {med['mmap']:.2f} | "
                    f"{med['mmap'] / med['stream']:.2f} | {corpus_bytes / 1e6 / med['stream']:.0f} | "
                    f"{corpus_bytes / 1e6 / med['mmap']:.0f} | {rss['stream']:.0f} | {rss['mmap']:.0f} |"
                )
    lines.append("")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"report: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
