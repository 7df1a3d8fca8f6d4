//! What does a search's `highlight` section ask for, and what do its hits carry? Elasticsearch's
//! request shape (global options, `fields` as an object or a list, per-field options over the
//! global ones) parsed into the engine's [`HighlightOptions`], and each hit's `highlight` object.
//!
//! Two highlighters, as Elasticsearch names them in `type`:
//! - `unified` (the default): fragments of the text with the query's terms marked
//!   ([`quarry::highlight`]);
//! - `semantic`: for a field whose text is embedded as passages (a `semantic_text` field, or
//!   the source of a `dense_vector`'s `embed`), the text of its best passages for the
//!   search's query vectors (its `knn` sections, `knn` retrievers and `semantic` queries on
//!   that field), each passage scored as kNN scores it (the sum over the query vectors, as
//!   Elasticsearch sums them): `number_of_fragments` of them (0 counts as 1, Elasticsearch's
//!   "the best fragment"), best first with `order: score`, else in text order. Under a
//!   `match_all` search every passage scores alike, so the first ones come back; a search with
//!   no query vector for the field gets none. The fragments are the passages' plain text (no
//!   tags, no encoding), as Elasticsearch returns chunks.
//!
//! A field that names no `type` gets the semantic highlighter when it is embedded and the
//! search ranks by its vectors (Elasticsearch makes it the default of `semantic_text`), the
//! unified one otherwise (quarry's `semantic_text` is a text field too, whose terms a `match`
//! query finds). `type: semantic` on a named field that is not embedded is a 400 naming it
//! (Elasticsearch returns no fragments); a `*` pattern simply skips such fields.

use std::collections::HashMap;

use quarry::highlight::{Encoder, HighlightOptions, Highlighter};
use quarry::query::Query;
use quarry::{DocAddress, FieldType, Schema, Searcher};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::retriever::{Ranked, Retriever};

/// Which highlighter a field asks for (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// None named: semantic for an embedded field the search ranks by, else unified.
    #[default]
    Default,
    Unified,
    Semantic,
}

/// One entry of a `highlight` section's `fields`.
#[derive(Debug, Clone, PartialEq)]
pub struct HighlightField {
    /// A field name or a `*` pattern.
    pub name: String,
    pub options: HighlightOptions,
    pub kind: Kind,
}

/// A parsed `highlight` section: the fields (names or `*` patterns) in request order, each with
/// its options and highlighter.
#[derive(Debug, Clone, PartialEq)]
pub struct HighlightRequest {
    pub fields: Vec<HighlightField>,
}

/// The options a `highlight` section or one of its fields may set.
const OPTIONS: &[&str] = &[
    "pre_tags",
    "post_tags",
    "fragment_size",
    "number_of_fragments",
    "require_field_match",
    "type",
    "encoder",
    "order",
    "boundary_scanner",
    "no_match_size",
];

fn bad(reason: String) -> ApiError {
    ApiError::parsing(format!("[highlight] {reason}"))
}

/// Applies the options of `m` (the section or one field's) over `opts` and `kind`.
fn apply(
    m: &Map<String, Value>,
    opts: &mut HighlightOptions,
    kind: &mut Kind,
    what: &str,
) -> Result<(), ApiError> {
    for (k, v) in m {
        let tag = |v: &Value| -> Result<String, ApiError> {
            match v {
                Value::String(s) => Ok(s.clone()),
                Value::Array(a) => match a.first() {
                    // The unified highlighter uses the first tag.
                    Some(Value::String(s)) => Ok(s.clone()),
                    _ => Err(bad(format!(
                        "[{k}] of {what} must be a non-empty array of strings"
                    ))),
                },
                _ => Err(bad(format!("[{k}] of {what} must be an array of strings"))),
            }
        };
        let count = |v: &Value, min: u64| -> Result<usize, ApiError> {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .filter(|n| *n >= min)
                .map(|n| n as usize)
                .ok_or_else(|| {
                    bad(format!(
                        "[{k}] of {what} must be an integer of at least {min}, not {v}"
                    ))
                })
        };
        match k.as_str() {
            "pre_tags" => opts.pre_tag = tag(v)?,
            "post_tags" => opts.post_tag = tag(v)?,
            "fragment_size" => opts.fragment_size = count(v, 1)?,
            "number_of_fragments" => opts.number_of_fragments = count(v, 0)?,
            "require_field_match" => {
                opts.require_field_match = v.as_bool().ok_or_else(|| {
                    bad(format!("[{k}] of {what} must be true or false, not {v}"))
                })?
            }
            "type" if v == "unified" => *kind = Kind::Unified,
            "type" if v == "semantic" => *kind = Kind::Semantic,
            "type" => {
                return Err(bad(format!(
                    "[type] {v} of {what} is not supported: quarry implements the \"unified\" (default) and \"semantic\" highlighters"
                )))
            }
            "encoder" => {
                opts.encoder = match v.as_str() {
                    Some("default") => Encoder::Default,
                    Some("html") => Encoder::Html,
                    _ => {
                        return Err(bad(format!(
                            "[encoder] of {what} must be \"default\" or \"html\", not {v}"
                        )))
                    }
                }
            }
            "order" => {
                opts.order_by_score = match v.as_str() {
                    Some("score") => true,
                    Some("none") => false,
                    _ => {
                        return Err(bad(format!(
                            "[order] of {what} must be \"none\" or \"score\", not {v}"
                        )))
                    }
                }
            }
            "boundary_scanner" if v == "sentence" => {}
            "no_match_size" if v == 0 => {}
            "boundary_scanner" | "no_match_size" => {
                return Err(bad(format!(
                    "[{k}] {v} of {what} is not supported (quarry: boundary_scanner \"sentence\", no_match_size 0)"
                )))
            }
            "fields" if what == "[highlight]" => {}
            other => {
                return Err(bad(format!(
                    "unknown option [{other}] in {what} (supported: {})",
                    OPTIONS.join(", ")
                )))
            }
        }
    }
    Ok(())
}

/// Parses a `highlight` section.
pub fn parse(v: &Value) -> Result<HighlightRequest, ApiError> {
    let m = v
        .as_object()
        .ok_or_else(|| bad(format!("must be an object, not {v}")))?;
    let mut global = HighlightOptions::default();
    let mut global_kind = Kind::Default;
    apply(m, &mut global, &mut global_kind, "[highlight]")?;
    let field = |name: &str, o: &Value| -> Result<HighlightField, ApiError> {
        let mut options = global.clone();
        let mut kind = global_kind;
        let what = format!("field [{name}]");
        match o {
            Value::Object(fm) => apply(fm, &mut options, &mut kind, &what)?,
            Value::Null => {}
            other => {
                return Err(bad(format!(
                    "the options of {what} must be an object, not {other}"
                )))
            }
        }
        Ok(HighlightField {
            name: name.to_string(),
            options,
            kind,
        })
    };
    let mut fields = Vec::new();
    match m.get("fields") {
        None => return Err(bad("needs [fields]".to_string())),
        Some(Value::Object(fm)) => {
            for (name, o) in fm {
                fields.push(field(name, o)?);
            }
        }
        Some(Value::Array(list)) => {
            for entry in list {
                match entry {
                    Value::String(name) => fields.push(field(name, &Value::Null)?),
                    Value::Object(fm) if fm.len() == 1 => {
                        let (name, o) = fm.iter().next().expect("one entry");
                        fields.push(field(name, o)?);
                    }
                    other => {
                        return Err(bad(format!(
                            "[fields] entries are a field name or {{\"field\": {{options}}}}, not {other}"
                        )))
                    }
                }
            }
        }
        Some(other) => {
            return Err(bad(format!(
                "[fields] must be an object or an array, not {other}"
            )))
        }
    }
    Ok(HighlightRequest { fields })
}

/// The vector fields embedded from text field `name` (a `semantic_text` field's hidden one
/// first): the fields whose passages the semantic highlighter returns for it.
fn embedded_from(schema: &Schema, name: &str) -> Vec<String> {
    let hidden = crate::mapping::semantic_vector_field(name);
    let mut out: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| f.field_type == FieldType::Vector)
        .filter(|f| f.embed.as_ref().is_some_and(|e| e.from == name))
        .map(|f| f.name.clone())
        .collect();
    out.sort_by_key(|f| *f != hidden);
    out
}

/// The query vectors of a search by vector field: its `knn` sections and the `knn` retrievers
/// of its retriever tree (a `semantic` query has become one of these).
fn query_vectors(ranked: Option<&Ranked>) -> HashMap<String, Vec<Vec<f32>>> {
    fn walk(r: &Retriever, out: &mut HashMap<String, Vec<Vec<f32>>>) {
        match r {
            Retriever::Standard(_) => {}
            Retriever::Knn(k) => out
                .entry(k.query.field.clone())
                .or_default()
                .push(k.query.vector.clone()),
            Retriever::Rrf { children, .. } => children.iter().for_each(|c| walk(c, out)),
            Retriever::Linear { children, .. } => {
                children.iter().for_each(|(c, _, _)| walk(c, out))
            }
        }
    }
    let mut out: HashMap<String, Vec<Vec<f32>>> = HashMap::new();
    match ranked {
        None => {}
        Some(Ranked::Knn { sections, .. }) => {
            for k in sections {
                out.entry(k.query.field.clone())
                    .or_default()
                    .push(k.query.vector.clone());
            }
        }
        Some(Ranked::Retriever(r)) => walk(r, &mut out),
    }
    out
}

impl HighlightRequest {
    /// Checks the fields against the mapping: `type: semantic` on a field named in full needs
    /// an embedded field (a 400 naming it otherwise, rather than no fragments that say nothing
    /// about why).
    pub fn check(&self, schema: &Schema) -> Result<(), ApiError> {
        for f in &self.fields {
            if f.kind != Kind::Semantic || f.name.contains('*') {
                continue;
            }
            let Some(entry) = schema
                .field_by_name(&f.name)
                .filter(|e| !e.name.starts_with('_'))
            else {
                return Err(bad(format!(
                    "field [{}] of the semantic highlighter does not exist in the mapping",
                    f.name
                )));
            };
            if embedded_from(schema, &f.name).is_empty() {
                return Err(bad(format!(
                    "the semantic highlighter highlights fields whose text is embedded (semantic_text, or the [from] of a dense_vector's [embed]); field [{}] is of type [{}]",
                    f.name,
                    crate::mapping::type_name(entry.field_type)
                )));
            }
        }
        Ok(())
    }

    /// What highlights the hits of a search whose query (as its hits see it) is `query` and
    /// that ranks `ranked` (its `knn` sections or retriever), on `searcher`'s fields.
    pub fn highlighting(
        &self,
        query: &Query,
        ranked: Option<&Ranked>,
        searcher: &Searcher,
    ) -> Highlighting<'_> {
        Highlighting {
            request: self,
            unified: Highlighter::new(query, searcher.schema()),
            vectors: query_vectors(ranked),
            match_all: ranked.is_none() && *query == Query::MatchAll,
        }
    }
}

/// Highlights the hits of one search: built once, used for every hit.
pub struct Highlighting<'r> {
    request: &'r HighlightRequest,
    unified: Highlighter,
    /// The search's query vectors by vector field.
    vectors: HashMap<String, Vec<Vec<f32>>>,
    /// The search matches every document and ranks no vectors: the semantic highlighter
    /// returns the first passages (Elasticsearch's answer to `match_all`).
    match_all: bool,
}

impl Highlighting<'_> {
    /// The vector field whose passages the semantic highlighter returns for text field `name`
    /// and the query vectors that rank them: the first embedded field the search has vectors
    /// for, else the first embedded field with none. None when `name` is not embedded.
    fn semantic_source(&self, schema: &Schema, name: &str) -> Option<(String, &[Vec<f32>])> {
        let fields = embedded_from(schema, name);
        if let Some((f, v)) = fields
            .iter()
            .find_map(|f| self.vectors.get(f).map(|v| (f, v)))
        {
            return Some((f.clone(), v));
        }
        fields.into_iter().next().map(|f| (f, &[][..]))
    }

    /// The semantic highlighter's fragments of document `doc` whose stored text is `value`:
    /// the text of its best passages in vector field `vector_field` for `vectors`.
    fn semantic(
        &self,
        searcher: &Searcher,
        doc: DocAddress,
        vector_field: &str,
        vectors: &[Vec<f32>],
        value: &Value,
        opts: &HighlightOptions,
    ) -> Result<Vec<String>, ApiError> {
        if vectors.is_empty() && !self.match_all {
            return Ok(Vec::new());
        }
        let mut scored = searcher.passage_scores(doc, vector_field, vectors)?;
        // Best first; equal scores (all of them under match_all) in text order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(opts.number_of_fragments.max(1));
        if !opts.order_by_score {
            scored.sort_by_key(|(p, _)| p.index);
        }
        Ok(scored
            .iter()
            .filter_map(|(p, _)| p.text_in(value))
            .collect())
    }

    /// A hit's `highlight` object (fields with fragments, in request order, each field once;
    /// fields of the server's own bookkeeping, `_id` and the like, never), or `None` when it
    /// has none. `stored` is the document `doc`'s stored fields.
    pub fn hit(
        &self,
        searcher: &Searcher,
        doc: DocAddress,
        stored: &Map<String, Value>,
    ) -> Result<Option<Value>, ApiError> {
        let schema = searcher.schema();
        let mut out = Map::new();
        for f in &self.request.fields {
            for name in self.unified.fields_matching(&f.name) {
                if name.starts_with('_') || out.contains_key(&name) {
                    continue;
                }
                let Some(value) = stored.get(&name) else {
                    continue;
                };
                let semantic = match f.kind {
                    Kind::Unified => None,
                    Kind::Semantic => self.semantic_source(schema, &name),
                    Kind::Default => self
                        .semantic_source(schema, &name)
                        .filter(|(_, v)| !v.is_empty()),
                };
                let frags = match semantic {
                    Some((vf, vectors)) => {
                        self.semantic(searcher, doc, &vf, vectors, value, &f.options)?
                    }
                    // A pattern that matched a field that is not embedded.
                    None if f.kind == Kind::Semantic => continue,
                    None => self.unified.highlight_field(&name, value, &f.options),
                };
                if !frags.is_empty() {
                    out.insert(name, Value::from(frags));
                }
            }
        }
        Ok((!out.is_empty()).then_some(Value::Object(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_as_object_or_list_with_options_over_the_global_ones() {
        let r = parse(&json!({
            "pre_tags": ["<b>"], "post_tags": ["</b>"], "fragment_size": 50, "type": "unified",
            "fields": {"body": {"number_of_fragments": 0}, "t*": {}}
        }))
        .unwrap();
        assert_eq!(r.fields.len(), 2);
        let (name, body) = (&r.fields[0].name, &r.fields[0].options);
        assert_eq!(name, "body");
        assert_eq!(
            (body.pre_tag.as_str(), body.post_tag.as_str()),
            ("<b>", "</b>")
        );
        assert_eq!((body.fragment_size, body.number_of_fragments), (50, 0));
        assert_eq!(r.fields[1].options.number_of_fragments, 5);
        let r =
            parse(&json!({"fields": [{"title": {"require_field_match": false}}, "body"]})).unwrap();
        assert_eq!(r.fields[0].name, "title");
        assert!(!r.fields[0].options.require_field_match);
        assert_eq!(r.fields[1].options, HighlightOptions::default());
        assert_eq!(r.fields[1].kind, Kind::Default);
        let r =
            parse(&json!({"encoder": "html", "order": "score", "fields": {"b": null}})).unwrap();
        assert_eq!(r.fields[0].options.encoder, Encoder::Html);
        assert!(r.fields[0].options.order_by_score);
        // The highlighter: per field over the global one.
        let r = parse(&json!({"type": "semantic", "fields": {"a": {}, "b": {"type": "unified"}}}))
            .unwrap();
        assert_eq!(
            (r.fields[0].kind, r.fields[1].kind),
            (Kind::Semantic, Kind::Unified)
        );
    }

    #[test]
    fn bad_options_name_the_option() {
        for (body, needle) in [
            (
                json!({"fields": {"body": {}}, "fragment_size": -1}),
                "[fragment_size]",
            ),
            (
                json!({"fields": {"body": {"number_of_fragments": "x"}}}),
                "[number_of_fragments] of field [body]",
            ),
            (json!({"fields": {"body": {}}, "type": "fvh"}), "[type]"),
            (
                json!({"fields": {"body": {}}, "colour": 1}),
                "unknown option [colour]",
            ),
            (json!({"fields": {"body": {"pre_tags": []}}}), "[pre_tags]"),
            (json!({"fields": 3}), "[fields]"),
            (json!({"pre_tags": ["a"]}), "needs [fields]"),
            (json!({"fields": {"body": {"encoder": "xml"}}}), "[encoder]"),
            (
                json!({"fields": {"body": {"require_field_match": "yes"}}}),
                "[require_field_match]",
            ),
            (
                json!({"fields": {"body": {"fields": {}}}}),
                "unknown option [fields]",
            ),
        ] {
            let e = parse(&body).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{body}");
            assert!(e.reason.contains(needle), "{body}: {}", e.reason);
        }
    }

    #[test]
    fn the_semantic_highlighter_needs_an_embedded_field() {
        let schema = Schema::from_json(
            r#"{"fields": [
            {"name": "body", "type": "text", "stored": true},
            {"name": "_inference.body", "type": "vector", "dims": 3,
             "embed": {"from": "body", "model": "m"}},
            {"name": "title", "type": "text", "stored": true},
            {"name": "tv", "type": "vector", "dims": 3, "embed": {"from": "title", "model": "m"}},
            {"name": "note", "type": "text", "stored": true},
            {"name": "year", "type": "integer"}]}"#,
        )
        .unwrap();
        assert_eq!(embedded_from(&schema, "body"), ["_inference.body"]);
        assert_eq!(embedded_from(&schema, "title"), ["tv"]);
        assert!(embedded_from(&schema, "note").is_empty());
        let semantic = |fields: Value| {
            parse(&json!({"type": "semantic", "fields": fields}))
                .unwrap()
                .check(&schema)
        };
        semantic(json!({"body": {}, "title": {"number_of_fragments": 0}, "n*": {}})).unwrap();
        // Unified on any field, as before.
        parse(&json!({"fields": {"note": {}, "year": {}}}))
            .unwrap()
            .check(&schema)
            .unwrap();
        for (fields, needle) in [
            (json!({"note": {}}), "field [note] is of type [text]"),
            (json!({"year": {}}), "field [year] is of type [long]"),
            (
                json!({"nope": {}}),
                "field [nope] of the semantic highlighter does not exist",
            ),
            (json!({"_id": {}}), "field [_id]"),
        ] {
            let e = semantic(fields.clone()).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{fields}");
            assert!(e.reason.contains(needle), "{fields}: {}", e.reason);
        }
        let e =
            parse(&json!({"fields": {"body": {"type": "semantic", "number_of_fragments": -1}}}))
                .unwrap_err();
        assert!(
            e.reason.contains("[number_of_fragments] of field [body]"),
            "{}",
            e.reason
        );
    }
}
