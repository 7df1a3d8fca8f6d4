//! What does a tool answer, and how is it kept small enough for a model's context?
//!
//! A search answer is `{"index", "total", "total_relation", "hits": [{"id", "score", "fields",
//! "highlight", "passage"}], "truncated"}`, made from the Elasticsearch response the HTTP server
//! would give. A hit of `semantic_search` or `hybrid_search` whose vector is a passage of a
//! long text carries `passage: {index, start, end, text}` (the hit's `_passage` and the text at
//! that byte span of the stored source text). Two caps bound it ([`Limits`]): every string in a
//! hit's fields and its passage text is cut to `max_text_bytes` (at a character boundary,
//! marked with `…`; cut fields are listed in the hit's `cut_fields`), and hits stop being added
//! once the answer would pass `max_answer_bytes` (`"truncated": true` and a `note` saying what
//! to do).
use quarry::search::knn::Passage;
use serde_json::{json, Map, Value};

use super::Limits;

/// The mark ending a string that was cut.
pub const CUT_MARK: &str = "…";

/// `s` cut to at most `max` bytes (the mark included) at a character boundary; `None` when it
/// fits.
pub fn cut(s: &str, max: usize) -> Option<String> {
    if s.len() <= max {
        return None;
    }
    let mut end = max.saturating_sub(CUT_MARK.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}{CUT_MARK}", &s[..end]))
}

/// Cuts every string in `v` (arrays and nested objects too) to `max` bytes; returns whether
/// any was cut.
fn cut_strings(v: &mut Value, max: usize) -> bool {
    match v {
        Value::String(s) => match cut(s, max) {
            Some(c) => {
                *s = c;
                true
            }
            None => false,
        },
        Value::Array(a) => a.iter_mut().fold(false, |acc, x| cut_strings(x, max) | acc),
        Value::Object(m) => m
            .values_mut()
            .fold(false, |acc, x| cut_strings(x, max) | acc),
        _ => false,
    }
}

/// Cuts each field's strings to `max` bytes; returns the names of the fields that were cut.
pub fn cut_fields(fields: &mut Map<String, Value>, max: usize) -> Vec<String> {
    fields
        .iter_mut()
        .filter_map(|(k, v)| cut_strings(v, max).then(|| k.clone()))
        .collect()
}

/// Where the hits of a kNN search find the text of their matched passages: the stored text
/// field that the searched vector field embeds, and whether the caller left it out of `fields`
/// (it is then fetched for the passages only, and dropped from the hits).
#[derive(Debug, Clone, PartialEq)]
pub struct PassageText {
    pub field: String,
    pub drop: bool,
}

impl PassageText {
    /// Makes search `body` return `field` in `_source` (the passages' text is read from the
    /// hits, so from the same point in time as their spans).
    pub fn ask(body: &mut Value, field: &str) -> PassageText {
        let source = body.get("_source").cloned().unwrap_or(json!(true));
        let wanted = crate::search::parse_source(&source).is_ok_and(|f| {
            let one: Map<String, Value> = [(field.to_string(), Value::Null)].into_iter().collect();
            f.apply(one).is_some_and(|m| !m.is_empty())
        });
        if !wanted {
            let mut list = match source {
                Value::Array(a) => a,
                Value::String(s) => vec![Value::String(s)],
                _ => Vec::new(),
            };
            list.push(json!(field));
            body["_source"] = Value::Array(list);
        }
        PassageText {
            field: field.to_string(),
            drop: !wanted,
        }
    }

    /// The hit's `passage` from its `_passage` and the stored text in `source` (before any
    /// field is cut), its text cut to `max` bytes; None when the hit matched no passage.
    fn passage(
        &self,
        es: &Value,
        source: Option<&Map<String, Value>>,
        max: usize,
    ) -> Option<Value> {
        let p: Passage = serde_json::from_value(es.get("_passage")?.clone()).ok()?;
        let mut out = json!({"index": p.index, "start": p.start, "end": p.end});
        if let Some(text) = source
            .and_then(|s| s.get(&self.field))
            .and_then(|v| p.text_in(v))
        {
            out["text"] = json!(cut(&text, max).unwrap_or(text));
        }
        Some(out)
    }
}

/// The compact hit of an Elasticsearch hit object.
fn hit_of(es: &Value, limits: &Limits, passages: Option<&PassageText>) -> Value {
    let mut h = json!({"id": es["_id"], "score": es["_score"]});
    let source = es.get("_source").and_then(Value::as_object);
    let passage = passages.and_then(|p| p.passage(es, source, limits.max_text_bytes));
    if let Some(src) = source {
        let mut fields = src.clone();
        if let Some(p) = passages.filter(|p| p.drop) {
            fields.remove(&p.field);
        }
        let cut = cut_fields(&mut fields, limits.max_text_bytes);
        h["fields"] = Value::Object(fields);
        if !cut.is_empty() {
            h["cut_fields"] = json!(cut);
        }
    }
    if let Some(hl) = es.get("highlight") {
        h["highlight"] = hl.clone();
    }
    if let Some(p) = passage {
        h["passage"] = p;
    }
    h
}

/// The answer of `search`, `semantic_search` and `hybrid_search` from the server's `_search`
/// response; `passages` says where the text of matched passages is (kNN searches).
pub fn search_answer(
    index: &str,
    es: &Value,
    limits: &Limits,
    passages: Option<&PassageText>,
) -> Value {
    let total = &es["hits"]["total"];
    let mut answer = json!({
        "index": index,
        "total": total["value"],
        "total_relation": total["relation"],
        "hits": [],
        "truncated": false,
    });
    if es["timed_out"] == true {
        answer["timed_out"] = json!(true);
    }
    let mut used = answer.to_string().len();
    let mut hits = Vec::new();
    let empty = Vec::new();
    let all = es["hits"]["hits"].as_array().unwrap_or(&empty);
    for es_hit in all {
        let h = hit_of(es_hit, limits, passages);
        let bytes = h.to_string().len() + 1;
        if used + bytes > limits.max_answer_bytes {
            answer["truncated"] = json!(true);
            answer["note"] = json!(format!(
                "{} of {} hits left out to keep the answer under {} bytes: ask for fewer `fields`, a smaller `size`, or page with `from`",
                all.len() - hits.len(),
                all.len(),
                limits.max_answer_bytes
            ));
            break;
        }
        used += bytes;
        hits.push(h);
    }
    answer["hits"] = Value::Array(hits);
    answer
}

/// The answer of `get_document`: the fields, each string cut so that the answer stays under
/// the answer cap.
pub fn document_answer(
    index: &str,
    id: &str,
    found: Option<(Map<String, Value>, u64)>,
    limits: &Limits,
) -> Value {
    let Some((mut fields, version)) = found else {
        return json!({"index": index, "id": id, "found": false});
    };
    let mut answer = json!({"index": index, "id": id, "found": true, "version": version});
    let fits = |f: &Map<String, Value>| {
        answer.to_string().len() + Value::Object(f.clone()).to_string().len() + 16
            <= limits.max_answer_bytes
    };
    if !fits(&fields) {
        // Shrink every string alike until the whole fits (each halving at least halves the
        // longest string, so this ends).
        let mut max = limits.max_answer_bytes;
        let mut cut = Vec::new();
        while max > CUT_MARK.len() && !fits(&fields) {
            max /= 2;
            cut = cut_fields(&mut fields, max);
        }
        answer["cut_fields"] = json!(cut);
        answer["truncated"] = json!(true);
    }
    answer["fields"] = Value::Object(fields);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_cut_at_character_boundaries() {
        assert_eq!(cut("short", 10), None);
        let c = cut("ééééé", 8).unwrap();
        assert!(c.len() <= 8, "{c}");
        assert_eq!(c, "éé…");
        assert_eq!(cut("abcdef", 4).unwrap(), "a…");
        let mut f: Map<String, Value> =
            serde_json::from_value(json!({"a": "x".repeat(50), "b": ["y".repeat(50), 3], "c": 1}))
                .unwrap();
        let mut cut = cut_fields(&mut f, 20);
        cut.sort();
        assert_eq!(cut, ["a", "b"]);
        assert!(f["a"].as_str().unwrap().len() <= 20);
        assert!(f["b"][0].as_str().unwrap().len() <= 20);
        assert_eq!(f["c"], 1);
    }

    fn es_response(n: usize, body_len: usize) -> Value {
        let hits: Vec<Value> = (0..n)
            .map(|i| {
                json!({"_id": i.to_string(), "_score": 1.0, "_index": "r",
                "_source": {"body": "w".repeat(body_len)}})
            })
            .collect();
        json!({"timed_out": false, "hits": {"total": {"value": 1234, "relation": "eq"}, "hits": hits}})
    }

    #[test]
    fn the_text_cap_cuts_each_field() {
        let limits = Limits {
            max_text_bytes: 100,
            ..Limits::default()
        };
        let a = search_answer("r", &es_response(3, 500), &limits, None);
        assert_eq!(a["total"], 1234);
        assert_eq!(a["hits"].as_array().unwrap().len(), 3);
        assert_eq!(a["truncated"], false);
        for h in a["hits"].as_array().unwrap() {
            assert!(h["fields"]["body"].as_str().unwrap().len() <= 100);
            assert_eq!(h["cut_fields"], json!(["body"]));
        }
    }

    #[test]
    fn the_byte_cap_bounds_the_whole_answer() {
        let limits = Limits {
            max_text_bytes: 1000,
            max_answer_bytes: 5000,
            ..Limits::default()
        };
        let a = search_answer("r", &es_response(20, 1000), &limits, None);
        assert!(a.to_string().len() <= 5000 + 300, "{}", a.to_string().len());
        let kept = a["hits"].as_array().unwrap().len();
        assert!((1..20).contains(&kept), "{kept}");
        assert_eq!(a["truncated"], true);
        assert!(a["note"].as_str().unwrap().contains("5000 bytes"));
        // The hits kept are the best ones, in order.
        assert_eq!(a["hits"][0]["id"], "0");
    }

    #[test]
    fn matched_passages_come_with_their_text_cut_like_fields() {
        for (source, after, drop) in [
            (json!(false), json!(["body"]), true),
            (json!(["ti*"]), json!(["ti*", "body"]), true),
            (json!(["b*"]), json!(["b*"]), false),
            (json!(true), json!(true), false),
        ] {
            let mut body = json!({"_source": source});
            let p = PassageText::ask(&mut body, "body");
            assert_eq!((&body["_source"], p.drop), (&after, drop), "{source}");
        }
        let es = json!({"hits": {"total": {"value": 2, "relation": "eq"}, "hits": [
            {"_id": "1", "_score": 0.9, "_source": {"title": "t", "body": "Wheat exports rose sharply."},
             "_passage": {"field": "body", "index": 1, "start": 6, "end": 26}},
            {"_id": "2", "_score": 0.5, "_source": {"title": "u", "body": "x"}}]}});
        let limits = Limits {
            max_text_bytes: 10,
            ..Limits::default()
        };
        let dropped = PassageText {
            field: "body".into(),
            drop: true,
        };
        let a = search_answer("r", &es, &limits, Some(&dropped));
        assert_eq!(
            a["hits"][0]["passage"],
            json!({"index": 1, "start": 6, "end": 26, "text": "exports…"})
        );
        assert_eq!(a["hits"][0]["fields"], json!({"title": "t"}));
        assert!(a["hits"][1].get("passage").is_none());
        let kept = PassageText {
            drop: false,
            ..dropped
        };
        let a = search_answer("r", &es, &Limits::default(), Some(&kept));
        assert_eq!(a["hits"][0]["passage"]["text"], "exports rose sharply");
        assert_eq!(
            a["hits"][0]["fields"]["body"],
            "Wheat exports rose sharply."
        );
    }

    #[test]
    fn a_large_document_is_cut_to_the_answer_cap() {
        let limits = Limits {
            max_answer_bytes: 2000,
            ..Limits::default()
        };
        let f: Map<String, Value> =
            serde_json::from_value(json!({"title": "t", "body": "b".repeat(10_000)})).unwrap();
        let a = document_answer("r", "7", Some((f.clone(), 1)), &limits);
        assert!(a.to_string().len() <= 2000, "{}", a.to_string().len());
        assert_eq!(a["truncated"], true);
        assert_eq!(a["cut_fields"], json!(["body"]));
        assert_eq!(a["fields"]["title"], "t");
        let a = document_answer("r", "7", Some((f, 1)), &Limits::default());
        assert_eq!(a["fields"]["body"].as_str().unwrap().len(), 10_000);
        assert!(a.get("truncated").is_none());
        let a = document_answer("r", "8", None, &limits);
        assert_eq!(a["found"], false);
    }
}
