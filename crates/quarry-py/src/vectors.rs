//! Dense vectors from Python: vector fields in `SchemaBuilder`, vector values (lists, tuples,
//! NumPy arrays or any buffer of numbers), `Searcher.knn`, `Searcher.hybrid` (with a query
//! vector, or a text the field's model embeds: `crate::embed`), and `fuse` (the library's rank
//! fusion on rankings made elsewhere: `quarry.ray` fuses shards' rankings with it).
use pyo3::buffer::{PyBuffer, PyUntypedBuffer};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use quarry::fusion::{self, Normalizer};
use quarry::schema::{ElementType, Similarity, VectorIndex};
use quarry::search::knn::{Fusion, KnnHit, KnnQuery};
use quarry::{FieldEntry, FieldType, Index, Searcher};
use serde_json::{Map, Value};

use crate::schema::PySchemaBuilder;
use crate::search::{PyHit, PySearchResult, PySearcher};
use crate::{convert, detached, errors};

/// The vector a Python value gives a vector field: a list or tuple of numbers, a 1-D buffer of
/// float32 (a NumPy array: copied once, straight from its memory, into the engine's vector) or
/// float64 (converted), or any other iterable of numbers. `err` makes the exception of a value
/// that is not a vector from the reason (the caller names the field).
pub(crate) fn vector_value(
    obj: &Bound<'_, PyAny>,
    err: &dyn Fn(String) -> PyErr,
) -> PyResult<Vec<f32>> {
    let py = obj.py();
    let number = |i: usize, item: &Bound<'_, PyAny>| -> PyResult<f32> {
        if item.is_instance_of::<pyo3::types::PyBool>() || item.is_instance_of::<PyString>() {
            return Err(err(format!(
                "value {i} of the vector is {}, not a number",
                type_name(item)
            )));
        }
        item.extract::<f64>().map(|x| x as f32).map_err(|_| {
            err(format!(
                "value {i} of the vector is {}, not a number",
                type_name(item)
            ))
        })
    };
    if let Ok(list) = obj.cast::<PyList>() {
        return list
            .iter()
            .enumerate()
            .map(|(i, x)| number(i, &x))
            .collect();
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().enumerate().map(|(i, x)| number(i, &x)).collect();
    }
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(err(format!(
            "expected a vector (a list of numbers or a 1-D float32 array), found {}",
            type_name(obj)
        )));
    }
    if let Ok(buf) = PyUntypedBuffer::get(obj) {
        if buf.dimensions() != 1 {
            return Err(err(format!(
                "a vector is a 1-D array, this one has shape {:?}",
                buf.shape()
            )));
        }
        let format = buf.format().to_string_lossy().into_owned();
        if let Ok(b) = buf.into_typed::<f32>() {
            return b.to_vec(py);
        }
        if let Ok(b) = PyBuffer::<f64>::get(obj) {
            return Ok(b.to_vec(py)?.into_iter().map(|x| x as f32).collect());
        }
        return Err(err(format!(
            "a vector array holds float32 (or float64) values, not buffer format {format:?}; convert it with .astype(\"float32\")"
        )));
    }
    match obj.try_iter() {
        Ok(items) => items.enumerate().map(|(i, x)| number(i, &x?)).collect(),
        Err(_) => Err(err(format!(
            "expected a vector (a list of numbers or a 1-D float32 array), found {}",
            type_name(obj)
        ))),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an object".into())
}

fn bad_arg(py: Python<'_>, msg: String) -> PyErr {
    errors::to_py(py, quarry::Error::InvalidArgument(msg))
}

fn query_error(py: Python<'_>, msg: String) -> PyErr {
    errors::to_py(py, quarry::Error::Query(msg))
}

fn schema_error(py: Python<'_>, msg: String) -> PyErr {
    errors::to_py(py, quarry::Error::Schema(msg))
}

/// Adds a vector field's settings to the dict `Schema.fields` gives for it.
pub(crate) fn describe(d: &Bound<'_, PyDict>, f: &FieldEntry) -> PyResult<()> {
    let Some(o) = f.vector_options() else {
        return Ok(());
    };
    d.set_item("dims", o.dims)?;
    d.set_item("similarity", o.similarity.name())?;
    d.set_item(
        "element_type",
        match o.element_type {
            ElementType::Float32 => "float32",
            ElementType::Int8 => "int8",
        },
    )?;
    match o.index {
        VectorIndex::Hnsw { m, ef_construction } => {
            d.set_item("index", "hnsw")?;
            d.set_item("m", m)?;
            d.set_item("ef_construction", ef_construction)?;
        }
        VectorIndex::Flat => d.set_item("index", "flat")?,
    }
    crate::embed::describe(d, f)
}

#[pymethods]
impl PySchemaBuilder {
    /// A dense vector field of ``dims`` values (1 to 4096): one vector per document, searched
    /// by :meth:`Searcher.knn` and :meth:`Searcher.hybrid`. ``similarity``: ``"cosine"``
    /// (default; vectors are scaled to unit length), ``"dot_product"`` (unit vectors),
    /// ``"l2_norm"`` or ``"max_inner_product"``; ``element_type``: ``"float32"`` or ``"int8"``
    /// (also keeps a 7-bit quantized copy that ranks graph candidates); ``index``: ``"hnsw"``
    /// (a graph per segment, with ``m`` neighbours per node and a build beam of
    /// ``ef_construction``) or ``"flat"`` (exact search only); ``stored``: whether hits return
    /// the vector. Raises :class:`SchemaError` naming the field for a bad setting.
    ///
    /// ``embed_from`` and ``model``: compute the vectors from the text of the text or keyword
    /// field ``embed_from`` with the model registered as ``model`` (:meth:`Index.add_model`;
    /// ``dims`` must be its dimension) when a document gives no vector, and let
    /// :meth:`Searcher.knn` take ``text=``. ``passages``: how a text longer than the model's
    /// window is embedded: None or True (the default) as overlapping passages, each a vector
    /// (a document scores by its best one, and a hit says which matched); ``{"window": N,
    /// "overlap": N}`` in word pieces; False cuts the text at the window. The schema JSON's
    /// ``"embed": {"from", "model", "passages"}``.
    #[pyo3(signature = (name, dims, similarity = "cosine", element_type = "float32", index = "hnsw", m = 16, ef_construction = 100, stored = true, embed_from = None, model = None, passages = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_vector_field<'py>(
        slf: PyRef<'py, Self>,
        py: Python<'py>,
        name: &str,
        dims: u32,
        similarity: &str,
        element_type: &str,
        index: &str,
        m: u32,
        ef_construction: u32,
        stored: bool,
        embed_from: Option<&str>,
        model: Option<&str>,
        passages: Option<Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let embed = crate::embed::embed_options(py, name, embed_from, model, passages.as_ref())?;
        let sim = Similarity::from_name(similarity).ok_or_else(|| {
            schema_error(
                py,
                format!(
                    "field {name:?}: unknown similarity {similarity:?} (cosine, dot_product, l2_norm, max_inner_product)"
                ),
            )
        })?;
        let element = match element_type {
            "float32" | "float" => ElementType::Float32,
            "int8" | "byte" => ElementType::Int8,
            other => {
                return Err(schema_error(
                    py,
                    format!("field {name:?}: unknown element_type {other:?} (float32, int8)"),
                ))
            }
        };
        let vector_index = match index {
            "hnsw" => VectorIndex::Hnsw { m, ef_construction },
            "flat" => VectorIndex::Flat,
            other => {
                return Err(schema_error(
                    py,
                    format!("field {name:?}: unknown index {other:?} (hnsw, flat)"),
                ))
            }
        };
        let mut f = FieldEntry::vector(name, dims, sim);
        f.stored = stored;
        // Defaults are left implicit, so the schema's JSON is what a schema file would say.
        if element != ElementType::Float32 {
            f.element_type = Some(element);
        }
        if vector_index != VectorIndex::default() {
            f.index = Some(vector_index);
        }
        f.embed = embed;
        slf.fields.lock().expect("builder").push(f);
        Ok(slf)
    }
}

/// Where a kNN search's query vector comes from.
enum QueryVector {
    /// Given by the caller (checked against the field).
    Given(Vec<f32>),
    /// A text the field's model embeds.
    Text(String),
}

/// Arguments of one kNN search, before they meet a searcher.
struct KnnArgs {
    field: String,
    vector: QueryVector,
    k: usize,
    num_candidates: Option<usize>,
    filter: Option<quarry::query::Query>,
    exact: bool,
}

impl KnnArgs {
    /// The library's query. A text is embedded here, by the field's model from `index`'s
    /// registry: callers run this without the GIL.
    fn query(self, index: Option<&Index>) -> quarry::Result<KnnQuery> {
        let vector = match self.vector {
            QueryVector::Given(v) => v,
            QueryVector::Text(text) => {
                let index = index.ok_or_else(|| {
                    quarry::Error::InvalidArgument(
                        "this searcher has no index whose models could embed text=; use Index.searcher()".into(),
                    )
                })?;
                index.embed_query(&self.field, &text)?
            }
        };
        Ok(KnnQuery {
            field: self.field,
            vector,
            k: self.k,
            num_candidates: self.num_candidates,
            filter: self.filter,
            exact: self.exact,
        })
    }
}

impl PySearcher {
    /// The schema entry of the vector field `field`: UnknownFieldError, or QueryError for a
    /// field that is not a vector field.
    fn vector_field(&self, py: Python<'_>, field: &str) -> PyResult<&FieldEntry> {
        let schema = self.inner.schema();
        let Some(entry) = schema.field_by_name(field) else {
            let known = schema.fields().iter().map(|f| f.name.clone()).collect();
            return Err(errors::unknown_field(py, field, known));
        };
        if entry.field_type != FieldType::Vector {
            return Err(query_error(
                py,
                format!(
                    "field {field:?} is a {} field, not a vector field: kNN searches vector fields",
                    entry.field_type
                ),
            ));
        }
        Ok(entry)
    }

    /// A query vector for `field`, checked as far as the schema allows before the search: the
    /// library checks length and type too, but names the field only in some messages.
    fn query_vector(
        &self,
        py: Python<'_>,
        field: &str,
        vector: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<f32>> {
        let entry = self.vector_field(py, field)?;
        let v = vector_value(vector, &|m| {
            query_error(py, format!("field {field:?}: {m}"))
        })?;
        let dims = entry.dims.unwrap_or(0) as usize;
        if v.len() != dims {
            return Err(query_error(
                py,
                format!(
                    "field {field:?}: the query vector has {} values; the field has {dims} dimensions",
                    v.len()
                ),
            ));
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(query_error(
                py,
                format!(
                    "field {field:?}: value {i} of the query vector ({}) is not a finite 32-bit float",
                    v[i]
                ),
            ));
        }
        Ok(v)
    }

    #[allow(clippy::too_many_arguments)]
    fn knn_args(
        &self,
        py: Python<'_>,
        field: &str,
        vector: Option<&Bound<'_, PyAny>>,
        text: Option<String>,
        k: usize,
        num_candidates: Option<usize>,
        filter: Option<&Bound<'_, PyAny>>,
        exact: bool,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<KnnArgs> {
        let vector = match (vector.filter(|v| !v.is_none()), text) {
            (Some(v), None) => QueryVector::Given(self.query_vector(py, field, v)?),
            (None, Some(t)) => {
                self.vector_field(py, field)?;
                QueryVector::Text(t)
            }
            (Some(_), Some(_)) => {
                return Err(bad_arg(
                    py,
                    format!("kNN on {field:?}: give a query vector or a text to embed, not both"),
                ))
            }
            (None, None) => {
                return Err(bad_arg(
                    py,
                    format!(
                        "kNN on {field:?} needs a query vector (vector=) or a text that the field's model embeds (text=)"
                    ),
                ))
            }
        };
        let filter = match filter.filter(|f| !f.is_none()) {
            Some(f) => Some(self.resolve(py, f, default_fields)?),
            None => None,
        };
        Ok(KnnArgs {
            field: field.to_string(),
            vector,
            k,
            num_candidates,
            filter,
            exact,
        })
    }

    /// The `knn=` argument of `hybrid`: a dict with `field`, `vector` (or `query_vector`) or
    /// `text`, and optionally `k`, `num_candidates`, `filter`, `exact`.
    fn knn_dict(
        &self,
        py: Python<'_>,
        knn: &Bound<'_, PyAny>,
        k: usize,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<KnnArgs> {
        let d = knn.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(
                "knn= is a dict {\"field\": ..., \"vector\": [...] or \"text\": \"...\", \"k\", \"num_candidates\", \"filter\", \"exact\"}",
            )
        })?;
        let mut field = None;
        let mut vector = None;
        let mut text = None;
        let mut kk = k;
        let mut num_candidates = None;
        let mut filter = None;
        let mut exact = false;
        for (key, v) in d.iter() {
            let key: String = key.extract()?;
            match key.as_str() {
                "field" => field = Some(v.extract::<String>()?),
                "vector" | "query_vector" => vector = Some(v),
                "text" => text = v.extract::<Option<String>>()?,
                "k" => kk = v.extract()?,
                "num_candidates" => num_candidates = v.extract()?,
                "filter" => filter = Some(v),
                "exact" => exact = v.extract()?,
                other => {
                    return Err(bad_arg(
                        py,
                        format!(
                            "knn= key {other:?} (known: field, vector, text, k, num_candidates, filter, exact)"
                        ),
                    ))
                }
            }
        }
        let field = field.ok_or_else(|| bad_arg(py, "knn= needs \"field\"".into()))?;
        self.knn_args(
            py,
            &field,
            vector.as_ref(),
            text,
            kk,
            num_candidates,
            filter.as_ref(),
            exact,
            default_fields,
        )
    }
}

/// Hits with their stored fields (`fields`: those to keep; `[]`: none) and, for a field of
/// passages, the passage each matched (`field`: the kNN field), as a `SearchResult` whose
/// count is the number of hits.
fn result(
    py: Python<'_>,
    searcher: Searcher,
    field: String,
    run: impl FnOnce(&Searcher) -> quarry::Result<Vec<KnnHit>> + Send,
    fields: Option<Vec<String>>,
) -> PyResult<PySearchResult> {
    let want_fields = fields.as_ref().is_none_or(|f| !f.is_empty());
    type Found = (Vec<KnnHit>, Vec<Map<String, Value>>, Vec<Option<String>>);
    let (hits, docs, passages): Found = detached(py, move || {
        let hits = run(&searcher)?;
        let mut docs = Vec::new();
        if want_fields {
            for h in &hits {
                docs.push(searcher.stored_fields(h.hit.doc)?);
            }
        }
        let passages = hits
            .iter()
            .map(|h| match &h.passage {
                Some(p) => searcher.passage_text(h.hit.doc, &field, p),
                None => Ok(None),
            })
            .collect::<quarry::Result<Vec<_>>>()?;
        Ok((hits, docs, passages))
    })?;
    let items = hits
        .iter()
        .zip(passages)
        .enumerate()
        .map(|(i, (h, text))| {
            let f = match docs.get(i) {
                Some(m) => convert::stored(py, m, fields.as_deref())?,
                None => PyDict::new(py),
            };
            let passage = match &h.passage {
                Some(p) => Some(crate::embed::passage(py, p, text)?),
                None => None,
            };
            Py::new(
                py,
                PyHit::new(
                    py,
                    h.hit.score,
                    (h.hit.doc.segment, h.hit.doc.doc),
                    h.hit.seq,
                    Some(f.unbind()),
                    None,
                    None,
                    None,
                    passage,
                ),
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    let n = items.len() as u64;
    Ok(PySearchResult::new(
        PyList::new(py, items)?.unbind(),
        n,
        true,
    ))
}

/// `fusion=`, `rank_constant=`, `window_size=`, `weights=` and `normalization=` as a [`Fusion`].
fn parse_fusion(
    py: Python<'_>,
    fusion: &str,
    rank_constant: u32,
    window: usize,
    weights: Option<Vec<f32>>,
    normalization: &str,
) -> PyResult<Fusion> {
    let (text_weight, knn_weight) = match weights.as_deref() {
        None => (1.0, 1.0),
        Some(&[t, k]) => (t, k),
        Some(w) => {
            return Err(bad_arg(
                py,
                format!(
                    "weights= is (text, knn), two numbers, not {} of them",
                    w.len()
                ),
            ))
        }
    };
    if !(text_weight.is_finite() && knn_weight.is_finite()) {
        return Err(bad_arg(py, "weights= must be finite numbers".into()));
    }
    Ok(match fusion {
        "rrf" => {
            if rank_constant < 1 {
                return Err(bad_arg(py, "rank_constant= must be at least 1".into()));
            }
            Fusion::Rrf {
                rank_constant,
                window,
                text_weight,
                knn_weight,
            }
        }
        "linear" => Fusion::Linear {
            normalizer: parse_normalizer(py, normalization)?,
            window,
            text_weight,
            knn_weight,
        },
        other => return Err(bad_arg(py, format!("fusion= {other:?} (rrf or linear)"))),
    })
}

fn parse_normalizer(py: Python<'_>, name: &str) -> PyResult<Normalizer> {
    let name = if name == "l2" { "l2_norm" } else { name };
    Normalizer::from_name(name)
        .ok_or_else(|| bad_arg(py, format!("normalization= {name:?} (minmax, l2 or none)")))
}

#[pymethods]
impl PySearcher {
    /// The ``k`` documents whose vectors of ``field`` are nearest ``vector`` (a list of numbers
    /// or a 1-D NumPy float32 array, read through the buffer protocol), best first, as a
    /// :class:`SearchResult` (``count`` is the number of hits). Scores are Elasticsearch's for
    /// the field's similarity (cosine: ``(1 + cos) / 2``); equal scores rank in index order.
    ///
    /// ``text`` instead of ``vector``: the query vector is ``text`` embedded by the model of
    /// the field's ``embed`` option (:meth:`Index.embed_query`; the GIL is released). On a
    /// field of passages a document scores by its best passage and ``hit.passage`` says which.
    ///
    /// ``num_candidates``: the graph search's beam width per segment (default
    /// ``min(1.5 k, 10000)``); ``filter``: a query (string or :class:`Query`) that hits must
    /// match; ``exact``: compare every vector instead of walking the graph. Deleted documents
    /// never come back. Raises :class:`UnknownFieldError`, or :class:`QueryError` naming the
    /// field for a non-vector field or a vector of the wrong length or with NaN/infinity;
    /// :class:`InvalidArgumentError` for both or neither of ``vector`` and ``text``, or
    /// ``text`` on a field without ``embed``.
    #[pyo3(signature = (field, vector = None, k = 10, num_candidates = None, filter = None, exact = false, fields = None, default_fields = None, text = None))]
    #[allow(clippy::too_many_arguments)]
    fn knn(
        &self,
        py: Python<'_>,
        field: &str,
        vector: Option<&Bound<'_, PyAny>>,
        k: usize,
        num_candidates: Option<usize>,
        filter: Option<&Bound<'_, PyAny>>,
        exact: bool,
        fields: Option<Vec<String>>,
        default_fields: Option<Vec<String>>,
        text: Option<String>,
    ) -> PyResult<PySearchResult> {
        let args = self.knn_args(
            py,
            field,
            vector,
            text,
            k,
            num_candidates,
            filter,
            exact,
            default_fields,
        )?;
        let index = self.index.clone();
        result(
            py,
            self.inner.clone(),
            field.to_string(),
            move |s| s.knn_hits(&args.query(index.as_ref())?),
            fields,
        )
    }

    /// A text ``query``'s ranking and a kNN search's (``knn``: a dict ``{"field", "vector",
    /// "k", "num_candidates", "filter", "exact"}``, as :meth:`knn` takes them, with ``"text"``
    /// instead of ``"vector"`` for a text the field's model embeds; ``k`` defaults to
    /// ``limit``) fused into one; the best ``limit`` hits, each scored by the fusion, with
    /// ``hit.passage`` for those the kNN ranking found by a passage.
    ///
    /// ``fusion="rrf"``: reciprocal rank fusion, ``Σ weight / (rank_constant + rank)``, ranks
    /// from 1; ``fusion="linear"``: ``Σ weight × normalized score`` with ``normalization``
    /// ``"minmax"`` (default), ``"l2"`` or ``"none"``. Each ranking is cut to its first
    /// ``window_size`` hits (default ``max(limit, 10)``); ``weights``: ``(text, knn)``, default
    /// ``(1, 1)``. Equal fused scores rank in index order.
    #[pyo3(signature = (query, knn, limit = 10, fusion = "rrf", rank_constant = 60, window_size = None, weights = None, normalization = "minmax", fields = None, default_fields = None))]
    #[allow(clippy::too_many_arguments)]
    fn hybrid(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        knn: &Bound<'_, PyAny>,
        limit: usize,
        fusion: &str,
        rank_constant: u32,
        window_size: Option<usize>,
        weights: Option<Vec<f32>>,
        normalization: &str,
        fields: Option<Vec<String>>,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<PySearchResult> {
        let text = self.resolve(py, query, default_fields.clone())?;
        let args = self.knn_dict(py, knn, limit, default_fields)?;
        let window = window_size.unwrap_or(limit.max(10));
        let fusion = parse_fusion(py, fusion, rank_constant, window, weights, normalization)?;
        let index = self.index.clone();
        let field = args.field.clone();
        result(
            py,
            self.inner.clone(),
            field,
            move |s| s.hybrid_hits(&text, &args.query(index.as_ref())?, &fusion, limit),
            fields,
        )
    }
}

/// Fuses rankings made elsewhere (each a list of ``(key, score)`` pairs, best first; a key is
/// a tuple of two non-negative integers) exactly as :meth:`Searcher.hybrid` fuses its two:
/// returns ``[(key, fused score)]``, best first, equal scores by key ascending. ``weights``:
/// one per ranking (default 1 each).
#[pyfunction]
#[pyo3(signature = (rankings, fusion = "rrf", rank_constant = 60, window_size = 10, weights = None, normalization = "minmax"))]
pub(crate) fn fuse(
    py: Python<'_>,
    rankings: Vec<Vec<((u64, u64), f32)>>,
    fusion: &str,
    rank_constant: u32,
    window_size: usize,
    weights: Option<Vec<f32>>,
    normalization: &str,
) -> PyResult<Vec<((u64, u64), f32)>> {
    let weights = weights.unwrap_or_else(|| vec![1.0; rankings.len()]);
    if weights.len() != rankings.len() {
        return Err(bad_arg(
            py,
            format!(
                "weights= has {} values for {} rankings",
                weights.len(),
                rankings.len()
            ),
        ));
    }
    match fusion {
        "rrf" => {
            if rank_constant < 1 {
                return Err(bad_arg(py, "rank_constant= must be at least 1".into()));
            }
            let keys: Vec<Vec<(u64, u64)>> = rankings
                .iter()
                .map(|r| r.iter().map(|h| h.0).collect())
                .collect();
            let lists: Vec<(f32, &[(u64, u64)])> = weights
                .iter()
                .zip(&keys)
                .map(|(&w, k)| (w, &k[..]))
                .collect();
            Ok(fusion::rrf(&lists, rank_constant, window_size))
        }
        "linear" => {
            let n = parse_normalizer(py, normalization)?;
            let lists: Vec<fusion::Weighted<'_, (u64, u64)>> = weights
                .iter()
                .zip(&rankings)
                .map(|(&w, r)| (w, n, &r[..]))
                .collect();
            Ok(fusion::linear(&lists, window_size))
        }
        other => Err(bad_arg(py, format!("fusion= {other:?} (rrf or linear)"))),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fuse, m)?)
}
