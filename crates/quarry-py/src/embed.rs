//! Text embedded by quarry itself, from Python: models registered with an index
//! (`Index.add_model`, `Index.list_models`), query vectors (`Index.embed_query`), the `embed`
//! options of a vector field, and the passage a kNN hit matched. All of it is the library's
//! `quarry::embed` (the CLI's `quarry models` and `--semantic` call the same functions); this
//! module only converts arguments and results.
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use quarry::schema::EmbedOptions;
use quarry::vector::Passage;
use quarry::{FieldEntry, Index};
use serde_json::{json, Value};

use crate::index::PyIndex;
use crate::{convert, detached, errors};

fn bad_arg(msg: String) -> quarry::Error {
    quarry::Error::InvalidArgument(msg)
}

/// The vector of `text` from the model of the embedded vector field `field`, or from the
/// registered model `model`; with neither, from the schema's only embedded field.
pub(crate) fn embed_text(
    index: &Index,
    text: &str,
    field: Option<&str>,
    model: Option<&str>,
) -> quarry::Result<Vec<f32>> {
    match (field, model) {
        (Some(f), None) => index.embed_query(f, text),
        (None, Some(m)) => {
            let model = quarry::embed::load_model(index.directory().path(), m)?;
            Ok(model.embed(&[text])?.remove(0))
        }
        (Some(_), Some(_)) => Err(bad_arg(
            "embed_query takes field= (the field's model) or model= (a registered model), not both"
                .into(),
        )),
        (None, None) => {
            let embedded: Vec<&str> = index
                .schema()
                .fields()
                .iter()
                .filter(|f| f.embed.is_some())
                .map(|f| f.name.as_str())
                .collect();
            match embedded[..] {
                [only] => index.embed_query(only, text),
                _ => Err(bad_arg(format!(
                    "embed_query needs field= or model=: the schema has {} embedded vector fields ({})",
                    embedded.len(),
                    embedded.join(", ")
                ))),
            }
        }
    }
}

/// A registered model's manifest as a dict (the JSON of `quarry models list --json`).
fn manifest<'py>(py: Python<'py>, m: &quarry::embed::ModelManifest) -> PyResult<Bound<'py, PyAny>> {
    let v = serde_json::to_value(m).expect("a manifest serializes");
    convert::value(py, &v)
}

#[pymethods]
impl PyIndex {
    /// Registers the sentence-transformers model directory ``path`` (a BERT-family
    /// ``config.json``, ``tokenizer.json`` and ``model.safetensors``) as model ``name`` of this
    /// index: it is loaded once to prove it works, then copied under ``models/NAME/`` with the
    /// length and CRC-32C of every file (checked whenever it is loaded), replacing an earlier
    /// model of that name. The same as ``quarry models add NAME PATH --index DIR``. Returns the
    /// manifest ``{"name", "source", "dims", "max_tokens", "files", "version"}``.
    ///
    /// Raises :class:`ModelError` (attribute ``model``: the directory) when ``path`` is not a
    /// model that loads, :class:`InvalidArgumentError` for a bad name.
    fn add_model<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        path: PathBuf,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dir = self.path.clone();
        let m = detached(py, move || quarry::embed::add_model(&dir, name, &path))?;
        manifest(py, &m)
    }

    /// The manifests of the models registered with this index, by name (see :meth:`add_model`).
    fn list_models<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let dir = self.path.clone();
        let models = detached(py, move || quarry::embed::list_models(&dir))?;
        models.iter().map(|m| manifest(py, m)).collect()
    }

    /// The vector of ``text`` as a list of floats (``numpy.asarray`` takes it): from the model
    /// of the embedded vector field ``field``, or from the registered model ``model``; with
    /// neither, from the schema's only embedded field. The query vector
    /// :meth:`Searcher.knn` computes for ``text=``; the GIL is released while the model runs.
    ///
    /// Raises :class:`InvalidArgumentError` for a field without ``embed`` or a model that is
    /// not registered, :class:`UnknownFieldError`, :class:`SchemaError` when the model's
    /// vectors do not have the field's ``dims``, :class:`CorruptIndexError` when a model file
    /// fails its checksum.
    #[pyo3(signature = (text, field = None, model = None))]
    fn embed_query(
        &self,
        py: Python<'_>,
        text: &str,
        field: Option<&str>,
        model: Option<&str>,
    ) -> PyResult<Vec<f32>> {
        let index = self.reader.current();
        detached(py, move || embed_text(&index, text, field, model))
    }
}

/// The `embed` option of `SchemaBuilder.add_vector_field`: `embed_from` and `model` together,
/// `passages` (None or True: the model's defaults; False: cut long texts; a dict `{"window",
/// "overlap"}`) only with them. Parsed by the library's schema JSON reader, so the keys,
/// checks and messages are the schema file's.
pub(crate) fn embed_options(
    py: Python<'_>,
    name: &str,
    embed_from: Option<&str>,
    model: Option<&str>,
    passages: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<EmbedOptions>> {
    let schema_err = |msg: String| errors::to_py(py, quarry::Error::Schema(msg));
    let passages = passages.filter(|p| !p.is_none());
    let (from, model) = match (embed_from, model) {
        (None, None) => {
            return match passages {
                None => Ok(None),
                Some(_) => Err(schema_err(format!(
                    "field {name:?}: passages= applies to an embedded field; give embed_from= and model= too"
                ))),
            }
        }
        (Some(f), Some(m)) => (f, m),
        _ => {
            return Err(schema_err(format!(
                "field {name:?}: embed_from= (the text field) and model= (a registered model) go together"
            )))
        }
    };
    let mut options = json!({"from": from, "model": model});
    if let Some(p) = passages {
        let text = convert::json_dumps(p).map_err(|_| {
            schema_err(format!(
                "field {name:?}: passages= is True, False or {{\"window\": N, \"overlap\": N}}"
            ))
        })?;
        options["passages"] = serde_json::from_str(&text).expect("json.dumps gives JSON");
    }
    serde_json::from_value(options)
        .map(Some)
        .map_err(|e| schema_err(format!("field {name:?}: {e}")))
}

/// Adds a vector field's `embed` option to the dict `Schema.fields` gives for it:
/// `{"from", "model", "passages"}`, `passages` False (cut), True (the defaults) or the dict of
/// the keys the schema sets.
pub(crate) fn describe(d: &Bound<'_, PyDict>, f: &FieldEntry) -> PyResult<()> {
    let Some(e) = &f.embed else {
        return Ok(());
    };
    let passages = match e.passages {
        None => Value::Bool(false),
        Some(p) if p == Default::default() => Value::Bool(true),
        Some(p) => serde_json::to_value(p).expect("passage options serialize"),
    };
    let v = json!({"from": e.from, "model": e.model, "passages": passages});
    d.set_item("embed", convert::value(d.py(), &v)?)
}

/// The passage a kNN hit matched as `{"index", "start", "end", "text"}`: byte offsets in the
/// source text (the source field's values joined by newlines), and its text (None when the
/// source field is not stored).
pub(crate) fn passage<'py>(
    py: Python<'py>,
    p: &Passage,
    text: Option<String>,
) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    d.set_item("index", p.index)?;
    d.set_item("start", p.start)?;
    d.set_item("end", p.end)?;
    d.set_item("text", text)?;
    Ok(d.unbind())
}
