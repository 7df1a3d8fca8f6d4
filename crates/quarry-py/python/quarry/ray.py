"""Scale-out on Ray: a sharded quarry index whose answers are exactly those of one big index.

* :func:`build_sharded` indexes JSON Lines files into ``shards`` quarry indexes under one
  directory, one Ray task per shard, all running in parallel. Shard ``i`` gets the ``i``-th
  contiguous run of input lines, so shard order followed by in-shard order is input order.
* :class:`ShardedSearcher` starts one Ray actor per shard (each holding that shard's reader)
  and searches them the way Elasticsearch's ``dfs_query_then_fetch`` does, always:

  1. *dfs*: every shard reports the collection statistics the query's scores depend on (term
     document frequencies, field document counts and token counts); they are summed;
  2. *query*: every shard scores with the summed statistics (so a document's score is exactly
     its score in one index holding all shards) and returns its top ``limit`` without fields;
  3. the per-shard lists are merged by score (ties: lower shard, then shard order, i.e. input
     order, as one index would break them);
  4. *fetch*: the stored fields of the winners are read from their shards.

Requires the ``ray`` package (``pip install ray``). ``ray.init`` is called with defaults when
Ray is not yet initialized.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import ray

import quarry

MANIFEST = "shards.json"
INFER_LINES = 1000  # lines read to infer a schema, as the CLI does


def _open_text(path: Path) -> io.TextIOBase:
    """A text reader of a JSON Lines file, plain, ``.gz`` or ``.zst`` (needs ``zstandard``)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    if path.suffix == ".zst":
        try:
            import zstandard
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise quarry.InvalidArgumentError(
                f"{path}: reading .zst input needs the zstandard package (pip install zstandard)"
            ) from e
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return io.TextIOWrapper(raw, encoding="utf-8")
    return open(path, encoding="utf-8")


def _lines(inputs: Sequence[Path]) -> Iterator[str]:
    """Non-blank lines of all inputs, in order."""
    for p in inputs:
        with _open_text(p) as f:
            for line in f:
                if line.strip():
                    yield line


def _docs(inputs: Sequence[Path], start: int, end: int) -> Iterator[dict[str, Any]]:
    """Documents of lines ``[start, end)`` of the inputs (blank lines not counted)."""
    for n, line in enumerate(_lines(inputs)):
        if n >= end:
            return
        if n >= start:
            try:
                yield json.loads(line)
            except json.JSONDecodeError as e:
                raise quarry.DocumentError(
                    f"input line {n + 1}, column {e.colno}: malformed JSON: {e.msg}"
                ) from e


def _infer_schema(inputs: Sequence[Path]) -> quarry.Schema:
    samples = []
    for line in _lines(inputs):
        samples.append(json.loads(line))
        if len(samples) >= INFER_LINES:
            break
    if not samples:
        raise quarry.InvalidArgumentError("no documents to infer a schema from")
    return quarry.Schema.infer(samples)


@ray.remote
def _build_shard(
    inputs: list[str],
    shard_path: str,
    schema_json: str,
    start: int,
    end: int,
    threads: int,
    memory_mb: int,
) -> dict[str, Any]:
    import time

    t0 = time.perf_counter()
    schema = quarry.Schema.from_json(schema_json)
    index = quarry.Index.create(shard_path, schema, overwrite=True)
    with index.writer(threads=threads, memory_mb=memory_mb) as w:
        n = w.add_many(_docs([Path(p) for p in inputs], start, end))
    return {"path": shard_path, "docs": n, "seconds": time.perf_counter() - t0}


def _gather(refs: list[Any]) -> list[Any]:
    """``ray.get(refs)``, raising a shard's quarry error as itself (its class and attributes,
    as a single index would raise it) rather than wrapped in Ray's ``RayTaskError``."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, quarry.QuarryError):
            raise cause from e
        raise


def _ensure_ray() -> None:
    if not ray.is_initialized():
        ray.init()


def build_sharded(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    path: str | os.PathLike[str],
    shards: int = 2,
    schema: quarry.Schema | None = None,
    threads_per_shard: int = 1,
    memory_mb: int = 256,
    task_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Indexes JSON Lines ``inputs`` into ``shards`` quarry indexes under ``path``.

    Each shard (``path/shard-000``, ...) is a normal quarry index built by its own Ray task;
    the tasks run in parallel. Without ``schema`` it is inferred from the first 1000 lines, as
    the CLI does. Writes ``path/shards.json`` (the manifest :class:`ShardedSearcher` reads) and
    returns it: ``{"shards": [{"path", "docs", "seconds"}], "schema": ..., "docs": total}``.
    ``task_options`` go to the Ray tasks (``.options(...)``: resources, scheduling strategy).
    """
    if shards < 1:
        raise quarry.InvalidArgumentError(f"shards must be at least 1, got {shards}")
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    files = [Path(p) for p in inputs]
    for f in files:
        if not f.is_file():
            raise quarry.QuarryIOError(f"input {f} is not a file")
    if schema is None:
        schema = _infer_schema(files)
    total = sum(1 for _ in _lines(files))
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    _ensure_ray()
    bounds = [(i * total // shards, (i + 1) * total // shards) for i in range(shards)]
    build = _build_shard.options(**task_options) if task_options else _build_shard
    tasks = [
        build.remote(
            [str(f) for f in files],
            str(root / f"shard-{i:03d}"),
            schema.to_json(),
            start,
            end,
            threads_per_shard,
            memory_mb,
        )
        for i, (start, end) in enumerate(bounds)
    ]
    built = _gather(tasks)
    manifest = {
        "shards": [
            {"path": os.path.relpath(b["path"], root), "docs": b["docs"], "seconds": b["seconds"]}
            for b in built
        ],
        "schema": json.loads(schema.to_json()),
        "docs": sum(b["docs"] for b in built),
    }
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(root / MANIFEST)
    return manifest


Queryish = str | quarry.Query


@ray.remote
class ShardActor:
    """Holds one shard's reader; answers the three phases of a sharded search. Queries arrive
    parsed (a pickled :class:`quarry.Query` carries its exact tree), so no shard parses."""

    def __init__(self, path: str) -> None:
        self.reader = quarry.Index.open(path).reader()
        self.searcher = self.reader.searcher()

    def reload(self) -> bool:
        changed = self.reader.reload()
        self.searcher = self.reader.searcher()
        return changed

    def collection_stats(self, query: quarry.Query) -> dict[str, Any]:
        return self.searcher.collection_stats(query)

    def query(
        self, query: quarry.Query, limit: int, mode: str, stats: dict[str, Any] | None
    ) -> tuple[int, bool, list[tuple[float, tuple[int, int], int]]]:
        r = self.searcher.search(query, limit=limit, mode=mode, fields=[], stats=stats)
        return r.count, r.count_exact, [(h.score, h.doc, h.seq) for h in r.hits]

    def count(self, query: quarry.Query) -> int:
        return self.searcher.count(query)

    def knn(
        self,
        field: str,
        vector: Any,
        k: int,
        num_candidates: int | None,
        filter: quarry.Query | None,
        exact: bool,
    ) -> list[tuple[float, tuple[int, int], int]]:
        r = self.searcher.knn(
            field, vector, k=k, num_candidates=num_candidates, filter=filter, exact=exact, fields=[]
        )
        return [(h.score, h.doc, h.seq) for h in r]

    def fetch(
        self, addresses: list[tuple[int, int]], fields: list[str] | None
    ) -> list[dict[str, Any]]:
        return self.searcher.docs(addresses, fields=fields)

    def num_docs(self) -> int:
        return self.searcher.num_docs

    def node_ip(self) -> str:
        """The address of the Ray node this actor runs on."""
        return ray.util.get_node_ip_address()


class ShardedSearcher:
    """Searches the shards built by :func:`build_sharded` with one Ray actor per shard.

    :meth:`search`, :meth:`count` and :meth:`collection_stats` take the same arguments and
    return the same types as :class:`quarry.Searcher`'s (a query string or a
    :class:`quarry.Query`, ``limit``, every ``mode``, ``fields``, ``default_fields``,
    ``stats``), with exactly the counts and scores of one index holding all shards in order;
    :meth:`knn` and :meth:`hybrid` take :meth:`quarry.Searcher.knn`'s and
    :meth:`quarry.Searcher.hybrid`'s.
    Query strings are parsed here, against the shards' schema, before any actor is called, so
    a bad query raises the same :class:`quarry.QuerySyntaxError` (with ``column``) or
    :class:`quarry.UnknownFieldError` as a single index; the actors receive the parsed query.

    Hits are :class:`quarry.Hit` values: ``score`` and ``fields`` as from one index; ``shard``
    is the shard holding the document, and ``doc`` (the address) and ``seq`` (the index order)
    are *within that shard* (``(hit.shard, hit.doc)`` identifies the document); ordering by
    ``(shard, seq)`` is the order of one index holding the shards one after the other, and
    equal scores come in that order, as they would from such an index.

    Use as a context manager, or call :meth:`close`, to stop the actors.
    """

    def __init__(self, path: str | os.PathLike[str], actor_options: dict[str, Any] | None = None):
        root = Path(path)
        try:
            manifest = json.loads((root / MANIFEST).read_text())
        except FileNotFoundError as e:
            raise quarry.IndexNotFoundError(
                f"no sharded index in {root}: {MANIFEST} is missing (build it with build_sharded)"
            ) from e
        self.path = root
        self.manifest = manifest
        self.actors: list[Any] = []
        # An empty index with the shards' schema parses and checks queries and arguments here,
        # with the single searcher's own code (so errors are exactly its errors).
        schema = quarry.Schema.from_json(json.dumps(manifest["schema"]))
        self._local_dir = tempfile.mkdtemp(prefix="quarry-sharded-")
        self._local = quarry.Index.create(self._local_dir, schema, overwrite=True).searcher()
        try:
            _ensure_ray()
            opts = {"num_cpus": 0}
            opts.update(actor_options or {})
            self.actors = [
                ShardActor.options(**opts).remote(str(root / s["path"]))
                for s in manifest["shards"]
            ]
            # Fail here, not on the first query, when a shard cannot be opened.
            _gather([a.num_docs.remote() for a in self.actors])
        except BaseException:
            self.close()
            raise

    @property
    def num_shards(self) -> int:
        return len(self.actors)

    @property
    def num_docs(self) -> int:
        return sum(_gather([a.num_docs.remote() for a in self.actors]))

    @property
    def schema(self) -> quarry.Schema:
        """The shards' schema."""
        return self._local.schema

    def parse(self, query: str, default_fields: list[str] | None = None) -> quarry.Query:
        """Parses ``query`` as :meth:`quarry.Searcher.parse` does on one shard."""
        return self._local.parse(query, default_fields=default_fields)

    def _resolve(self, query: Queryish, default_fields: list[str] | None) -> quarry.Query:
        if isinstance(query, quarry.Query):
            return query
        if isinstance(query, str):
            return self._local.parse(query, default_fields=default_fields)
        raise TypeError("query must be a str or a quarry.Query")

    def collection_stats(
        self, query: Queryish, default_fields: list[str] | None = None
    ) -> dict[str, Any]:
        """The statistics of all shards for ``query``, summed (the *dfs* phase)."""
        q = self._resolve(query, default_fields)
        return quarry.merge_stats(_gather([a.collection_stats.remote(q) for a in self.actors]))

    def search(
        self,
        query: Queryish,
        limit: int = 10,
        mode: str = "top_count",
        fields: list[str] | None = None,
        default_fields: list[str] | None = None,
        stats: dict[str, Any] | None = None,
    ) -> quarry.SearchResult:
        """``dfs_query_then_fetch``: statistics from all shards (unless ``stats`` is given),
        every shard scored with their sum, per-shard top ``limit`` merged by score, stored
        fields fetched for the winners. Arguments and result as :meth:`quarry.Searcher.search`."""
        q = self._resolve(query, default_fields)
        # The single searcher's argument checks (mode, limit, fields, stats), on no documents.
        self._local.search(q, limit=limit, mode=mode, fields=fields, stats=stats)
        if stats is None and mode != "count":
            stats = quarry.merge_stats(
                _gather([a.collection_stats.remote(q) for a in self.actors])
            )
        answers = _gather([a.query.remote(q, limit, mode, stats) for a in self.actors])
        count = sum(a[0] for a in answers)
        exact = all(a[1] for a in answers)
        merged = sorted(
            (-score, shard, rank, doc, seq)
            for shard, (_, _, hits) in enumerate(answers)
            for rank, (score, doc, seq) in enumerate(hits)
        )[:limit]
        fetched: dict[int, list[dict[str, Any]]] = {}
        if merged and (fields is None or len(fields) > 0):
            by_shard: dict[int, list[tuple[int, int]]] = {}
            for _, shard, _, doc, _ in merged:
                by_shard.setdefault(shard, []).append(doc)
            shard_ids = sorted(by_shard)
            wanted = None if fields is None else list(fields)
            docs = _gather([self.actors[s].fetch.remote(by_shard[s], wanted) for s in shard_ids])
            fetched = {s: list(d) for s, d in zip(shard_ids, docs)}
        hits = []
        taken: dict[int, int] = {}
        for neg_score, shard, _, doc, seq in merged:
            i = taken.get(shard, 0)
            taken[shard] = i + 1
            f = fetched[shard][i] if shard in fetched else {}
            hits.append(quarry.Hit(-neg_score, tuple(doc), seq, f, shard))
        return quarry.SearchResult(hits, count, exact)

    def _fetched_hits(
        self,
        merged: list[tuple[float, int, tuple[int, int], int]],
        fields: Sequence[str] | None,
    ) -> list[quarry.Hit]:
        """Hits for ``(score, shard, doc, seq)`` winners, best first, with their stored fields
        read from their shards (``fields``: those to keep; ``[]``: none)."""
        fetched: dict[int, list[dict[str, Any]]] = {}
        if merged and (fields is None or len(fields) > 0):
            by_shard: dict[int, list[tuple[int, int]]] = {}
            for _, shard, doc, _ in merged:
                by_shard.setdefault(shard, []).append(doc)
            shard_ids = sorted(by_shard)
            wanted = None if fields is None else list(fields)
            docs = _gather([self.actors[s].fetch.remote(by_shard[s], wanted) for s in shard_ids])
            fetched = {s: list(d) for s, d in zip(shard_ids, docs)}
        hits = []
        taken: dict[int, int] = {}
        for score, shard, doc, seq in merged:
            i = taken.get(shard, 0)
            taken[shard] = i + 1
            f = fetched[shard][i] if shard in fetched else {}
            hits.append(quarry.Hit(score, tuple(doc), seq, f, shard))
        return hits

    def _knn_ranking(
        self,
        field: str,
        vector: Any,
        k: int,
        num_candidates: int | None,
        filter: quarry.Query | None,
        exact: bool,
    ) -> list[tuple[float, int, tuple[int, int], int]]:
        """Every shard's best ``k`` merged by score, ties by shard then shard order (the order
        of one index holding the shards one after the other): ``(score, shard, doc, seq)``."""
        answers = _gather(
            [a.knn.remote(field, vector, k, num_candidates, filter, exact) for a in self.actors]
        )
        merged = sorted(
            (-score, shard, rank, doc, seq)
            for shard, hits in enumerate(answers)
            for rank, (score, doc, seq) in enumerate(hits)
        )[:k]
        return [(-neg, shard, tuple(doc), seq) for neg, shard, _, doc, seq in merged]

    def knn(
        self,
        field: str,
        vector: Any,
        k: int = 10,
        num_candidates: int | None = None,
        filter: Queryish | None = None,
        exact: bool = False,
        fields: list[str] | None = None,
        default_fields: list[str] | None = None,
    ) -> quarry.SearchResult:
        """:meth:`quarry.Searcher.knn` over every shard: each shard's ``k`` nearest, merged by
        score (ties: lower shard, then shard order), the winners' stored fields fetched. Vector
        scores do not depend on other documents, so an ``exact`` search gives exactly the hits
        and scores of one index holding all shards in order; an approximate one searches each
        shard's graphs, as one index searches each segment's."""
        f = None if filter is None else self._resolve(filter, default_fields)
        # The single searcher's argument checks (field, vector, k, num_candidates), on no documents.
        self._local.knn(field, vector, k=k, num_candidates=num_candidates, filter=f, exact=exact, fields=fields)
        merged = self._knn_ranking(field, vector, k, num_candidates, f, exact)
        hits = self._fetched_hits(merged, fields)
        return quarry.SearchResult(hits, len(hits), True)

    def hybrid(
        self,
        query: Queryish,
        knn: dict[str, Any],
        limit: int = 10,
        fusion: str = "rrf",
        rank_constant: int = 60,
        window_size: int | None = None,
        weights: Sequence[float] | None = None,
        normalization: str = "minmax",
        fields: list[str] | None = None,
        default_fields: list[str] | None = None,
    ) -> quarry.SearchResult:
        """:meth:`quarry.Searcher.hybrid` over every shard: the text ranking of :meth:`search`
        (global statistics) and the kNN ranking of :meth:`knn`, each over all shards, fused by
        :func:`quarry.fuse` as one index fuses them (equal fused scores in shard order), so an
        ``exact`` kNN gives exactly the hits and scores of one index."""
        q = self._resolve(query, default_fields)
        args = dict(knn)
        if args.get("filter") is not None:
            args["filter"] = self._resolve(args["filter"], default_fields)
        # The single searcher's argument checks, on no documents.
        self._local.hybrid(
            q, args, limit=limit, fusion=fusion, rank_constant=rank_constant,
            window_size=window_size, weights=weights, normalization=normalization,
            fields=fields,
        )
        window = max(window_size if window_size is not None else max(limit, 10), 1)
        text = self.search(q, limit=window, mode="top", fields=[])
        k = max(int(args.get("k", limit)), window)
        num_candidates = args.get("num_candidates")
        if num_candidates is not None:
            num_candidates = max(num_candidates, k)
        vector = args["vector"] if "vector" in args else args["query_vector"]
        nearest = self._knn_ranking(
            args["field"], vector, k, num_candidates, args.get("filter"), bool(args.get("exact", False))
        )
        where: dict[tuple[int, int], tuple[int, tuple[int, int], int]] = {}
        for h in text:
            assert h.shard is not None
            where[(h.shard, h.seq)] = (h.shard, h.doc, h.seq)
        for _, shard, doc, seq in nearest:
            where[(shard, seq)] = (shard, doc, seq)
        rankings = [
            [((h.shard, h.seq), h.score) for h in text],
            [((shard, seq), score) for score, shard, _, seq in nearest],
        ]
        fused = quarry.fuse(
            rankings,
            fusion=fusion,
            rank_constant=rank_constant,
            window_size=window,
            weights=list(weights) if weights is not None else None,
            normalization=normalization,
        )[:limit]
        merged = [(score, *where[(key[0], key[1])]) for key, score in fused]
        hits = self._fetched_hits(merged, fields)
        return quarry.SearchResult(hits, len(hits), True)

    def count(self, query: Queryish, default_fields: list[str] | None = None) -> int:
        """The exact number of matches over all shards (nothing is scored)."""
        q = self._resolve(query, default_fields)
        return sum(_gather([a.count.remote(q) for a in self.actors]))

    def node_ips(self) -> list[str]:
        """The address of the Ray node each shard's actor runs on, in shard order."""
        return _gather([a.node_ip.remote() for a in self.actors])

    def reload(self) -> bool:
        """Moves every shard to its newest commit; returns whether any changed."""
        return any(_gather([a.reload.remote() for a in self.actors]))

    def close(self) -> None:
        """Stops the shard actors."""
        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if getattr(self, "_local_dir", None):
            shutil.rmtree(self._local_dir, ignore_errors=True)
            self._local_dir = None

    def __enter__(self) -> ShardedSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["build_sharded", "ShardedSearcher", "ShardActor", "MANIFEST"]
