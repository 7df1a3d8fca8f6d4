//! What fields a document has and how each is indexed and stored.
//!
//! A schema is a JSON file (`{"fields": [{"name": "body", "type": "text", "stored": true}]}`) or
//! built in Rust with [`Schema::builder`]. Field types: `text` (analyzed; indexed with freqs,
//! positions and norms; optionally stored), `keyword` (one exact term, stored), `integer`
//! (a stored i64, also indexed as an exact term so `id:42` finds it), `boolean` (stored, indexed
//! as the term `true` or `false`), `float` (a stored f64, indexed as one exact term, its
//! shortest decimal text: `price:2.5` finds 2.5) and `date` (text in the field's `format`, or
//! epoch milliseconds; stored as given, kept as milliseconds since the epoch, UTC).
//!
//! Integer, float, boolean, keyword and date fields also keep their values in a column per
//! segment ([`crate::codec::columns`], Lucene's doc values, Tantivy's fast fields): ranges,
//! sorting and aggregations read them.
//!
//! A `vector` field holds one dense vector per document (a JSON array of `dims` numbers), found
//! by k-nearest-neighbour search ([`crate::search::knn`]): `dims` (1 to 4,096), `similarity` (`cosine`,
//! the default, `dot_product`, `l2_norm`, `max_inner_product`), `element_type` (`float32`, or
//! `int8` to keep a 7-bit quantized copy that ranks candidates before the full vectors re-score
//! them) and `index` (`{"type": "hnsw", "m": 16, "ef_construction": 100}`, the default, or
//! `{"type": "flat"}` for exact search only). `"doc_values": false` (or tantivy's name, `"fast"`)
//! turns a field's column off, as Elasticsearch's `doc_values` does.
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::analysis::{analyzer_by_name, Analyzer};
use crate::date::DateFormat;
pub use crate::vector::Similarity;
use crate::{Error, Result};

/// The type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    Text,
    Keyword,
    Integer,
    Boolean,
    Float,
    Date,
    /// A dense vector of `dims` numbers ([`VectorOptions`]).
    Vector,
}

impl FieldType {
    /// The name used in schema files (`text`, `keyword`, `integer`, `boolean`, `float`,
    /// `date`).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Keyword => "keyword",
            FieldType::Integer => "integer",
            FieldType::Boolean => "boolean",
            FieldType::Float => "float",
            FieldType::Date => "date",
            FieldType::Vector => "vector",
        }
    }

    /// Whether fields of this type can keep a column (doc values).
    pub fn columnar(self) -> bool {
        !matches!(self, FieldType::Text | FieldType::Vector)
    }
}

impl std::fmt::Display for FieldType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One field's declaration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    /// Whether the original value is kept and returned with hits. Keyword, integer, boolean and
    /// float fields are always stored.
    #[serde(default = "yes")]
    pub stored: bool,
    /// Analyzer name for text fields.
    #[serde(default = "standard", skip_serializing_if = "is_standard")]
    pub analyzer: String,
    /// Text fields: also index adjacent frequent words as pair terms ([`crate::pairs`]), so
    /// that phrases of them (`"to be or not to be"`) read short lists. `false` makes an English
    /// index a little smaller (W2: 318 instead of 328 bytes per document in the suite's reports)
    /// and such phrases slower; results are the same either way.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub pairs: bool,
    /// Integer, float, boolean, keyword and date fields: keep the values in a column per
    /// segment for ranges, sorting and aggregations (on by default, as Elasticsearch's
    /// `doc_values`; tantivy calls it `fast`). Ignored for text fields.
    #[serde(default = "yes", alias = "fast", skip_serializing_if = "is_true")]
    pub doc_values: bool,
    /// Date fields: the accepted formats, `||`-separated, as Elasticsearch's `format`
    /// (default `strict_date_optional_time||epoch_millis`, see [`crate::date`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Vector fields: the number of values of every vector (1 to [`MAX_VECTOR_DIMS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dims: Option<u32>,
    /// Vector fields: how vectors compare (default `cosine`, as Elasticsearch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<Similarity>,
    /// Vector fields: `float32` (default) or `int8` (a quantized copy ranks candidates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_type: Option<ElementType>,
    /// Vector fields: the index that approximate search walks (default HNSW, m 16,
    /// ef_construction 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<VectorIndex>,
    /// Vector fields: compute the vectors from a text field with a registered model
    /// ([`crate::embed`]) instead of taking them from documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed: Option<EmbedOptions>,
}

/// Where an embedded vector field's vectors come from (`"embed": {"from", "model"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedOptions {
    /// The text or keyword field whose text is embedded.
    pub from: String,
    /// The name of a model registered with the index (`quarry models add NAME PATH`).
    pub model: String,
    /// How a text longer than the model's window is embedded: as overlapping passages, each
    /// its own vector (the default, `Some`; a document then scores by its best passage), or
    /// cut at the window (`None`, `"passages": false`).
    #[serde(
        default = "default_passages",
        skip_serializing_if = "is_default_passages",
        with = "passages_option"
    )]
    pub passages: Option<PassageOptions>,
}

/// How a long text is split into passages (`"passages": {"window", "overlap"}`), in word
/// pieces of the model's tokenizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassageOptions {
    /// Word pieces per passage, the model's two special tokens included (as the model's
    /// `max_tokens`); default: the model's window, at most it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Word pieces that consecutive passages share; default: an eighth of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<u32>,
}

/// The fewest word pieces a passage window may have (two of them are the special tokens).
pub const MIN_PASSAGE_WINDOW: u32 = 8;

impl PassageOptions {
    /// The window and overlap for a model whose window is `max_tokens`: the defaults filled in.
    /// An error names the field and key when the window exceeds the model's or the overlap
    /// leaves a passage no new word piece.
    pub fn resolve(&self, field: &str, max_tokens: usize) -> Result<(usize, usize)> {
        let window = self.window.map_or(max_tokens, |w| w as usize);
        if window > max_tokens {
            return Err(Error::Schema(format!(
                "field {field:?}: \"embed\".\"passages\".\"window\" is {window} word pieces; the model reads at most {max_tokens}"
            )));
        }
        let overlap = self.overlap.map_or(window / 8, |o| o as usize);
        check_passages(field, window, overlap)?;
        Ok((window, overlap))
    }
}

fn check_passages(field: &str, window: usize, overlap: usize) -> Result<()> {
    if window < MIN_PASSAGE_WINDOW as usize {
        return Err(Error::Schema(format!(
            "field {field:?}: \"embed\".\"passages\".\"window\" is {window}; it must be at least {MIN_PASSAGE_WINDOW} word pieces"
        )));
    }
    if overlap + 2 >= window {
        return Err(Error::Schema(format!(
            "field {field:?}: \"embed\".\"passages\".\"overlap\" is {overlap}; it must be less than the window ({window}) minus the 2 special tokens"
        )));
    }
    Ok(())
}

fn default_passages() -> Option<PassageOptions> {
    Some(PassageOptions::default())
}

fn is_default_passages(p: &Option<PassageOptions>) -> bool {
    *p == default_passages()
}

/// `"passages"`: `false` (cut), `true` or absent (the defaults), or an object.
mod passages_option {
    use super::PassageOptions;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    #[serde(untagged)]
    enum Repr {
        On(bool),
        Options(PassageOptions),
    }

    pub fn serialize<S: Serializer>(p: &Option<PassageOptions>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            None => Repr::On(false).serialize(s),
            Some(o) => Repr::Options(*o).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PassageOptions>, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        match v {
            serde_json::Value::Bool(false) => Ok(None),
            serde_json::Value::Bool(true) => Ok(Some(PassageOptions::default())),
            serde_json::Value::Object(_) => serde_json::from_value(v).map(Some).map_err(|e| {
                D::Error::custom(format!("\"embed\".\"passages\": {e} (keys: \"window\", \"overlap\", whole numbers of word pieces)"))
            }),
            other => Err(D::Error::custom(format!(
                "\"embed\".\"passages\" is {other}; it must be true, false or {{\"window\": N, \"overlap\": N}}"
            ))),
        }
    }
}

/// The most values a vector may have (Elasticsearch's limit).
pub const MAX_VECTOR_DIMS: u32 = 4096;

/// How a vector field's values are kept for search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementType {
    /// Full 32-bit floats only.
    Float32,
    /// Full floats plus one byte per value (7-bit scalar quantization), which ranks candidates
    /// in a quarter of the bytes; the floats re-score the best of them.
    Int8,
}

/// A vector field's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum VectorIndex {
    /// A hierarchical navigable small-world graph per segment, built at flush and merge.
    Hnsw {
        /// Neighbours per node (twice this on the bottom level); 2 to 512.
        #[serde(default = "default_m")]
        m: u32,
        /// The beam width while building; 1 to 3,200.
        #[serde(default = "default_ef_construction")]
        ef_construction: u32,
    },
    /// No graph: every search is an exact scan.
    Flat,
}

fn default_m() -> u32 {
    16
}
fn default_ef_construction() -> u32 {
    100
}

impl Default for VectorIndex {
    fn default() -> Self {
        VectorIndex::Hnsw {
            m: default_m(),
            ef_construction: default_ef_construction(),
        }
    }
}

/// A vector field's settings with defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorOptions {
    pub dims: u32,
    pub similarity: Similarity,
    pub element_type: ElementType,
    pub index: VectorIndex,
}

fn is_true(b: &bool) -> bool {
    *b
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
    /// Whether the field indexes pairs of frequent words ([`crate::pairs`]).
    pub fn has_pairs(&self) -> bool {
        self.field_type == FieldType::Text && self.pairs
    }
    /// Whether the field keeps a column of its values per segment.
    pub fn has_column(&self) -> bool {
        self.field_type.columnar() && self.doc_values
    }
    /// A field entry of `field_type` with the defaults of a schema file.
    pub fn new(name: &str, field_type: FieldType) -> Self {
        FieldEntry {
            name: name.into(),
            field_type,
            stored: true,
            analyzer: standard(),
            pairs: true,
            doc_values: true,
            format: None,
            dims: None,
            similarity: None,
            element_type: None,
            index: None,
            embed: None,
        }
    }

    /// A vector field of `dims` values compared by `similarity`, float32, HNSW with defaults.
    pub fn vector(name: &str, dims: u32, similarity: Similarity) -> Self {
        let mut f = FieldEntry::new(name, FieldType::Vector);
        f.dims = Some(dims);
        f.similarity = Some(similarity);
        f
    }

    /// A vector field's settings with defaults applied; None for other fields.
    pub fn vector_options(&self) -> Option<VectorOptions> {
        (self.field_type == FieldType::Vector).then(|| VectorOptions {
            dims: self.dims.unwrap_or(0),
            similarity: self.similarity.unwrap_or(Similarity::Cosine),
            element_type: self.element_type.unwrap_or(ElementType::Float32),
            index: self.index.unwrap_or_default(),
        })
    }

    /// Checks the vector settings: present and in range on vector fields, absent on others.
    fn check_vector(&self) -> Result<()> {
        let name = &self.name;
        let Some(o) = self.vector_options() else {
            let given = [
                ("dims", self.dims.is_some()),
                ("similarity", self.similarity.is_some()),
                ("element_type", self.element_type.is_some()),
                ("index", self.index.is_some()),
                ("embed", self.embed.is_some()),
            ];
            if let Some((key, _)) = given.iter().find(|g| g.1) {
                return Err(Error::Schema(format!(
                    "field {name:?}: \"{key}\" applies to vector fields only, not {} fields",
                    self.field_type
                )));
            }
            return Ok(());
        };
        if self.dims.is_none() {
            return Err(Error::Schema(format!(
                "field {name:?}: a vector field needs \"dims\" (1 to {MAX_VECTOR_DIMS})"
            )));
        }
        if !(1..=MAX_VECTOR_DIMS).contains(&o.dims) {
            return Err(Error::Schema(format!(
                "field {name:?}: \"dims\" is {}, it must be 1 to {MAX_VECTOR_DIMS}",
                o.dims
            )));
        }
        if let VectorIndex::Hnsw { m, ef_construction } = o.index {
            if !(2..=512).contains(&m) || !(1..=3200).contains(&ef_construction) {
                return Err(Error::Schema(format!(
                    "field {name:?}: hnsw \"m\" must be 2 to 512 and \"ef_construction\" 1 to 3200 (got {m} and {ef_construction})"
                )));
            }
        }
        Ok(())
    }
}

/// Whether `name` can name an embedding model: 1 to 64 ASCII letters, digits, `-`, `_` or `.`,
/// not starting with `.` (it is a folder name under `models/`).
pub(crate) fn is_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Checks an `embed` option: its source is a text or keyword field of the schema, its model
/// name well formed.
fn check_embed(
    f: &FieldEntry,
    fields: &[FieldEntry],
    by_name: &HashMap<String, u32>,
) -> Result<()> {
    let Some(e) = &f.embed else {
        return Ok(());
    };
    let name = &f.name;
    let source = by_name.get(&e.from).map(|&i| &fields[i as usize]);
    match source {
        Some(s) if matches!(s.field_type, FieldType::Text | FieldType::Keyword) => {}
        Some(s) => {
            return Err(Error::Schema(format!(
                "field {name:?}: \"embed\" \"from\" names {:?}, a {} field; it must be a text or keyword field",
                e.from, s.field_type
            )))
        }
        None => {
            return Err(Error::Schema(format!(
                "field {name:?}: \"embed\" \"from\" names {:?}, which the schema does not have",
                e.from
            )))
        }
    }
    if let Some(p) = e.passages {
        // What the schema alone can tell; the window against the model's when embedding.
        let window = p.window.unwrap_or(u32::MAX) as usize;
        let overlap = p.overlap.map_or(window.min(1 << 20) / 8, |o| o as usize);
        check_passages(name, window, overlap)?;
    }
    if !is_model_name(&e.model) {
        return Err(Error::Schema(format!(
            "field {name:?}: \"embed\" \"model\" {:?} is not a model name (1 to 64 ASCII letters, digits, '-', '_' or '.')",
            e.model
        )));
    }
    Ok(())
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
    /// Per field: the compiled `format` of a date field.
    dates: Arc<Vec<Option<DateFormat>>>,
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
        let mut dates = Vec::new();
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
            f.check_vector()?;
            if f.format.is_some() && f.field_type != FieldType::Date {
                return Err(Error::Schema(format!(
                    "field {:?}: \"format\" applies to date fields only, not {} fields",
                    f.name, f.field_type
                )));
            }
            dates.push(match f.field_type {
                FieldType::Date => Some(match &f.format {
                    Some(spec) => DateFormat::new(spec)
                        .map_err(|e| Error::Schema(format!("field {:?}: {e}", f.name)))?,
                    None => DateFormat::default_format(),
                }),
                _ => None,
            });
        }
        for f in &fields {
            check_embed(f, &fields, &by_name)?;
        }
        Ok(Self {
            fields: Arc::new(fields),
            by_name: Arc::new(by_name),
            analyzers: Arc::new(analyzers),
            dates: Arc::new(dates),
        })
    }

    /// Parses the JSON schema format.
    pub fn from_json(text: &str) -> Result<Self> {
        let file: SchemaFile = serde_json::from_str(text)
            .map_err(|e| Error::Schema(format!("line {}, column {}: {e}", e.line(), e.column())))?;
        let mut fields = file.fields;
        for f in &mut fields {
            if !matches!(f.field_type, FieldType::Text | FieldType::Vector) {
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
    /// The format of a date field.
    pub fn date_format(&self, id: u32) -> Option<&DateFormat> {
        self.dates.get(id as usize).and_then(|d| d.as_ref())
    }
    /// Names of the text fields, in schema order.
    pub fn text_fields(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| f.field_type == FieldType::Text)
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Infers a schema from sample JSON objects (numbered 1, 2, ... in error messages); see
    /// [`Schema::infer_lines`].
    pub fn infer<'a>(
        samples: impl IntoIterator<Item = &'a serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Self> {
        Self::infer_lines(
            samples
                .into_iter()
                .enumerate()
                .map(|(i, m)| (i as u64 + 1, m)),
        )
    }

    /// Infers a schema from sample JSON objects with their line numbers: strings become text
    /// fields, integers integer fields, other numbers float fields (a field holding both
    /// integers and other numbers is a float field), `true`/`false` boolean fields; arrays give
    /// their elements' type, except that an array of 128 to 4,096 numbers, not all integers, is
    /// a dense vector (a `vector` field of that many dimensions, `cosine`, float32, HNSW with
    /// default settings: what Elasticsearch's dynamic mapping makes a `dense_vector`; every
    /// document must then give it as many values); nested objects are flattened to dotted names
    /// (`user.name`, `metadata.embedding`); `null`
    /// and `[]` say nothing. Fields keep first-seen order (the keys of one object in sorted
    /// order, as serde_json's map holds them). Errors name the line and the field and say what
    /// to write in a schema file.
    pub fn infer_lines<'a>(
        samples: impl IntoIterator<Item = (u64, &'a serde_json::Map<String, serde_json::Value>)>,
    ) -> Result<Self> {
        let mut inf = Inference::default();
        for (line, obj) in samples {
            inf.object(line, "", obj)?;
        }
        let fields = inf
            .order
            .into_iter()
            .map(|name| match inf.types[&name].0 {
                FieldType::Vector => {
                    FieldEntry::vector(&name, inf.dims[&name].0, Similarity::Cosine)
                }
                field_type => FieldEntry::new(&name, field_type),
            })
            .collect();
        Self::new(fields)
    }
}

/// Schema inference's state: field types in first-seen order, with the line that decided each.
#[derive(Default)]
struct Inference {
    order: Vec<String>,
    types: HashMap<String, (FieldType, u64)>,
    /// Vector fields: their dimensions and the line that decided them.
    dims: HashMap<String, (u32, u64)>,
}

/// The lengths of number arrays that inference takes for dense vectors (Elasticsearch's
/// dynamic mapping: 128 to 4,096).
const INFERRED_VECTOR_DIMS: std::ops::RangeInclusive<usize> = 128..=MAX_VECTOR_DIMS as usize;

/// Whether inference takes `items` for a dense vector: 128 to 4,096 numbers, not all integers
/// (an array of integers stays an integer field).
fn looks_like_vector(items: &[serde_json::Value]) -> bool {
    INFERRED_VECTOR_DIMS.contains(&items.len())
        && items.iter().all(|v| v.is_number())
        && items.iter().any(|v| v.is_f64())
}

impl Inference {
    fn object(
        &mut self,
        line: u64,
        prefix: &str,
        obj: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        use serde_json::Value;
        for (k, v) in obj {
            let name = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            let t = match v {
                Value::Object(inner) => {
                    self.object(line, &name, inner)?;
                    continue;
                }
                Value::Array(items) if looks_like_vector(items) => {
                    let dims = items.len() as u32;
                    match self.dims.get(&name) {
                        Some(&(d, first)) if d != dims => {
                            return Err(Error::Schema(format!(
                                "line {line}: field {name:?} holds a vector of {dims} values but line {first} gave it {d}; a vector field has one length (declare it in a schema file, --schema)"
                            )))
                        }
                        Some(_) => {}
                        None => {
                            self.dims.insert(name.clone(), (dims, line));
                        }
                    }
                    FieldType::Vector
                }
                Value::Array(items) => {
                    let mut t = None;
                    for item in items {
                        let it = value_type(line, &name, item)?;
                        t = Some(match t {
                            None => it,
                            Some(prev) => merge(line, &name, prev, it)?,
                        });
                    }
                    match t {
                        Some(t) => t,
                        None => continue,
                    }
                }
                Value::Null => continue,
                other => value_type(line, &name, other)?,
            };
            match self.types.get(&name).copied() {
                None => {
                    self.types.insert(name.clone(), (t, line));
                    self.order.push(name);
                }
                Some((prev, first)) => {
                    let merged = merge(line, &name, prev, t).map_err(|_| {
                        Error::Schema(format!(
                            "line {line}: field {name:?} holds {} but line {first} gave it {}; declare its type in a schema file (--schema)",
                            article(t),
                            article(prev)
                        ))
                    })?;
                    self.types.insert(name, (merged, first));
                }
            }
        }
        Ok(())
    }
}

/// The field type a scalar JSON value asks for.
fn value_type(line: u64, name: &str, v: &serde_json::Value) -> Result<FieldType> {
    use serde_json::Value;
    Ok(match v {
        Value::String(_) => FieldType::Text,
        Value::Bool(_) => FieldType::Boolean,
        Value::Number(n) if n.is_i64() => FieldType::Integer,
        Value::Number(n) if n.is_u64() => {
            return Err(Error::Schema(format!(
                "line {line}: field {name:?}: {n} does not fit a 64-bit signed integer; declare the field with type \"float\" (or \"keyword\", written as a string) in a schema file (--schema)"
            )))
        }
        Value::Number(_) => FieldType::Float,
        other => {
            return Err(Error::Schema(format!(
                "line {line}: field {name:?}: cannot infer a type from {}: arrays may hold strings, numbers or booleans; write a schema file (--schema) and flatten the input",
                crate::document::json_word(other)
            )))
        }
    })
}

/// Two types seen for one field: equal, or integer and float (float wins).
fn merge(line: u64, name: &str, a: FieldType, b: FieldType) -> Result<FieldType> {
    match (a, b) {
        (a, b) if a == b => Ok(a),
        (FieldType::Integer, FieldType::Float) | (FieldType::Float, FieldType::Integer) => {
            Ok(FieldType::Float)
        }
        (a, b) => Err(Error::Schema(format!(
            "line {line}: field {name:?} holds both {} and {}; declare its type in a schema file (--schema)",
            article(a),
            article(b)
        ))),
    }
}

fn article(t: FieldType) -> &'static str {
    match t {
        FieldType::Text => "text (strings)",
        FieldType::Keyword => "keywords",
        FieldType::Integer => "integers",
        FieldType::Boolean => "booleans",
        FieldType::Float => "floats",
        FieldType::Date => "dates",
        FieldType::Vector => "vectors",
    }
}

/// Builds a [`Schema`] in Rust.
#[derive(Default, Debug)]
pub struct SchemaBuilder {
    fields: Vec<FieldEntry>,
}

impl SchemaBuilder {
    pub fn text(mut self, name: &str, stored: bool) -> Self {
        let mut f = FieldEntry::new(name, FieldType::Text);
        f.stored = stored;
        self.fields.push(f);
        self
    }
    pub fn keyword(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry::new(name, FieldType::Keyword));
        self
    }
    pub fn integer(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry::new(name, FieldType::Integer));
        self
    }
    pub fn boolean(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry::new(name, FieldType::Boolean));
        self
    }
    pub fn float(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry::new(name, FieldType::Float));
        self
    }
    /// A date field with the default format (`strict_date_optional_time||epoch_millis`).
    pub fn date(mut self, name: &str) -> Self {
        self.fields.push(FieldEntry::new(name, FieldType::Date));
        self
    }
    /// A date field with its own `format` (see [`crate::date`]).
    pub fn date_with_format(mut self, name: &str, format: &str) -> Self {
        let mut f = FieldEntry::new(name, FieldType::Date);
        f.format = Some(format.into());
        self.fields.push(f);
        self
    }
    /// A vector field of `dims` values compared by `similarity` (float32, HNSW with m 16 and
    /// ef_construction 100).
    pub fn vector(mut self, name: &str, dims: u32, similarity: Similarity) -> Self {
        self.fields.push(FieldEntry::vector(name, dims, similarity));
        self
    }
    /// Sets the element type of the vector field added last.
    pub fn element_type(mut self, t: ElementType) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.element_type = Some(t);
        }
        self
    }
    /// Sets the index of the vector field added last.
    pub fn vector_index(mut self, index: VectorIndex) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.index = Some(index);
        }
        self
    }
    /// Turns off the column (doc values) of the field added last.
    pub fn without_column(mut self) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.doc_values = false;
        }
        self
    }
    /// Turns off the pairs of frequent words ([`FieldEntry::pairs`]) of every text field.
    pub fn without_pairs(mut self) -> Self {
        for f in &mut self.fields {
            f.pairs = false;
        }
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
        let e = Schema::from_json(r#"{"fields":[{"name":"x","type":"geo_point"}]}"#)
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
    }

    fn infer_err(lines: &[&str]) -> String {
        let docs: Vec<serde_json::Map<String, serde_json::Value>> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        Schema::infer(&docs).unwrap_err().to_string()
    }

    #[test]
    fn embed_options_are_checked() {
        let schema = |extra: &str| {
            Schema::from_json(&format!(
                r#"{{"fields": [{{"name": "body", "type": "text"}}, {{"name": "n", "type": "integer"}}, {extra}]}}"#
            ))
        };
        let ok = schema(r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "mini-lm.2"}}"#)
            .unwrap();
        let e = ok.field_by_name("v").unwrap().embed.clone().unwrap();
        assert_eq!((e.from.as_str(), e.model.as_str()), ("body", "mini-lm.2"));
        assert_eq!(Schema::from_json(&ok.to_json()).unwrap(), ok);
        // Passages by default (as Elasticsearch's semantic_text chunks by default), `false`
        // cuts, an object sets them; each survives the round trip.
        assert_eq!(e.passages, Some(PassageOptions::default()));
        assert!(!ok.to_json().contains("passages"));
        for (spelling, want) in [
            ("false", None),
            ("true", Some(PassageOptions::default())),
            (
                r#"{"window": 128, "overlap": 16}"#,
                Some(PassageOptions {
                    window: Some(128),
                    overlap: Some(16),
                }),
            ),
        ] {
            let s = schema(&format!(
                r#"{{"name": "v", "type": "vector", "dims": 4, "embed": {{"from": "body", "model": "m", "passages": {spelling}}}}}"#
            ))
            .unwrap();
            assert_eq!(
                s.field_by_name("v")
                    .unwrap()
                    .embed
                    .as_ref()
                    .unwrap()
                    .passages,
                want
            );
            assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
        }
        let p = PassageOptions::default();
        assert_eq!(p.resolve("v", 256).unwrap(), (256, 32));
        let big = PassageOptions {
            window: Some(300),
            overlap: None,
        };
        let err = big.resolve("v", 256).unwrap_err().to_string();
        assert!(
            err.contains(r#"field "v": "embed"."passages"."window" is 300"#),
            "{err}"
        );
        for (extra, says) in [
            (
                r#"{"name": "v", "type": "text", "embed": {"from": "body", "model": "m"}}"#,
                "applies to vector fields only",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "nope", "model": "m"}}"#,
                "does not have",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "n", "model": "m"}}"#,
                "a integer field",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "../m"}}"#,
                "is not a model name",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body"}}"#,
                "missing field `model`",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m", "passages": {"window": 64, "overlap": 62}}}"#,
                r#"field "v": "embed"."passages"."overlap" is 62"#,
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m", "passages": {"window": 4}}}"#,
                r#"field "v": "embed"."passages"."window" is 4"#,
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m", "passages": {"windows": 4}}}"#,
                "unknown field `windows`",
            ),
            (
                r#"{"name": "v", "type": "vector", "dims": 4, "embed": {"from": "body", "model": "m", "passages": 3}}"#,
                r#""embed"."passages" is 3"#,
            ),
        ] {
            let err = schema(extra).unwrap_err().to_string();
            assert!(err.contains(says), "{extra}: {err}");
        }
    }

    #[test]
    fn inference_of_dense_vectors() {
        let vector = |n: usize, x: f64| serde_json::json!(vec![x; n]);
        let doc = |v: serde_json::Value| {
            serde_json::json!({"id": "a", "metadata": {"embedding": v}, "ids": (0..200).collect::<Vec<i64>>()})
                .as_object()
                .unwrap()
                .clone()
        };
        let s = Schema::infer(&[doc(vector(384, 0.5)), doc(serde_json::Value::Null)]).unwrap();
        let f = s.field_by_name("metadata.embedding").unwrap();
        assert_eq!(f.field_type, FieldType::Vector);
        let o = f.vector_options().unwrap();
        assert_eq!(
            (o.dims, o.similarity, o.element_type, o.index),
            (
                384,
                Similarity::Cosine,
                ElementType::Float32,
                VectorIndex::default()
            )
        );
        // An array of integers stays an integer field; short float arrays stay float fields.
        assert_eq!(
            s.field_by_name("ids").unwrap().field_type,
            FieldType::Integer
        );
        let s = Schema::infer(&[doc(vector(127, 0.5))]).unwrap();
        assert_eq!(
            s.field_by_name("metadata.embedding").unwrap().field_type,
            FieldType::Float
        );
        let s = Schema::infer(&[doc(vector(4096, 0.5))]).unwrap();
        assert_eq!(
            s.field_by_name("metadata.embedding").unwrap().dims,
            Some(4096)
        );
        let s = Schema::infer(&[doc(vector(4097, 0.5))]).unwrap();
        assert_eq!(
            s.field_by_name("metadata.embedding").unwrap().field_type,
            FieldType::Float
        );
        // Documents disagreeing on the length, or a short array after a vector, are errors.
        let err = Schema::infer(&[doc(vector(128, 0.5)), doc(vector(256, 0.5))])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("256") && err.contains("line 1 gave it 128"),
            "{err}"
        );
        let err = Schema::infer(&[doc(vector(128, 0.5)), doc(vector(3, 0.5))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("metadata.embedding"), "{err}");
    }

    #[test]
    fn inference_of_booleans_floats_arrays_and_objects() {
        let docs: Vec<serde_json::Map<String, serde_json::Value>> = vec![
            serde_json::from_str(
                r#"{"ok":true,"n":1,"ids":[1,2],"user":{"name":"a","geo":{"lat":1.5}},"e":[]}"#,
            )
            .unwrap(),
            serde_json::from_str(r#"{"n":2.5,"ok":null,"e":["x"]}"#).unwrap(),
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
                ("ids", FieldType::Integer),
                ("n", FieldType::Float),
                ("ok", FieldType::Boolean),
                ("user.geo.lat", FieldType::Float),
                ("user.name", FieldType::Text),
                ("e", FieldType::Text),
            ]
        );
        assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn inference_errors_name_line_field_and_remedy() {
        let e = infer_err(&[r#"{"x":"a"}"#, r#"{"x":1}"#]);
        assert!(
            e.contains("line 2")
                && e.contains("\"x\"")
                && e.contains("integers")
                && e.contains("line 1 gave it text")
                && e.contains("schema file")
                && !e.contains("Integer"),
            "{e}"
        );
        let e = infer_err(&[r#"{"x":[1,"a"]}"#]);
        assert!(e.contains("line 1") && e.contains("both"), "{e}");
        let e = infer_err(&[r#"{"x":1}"#, r#"{"x":18446744073709551615}"#]);
        assert!(
            e.contains("line 2") && e.contains("18446744073709551615") && e.contains("float"),
            "{e}"
        );
        let e = infer_err(&[r#"{"x":[[1]]}"#]);
        assert!(e.contains("nested array"), "{e}");
        let e = infer_err(&[r#"{"x":[{"a":1}]}"#]);
        assert!(e.contains("object inside an array"), "{e}");
    }
}
