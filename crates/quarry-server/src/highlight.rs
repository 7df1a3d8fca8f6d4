//! What does a search's `highlight` section ask for, and what do its hits carry? Elasticsearch's
//! request shape (global options, `fields` as an object or a list, per-field options over the
//! global ones) parsed into the engine's [`HighlightOptions`], and each hit's `highlight` object.

use quarry::highlight::{Encoder, HighlightOptions, Highlighter};
use quarry::query::Query;
use quarry::Searcher;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A parsed `highlight` section: the fields (names or `*` patterns) in request order, each with
/// its options.
#[derive(Debug, Clone, PartialEq)]
pub struct HighlightRequest {
    pub fields: Vec<(String, HighlightOptions)>,
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

/// Applies the options of `m` (the section or one field's) over `opts`.
fn apply(m: &Map<String, Value>, opts: &mut HighlightOptions, what: &str) -> Result<(), ApiError> {
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
            "type" if v == "unified" => {}
            "type" => {
                return Err(bad(format!(
                    "[type] {v} of {what} is not supported: quarry implements the default \"unified\" highlighter"
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
    apply(m, &mut global, "[highlight]")?;
    let field = |name: &str, o: &Value| -> Result<(String, HighlightOptions), ApiError> {
        let mut opts = global.clone();
        let what = format!("field [{name}]");
        match o {
            Value::Object(fm) => apply(fm, &mut opts, &what)?,
            Value::Null => {}
            other => {
                return Err(bad(format!(
                    "the options of {what} must be an object, not {other}"
                )))
            }
        }
        Ok((name.to_string(), opts))
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

impl HighlightRequest {
    /// A hit's `highlight` object (fields with fragments, in request order; fields of the
    /// server's own bookkeeping, `_id` and the like, never), or `None` when it has none.
    pub fn hit(&self, highlighter: &Highlighter, stored: &Map<String, Value>) -> Option<Value> {
        let out: Map<String, Value> = highlighter
            .highlight_doc(stored, &self.fields)
            .into_iter()
            .filter(|(f, _)| !f.starts_with('_'))
            .map(|(f, frags)| (f, Value::from(frags)))
            .collect();
        (!out.is_empty()).then_some(Value::Object(out))
    }

    /// The highlighter of `query` on `searcher`'s fields.
    pub fn highlighter(query: &Query, searcher: &Searcher) -> Highlighter {
        Highlighter::new(query, searcher.schema())
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
        let (name, body) = &r.fields[0];
        assert_eq!(name, "body");
        assert_eq!(
            (body.pre_tag.as_str(), body.post_tag.as_str()),
            ("<b>", "</b>")
        );
        assert_eq!((body.fragment_size, body.number_of_fragments), (50, 0));
        assert_eq!(r.fields[1].1.number_of_fragments, 5);
        let r =
            parse(&json!({"fields": [{"title": {"require_field_match": false}}, "body"]})).unwrap();
        assert_eq!(r.fields[0].0, "title");
        assert!(!r.fields[0].1.require_field_match);
        assert_eq!(r.fields[1].1, HighlightOptions::default());
        let r =
            parse(&json!({"encoder": "html", "order": "score", "fields": {"b": null}})).unwrap();
        assert_eq!(r.fields[0].1.encoder, Encoder::Html);
        assert!(r.fields[0].1.order_by_score);
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
}
