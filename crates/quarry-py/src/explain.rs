//! `Searcher.explain`: Lucene's explanation of one document's score, as nested dicts.
use pyo3::prelude::*;

use crate::search::PySearcher;
use crate::{convert, detached};

/// The explanation of `query`'s score for the document at `doc` (a hit's ``doc``):
/// ``{"value", "description", "details", "matched"}`` with Lucene's descriptions; the top
/// ``value`` is the hit's score. ``stats`` as in ``search`` (merged statistics of all shards).
pub(crate) fn explain<'py>(
    searcher: &PySearcher,
    py: Python<'py>,
    query: &Bound<'_, PyAny>,
    doc: (u32, u32),
    default_fields: Option<Vec<String>>,
    stats: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let q = searcher.resolve(py, query, default_fields)?;
    let s = searcher.scoring(py, stats)?;
    let address = quarry::DocAddress {
        segment: doc.0,
        doc: doc.1,
    };
    let e = detached(py, move || s.explain(&q, address))?;
    let mut json = e.to_json();
    json["matched"] = serde_json::Value::Bool(e.matched);
    convert::value(py, &json)
}
