"""How does the tail latency of quarry's Python bindings hold under load? An open-loop load
benchmark of `quarry` used in-process by concurrent Python client threads (issue 32, item 5:
"p99.99 under 10 ms ... Do the same for 4 concurrent Python clients").

It is the in-process counterpart of `quarry-bench load` (crates/quarry-bench/src/load.rs),
which drives `quarry serve` over HTTP; the data, the query mix and the write stream are the
same (the matching server run: `quarry-bench load --full --preload 200000 --rates 500
--duration 300 --index-rate 1000`; without --full it uses a 50,000-paragraph corpus and the
quick query subset):

* Corpus: W2, the English Wikipedia 2015 sample split into paragraphs, in dump order, as
  `quarry-bench prepare --workload w2` makes it (`wiki_to_jsonl.py --unit paragraph` over
  ../shared/data/enwiki-2015-sample/*.zst). Read from bench/results/tmp/w2/docs.jsonl when
  that is prepared (its .done marker exists), else streamed from the shared tool (only the
  paragraphs needed), or from --docs FILE. Documents are {"id", "title", "body"}: an explicit
  keyword id (the server's `_id`) and two text fields, as load.rs's index mapping.
* Queries: the W2 set of load.rs with `--full` (../shared/data/queries/queries.txt, class =
  first tag, negated / intersection_union / two-phase-critic counted as `mixed`; then the
  single-term queries of query_term.txt not already in it, class `term`; then the
  `fuzzy_wildcard` class of bench/queries/w2-fuzzy-wildcard.jsonl); --quick keeps load.rs's
  quick subset (first 10 per class, first 32 fuzzy/wildcard). --skip-class CLASS (repeatable or
  comma-separated) leaves a class out. Each query is a Lucene query string on default field
  `body` (load.rs: query_string, default_field body), top 10 hits with their stored fields, no
  exact count (load.rs: size 10, track_total_hits false -> mode "top"). The list is shuffled
  with --seed (load.rs cycles in file order) and cycled.
* Index: a fresh index in a temporary directory (or --index DIR), preloaded with the first
  --preload paragraphs (default 200,000, ids 0..preload-1) and committed. The writer is the
  server's: one indexing thread, 64 MB of indexing memory.
* Write stream (unless --index-rate 0): one thread indexes the next paragraphs at --index-rate
  docs/s, in batches of a tenth of it every 100 ms, with explicit ids continuing after the
  preload (`IndexWriter.update("id", doc)`: the upsert the server's `_bulk` index action does),
  and with each batch deletes one in ten ids of the batch five batches before
  (`IndexWriter.delete(("id", ...))`), exactly the ids load.rs deletes. Every --refresh-ms
  (default 1000) the changes are made searchable near-real-time: `IndexWriter.refresh()`, then
  `reload()` of the writer's NRT reader (`IndexWriter.reader()`), then a new
  `IndexReader.searcher()` is published to the clients; every --commit-ms (default 10000, as
  the server's scheduler) an `IndexWriter.commit()` takes the place of that refresh (a refresh
  is not durable; the commit also runs the merge policy's merges, inline: the Python writer has
  no background merges, unlike the server's, so segments flushed by refreshes pile up until the
  next commit merges them). The preload itself goes through `IndexWriter.add_many` (a fresh
  index has no ids to replace) and one commit.
* Clients: --clients threads (default 4) offer --rate queries/s in all (default 500), open
  loop: query i is due at start + i/rate and client c runs the queries i = c, c + clients, ...
  (each client rate/clients per second, staggered by 1/rate). A client sleeps until its next
  due time, runs `Searcher.search(query, limit=10, mode="top", default_fields=["body"])` on the
  currently published searcher and records latency = finish - due (time.perf_counter_ns), so
  time spent queued behind a busy client, behind the GIL or behind a slow previous query
  counts (coordinated omission avoided, as wrk2 and load.rs do). It also records the service
  time (finish - call start). A client that falls behind runs its overdue queries back to back.
* Timing: the first --warmup seconds (default 10) of each rate are run but not recorded; then
  --duration seconds (default 300) are. Percentiles are exact (nearest rank over the sorted
  list of every recorded latency: p = the smallest value with at least p of the latencies at
  or below it). Per second of the run (by due time): the queries over --slow-ms (default 10)
  and the slowest query; the report names the seconds with a slow query and the ten worst
  seconds, with the writer's refreshes and commits in them.

The gc module's collector is frozen after loading (gc.freeze()) so that collections do not
walk the harness's corpus. The GIL switch interval is Python's (5 ms) unless
--switch-interval-ms says otherwise.

Prints one Markdown table row per rate (with a header) and a JSON line holding the command
line, the quarry commit, the Python and package versions, every parameter and every result;
--json FILE writes that JSON too.

    target/pyvenv/bin/python bench/python_load.py --duration 300
    target/pyvenv/bin/python bench/python_load.py --rates 100,250,500 --skip-class fuzzy_wildcard
    target/pyvenv/bin/python bench/python_load.py --preload 20000 --duration 15 --warmup 2  # smoke
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ["QUARRY_SHARED_DIR"]) if os.environ.get("QUARRY_SHARED_DIR") else REPO.parent / "shared"
PREPARED_DOCS = REPO / "bench/results/tmp/w2/docs.jsonl"
FUZZY_QUERIES = REPO / "bench/queries/w2-fuzzy-wildcard.jsonl"
# Query classes of crates/quarry-bench/src/workload.rs (CLASSES).
CLASSES = ["term", "intersection", "union", "phrase", "mixed", "fuzzy_wildcard"]
# load.rs without --full: the first 10 queries of each class, the first 8 of each of the 4
# fuzzy/wildcard kinds (workload.rs W2_QUICK_QUERIES_PER_CLASS, fuzzy_queries.rs QUICK_PER_KIND).
QUICK_PER_CLASS = 10
QUICK_FUZZY = 8 * 4
DEFAULT_FIELDS = ["body"]
# The server's writer (crates/quarry-server/src/engine/mod.rs, writer_options).
WRITER_THREADS = 1
WRITER_MEMORY_MB = 64
BATCHES_PER_SECOND = 10
# Quantiles reported, as exact fractions (p99.99 = 9999/10000), and their names.
QUANTILES = [("p50", 1, 2), ("p90", 9, 10), ("p99", 99, 100), ("p99.9", 999, 1000), ("p99.99", 9999, 10000)]
SEC = 1_000_000_000


class Fail(Exception):
    """A bad argument or missing input: printed as one line, exit status 2."""


# ---------------------------------------------------------------------------------------------
# Arguments


def int_at_least(least: int):
    """An argparse type: an integer no smaller than `least`."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < least:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {least}")
        return v

    return parse


positive_int = int_at_least(1)
nonneg_int = int_at_least(0)


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return v


def rate_list(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("--rates needs at least one rate, e.g. 100,250,500")
    return [positive_int(p) for p in parts]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Open-loop tail-latency benchmark of quarry's Python bindings: concurrent "
        "client threads search while one thread indexes W2 paragraphs (see the module docstring).",
    )
    ap.add_argument("--rate", type=positive_int, help="total offered queries/s (default 500)")
    ap.add_argument("--rates", type=rate_list,
                    help="several total rates, comma-separated (e.g. 100,250,500), run one after "
                    "another on the same index, each with its warm-up; excludes --rate")
    ap.add_argument("--clients", type=positive_int, default=4, help="client threads (default 4)")
    ap.add_argument("--duration", type=positive_int, default=300,
                    help="recorded seconds per rate (default 300)")
    ap.add_argument("--warmup", type=nonneg_int, default=10,
                    help="seconds run before recording, per rate (default 10)")
    ap.add_argument("--preload", type=nonneg_int, default=200_000,
                    help="paragraphs indexed and committed before the runs (default 200000)")
    ap.add_argument("--index-rate", type=nonneg_int, default=1000,
                    help="documents/s indexed during the runs, a multiple of 10 (default 1000; "
                    "0: no writes, refreshes or commits)")
    ap.add_argument("--refresh-ms", type=nonneg_int, default=1000,
                    help="NRT refresh interval (default 1000; 0: none)")
    ap.add_argument("--commit-ms", type=nonneg_int, default=10_000,
                    help="commit interval, replacing that refresh (default 10000; 0: none)")
    ap.add_argument("--skip-class", action="append", default=[], metavar="CLASS",
                    help="leave a query class out (repeatable or comma-separated; classes: "
                    f"{', '.join(CLASSES)})")
    ap.add_argument("--quick", action="store_true",
                    help="load.rs's quick query subset (first 10 per class) instead of the full set")
    ap.add_argument("--seed", type=int, default=1, help="query shuffle seed (default 1)")
    ap.add_argument("--preparse", action="store_true",
                    help="parse every query once up front and search with the Query objects "
                    "(default: pass the string, parsed on each call as the server does)")
    ap.add_argument("--slow-ms", type=positive_float, default=10.0,
                    help="a query slower than this counts as slow in the timeline (default 10)")
    ap.add_argument("--p99-bound-ms", type=positive_float, default=10.0,
                    help="report the highest rate whose p99 stays under this (default 10)")
    ap.add_argument("--switch-interval-ms", type=positive_float,
                    help="sys.setswitchinterval (default: Python's, 5 ms)")
    ap.add_argument("--docs", type=Path,
                    help="W2 paragraphs as JSON Lines {title, body} (default: the prepared "
                    "bench/results/tmp/w2/docs.jsonl, else streamed from ../shared)")
    ap.add_argument("--index", type=Path,
                    help="build the index here (must be empty or absent; kept and committed "
                    "at the end) instead of in a temporary directory (removed)")
    ap.add_argument("--json", type=Path, help="also write the JSON result here")
    args = ap.parse_args(argv)

    if args.rate is not None and args.rates is not None:
        ap.error("give --rate or --rates, not both")
    args.rate_list = args.rates or [args.rate or 500]
    if args.index_rate % BATCHES_PER_SECOND:
        ap.error(f"--index-rate {args.index_rate} is not a multiple of {BATCHES_PER_SECOND} "
                 f"(documents go in {BATCHES_PER_SECOND} batches a second)")
    skip: list[str] = []
    for item in args.skip_class:
        for c in item.split(","):
            c = c.strip()
            if not c:
                continue
            if c not in CLASSES:
                ap.error(f"--skip-class {c!r}: unknown class (classes: {', '.join(CLASSES)})")
            if c not in skip:
                skip.append(c)
    args.skip_class = skip
    if args.docs is not None and not args.docs.is_file():
        ap.error(f"--docs {args.docs}: no such file")
    if args.index is not None and args.index.exists():
        if not args.index.is_dir():
            ap.error(f"--index {args.index} exists and is not a directory")
        if any(args.index.iterdir()):
            ap.error(f"--index {args.index} is not empty (the benchmark builds a fresh index)")
    for r in args.rate_list:
        if r < args.clients:
            ap.error(f"rate {r} q/s is lower than --clients {args.clients}: a client would "
                     "offer less than one query per second")
    return args


# ---------------------------------------------------------------------------------------------
# Data


def need_file(path: Path, what: str, shared: bool = True) -> Path:
    if not path.is_file() and not shared:
        raise Fail(f"{what}: {path} is missing (regenerate it with `quarry-bench "
                   "gen-fuzzy-queries --workload w2`)")
    if not path.is_file():
        where = ("$QUARRY_SHARED_DIR" if os.environ.get("QUARRY_SHARED_DIR") else
                 "the `shared/` folder next to the repository (else $QUARRY_SHARED_DIR)")
        raise Fail(f"{what}: {path} is missing (shared data looked up in {where}: {SHARED}; "
                   "see shared/data/README.md)")
    return path


def json_lines(path: Path):
    """(line number, object) of every non-blank line; a bad line names the file and line."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise Fail(f"{path}:{n}: not a JSON line ({e})") from None


def w2_queries(quick: bool) -> list[tuple[str, str]]:
    """(query, class) of W2 as workload.rs (w2_queries) and fuzzy_queries.rs (load) make it."""
    qfile = need_file(SHARED / "data/queries/queries.txt", "the W2 queries")
    tfile = need_file(SHARED / "data/queries/query_term.txt", "the W2 single-term queries")
    ffile = need_file(FUZZY_QUERIES, "the W2 fuzzy/wildcard queries", shared=False)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    per_class: dict[str, int] = {}
    for path, from_terms in ((qfile, False), (tfile, True)):
        for n, v in json_lines(path):
            tags = v.get("tags") or []
            tag = tags[0] if tags and isinstance(tags[0], str) else "mixed"
            if from_terms:
                cls = "term"
            elif tag in ("term", "intersection", "union", "phrase"):
                cls = tag
            else:
                cls = "mixed"  # negated, intersection_union, two-phase-critic
            q = v.get("query")
            if not isinstance(q, str):
                raise Fail(f"{path}:{n}: query field missing")
            if from_terms and q in seen:
                continue
            if quick and per_class.get(cls, 0) >= QUICK_PER_CLASS:
                continue
            per_class[cls] = per_class.get(cls, 0) + 1
            seen.add(q)
            out.append((q, cls))
    fuzzy = []
    for n, v in json_lines(ffile):
        if not isinstance(v.get("query"), str) or not isinstance(v.get("class"), str):
            raise Fail(f"{ffile}:{n}: not a {{query, class}} line")
        fuzzy.append((v["query"], v["class"]))
    out.extend(fuzzy[:QUICK_FUZZY] if quick else fuzzy)
    return out


def read_paragraphs(lines, limit: int, source: str) -> list[tuple[str, str]]:
    docs: list[tuple[str, str]] = []
    for n, line in enumerate(lines, 1):
        if len(docs) >= limit:
            break
        if not line.strip():
            continue
        try:
            v = json.loads(line)
            docs.append((str(v.get("title") or ""), str(v["body"])))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise Fail(f"{source}:{n}: not a {{title, body}} JSON line ({e!r})") from None
    return docs


def load_docs(explicit: Path | None, limit: int) -> tuple[list[tuple[str, str]], str]:
    """The first `limit` W2 paragraphs (title, body) and where they came from."""
    if explicit is not None:
        path = explicit
    elif PREPARED_DOCS.with_suffix(".jsonl.done").is_file() and PREPARED_DOCS.is_file():
        path = PREPARED_DOCS
    else:
        path = None
    if path is not None:
        with open(path, encoding="utf-8") as f:
            return read_paragraphs(f, limit, str(path)), str(path)
    tool = need_file(SHARED / "tools/wiki_to_jsonl.py", "the W2 converter")
    need_file(SHARED / "data/enwiki-2015-sample/AA.zst", "the W2 Wikipedia sample")
    cmd = [sys.executable, str(tool), "--unit", "paragraph", "--limit", str(limit)]
    proc = subprocess.Popen(cmd, cwd=tool.parent, stdout=subprocess.PIPE, encoding="utf-8")
    assert proc.stdout is not None
    try:
        docs = read_paragraphs(proc.stdout, limit, f"{tool} output")
    finally:
        proc.stdout.close()
        rc = proc.wait()
    if rc != 0 and len(docs) < limit:
        raise Fail(f"{' '.join(cmd)} failed with status {rc}")
    return docs, f"{tool} --unit paragraph --limit {limit} (cwd {tool.parent})"


# ---------------------------------------------------------------------------------------------
# Results


def quantile(sorted_ns: np.ndarray, num: int, den: int) -> int:
    """Nearest rank: the smallest recorded value with at least num/den of them at or below."""
    n = len(sorted_ns)
    k = max(1, -(-num * n // den))
    return int(sorted_ns[k - 1])


def ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def summary(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    s = np.sort(values)
    out = {f"{name}_ms": ms(quantile(s, a, b)) for name, a, b in QUANTILES}
    out["max_ms"] = ms(int(s[-1]))
    out["mean_ms"] = ms(float(s.mean()))
    return out


def git_commit() -> dict[str, object]:
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        return {"commit": git("rev-parse", "--short", "HEAD"),
                "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "uncommitted_changes": None}


# ---------------------------------------------------------------------------------------------
# The run


class Shared:
    """What the writer thread publishes to the clients."""

    def __init__(self, searcher) -> None:
        self.searcher = searcher
        self.next_id = 0


def writer_loop(args, shared: Shared, writer, nrt_reader, docs, t0: int, stop: threading.Event,
                out: dict) -> None:
    """Indexes per_batch documents every 100 ms from t0 until `stop`; refreshes and commits."""
    import quarry

    per_batch = args.index_rate // BATCHES_PER_SECOND
    refresh_ns = args.refresh_ms * 1_000_000
    commit_ns = args.commit_ms * 1_000_000
    n_docs = len(docs)
    tick = t0
    last_refresh = last_commit = time.perf_counter_ns()
    batches: list[tuple[int, int]] = []      # (start, duration) ns
    events: list[tuple[int, str, int]] = []  # (start, "refresh" | "commit", duration) ns
    done = deleted = errors = 0
    first_error = None
    update, delete = writer.update, writer.delete
    wait = t0 - time.perf_counter_ns()
    if wait > 0:
        stop.wait(wait / SEC)
    while not stop.is_set():
        first = shared.next_id
        shared.next_id += per_batch
        old = max(0, first - 5 * per_batch)
        begin = time.perf_counter_ns()
        try:
            for k in range(per_batch):
                title, body = docs[(first + k) % n_docs]
                update("id", {"id": str(first + k), "title": title, "body": body})
            done += per_batch
            for x in range(old, old + per_batch, 10):
                delete(("id", str(x)))
                deleted += 1
        except quarry.QuarryError as e:
            errors += 1
            first_error = first_error or repr(e)
        now = time.perf_counter_ns()
        batches.append((begin, now - begin))
        kind = None
        if commit_ns and now - last_commit >= commit_ns:
            kind = "commit"
        elif refresh_ns and now - last_refresh >= refresh_ns:
            kind = "refresh"
        if kind is not None:
            try:
                if kind == "commit":
                    writer.commit()
                else:
                    writer.refresh()
                nrt_reader.reload()
                shared.searcher = nrt_reader.searcher()
            except quarry.QuarryError as e:
                errors += 1
                first_error = first_error or repr(e)
            end = time.perf_counter_ns()
            events.append((now, kind, end - now))
            last_refresh = end
            if kind == "commit":
                last_commit = end
        tick += SEC // BATCHES_PER_SECOND
        wait = tick - time.perf_counter_ns()
        if wait > 0:
            stop.wait(wait / SEC)
    out.update(done=done, deleted=deleted, errors=errors, first_error=first_error,
               batches=batches, events=events)


def client_loop(shared: Shared, queries: list, rate: int, clients: int, c: int, t0: int,
                first_recorded: int, total: int, out: list) -> None:
    lat, svc, due_at = array("q"), array("q"), array("q")
    errors: dict[str, int] = {}
    clock, sleep = time.perf_counter_ns, time.sleep
    nq = len(queries)
    i = c
    while i < total:
        due = t0 + i * SEC // rate
        wait = due - clock()
        if wait > 0:
            sleep(wait / SEC)
        q = queries[i % nq]
        begin = clock()
        try:
            shared.searcher.search(q, limit=10, mode="top", default_fields=DEFAULT_FIELDS)
        except Exception as e:  # every failure is counted, as load.rs counts non-200 answers
            if i >= first_recorded:
                key = f"{type(e).__name__}: {e}"[:200]
                errors[key] = errors.get(key, 0) + 1
        end = clock()
        if i >= first_recorded:
            lat.append(end - due)
            svc.append(end - begin)
            due_at.append(due)
        i += clients
    out[c] = (lat, svc, due_at, errors)


def run_rate(args, rate: int, shared: Shared, writer, nrt_reader, docs, queries) -> dict:
    total = rate * (args.warmup + args.duration)
    first_recorded = rate * args.warmup
    t0 = time.perf_counter_ns() + 200_000_000
    t_rec = t0 + args.warmup * SEC
    stop = threading.Event()
    wout: dict = {}
    wthread = None
    first_id = shared.next_id
    if args.index_rate > 0:
        wthread = threading.Thread(target=writer_loop, name="writer", daemon=True,
                                   args=(args, shared, writer, nrt_reader, docs, t0, stop, wout))
    couts: list = [None] * args.clients
    cthreads = [
        threading.Thread(target=client_loop, name=f"client-{c}", daemon=True,
                         args=(shared, queries, rate, args.clients, c, t0, first_recorded, total, couts))
        for c in range(args.clients)
    ]
    if wthread is not None:
        wthread.start()
    for t in cthreads:
        t.start()
    span = args.warmup + args.duration
    print(f"[load] {rate} q/s: {args.clients} clients, {args.warmup} s warm-up + {args.duration} s",
          file=sys.stderr, flush=True)
    for t in cthreads:
        while t.is_alive():
            t.join(timeout=30)
            if t.is_alive():
                el = (time.perf_counter_ns() - t0) / SEC
                print(f"[load] {rate} q/s: {el:.0f} of {span} s", file=sys.stderr, flush=True)
    t_done = time.perf_counter_ns()
    stop.set()
    if wthread is not None:
        wthread.join()
    if any(o is None for o in couts):
        raise RuntimeError("a client thread died (see the traceback above)")

    lat = np.concatenate([np.frombuffer(o[0], dtype=np.int64) for o in couts])
    svc = np.concatenate([np.frombuffer(o[1], dtype=np.int64) for o in couts])
    due = np.concatenate([np.frombuffer(o[2], dtype=np.int64) for o in couts])
    errors: dict[str, int] = {}
    for o in couts:
        for k, v in o[3].items():
            errors[k] = errors.get(k, 0) + v
    finish = due + lat
    elapsed = (int(finish.max()) if len(finish) else t_done) - t_rec
    seconds = args.duration
    slot = np.minimum((due - t_rec) // SEC, seconds - 1).astype(np.int64)
    slow_ns = int(args.slow_ms * 1e6)
    slow_per_second = np.bincount(slot[lat > slow_ns], minlength=seconds)[:seconds]
    worst = np.zeros(seconds, dtype=np.int64)
    np.maximum.at(worst, slot, lat)

    def sec_of(t: int) -> int:
        return int((t - t_rec) // SEC)

    batch_worst = np.zeros(seconds, dtype=np.int64)
    events_by_second: dict[int, list[str]] = {}
    refresh_ns, commit_ns = [], []
    for begin, d in wout.get("batches", []):
        s = sec_of(begin)
        if 0 <= s < seconds:
            batch_worst[s] = max(batch_worst[s], d)
    for begin, kind, d in wout.get("events", []):
        s = sec_of(begin)
        if 0 <= s < seconds:
            events_by_second.setdefault(s, []).append(f"{kind} {d / 1e6:.0f} ms")
            (commit_ns if kind == "commit" else refresh_ns).append(d)
    order = sorted(range(seconds), key=lambda s: (-int(worst[s]), s))[:10]
    worst_seconds = [
        {"second": s, "worst_ms": ms(int(worst[s])), "slow": int(slow_per_second[s]),
         "writer": events_by_second.get(s, [])}
        for s in order
    ]
    searcher = shared.searcher
    res = {
        "rate": rate,
        "clients": args.clients,
        "recorded": int(len(lat)),
        "achieved_qps": round(len(lat) / (elapsed / SEC), 1) if elapsed > 0 else None,
        "errors": int(sum(errors.values())),
        "error_kinds": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:10]),
        **summary(lat),
        "service": summary(svc),
        "docs_indexed": int(wout.get("done", 0)),
        "deletes": int(wout.get("deleted", 0)),
        "index_errors": int(wout.get("errors", 0)),
        "index_first_error": wout.get("first_error"),
        "ids": [first_id, shared.next_id],
        "refreshes": len(refresh_ns),
        "refresh": summary(np.array(refresh_ns, dtype=np.int64)),
        "commits": len(commit_ns),
        "commit": summary(np.array(commit_ns, dtype=np.int64)),
        "slow_ms": args.slow_ms,
        "slow_queries": int((lat > slow_ns).sum()),
        "slow_seconds": int((slow_per_second > 0).sum()),
        "worst_seconds": worst_seconds,
        "slow_per_second": [int(x) for x in slow_per_second],
        "worst_ms_per_second": [ms(int(x)) for x in worst],
        "batch_worst_ms_per_second": [ms(int(x)) for x in batch_worst],
        "num_docs_end": searcher.num_docs,
        "num_segments_end": searcher.num_segments,
    }
    return res


def report_rate(r: dict) -> None:
    p = sys.stderr
    print(f"[load] {r['rate']} q/s: achieved {r['achieved_qps']} q/s; p50 {r.get('p50_ms')} ms, "
          f"p99 {r.get('p99_ms')}, p99.9 {r.get('p99.9_ms')}, p99.99 {r.get('p99.99_ms')}, "
          f"max {r.get('max_ms')}; service time p50 {r['service'].get('p50_ms')}, p99.99 "
          f"{r['service'].get('p99.99_ms')}, max {r['service'].get('max_ms')}; {r['errors']} errors; "
          f"{r['docs_indexed']} docs indexed, {r['deletes']} deletes ({r['index_errors']} errors"
          + (f": {r['index_first_error']}" if r["index_first_error"] else "") + "); "
          f"{r['refreshes']} refreshes" + (f" (max {r['refresh']['max_ms']} ms)" if r["refreshes"] else "")
          + f", {r['commits']} commits" + (f" (max {r['commit']['max_ms']} ms)" if r["commits"] else "")
          + f"; {r['num_segments_end']} segments at the end", file=p)
    for k, v in r["error_kinds"].items():
        print(f"[load]   {v} x {k}", file=p)
    slow = [f"{s}s:{n}/{w:.0f}ms" for s, (n, w) in
            enumerate(zip(r["slow_per_second"], r["worst_ms_per_second"])) if n > 0]
    print(f"[load] {r['rate']} q/s: seconds with queries over {r['slow_ms']:g} ms "
          f"({len(slow)} of {len(r['slow_per_second'])}): {' '.join(slow)}", file=p)
    print(f"[load] {r['rate']} q/s: worst seconds: " + "; ".join(
        f"{w['second']}s {w['worst_ms']:.1f} ms ({w['slow']} slow"
        + (", " + ", ".join(w["writer"]) if w["writer"] else "") + ")"
        for w in r["worst_seconds"]), file=p, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_start = os.getloadavg()
    try:
        import quarry
    except ImportError as e:
        raise Fail(f"cannot import quarry ({e}); run with the venv's Python, e.g. "
                   f"target/pyvenv/bin/python {Path(__file__).relative_to(REPO)}") from None
    if args.switch_interval_ms is not None:
        sys.setswitchinterval(args.switch_interval_ms / 1000)

    queries_all = w2_queries(args.quick)
    mix = [(q, c) for q, c in queries_all if c not in args.skip_class]
    if not mix:
        raise Fail(f"--skip-class {','.join(args.skip_class)} leaves no queries")
    random.Random(args.seed).shuffle(mix)
    per_class: dict[str, int] = {}
    for _, c in mix:
        per_class[c] = per_class.get(c, 0) + 1
    print(f"[load] {len(mix)} queries in the mix ({', '.join(f'{c} {n}' for c, n in per_class.items())}; "
          f"classes skipped: {args.skip_class or 'none'})", file=sys.stderr)

    per_batch = args.index_rate // BATCHES_PER_SECOND
    batches = sum((args.warmup + args.duration) * BATCHES_PER_SECOND + 2 for _ in args.rate_list)
    needed = args.preload + per_batch * batches
    t = time.perf_counter()
    docs, docs_source = load_docs(args.docs, max(needed, 1))
    if len(docs) < args.preload or (per_batch and len(docs) == args.preload):
        raise Fail(f"{docs_source} gave {len(docs)} paragraphs, "
                   + (f"not more than --preload {args.preload} (none left to index)" if per_batch
                      else f"fewer than --preload {args.preload}"))
    wraps = len(docs) < needed
    print(f"[load] {len(docs)} paragraphs from {docs_source} in {time.perf_counter() - t:.1f} s"
          + (" (fewer than the run indexes: the write stream wraps around)" if wraps else ""),
          file=sys.stderr)

    tmp = None
    if args.index is not None:
        path = args.index
    else:
        tmp = tempfile.mkdtemp(prefix="quarry-python-load-")
        path = Path(tmp) / "index"
    results = []
    try:
        schema = (quarry.SchemaBuilder().add_keyword_field("id").add_text_field("title")
                  .add_text_field("body").build())
        index = quarry.Index.create(path, schema)
        writer = index.writer(threads=WRITER_THREADS, memory_mb=WRITER_MEMORY_MB)
        print(f"[load] preloading {args.preload} paragraphs into {path}", file=sys.stderr, flush=True)
        t = time.perf_counter()
        writer.add_many(({"id": str(i), "title": docs[i][0], "body": docs[i][1]}
                         for i in range(args.preload)), batch_size=1000)
        stats = writer.commit()
        preload_s = time.perf_counter() - t
        nrt_reader = writer.reader()
        shared = Shared(nrt_reader.searcher())
        shared.next_id = args.preload
        print(f"[load] preloaded in {preload_s:.1f} s: {stats['segments']} segments, "
              f"{shared.searcher.num_docs} docs", file=sys.stderr, flush=True)

        parse_fail = {}
        parsed = []
        s0 = shared.searcher
        for q, _ in mix:
            try:
                parsed.append(s0.parse(q, default_fields=DEFAULT_FIELDS))
            except quarry.QuarryError as e:
                parse_fail[q] = f"{type(e).__name__}: {e}"
                parsed.append(q)  # searched as a string: fails (and counts) on every run
        if parse_fail:
            print(f"[load] {len(parse_fail)} queries do not parse (each run of one counts as an "
                  "error): " + "; ".join(f"{q!r}: {m}" for q, m in list(parse_fail.items())[:5]),
                  file=sys.stderr)
        queries = parsed if args.preparse else [q for q, _ in mix]
        del parsed, s0

        gc.collect()
        gc.freeze()
        for rate in args.rate_list:
            r = run_rate(args, rate, shared, writer, nrt_reader, docs, queries)
            report_rate(r)
            results.append(r)
        if args.index is not None:
            writer.close()
        else:
            writer.rollback()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    print("| clients | offered q/s | achieved q/s | p50 ms | p90 ms | p99 ms | p99.9 ms | p99.99 ms "
          "| max ms | errors | docs indexed | seconds > %g ms |" % args.slow_ms)
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['clients']} | {r['rate']} | {r['achieved_qps']:.0f} | {r['p50_ms']:.2f} "
              f"| {r['p90_ms']:.2f} | {r['p99_ms']:.2f} | {r['p99.9_ms']:.2f} | {r['p99.99_ms']:.2f} "
              f"| {r['max_ms']:.2f} | {r['errors'] + r['index_errors']} | {r['docs_indexed']} "
              f"| {r['slow_seconds']} of {args.duration} |")
    ok = [r["rate"] for r in results if r["p99_ms"] <= args.p99_bound_ms and r["errors"] == 0]
    print(f"highest rate with p99 under {args.p99_bound_ms:g} ms and no errors: {max(ok)} q/s" if ok
          else f"no rate kept p99 under {args.p99_bound_ms:g} ms without errors")

    params = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
              if k not in ("rate", "rates")}
    params["rates"] = params.pop("rate_list")
    record = {
        "bench": "python_load",
        "command": shlex.join([sys.executable, *sys.argv]),
        "quarry": {**git_commit(), "version": quarry.__version__},
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "switch_interval_ms": sys.getswitchinterval() * 1000,
        "params": params,
        "writer": {"threads": WRITER_THREADS, "memory_mb": WRITER_MEMORY_MB,
                   "batch_docs": per_batch, "batches_per_second": BATCHES_PER_SECOND},
        "docs_source": docs_source,
        "docs_loaded": len(docs),
        "docs_wrap": wraps,
        "index_path": None if tmp else str(path),
        "preload_seconds": round(preload_s, 2),
        "queries": len(mix),
        "queries_per_class": per_class,
        "queries_not_parsing": parse_fail,
        "started": started,
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "results": results,
    }
    line = json.dumps(record, ensure_ascii=False)
    print(line)
    if args.json is not None:
        args.json.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        print(f"python_load.py: error: {e}", file=sys.stderr)
        sys.exit(2)
