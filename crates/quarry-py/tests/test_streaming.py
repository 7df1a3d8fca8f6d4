"""`add_many` streams: memory stays flat however many documents it is given."""

from __future__ import annotations

import random

import psutil

import quarry

WORDS = [f"w{i:04d}" for i in range(5000)]


def test_add_many_memory_is_flat(tmp_path):
    rng = random.Random(7)
    proc = psutil.Process()
    samples: list[tuple[int, int]] = []
    n_docs = 60_000
    generated = 0

    def docs():
        nonlocal generated
        for i in range(n_docs):
            body = " ".join(rng.choices(WORDS, k=200))  # ~1 KB
            generated += len(body)
            if i % 5000 == 0:
                samples.append((i, proc.memory_info().rss))
            yield {"id": i, "body": body}

    schema = quarry.SchemaBuilder().add_integer_field("id").add_text_field("body", stored=False).build()
    index = quarry.Index.create(tmp_path / "idx", schema)
    with index.writer(threads=1, memory_mb=16) as w:
        assert w.add_many(docs()) == n_docs
    assert index.searcher().count("w0001") > 0
    assert index.searcher().num_docs == n_docs
    early = max(r for i, r in samples if i <= 15_000)
    late = max(r for i, r in samples if i > 15_000)
    growth = late - early
    print(f"\ngenerated {generated / 1e6:.0f} MB of text; RSS {early / 1e6:.0f} MB after 15k docs, "
          f"peak {late / 1e6:.0f} MB later (growth {growth / 1e6:.1f} MB)")
    # Holding the documents would grow by ~45 MB of text alone (plus Python objects).
    assert generated > 55e6
    assert growth < 20e6
