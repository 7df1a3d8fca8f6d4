//! What does one translog record hold, and how is it replayed into the writer?
//!
//! A record is JSON: `{"index": source}` (the source holds `_id` and the hidden version fields,
//! so a replay stores exactly what the acknowledged write stored) or `{"delete": id}`.
use quarry::{Document, FieldValue, IndexWriter, Schema};
use serde_json::{Map, Value};

use super::internal;
use crate::error::ApiError;
use crate::mapping::ID_FIELD;

/// A translog record: `{"index": source}` (source holds `_id`) or `{"delete": id}`.
pub(super) enum Record {
    Index(Map<String, Value>),
    Delete(String),
}

impl Record {
    pub(super) fn encode(&self) -> Vec<u8> {
        let v = match self {
            Record::Index(src) => serde_json::json!({"index": src}),
            Record::Delete(id) => serde_json::json!({"delete": id}),
        };
        serde_json::to_vec(&v).expect("JSON values serialize")
    }

    pub(super) fn decode(seq: u64, payload: &[u8]) -> Result<Record, ApiError> {
        let bad = |why: &str| internal(format!("translog record {seq}: {why}"));
        let v: Value = serde_json::from_slice(payload).map_err(|e| bad(&e.to_string()))?;
        match v {
            Value::Object(mut m) => match (m.remove("index"), m.remove("delete")) {
                (Some(Value::Object(src)), None) => Ok(Record::Index(src)),
                (None, Some(Value::String(id))) => Ok(Record::Delete(id)),
                _ => Err(bad("neither an index nor a delete")),
            },
            _ => Err(bad("not an object")),
        }
    }

    /// Applies the record to the writer.
    pub(super) fn apply(self, schema: &Schema, writer: &mut IndexWriter) -> Result<(), ApiError> {
        match self {
            Record::Index(src) => {
                let id = match src.get(ID_FIELD) {
                    Some(Value::String(id)) => id.clone(),
                    _ => return Err(internal("translog document without _id")),
                };
                let doc = Document::from_map(schema, &src)?;
                writer.update_document(ID_FIELD, &FieldValue::Str(id), doc)?;
            }
            Record::Delete(id) => {
                writer.delete_term(ID_FIELD, &FieldValue::Str(id))?;
            }
        }
        Ok(())
    }
}
