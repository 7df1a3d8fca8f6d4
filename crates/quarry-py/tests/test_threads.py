"""The GIL is released while searching, counting, indexing and committing: two Python threads
run native work at the same time.

Wall-clock speed-up is not asserted (this 2-core machine is shared with builds): the test
asserts that the two threads' native calls overlap in time, which is impossible when a call
holds the GIL, and it reports the speed-up it saw."""

from __future__ import annotations

import sys
import threading
import time

import pytest

QUERY = "the OR of OR to OR and OR in OR said OR a OR for OR mln OR dlrs OR it OR pct"


@pytest.fixture
def long_switch_interval():
    # With a long switch interval a thread that holds the GIL keeps it: only a call that
    # releases it lets the other thread run, so overlap proves the release.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    yield
    sys.setswitchinterval(old)


def run_calls(fn, n, out, barrier):
    barrier.wait()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((t0, time.perf_counter()))


def overlap(a, b):
    total = 0.0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0.0, min(e1, e2) - max(s1, s2))
    return total


def two_threads(fn, n):
    a, b = [], []
    barrier = threading.Barrier(2)
    ts = [threading.Thread(target=run_calls, args=(fn, n, out, barrier)) for out in (a, b)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return a, b, time.perf_counter() - t0


def test_search_and_count_release_the_gil(reuters_index, long_switch_interval):
    s = reuters_index.searcher()
    expected = s.count(QUERY)
    assert expected > 20000

    def work():
        assert s.search(QUERY, limit=10).count == expected
        assert s.count(QUERY) == expected

    n = 8
    t0 = time.perf_counter()
    for _ in range(2 * n):
        work()
    one = time.perf_counter() - t0
    a, b, two = two_threads(work, n)
    busy = sum(e - s0 for s0, e in a)
    shared = overlap(a, b)
    print(f"\n2x{n} search+count calls: one thread {one:.3f}s, two threads {two:.3f}s "
          f"(speed-up {one / two:.2f}); overlap {shared:.3f}s of {busy:.3f}s busy")
    # Holding the GIL, the calls would interleave with (almost) no overlap.
    assert shared > 0.5 * busy


def test_indexing_and_commit_release_the_gil(reuters_docs, tmp_path, long_switch_interval):
    import quarry
    from conftest import reuters_schema

    docs = reuters_docs[:4000]
    writers = []
    for i in range(2):
        idx = quarry.Index.create(tmp_path / f"i{i}", reuters_schema())
        writers.append(idx.writer(threads=1))
    spans: list[list[tuple[float, float]]] = [[], []]
    barrier = threading.Barrier(2)

    def index_into(i):
        barrier.wait()
        for start in range(0, len(docs), 1000):
            t0 = time.perf_counter()
            writers[i].add_many(docs[start:start + 1000], batch_size=1000)
            spans[i].append((t0, time.perf_counter()))
        t0 = time.perf_counter()
        writers[i].commit()
        spans[i].append((t0, time.perf_counter()))

    ts = [threading.Thread(target=index_into, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    busy = sum(e - s0 for s0, e in spans[0])
    shared = overlap(spans[0], spans[1])
    print(f"\nindexing: overlap {shared:.3f}s of {busy:.3f}s busy")
    # Converting dicts holds the GIL; adding and committing do not.
    assert shared > 0.3 * busy
    for w in writers:
        w.close()
