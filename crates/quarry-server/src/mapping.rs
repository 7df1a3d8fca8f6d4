//! How do Elasticsearch mappings and index names become quarry schemas and directories?
use quarry::{FieldEntry, FieldType, Schema};
use serde_json::{json, Map, Value};

use crate::error::ApiError;

/// The keyword field holding each document's `_id` (always present, first in the schema).
pub const ID_FIELD: &str = "_id";

/// Checks an index name the way Elasticsearch does, and more strictly so that a name is always
/// one safe directory name: 1–255 bytes of lowercase ASCII letters, digits, `-`, `_`, `.` and
/// `+`, not starting with `-`, `_`, `+` or `.`.
pub fn check_index_name(name: &str) -> Result<(), ApiError> {
    let bad = |why: &str| {
        Err(ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_index_name_exception",
            format!("Invalid index name [{name}], {why}"),
        )
        .in_index(name))
    };
    if name.is_empty() || name.len() > 255 {
        return bad("must be 1 to 255 bytes long");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '+'))
    {
        return bad(&format!(
            "must contain only lowercase letters, digits and - _ . + (found {c:?})"
        ));
    }
    if name.starts_with(['-', '_', '+', '.']) {
        return bad("must not start with '-', '_', '+' or '.'");
    }
    Ok(())
}

/// Builds the schema of a new index from the `mappings` object of `PUT /{index}`.
///
/// Supported field types: `text` (standard analyzer), `keyword`, `integer`/`long`/`short`/
/// `byte` (all stored as 64-bit integers), `boolean`, `float`/`double` (64-bit), `date`
/// (with `format`) and `dense_vector` ([`crate::dense_vector`]); `doc_values` turns a field's
/// column off. Anything else is refused with a 400 naming it.
pub fn schema_from_mappings(mappings: Option<&Value>) -> Result<Schema, ApiError> {
    schema_from_mappings_with(mappings, &|id| {
        Err(ApiError::illegal(format!(
            "inference id [{id}]: no embedding models are available here"
        )))
    })
}

/// The prefix of the hidden vector field that holds a `semantic_text` field's embeddings:
/// `semantic_text` field `F` is the text field `F` plus the vector field `_inference.F`
/// embedded from it. A document never names it (its `_source` holds only the text).
pub const SEMANTIC_PREFIX: &str = "_inference.";

/// The hidden vector field of `semantic_text` field `name`.
pub fn semantic_vector_field(name: &str) -> String {
    format!("{SEMANTIC_PREFIX}{name}")
}

/// [`schema_from_mappings`], where the mappings may use embedding models: `model_dims` gives
/// the vector length of a model id (or the 4xx of an unknown or damaged one). Adds
/// `semantic_text` (`inference_id`) and `dense_vector`'s `embed` (`{"from": FIELD, "model":
/// ID}`, quarry's own option; the vectors are computed from `from`'s text, and are not part of
/// `_source`).
pub fn schema_from_mappings_with(
    mappings: Option<&Value>,
    model_dims: &dyn Fn(&str) -> Result<usize, ApiError>,
) -> Result<Schema, ApiError> {
    // `_id` keeps no column, as in Elasticsearch (its doc values are off).
    let mut id = FieldEntry::new(ID_FIELD, FieldType::Keyword);
    id.doc_values = false;
    let mut fields = vec![id];
    // The hidden version fields (see `engine::versions`): stored, never in `_source`, no column.
    for name in crate::engine::versions::META_FIELDS {
        let mut f = FieldEntry::new(name, FieldType::Integer);
        f.doc_values = false;
        fields.push(f);
    }
    let props = match mappings {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            for key in m.keys() {
                if key == "_source" && m[key] != serde_json::json!({"enabled": true}) {
                    return Err(mapper(
                        "mappings: [_source] is not supported: quarry always keeps and returns the whole _source",
                    ));
                }
                if !matches!(key.as_str(), "properties" | "dynamic" | "_source") {
                    return Err(mapper(format!(
                        "mappings: [{key}] is not supported (supported: properties, dynamic)"
                    )));
                }
            }
            if let Some(d) = m.get("dynamic") {
                if !(d == "strict" || d == false || d == "false") {
                    return Err(mapper(
                        "mappings: only \"dynamic\": \"strict\" is supported: every field must be mapped when the index is created",
                    ));
                }
            }
            match m.get("properties") {
                None => None,
                Some(Value::Object(p)) => Some(p),
                Some(_) => return Err(mapper("mappings.properties must be an object")),
            }
        }
        Some(_) => return Err(mapper("mappings must be an object")),
    };
    for (name, def) in props.into_iter().flatten() {
        if name == ID_FIELD || crate::engine::versions::META_FIELDS.contains(&name.as_str()) {
            return Err(mapper(format!(
                "field [{name}] is a metadata field and cannot be mapped"
            )));
        }
        if name.starts_with(SEMANTIC_PREFIX) || name == SEMANTIC_PREFIX.trim_end_matches('.') {
            return Err(mapper(format!(
                "field [{name}]: names starting with [{SEMANTIC_PREFIX}] hold the embeddings of semantic_text fields and cannot be mapped"
            )));
        }
        let Value::Object(def) = def else {
            return Err(mapper(format!(
                "mapping of field [{name}] must be an object"
            )));
        };
        let ty = match def.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(_) => return Err(mapper(format!("[type] of field [{name}] must be a string"))),
            None if def.contains_key("properties") => {
                return Err(mapper(format!(
                    "field [{name}]: object fields are not supported; map flat fields"
                )))
            }
            None => return Err(mapper(format!("no [type] given for field [{name}]"))),
        };
        if ty == "dense_vector" {
            fields.push(embedded_vector(name, def, model_dims)?);
            continue;
        }
        if ty == "semantic_text" {
            fields.extend(semantic_text(name, def, model_dims)?);
            continue;
        }
        let field_type = match ty {
            "text" => FieldType::Text,
            "keyword" => FieldType::Keyword,
            "integer" | "long" | "short" | "byte" => FieldType::Integer,
            "boolean" => FieldType::Boolean,
            "float" | "double" => FieldType::Float,
            "date" => FieldType::Date,
            other => {
                return Err(mapper(format!(
                    "No handler for type [{other}] declared on field [{name}] (quarry supports text, keyword, integer, long, short, byte, boolean, float, double, date, dense_vector)"
                )))
            }
        };
        for key in def.keys() {
            if !matches!(
                key.as_str(),
                "type" | "store" | "index" | "analyzer" | "doc_values" | "format"
            ) {
                return Err(mapper(format!(
                    "field [{name}]: mapping parameter [{key}] is not supported"
                )));
            }
        }
        if let Some(a) = def.get("analyzer") {
            if a != "standard" {
                return Err(mapper(format!(
                    "field [{name}]: analyzer {a} is not supported (only \"standard\")"
                )));
            }
        }
        if let Some(st) = def.get("store") {
            if st != false {
                return Err(mapper(format!(
                    "field [{name}]: mapping parameter [store] {st} is not supported (quarry returns fields from _source only, as with the default \"store\": false)"
                )));
            }
        }
        if let Some(i) = def.get("index") {
            if i != true {
                return Err(mapper(format!(
                    "field [{name}]: \"index\": {i} is not supported (every field is indexed)"
                )));
            }
        }
        let mut entry = FieldEntry::new(name, field_type);
        match def.get("doc_values") {
            None => {}
            Some(Value::Bool(b)) if field_type.columnar() => entry.doc_values = *b,
            Some(Value::Bool(_)) => {
                return Err(mapper(format!(
                    "field [{name}]: [doc_values] does not apply to {ty} fields"
                )))
            }
            Some(other) => {
                return Err(mapper(format!(
                    "field [{name}]: [doc_values] must be true or false, found {other}"
                )))
            }
        }
        match def.get("format") {
            None => {}
            Some(Value::String(f)) if field_type == FieldType::Date => {
                entry.format = Some(f.clone())
            }
            Some(_) => {
                return Err(mapper(format!(
                    "field [{name}]: [format] must be a string and applies to date fields only"
                )))
            }
        }
        fields.push(entry);
    }
    Schema::new(fields).map_err(|e| mapper(e.to_string()))
}

/// A `dense_vector` mapping, with quarry's `embed` option when it has one.
fn embedded_vector(
    name: &str,
    def: &Map<String, Value>,
    model_dims: &dyn Fn(&str) -> Result<usize, ApiError>,
) -> Result<FieldEntry, ApiError> {
    let mut def = def.clone();
    let embed = def.remove("embed");
    let mut f = crate::dense_vector::field_of(name, &def)?;
    let Some(embed) = embed else {
        return Ok(f);
    };
    let bad = || {
        mapper(format!(
            "field [{name}]: [embed] must be {{\"from\": TEXT_FIELD, \"model\": INFERENCE_ID}}, found {embed}"
        ))
    };
    let o = embed.as_object().ok_or_else(bad)?;
    if o.len() != 2 {
        return Err(bad());
    }
    let (Some(Value::String(from)), Some(Value::String(model))) = (o.get("from"), o.get("model"))
    else {
        return Err(bad());
    };
    let dims = model_dims(model)?;
    if Some(dims as u32) != f.dims {
        return Err(mapper(format!(
            "field [{name}]: [dims] is {} but model [{model}] makes vectors of {dims}",
            f.dims.unwrap_or(0)
        )));
    }
    f.embed = Some(embed_options(from, model));
    f.stored = false;
    Ok(f)
}

/// The library's `embed` option (built through serde so that options added later keep their
/// defaults).
fn embed_options(from: &str, model: &str) -> quarry::schema::EmbedOptions {
    serde_json::from_value(json!({"from": from, "model": model}))
        .expect("from and model make an embed option")
}

/// A `semantic_text` mapping: the text field itself and its hidden embedded vector field.
fn semantic_text(
    name: &str,
    def: &Map<String, Value>,
    model_dims: &dyn Fn(&str) -> Result<usize, ApiError>,
) -> Result<[FieldEntry; 2], ApiError> {
    if let Some(k) = def
        .keys()
        .find(|k| !matches!(k.as_str(), "type" | "inference_id" | "search_inference_id"))
    {
        return Err(mapper(format!(
            "field [{name}]: unknown parameter [{k}] for [semantic_text] (supported: inference_id)"
        )));
    }
    let id = match def.get("inference_id") {
        Some(Value::String(id)) => id.as_str(),
        Some(v) => {
            return Err(mapper(format!(
                "field [{name}]: [inference_id] must be a string, found {v}"
            )))
        }
        None => {
            return Err(mapper(format!(
                "field [{name}]: [semantic_text] needs an [inference_id] (quarry has no default model; see GET _inference)"
            )))
        }
    };
    if let Some(s) = def.get("search_inference_id") {
        if s != id {
            return Err(mapper(format!(
                "field [{name}]: [search_inference_id] {s} differs from [inference_id] [{id}]; quarry embeds queries with the field's own model"
            )));
        }
    }
    let dims = model_dims(id)?;
    let text = FieldEntry::new(name, FieldType::Text);
    let mut v = FieldEntry::vector(
        &semantic_vector_field(name),
        dims as u32,
        quarry::schema::Similarity::Cosine,
    );
    v.embed = Some(embed_options(name, id));
    v.stored = false;
    Ok([text, v])
}

fn mapper(reason: impl Into<String>) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "mapper_parsing_exception",
        reason,
    )
}

/// The Elasticsearch type `GET _mapping` shows for a field type.
pub fn type_name(ft: FieldType) -> &'static str {
    match ft {
        FieldType::Text => "text",
        FieldType::Keyword => "keyword",
        FieldType::Integer => "long",
        FieldType::Boolean => "boolean",
        FieldType::Float => "double",
        FieldType::Date => "date",
        FieldType::Vector => "dense_vector",
    }
}

/// The `mappings` object of `GET /{index}/_mapping` for a schema.
pub fn mappings_of(schema: &Schema) -> Value {
    let mut props = Map::new();
    let hidden = |n: &str| n == ID_FIELD || crate::engine::versions::META_FIELDS.contains(&n);
    let semantic = |f: &FieldEntry| {
        let v = schema.field_by_name(&semantic_vector_field(&f.name))?;
        v.embed.as_ref().filter(|e| e.from == f.name)
    };
    for f in schema.fields().iter().filter(|f| !hidden(&f.name)) {
        if f.name.starts_with(SEMANTIC_PREFIX) {
            continue;
        }
        if let Some(e) = semantic(f) {
            props.insert(
                f.name.clone(),
                json!({"type": "semantic_text", "inference_id": e.model}),
            );
            continue;
        }
        if let Some(mut def) = crate::dense_vector::mapping_of(f) {
            if let Some(e) = &f.embed {
                def["embed"] = json!({"from": e.from, "model": e.model});
            }
            props.insert(f.name.clone(), def);
            continue;
        }
        let ty = type_name(f.field_type);
        let mut def = json!({"type": ty});
        if let Some(fmt) = &f.format {
            def["format"] = json!(fmt);
        }
        if !f.doc_values && f.field_type.columnar() {
            def["doc_values"] = json!(false);
        }
        props.insert(f.name.clone(), def);
    }
    json!({"dynamic": "strict", "properties": props})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_the_data_directory_are_refused() {
        for bad in [
            "", "..", ".", "../x", "a/b", "a\\b", "A", "-a", "_a", "a b", "a:b", "a\0",
        ] {
            assert!(check_index_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["reuters", "w2-2024.01", "a+b", "x_1"] {
            check_index_name(good).unwrap();
        }
        assert!(check_index_name(&"a".repeat(256)).is_err());
    }

    #[test]
    fn mappings_become_a_schema_and_back() {
        let m = json!({"properties": {"title": {"type": "text"}, "tag": {"type": "keyword"},
                                      "year": {"type": "integer"}}});
        let s = schema_from_mappings(Some(&m)).unwrap();
        assert_eq!(s.fields()[0].name, "_id");
        assert_eq!(
            s.field_by_name("year").unwrap().field_type,
            FieldType::Integer
        );
        let back = mappings_of(&s);
        assert_eq!(back["properties"]["title"]["type"], "text");
        assert_eq!(back["properties"]["year"]["type"], "long");
    }

    #[test]
    fn semantic_text_and_embedded_vectors_map_and_show_back() {
        let dims = |id: &str| match id {
            "minilm" => Ok(384),
            other => Err(crate::inference::unknown_model(other)),
        };
        let m = json!({"properties": {
            "body": {"type": "semantic_text", "inference_id": "minilm"},
            "title": {"type": "text"},
            "tv": {"type": "dense_vector", "dims": 384, "embed": {"from": "title", "model": "minilm"}}}});
        let s = schema_from_mappings_with(Some(&m), &dims).unwrap();
        let hidden = s.field_by_name("_inference.body").unwrap();
        assert_eq!(hidden.dims, Some(384));
        assert!(!hidden.stored);
        assert_eq!(hidden.embed.as_ref().unwrap().from, "body");
        assert_eq!(s.field_by_name("body").unwrap().field_type, FieldType::Text);
        assert!(!s.field_by_name("tv").unwrap().stored);
        let back = mappings_of(&s);
        assert_eq!(
            back["properties"]["body"],
            json!({"type": "semantic_text", "inference_id": "minilm"})
        );
        assert_eq!(
            back["properties"]["tv"]["embed"],
            json!({"from": "title", "model": "minilm"})
        );
        assert!(back["properties"].get("_inference.body").is_none());
        // Created again from what GET _mapping shows: the same schema.
        let again = schema_from_mappings_with(Some(&back), &dims).unwrap();
        assert_eq!(again, s);
        for (def, status, needle) in [
            (
                json!({"type": "semantic_text", "inference_id": "nope"}),
                404,
                "nope",
            ),
            (json!({"type": "semantic_text"}), 400, "[inference_id]"),
            (
                json!({"type": "semantic_text", "inference_id": "minilm", "x": 1}),
                400,
                "[x]",
            ),
            (
                json!({"type": "dense_vector", "dims": 3, "embed": {"from": "t", "model": "minilm"}}),
                400,
                "384",
            ),
            (
                json!({"type": "dense_vector", "dims": 384, "embed": {"from": "t"}}),
                400,
                "[embed]",
            ),
            (
                json!({"type": "dense_vector", "dims": 384, "embed": {"from": "nope", "model": "minilm"}}),
                400,
                "nope",
            ),
        ] {
            let m = json!({"properties": {"t": {"type": "text"}, "f": def.clone()}});
            let e = schema_from_mappings_with(Some(&m), &dims).unwrap_err();
            assert_eq!(e.status.as_u16(), status, "{def}: {e:?}");
            assert!(e.reason.contains(needle), "{def}: {}", e.reason);
        }
        // Without models (the plain schema_from_mappings), a model is a 400.
        assert!(schema_from_mappings(Some(&m)).is_err());
    }

    #[test]
    fn unknown_types_are_refused_by_name() {
        let m = json!({"properties": {"loc": {"type": "geo_point"}}});
        let e = schema_from_mappings(Some(&m)).unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
        assert!(e.reason.contains("geo_point"), "{}", e.reason);
    }
}
