//! Text turned into vectors by quarry itself, offline, from local model files.
//!
//! A vector field whose schema entry says `"embed": {"from": "body", "model": "minilm"}` gets
//! its vectors computed from the text of `body` when documents are indexed (in batches, on
//! every core), and a text query on it is embedded the same way at search time
//! ([`Index::embed_query`]). Models are registered with an index directory
//! ([`registry::add_model`], `quarry models add NAME PATH`): copied under `models/NAME/` with
//! checksums that loading verifies.
//!
//! - [`model`]: a sentence-transformers model directory (BERT family) run with candle on the
//!   CPU: tokenizer, encoder, pooling and normalization as the model's settings say.
//! - [`registry`]: the registered models of an index directory, and the loaded ones this
//!   process shares.
//!
//! The guide is `docs/embeddings.md` in the repository; the layout of `models/`,
//! `docs/format/models.md`.
mod bert;
mod kernels;
pub mod model;
pub mod registry;

use std::path::Path;
use std::sync::Arc;

pub use model::{Pooling, SentenceModel};
pub use registry::{add_model, list_models, load_model, ModelManifest};

use crate::schema::Schema;
use crate::{Document, Error, FieldValue, Index, Result};

/// The fields of `schema` that embed text: (vector field id, source field id, model name).
pub(crate) fn embed_fields(schema: &Schema) -> Vec<(u32, u32, String)> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let e = f.embed.as_ref()?;
            let from = schema.field_id(&e.from)?;
            Some((i as u32, from, e.model.clone()))
        })
        .collect()
}

/// Loads model `name` of `index_dir` for vector field `field` and checks that its vectors fit.
fn model_for(
    index_dir: &Path,
    schema: &Schema,
    field: u32,
    name: &str,
) -> Result<Arc<SentenceModel>> {
    let model = load_model(index_dir, name)?;
    let f = schema.field(field);
    let dims = f.dims.unwrap_or(0) as usize;
    if model.dims() != dims {
        return Err(Error::Schema(format!(
            "field {:?} has {dims} dims but model {name:?} makes vectors of {}",
            f.name,
            model.dims()
        )));
    }
    Ok(model)
}

/// The text a document gives an embedded field: the values of its source field, joined by a
/// newline (None when it has none).
fn source_text(doc: &Document, from: u32) -> Option<String> {
    let parts: Vec<&str> = doc
        .values
        .iter()
        .filter(|(f, _)| *f == from)
        .filter_map(|(_, v)| match v {
            FieldValue::Str(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// Computes the vectors of every embedded field that a document of `docs` does not give
/// itself, from its source text, one batch per field. A document without the source text gets
/// no vector.
pub(crate) fn embed_documents(
    index_dir: &Path,
    schema: &Schema,
    docs: &mut [Document],
) -> Result<()> {
    for (field, from, name) in embed_fields(schema) {
        let todo: Vec<(usize, String)> = docs
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.values.iter().any(|(f, _)| *f == field))
            .filter_map(|(i, d)| source_text(d, from).map(|t| (i, t)))
            .collect();
        if todo.is_empty() {
            continue;
        }
        let model = model_for(index_dir, schema, field, &name)?;
        let texts: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = model.embed(&texts)?;
        let fname = schema.field(field).name.clone();
        for ((i, _), v) in todo.iter().zip(vectors) {
            docs[*i].add(schema, &fname, FieldValue::Vector(v))?;
        }
    }
    Ok(())
}

impl Index {
    /// The vector of `text` for the embedded vector field `field`, from the field's model: the
    /// query vector of a semantic search. An error when the field does not exist or has no
    /// `embed` option, or the model is missing or damaged.
    pub fn embed_query(&self, field: &str, text: &str) -> Result<Vec<f32>> {
        let schema = self.schema();
        let id = schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(schema, field))?;
        let Some(e) = schema.field(id).embed.as_ref() else {
            return Err(Error::InvalidArgument(format!(
                "field {field:?} has no embedding model (give it \"embed\": {{\"from\": FIELD, \"model\": NAME}} in the schema)"
            )));
        };
        let model = model_for(self.directory().path(), schema, id, &e.model)?;
        Ok(model.embed(&[text])?.remove(0))
    }
}
