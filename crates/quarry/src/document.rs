//! A document: field values checked against the schema.
use serde_json::{Map, Value};

use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

/// A value of one field.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    Str(String),
    Int(i64),
}

/// A document ready to index: (field id, value) pairs; a field may repeat (multi-valued).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    pub(crate) values: Vec<(u32, FieldValue)>,
}

impl Document {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a value, checking that the field exists and the type fits.
    pub fn add(&mut self, schema: &Schema, field: &str, value: FieldValue) -> Result<()> {
        let id = schema.field_id(field).ok_or_else(|| Error::Document {
            field: field.to_string(),
            reason: "unknown field: it is not in the schema".into(),
        })?;
        let ft = schema.field(id).field_type;
        match (&value, ft) {
            (FieldValue::Str(_), FieldType::Text | FieldType::Keyword)
            | (FieldValue::Int(_), FieldType::Integer) => {}
            (v, t) => {
                return Err(Error::Document {
                    field: field.to_string(),
                    reason: format!("expected a {} value, found {}", type_word(t), value_word(v)),
                })
            }
        }
        self.values.push((id, value));
        Ok(())
    }

    pub fn values(&self) -> &[(u32, FieldValue)] {
        &self.values
    }

    /// Parses one JSON object (a line of JSON Lines) against the schema. `null` means absent;
    /// arrays give multi-valued fields.
    pub fn from_json(schema: &Schema, line: &str) -> Result<Self> {
        let obj: Map<String, Value> = serde_json::from_str(line).map_err(|e| Error::Json {
            column: e.column(),
            reason: e.to_string(),
        })?;
        Self::from_map(schema, &obj)
    }

    pub fn from_map(schema: &Schema, obj: &Map<String, Value>) -> Result<Self> {
        let mut doc = Document {
            values: Vec::with_capacity(obj.len()),
        };
        for (k, v) in obj {
            let id = schema.field_id(k).ok_or_else(|| Error::Document {
                field: k.clone(),
                reason:
                    "unknown field: it is not in the schema (add it, or drop it from the input)"
                        .into(),
            })?;
            let ft = schema.field(id).field_type;
            match v {
                Value::Null => {}
                Value::Array(items) => {
                    for item in items {
                        doc.push_json(k, id, ft, item)?;
                    }
                }
                other => doc.push_json(k, id, ft, other)?,
            }
        }
        Ok(doc)
    }

    fn push_json(&mut self, name: &str, id: u32, ft: FieldType, v: &Value) -> Result<()> {
        let value = match (ft, v) {
            (FieldType::Text | FieldType::Keyword, Value::String(s)) => FieldValue::Str(s.clone()),
            (FieldType::Integer, Value::Number(n)) if n.as_i64().is_some() => {
                FieldValue::Int(n.as_i64().expect("checked"))
            }
            (FieldType::Integer, Value::Number(n)) => {
                return Err(Error::Document {
                    field: name.into(),
                    reason: format!("{n} is not an integer in the i64 range"),
                })
            }
            (t, other) => {
                return Err(Error::Document {
                    field: name.into(),
                    reason: format!(
                        "expected a {} value, found {}",
                        type_word(t),
                        json_word(other)
                    ),
                })
            }
        };
        self.values.push((id, value));
        Ok(())
    }
}

fn type_word(t: FieldType) -> &'static str {
    match t {
        FieldType::Text => "text (string)",
        FieldType::Keyword => "keyword (string)",
        FieldType::Integer => "integer",
    }
}

fn value_word(v: &FieldValue) -> &'static str {
    match v {
        FieldValue::Str(_) => "a string",
        FieldValue::Int(_) => "an integer",
    }
}

fn json_word(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a nested array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_errors() {
        let s = Schema::builder().integer("id").text("body", true).build();
        let d = Document::from_json(&s, r#"{"id": 3, "body": ["a", "b"]}"#).unwrap();
        assert_eq!(d.values.len(), 3);
        let e = Document::from_json(&s, r#"{"id": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"id\"") && e.contains("integer"), "{e}");
        let e = Document::from_json(&s, r#"{"nope": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field"), "{e}");
        let e = Document::from_json(&s, r#"{"id": 1,"#).unwrap_err();
        assert!(matches!(e, Error::Json { .. }), "{e}");
        assert!(Document::from_json(&s, r#"{"id": 1.5}"#).is_err());
        assert!(Document::from_json(&s, r#"[1]"#).is_err());
    }
}
