//! How does Python create, open, write and reload an index? `Index`, `IndexReader` and the
//! `IndexWriter` context manager.
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use quarry::{Document, Index, IndexReader, IndexWriter, Schema, WriterOptions};

use crate::schema::PySchema;
use crate::search::PySearcher;
use crate::{convert, detached, errors};

/// `Index.create`'s ``index_sort``: ``("field", "desc")`` pairs or ``"field:desc"`` strings.
fn parse_index_sort(py: Python<'_>, items: &[Bound<'_, PyAny>]) -> PyResult<quarry::IndexSort> {
    let mut fields = Vec::with_capacity(items.len());
    for item in items {
        let spec = if let Ok(s) = item.extract::<String>() {
            s
        } else if let Ok((f, o)) = item.extract::<(String, String)>() {
            format!("{f}:{o}")
        } else {
            return Err(PyTypeError::new_err(
                "index_sort takes (\"field\", \"asc\" | \"desc\") pairs or \"field[:asc|desc]\" strings",
            ));
        };
        fields.push(quarry::IndexSortField::parse(&spec).map_err(|e| errors::to_py(py, e))?);
    }
    Ok(quarry::IndexSort::new(fields))
}

/// A quarry index in a directory.
///
/// >>> index = quarry.Index.create("/tmp/idx", schema)       # or quarry.Index.open(path)
/// >>> with index.writer() as w:                             # commits on success
/// ...     w.add({"id": 1, "title": "Oil", "body": "oil prices rose"})
/// >>> index.searcher().search("oil", limit=10)
#[pyclass(name = "Index", module = "quarry", frozen)]
pub struct PyIndex {
    pub(crate) path: PathBuf,
    schema: Schema,
    pub(crate) reader: PyIndexReader,
}

#[pymethods]
impl PyIndex {
    /// Creates an empty index with ``schema`` in ``path`` (created if missing) and commits it.
    /// ``path`` must not hold an index unless ``overwrite`` is true (then the old index stays
    /// readable until this empty commit replaces it).
    ///
    /// ``index_sort``: keep every segment's documents in this order, fixed for the index's
    /// life: a list of ``("field", "asc" | "desc")`` pairs or ``"field[:asc|desc]"`` strings,
    /// fields with a column only (integer, float, date, boolean, keyword); documents without a
    /// value go last. A sorted search whose leading keys are these stops early in each segment.
    /// Raises :class:`InvalidArgumentError` (attribute ``field``) for a field that cannot be
    /// sorted by or a bad order.
    #[staticmethod]
    #[pyo3(signature = (path, schema, overwrite = false, index_sort = None))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        schema: &PySchema,
        overwrite: bool,
        index_sort: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Self> {
        let schema = schema.inner.clone();
        let p = path.clone();
        let index_sort = match index_sort {
            None => None,
            Some(items) => Some(parse_index_sort(py, &items)?),
        };
        detached(py, move || {
            let opts = WriterOptions {
                threads: 1,
                index_sort,
                ..Default::default()
            };
            let mut w = if overwrite {
                IndexWriter::overwrite(&p, schema, opts)?
            } else {
                IndexWriter::create(&p, schema, opts)?
            };
            w.commit()?;
            Ok(())
        })?;
        Self::open(py, path)
    }

    /// Opens the index in ``path`` (its latest commit). Raises :class:`IndexNotFoundError`.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let p = path.clone();
        let reader = detached(py, move || IndexReader::open(&p))?;
        Ok(Self {
            path,
            schema: reader.index().schema().clone(),
            reader: PyIndexReader { inner: reader },
        })
    }

    /// The directory of the index.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The index sort the index was created with, as ``[("field", "asc" | "desc"), ...]``, or
    /// None.
    #[getter]
    fn index_sort(&self) -> Option<Vec<(String, &'static str)>> {
        let index = self.reader.inner.index();
        index.index_sort().map(|s| {
            s.fields
                .iter()
                .map(|k| (k.field.clone(), if k.descending { "desc" } else { "asc" }))
                .collect()
        })
    }

    /// The index's schema.
    #[getter]
    fn schema(&self) -> PySchema {
        PySchema {
            inner: self.schema.clone(),
        }
    }

    /// A writer (one per index at a time). Use it as a context manager: the block's documents
    /// are committed when it ends normally and discarded when it raises.
    ///
    /// ``threads``: indexing threads (default: all cores); ``memory_mb``: memory for in-memory
    /// segments, shared by the threads (default 512); a thread writes a segment when it
    /// exceeds its share, so memory stays flat however many documents are added.
    #[pyo3(signature = (threads = None, memory_mb = None))]
    fn writer(
        &self,
        py: Python<'_>,
        threads: Option<usize>,
        memory_mb: Option<usize>,
    ) -> PyResult<PyIndexWriter> {
        let mut opts = WriterOptions::default();
        if let Some(t) = threads {
            opts.threads = t.max(1);
        }
        if let Some(m) = memory_mb {
            opts.ram_budget_bytes = m.max(1) << 20;
        }
        let p = self.path.clone();
        let w = detached(py, move || IndexWriter::open(&p, opts))?;
        Ok(PyIndexWriter {
            schema: w.schema().clone(),
            parser: PySearcher::new(self.reader.inner.searcher(), None),
            inner: Mutex::new(Some(w)),
        })
    }

    /// A new reader of this index (its own point-in-time view; see :meth:`IndexReader.reload`).
    fn reader(&self, py: Python<'_>) -> PyResult<PyIndexReader> {
        let p = self.path.clone();
        let inner = detached(py, move || IndexReader::open(&p))?;
        Ok(PyIndexReader { inner })
    }

    /// A searcher over the latest commit (the index's own reader is reloaded first if a newer
    /// commit exists; unchanged, this is cheap).
    fn searcher(&self, py: Python<'_>) -> PyResult<PySearcher> {
        self.reader.reload(py)?;
        Ok(self.reader.searcher())
    }

    /// Number of live (not deleted) documents in the commit the index's reader sees.
    #[getter]
    fn num_docs(&self) -> u64 {
        self.reader.current().live_doc_count()
    }

    fn __repr__(&self) -> String {
        format!("Index({:?})", self.path.display().to_string())
    }
}

/// A point-in-time view of an index that can move to the newest commit (or, for a reader from
/// :meth:`IndexWriter.reader`, to the writer's refreshed state) with :meth:`reload`. Searchers
/// taken from it keep their view (and their files) while they live.
#[pyclass(name = "IndexReader", module = "quarry", frozen)]
pub struct PyIndexReader {
    inner: IndexReader,
}

impl PyIndexReader {
    pub(crate) fn current(&self) -> Index {
        self.inner.index()
    }
}

#[pymethods]
impl PyIndexReader {
    /// A searcher over the reader's current view (cheap).
    pub(crate) fn searcher(&self) -> PySearcher {
        PySearcher::new(self.inner.searcher(), Some(self.inner.index()))
    }

    /// Moves the reader to the newest commit (reusing unchanged segments); returns whether
    /// its view changed.
    pub(crate) fn reload(&self, py: Python<'_>) -> PyResult<bool> {
        let r = self.inner.clone();
        detached(py, move || r.reload())
    }

    /// Generation of the commit the reader sees.
    #[getter]
    fn generation(&self) -> u64 {
        self.inner.generation()
    }
}

/// Adds documents to an index. Use as a context manager (``with index.writer() as w:``): it
/// commits when the block ends normally; on an exception the uncommitted documents are
/// discarded. Documents are dicts ``{field: value}``; values are strings, integers or lists
/// of them. Indexing and committing release the GIL.
///
/// A vector field with ``embed`` options (see :meth:`SchemaBuilder.add_vector_field`) gets the
/// vectors of a document that has the source text and gives no vector computed by the
/// field's registered model (:meth:`Index.add_model`); :meth:`add_many` embeds its documents
/// ``batch_size`` at a time, :meth:`add` and :meth:`update` one by one.
#[pyclass(name = "IndexWriter", module = "quarry", frozen)]
pub struct PyIndexWriter {
    schema: Schema,
    /// Parses the query strings of `delete` (only the schema is used).
    parser: PySearcher,
    inner: Mutex<Option<IndexWriter>>,
}

impl PyIndexWriter {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut IndexWriter) -> quarry::Result<T> + Send,
    ) -> PyResult<T> {
        detached(py, || {
            let mut guard = self.inner.lock().expect("writer");
            let w = guard.as_mut().ok_or_else(|| {
                quarry::Error::WriterPoisoned("the writer is closed; open a new one".into())
            })?;
            f(w)
        })
    }

    /// Adds a batch in one call, so that embedded vector fields are computed for all of it
    /// at once (batches through the model, every core) with the GIL released.
    fn add_batch(&self, py: Python<'_>, batch: Vec<Document>) -> PyResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.with(py, move |w| w.add_documents(batch).map(|_| ()))
    }
}

#[pymethods]
impl PyIndexWriter {
    /// Adds one document (visible to searchers after :meth:`commit`, or :meth:`refresh` for
    /// readers from :meth:`reader`). Returns its sequence number (opstamp).
    fn add(&self, py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<u64> {
        let d = convert::document(&self.schema, doc)?;
        self.with(py, move |w| w.add_document(d))
    }

    /// Replaces, atomically, the documents whose field ``key`` has the value ``doc[key]`` by
    /// ``doc`` (an upsert: adds ``doc`` when none has that key). Returns the opstamp.
    fn update(&self, py: Python<'_>, key: &str, doc: &Bound<'_, PyAny>) -> PyResult<u64> {
        let value = doc.get_item(key).map_err(|_| {
            errors::to_py(
                py,
                quarry::Error::Document {
                    field: key.to_string(),
                    reason: "the document lacks its key field".into(),
                },
            )
        })?;
        let value = convert::scalar(py, key, &value)?;
        let d = convert::document(&self.schema, doc)?;
        let key = key.to_string();
        self.with(py, move |w| w.update_document(&key, &value, d))
    }

    /// Deletes documents: ``(field, value)`` deletes those whose field has exactly that value;
    /// a query string (Lucene syntax, default fields: all text fields) or a :class:`Query`
    /// deletes its matches. Takes effect at the next commit or refresh. Returns the opstamp.
    fn delete(&self, py: Python<'_>, what: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Ok(t) = what.cast::<PyTuple>() {
            if t.len() != 2 {
                return Err(PyTypeError::new_err(
                    "delete takes (field, value), a query string or a Query",
                ));
            }
            let field: String = t.get_item(0)?.extract()?;
            let value = convert::scalar(py, &field, &t.get_item(1)?)?;
            return self.with(py, move |w| w.delete_term(&field, &value));
        }
        let q = self.parser.resolve(py, what, None)?;
        self.with(py, move |w| w.delete_query(&q))
    }

    /// Deletes every document (at the next commit or refresh). Returns the opstamp.
    fn delete_all(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |w| w.delete_all())
    }

    /// Makes the changes so far visible to readers from :meth:`reader` (near-real-time), without
    /// a durable commit.
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |w| w.refresh())
    }

    /// A near-real-time reader: it sees this writer's changes after each :meth:`refresh` (call
    /// its ``reload()``), before they are committed.
    fn reader(&self, py: Python<'_>) -> PyResult<PyIndexReader> {
        let inner = self.with(py, |w| w.reader())?;
        Ok(PyIndexReader { inner })
    }

    /// Adds every document of ``docs`` (any iterable, e.g. a generator reading a file),
    /// converting ``batch_size`` at a time: memory stays flat however many are given. Embedded
    /// vector fields are computed for each batch in one call, without the GIL; when that
    /// fails, none of the batch is added. Returns the number added.
    #[pyo3(signature = (docs, batch_size = 1024))]
    fn add_many(
        &self,
        py: Python<'_>,
        docs: &Bound<'_, PyAny>,
        batch_size: usize,
    ) -> PyResult<u64> {
        let batch_size = batch_size.max(1);
        let mut n = 0u64;
        let mut batch = Vec::with_capacity(batch_size);
        for d in docs.try_iter()? {
            batch.push(convert::document(&self.schema, &d?)?);
            if batch.len() == batch_size {
                n += batch.len() as u64;
                self.add_batch(
                    py,
                    std::mem::replace(&mut batch, Vec::with_capacity(batch_size)),
                )?;
            }
        }
        n += batch.len() as u64;
        self.add_batch(py, batch)?;
        Ok(n)
    }

    /// Makes the added documents durable and visible to new searchers. Returns
    /// ``{"generation", "docs", "segments", "merges", "seconds"}``.
    fn commit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(py, |w| w.commit())?;
        let d = PyDict::new(py);
        d.set_item("generation", s.generation)?;
        d.set_item("docs", s.docs)?;
        d.set_item("segments", s.segments)?;
        d.set_item("merges", s.merges)?;
        d.set_item("seconds", s.seconds)?;
        Ok(d)
    }

    /// Merges the index down to at most ``max_segments`` segments and commits.
    #[pyo3(signature = (max_segments = 1))]
    fn force_merge(&self, py: Python<'_>, max_segments: usize) -> PyResult<()> {
        self.with(py, move |w| w.force_merge(max_segments.max(1)).map(|_| ()))
    }

    /// Closes the writer without committing: documents added since the last commit are
    /// discarded. Further calls raise :class:`WriterError`.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.inner.lock().expect("writer").take();
        detached(py, move || {
            drop(w);
            Ok(())
        })
    }

    /// Commits and closes the writer.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.inner.lock().expect("writer").take();
        detached(py, move || match w {
            Some(w) => w.close().map(|_| ()),
            None => Ok(()),
        })
    }

    /// The schema documents are checked against.
    #[getter]
    fn schema(&self) -> PySchema {
        PySchema {
            inner: self.schema.clone(),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyType>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some() {
            self.rollback(py)?;
        } else {
            self.close(py)?;
        }
        Ok(false)
    }
}
