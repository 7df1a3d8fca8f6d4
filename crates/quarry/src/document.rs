//! A document: field values checked against the schema, and how JSON objects become documents.
//!
//! JSON mapping (what [`Document::from_json`] accepts):
//! * an object's keys are field names; a nested object's keys are flattened to dotted names, as
//!   Elasticsearch does (`{"user": {"name": "x"}}` fills the field `user.name`);
//! * an array gives a multi-valued field, and a stored field returns it as an array again, with
//!   the same number of elements (`["energy"]` stays a one-element array, `[]` stays `[]`);
//! * `null` indexes nothing; a stored field returns it as `null`;
//! * a key that appears twice in one object is refused (JSON leaves its meaning open; silently
//!   keeping one of the values would lose data), with the key and the column;
//! * strings go to `text` and `keyword` fields, integers to `integer` and `float` fields, any
//!   number to `float` fields, `true`/`false` to `boolean` fields;
//! * a `vector` field takes one JSON array of exactly `dims` finite numbers (one vector per
//!   document); a document without the field, or with `null`, has no vector.
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::schema::{FieldType, Schema};
use crate::vector::Passage;
use crate::{Error, Result};

/// A value of one field.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Float(f64),
    /// A dense vector (of a `vector` field).
    Vector(Vec<f32>),
}

/// How a field's values were given in JSON, beyond the values themselves: stored fields use it
/// to return arrays as arrays and `null` as `null`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
    /// `values[start..start + len]` of `field` came from one JSON array.
    Array { field: u32, start: u32, len: u32 },
    /// `field` was `null`, before `values[at]`.
    Null { field: u32, at: u32 },
}

/// One passage of a text and its vector ([`Document::add_passages`]).
pub type PassageVector = (Passage, Vec<f32>);

/// A document ready to index: (field id, value) pairs; a field may repeat (multi-valued).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    pub(crate) values: Vec<(u32, FieldValue)>,
    /// Arrays and nulls of the JSON the document came from, in value order.
    pub(crate) shapes: Vec<Shape>,
    /// Per vector field, the vectors of its source text's passages, in order (format v10):
    /// what embedding a long text gives ([`crate::embed`]). Not stored fields.
    pub(crate) passages: Vec<(u32, Vec<PassageVector>)>,
}

impl Document {
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives vector field `field` one vector per passage of the document's text instead of one
    /// vector: what [`crate::IndexWriter::embed_documents`] does for a long text, and what a
    /// caller that embeds text itself may do. The passages must be numbered 0, 1, ... in order,
    /// each span forward (`start <= end`); every vector is checked as a vector value is. A
    /// document has either passages or a vector for a field, not both. A search of the field
    /// scores the document by its best passage and says which it was
    /// ([`crate::search::knn::KnnHit`]).
    pub fn add_passages(
        &mut self,
        schema: &Schema,
        field: &str,
        passages: Vec<(Passage, Vec<f32>)>,
    ) -> Result<()> {
        let id = schema
            .field_id(field)
            .ok_or_else(|| unknown_field(schema, field))?;
        let bad = |reason: String| Error::Document {
            field: field.to_string(),
            reason,
        };
        if schema.field(id).field_type != FieldType::Vector {
            return Err(bad("passages are vectors of a vector field".into()));
        }
        if self.values.iter().any(|(f, _)| *f == id) || self.passages.iter().any(|(f, _)| *f == id)
        {
            return Err(one_vector(field));
        }
        for (i, (p, v)) in passages.iter().enumerate() {
            if p.index != i as u32 || p.start > p.end {
                return Err(bad(format!(
                    "passage {i} is numbered {} with span {}..{}: passages are numbered 0, 1, ... and their spans go forward",
                    p.index, p.start, p.end
                )));
            }
            check_vector(schema, id, v).map_err(|r| bad(format!("passage {i}: {r}")))?;
        }
        if !passages.is_empty() {
            self.passages.push((id, passages));
        }
        Ok(())
    }

    /// The passages [`add_passages`](Self::add_passages) gave vector field `field` (None: the
    /// field has none in this document).
    pub fn passages(&self, schema: &Schema, field: &str) -> Option<&[(Passage, Vec<f32>)]> {
        let id = schema.field_id(field)?;
        self.passages
            .iter()
            .find(|(f, _)| *f == id)
            .map(|(_, p)| p.as_slice())
    }

    /// Adds a value, checking that the field exists and the type fits. A field added several
    /// times is multi-valued; its stored form is an array (a plain value when added once).
    pub fn add(&mut self, schema: &Schema, field: &str, value: FieldValue) -> Result<()> {
        let id = schema
            .field_id(field)
            .ok_or_else(|| unknown_field(schema, field))?;
        let ft = schema.field(id).field_type;
        let value = match (value, ft) {
            (v @ FieldValue::Str(_), FieldType::Text | FieldType::Keyword)
            | (v @ FieldValue::Int(_), FieldType::Integer)
            | (v @ FieldValue::Bool(_), FieldType::Boolean)
            | (v @ FieldValue::Float(_), FieldType::Float) => v,
            (FieldValue::Int(i), FieldType::Float) => FieldValue::Float(i as f64),
            (FieldValue::Vector(v), FieldType::Vector) => {
                check_vector(schema, id, &v).map_err(|reason| Error::Document {
                    field: field.to_string(),
                    reason,
                })?;
                if self.values.iter().any(|(f, _)| *f == id)
                    || self.passages.iter().any(|(f, _)| *f == id)
                {
                    return Err(one_vector(field));
                }
                FieldValue::Vector(v)
            }
            (v @ (FieldValue::Str(_) | FieldValue::Int(_)), FieldType::Date) => {
                date_millis(schema, id, &v).map_err(|reason| Error::Document {
                    field: field.to_string(),
                    reason,
                })?;
                v
            }
            (v, t) => {
                return Err(Error::Document {
                    field: field.to_string(),
                    reason: format!("expected {}, found {}", type_word(t), value_word(&v)),
                })
            }
        };
        if let FieldValue::Float(x) = value {
            if !x.is_finite() {
                return Err(Error::Document {
                    field: field.to_string(),
                    reason: format!("{x} is not a finite number"),
                });
            }
        }
        self.values.push((id, value));
        Ok(())
    }

    pub fn values(&self) -> &[(u32, FieldValue)] {
        &self.values
    }

    /// Parses one JSON object (a line of JSON Lines) against the schema; see the module
    /// documentation for the mapping.
    pub fn from_json(schema: &Schema, line: &str) -> Result<Self> {
        Self::from_map(schema, &parse_object(line)?)
    }

    /// Builds a document from a parsed JSON object (duplicate keys cannot be detected here: use
    /// [`parse_object`] or [`Document::from_json`] on text).
    pub fn from_map(schema: &Schema, obj: &Map<String, Value>) -> Result<Self> {
        let mut doc = Document {
            values: Vec::with_capacity(obj.len()),
            shapes: Vec::new(),
            passages: Vec::new(),
        };
        doc.add_object(schema, "", obj)?;
        Ok(doc)
    }

    fn add_object(
        &mut self,
        schema: &Schema,
        prefix: &str,
        obj: &Map<String, Value>,
    ) -> Result<()> {
        for (k, v) in obj {
            let name = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            if let Value::Object(inner) = v {
                let vector_field = schema
                    .field_id(&name)
                    .filter(|&id| schema.field(id).field_type == FieldType::Vector);
                match (vector_field, inner.get("passages")) {
                    (Some(id), Some(list)) if inner.len() == 1 => {
                        let passages = json_passages(schema, id, &name, list)?;
                        self.add_passages(schema, &name, passages)?;
                    }
                    (Some(_), _) => {
                        return Err(Error::Document {
                            field: name,
                            reason: "a vector field takes an array of numbers or {\"passages\": [{\"start\", \"end\", \"vector\"}, ...]}".into(),
                        })
                    }
                    (None, _) => self.add_object(schema, &name, inner)?,
                }
                continue;
            }
            let id = schema
                .field_id(&name)
                .ok_or_else(|| unknown_field(schema, &name))?;
            let ft = schema.field(id).field_type;
            if ft == FieldType::Vector {
                if let Some(vector) = json_vector(schema, id, &name, v)? {
                    if self.values.iter().any(|(f, _)| *f == id) {
                        return Err(one_vector(&name));
                    }
                    self.values.push((id, FieldValue::Vector(vector)));
                }
                continue;
            }
            match v {
                Value::Null => self.shapes.push(Shape::Null {
                    field: id,
                    at: self.values.len() as u32,
                }),
                Value::Array(items) => {
                    let start = self.values.len() as u32;
                    for item in items {
                        self.push_json(schema, &name, id, ft, item)?;
                    }
                    self.shapes.push(Shape::Array {
                        field: id,
                        start,
                        len: items.len() as u32,
                    });
                }
                other => self.push_json(schema, &name, id, ft, other)?,
            }
        }
        Ok(())
    }

    fn push_json(
        &mut self,
        schema: &Schema,
        name: &str,
        id: u32,
        ft: FieldType,
        v: &Value,
    ) -> Result<()> {
        let value = match (ft, v) {
            (FieldType::Text | FieldType::Keyword, Value::String(s)) => FieldValue::Str(s.clone()),
            (FieldType::Integer, Value::Number(n)) => match n.as_i64() {
                Some(i) => FieldValue::Int(i),
                None => {
                    let what = if n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0) {
                        "does not fit an integer field (64-bit signed)"
                    } else {
                        "is not an integer"
                    };
                    return Err(Error::Document {
                        field: name.into(),
                        reason: format!(
                            "{} {what}; declare the field with type \"float\" in a schema file",
                            number_text(n)
                        ),
                    });
                }
            },
            (FieldType::Float, Value::Number(n)) => match n.as_f64() {
                Some(x) if x.is_finite() => FieldValue::Float(x),
                _ => {
                    return Err(Error::Document {
                        field: name.into(),
                        reason: format!("{} is not a finite 64-bit float", number_text(n)),
                    })
                }
            },
            (FieldType::Boolean, Value::Bool(b)) => FieldValue::Bool(*b),
            (FieldType::Date, Value::String(_) | Value::Number(_)) => {
                let v = match v {
                    Value::String(s) => FieldValue::Str(s.clone()),
                    Value::Number(n) => match n.as_i64() {
                        Some(i) => FieldValue::Int(i),
                        None => FieldValue::Str(number_text(n)),
                    },
                    _ => unreachable!("matched above"),
                };
                date_millis(schema, id, &v).map_err(|reason| Error::Document {
                    field: name.into(),
                    reason,
                })?;
                v
            }
            (t, other) => {
                return Err(Error::Document {
                    field: name.into(),
                    reason: format!("expected {}, found {}", type_word(t), json_word(other)),
                })
            }
        };
        self.values.push((id, value));
        Ok(())
    }
}

/// The vector a JSON value gives a vector field: `None` for `null`; an array of `dims` finite
/// numbers, checked as [`check_vector`] does; anything else is an error naming the field.
/// The JSON form of [`Document::add_passages`]: `[{"start": S, "end": E, "vector": [...]}, ...]`,
/// numbered in order (what the server writes to its translog for an embedded field, so that a
/// replay does not run the model again).
fn json_passages(
    schema: &Schema,
    id: u32,
    name: &str,
    v: &Value,
) -> Result<Vec<(Passage, Vec<f32>)>> {
    let bad = |reason: String| Error::Document {
        field: name.into(),
        reason,
    };
    let items = v
        .as_array()
        .ok_or_else(|| bad(format!("\"passages\" is {}, not an array", json_word(v))))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let obj = item.as_object().filter(|o| o.len() == 3).ok_or_else(|| {
            bad(format!(
                "passage {i} must be {{\"start\", \"end\", \"vector\"}}"
            ))
        })?;
        let offset = |key: &str| {
            obj.get(key)
                .and_then(Value::as_u64)
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "passage {i}: \"{key}\" must be a byte offset below 2^32"
                    ))
                })
        };
        let (start, end) = (offset("start")?, offset("end")?);
        let vector = obj
            .get("vector")
            .map(|x| json_vector(schema, id, name, x))
            .transpose()?
            .flatten()
            .ok_or_else(|| bad(format!("passage {i} has no \"vector\"")))?;
        out.push((
            Passage {
                index: i as u32,
                start,
                end,
            },
            vector,
        ));
    }
    Ok(out)
}

fn json_vector(schema: &Schema, id: u32, name: &str, v: &Value) -> Result<Option<Vec<f32>>> {
    let bad = |reason: String| Error::Document {
        field: name.into(),
        reason,
    };
    let items = match v {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => {
            return Err(bad(format!(
                "expected {}, found {}",
                type_word(FieldType::Vector),
                json_word(other)
            )))
        }
    };
    let dims = schema.field(id).dims.unwrap_or(0) as usize;
    if items.len() != dims {
        return Err(bad(format!(
            "a vector of {} values; the field has {dims} dimensions",
            items.len()
        )));
    }
    let mut out = Vec::with_capacity(dims);
    for (i, item) in items.iter().enumerate() {
        match item.as_f64() {
            Some(x) if x.is_finite() && (x as f32).is_finite() => out.push(x as f32),
            Some(x) => {
                return Err(bad(format!(
                    "value {i} of the vector ({x}) is not a finite 32-bit float"
                )))
            }
            None => {
                return Err(bad(format!(
                    "value {i} of the vector is {}, not a number",
                    match item {
                        Value::Array(_) => "an array".to_string(),
                        Value::Object(_) => "an object".to_string(),
                        other => json_word(other),
                    }
                )))
            }
        }
    }
    check_vector(schema, id, &out).map_err(bad)?;
    Ok(Some(out))
}

/// Checks a vector for field `id`: `dims` values, all finite, and not all zero when compared
/// by cosine (which scales vectors to unit length). The error is the reason.
pub(crate) fn check_vector(schema: &Schema, id: u32, v: &[f32]) -> std::result::Result<(), String> {
    let Some(o) = schema.field(id).vector_options() else {
        return Err("not a vector field".into());
    };
    if v.len() != o.dims as usize {
        return Err(format!(
            "a vector of {} values; the field has {} dimensions",
            v.len(),
            o.dims
        ));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(format!("value {i} of the vector ({}) is not finite", v[i]));
    }
    if o.similarity.normalizes() && v.iter().all(|&x| x == 0.0) {
        return Err("a zero vector has no direction: cosine similarity cannot use it".into());
    }
    Ok(())
}

fn one_vector(field: &str) -> Error {
    Error::Document {
        field: field.to_string(),
        reason: "a vector field holds one vector per document".into(),
    }
}

/// Milliseconds since the epoch (UTC) of a date field's value: text read with the field's
/// `format`, or an integer taken as text in that format (epoch milliseconds in the default one),
/// as Elasticsearch reads a JSON number given to a date field. The error is the reason.
pub(crate) fn date_millis(
    schema: &Schema,
    id: u32,
    v: &FieldValue,
) -> std::result::Result<i64, String> {
    let format = schema
        .date_format(id)
        .ok_or_else(|| "not a date field".to_string())?;
    let text;
    let s = match v {
        FieldValue::Str(s) => s.as_str(),
        FieldValue::Int(i) => {
            text = i.to_string();
            &text
        }
        other => return Err(format!("expected a date, found {}", value_word(other))),
    };
    format
        .parse(s, &jiff::tz::TimeZone::UTC, crate::date::Rounding::Down)
        .map_err(|e| e.to_string())
}

fn unknown_field(schema: &Schema, name: &str) -> Error {
    let known: Vec<&str> = schema.fields().iter().map(|f| f.name.as_str()).collect();
    Error::Document {
        field: name.to_string(),
        reason: format!(
            "unknown field: it is not in the schema (fields: {}); add it to the schema, or drop it from the input",
            known.join(", ")
        ),
    }
}

/// A field type with its article, for messages.
pub(crate) fn type_word(t: FieldType) -> &'static str {
    match t {
        FieldType::Text => "a text value (a string)",
        FieldType::Keyword => "a keyword value (a string)",
        FieldType::Integer => "an integer",
        FieldType::Boolean => "a boolean (true or false)",
        FieldType::Float => "a number",
        FieldType::Date => "a date (a string in the field's format, or epoch milliseconds)",
        FieldType::Vector => "a vector (an array of numbers)",
    }
}

fn value_word(v: &FieldValue) -> &'static str {
    match v {
        FieldValue::Str(_) => "a string",
        FieldValue::Int(_) => "an integer",
        FieldValue::Bool(_) => "a boolean",
        FieldValue::Float(_) => "a float",
        FieldValue::Vector(_) => "a vector",
    }
}

/// A JSON number as the user wrote it where possible (`1e20`, not `1e+20`).
pub(crate) fn number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let x = n.as_f64().unwrap_or(f64::NAN);
    if x.fract() == 0.0 && x.abs() < 1e21 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

pub(crate) fn json_word(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {}", number_text(n)),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a nested array".into(),
        Value::Object(_) => "an object inside an array".into(),
    }
}

/// Parses one JSON object, refusing a key that appears twice in any object of it. Errors are
/// [`Error::Json`] with the 1-based column (0 when the error has no position); a UTF-8
/// byte-order mark at the start is skipped.
pub fn parse_object(text: &str) -> Result<Map<String, Value>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let strict: Strict = serde_json::from_str(text).map_err(json_error)?;
    match strict.0 {
        Value::Object(m) => Ok(m),
        other => Err(Error::Json {
            column: 0,
            reason: format!(
                "expected a JSON object ({{...}}), found {}",
                match other {
                    Value::Array(_) => "an array".to_string(),
                    v => json_word(&v),
                }
            ),
        }),
    }
}

/// serde_json's error without its own " at line L column C" suffix (the position is a field).
fn json_error(e: serde_json::Error) -> Error {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let reason = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
    Error::Json {
        column: e.column(),
        reason,
    }
}

/// A JSON value whose objects have no duplicate keys.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_none<E>(self) -> std::result::Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Strict, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Strict(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Strict, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} (a key may appear once per object)"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Strict(Value::Object(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON form of passages reads back as `add_passages` gives them; bad forms name the
    /// field and the passage.
    #[test]
    fn passages_from_json() {
        let s = Schema::from_json(
            r#"{"fields": [{"name": "body", "type": "text"},
                {"name": "v", "type": "vector", "dims": 2, "similarity": "l2_norm"}]}"#,
        )
        .unwrap();
        let d = Document::from_json(
            &s,
            r#"{"body": "a b", "v": {"passages": [{"start": 0, "end": 1, "vector": [1, 0]},
                {"start": 2, "end": 3, "vector": [0, 1]}]}}"#,
        )
        .unwrap();
        let ps = d.passages(&s, "v").unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!((ps[1].0.index, ps[1].0.start, ps[1].0.end), (1, 2, 3));
        assert_eq!(ps[1].1, vec![0.0, 1.0]);
        for (bad, says) in [
            (
                r#"{"v": {"passages": [{"start": 0, "end": 1}]}}"#,
                "passage 0 must be",
            ),
            (
                r#"{"v": {"passages": [{"start": 0, "end": 1, "vector": [1]}]}}"#,
                "dimensions",
            ),
            (
                r#"{"v": {"passages": [{"start": 5, "end": 1, "vector": [1, 0]}]}}"#,
                "go forward",
            ),
            (r#"{"v": {"other": 1}}"#, "array of numbers or"),
            (r#"{"v": {"passages": 3}}"#, "not an array"),
        ] {
            let e = Document::from_json(&s, bad).unwrap_err().to_string();
            assert!(e.contains("\"v\"") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn parse_and_errors() {
        let s = Schema::builder().integer("id").text("body", true).build();
        let d = Document::from_json(&s, r#"{"id": 3, "body": ["a", "b"]}"#).unwrap();
        assert_eq!(d.values.len(), 3);
        let e = Document::from_json(&s, r#"{"id": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"id\"") && e.contains("expected an integer"),
            "{e}"
        );
        let e = Document::from_json(&s, r#"{"nope": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field") && e.contains("fields: id, body"),
            "{e}"
        );
        let e = Document::from_json(&s, r#"{"id": 1,"#).unwrap_err();
        assert!(matches!(e, Error::Json { .. }), "{e}");
        assert!(!e.to_string().contains("line 1 column"), "{e}");
        assert!(Document::from_json(&s, r#"{"id": 1.5}"#).is_err());
        let e = Document::from_json(&s, r#"[1]"#).unwrap_err().to_string();
        assert!(
            e.contains("expected a JSON object") && !e.contains("column 0"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_key_and_column() {
        let s = Schema::builder().integer("id").text("body", true).build();
        let e = Document::from_json(&s, r#"{"id": 1, "body": "a", "id": 2}"#).unwrap_err();
        match &e {
            Error::Json { column, reason } => {
                assert!(reason.contains("duplicate key \"id\""), "{reason}");
                assert!(*column > 20 && *column <= 30, "{column}");
            }
            other => panic!("{other}"),
        }
        // Also inside nested objects; the same key in different objects is fine.
        assert!(parse_object(r#"{"a": {"b": 1, "b": 2}}"#).is_err());
        assert!(parse_object(r#"{"a": {"b": 1}, "c": {"b": 2}}"#).is_ok());
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let m = parse_object("\u{feff}{\"id\": 1}").unwrap();
        assert_eq!(m["id"], Value::from(1));
    }

    #[test]
    fn nested_objects_flatten_and_shapes_are_kept() {
        let s = Schema::builder()
            .keyword("user.name")
            .integer("user.ids")
            .text("tags", true)
            .build();
        let d = Document::from_json(
            &s,
            r#"{"user": {"name": "x", "ids": [1, 2]}, "tags": [], "user.name2": null}"#,
        );
        assert!(d.is_err(), "user.name2 is not in the schema");
        let d = Document::from_json(&s, r#"{"user": {"name": "x", "ids": [7]}, "tags": null}"#)
            .unwrap();
        // Keys of one object come in sorted order (serde_json's map).
        assert_eq!(
            d.values,
            vec![(1, FieldValue::Int(7)), (0, FieldValue::Str("x".into()))]
        );
        assert_eq!(
            d.shapes,
            vec![
                Shape::Null { field: 2, at: 0 },
                Shape::Array {
                    field: 1,
                    start: 0,
                    len: 1
                },
            ]
        );
    }

    #[test]
    fn booleans_and_floats() {
        let s = Schema::builder().boolean("ok").float("price").build();
        let d = Document::from_json(&s, r#"{"ok": true, "price": [1.5, 2]}"#).unwrap();
        assert_eq!(
            d.values,
            vec![
                (0, FieldValue::Bool(true)),
                (1, FieldValue::Float(1.5)),
                (1, FieldValue::Float(2.0))
            ]
        );
        let e = Document::from_json(&s, r#"{"ok": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected a boolean") && e.contains("the number 1"),
            "{e}"
        );
        let mut d = Document::new();
        assert!(d.add(&s, "price", FieldValue::Float(f64::NAN)).is_err());
        d.add(&s, "price", FieldValue::Int(3)).unwrap();
        assert_eq!(d.values, vec![(1, FieldValue::Float(3.0))]);
    }

    #[test]
    fn large_numbers_are_shown_as_written() {
        let s = Schema::builder().integer("n").build();
        let e = Document::from_json(&s, r#"{"n": 18446744073709551615}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("18446744073709551615") && e.contains("float"),
            "{e}"
        );
        let e = Document::from_json(&s, r#"{"n": 1e20}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("100000000000000000000") && !e.contains("e+"),
            "{e}"
        );
    }
}
