//! How do Python values become documents, and stored fields Python values?
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};
use quarry::{Document, FieldValue, Schema};
use serde_json::{Map, Value};

use crate::errors;

fn document_error(py: Python<'_>, field: &str, reason: String) -> PyErr {
    errors::to_py(
        py,
        quarry::Error::Document {
            field: field.to_string(),
            reason,
        },
    )
}

pub(crate) fn scalar(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<FieldValue> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(FieldValue::Bool(b.is_true()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(FieldValue::Str(s.to_str()?.to_string()));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(FieldValue::Int(i));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(FieldValue::Float(f.value()));
    }
    let ty = v.get_type().name()?.to_string();
    Err(document_error(
        py,
        field,
        format!("expected a string, integer, float or boolean (or a list of them), found {ty}"),
    ))
}

/// A document from a Python mapping `{field: value}`: strings, integers, lists or tuples of
/// them (multi-valued fields); `None` means absent. Checked against `schema`.
pub(crate) fn document(schema: &Schema, obj: &Bound<'_, PyAny>) -> PyResult<Document> {
    let py = obj.py();
    let dict = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a document is a dict of field -> value, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let mut doc = Document::new();
    for (k, v) in dict.iter() {
        let key = k.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!("document keys are field names (str), not {k}"))
        })?;
        let field = key.to_str()?;
        if v.is_none() {
            continue;
        }
        if schema
            .field_by_name(field)
            .is_some_and(|f| f.field_type == quarry::FieldType::Vector)
        {
            let v = crate::vectors::vector_value(&v, &|reason| document_error(py, field, reason))?;
            doc.add(schema, field, FieldValue::Vector(v))
                .map_err(|e| errors::to_py(py, e))?;
            continue;
        }
        let mut add = |value: FieldValue| {
            doc.add(schema, field, value)
                .map_err(|e| errors::to_py(py, e))
        };
        if let Ok(list) = v.cast::<PyList>() {
            for item in list.iter() {
                add(scalar(py, field, &item)?)?;
            }
        } else if let Ok(t) = v.cast::<PyTuple>() {
            for item in t.iter() {
                add(scalar(py, field, &item)?)?;
            }
        } else {
            add(scalar(py, field, &v)?)?;
        }
    }
    Ok(doc)
}

/// A JSON value (of stored fields) as a Python object.
pub(crate) fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| value(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => stored(py, m, None)?.into_any(),
    })
}

/// Stored fields as a dict, keeping only `only` when given.
pub(crate) fn stored<'py>(
    py: Python<'py>,
    m: &Map<String, Value>,
    only: Option<&[String]>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in m {
        if only.is_some_and(|o| !o.iter().any(|f| f == k)) {
            continue;
        }
        d.set_item(k, value(py, v)?)?;
    }
    Ok(d)
}

/// `json.loads(text)`.
pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// `json.dumps(obj)`.
pub(crate) fn json_dumps(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    obj.py()
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()
}
