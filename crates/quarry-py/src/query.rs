//! How does a parsed query travel between processes? `Query` (the Python class of a parsed
//! query) and its exact, picklable form: the engine's query tree as nested tuples.
//!
//! The state of a `Query` is the engine's `quarry::query::Query` tree written as plain Python
//! values, one tuple per node, so that pickling (Ray, multiprocessing) carries exactly the parsed
//! query (terms already analyzed, boosts as float32) and nothing is parsed again on the other side:
//!
//! * `("term", field, term)`, `("prefix", field, prefix)`,
//! * `("phrase", field, [(position, term), ...], slop)`,
//! * `("multi_phrase", field, [(position, [term, ...]), ...], slop)`,
//! * `("phrase_prefix", field, [(position, [term, ...]), ...], slop, max_expansions)` (the last
//!   position's terms are prefixes),
//! * `("range", field, lower, upper, include_lower, include_upper)` with `None` for an open end,
//! * `("bool", [(occur, node), ...], minimum_should_match)` with occur `"must"`, `"should"`,
//!   `"must_not"` or `"filter"`,
//! * `("wildcard", field, pattern)`, `("regexp", field, pattern)`,
//! * `("fuzzy", field, term, max_edits, prefix_length, max_expansions, transpositions)`,
//! * `("const", node)`, `("dis_max", [node, ...], tie_breaker)`,
//!   `("boosting", positive, negative, negative_boost)`,
//! * `("boost", node, boost)`, `("all",)`, `("none",)`.
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use quarry::query::{Clause, Occur, Query};

use crate::errors;
use crate::schema::PySchema;

/// Deepest query tree accepted from a state (a pickle is untrusted input; recursion is bounded).
const MAX_DEPTH: usize = 512;

/// A parsed query (Lucene classic syntax). ``str(query)`` renders it as Lucene's
/// ``Query.toString()`` does. Queries compare equal when their trees are equal and pickle
/// exactly (the parsed tree, not the text), so they can be sent to other processes, e.g. the
/// shard actors of :class:`quarry.ray.ShardedSearcher`.
#[pyclass(name = "Query", module = "quarry", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyQuery {
    pub(crate) inner: Query,
}

impl PyQuery {
    pub(crate) fn new(inner: Query) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl PyQuery {
    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Query({:?})", self.inner.to_string())
    }

    /// The query tree as nested tuples (the form pickling uses; see the module docs).
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_state(py, &self.inner)
    }

    /// The query whose :meth:`state` is ``state``. Raises :class:`InvalidArgumentError`
    /// naming the first malformed node.
    #[classmethod]
    fn from_state(
        _cls: &Bound<'_, pyo3::types::PyType>,
        state: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let inner = from_state(state, "state", 0)
            .map_err(|msg| errors::to_py(state.py(), quarry::Error::InvalidArgument(msg)))?;
        Ok(Self { inner })
    }

    /// Documents whose ``field_name`` holds the exact term ``text`` (not analyzed).
    #[staticmethod]
    fn term_query(
        py: Python<'_>,
        schema: &PySchema,
        field_name: &str,
        text: &str,
    ) -> PyResult<Self> {
        known_field(py, schema, field_name)?;
        Ok(Self::new(Query::term(field_name, text)))
    }

    /// Terms within ``distance`` edits (0 to 2) of ``text``, a swap of neighbours one edit when
    /// ``transposition_cost_one``, scored as Lucene's ``FuzzyQuery`` (the 50 most similar
    /// terms, blended). ``prefix=True`` (tantivy's fuzzy prefix) is not supported and raises.
    #[staticmethod]
    #[pyo3(signature = (schema, field_name, text, distance = 1, transposition_cost_one = true, prefix = false))]
    fn fuzzy_term_query(
        py: Python<'_>,
        schema: &PySchema,
        field_name: &str,
        text: &str,
        distance: u32,
        transposition_cost_one: bool,
        prefix: bool,
    ) -> PyResult<Self> {
        known_field(py, schema, field_name)?;
        if prefix {
            return Err(errors::to_py(
                py,
                quarry::Error::InvalidArgument(
                    "fuzzy_term_query: prefix=True is not supported".into(),
                ),
            ));
        }
        if distance > quarry::query::ast::FUZZY_MAX_EDITS {
            return Err(errors::to_py(
                py,
                quarry::Error::InvalidArgument(format!(
                    "fuzzy_term_query: distance must be 0, 1 or 2, got {distance}"
                )),
            ));
        }
        let mut q = Query::fuzzy(field_name, text, distance);
        if let Query::Fuzzy { transpositions, .. } = &mut q {
            *transpositions = transposition_cost_one;
        }
        Ok(Self::new(q))
    }

    /// Terms matching ``regex_pattern`` (Lucene's regular expression syntax, whole term).
    #[staticmethod]
    fn regex_query(
        py: Python<'_>,
        schema: &PySchema,
        field_name: &str,
        regex_pattern: &str,
    ) -> PyResult<Self> {
        known_field(py, schema, field_name)?;
        quarry::search::automaton::regexp::compile(regex_pattern).map_err(|e| {
            errors::to_py(
                py,
                quarry::Error::InvalidArgument(format!("regex_query /{regex_pattern}/: {e}")),
            )
        })?;
        Ok(Self::new(Query::Regexp {
            field: field_name.to_string(),
            pattern: regex_pattern.to_string(),
        }))
    }

    /// Terms matching ``pattern``: ``*`` any string, ``?`` one character.
    #[staticmethod]
    fn wildcard_query(
        py: Python<'_>,
        schema: &PySchema,
        field_name: &str,
        pattern: &str,
    ) -> PyResult<Self> {
        known_field(py, schema, field_name)?;
        Ok(Self::new(Query::Wildcard {
            field: field_name.to_string(),
            pattern: pattern.to_string(),
        }))
    }

    /// The best of ``subqueries`` plus ``tie_breaker`` (default 0) times the others.
    #[staticmethod]
    #[pyo3(signature = (subqueries, tie_breaker = None))]
    fn disjunction_max_query(
        py: Python<'_>,
        subqueries: Vec<Bound<'_, PyQuery>>,
        tie_breaker: Option<f32>,
    ) -> PyResult<Self> {
        let tie = tie_breaker.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&tie) {
            return Err(errors::to_py(
                py,
                quarry::Error::InvalidArgument(format!(
                    "disjunction_max_query: tie_breaker must be between 0 and 1, got {tie}"
                )),
            ));
        }
        Ok(Self::new(Query::DisMax {
            queries: subqueries.iter().map(|q| q.get().inner.clone()).collect(),
            tie_breaker: tie,
        }))
    }

    /// ``query``'s matches, each scored ``score``.
    #[staticmethod]
    fn const_score_query(py: Python<'_>, query: &Bound<'_, PyQuery>, score: f32) -> PyResult<Self> {
        let q = Query::ConstantScore {
            query: Box::new(query.get().inner.clone()),
        };
        Ok(Self::new(Query::boosted(
            q,
            checked_factor(py, score, "score")?,
        )))
    }

    /// ``query`` with its scores multiplied by ``boost``.
    #[staticmethod]
    fn boost_query(py: Python<'_>, query: &Bound<'_, PyQuery>, boost: f32) -> PyResult<Self> {
        Ok(Self::new(Query::boosted(
            query.get().inner.clone(),
            checked_factor(py, boost, "boost")?,
        )))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let ctor = slf.get_type().getattr("from_state")?;
        let args = PyTuple::new(py, [to_state(py, &slf.get().inner)?])?;
        PyTuple::new(py, [ctor, args.into_any()])
    }
}

/// An error unless `schema` has `field`.
fn known_field(py: Python<'_>, schema: &PySchema, field: &str) -> PyResult<()> {
    match schema.inner.field_id(field) {
        Some(_) => Ok(()),
        None => Err(errors::to_py(
            py,
            quarry::Error::UnknownField {
                field: field.to_string(),
                known: schema
                    .inner
                    .fields()
                    .iter()
                    .map(|f| f.name.clone())
                    .collect(),
            },
        )),
    }
}

/// A finite, non-negative score factor.
fn checked_factor(py: Python<'_>, v: f32, what: &str) -> PyResult<f32> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(errors::to_py(
            py,
            quarry::Error::InvalidArgument(format!("{what} must be a finite number >= 0, got {v}")),
        ))
    }
}

fn occur_name(o: Occur) -> &'static str {
    match o {
        Occur::Must => "must",
        Occur::Should => "should",
        Occur::MustNot => "must_not",
        Occur::Filter => "filter",
    }
}

fn to_state<'py>(py: Python<'py>, q: &Query) -> PyResult<Bound<'py, PyAny>> {
    let t = match q {
        Query::Term { field, term } => ("term", field, term).into_bound_py_any(py)?,
        Query::Prefix { field, prefix } => ("prefix", field, prefix).into_bound_py_any(py)?,
        Query::Phrase { field, terms, slop } => {
            ("phrase", field, terms.clone(), *slop).into_bound_py_any(py)?
        }
        Query::MultiPhrase { field, terms, slop } => {
            ("multi_phrase", field, terms.clone(), *slop).into_bound_py_any(py)?
        }
        Query::PhrasePrefix {
            field,
            terms,
            slop,
            max_expansions,
        } => (
            "phrase_prefix",
            field,
            terms.clone(),
            *slop,
            *max_expansions,
        )
            .into_bound_py_any(py)?,
        Query::Range {
            field,
            lower,
            upper,
            include_lower,
            include_upper,
            format,
            time_zone,
        } => (
            "range",
            field,
            lower.clone(),
            upper.clone(),
            *include_lower,
            *include_upper,
            (format.clone(), time_zone.clone()),
        )
            .into_bound_py_any(py)?,
        Query::Boolean {
            clauses,
            minimum_should_match,
        } => {
            let list = PyList::empty(py);
            for c in clauses {
                list.append((occur_name(c.occur), to_state(py, &c.query)?))?;
            }
            ("bool", list, *minimum_should_match).into_bound_py_any(py)?
        }
        Query::Boost { query, boost } => {
            ("boost", to_state(py, query)?, f64::from(*boost)).into_bound_py_any(py)?
        }
        Query::Wildcard { field, pattern } => ("wildcard", field, pattern).into_bound_py_any(py)?,
        Query::Regexp { field, pattern } => ("regexp", field, pattern).into_bound_py_any(py)?,
        Query::Fuzzy {
            field,
            term,
            max_edits,
            prefix_length,
            max_expansions,
            transpositions,
        } => (
            "fuzzy",
            field,
            term,
            *max_edits,
            *prefix_length,
            *max_expansions,
            *transpositions,
        )
            .into_bound_py_any(py)?,
        Query::ConstantScore { query } => ("const", to_state(py, query)?).into_bound_py_any(py)?,
        Query::DisMax {
            queries,
            tie_breaker,
        } => {
            let list = PyList::empty(py);
            for q in queries {
                list.append(to_state(py, q)?)?;
            }
            ("dis_max", list, f64::from(*tie_breaker)).into_bound_py_any(py)?
        }
        Query::Boosting {
            positive,
            negative,
            negative_boost,
        } => (
            "boosting",
            to_state(py, positive)?,
            to_state(py, negative)?,
            f64::from(*negative_boost),
        )
            .into_bound_py_any(py)?,
        Query::MatchAll => ("all",).into_bound_py_any(py)?,
        Query::MatchNone => ("none",).into_bound_py_any(py)?,
    };
    Ok(t)
}

/// A finite, non-negative float32 read from a state's float.
fn state_f32(v: f64, at: &str) -> Result<f32, String> {
    let f = v as f32;
    if !f.is_finite() || f < 0.0 || f64::from(f) != v {
        return Err(format!(
            "bad query state at {at}: {v} is not a finite, non-negative float32"
        ));
    }
    Ok(f)
}

/// One node of a query state being decoded: its name, its items and where it stands (for the
/// error messages).
struct Node<'a, 'py> {
    tag: &'a str,
    items: &'a [Bound<'py, PyAny>],
    at: &'a str,
}

impl<'py> Node<'_, 'py> {
    fn arity(&self, n: usize) -> Result<(), String> {
        if self.items.len() == n {
            Ok(())
        } else {
            Err(format!(
                "bad query state at {}: node {:?} has {} items, expected {n}",
                self.at,
                self.tag,
                self.items.len()
            ))
        }
    }

    fn get(&self, i: usize, what: &str) -> Result<&Bound<'py, PyAny>, String> {
        self.items.get(i).ok_or_else(|| {
            format!(
                "bad query state at {}: node {:?} lacks {what}",
                self.at, self.tag
            )
        })
    }
}

/// Item `v` of a query state as a `T`; `what` names it in the error.
fn ex<'py, T: for<'a> FromPyObject<'a, 'py>>(
    v: &Bound<'py, PyAny>,
    at: &str,
    what: &str,
) -> Result<T, String> {
    v.extract::<T>()
        .map_err(|_| format!("bad query state at {at}: {what} has the wrong type"))
}

/// The query of `state`; `at` names the node (for the error message).
fn from_state(state: &Bound<'_, PyAny>, at: &str, depth: usize) -> Result<Query, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "bad query state at {at}: nested deeper than {MAX_DEPTH}"
        ));
    }
    let items: Vec<Bound<'_, PyAny>> = state
        .cast::<PyTuple>()
        .map_err(|_| format!("bad query state at {at}: expected a tuple"))?
        .iter()
        .collect();
    let tag: String = items
        .first()
        .and_then(|t| t.cast::<PyString>().ok())
        .map(|t| t.to_string_lossy().into_owned())
        .ok_or_else(|| format!("bad query state at {at}: expected a node name first"))?;
    let node = Node {
        tag: &tag,
        items: &items,
        at,
    };
    Ok(match tag.as_str() {
        "term" => {
            node.arity(3)?;
            Query::Term {
                field: ex(node.get(1, "field")?, at, "field")?,
                term: ex(node.get(2, "term")?, at, "term")?,
            }
        }
        "prefix" => {
            node.arity(3)?;
            Query::Prefix {
                field: ex(node.get(1, "field")?, at, "field")?,
                prefix: ex(node.get(2, "prefix")?, at, "prefix")?,
            }
        }
        "phrase" => {
            node.arity(4)?;
            let terms: Vec<(u32, String)> = ex(node.get(2, "terms")?, at, "terms")?;
            if terms.windows(2).any(|w| w[0].0 > w[1].0) {
                return Err(format!(
                    "bad query state at {at}: phrase positions not ascending"
                ));
            }
            Query::Phrase {
                field: ex(node.get(1, "field")?, at, "field")?,
                terms,
                slop: ex(node.get(3, "slop")?, at, "slop")?,
            }
        }
        "range" => {
            node.arity(7)?;
            let (format, time_zone): (Option<String>, Option<String>) =
                ex(node.get(6, "date options")?, at, "date options")?;
            Query::Range {
                field: ex(node.get(1, "field")?, at, "field")?,
                lower: ex(node.get(2, "lower")?, at, "lower")?,
                upper: ex(node.get(3, "upper")?, at, "upper")?,
                include_lower: ex(node.get(4, "include_lower")?, at, "include_lower")?,
                include_upper: ex(node.get(5, "include_upper")?, at, "include_upper")?,
                format,
                time_zone,
            }
        }
        "bool" => {
            node.arity(3)?;
            let list = node
                .get(1, "clauses")?
                .cast::<PyList>()
                .map_err(|_| format!("bad query state at {at}: clauses must be a list"))?;
            let mut clauses = Vec::with_capacity(list.len());
            for (i, c) in list.iter().enumerate() {
                let here = format!("{at}[1][{i}]");
                let (occur, node): (String, Bound<'_, PyAny>) = ex(&c, &here, "clause")?;
                let occur = match occur.as_str() {
                    "must" => Occur::Must,
                    "should" => Occur::Should,
                    "must_not" => Occur::MustNot,
                    "filter" => Occur::Filter,
                    other => {
                        return Err(format!(
                            "bad query state at {here}: unknown occur {other:?}"
                        ))
                    }
                };
                let query = from_state(&node, &format!("{here}[1]"), depth + 1)?;
                clauses.push(Clause::new(occur, query));
            }
            Query::Boolean {
                clauses,
                minimum_should_match: ex(
                    node.get(2, "minimum_should_match")?,
                    at,
                    "minimum_should_match",
                )?,
            }
        }
        "boost" => {
            node.arity(3)?;
            let boost: f64 = ex(node.get(2, "boost")?, at, "boost")?;
            let b = boost as f32;
            if !b.is_finite() || b < 0.0 || f64::from(b) != boost {
                return Err(format!(
                    "bad query state at {at}: boost {boost} is not a finite, non-negative float32"
                ));
            }
            Query::Boost {
                query: Box::new(from_state(
                    node.get(1, "query")?,
                    &format!("{at}[1]"),
                    depth + 1,
                )?),
                boost: b,
            }
        }
        "wildcard" | "regexp" | "fuzzy" | "const" | "dis_max" | "boosting" | "multi_phrase"
        | "phrase_prefix" => {
            // Kept out of this function so its stack frame stays small: deep boost chains
            // recurse through it.
            return multi_term_or_compound(&tag, &items, at, depth);
        }
        "all" => {
            node.arity(1)?;
            Query::MatchAll
        }
        "none" => {
            node.arity(1)?;
            Query::MatchNone
        }
        other => return Err(format!("bad query state at {at}: unknown node {other:?}")),
    })
}

/// The nodes of multi-term and compound queries (see [`from_state`]).
#[inline(never)]
fn multi_term_or_compound(
    tag: &str,
    items: &[Bound<'_, PyAny>],
    at: &str,
    depth: usize,
) -> Result<Query, String> {
    let node = Node { tag, items, at };
    Ok(match tag {
        "multi_phrase" | "phrase_prefix" => {
            let prefix = tag == "phrase_prefix";
            node.arity(if prefix { 5 } else { 4 })?;
            let terms: Vec<(u32, Vec<String>)> = ex(node.get(2, "terms")?, at, "terms")?;
            if terms.windows(2).any(|w| w[0].0 > w[1].0) {
                return Err(format!(
                    "bad query state at {at}: phrase positions not ascending"
                ));
            }
            if terms.is_empty() || terms.iter().any(|(_, ts)| ts.is_empty()) {
                return Err(format!(
                    "bad query state at {at}: a {tag} needs terms at every position"
                ));
            }
            let field = ex(node.get(1, "field")?, at, "field")?;
            let slop = ex(node.get(3, "slop")?, at, "slop")?;
            if prefix {
                Query::PhrasePrefix {
                    field,
                    terms,
                    slop,
                    max_expansions: ex(node.get(4, "max_expansions")?, at, "max_expansions")?,
                }
            } else {
                Query::MultiPhrase { field, terms, slop }
            }
        }
        "wildcard" | "regexp" => {
            node.arity(3)?;
            let field = ex(node.get(1, "field")?, at, "field")?;
            let pattern = ex(node.get(2, "pattern")?, at, "pattern")?;
            if tag == "wildcard" {
                Query::Wildcard { field, pattern }
            } else {
                Query::Regexp { field, pattern }
            }
        }
        "fuzzy" => {
            node.arity(7)?;
            Query::Fuzzy {
                field: ex(node.get(1, "field")?, at, "field")?,
                term: ex(node.get(2, "term")?, at, "term")?,
                max_edits: ex(node.get(3, "max_edits")?, at, "max_edits")?,
                prefix_length: ex(node.get(4, "prefix_length")?, at, "prefix_length")?,
                max_expansions: ex(node.get(5, "max_expansions")?, at, "max_expansions")?,
                transpositions: ex(node.get(6, "transpositions")?, at, "transpositions")?,
            }
        }
        "const" => {
            node.arity(2)?;
            Query::ConstantScore {
                query: Box::new(from_state(
                    node.get(1, "query")?,
                    &format!("{at}[1]"),
                    depth + 1,
                )?),
            }
        }
        "dis_max" => {
            node.arity(3)?;
            let list = node
                .get(1, "queries")?
                .cast::<PyList>()
                .map_err(|_| format!("bad query state at {at}: queries must be a list"))?;
            let mut queries = Vec::with_capacity(list.len());
            for (i, q) in list.iter().enumerate() {
                queries.push(from_state(&q, &format!("{at}[1][{i}]"), depth + 1)?);
            }
            Query::DisMax {
                queries,
                tie_breaker: state_f32(ex(node.get(2, "tie_breaker")?, at, "tie_breaker")?, at)?,
            }
        }
        "boosting" => {
            node.arity(4)?;
            Query::Boosting {
                positive: Box::new(from_state(
                    node.get(1, "positive")?,
                    &format!("{at}[1]"),
                    depth + 1,
                )?),
                negative: Box::new(from_state(
                    node.get(2, "negative")?,
                    &format!("{at}[2]"),
                    depth + 1,
                )?),
                negative_boost: state_f32(
                    ex(node.get(3, "negative_boost")?, at, "negative_boost")?,
                    at,
                )?,
            }
        }
        other => return Err(format!("bad query state at {at}: unknown node {other:?}")),
    })
}
