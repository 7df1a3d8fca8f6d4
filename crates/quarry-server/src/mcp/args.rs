//! What may an agent pass to each tool, and which Elasticsearch search body does it become?
//!
//! Every tool's arguments are a struct here: serde reads them (an unknown or mistyped argument
//! is a tool error naming it, raised by `rmcp` before the tool runs) and schemars writes the
//! JSON schema the host shows the model. The checks that serde cannot express (one query
//! form, the size cap, a vector or a question) are in the `to_body` methods, whose output is
//! the same `_search` / `_count` body the HTTP server runs, so the tools rank exactly as
//! `quarry serve` does.
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::Limits;

/// Arguments of `get_mapping` and other one-index tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexArg {
    /// The index name, as `list_indices` gives it.
    pub index: String,
}

/// Arguments of `search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// A query in Lucene's classic syntax, e.g. `oil AND title:prices`, `"crude oil"~2`,
    /// `year:[1990 TO 2000]`. Give this or `query_dsl`; neither matches every document.
    pub query: Option<String>,
    /// An Elasticsearch query DSL object (the value of `query` in a `_search` body), e.g.
    /// `{"bool": {"must": {"match": {"body": "oil"}}, "filter": {"term": {"topics": "crude"}}}}`.
    pub query_dsl: Option<Map<String, Value>>,
    /// Fields searched by terms of `query` that name no field (default: every text field).
    pub default_fields: Option<Vec<String>>,
    /// Number of hits (default 10; at most the size cap in the tool description).
    pub size: Option<usize>,
    /// Hits to skip first, for paging (default 0).
    pub from: Option<usize>,
    /// Stored fields to return per hit (`*` patterns allowed; default all, `[]` none).
    pub fields: Option<Vec<String>>,
    /// Fields to highlight: each hit then carries up to 5 snippets per field with the matches
    /// in `<em>`…`</em>`.
    pub highlight: Option<Vec<String>>,
}

/// Arguments of `count`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// A query in Lucene's classic syntax; give this or `query_dsl` (neither counts all).
    pub query: Option<String>,
    /// An Elasticsearch query DSL object (the value of `query` in a `_count` body).
    pub query_dsl: Option<Map<String, Value>>,
    /// Fields searched by terms of `query` that name no field (default: every text field).
    pub default_fields: Option<Vec<String>>,
}

/// Arguments of `get_document`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// The document's id (a hit's `id`).
    pub id: String,
    /// Stored fields to return (`*` patterns allowed; default all).
    pub fields: Option<Vec<String>>,
}

/// Arguments of `semantic_search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// The vector field searched (a `dense_vector` in `get_mapping`).
    pub field: String,
    /// A question in plain words, embedded by the field's embedding model. Give this or
    /// `vector`.
    pub question: Option<String>,
    /// The query vector itself (as many numbers as the field's `dims`).
    pub vector: Option<Vec<f32>>,
    /// Number of nearest documents returned (default 10; at most the size cap).
    pub k: Option<usize>,
    /// Candidates examined per segment by the graph search (default 1.5 k; more is slower
    /// and more exact).
    pub num_candidates: Option<usize>,
    /// Only documents matching this may be hits: a Lucene query string or a query DSL object.
    pub filter: Option<Value>,
    /// Stored fields to return per hit (`*` patterns allowed; default all, `[]` none).
    pub fields: Option<Vec<String>>,
}

/// Arguments of `hybrid_search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HybridArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// The vector field searched (a `dense_vector` in `get_mapping`).
    pub field: String,
    /// A question in plain words: its words are the BM25 side (unless `query` is given) and
    /// its embedding the kNN side (unless `vector` is given).
    pub question: Option<String>,
    /// The BM25 side as a Lucene query string, instead of the question's words.
    pub query: Option<String>,
    /// The kNN side's query vector, instead of the question's embedding.
    pub vector: Option<Vec<f32>>,
    /// Number of hits (default 10; at most the size cap).
    pub size: Option<usize>,
    /// Nearest documents the kNN side ranks (default: `size`).
    pub k: Option<usize>,
    /// Candidates examined per segment by the graph search (default 1.5 k).
    pub num_candidates: Option<usize>,
    /// Only documents matching this may be hits (both sides): a Lucene query string or a
    /// query DSL object.
    pub filter: Option<Value>,
    /// Hits of each side fused (default: max(size, 10)).
    pub rank_window_size: Option<usize>,
    /// RRF's constant: a hit scores Σ 1 / (rank_constant + rank) (default 60).
    pub rank_constant: Option<u32>,
    /// Fields searched by the BM25 side (default: every text field).
    pub default_fields: Option<Vec<String>>,
    /// Stored fields to return per hit (`*` patterns allowed; default all, `[]` none).
    pub fields: Option<Vec<String>>,
}

/// One document for `index_documents`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocInput {
    /// The document's id; an existing document with this id is replaced. Generated when absent.
    pub id: Option<String>,
    /// The document's fields, as the index's mapping declares them.
    pub source: Map<String, Value>,
}

/// Arguments of `index_documents`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexDocsArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// The documents (at most 10,000 per call).
    pub documents: Vec<DocInput>,
    /// Make the documents searchable before answering (default true).
    pub refresh: Option<bool>,
}

/// Arguments of `delete_documents`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteDocsArgs {
    /// The index name, as `list_indices` gives it.
    pub index: String,
    /// Ids of the documents to delete (at most 10,000 per call).
    pub ids: Vec<String>,
    /// Make the deletes visible to searches before answering (default true).
    pub refresh: Option<bool>,
}

/// Arguments of `create_index`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateIndexArgs {
    /// The new index's name: lowercase letters, digits, `-`, `_`, `.`, `+`.
    pub index: String,
    /// Elasticsearch mappings, e.g. `{"properties": {"title": {"type": "text"}, "year":
    /// {"type": "integer"}, "v": {"type": "dense_vector", "dims": 384}}}`.
    pub mappings: Map<String, Value>,
}

/// Turns `(field, question)` into a query vector, or says why it cannot.
pub type Embed = dyn Fn(&str, &str) -> Result<Vec<f32>, String>;

/// Most documents or ids one write call takes (a bigger batch is a tool error, not a long
/// stall of the session).
pub const MAX_WRITE_BATCH: usize = 10_000;

/// The one query a `search` or `count` names: Lucene syntax, query DSL, or all documents.
fn query_of(
    query: Option<&str>,
    dsl: Option<&Map<String, Value>>,
    default_fields: Option<&[String]>,
) -> Result<Value, String> {
    match (query, dsl) {
        (Some(_), Some(_)) => {
            Err("give either `query` (Lucene syntax) or `query_dsl`, not both".into())
        }
        (Some(q), None) => Ok(query_string(q, default_fields)),
        (None, Some(d)) => {
            if default_fields.is_some() {
                return Err(
                    "`default_fields` applies to `query` (Lucene syntax), not to `query_dsl`"
                        .into(),
                );
            }
            Ok(Value::Object(d.clone()))
        }
        (None, None) => Ok(json!({"match_all": {}})),
    }
}

/// A Lucene query string as query DSL, over `fields` when given.
fn query_string(q: &str, fields: Option<&[String]>) -> Value {
    let mut qs = json!({"query": q});
    if let Some(f) = fields {
        qs["fields"] = json!(f);
    }
    json!({"query_string": qs})
}

/// A filter given as a Lucene string or a query DSL object.
fn filter_of(v: &Value) -> Result<Value, String> {
    match v {
        Value::String(s) => Ok(query_string(s, None)),
        Value::Object(_) => Ok(v.clone()),
        other => Err(format!(
            "`filter` must be a Lucene query string or a query DSL object, not {other}"
        )),
    }
}

/// Plain words as a Lucene query that matches any of them: every character of the classic
/// syntax escaped and the operator words lowercased (the analyzer lowercases them anyway).
pub fn words_query(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if matches!(word, "AND" | "OR" | "NOT" | "TO") {
            out.push_str(&word.to_ascii_lowercase());
            continue;
        }
        for c in word.chars() {
            if "+-&|!(){}[]^\"~*?:\\/".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

/// `_source` for a list of wanted fields (`None`: all, `[]`: none).
fn source_of(fields: Option<&[String]>) -> Value {
    match fields {
        None => json!(true),
        Some([]) => json!(false),
        Some(f) => json!(f),
    }
}

/// A result count within the size cap, named `what` in the error.
fn capped(n: Option<usize>, what: &str, limits: &Limits) -> Result<usize, String> {
    let n = n.unwrap_or(10);
    if n > limits.max_size {
        return Err(format!(
            "`{what}` is {n}, over this server's cap of {}: ask for fewer hits (and page with `from`)",
            limits.max_size
        ));
    }
    Ok(n)
}

impl SearchArgs {
    /// The `_search` body.
    pub fn to_body(&self, limits: &Limits) -> Result<Value, String> {
        let size = capped(self.size, "size", limits)?;
        let query = query_of(
            self.query.as_deref(),
            self.query_dsl.as_ref(),
            self.default_fields.as_deref(),
        )?;
        let mut body = json!({
            "query": query,
            "size": size,
            "from": self.from.unwrap_or(0),
            "track_total_hits": true,
            "_source": source_of(self.fields.as_deref()),
        });
        if let Some(h) = &self.highlight {
            if h.is_empty() {
                return Err("`highlight` names no field: leave it out or list fields".into());
            }
            let fields: Map<String, Value> = h.iter().map(|f| (f.clone(), json!({}))).collect();
            body["highlight"] = json!({"fields": fields});
        }
        Ok(body)
    }
}

impl CountArgs {
    /// The `_count` body.
    pub fn to_body(&self) -> Result<Value, String> {
        let query = query_of(
            self.query.as_deref(),
            self.query_dsl.as_ref(),
            self.default_fields.as_deref(),
        )?;
        Ok(json!({"query": query}))
    }
}

/// The query vector: the one given, or the question's embedding.
fn vector_of(
    field: &str,
    question: Option<&str>,
    vector: Option<&[f32]>,
    embed: &Embed,
) -> Result<Vec<f32>, String> {
    match (vector, question) {
        (Some([]), _) => Err("`vector` is empty".into()),
        (Some(v), _) => Ok(v.to_vec()),
        (None, Some(q)) => embed(field, q),
        (None, None) => Err("give `question` (text) or `vector` (numbers)".into()),
    }
}

/// A `knn` section.
fn knn_section(
    field: &str,
    vector: Vec<f32>,
    k: usize,
    num_candidates: Option<usize>,
    filter: Option<&Value>,
) -> Result<Value, String> {
    if k == 0 {
        return Err("`k` must be at least 1".into());
    }
    let mut knn = json!({"field": field, "query_vector": vector, "k": k});
    if let Some(n) = num_candidates {
        knn["num_candidates"] = json!(n);
    }
    if let Some(f) = filter {
        knn["filter"] = filter_of(f)?;
    }
    Ok(knn)
}

impl SemanticArgs {
    /// The `_search` body (a `knn` section); `embed` turns a question into a vector.
    pub fn to_body(&self, limits: &Limits, embed: &Embed) -> Result<Value, String> {
        if self.question.is_some() && self.vector.is_some() {
            return Err("give either `question` or `vector`, not both".into());
        }
        let k = capped(self.k, "k", limits)?;
        let vector = vector_of(
            &self.field,
            self.question.as_deref(),
            self.vector.as_deref(),
            embed,
        )?;
        let knn = knn_section(
            &self.field,
            vector,
            k,
            self.num_candidates,
            self.filter.as_ref(),
        )?;
        Ok(json!({
            "knn": knn,
            "size": k,
            "_source": source_of(self.fields.as_deref()),
        }))
    }
}

impl HybridArgs {
    /// The `_search` body: an `rrf` retriever over a `standard` (BM25) and a `knn` retriever.
    pub fn to_body(&self, limits: &Limits, embed: &Embed) -> Result<Value, String> {
        let size = capped(self.size, "size", limits)?;
        if size == 0 {
            return Err("`size` must be at least 1".into());
        }
        let k = capped(Some(self.k.unwrap_or(size)), "k", limits)?;
        let text = match (&self.query, &self.question) {
            (Some(q), _) => q.clone(),
            (None, Some(q)) => words_query(q),
            (None, None) => {
                return Err("give `question` (or `query` for the BM25 side)".into());
            }
        };
        if text.trim().is_empty() {
            return Err("the BM25 side is empty: give words in `question` or `query`".into());
        }
        let vector = vector_of(
            &self.field,
            self.question.as_deref(),
            self.vector.as_deref(),
            embed,
        )?;
        let mut standard = json!({"query": query_string(&text, self.default_fields.as_deref())});
        if let Some(f) = &self.filter {
            standard["filter"] = filter_of(f)?;
        }
        let knn = knn_section(
            &self.field,
            vector,
            k,
            self.num_candidates,
            self.filter.as_ref(),
        )?;
        let window = self.rank_window_size.unwrap_or(size.max(10));
        let mut rrf = json!({
            "retrievers": [{"standard": standard}, {"knn": knn}],
            "rank_window_size": window,
        });
        if let Some(c) = self.rank_constant {
            rrf["rank_constant"] = json!(c);
        }
        Ok(json!({
            "retriever": {"rrf": rrf},
            "size": size,
            "_source": source_of(self.fields.as_deref()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    fn no_model(field: &str, _q: &str) -> Result<Vec<f32>, String> {
        Err(format!(
            "field {field} has no embedding model; pass `vector`"
        ))
    }

    fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn search_arguments_become_a_search_body() {
        let a: SearchArgs = parse(json!({"index": "r", "query": "oil AND prices", "size": 3,
            "fields": ["title"], "highlight": ["body"]}))
        .unwrap();
        let b = a.to_body(&limits()).unwrap();
        assert_eq!(
            b["query"],
            json!({"query_string": {"query": "oil AND prices"}})
        );
        assert_eq!(b["size"], 3);
        assert_eq!(b["_source"], json!(["title"]));
        assert_eq!(b["highlight"], json!({"fields": {"body": {}}}));
        assert_eq!(b["track_total_hits"], true);

        let a: SearchArgs =
            parse(json!({"index": "r", "query_dsl": {"term": {"topics": "crude"}}, "fields": []}))
                .unwrap();
        let b = a.to_body(&limits()).unwrap();
        assert_eq!(b["query"], json!({"term": {"topics": "crude"}}));
        assert_eq!(b["_source"], false);
        assert_eq!(b["size"], 10);

        let a: SearchArgs = parse(json!({"index": "r"})).unwrap();
        assert_eq!(
            a.to_body(&limits()).unwrap()["query"],
            json!({"match_all": {}})
        );
    }

    #[test]
    fn bad_search_arguments_are_refused_by_name() {
        let e = parse::<SearchArgs>(json!({"index": "r", "qeury": "oil"})).unwrap_err();
        assert!(e.contains("qeury"), "{e}");
        let e = parse::<SearchArgs>(json!({"index": "r", "size": "ten"})).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = parse::<SearchArgs>(json!({"index": "r", "size": -1})).unwrap_err();
        assert!(e.contains("invalid value"), "{e}");
        let a: SearchArgs =
            parse(json!({"index": "r", "query": "a", "query_dsl": {"match_all": {}}})).unwrap();
        assert!(a.to_body(&limits()).unwrap_err().contains("not both"));
        let a: SearchArgs = parse(json!({"index": "r", "highlight": []})).unwrap();
        assert!(a.to_body(&limits()).unwrap_err().contains("highlight"));
        let a: SearchArgs = parse(
            json!({"index": "r", "query_dsl": {"match_all": {}}, "default_fields": ["body"]}),
        )
        .unwrap();
        assert!(a.to_body(&limits()).unwrap_err().contains("default_fields"));
    }

    #[test]
    fn the_size_cap_is_enforced_and_named() {
        let l = Limits {
            max_size: 50,
            ..Limits::default()
        };
        let a: SearchArgs = parse(json!({"index": "r", "size": 50})).unwrap();
        assert_eq!(a.to_body(&l).unwrap()["size"], 50);
        let a: SearchArgs = parse(json!({"index": "r", "size": 51})).unwrap();
        let e = a.to_body(&l).unwrap_err();
        assert!(e.contains("51") && e.contains("cap of 50"), "{e}");
        let a: SemanticArgs =
            parse(json!({"index": "r", "field": "v", "vector": [1.0], "k": 51})).unwrap();
        assert!(a.to_body(&l, &no_model).unwrap_err().contains("`k` is 51"));
        let a: HybridArgs = parse(
            json!({"index": "r", "field": "v", "question": "x", "vector": [1.0], "size": 99}),
        )
        .unwrap();
        assert!(a
            .to_body(&l, &no_model)
            .unwrap_err()
            .contains("`size` is 99"));
    }

    #[test]
    fn semantic_search_needs_a_vector_or_a_model() {
        let a: SemanticArgs = parse(json!({"index": "r", "field": "v", "vector": [0.5, 1.0],
            "k": 3, "num_candidates": 20, "filter": "topics:crude", "fields": ["title"]}))
        .unwrap();
        let b = a.to_body(&limits(), &no_model).unwrap();
        assert_eq!(b["knn"]["query_vector"], json!([0.5, 1.0]));
        assert_eq!(b["knn"]["k"], 3);
        assert_eq!(b["knn"]["num_candidates"], 20);
        assert_eq!(
            b["knn"]["filter"],
            json!({"query_string": {"query": "topics:crude"}})
        );
        assert_eq!(b["size"], 3);
        let a: SemanticArgs =
            parse(json!({"index": "r", "field": "v", "question": "oil?"})).unwrap();
        let e = a.to_body(&limits(), &no_model).unwrap_err();
        assert_eq!(e, "field v has no embedding model; pass `vector`");
        let a: SemanticArgs = parse(json!({"index": "r", "field": "v"})).unwrap();
        assert!(a
            .to_body(&limits(), &no_model)
            .unwrap_err()
            .contains("question"));
        let a: SemanticArgs =
            parse(json!({"index": "r", "field": "v", "vector": [1.0], "filter": 3})).unwrap();
        assert!(a
            .to_body(&limits(), &no_model)
            .unwrap_err()
            .contains("filter"));
        let a: SemanticArgs =
            parse(json!({"index": "r", "field": "v", "vector": [1.0], "k": 0})).unwrap();
        assert!(a
            .to_body(&limits(), &no_model)
            .unwrap_err()
            .contains("at least 1"));
    }

    #[test]
    fn hybrid_search_fuses_bm25_and_knn_with_rrf() {
        let a: HybridArgs = parse(
            json!({"index": "r", "field": "v", "question": "oil (prices)?",
            "vector": [1.0, 0.0], "size": 5, "filter": {"term": {"topics": "crude"}}}),
        )
        .unwrap();
        let b = a.to_body(&limits(), &no_model).unwrap();
        let rrf = &b["retriever"]["rrf"];
        assert_eq!(rrf["rank_window_size"], 10);
        assert_eq!(
            rrf["retrievers"][0]["standard"]["query"]["query_string"]["query"],
            "oil \\(prices\\)\\?"
        );
        assert_eq!(
            rrf["retrievers"][0]["standard"]["filter"],
            json!({"term": {"topics": "crude"}})
        );
        assert_eq!(rrf["retrievers"][1]["knn"]["k"], 5);
        assert_eq!(b["size"], 5);
        // Without a vector the question must be embedded.
        let a: HybridArgs = parse(json!({"index": "r", "field": "v", "question": "oil"})).unwrap();
        assert!(a
            .to_body(&limits(), &no_model)
            .unwrap_err()
            .contains("embedding model"));
    }

    #[test]
    fn plain_words_are_escaped_for_lucene() {
        assert_eq!(words_query("What's AND up?  a:b"), "What's and up\\? a\\:b");
        assert_eq!(words_query("-x +y \"z\""), "\\-x \\+y \\\"z\\\"");
        assert_eq!(words_query("   "), "");
    }
}
