//! How does a search by text reach the vectors? The `semantic` query and `query_vector_builder`
//! turned into plain kNN sections before the request is parsed.
//!
//! - `{"semantic": {"field": F, "query": TEXT}}` as a search's whole `query` becomes a top-level
//!   `knn` section on F's vectors with `k` = `from + size` and `num_candidates` max(1.5 k, 100)
//!   (its `boost` kept); as the `query` of a `standard` retriever, a `knn` retriever (its
//!   `filter` kept, `k` the request's `size`).
//!   Anywhere else (inside `bool`, ...) it is a 400 saying where it may go.
//! - A `knn` section (top level or retriever) with `query_vector_builder: {"text_embedding":
//!   {"model_id": ID, "model_text": TEXT}}` gets the `query_vector` of TEXT by the field's model;
//!   `model_id` must be that model.
//! - A `knn` section or `semantic` query naming a `semantic_text` field searches its hidden
//!   vector field ([`crate::mapping::SEMANTIC_PREFIX`]).
//!
//! The text is embedded by the model of the (first) index searched that maps the field; every
//! index searched that maps it must use the same model.
use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::mapping::semantic_vector_field;

fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::parsing(reason)
}

/// `body` with its text queries replaced by vectors (borrowed unchanged when it has none).
pub fn rewrite<'a>(
    body: &'a Value,
    handles: &[Arc<IndexHandle>],
) -> Result<Cow<'a, Value>, ApiError> {
    let Value::Object(m) = body else {
        return Ok(Cow::Borrowed(body));
    };
    let has_semantic = m.get("query").is_some_and(is_semantic);
    if !has_semantic && !m.contains_key("knn") && !m.contains_key("retriever") {
        return Ok(Cow::Borrowed(body));
    }
    let size = m.get("size").and_then(Value::as_u64).unwrap_or(10);
    let r = Rewriter { handles, size };
    let mut m = m.clone();
    if let Some(q) = m.remove("query") {
        match semantic_parts(&q)? {
            Some(s) => {
                let from = m.get("from").and_then(Value::as_u64).unwrap_or(0);
                let k = from.saturating_add(size).max(1);
                let mut section = r.section_of(&s, k)?;
                section.insert("k".into(), json!(k));
                if let Some(b) = s.boost {
                    section.insert("boost".into(), b.clone());
                }
                let knn = match m.remove("knn") {
                    None => Value::Object(section),
                    Some(Value::Array(mut list)) => {
                        list.push(Value::Object(section));
                        Value::Array(list)
                    }
                    Some(one) => Value::Array(vec![one, Value::Object(section)]),
                };
                m.insert("knn".into(), knn);
            }
            None => {
                m.insert("query".into(), q);
            }
        }
    }
    if let Some(k) = m.get_mut("knn") {
        match k {
            Value::Array(list) => {
                for s in list {
                    r.knn_section(s)?;
                }
            }
            s => r.knn_section(s)?,
        }
    }
    if let Some(ret) = m.get_mut("retriever") {
        r.retriever(ret, 0)?;
    }
    Ok(Cow::Owned(Value::Object(m)))
}

fn is_semantic(q: &Value) -> bool {
    q.as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("semantic"))
}

/// A parsed `semantic` query.
struct Semantic<'v> {
    field: &'v str,
    text: &'v str,
    boost: Option<&'v Value>,
}

/// The parts of `{"semantic": {...}}`, or None when `q` is another query.
fn semantic_parts(q: &Value) -> Result<Option<Semantic<'_>>, ApiError> {
    if !is_semantic(q) {
        return Ok(None);
    }
    let Value::Object(s) = &q["semantic"] else {
        return Err(bad("[semantic] must be an object"));
    };
    if let Some(k) = s
        .keys()
        .find(|k| !matches!(k.as_str(), "field" | "query" | "boost" | "_name"))
    {
        return Err(bad(format!(
            "[semantic] query does not support [{k}] (supported: field, query, boost)"
        )));
    }
    let string = |key: &str| match s.get(key) {
        Some(Value::String(v)) => Ok(v.as_str()),
        Some(v) => Err(bad(format!(
            "[semantic] [{key}] must be a string, found {v}"
        ))),
        None => Err(bad(format!("[semantic] requires [{key}]"))),
    };
    Ok(Some(Semantic {
        field: string("field")?,
        text: string("query")?,
        boost: s.get("boost"),
    }))
}

struct Rewriter<'h> {
    handles: &'h [Arc<IndexHandle>],
    /// The request's `size` (a retriever's default `k`).
    size: u64,
}

impl Rewriter<'_> {
    /// The vector field searched for `field`: a `semantic_text` field's hidden one, else itself.
    fn vector_field(&self, field: &str) -> String {
        let hidden = semantic_vector_field(field);
        match self
            .handles
            .iter()
            .any(|h| h.schema().field_by_name(&hidden).is_some())
        {
            true => hidden,
            false => field.to_string(),
        }
    }

    /// The query vector of `text` for vector field `field`, and the model that made it.
    fn embed(&self, field: &str, text: &str) -> Result<(Vec<f32>, String), ApiError> {
        let mut models = self.handles.iter().filter_map(|h| {
            let f = h.schema().field_by_name(field)?;
            Some((h, f.embed.as_ref().map(|e| e.model.clone())))
        });
        let Some((h, model)) = models.next() else {
            return Err(bad(format!(
                "field [{field}] does not exist in the mapping"
            )));
        };
        if let Some((other, m)) = models.find(|(_, m)| *m != model) {
            return Err(ApiError::illegal(format!(
                "field [{field}] uses model {model:?} in index [{}] but {m:?} in index [{}]; search them apart",
                h.name(),
                other.name()
            )));
        }
        let model = crate::inference::field_model(h.schema(), field)?.0;
        let v = h.embed_query(field, text)?;
        Ok((v, model))
    }

    /// A `knn` section `{field, query_vector, num_candidates}` for a `semantic` query that
    /// returns `k` documents: `num_candidates` is max(1.5 k, 100) (at most 10,000), wider than
    /// a `knn` section's default, as a query has no way to set it.
    fn section_of(&self, s: &Semantic<'_>, k: u64) -> Result<Map<String, Value>, ApiError> {
        let field = self.vector_field(s.field);
        let (v, _) = self.embed(&field, s.text)?;
        let max = quarry::search::knn::MAX_NUM_CANDIDATES as u64;
        let candidates = k.saturating_add(k / 2).max(100).min(max).max(k);
        let mut m = Map::new();
        m.insert("field".into(), json!(field));
        m.insert("query_vector".into(), json!(v));
        m.insert("num_candidates".into(), json!(candidates));
        Ok(m)
    }

    /// Resolves a `knn` section's `semantic_text` field and `query_vector_builder`.
    fn knn_section(&self, s: &mut Value) -> Result<(), ApiError> {
        let Value::Object(m) = s else { return Ok(()) };
        let Some(Value::String(field)) = m.get("field") else {
            return Ok(());
        };
        let field = self.vector_field(field);
        m.insert("field".into(), json!(field));
        let Some(builder) = m.remove("query_vector_builder") else {
            return Ok(());
        };
        if m.contains_key("query_vector") {
            return Err(bad(
                "[knn] cannot have both [query_vector] and [query_vector_builder]",
            ));
        }
        let te = match &builder {
            Value::Object(b) if b.len() == 1 && b.contains_key("text_embedding") => {
                &b["text_embedding"]
            }
            other => {
                return Err(bad(format!(
                    "[query_vector_builder] must be {{\"text_embedding\": {{\"model_id\", \"model_text\"}}}}, found {other}"
                )))
            }
        };
        let Value::Object(te) = te else {
            return Err(bad("[text_embedding] must be an object"));
        };
        if let Some(k) = te
            .keys()
            .find(|k| !matches!(k.as_str(), "model_id" | "model_text"))
        {
            return Err(bad(format!(
                "[text_embedding] unknown field [{k}] (supported: model_id, model_text)"
            )));
        }
        let Some(Value::String(text)) = te.get("model_text") else {
            return Err(bad("[text_embedding] requires [model_text], a string"));
        };
        let (v, model) = self.embed(&field, text)?;
        match te.get("model_id") {
            None => {}
            Some(Value::String(id)) if *id == model => {}
            Some(id) => {
                return Err(ApiError::illegal(format!(
                    "[text_embedding] [model_id] {id} is not the model of field [{field}] ([{model}]); quarry embeds a query with its field's model"
                )))
            }
        }
        m.insert("query_vector".into(), json!(v));
        Ok(())
    }

    /// Rewrites a retriever tree in place.
    fn retriever(&self, r: &mut Value, depth: usize) -> Result<(), ApiError> {
        if depth > crate::dsl::MAX_DEPTH {
            return Err(bad("retrievers are nested too deeply"));
        }
        let Value::Object(m) = r else { return Ok(()) };
        if let Some(Value::Object(std)) = m.get("standard") {
            if let Some(s) = std.get("query").map(semantic_parts).transpose()?.flatten() {
                if let Some(k) = std
                    .keys()
                    .find(|k| !matches!(k.as_str(), "query" | "filter"))
                {
                    return Err(bad(format!(
                        "[standard] retriever with a [semantic] query does not support [{k}]"
                    )));
                }
                if s.boost.is_some() {
                    return Err(bad("[semantic] in a retriever does not take [boost]"));
                }
                let mut section = self.section_of(&s, self.size.max(1))?;
                if let Some(f) = std.get("filter") {
                    section.insert("filter".into(), f.clone());
                }
                *r = json!({"knn": section});
                return Ok(());
            }
        }
        if let Some(k) = m.get_mut("knn") {
            return self.knn_section(k);
        }
        for key in ["rrf", "linear"] {
            let Some(Value::Object(c)) = m.get_mut(key) else {
                continue;
            };
            let Some(Value::Array(list)) = c.get_mut("retrievers") else {
                continue;
            };
            for child in list {
                match child {
                    // linear: {"retriever": ..., "weight": ...}
                    Value::Object(o) if o.contains_key("retriever") => {
                        self.retriever(o.get_mut("retriever").expect("checked"), depth + 1)?
                    }
                    other => self.retriever(other, depth + 1)?,
                }
            }
        }
        Ok(())
    }
}
