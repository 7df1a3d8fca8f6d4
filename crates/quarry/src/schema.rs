//! What fields a document has and how each is indexed and stored.
//!
//! A schema is a JSON file (`{"fields": [{"name": "body", "type": "text", "stored": true}]}`) or
//! built in Rust with [`Schema::builder`]. Field types: `text` (analyzed; indexed with freqs,
//! positions and norms; optionally stored), `keyword` (one exact term, stored) and `integer`
//! (a stored i64, also indexed as an exact term so `id:42` finds it).
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::analysis::{analyzer_by_name, Analyzer};
use crate::{Error, Result};

/// The type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    Text,
    Keyword,
    Integer,
}

/// One field's declaration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    /// Whether the original value is kept and returned with hits. Keyword and integer fields are
    /// always stored.
    #[serde(default = "yes")]
    pub stored: bool,
    /// Analyzer name for text fields.
    #[serde(default = "standard", skip_serializing_if = "is_standard")]
    pub analyzer: String,
}

fn yes() -> bool {
    true
}
fn standard() -> String {
    "standard".to_string()
}
fn is_standard(s: &str) -> bool {
    s == "standard"
}

impl FieldEntry {
    /// Text fields carry freqs, positions and length norms; others are exact single terms.
    pub fn has_positions(&self) -> bool {
        self.field_type == FieldType::Text
    }
    pub fn has_norms(&self) -> bool {
        self.field_type == FieldType::Text
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaFile {
    fields: Vec<FieldEntry>,
}

/// An ordered set of fields; a field's id is its index.
#[derive(Clone)]
pub struct Schema {
    fields: Arc<Vec<FieldEntry>>,
    by_name: Arc<HashMap<String, u32>>,
    analyzers: Arc<Vec<Option<Arc<dyn Analyzer>>>>,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.fields.iter()).finish()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields
    }
}

impl Schema {
    pub fn builder() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// Builds a schema from field entries, checking names, types and analyzers.
    pub fn new(fields: Vec<FieldEntry>) -> Result<Self> {
        if fields.is_empty() {
            return Err(Error::Schema("a schema needs at least one field".into()));
        }
        let mut by_name = HashMap::new();
        let mut analyzers = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if f.name.is_empty() || f.name.contains(|c: char| c == ':' || c.is_whitespace()) {
                return Err(Error::Schema(format!(
                    "field name {:?} is invalid: names are non-empty and contain no ':' or whitespace",
                    f.name
                )));
            }
            if by_name.insert(f.name.clone(), i as u32).is_some() {
                return Err(Error::Schema(format!(
                    "field {:?} is declared twice",
                    f.name
                )));
            }
            analyzers.push(match f.field_type {
                FieldType::Text => Some(analyzer_by_name(&f.analyzer).ok_or_else(|| {
                    Error::Schema(format!(
                        "field {:?}: unknown analyzer {:?} (known: standard)",
                        f.name, f.analyzer
                    ))
                })?),
                _ => None,
            });
        }
        Ok(Self {
            fields: Arc::new(fields),
            by_name: Arc::new(by_name),
            analyzers: Arc::new(analyzers),
        })
    }

    /// Parses the JSON schema format.
    pub fn from_json(text: &str) -> Result<Self> {
        let file: SchemaFile = serde_json::from_str(text)
            .map_err(|e| Error::Schema(format!("line {}, column {}: {e}", e.line(), e.column())))?;
        let mut fields = file.fields;
        for f in &mut fields {
            if f.field_type != FieldType::Text {
                f.stored = true;
            }
        }
        Self::new(fields)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&SchemaFile {
            fields: self.fields.to_vec(),
        })
        .expect("schema serializes")
    }

    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(SchemaFile {
            fields: self.fields.to_vec(),
        })
        .expect("schema serializes")
    }

    pub(crate) fn from_value(v: &serde_json::Value) -> Result<Self> {
        let file = SchemaFile::deserialize(v).map_err(|e| Error::Schema(e.to_string()))?;
        Self::new(file.fields)
    }

    pub fn fields(&self) -> &[FieldEntry] {
        &self.fields
    }
    pub fn field_id(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }
    pub fn field(&self, id: u32) -> &FieldEntry {
        &self.fields[id as usize]
    }
    pub fn field_by_name(&self, name: &str) -> Option<&FieldEntry> {
        self.field_id(name).map(|id| self.field(id))
    }
    /// The analyzer of a text field.
    pub fn analyzer(&self, id: u32) -> Option<&Arc<dyn Analyzer>> {
        self.analyzers.get(id as usize).and_then(|a| a.as_ref())
    }
    /// Names of the text fields, in schema order.
    pub fn text_fields(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| f.field_type == FieldType::Text)
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Infers a schema from sample JSON objects: strings (and arrays of strings) become text
    /// fields, integers become integer fields. Fields keep first-seen order.
    pub fn infer<'a>(
        samples: impl IntoIterator<Item = &'a serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Self> {
        use serde_json::Value;
        let mut order: Vec<String> = Vec::new();
        let mut types: HashMap<String, FieldType> = HashMap::new();
        for obj in samples {
            for (k, v) in obj {
                let t = match v {
                    Value::String(_) => FieldType::Text,
                    Value::Array(a) if a.iter().all(|x| x.is_string()) => FieldType::Text,
                    Value::Number(n) if n.is_i64() || n.is_u64() => FieldType::Integer,
                    Value::Null => continue,
                    other => {
                        return Err(Error::Schema(format!(
                            "cannot infer a type for field {k:?} from value {other}: only strings, arrays of strings and integers are supported; write a schema file"
                        )))
                    }
                };
                match types.get(k) {
                    None => {
                        types.insert(k.clone(), t);
                        order.push(k.clone());
                    }
                    Some(&prev) if prev != t => {
                        return Err(Error::Schema(format!(
                            "field {k:?} holds both {prev:?} and {t:?} values; write a schema file"
                        )))
                    }
                    _ => {}
                }
            }
        }
        let fields = order
            .into_iter()
            .map(|name| {
                let field_type = types[&name];
                FieldEntry {
                    name,
                    field_type,
                    stored: true,
                    analyzer: standard(),
                }
            })
            .collect();
        Self::new(fields)
    }
}

/// Builds a [`Schema`] in Rust.
#[derive(Default, Debug)]
pub struct SchemaBuilder {
    fields: Vec<FieldEntry>,
}

impl SchemaBuilder {
    pub fn text(mut self, name: &str, stored: bool) -> Self {
        self.fields.push(FieldEntry {
            name: name.into(),
            field_type: FieldType::Text,
            stored,
            analyzer: standard(),
        });
        self
    }
    pub fn keyword(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry {
            name: name.into(),
            field_type: FieldType::Keyword,
            stored: true,
            analyzer: standard(),
        });
        self
    }
    pub fn integer(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry {
            name: name.into(),
            field_type: FieldType::Integer,
            stored: true,
            analyzer: standard(),
        });
        self
    }
    /// Panics only on programmer error (duplicate names), like a builder should; use
    /// [`try_build`](Self::try_build) for user input.
    pub fn build(self) -> Schema {
        self.try_build().expect("valid schema")
    }
    pub fn try_build(self) -> Result<Schema> {
        Schema::new(self.fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_roundtrip_and_errors() {
        let s = Schema::from_json(r#"{"fields":[{"name":"id","type":"integer"},{"name":"body","type":"text","stored":false}]}"#).unwrap();
        assert_eq!(s.field_id("body"), Some(1));
        assert!(!s.field(1).stored);
        assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
        let e = Schema::from_json(r#"{"fields":[{"name":"x","type":"float"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
        assert!(Schema::from_json(r#"{"fields":[{"name":"x","type":"text","bogus":1}]}"#).is_err());
        assert!(Schema::from_json(
            r#"{"fields":[{"name":"x","type":"text"},{"name":"x","type":"text"}]}"#
        )
        .is_err());
        assert!(Schema::from_json(
            r#"{"fields":[{"name":"x","type":"text","analyzer":"klingon"}]}"#
        )
        .is_err());
    }

    #[test]
    fn inference() {
        let docs: Vec<serde_json::Map<String, serde_json::Value>> = vec![
            serde_json::from_str(r#"{"id":1,"title":"a","topics":["x"]}"#).unwrap(),
            serde_json::from_str(r#"{"id":2,"body":"b","title":null}"#).unwrap(),
        ];
        let s = Schema::infer(&docs).unwrap();
        let names: Vec<_> = s
            .fields()
            .iter()
            .map(|f| (f.name.as_str(), f.field_type))
            .collect();
        assert_eq!(
            names,
            vec![
                ("id", FieldType::Integer),
                ("title", FieldType::Text),
                ("topics", FieldType::Text),
                ("body", FieldType::Text)
            ]
        );
        let bad: Vec<serde_json::Map<String, serde_json::Value>> =
            vec![serde_json::from_str(r#"{"x":1.5}"#).unwrap()];
        assert!(Schema::infer(&bad).is_err());
    }
}
