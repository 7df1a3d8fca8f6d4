"""Type stubs of the native module ``quarry._quarry`` (re-exported by ``quarry``)."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict

from typing_extensions import Buffer

__version__: str

Value = str | int | float | bool | Sequence[str | int | float | bool] | Vector | None
Document = Mapping[str, Value]
Mode = Literal["top", "top_count", "count"]
Stats = dict[str, Any]
Vector = Sequence[float] | Buffer
"""A dense vector: a list or tuple of numbers, or a 1-D float32 (or float64) buffer such as a
NumPy array (read through the buffer protocol)."""

class KnnArgs(TypedDict, total=False):
    """The ``knn=`` argument of :meth:`Searcher.hybrid` (``field`` required, and ``vector`` or
    ``text``: a text the field's model embeds)."""

    field: str
    vector: Vector
    query_vector: Vector
    text: str
    k: int
    num_candidates: int | None
    filter: str | Query | None
    exact: bool

class PassageOptions(TypedDict, total=False):
    """How an embedded field splits a long text: word pieces per passage (the model's two
    special tokens included; default the model's window) and pieces consecutive passages share
    (default an eighth of the window)."""

    window: int
    overlap: int

class Passage(TypedDict):
    """The passage of a document's text that scored a kNN or hybrid hit: its number, its byte
    span ``start``..``end`` in the UTF-8 source text (the source field's values joined by
    newlines) and its text (None when the source field is not stored)."""

    index: int
    start: int
    end: int
    text: str | None

class ModelFile(TypedDict):
    path: str
    bytes: int
    crc32c: str

class ModelManifest(TypedDict):
    """A model registered with an index (``models/NAME/model.json``)."""

    version: int
    name: str
    source: str
    dims: int
    max_tokens: int
    files: list[ModelFile]

class QuarryError(Exception):
    """Base class of every error raised by quarry."""

class QuarryIOError(QuarryError):
    path: str | None

class CorruptIndexError(QuarryError):
    file: str
    offset: int | None
    """Byte offset of the damaged chunk, when known (format v3 indexes)."""

class IndexVersionError(QuarryError):
    file: str
    found: int

class IndexNotFoundError(QuarryError):
    path: str

class LockedError(QuarryError):
    path: str

class SchemaError(QuarryError): ...

class DocumentError(QuarryError):
    field: str

class QueryError(QuarryError): ...

class QuerySyntaxError(QueryError):
    column: int
    position: int
    kind: str
    expected: str
    found: str
    excerpt: str

class UnknownFieldError(QueryError):
    field: str
    known: list[str]

class InvalidArgumentError(QuarryError): ...

class ModelError(QuarryError):
    model: str
    """The model's directory."""

class WriterError(QuarryError): ...

class Schema:
    """The fields of an index."""

    @staticmethod
    def from_json(text: str) -> Schema: ...
    @staticmethod
    def infer(docs: Iterable[Mapping[str, Any]]) -> Schema: ...
    def to_json(self) -> str: ...
    @property
    def field_names(self) -> list[str]: ...
    @property
    def fields(self) -> list[dict[str, Any]]: ...
    @property
    def text_fields(self) -> list[str]: ...

class SchemaBuilder:
    """Builds a :class:`Schema` field by field."""

    def __init__(self) -> None: ...
    def add_text_field(
        self,
        name: str,
        stored: bool = True,
        analyzer: str = "standard",
        indexed: bool = True,
        fast: bool = False,
        tokenizer_name: str | None = None,
    ) -> SchemaBuilder: ...
    def add_keyword_field(
        self, name: str, stored: bool = True, indexed: bool = True, fast: bool | None = None
    ) -> SchemaBuilder: ...
    def add_integer_field(
        self, name: str, stored: bool = True, indexed: bool = True, fast: bool | None = None
    ) -> SchemaBuilder: ...
    def add_boolean_field(
        self, name: str, stored: bool = True, indexed: bool = True, fast: bool | None = None
    ) -> SchemaBuilder: ...
    def add_float_field(
        self, name: str, stored: bool = True, indexed: bool = True, fast: bool | None = None
    ) -> SchemaBuilder: ...
    def add_date_field(
        self,
        name: str,
        stored: bool = True,
        indexed: bool = True,
        fast: bool | None = None,
        format: str | None = None,
    ) -> SchemaBuilder: ...
    def add_vector_field(
        self,
        name: str,
        dims: int,
        similarity: Literal["cosine", "dot_product", "l2_norm", "max_inner_product"] = "cosine",
        element_type: Literal["float32", "int8"] = "float32",
        index: Literal["hnsw", "flat"] = "hnsw",
        m: int = 16,
        ef_construction: int = 100,
        stored: bool = True,
        embed_from: str | None = None,
        model: str | None = None,
        passages: bool | PassageOptions | None = None,
    ) -> SchemaBuilder: ...
    def build(self) -> Schema: ...

class Index:
    """A quarry index in a directory."""

    @staticmethod
    def create(
        path: str | PathLike[str],
        schema: Schema,
        overwrite: bool = False,
        index_sort: Sequence[str | tuple[str, Literal["asc", "desc"]]] | None = None,
    ) -> Index: ...
    @staticmethod
    def open(path: str | PathLike[str]) -> Index: ...
    @property
    def path(self) -> str: ...
    @property
    def schema(self) -> Schema: ...
    @property
    def index_sort(self) -> list[tuple[str, Literal["asc", "desc"]]] | None: ...
    @property
    def num_docs(self) -> int: ...
    def writer(self, threads: int | None = None, memory_mb: int | None = None) -> IndexWriter: ...
    def reader(self) -> IndexReader: ...
    def searcher(self) -> Searcher: ...
    def add_model(self, name: str, path: str | PathLike[str]) -> ModelManifest: ...
    def list_models(self) -> list[ModelManifest]: ...
    def embed_query(
        self, text: str, field: str | None = None, model: str | None = None
    ) -> list[float]: ...

class IndexReader:
    """A point-in-time view of an index that :meth:`reload` moves to the newest commit."""

    def searcher(self) -> Searcher: ...
    def reload(self) -> bool: ...
    @property
    def generation(self) -> int: ...

class IndexWriter:
    """Adds documents; a context manager that commits on success."""

    def add(self, doc: Document) -> int: ...
    def add_many(self, docs: Iterable[Document], batch_size: int = 1024) -> int: ...
    def update(self, key: str, doc: Document) -> int: ...
    def delete(self, what: tuple[str, str | int | float | bool] | str | Query) -> int: ...
    def delete_all(self) -> int: ...
    def refresh(self) -> None: ...
    def reader(self) -> IndexReader: ...
    def commit(self) -> dict[str, Any]: ...
    def force_merge(self, max_segments: int = 1) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...
    @property
    def schema(self) -> Schema: ...
    def __enter__(self) -> IndexWriter: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool: ...

class Query:
    """A parsed query; ``str()`` gives Lucene's rendering. Picklable (the parsed tree is
    carried exactly), comparable with ``==``."""

    def state(self) -> tuple[Any, ...]: ...
    @classmethod
    def from_state(cls, state: tuple[Any, ...]) -> Query: ...

class Hit:
    score: float
    doc: tuple[int, int]
    seq: int
    fields: dict[str, Any]
    shard: int | None
    sort: list[Any] | None
    snippets: dict[str, list[str]]
    passage: Passage | None
    def __init__(
        self,
        score: float,
        doc: tuple[int, int],
        seq: int,
        fields: dict[str, Any] | None = None,
        shard: int | None = None,
        sort: list[Any] | None = None,
        snippets: dict[str, list[str]] | None = None,
        passage: Passage | None = None,
    ) -> None: ...

class SearchResult:
    hits: list[Hit]
    count: int
    count_exact: bool
    def __init__(self, hits: list[Hit], count: int, count_exact: bool = True) -> None: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Hit: ...
    def __iter__(self) -> Iterator[Hit]: ...

class Searcher:
    """Searches one point-in-time view of an index; releases the GIL while working."""

    def parse(self, query: str, default_fields: Sequence[str] | None = None) -> Query: ...
    def search(
        self,
        query: str | Query,
        limit: int = 10,
        mode: Mode = "top_count",
        fields: Sequence[str] | None = None,
        default_fields: Sequence[str] | None = None,
        stats: Stats | None = None,
        order_by: str | Sequence[str | tuple[str, str] | dict[str, Any]] | None = None,
        after: Sequence[Any] | None = None,
        track_scores: bool = False,
        highlight: str | Sequence[str] | None = None,
    ) -> SearchResult: ...
    def aggregate(
        self,
        query: str | Query,
        aggs: dict[str, Any],
        default_fields: Sequence[str] | None = None,
    ) -> dict[str, Any]: ...
    def knn(
        self,
        field: str,
        vector: Vector | None = None,
        k: int = 10,
        num_candidates: int | None = None,
        filter: str | Query | None = None,
        exact: bool = False,
        fields: Sequence[str] | None = None,
        default_fields: Sequence[str] | None = None,
        text: str | None = None,
    ) -> SearchResult: ...
    def hybrid(
        self,
        query: str | Query,
        knn: KnnArgs,
        limit: int = 10,
        fusion: Literal["rrf", "linear"] = "rrf",
        rank_constant: int = 60,
        window_size: int | None = None,
        weights: Sequence[float] | None = None,
        normalization: Literal["minmax", "l2", "l2_norm", "none"] = "minmax",
        fields: Sequence[str] | None = None,
        default_fields: Sequence[str] | None = None,
    ) -> SearchResult: ...
    def count(self, query: str | Query, default_fields: Sequence[str] | None = None) -> int: ...
    def doc(self, address: tuple[int, int]) -> dict[str, Any]: ...
    def docs(
        self, addresses: Sequence[tuple[int, int]], fields: Sequence[str] | None = None
    ) -> list[dict[str, Any]]: ...
    def collection_stats(
        self, query: str | Query, default_fields: Sequence[str] | None = None
    ) -> Stats: ...
    @property
    def num_docs(self) -> int: ...
    @property
    def num_segments(self) -> int: ...
    @property
    def schema(self) -> Schema: ...

def fuse(
    rankings: Sequence[Sequence[tuple[tuple[int, int], float]]],
    fusion: Literal["rrf", "linear"] = "rrf",
    rank_constant: int = 60,
    window_size: int = 10,
    weights: Sequence[float] | None = None,
    normalization: Literal["minmax", "l2", "l2_norm", "none"] = "minmax",
) -> list[tuple[tuple[int, int], float]]: ...
