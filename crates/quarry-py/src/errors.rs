//! Which Python exception does an engine error become? One class per kind of failure, all under
//! `quarry.QuarryError`, carrying the error's data as attributes.
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use quarry::query::{ParseError, ParseErrorKind};
use quarry::Error;

create_exception!(
    quarry,
    QuarryError,
    PyException,
    "Base class of every error raised by quarry."
);
create_exception!(
    quarry,
    QuarryIOError,
    QuarryError,
    "Reading or writing index files failed (attribute `path` when known)."
);
create_exception!(
    quarry,
    CorruptIndexError,
    QuarryError,
    "An index file is damaged (attribute `file`); run `quarry check` and restore or re-index."
);
create_exception!(
    quarry,
    IndexVersionError,
    QuarryError,
    "An index file has a format version this build cannot read (attributes `file`, `found`)."
);
create_exception!(
    quarry,
    IndexNotFoundError,
    QuarryError,
    "No index at the path given (attribute `path`)."
);
create_exception!(
    quarry,
    LockedError,
    QuarryError,
    "Another writer holds the index's write lock (attribute `path`)."
);
create_exception!(
    quarry,
    SchemaError,
    QuarryError,
    "A schema is invalid (duplicate or bad field names, unknown analyzer, bad JSON)."
);
create_exception!(
    quarry,
    DocumentError,
    QuarryError,
    "A document does not fit the schema (attribute `field`)."
);
create_exception!(
    quarry,
    QueryError,
    QuarryError,
    "A query cannot be run (base of QuerySyntaxError and UnknownFieldError)."
);
create_exception!(
    quarry,
    QuerySyntaxError,
    QueryError,
    "A query string cannot be parsed. Attributes: `column` (1-based), `position` (byte offset), \
     `kind`, `expected`, `found`, `excerpt`."
);
create_exception!(
    quarry,
    UnknownFieldError,
    QueryError,
    "A query names a field the schema does not have. Attributes: `field`, `known`."
);
create_exception!(
    quarry,
    InvalidArgumentError,
    QuarryError,
    "An argument is out of range or inconsistent (e.g. statistics gathered for another query)."
);
create_exception!(
    quarry,
    ModelError,
    QuarryError,
    "An embedding model cannot be loaded or run (attribute `model`: its directory), e.g. a \
     directory without config.json, tokenizer.json or model.safetensors."
);
create_exception!(
    quarry,
    WriterError,
    QuarryError,
    "The writer failed earlier (or was closed) and must be reopened."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("QuarryError", py.get_type::<QuarryError>())?;
    m.add("QuarryIOError", py.get_type::<QuarryIOError>())?;
    m.add("CorruptIndexError", py.get_type::<CorruptIndexError>())?;
    m.add("IndexVersionError", py.get_type::<IndexVersionError>())?;
    m.add("IndexNotFoundError", py.get_type::<IndexNotFoundError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("DocumentError", py.get_type::<DocumentError>())?;
    m.add("QueryError", py.get_type::<QueryError>())?;
    m.add("QuerySyntaxError", py.get_type::<QuerySyntaxError>())?;
    m.add("UnknownFieldError", py.get_type::<UnknownFieldError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("WriterError", py.get_type::<WriterError>())?;
    Ok(())
}

/// Builds `err` and sets `attrs` on its value.
fn with_attrs<'py>(py: Python<'py>, err: PyErr, attrs: &[(&str, Bound<'py, PyAny>)]) -> PyErr {
    let value = err.value(py);
    for (k, v) in attrs {
        // Setting an attribute on a fresh exception instance cannot fail in practice; if it
        // did, the exception is still raised, only without that attribute.
        let _ = value.setattr(*k, v);
    }
    err
}

fn obj<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> Bound<'py, PyAny> {
    v.into_bound_py_any(py).expect("plain value converts")
}

/// A query parse error as `QuerySyntaxError` (or `UnknownFieldError`).
pub(crate) fn parse_error(py: Python<'_>, e: &ParseError) -> PyErr {
    let kind = match e.kind {
        ParseErrorKind::Syntax => "syntax",
        ParseErrorKind::Unsupported => "unsupported",
        ParseErrorKind::InvalidValue => "invalid_value",
        ParseErrorKind::TooDeep => "too_deep",
        ParseErrorKind::TooManyClauses => "too_many_clauses",
        ParseErrorKind::UnknownField => "unknown_field",
        ParseErrorKind::NoDefaultField => "no_default_field",
        _ => "other",
    };
    let msg = format!("{e}\n{}", e.excerpt_with_caret());
    let err = if e.kind == ParseErrorKind::UnknownField {
        UnknownFieldError::new_err(msg)
    } else {
        QuerySyntaxError::new_err(msg)
    };
    with_attrs(
        py,
        err,
        &[
            ("column", obj(py, e.column)),
            ("position", obj(py, e.position)),
            ("kind", obj(py, kind)),
            ("expected", obj(py, e.expected.clone())),
            ("found", obj(py, e.found.clone())),
            ("excerpt", obj(py, e.excerpt.clone())),
        ],
    )
}

/// An unknown field named by a query.
pub(crate) fn unknown_field(py: Python<'_>, field: &str, known: Vec<String>) -> PyErr {
    let msg = format!(
        "unknown field {field:?} in query (fields: {})",
        known.join(", ")
    );
    with_attrs(
        py,
        UnknownFieldError::new_err(msg),
        &[("field", obj(py, field)), ("known", obj(py, known))],
    )
}

/// The Python exception for an engine error.
pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Store(s) => {
            use quarry::error::StoreError as S;
            let path = match &s {
                S::Io { path, .. } | S::NotFound { path } | S::OutOfBounds { path, .. } => {
                    Some(path.display().to_string())
                }
                _ => None,
            };
            with_attrs(py, QuarryIOError::new_err(msg), &[("path", obj(py, path))])
        }
        Error::Corrupt { file, offset, .. } => with_attrs(
            py,
            CorruptIndexError::new_err(msg),
            &[("file", obj(py, file)), ("offset", obj(py, offset))],
        ),
        Error::TooOld { file, found, .. } | Error::TooNew { file, found, .. } => with_attrs(
            py,
            IndexVersionError::new_err(msg),
            &[("file", obj(py, file)), ("found", obj(py, found))],
        ),
        Error::NoIndex { path } => with_attrs(
            py,
            IndexNotFoundError::new_err(msg),
            &[("path", obj(py, path))],
        ),
        Error::Schema(_) => SchemaError::new_err(msg),
        Error::Document { field, .. } => with_attrs(
            py,
            DocumentError::new_err(msg),
            &[("field", obj(py, field))],
        ),
        Error::Json { column, .. } => with_attrs(
            py,
            DocumentError::new_err(msg),
            &[("column", obj(py, column))],
        ),
        Error::Query(_) => QueryError::new_err(msg),
        Error::Parse(pe) => parse_error(py, &pe),
        Error::UnknownField { field, known } => unknown_field(py, &field, known),
        Error::Locked { path } => {
            with_attrs(py, LockedError::new_err(msg), &[("path", obj(py, path))])
        }
        Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        Error::IndexSort { field, .. } => with_attrs(
            py,
            InvalidArgumentError::new_err(msg),
            &[("field", obj(py, field))],
        ),
        Error::WriterPoisoned(_) => WriterError::new_err(msg),
        Error::Model { model, .. } => {
            with_attrs(py, ModelError::new_err(msg), &[("model", obj(py, model))])
        }
        _ => QuarryError::new_err(msg),
    }
}

/// A panic caught at the boundary, as `QuarryError` (it is a bug in quarry).
pub(crate) fn internal(panic: &Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    QuarryError::new_err(format!(
        "internal error in quarry (please report it): {what}"
    ))
}
