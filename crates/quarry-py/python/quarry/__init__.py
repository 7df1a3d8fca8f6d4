"""quarry: a full-text search engine that ranks exactly like Lucene (BM25), from Python.

>>> import quarry
>>> schema = (quarry.SchemaBuilder().add_integer_field("id")
...           .add_text_field("title").add_text_field("body").build())
>>> index = quarry.Index.create("/tmp/quarry-demo", schema, overwrite=True)
>>> with index.writer() as w:
...     w.add_many({"id": i, "title": t, "body": b} for i, t, b in rows)
>>> result = index.searcher().search("oil prices", limit=10)
>>> for hit in result:
...     print(hit.score, hit.fields["title"])

Vector fields (:meth:`SchemaBuilder.add_vector_field`) are searched with :meth:`Searcher.knn`
and :meth:`Searcher.hybrid`; with ``embed_from=`` and a model registered by
:meth:`Index.add_model`, quarry computes their vectors from text itself (``knn(field,
text="...")``). Every error raised by quarry is a :class:`QuarryError`.
``quarry.ray`` shards an index over Ray workers and searches it with the exact scores of one
index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._quarry import (
    CorruptIndexError,
    DocumentError,
    Hit,
    Index,
    IndexNotFoundError,
    IndexReader,
    IndexVersionError,
    IndexWriter,
    InvalidArgumentError,
    LockedError,
    ModelError,
    QuarryError,
    QuarryIOError,
    Query,
    QueryError,
    QuerySyntaxError,
    Schema,
    SchemaBuilder,
    SchemaError,
    Searcher,
    SearchResult,
    UnknownFieldError,
    WriterError,
    __version__,
    fuse,
)


def merge_stats(stats: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums collection statistics (:meth:`Searcher.collection_stats` of several shards).

    The result, passed as ``stats=`` to :meth:`Searcher.search` on every shard, makes each shard
    score exactly as one index holding all their documents would.
    """
    fields: dict[str, dict[str, int]] = {}
    terms: dict[str, dict[str, dict[str, int]]] = {}
    for s in stats:
        for name, f in s.get("fields", {}).items():
            acc = fields.setdefault(name, {"doc_count": 0, "sum_total_term_freq": 0})
            acc["doc_count"] += int(f["doc_count"])
            acc["sum_total_term_freq"] += int(f["sum_total_term_freq"])
        for field, ts in s.get("terms", {}).items():
            acc_t = terms.setdefault(field, {})
            for term, t in ts.items():
                acc_t.setdefault(term, {"doc_freq": 0})["doc_freq"] += int(t["doc_freq"])
    return {"fields": fields, "terms": terms}


__all__ = [
    "CorruptIndexError",
    "DocumentError",
    "Hit",
    "Index",
    "IndexNotFoundError",
    "IndexReader",
    "IndexVersionError",
    "IndexWriter",
    "InvalidArgumentError",
    "LockedError",
    "ModelError",
    "QuarryError",
    "QuarryIOError",
    "Query",
    "QueryError",
    "QuerySyntaxError",
    "Schema",
    "SchemaBuilder",
    "SchemaError",
    "Searcher",
    "SearchResult",
    "UnknownFieldError",
    "WriterError",
    "__version__",
    "fuse",
    "merge_stats",
]
