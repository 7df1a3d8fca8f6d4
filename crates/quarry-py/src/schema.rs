//! What fields do documents have? `Schema` and `SchemaBuilder` for Python.
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use quarry::{FieldEntry, FieldType, Schema};

use crate::errors;

/// The fields of an index: name, type (``"text"``, ``"keyword"``, ``"integer"``), whether the
/// value is stored (returned with hits) and the analyzer of text fields.
///
/// Build one with :class:`SchemaBuilder`, :meth:`Schema.from_json` or :meth:`Schema.infer`.
#[pyclass(name = "Schema", module = "quarry", frozen)]
#[derive(Clone)]
pub struct PySchema {
    pub(crate) inner: Schema,
}

#[pymethods]
impl PySchema {
    /// Parses the JSON schema format: ``{"fields": [{"name": "body", "type": "text",
    /// "stored": true}]}``.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        Schema::from_json(text)
            .map(|inner| Self { inner })
            .map_err(|e| errors::to_py(py, e))
    }

    /// Infers a schema from sample documents as the CLI does: strings (and lists of strings)
    /// become stored text fields, integers integer fields, arrays of 128 to 4096 numbers (not
    /// all integers) cosine vector fields; nested dicts flatten to dotted names.
    #[staticmethod]
    fn infer(py: Python<'_>, docs: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut maps = Vec::new();
        for d in docs.try_iter()? {
            let text = crate::convert::json_dumps(&d?)?;
            let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text)
                .map_err(|e| {
                    errors::to_py(
                        py,
                        quarry::Error::Json {
                            column: e.column(),
                            reason: format!("a sample document is not a JSON object: {e}"),
                        },
                    )
                })?;
            maps.push(v);
        }
        Schema::infer(maps.iter())
            .map(|inner| Self { inner })
            .map_err(|e| errors::to_py(py, e))
    }

    /// The JSON form of this schema (what :meth:`from_json` reads).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Field names, in declaration order.
    #[getter]
    fn field_names(&self) -> Vec<String> {
        self.inner.fields().iter().map(|f| f.name.clone()).collect()
    }

    /// The fields as dicts ``{"name", "type", "stored", "analyzer"}`` (vector fields also
    /// ``"dims"``, ``"similarity"``, ``"element_type"``, ``"index"``, for HNSW ``"m"`` and
    /// ``"ef_construction"``, and when they embed text ``"embed": {"from", "model",
    /// "passages"}``).
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .inner
            .fields()
            .iter()
            .map(|f| {
                let d = PyDict::new(py);
                d.set_item("name", &f.name)?;
                d.set_item("type", type_name(f.field_type))?;
                d.set_item("stored", f.stored)?;
                d.set_item("analyzer", &f.analyzer)?;
                if f.field_type.columnar() {
                    d.set_item("doc_values", f.doc_values)?;
                }
                if let Some(fmt) = &f.format {
                    d.set_item("format", fmt)?;
                }
                crate::vectors::describe(&d, f)?;
                Ok(d)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// Names of the text fields (the default fields of queries).
    #[getter]
    fn text_fields(&self) -> Vec<String> {
        self.inner
            .text_fields()
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self) -> String {
        let fields: Vec<String> = self
            .inner
            .fields()
            .iter()
            .map(|f| format!("{}:{}", f.name, type_name(f.field_type)))
            .collect();
        format!("Schema([{}])", fields.join(", "))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let from_json = slf.get_type().getattr("from_json")?;
        Ok((from_json, (slf.get().inner.to_json(),)))
    }
}

/// quarry indexes every field: `indexed=False` (tantivy-py's switch) is refused, not ignored.
fn check_indexed(name: &str, indexed: bool) -> PyResult<()> {
    if indexed {
        Ok(())
    } else {
        Err(pyo3::exceptions::PyValueError::new_err(format!(
            "field {name:?}: indexed=False is not supported: quarry indexes every field"
        )))
    }
}

fn type_name(t: FieldType) -> &'static str {
    t.name()
}

/// Builds a :class:`Schema` field by field; each ``add_*`` method returns the builder.
///
/// >>> schema = (quarry.SchemaBuilder().add_integer_field("id")
/// ...           .add_text_field("title").add_text_field("body").build())
#[pyclass(name = "SchemaBuilder", module = "quarry", frozen)]
#[derive(Default)]
pub struct PySchemaBuilder {
    pub(crate) fields: Mutex<Vec<FieldEntry>>,
}

impl PySchemaBuilder {
    fn push(&self, name: &str, field_type: FieldType, stored: bool, analyzer: &str) {
        self.push_entry(name, field_type, stored, analyzer, None, None);
    }

    fn push_entry(
        &self,
        name: &str,
        field_type: FieldType,
        stored: bool,
        analyzer: &str,
        fast: Option<bool>,
        format: Option<&str>,
    ) {
        let mut f = FieldEntry::new(name, field_type);
        f.stored = stored;
        f.analyzer = analyzer.to_string();
        if let Some(fast) = fast {
            f.doc_values = fast;
        }
        f.format = format.map(str::to_string);
        self.fields.lock().expect("builder").push(f);
    }
}

#[pymethods]
impl PySchemaBuilder {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// A text field: analyzed (``analyzer``, default ``"standard"``: Lucene's
    /// StandardAnalyzer), with positions and norms; ``stored`` keeps the original value.
    /// ``indexed`` and ``fast`` are accepted as tantivy-py writes them: a text field is always
    /// indexed and keeps no column (``fast=True`` is refused).
    #[pyo3(signature = (name, stored = true, analyzer = "standard", indexed = true, fast = false, tokenizer_name = None))]
    fn add_text_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        analyzer: &str,
        indexed: bool,
        fast: bool,
        tokenizer_name: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        if fast {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "field {name:?}: text fields keep no column (fast=True); add a keyword field to sort or aggregate by it"
            )));
        }
        let analyzer = match tokenizer_name {
            None | Some("default") => analyzer,
            Some(other) => other,
        };
        slf.push(name, FieldType::Text, stored, analyzer);
        Ok(slf)
    }

    /// A keyword field: the whole value is one exact term, stored, with a column of its values
    /// for sorting, ranges and aggregations (``fast=False`` turns the column off).
    #[pyo3(signature = (name, stored = true, indexed = true, fast = None))]
    fn add_keyword_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        indexed: bool,
        fast: Option<bool>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        slf.push_entry(name, FieldType::Keyword, stored, "standard", fast, None);
        Ok(slf)
    }

    /// An integer field (i64, stored, searchable as an exact term: ``id:42``, and by range:
    /// ``id:[1 TO 9]``), with a column (``fast=False`` turns it off); ``stored=False``
    /// leaves it out of the stored document. quarry indexes every field: ``indexed=False``
    /// (tantivy-py's switch) is refused.
    #[pyo3(signature = (name, stored = true, indexed = true, fast = None))]
    fn add_integer_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        indexed: bool,
        fast: Option<bool>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        slf.push_entry(name, FieldType::Integer, stored, "standard", fast, None);
        Ok(slf)
    }

    /// A boolean field (stored, searchable as ``flag:true``), with a column.
    #[pyo3(signature = (name, stored = true, indexed = true, fast = None))]
    fn add_boolean_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        indexed: bool,
        fast: Option<bool>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        slf.push_entry(name, FieldType::Boolean, stored, "standard", fast, None);
        Ok(slf)
    }

    /// A float field (f64, stored), with a column.
    #[pyo3(signature = (name, stored = true, indexed = true, fast = None))]
    fn add_float_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        indexed: bool,
        fast: Option<bool>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        slf.push_entry(name, FieldType::Float, stored, "standard", fast, None);
        Ok(slf)
    }

    /// A date field: text in ``format`` (Elasticsearch's; default
    /// ``strict_date_optional_time||epoch_millis``) or epoch milliseconds, stored as given,
    /// kept as milliseconds since the epoch (UTC) in a column.
    #[pyo3(signature = (name, stored = true, indexed = true, fast = None, format = None))]
    fn add_date_field<'py>(
        slf: PyRef<'py, Self>,
        name: &str,
        stored: bool,
        indexed: bool,
        fast: Option<bool>,
        format: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        check_indexed(name, indexed)?;
        slf.push_entry(name, FieldType::Date, stored, "standard", fast, format);
        Ok(slf)
    }

    /// The schema; raises :class:`SchemaError` for duplicate or invalid names or an unknown
    /// analyzer.
    fn build(&self, py: Python<'_>) -> PyResult<PySchema> {
        let fields = self.fields.lock().expect("builder").clone();
        Schema::new(fields)
            .map(|inner| PySchema { inner })
            .map_err(|e| errors::to_py(py, e))
    }
}
