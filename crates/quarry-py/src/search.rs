//! How does Python search? `Searcher` (parse, search, count, statistics for sharded search),
//! `Query`, and the `Hit` / `SearchResult` values it returns.
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use quarry::query::Query;
use quarry::{
    CollectionStats, DocAddress, FieldType, SearchMode, Searcher, SortField, SortKey, SortValue,
};
use serde_json::{Map, Value};

use crate::query::PyQuery;
use crate::schema::PySchema;
use crate::{convert, detached, errors};

/// One search hit: ``score`` (BM25, float32 precision), ``doc`` (the document's address
/// ``(segment, doc)`` in the searcher it came from), ``seq`` (its position in index order),
/// ``fields`` (stored fields), ``shard`` (the shard, for sharded searches; else None) and
/// ``snippets`` (with ``search(..., highlight=[...])``: per highlighted field with a match, its
/// fragments with the matches in ``<em>``...``</em>``; else empty) and ``passage`` (kNN and
/// hybrid hits of a field that embeds its text as passages: the passage that matched).
#[pyclass(name = "Hit", module = "quarry", frozen)]
pub struct PyHit {
    #[pyo3(get)]
    score: f32,
    #[pyo3(get)]
    doc: (u32, u32),
    #[pyo3(get)]
    seq: u64,
    #[pyo3(get)]
    fields: Py<PyDict>,
    #[pyo3(get)]
    shard: Option<u32>,
    /// With ``order_by``: the hit's sort values (pass the last hit's as ``after=`` for the next
    /// page); else None.
    #[pyo3(get)]
    sort: Option<Py<PyList>>,
    /// Highlighted fragments by field (``search(..., highlight=[...])``).
    #[pyo3(get)]
    snippets: Py<PyDict>,
    /// ``{"index", "start", "end", "text"}``: the passage of the document's text whose vector
    /// scored a kNN (or hybrid) hit, ``start``..``end`` in bytes of the UTF-8 source text (the
    /// source field's values joined by newlines), ``text`` None when that field is not stored;
    /// None for other hits.
    #[pyo3(get)]
    passage: Option<Py<PyDict>>,
}

#[pymethods]
impl PyHit {
    #[new]
    #[pyo3(signature = (score, doc, seq, fields = None, shard = None, sort = None, snippets = None, passage = None))]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        py: Python<'_>,
        score: f32,
        doc: (u32, u32),
        seq: u64,
        fields: Option<Py<PyDict>>,
        shard: Option<u32>,
        sort: Option<Py<PyList>>,
        snippets: Option<Py<PyDict>>,
        passage: Option<Py<PyDict>>,
    ) -> Self {
        Self {
            score,
            doc,
            seq,
            fields: fields.unwrap_or_else(|| PyDict::new(py).unbind()),
            shard,
            sort,
            snippets: snippets.unwrap_or_else(|| PyDict::new(py).unbind()),
            passage,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self.fields.bind(py).repr()?;
        let shard = self
            .shard
            .map(|s| format!(", shard={s}"))
            .unwrap_or_default();
        Ok(format!(
            "Hit(score={}, doc={:?}, seq={}{shard}, fields={fields})",
            self.score, self.doc, self.seq
        ))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let h = slf.get();
        let sort = h.sort.as_ref().map(|s| s.clone_ref(py));
        let passage = h.passage.as_ref().map(|p| p.clone_ref(py));
        let args = (
            h.score,
            h.doc,
            h.seq,
            h.fields.clone_ref(py),
            h.shard,
            sort,
            h.snippets.clone_ref(py),
            passage,
        )
            .into_pyobject(py)?;
        PyTuple::new(py, [slf.get_type().into_any(), args.into_any()])
    }
}

/// The outcome of a search: ``hits`` (best first), ``count`` (number of matches) and
/// ``count_exact`` (False when mode ``"top"`` skipped documents, so ``count`` is a lower
/// bound). Iterating or indexing a result goes through its hits.
#[pyclass(name = "SearchResult", module = "quarry", frozen, sequence)]
pub struct PySearchResult {
    #[pyo3(get)]
    hits: Py<PyList>,
    #[pyo3(get)]
    count: u64,
    #[pyo3(get)]
    count_exact: bool,
}

#[pymethods]
impl PySearchResult {
    #[new]
    #[pyo3(signature = (hits, count, count_exact = true))]
    pub(crate) fn new(hits: Py<PyList>, count: u64, count_exact: bool) -> Self {
        Self {
            hits,
            count,
            count_exact,
        }
    }
    fn __len__(&self, py: Python<'_>) -> usize {
        self.hits.bind(py).len()
    }
    fn __getitem__<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyAny>> {
        let hits = self.hits.bind(py);
        let n = hits.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err("hit index out of range"));
        }
        hits.get_item(j as usize)
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.hits.bind(py).try_iter()?.into_any())
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "SearchResult(count={}{}, hits=[{} hits])",
            self.count,
            if self.count_exact { "" } else { "+" },
            self.hits.bind(py).len()
        )
    }
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let r = slf.get();
        let args = (r.hits.clone_ref(py), r.count, r.count_exact).into_pyobject(py)?;
        PyTuple::new(py, [slf.get_type().into_any(), args.into_any()])
    }
}

/// Searches one point-in-time view of an index. Thread-safe; searching and counting release
/// the GIL, so several Python threads search in parallel.
///
/// ``query`` arguments are a query string (Lucene classic syntax, parsed against
/// ``default_fields``, by default every text field, default operator OR) or a :class:`Query`.
#[pyclass(name = "Searcher", module = "quarry", frozen)]
pub struct PySearcher {
    pub(crate) inner: Searcher,
    /// The index the searcher reads, whose registered models embed `text=` queries (None for
    /// a writer's query parser).
    pub(crate) index: Option<quarry::Index>,
}

impl PySearcher {
    pub(crate) fn new(inner: Searcher, index: Option<quarry::Index>) -> Self {
        Self { inner, index }
    }

    fn field_names(&self) -> Vec<String> {
        self.inner
            .schema()
            .fields()
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }

    fn parse_str(
        &self,
        py: Python<'_>,
        text: &str,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<Query> {
        let fields = default_fields.unwrap_or_default();
        for f in &fields {
            if self.inner.schema().field_id(f).is_none() {
                return Err(errors::unknown_field(py, f, self.field_names()));
            }
        }
        let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
        let parser = self
            .inner
            .query_parser(&refs)
            .map_err(|e| errors::to_py(py, e))?;
        let q = parser
            .parse(text)
            .map_err(|e| errors::parse_error(py, &e))?;
        if let Some(f) = unknown_field(&q, self.inner.schema()) {
            return Err(errors::unknown_field(py, &f, self.field_names()));
        }
        Ok(q)
    }

    pub(crate) fn resolve(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<Query> {
        if let Ok(q) = query.cast::<PyQuery>() {
            return Ok(q.get().inner.clone());
        }
        let text = query.cast::<PyString>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("query must be a str or a quarry.Query")
        })?;
        self.parse_str(py, text.to_str()?, default_fields)
    }

    /// This searcher, or one scoring with supplied statistics.
    pub(crate) fn scoring(
        &self,
        py: Python<'_>,
        stats: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Searcher> {
        let Some(stats) = stats.filter(|s| !s.is_none()) else {
            return Ok(self.inner.clone());
        };
        let text = convert::json_dumps(stats)?;
        let parsed = CollectionStats::from_json(&text).map_err(|e| errors::to_py(py, e))?;
        self.inner
            .with_collection_stats(&parsed)
            .map_err(|e| errors::to_py(py, e))
    }
}

/// The first field named by `q` that `schema` lacks.
fn unknown_field(q: &Query, schema: &quarry::Schema) -> Option<String> {
    let known = |f: &str| schema.field_id(f).is_some();
    match q {
        Query::Term { field, .. }
        | Query::Phrase { field, .. }
        | Query::MultiPhrase { field, .. }
        | Query::PhrasePrefix { field, .. }
        | Query::Prefix { field, .. }
        | Query::Wildcard { field, .. }
        | Query::Regexp { field, .. }
        | Query::Fuzzy { field, .. }
        | Query::Range { field, .. } => (!known(field)).then(|| field.clone()),
        Query::Boolean { clauses, .. } => {
            clauses.iter().find_map(|c| unknown_field(&c.query, schema))
        }
        Query::Boost { query, .. } | Query::ConstantScore { query } => unknown_field(query, schema),
        Query::DisMax { queries, .. } => queries.iter().find_map(|q| unknown_field(q, schema)),
        Query::Boosting {
            positive, negative, ..
        } => unknown_field(positive, schema).or_else(|| unknown_field(negative, schema)),
        _ => None,
    }
}

impl PySearcher {
    #[allow(clippy::too_many_arguments)]
    fn search_sorted(
        &self,
        py: Python<'_>,
        searcher: Searcher,
        q: Query,
        sort: Vec<SortField>,
        after: Option<Vec<SortValue>>,
        limit: usize,
        fields: Option<Vec<String>>,
        track_scores: bool,
    ) -> PyResult<PySearchResult> {
        let want_fields = fields.as_ref().is_none_or(|f| !f.is_empty());
        let (res, docs) = detached(py, move || {
            let res = searcher.search_sorted(&q, &sort, limit, after.as_deref(), track_scores)?;
            let mut docs = Vec::new();
            if want_fields {
                for h in &res.hits {
                    docs.push(searcher.stored_fields(h.hit.doc)?);
                }
            }
            Ok((res, docs))
        })?;
        let hits = res
            .hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let f = match docs.get(i) {
                    Some(m) => convert::stored(py, m, fields.as_deref())?,
                    None => PyDict::new(py),
                };
                let values = h
                    .values
                    .iter()
                    .map(|v| sort_value_py(py, v))
                    .collect::<PyResult<Vec<_>>>()?;
                Py::new(
                    py,
                    PyHit {
                        score: h.hit.score,
                        doc: (h.hit.doc.segment, h.hit.doc.doc),
                        seq: h.hit.seq,
                        fields: f.unbind(),
                        shard: None,
                        sort: Some(PyList::new(py, values)?.unbind()),
                        snippets: PyDict::new(py).unbind(),
                        passage: None,
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PySearchResult {
            hits: PyList::new(py, hits)?.unbind(),
            count: res.total_hits,
            count_exact: true,
        })
    }
}

impl PySearcher {
    /// ``highlight=``: a field name or pattern, or a list of them; each must name a stored
    /// text or keyword field.
    fn highlight_fields(
        &self,
        py: Python<'_>,
        v: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(String, quarry::highlight::HighlightOptions)>> {
        let Some(v) = v.filter(|v| !v.is_none()) else {
            return Ok(Vec::new());
        };
        let names: Vec<String> = match v.extract::<String>() {
            Ok(s) => vec![s],
            Err(_) => v.extract().map_err(|_| {
                bad_arg(
                    py,
                    format!("highlight= must be a field name or a list of them, not {v}"),
                )
            })?,
        };
        let h = quarry::highlight::Highlighter::new(&Query::MatchNone, self.inner.schema());
        for n in &names {
            if h.fields_matching(n).is_empty() {
                return Err(bad_arg(
                    py,
                    format!(
                        "highlight= {n:?} names no stored text or keyword field (the index has: {})",
                        h.fields_matching("*").join(", ")
                    ),
                ));
            }
        }
        Ok(names
            .into_iter()
            .map(|n| (n, quarry::highlight::HighlightOptions::default()))
            .collect())
    }
}

fn bad_arg(py: Python<'_>, msg: String) -> PyErr {
    errors::to_py(py, quarry::Error::InvalidArgument(msg))
}

/// One ``order_by`` key: ``"field"``, ``"-field"``, ``("field", "desc")``, ``{"field": "desc"}``
/// or ``{"field": {"order": "desc", "missing": "_first"}}``.
fn parse_order_by(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    schema: &quarry::Schema,
) -> PyResult<Vec<SortField>> {
    let items: Vec<Bound<'_, PyAny>> = if v.is_instance_of::<PyString>() {
        vec![v.clone()]
    } else {
        v.try_iter()?.collect::<PyResult<_>>()?
    };
    let mut out = Vec::new();
    for item in items {
        let (name, order, missing): (String, Option<String>, Option<String>) = if let Ok(s) =
            item.extract::<String>()
        {
            match s.strip_prefix('-') {
                Some(f) => (f.to_string(), Some("desc".into()), None),
                None => (s, None, None),
            }
        } else if let Ok((f, o)) = item.extract::<(String, String)>() {
            (f, Some(o), None)
        } else if let Ok(d) = item.cast::<PyDict>() {
            if d.len() != 1 {
                return Err(bad_arg(py, format!("order_by entry {d} must have one key")));
            }
            let (k, v) = d.iter().next().expect("one entry");
            let f: String = k.extract()?;
            if let Ok(o) = v.extract::<String>() {
                (f, Some(o), None)
            } else if let Ok(opts) = v.cast::<PyDict>() {
                let mut order = None;
                let mut missing = None;
                for (ok, ov) in opts.iter() {
                    match ok.extract::<String>()?.as_str() {
                        "order" => order = Some(ov.extract()?),
                        "missing" => missing = Some(ov.extract()?),
                        other => {
                            return Err(bad_arg(
                                py,
                                format!(
                                "order_by option {other:?} of {f:?} (supported: order, missing)"
                            ),
                            ))
                        }
                    }
                }
                (f, order, missing)
            } else {
                return Err(bad_arg(py, format!("order_by entry {d} is not understood")));
            }
        } else {
            return Err(bad_arg(
                py,
                format!("order_by entry {item} must be a str, a (field, order) tuple or a dict"),
            ));
        };
        let key = match name.as_str() {
            "_score" => SortKey::Score,
            "_doc" => SortKey::IndexOrder,
            f => {
                if schema.field_id(f).is_none() {
                    return Err(errors::unknown_field(
                        py,
                        f,
                        schema.fields().iter().map(|e| e.name.clone()).collect(),
                    ));
                }
                SortKey::Field(f.to_string())
            }
        };
        let descending = match order.as_deref() {
            None => key == SortKey::Score,
            Some("asc") => false,
            Some("desc") => true,
            Some(o) => {
                return Err(bad_arg(
                    py,
                    format!("order {o:?} of {name:?} (asc or desc)"),
                ))
            }
        };
        let missing_first = match missing.as_deref() {
            None | Some("_last") => false,
            Some("_first") => true,
            Some(m) => {
                return Err(bad_arg(
                    py,
                    format!("missing {m:?} of {name:?} (_first or _last)"),
                ))
            }
        };
        out.push(SortField {
            key,
            descending,
            missing_first,
        });
    }
    if out.is_empty() {
        return Err(bad_arg(py, "order_by is empty".into()));
    }
    Ok(out)
}

/// ``after=``: one value per sort key, as a previous hit's ``sort``.
fn parse_after(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    sort: &[SortField],
    schema: &quarry::Schema,
) -> PyResult<Vec<SortValue>> {
    let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
    if items.len() != sort.len() {
        return Err(bad_arg(
            py,
            format!(
                "after= has {} values for {} sort keys",
                items.len(),
                sort.len()
            ),
        ));
    }
    sort.iter()
        .zip(items)
        .map(|(s, item)| {
            if item.is_none() {
                return Ok(SortValue::Missing);
            }
            let ft = match &s.key {
                SortKey::Field(f) => schema.field_by_name(f).map(|e| e.field_type),
                _ => None,
            };
            Ok(match (&s.key, ft) {
                (SortKey::Score, _) => SortValue::Score(item.extract()?),
                (SortKey::IndexOrder, _) => SortValue::Seq(item.extract()?),
                (_, Some(FieldType::Float)) => SortValue::Float(item.extract()?),
                (_, Some(FieldType::Boolean)) => SortValue::Bool(item.extract()?),
                (_, Some(FieldType::Keyword)) => SortValue::Str(item.extract()?),
                (_, Some(FieldType::Date)) if item.is_instance_of::<PyString>() => {
                    SortValue::Str(item.extract()?)
                }
                _ => SortValue::Int(item.extract()?),
            })
        })
        .collect()
}

/// A sort value in Python: int, float, bool, str, or None for a missing value.
fn sort_value_py<'py>(py: Python<'py>, v: &SortValue) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::IntoPyObjectExt;
    match v {
        SortValue::Int(i) => i.into_bound_py_any(py),
        SortValue::Float(x) => x.into_bound_py_any(py),
        SortValue::Bool(b) => b.into_bound_py_any(py),
        SortValue::Str(s) => s.into_bound_py_any(py),
        SortValue::Score(x) => x.into_bound_py_any(py),
        SortValue::Seq(x) => x.into_bound_py_any(py),
        SortValue::Missing => Ok(py.None().into_bound(py)),
    }
}

fn parse_mode(py: Python<'_>, mode: &str) -> PyResult<SearchMode> {
    mode.parse::<SearchMode>()
        .map_err(|e| errors::to_py(py, quarry::Error::InvalidArgument(e)))
}

#[pymethods]
impl PySearcher {
    /// Parses ``query`` (Lucene classic syntax) against ``default_fields`` (default: every
    /// text field). Raises :class:`QuerySyntaxError` (with ``column``) or
    /// :class:`UnknownFieldError`.
    #[pyo3(signature = (query, default_fields = None))]
    fn parse(
        &self,
        py: Python<'_>,
        query: &str,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<PyQuery> {
        Ok(PyQuery::new(self.parse_str(py, query, default_fields)?))
    }

    /// Parses ``query`` in the ``simple_query_string`` syntax (Lucene's ``SimpleQueryParser``:
    /// ``+`` AND, ``|`` OR, ``-`` NOT, ``"..."~N``, ``term*``, ``term~N``, ``( )``, ``\\``)
    /// over ``fields`` (names, ``"title^2"`` for a boost; default: every text field), with
    /// ``default_operator`` ``"or"`` or ``"and"``, ``flags`` (``"OR|AND|PREFIX"``..., ``"ALL"``,
    /// ``"NONE"``) and ``analyze_wildcard``. Bad syntax is never an error, as in Lucene; an
    /// unknown field raises :class:`UnknownFieldError`, a bad flag, operator or boost
    /// :class:`InvalidArgumentError`.
    #[pyo3(signature = (query, fields = None, default_operator = "or", flags = "ALL", analyze_wildcard = false))]
    fn parse_simple(
        &self,
        py: Python<'_>,
        query: &str,
        fields: Option<Vec<String>>,
        default_operator: &str,
        flags: &str,
        analyze_wildcard: bool,
    ) -> PyResult<PyQuery> {
        let invalid = |msg: String| errors::to_py(py, quarry::Error::InvalidArgument(msg));
        let mut named: Vec<(String, f32)> = Vec::new();
        for spec in fields.unwrap_or_default() {
            let (name, boost) = match spec.split_once('^') {
                None => (spec.clone(), 1.0),
                Some((n, b)) => match b.parse::<f32>() {
                    Ok(b) if b.is_finite() && b >= 0.0 => (n.to_string(), b),
                    _ => return Err(invalid(format!("bad boost in field {spec:?}"))),
                },
            };
            if self.inner.schema().field_id(&name).is_none() {
                return Err(errors::unknown_field(py, &name, self.field_names()));
            }
            named.push((name, boost));
        }
        let op = match default_operator.to_ascii_lowercase().as_str() {
            "or" => quarry::query::Operator::Or,
            "and" => quarry::query::Operator::And,
            other => {
                return Err(invalid(format!(
                    "default_operator {other:?} is not \"or\" or \"and\""
                )))
            }
        };
        let flags = quarry::query::SimpleFlags::parse(flags).map_err(invalid)?;
        let refs: Vec<(&str, f32)> = named.iter().map(|(f, b)| (f.as_str(), *b)).collect();
        let parser = self
            .inner
            .simple_query_parser(&refs)
            .map_err(|e| errors::to_py(py, e))?;
        Ok(PyQuery::new(
            parser
                .with_default_operator(op)
                .with_flags(flags)
                .with_analyze_wildcard(analyze_wildcard)
                .parse(query),
        ))
    }

    /// Lucene's explanation of ``query``'s score for the document at ``doc`` (a hit's
    /// ``doc``): nested dicts ``{"value", "description", "details", "matched"}``; the top
    /// ``value`` is the hit's score.
    #[pyo3(signature = (query, doc, default_fields = None, stats = None))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        doc: (u32, u32),
        default_fields: Option<Vec<String>>,
        stats: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::explain::explain(self, py, query, doc, default_fields, stats)
    }

    /// Runs ``query`` and returns a :class:`SearchResult` whose hits carry score, address and
    /// stored fields, in one call.
    ///
    /// ``limit``: number of hits; ``mode``: ``"top_count"`` (top hits and the exact count,
    /// the default), ``"top"`` (top hits, count possibly a lower bound: fastest) or
    /// ``"count"`` (no hits); ``fields``: stored fields to return (None: all; ``[]``: none);
    /// ``stats``: collection statistics to score with instead of this index's own (the merged
    /// :meth:`collection_stats` of all shards of a sharded index).
    ///
    /// ``order_by`` sorts by fields instead of relevance: a list of ``"field"`` (ascending),
    /// ``"-field"`` (descending), ``("field", "desc")`` or ``{"field": "desc"}`` (also
    /// ``{"field": {"order": "desc", "missing": "_first"}}``); ``"_score"`` and ``"_doc"``
    /// (index order) are keys too. Hits then carry ``sort`` values; ``after=`` (the last hit's
    /// ``sort``) returns the next page; scores are NaN unless a key is ``"_score"`` or
    /// ``track_scores=True``; the count is exact.
    ///
    /// ``highlight``: stored text or keyword fields (names or ``*`` patterns) whose matches to
    /// mark: each hit's ``snippets`` maps each such field with a match to its best fragments
    /// (up to 5 of about 100 characters, in text order, matches in ``<em>``...``</em>``), as
    /// Elasticsearch's default highlighter makes them. Not with ``order_by``.
    #[pyo3(signature = (query, limit = 10, mode = "top_count", fields = None, default_fields = None, stats = None, order_by = None, after = None, track_scores = false, highlight = None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        limit: usize,
        mode: &str,
        fields: Option<Vec<String>>,
        default_fields: Option<Vec<String>>,
        stats: Option<&Bound<'_, PyAny>>,
        order_by: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        track_scores: bool,
        highlight: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySearchResult> {
        let mode = parse_mode(py, mode)?;
        let q = self.resolve(py, query, default_fields)?;
        let highlight = self.highlight_fields(py, highlight)?;
        if !highlight.is_empty() && order_by.is_some_and(|o| !o.is_none()) {
            return Err(bad_arg(
                py,
                "highlight= is not supported with order_by=".into(),
            ));
        }
        if let Some(order_by) = order_by.filter(|o| !o.is_none()) {
            let sort = parse_order_by(py, order_by, self.inner.schema())?;
            let after = after
                .filter(|a| !a.is_none())
                .map(|a| parse_after(py, a, &sort, self.inner.schema()))
                .transpose()?;
            let searcher = self.scoring(py, stats)?;
            return self.search_sorted(py, searcher, q, sort, after, limit, fields, track_scores);
        }
        if after.is_some_and(|a| !a.is_none()) {
            return Err(errors::to_py(
                py,
                quarry::Error::InvalidArgument("after= needs order_by=".into()),
            ));
        }
        let searcher = self.scoring(py, stats)?;
        let want_fields = fields.as_ref().is_none_or(|f| !f.is_empty());
        let (res, docs, snippets) = detached(py, move || {
            let res = searcher.search(&q, limit, mode)?;
            let mut docs = Vec::new();
            let mut snippets = Vec::new();
            let highlighter = (!highlight.is_empty())
                .then(|| quarry::highlight::Highlighter::new(&q, searcher.schema()));
            if want_fields || highlighter.is_some() {
                for h in &res.top {
                    let stored = searcher.stored_fields(h.doc)?;
                    if let Some(hl) = &highlighter {
                        snippets.push(hl.highlight_doc(&stored, &highlight));
                    }
                    if want_fields {
                        docs.push(stored);
                    }
                }
            }
            Ok((res, docs, snippets))
        })?;
        let hits = res
            .top
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let f = match docs.get(i) {
                    Some(m) => convert::stored(py, m, fields.as_deref())?,
                    None => PyDict::new(py),
                };
                let sn = PyDict::new(py);
                for (field, frags) in snippets.get(i).into_iter().flatten() {
                    sn.set_item(field, frags)?;
                }
                Py::new(
                    py,
                    PyHit {
                        score: h.score,
                        doc: (h.doc.segment, h.doc.doc),
                        seq: h.seq,
                        fields: f.unbind(),
                        shard: None,
                        sort: None,
                        snippets: sn.unbind(),
                        passage: None,
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PySearchResult {
            hits: PyList::new(py, hits)?.unbind(),
            count: res.total_hits,
            count_exact: res.hits_exact,
        })
    }

    /// Elasticsearch-shaped aggregations (``terms``, ``histogram``, ``date_histogram``,
    /// ``range``, ``date_range``, ``min``/``max``/``avg``/``sum``/``value_count``/``stats``,
    /// ``cardinality``, ``percentiles``, ``filter``/``filters``, sub-aggregations) over the
    /// documents matching ``query``: ``aggs`` is the ``aggs`` object of an Elasticsearch search
    /// body, the result its ``aggregations`` object. ``filter`` queries are query strings or
    /// ``{"query_string": ...}``, ``term``, ``terms``, ``match_all`` and ``bool`` of those.
    #[pyo3(signature = (query, aggs, default_fields = None))]
    fn aggregate<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        aggs: &Bound<'_, PyAny>,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let q = self.resolve(py, query, default_fields)?;
        let text = convert::json_dumps(aggs)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| errors::to_py(py, quarry::Error::InvalidArgument(format!("aggs: {e}"))))?;
        let searcher = self.inner.clone();
        let out = detached(py, move || {
            let parsed = searcher.parse_aggregations(&v)?;
            searcher.aggregate(&q, &parsed)
        })?;
        convert::json_loads(py, &out.to_string())
    }

    /// The exact number of documents matching ``query`` (nothing is scored).
    #[pyo3(signature = (query, default_fields = None))]
    fn count(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<u64> {
        let q = self.resolve(py, query, default_fields)?;
        let searcher = self.inner.clone();
        detached(py, move || {
            searcher
                .search(&q, 0, SearchMode::Count)
                .map(|r| r.total_hits)
        })
    }

    /// The stored fields of the documents at ``addresses`` (``hit.doc`` values), in order.
    #[pyo3(signature = (addresses, fields = None))]
    fn docs<'py>(
        &self,
        py: Python<'py>,
        addresses: Vec<(u32, u32)>,
        fields: Option<Vec<String>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let searcher = self.inner.clone();
        let maps: Vec<Map<String, Value>> = detached(py, move || {
            addresses
                .iter()
                .map(|&(segment, doc)| searcher.stored_fields(DocAddress { segment, doc }))
                .collect()
        })?;
        maps.iter()
            .map(|m| convert::stored(py, m, fields.as_deref()))
            .collect()
    }

    /// The stored fields of one document (``hit.doc``).
    fn doc<'py>(&self, py: Python<'py>, address: (u32, u32)) -> PyResult<Bound<'py, PyDict>> {
        let mut v = self.docs(py, vec![address], None)?;
        Ok(v.pop().expect("one address, one document"))
    }

    /// The collection statistics this index contributes to scoring ``query``:
    /// ``{"fields": {name: {"doc_count", "sum_total_term_freq"}}, "terms": {field: {term:
    /// {"doc_freq"}}}}``. Sum them over shards (:func:`quarry.merge_stats`) and pass the sum
    /// as ``stats=`` to :meth:`search` on every shard to get the scores of one big index.
    #[pyo3(signature = (query, default_fields = None))]
    fn collection_stats<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        default_fields: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let q = self.resolve(py, query, default_fields)?;
        let searcher = self.inner.clone();
        let stats = detached(py, move || searcher.collection_stats(&q))?;
        convert::json_loads(py, &stats.to_json())
    }

    /// Number of documents this searcher sees.
    #[getter]
    fn num_docs(&self) -> u64 {
        self.inner
            .segments()
            .iter()
            .map(|s| u64::from(s.doc_count()))
            .sum()
    }

    /// Number of segments this searcher sees.
    #[getter]
    fn num_segments(&self) -> usize {
        self.inner.segments().len()
    }

    /// The index's schema.
    #[getter]
    fn schema(&self) -> PySchema {
        PySchema {
            inner: self.inner.schema().clone(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Searcher(num_docs={}, num_segments={})",
            self.num_docs(),
            self.num_segments()
        )
    }
}
