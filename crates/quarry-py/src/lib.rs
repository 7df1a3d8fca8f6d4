#![forbid(unsafe_code)]
//! The `quarry._quarry` Python extension module: the engine's schema, index, writer and searcher
//! as Python classes, its errors as a Python exception hierarchy. The pure-Python package
//! `quarry` (python/quarry) re-exports it and adds `quarry.ray`.
use pyo3::prelude::*;

mod convert;
mod embed;
mod errors;
mod explain;
mod index;
mod query;
mod schema;
mod search;
mod vectors;

/// Runs `f` without the GIL (other Python threads run meanwhile) and turns a panic into a
/// `QuarryError` so that no Rust panic reaches Python.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> quarry::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(errors::to_py(py, e)),
        Err(panic) => Err(errors::internal(&panic)),
    }
}

#[pymodule]
fn _quarry(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<schema::PySchema>()?;
    m.add_class::<schema::PySchemaBuilder>()?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<index::PyIndexReader>()?;
    m.add_class::<index::PyIndexWriter>()?;
    m.add_class::<search::PySearcher>()?;
    m.add_class::<query::PyQuery>()?;
    m.add_class::<search::PyHit>()?;
    m.add_class::<search::PySearchResult>()?;
    vectors::register(m)?;
    Ok(())
}
