//! How does an Elasticsearch `dense_vector` mapping become a quarry vector field, and back?
//!
//! `dims` (required, 1 to 4,096), `similarity` (`cosine` by default, `dot_product`, `l2_norm`,
//! `max_inner_product`), `index` (`true` only: quarry indexes every vector), `element_type`
//! (`float` only) and `index_options` (`type` `hnsw`, `int8_hnsw`, `flat` or `int8_flat`, with
//! `m` and `ef_construction` for the graph types). The `int8_` types are the library's
//! `element_type: int8` (a 7-bit quantized copy ranks candidates, the floats re-score them).
use quarry::schema::{ElementType, Similarity, VectorIndex, MAX_VECTOR_DIMS};
use quarry::{FieldEntry, FieldType};
use serde_json::{json, Map, Value};

use crate::error::ApiError;

fn mapper(reason: impl Into<String>) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "mapper_parsing_exception",
        reason,
    )
}

/// The quarry field of a `dense_vector` mapping `def` for field `name`; a 400 naming the field
/// and the parameter for anything quarry does not support.
pub fn field_of(name: &str, def: &Map<String, Value>) -> Result<FieldEntry, ApiError> {
    const KEYS: &[&str] = &[
        "type",
        "dims",
        "similarity",
        "index",
        "element_type",
        "index_options",
    ];
    if let Some(k) = def.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(mapper(format!(
            "field [{name}]: unknown parameter [{k}] for [dense_vector] (supported: {})",
            KEYS[1..].join(", ")
        )));
    }
    let dims = match def.get("dims") {
        None => {
            return Err(mapper(format!(
                "field [{name}]: [dims] is required for [dense_vector] fields (1 to {MAX_VECTOR_DIMS})"
            )))
        }
        Some(v) => v
            .as_u64()
            .filter(|d| (1..=u64::from(MAX_VECTOR_DIMS)).contains(d))
            .ok_or_else(|| {
                mapper(format!(
                    "field [{name}]: [dims] must be an integer from 1 to {MAX_VECTOR_DIMS}, found {v}"
                ))
            })? as u32,
    };
    let similarity = match def.get("similarity") {
        None => Similarity::Cosine,
        Some(v) => v.as_str().and_then(Similarity::from_name).ok_or_else(|| {
            mapper(format!(
                "field [{name}]: unknown [similarity] {v} (supported: cosine, dot_product, l2_norm, max_inner_product)"
            ))
        })?,
    };
    match def.get("index") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            return Err(mapper(format!(
                "field [{name}]: [index] false is not supported: quarry indexes every dense_vector (use \"index_options\": {{\"type\": \"flat\"}} for exact search without a graph)"
            )))
        }
        Some(v) => {
            return Err(mapper(format!(
                "field [{name}]: [index] must be true or false, found {v}"
            )))
        }
    }
    match def.get("element_type") {
        None => {}
        Some(v) if v == "float" => {}
        Some(v) => {
            return Err(mapper(format!(
                "field [{name}]: [element_type] {v} is not supported (quarry supports \"float\"; use index_options int8_hnsw for quantization)"
            )))
        }
    }
    let (element_type, index) = match def.get("index_options") {
        None => (ElementType::Float32, VectorIndex::default()),
        Some(Value::Object(o)) => index_options(name, o)?,
        Some(v) => {
            return Err(mapper(format!(
                "field [{name}]: [index_options] must be an object, found {v}"
            )))
        }
    };
    let mut f = FieldEntry::vector(name, dims, similarity);
    f.element_type = Some(element_type);
    f.index = Some(index);
    Ok(f)
}

fn index_options(
    name: &str,
    o: &Map<String, Value>,
) -> Result<(ElementType, VectorIndex), ApiError> {
    let ty = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(v) => {
            return Err(mapper(format!(
                "field [{name}]: [index_options.type] must be a string, found {v}"
            )))
        }
        None => {
            return Err(mapper(format!(
                "field [{name}]: [index_options] needs a [type] (hnsw, int8_hnsw, flat, int8_flat)"
            )))
        }
    };
    let (element_type, graph) = match ty {
        "hnsw" => (ElementType::Float32, true),
        "int8_hnsw" => (ElementType::Int8, true),
        "flat" => (ElementType::Float32, false),
        "int8_flat" => (ElementType::Int8, false),
        other => {
            return Err(mapper(format!(
                "field [{name}]: [index_options.type] [{other}] is not supported (quarry supports hnsw, int8_hnsw, flat, int8_flat)"
            )))
        }
    };
    let allowed: &[&str] = if graph {
        &["type", "m", "ef_construction"]
    } else {
        &["type"]
    };
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(mapper(format!(
            "field [{name}]: unknown parameter [index_options.{k}] for index_options type [{ty}] (supported: {})",
            allowed.join(", ")
        )));
    }
    if !graph {
        return Ok((element_type, VectorIndex::Flat));
    }
    let int = |key: &str, default: u32, lo: u32, hi: u32| -> Result<u32, ApiError> {
        match o.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|x| (u64::from(lo)..=u64::from(hi)).contains(x))
                .map(|x| x as u32)
                .ok_or_else(|| {
                    mapper(format!(
                        "field [{name}]: [index_options.{key}] must be an integer from {lo} to {hi}, found {v}"
                    ))
                }),
        }
    };
    let VectorIndex::Hnsw {
        m: dm,
        ef_construction: de,
    } = VectorIndex::default()
    else {
        unreachable!("the default vector index is HNSW")
    };
    Ok((
        element_type,
        VectorIndex::Hnsw {
            m: int("m", dm, 2, 512)?,
            ef_construction: int("ef_construction", de, 1, 3200)?,
        },
    ))
}

/// The `dense_vector` mapping of a quarry vector field, as `GET _mapping` shows it: `dims`,
/// `index`, `similarity` and `index_options` (with its defaults filled in, as Elasticsearch
/// does).
pub fn mapping_of(f: &FieldEntry) -> Option<Value> {
    if f.field_type != FieldType::Vector {
        return None;
    }
    let o = f.vector_options()?;
    let int8 = o.element_type == ElementType::Int8;
    let options = match o.index {
        VectorIndex::Hnsw { m, ef_construction } => json!({
            "type": if int8 { "int8_hnsw" } else { "hnsw" },
            "m": m,
            "ef_construction": ef_construction,
        }),
        VectorIndex::Flat => json!({"type": if int8 { "int8_flat" } else { "flat" }}),
    };
    Some(json!({
        "type": "dense_vector",
        "dims": o.dims,
        "index": true,
        "similarity": o.similarity.name(),
        "index_options": options,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(def: Value) -> Result<FieldEntry, ApiError> {
        field_of("v", def.as_object().unwrap())
    }

    #[test]
    fn every_supported_mapping_round_trips() {
        for (ty, et, graph) in [
            ("hnsw", ElementType::Float32, true),
            ("int8_hnsw", ElementType::Int8, true),
            ("flat", ElementType::Float32, false),
            ("int8_flat", ElementType::Int8, false),
        ] {
            for sim in ["cosine", "dot_product", "l2_norm", "max_inner_product"] {
                let mut opts = json!({"type": ty});
                if graph {
                    opts["m"] = json!(24);
                    opts["ef_construction"] = json!(50);
                }
                let def = json!({"type": "dense_vector", "dims": 3, "index": true,
                                 "similarity": sim, "index_options": opts});
                let f = parse(def.clone()).unwrap();
                let o = f.vector_options().unwrap();
                assert_eq!(o.element_type, et);
                assert_eq!(o.similarity.name(), sim);
                assert_eq!(
                    matches!(
                        o.index,
                        VectorIndex::Hnsw {
                            m: 24,
                            ef_construction: 50
                        }
                    ),
                    graph
                );
                assert_eq!(mapping_of(&f).unwrap(), def);
            }
        }
        // Defaults: cosine, HNSW m 16, ef_construction 100, float.
        let f = parse(json!({"type": "dense_vector", "dims": 2, "element_type": "float"})).unwrap();
        assert_eq!(
            mapping_of(&f).unwrap(),
            json!({"type": "dense_vector", "dims": 2, "index": true, "similarity": "cosine",
                   "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}})
        );
    }

    #[test]
    fn bad_mappings_are_refused_by_name() {
        for (def, needle) in [
            (json!({"type": "dense_vector"}), "[dims]"),
            (json!({"type": "dense_vector", "dims": 0}), "[dims]"),
            (json!({"type": "dense_vector", "dims": 4097}), "[dims]"),
            (json!({"type": "dense_vector", "dims": "3"}), "[dims]"),
            (
                json!({"type": "dense_vector", "dims": 3, "similarity": "jaccard"}),
                "jaccard",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "element_type": "byte"}),
                "byte",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "element_type": "bit"}),
                "bit",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index": false}),
                "[index]",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "colour": 1}),
                "[colour]",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "bbq_hnsw"}}),
                "bbq_hnsw",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"m": 3}}),
                "[type]",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "flat", "m": 3}}),
                "index_options.m",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "hnsw", "m": 1}}),
                "index_options.m",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "hnsw", "ef_construction": 4000}}),
                "ef_construction",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "index_options": {"type": "int8_hnsw", "confidence_interval": 0.9}}),
                "confidence_interval",
            ),
        ] {
            let e = parse(def.clone()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            assert!(e.reason.contains(needle), "{def}: {}", e.reason);
            assert!(e.reason.contains("[v]"), "{def}: {}", e.reason);
        }
    }
}
