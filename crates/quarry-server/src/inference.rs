//! Which embedding models does the server have, and how do its texts become vectors?
//!
//! Models are registered with the data directory (`quarry models add NAME PATH --data DIR`)
//! under `DIR/_inference/models/NAME/` (the engine's registry layout, `docs/format/models.md`;
//! `_inference` can never be an index name). A request only ever names a model by its id,
//! checked as a model name, never by path. Creating an index whose mapping uses a model
//! (`semantic_text`'s `inference_id`, or `dense_vector`'s `embed`) copies the model, checksums
//! verified, into the index's own registry (`DIR/INDEX/index/models/NAME/`): the index then
//! embeds its documents and queries by itself (the library, the CLI's `--semantic`, a replay
//! of the translog), and a later change to the data directory's copy does not change it.
//!
//! Built with the `embed` feature; without it every use of a model is a 400 saying so.
use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use quarry::Schema;
use serde_json::Value;

use crate::error::ApiError;

/// The folder of the data directory that holds its registry (`_inference/models/NAME/`).
pub const REGISTRY_DIR: &str = "_inference";

/// The registry root of data directory `data`: the directory the engine's registry functions
/// take as their "index directory".
pub fn registry(data: &Path) -> PathBuf {
    data.join(REGISTRY_DIR)
}

/// 404 `resource_not_found_exception` for an unknown model id, as Elasticsearch answers an
/// unknown inference endpoint.
pub fn unknown_model(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "resource_not_found_exception",
        format!(
            "Inference endpoint not found [{id}]: register the model with `quarry models add {id} PATH --data DIR`"
        ),
    )
}

/// A failure of a model (missing, damaged, wrong size) as a 4xx naming it: the request named a
/// model that cannot serve it.
pub fn model_error(id: &str, e: quarry::Error) -> ApiError {
    match e {
        quarry::Error::InvalidArgument(r) if r.starts_with("no model") => unknown_model(id),
        quarry::Error::InvalidArgument(r) if r.starts_with("model name") => {
            ApiError::illegal(format!("inference id [{id}]: {r}"))
        }
        other => ApiError::new(
            StatusCode::BAD_REQUEST,
            "inference_exception",
            format!("model [{id}]: {other}"),
        ),
    }
}

#[cfg(feature = "embed")]
mod imp {
    use super::*;
    use quarry::embed;
    use serde_json::json;

    pub fn dims(data: &Path, id: &str) -> Result<usize, ApiError> {
        embed::registry::check_model_name(id).map_err(|e| model_error(id, e))?;
        let root = registry(data);
        let m = embed::registry::read_manifest(&root, id).map_err(|e| model_error(id, e))?;
        Ok(m.dims)
    }

    pub fn install(data: &Path, engine_dir: &Path, schema: &Schema) -> Result<(), ApiError> {
        let root = registry(data);
        let mut done = std::collections::HashSet::new();
        for f in schema.fields() {
            let Some(e) = &f.embed else { continue };
            if !done.insert(e.model.clone()) {
                continue;
            }
            let id = e.model.as_str();
            let m = embed::registry::read_manifest(&root, id).map_err(|e| model_error(id, e))?;
            embed::registry::verify_model(&root, &m).map_err(|e| model_error(id, e))?;
            let source = embed::registry::model_dir(&root, id);
            embed::add_model(engine_dir, id, &source).map_err(|e| model_error(id, e))?;
        }
        Ok(())
    }

    pub fn list(data: &Path) -> Result<Vec<Value>, ApiError> {
        let models = embed::list_models(&registry(data))
            .map_err(|e| ApiError::internal(format!("listing models: {e}")))?;
        Ok(models
            .iter()
            .map(|m| {
                json!({
                    "inference_id": m.name,
                    "task_type": "text_embedding",
                    "service": "quarry",
                    "service_settings": {
                        "model_id": m.name,
                        "dimensions": m.dims,
                        "similarity": "cosine",
                        "max_input_tokens": m.max_tokens,
                    },
                })
            })
            .collect())
    }

    pub fn embed_query(
        engine_dir: &Path,
        schema: &Schema,
        field: &str,
        text: &str,
    ) -> Result<Vec<f32>, ApiError> {
        let (model, dims) = field_model(schema, field)?;
        let m = embed::load_model(engine_dir, &model).map_err(|e| model_error(&model, e))?;
        if m.dims() != dims {
            return Err(model_error(
                &model,
                quarry::Error::Schema(format!(
                    "field [{field}] has {dims} dims but the model makes vectors of {}",
                    m.dims()
                )),
            ));
        }
        let mut v = m.embed(&[text]).map_err(|e| model_error(&model, e))?;
        Ok(v.remove(0))
    }
}

#[cfg(not(feature = "embed"))]
mod imp {
    use super::*;

    fn no_feature() -> ApiError {
        ApiError::illegal(
            "this build of quarry has no `embed` feature: it cannot run embedding models",
        )
    }
    pub fn dims(_: &Path, _: &str) -> Result<usize, ApiError> {
        Err(no_feature())
    }
    pub fn install(_: &Path, _: &Path, schema: &Schema) -> Result<(), ApiError> {
        match schema.fields().iter().any(|f| f.embed.is_some()) {
            true => Err(no_feature()),
            false => Ok(()),
        }
    }
    pub fn list(_: &Path) -> Result<Vec<Value>, ApiError> {
        Ok(Vec::new())
    }
    pub fn embed_query(_: &Path, schema: &Schema, f: &str, _: &str) -> Result<Vec<f32>, ApiError> {
        field_model(schema, f)?;
        Err(no_feature())
    }
}

/// The number of dimensions of model `id` registered with data directory `data`; 404 when no
/// such model is registered, 400 when its manifest is damaged.
pub fn dims(data: &Path, id: &str) -> Result<usize, ApiError> {
    imp::dims(data, id)
}

/// Copies every model the schema's embedded fields use from the data directory's registry into
/// the registry of the index in `engine_dir` (checksums verified first, the model loaded once).
pub fn install(data: &Path, engine_dir: &Path, schema: &Schema) -> Result<(), ApiError> {
    imp::install(data, engine_dir, schema)
}

/// The registered models as `GET _inference` lists them (`endpoints`).
pub fn list(data: &Path) -> Result<Vec<Value>, ApiError> {
    imp::list(data)
}

/// The query vector of `text` for field `field` of the index in `engine_dir`, by the field's
/// model (a `semantic_text` field's hidden vector field, or a `dense_vector` with `embed`).
pub fn embed_query(
    engine_dir: &Path,
    schema: &Schema,
    field: &str,
    text: &str,
) -> Result<Vec<f32>, ApiError> {
    imp::embed_query(engine_dir, schema, field, text)
}

/// The model name and dims of vector field `field`; a 400 naming the field when it has none.
pub fn field_model(schema: &Schema, field: &str) -> Result<(String, usize), ApiError> {
    let f = schema.field_by_name(field).ok_or_else(|| {
        ApiError::illegal(format!("field [{field}] does not exist in the mapping"))
    })?;
    match &f.embed {
        Some(e) => Ok((e.model.clone(), f.dims.unwrap_or(0) as usize)),
        None => Err(ApiError::illegal(format!(
            "field [{field}] has no embedding model: map it as [semantic_text] with an [inference_id], or give its [dense_vector] mapping an [embed] option"
        ))),
    }
}
