//! What does an Elasticsearch query DSL object mean in quarry's `Query` AST?
//!
//! Supported: `match_all`, `match_none`, `match` (operator, minimum_should_match, fuzziness,
//! prefix_length, max_expansions, fuzzy_transpositions), `match_phrase` (slop),
//! `match_phrase_prefix` (slop, max_expansions, zero_terms_query), `multi_match`
//! (types `best_fields` — a dis_max with `tie_breaker` —, `most_fields`, `phrase`,
//! `phrase_prefix`), `term`,
//! `terms` and `ids` (constant score 1, as Elasticsearch), `exists`, `prefix`, `wildcard`,
//! `regexp`, `fuzzy` (fuzziness incl. AUTO, prefix_length, max_expansions, transpositions),
//! `constant_score`, `dis_max`, `boosting`, `bool` (must, should, must_not, filter,
//! minimum_should_match), `query_string` (Lucene syntax through the library's parser) and
//! `simple_query_string` (Lucene's `SimpleQueryParser`: fields, default_operator, flags,
//! analyze_wildcard, fuzzy_max_expansions, fuzzy_prefix_length, fuzzy_transpositions),
//! `range` (gt/gte/lt/lte, format, time_zone, date math). Every query takes `boost`. Anything
//! else is a 400 naming it.
use quarry::query::ast::{FUZZY_MAX_EXPANSIONS, PHRASE_PREFIX_MAX_EXPANSIONS};
use quarry::query::{Clause, Occur, Operator, Query, SimpleFlags};
use quarry::{FieldType, Schema, Searcher};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::mapping::ID_FIELD;

/// The deepest nesting of compound queries accepted.
pub const MAX_DEPTH: usize = 32;
/// The most clauses one compound query (or one `terms`/`ids` list) may have.
pub const MAX_CLAUSES: usize = 1024;

/// Translates the value of a search body's `query` key.
pub fn translate(v: &Value, searcher: &Searcher) -> Result<Query, ApiError> {
    Translator { searcher }.query(v, 0)
}

struct Translator<'a> {
    searcher: &'a Searcher,
}

fn parsing(reason: impl Into<String>) -> ApiError {
    ApiError::parsing(reason)
}

/// The single `(key, value)` of an object like `{"match": {...}}`.
fn single<'v>(v: &'v Value, what: &str) -> Result<(&'v String, &'v Value), ApiError> {
    let obj = v
        .as_object()
        .ok_or_else(|| parsing(format!("[{what}] must be an object")))?;
    let mut it = obj.iter();
    match (it.next(), it.next()) {
        (Some(kv), None) => Ok(kv),
        (None, _) => Err(parsing(format!("[{what}] is empty: it needs one entry"))),
        (Some(_), Some((k, _))) => Err(parsing(format!(
            "[{what}] has more than one entry (unexpected [{k}])"
        ))),
    }
}

fn obj<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, ApiError> {
    v.as_object()
        .ok_or_else(|| parsing(format!("[{what}] must be an object")))
}

/// A scalar (string, number, boolean) as text.
fn scalar(v: &Value, what: &str) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(parsing(format!(
            "[{what}] must be a string, number or boolean"
        ))),
    }
}

fn boost_of(m: &Map<String, Value>, what: &str) -> Result<Option<f32>, ApiError> {
    match m.get("boost") {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(b) if b.is_finite() && b >= 0.0 && b <= f32::MAX as f64 => Ok(Some(b as f32)),
            _ => Err(parsing(format!(
                "[{what}] boost must be a finite number >= 0"
            ))),
        },
        Some(_) => Err(parsing(format!("[{what}] boost must be a number"))),
    }
}

fn boosted(q: Query, boost: Option<f32>) -> Query {
    match boost {
        Some(b) if b != 1.0 => Query::boosted(q, b),
        _ => q,
    }
}

fn check_keys(m: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), ApiError> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(parsing(format!("[{what}] query does not support [{k}]")));
        }
    }
    Ok(())
}

/// Elasticsearch's `minimum_should_match` against `optional` clauses: `N`, `-N`, `P%`, `-P%`.
pub fn min_should_match(v: &Value, optional: usize) -> Result<u32, ApiError> {
    let bad = || {
        parsing(format!(
            "minimum_should_match {v} is not supported (use N, -N, P% or -P%)"
        ))
    };
    let text = scalar(v, "minimum_should_match")?;
    let t = text.trim();
    let n = optional as i64;
    let r = if let Some(p) = t.strip_suffix('%') {
        let p: i64 = p.parse().map_err(|_| bad())?;
        if p < 0 {
            n - (n * -p) / 100
        } else {
            (n * p) / 100
        }
    } else {
        let k: i64 = t.parse().map_err(|_| bad())?;
        if k < 0 {
            n + k
        } else {
            k
        }
    };
    Ok(r.clamp(0, u32::MAX as i64) as u32)
}

impl Translator<'_> {
    fn schema(&self) -> &Schema {
        self.searcher.schema()
    }

    fn query(&self, v: &Value, depth: usize) -> Result<Query, ApiError> {
        if depth > MAX_DEPTH {
            return Err(parsing(format!(
                "queries are nested more than {MAX_DEPTH} levels deep"
            )));
        }
        let (kind, body) = single(v, "query")?;
        match kind.as_str() {
            "match_all" => {
                let m = obj(body, kind)?;
                check_keys(m, &["boost", "_name"], kind)?;
                Ok(boosted(Query::MatchAll, boost_of(m, kind)?))
            }
            "match_none" => Ok(Query::MatchNone),
            "match" => self.match_query(body, false),
            "match_phrase" => self.match_query(body, true),
            "match_phrase_prefix" => self.match_phrase_prefix(body),
            "multi_match" => self.multi_match(body),
            "term" => self.term(body),
            "terms" => self.terms(body),
            "ids" => self.ids(body),
            "exists" => self.exists(body),
            "prefix" => self.prefix(body),
            "bool" => self.bool_query(body, depth),
            "query_string" => self.query_string(body),
            "simple_query_string" => self.simple_query_string(body),
            "range" => self.range(body),
            "wildcard" => self.wildcard(body),
            "regexp" => self.regexp(body),
            "fuzzy" => self.fuzzy(body),
            "constant_score" => self.constant_score(body, depth),
            "dis_max" => self.dis_max(body, depth),
            "boosting" => self.boosting(body, depth),
            "semantic" => Err(parsing(
                "[semantic] is supported as the whole [query] of a search or of a [standard] retriever, not inside another query",
            )),
            other => Err(parsing(format!("unknown query [{other}]"))),
        }
    }

    /// `{"field": value}` or `{"field": {"<main>": value, ...options}}`.
    fn field_form<'v>(
        &self,
        body: &'v Value,
        kind: &str,
        main: &str,
        options: &[&str],
    ) -> Result<(&'v String, Map<String, Value>), ApiError> {
        let (field, spec) = single(body, kind)?;
        let m = match spec {
            Value::Object(m) => {
                let mut allowed = vec![main, "boost", "_name"];
                allowed.extend_from_slice(options);
                check_keys(m, &allowed, kind)?;
                if !m.contains_key(main) {
                    return Err(parsing(format!(
                        "[{kind}] query on [{field}] needs [{main}]"
                    )));
                }
                m.clone()
            }
            other => {
                let mut m = Map::new();
                m.insert(main.to_string(), other.clone());
                m
            }
        };
        Ok((field, m))
    }

    /// Analyzed tokens of `text` for `field` (`None`: the field does not exist).
    fn tokens(&self, field: &str, text: &str) -> Result<Option<Vec<String>>, ApiError> {
        let schema = self.schema();
        let Some(id) = schema.field_id(field) else {
            return Ok(None);
        };
        Ok(Some(match schema.field(id).field_type {
            FieldType::Text => {
                let mut out = Vec::new();
                if let Some(a) = schema.analyzer(id) {
                    a.for_each_token(text, &mut |t| out.push(t.to_string()));
                }
                out
            }
            FieldType::Integer => vec![self.int_term(field, text)?],
            _ => vec![text.to_string()],
        }))
    }

    fn int_term(&self, field: &str, text: &str) -> Result<String, ApiError> {
        text.trim()
            .parse::<i64>()
            .map(|i| i.to_string())
            .map_err(|_| {
                ApiError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "number_format_exception",
                    format!("field [{field}]: [{text}] is not an integer"),
                )
            })
    }

    fn match_query(&self, body: &Value, phrase: bool) -> Result<Query, ApiError> {
        let kind = if phrase { "match_phrase" } else { "match" };
        let opts: &[&str] = if phrase {
            &["slop", "analyzer"]
        } else {
            &[
                "operator",
                "minimum_should_match",
                "analyzer",
                "fuzziness",
                "prefix_length",
                "max_expansions",
                "fuzzy_transpositions",
            ]
        };
        let (field, m) = self.field_form(body, kind, "query", opts)?;
        let text = scalar(&m["query"], kind)?;
        let boost = boost_of(&m, kind)?;
        if let Some(a) = m.get("analyzer") {
            if a != "standard" {
                return Err(ApiError::unsupported(format!("analyzer {a}")));
            }
        }
        let q = if phrase {
            let slop = match m.get("slop") {
                None => 0,
                Some(v) => v
                    .as_u64()
                    .filter(|s| *s <= u32::MAX as u64)
                    .ok_or_else(|| parsing("[match_phrase] slop must be a non-negative integer"))?
                    as u32,
            };
            self.phrase(field, &text, slop)?
        } else {
            let and = match m.get("operator").map(|o| scalar(o, "operator")) {
                None => false,
                Some(o) => match o?.to_ascii_lowercase().as_str() {
                    "or" => false,
                    "and" => true,
                    other => {
                        return Err(parsing(format!(
                            "[match] operator [{other}] is not one of and, or"
                        )))
                    }
                },
            };
            let fuzzy = match m.get("fuzziness") {
                None => None,
                Some(f) => Some(FuzzyOptions {
                    fuzziness: scalar(f, "match.fuzziness")?,
                    prefix_length: uint_option(&m, "prefix_length", "match", 0)?,
                    max_expansions: uint_option(
                        &m,
                        "max_expansions",
                        "match",
                        FUZZY_MAX_EXPANSIONS,
                    )?,
                    transpositions: bool_option(&m, "fuzzy_transpositions", "match", true)?,
                }),
            };
            let q = self.terms_of(field, &text, and, m.get("minimum_should_match"))?;
            match fuzzy {
                Some(opts) => fuzzify(q, &opts)?,
                None => q,
            }
        };
        Ok(boosted(q, boost))
    }

    /// A `match` on one field: one term → term query, several → boolean.
    fn terms_of(
        &self,
        field: &str,
        text: &str,
        and: bool,
        msm: Option<&Value>,
    ) -> Result<Query, ApiError> {
        let Some(tokens) = self.tokens(field, text)? else {
            return Ok(Query::MatchNone);
        };
        if tokens.len() > MAX_CLAUSES {
            return Err(too_many(field));
        }
        match tokens.len() {
            0 => Ok(Query::MatchNone),
            1 if msm.is_none() => Ok(Query::term(field, tokens[0].clone())),
            n => {
                let occur = if and { Occur::Must } else { Occur::Should };
                let clauses = tokens
                    .into_iter()
                    .map(|t| Clause::new(occur, Query::term(field, t)))
                    .collect();
                let minimum_should_match = match (msm, and) {
                    (Some(v), false) => min_should_match(v, n)?,
                    _ => 0,
                };
                Ok(Query::Boolean {
                    clauses,
                    minimum_should_match,
                })
            }
        }
    }

    fn phrase(&self, field: &str, text: &str, slop: u32) -> Result<Query, ApiError> {
        let Some(tokens) = self.tokens(field, text)? else {
            return Ok(Query::MatchNone);
        };
        if tokens.len() > MAX_CLAUSES {
            return Err(too_many(field));
        }
        Ok(match tokens.len() {
            0 => Query::MatchNone,
            1 => Query::term(field, tokens[0].clone()),
            _ => Query::Phrase {
                field: field.to_string(),
                terms: tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (i as u32, t))
                    .collect(),
                slop,
            },
        })
    }

    /// Elasticsearch's `match_phrase_prefix`: the analyzed text as a phrase whose last word is
    /// a prefix, expanded when the query runs ([`Query::PhrasePrefix`]); no token at all is
    /// `zero_terms_query` (`none`, the default, or `all`).
    fn match_phrase_prefix(&self, body: &Value) -> Result<Query, ApiError> {
        let kind = "match_phrase_prefix";
        let opts = ["slop", "max_expansions", "analyzer", "zero_terms_query"];
        let (field, m) = self.field_form(body, kind, "query", &opts)?;
        let text = scalar(&m["query"], kind)?;
        let boost = boost_of(&m, kind)?;
        if let Some(a) = m.get("analyzer") {
            if a != "standard" {
                return Err(ApiError::unsupported(format!("analyzer {a}")));
            }
        }
        let slop = uint_option(&m, "slop", kind, 0)?;
        let max_expansions = uint_option(&m, "max_expansions", kind, PHRASE_PREFIX_MAX_EXPANSIONS)?;
        if max_expansions as usize > MAX_CLAUSES {
            return Err(parsing(format!(
                "[{kind}] max_expansions must be at most {MAX_CLAUSES}, got {max_expansions}"
            )));
        }
        let zero_terms_all = match m
            .get("zero_terms_query")
            .map(|z| scalar(z, "zero_terms_query"))
        {
            None => false,
            Some(z) => match z?.to_ascii_lowercase().as_str() {
                "none" => false,
                "all" => true,
                other => {
                    return Err(parsing(format!(
                        "[{kind}] zero_terms_query [{other}] is not one of none, all"
                    )))
                }
            },
        };
        let Some(tokens) = self.tokens(field, &text)? else {
            return Ok(Query::MatchNone);
        };
        if tokens.len() > MAX_CLAUSES {
            return Err(too_many(field));
        }
        let q = if tokens.is_empty() {
            if zero_terms_all {
                Query::MatchAll
            } else {
                Query::MatchNone
            }
        } else {
            Query::PhrasePrefix {
                field: field.to_string(),
                terms: tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (i as u32, vec![t]))
                    .collect(),
                slop,
                max_expansions,
            }
        };
        Ok(boosted(q, boost))
    }

    fn multi_match(&self, body: &Value) -> Result<Query, ApiError> {
        let m = obj(body, "multi_match")?;
        check_keys(
            m,
            &[
                "query",
                "fields",
                "type",
                "operator",
                "minimum_should_match",
                "tie_breaker",
                "slop",
                "fuzziness",
                "prefix_length",
                "max_expansions",
                "fuzzy_transpositions",
                "boost",
                "_name",
            ],
            "multi_match",
        )?;
        let text = scalar(
            m.get("query")
                .ok_or_else(|| parsing("[multi_match] needs [query]"))?,
            "multi_match.query",
        )?;
        let fields = self.field_list(m.get("fields"), "multi_match")?;
        let ty = m
            .get("type")
            .map(|t| scalar(t, "type"))
            .transpose()?
            .unwrap_or_else(|| "best_fields".into());
        let tie = tie_breaker(m, "multi_match")?;
        // 0: match, 1: match_phrase, 2: match_phrase_prefix on each field.
        let (per_field, dis_max) = match ty.as_str() {
            "most_fields" => (0, false),
            "best_fields" => (0, true),
            "phrase" => (1, true),
            "phrase_prefix" => (2, true),
            other => {
                return Err(ApiError::unsupported(format!(
                    "[multi_match] type [{other}]"
                )))
            }
        };
        let mut clauses = Vec::new();
        for (field, fb) in &fields {
            let mut q = Map::new();
            q.insert("query".into(), Value::String(text.clone()));
            for k in [
                "operator",
                "minimum_should_match",
                "slop",
                "fuzziness",
                "prefix_length",
                "max_expansions",
                "fuzzy_transpositions",
            ] {
                let applies = match per_field {
                    0 => k != "slop",
                    1 => k == "slop",
                    _ => k == "slop" || k == "max_expansions",
                };
                if let Some(v) = m.get(k).filter(|_| applies) {
                    q.insert(k.into(), v.clone());
                }
            }
            let mut outer = Map::new();
            outer.insert(field.clone(), Value::Object(q));
            let outer = Value::Object(outer);
            let one = match per_field {
                2 => self.match_phrase_prefix(&outer)?,
                p => self.match_query(&outer, p == 1)?,
            };
            clauses.push(Clause::new(Occur::Should, boosted(one, *fb)));
        }
        let q = if clauses.len() == 1 {
            clauses.pop().expect("one clause").query
        } else if dis_max {
            // Elasticsearch's best_fields: the best field's score plus tie_breaker times the
            // others'.
            Query::DisMax {
                queries: clauses.into_iter().map(|c| c.query).collect(),
                tie_breaker: tie,
            }
        } else {
            Query::boolean(clauses)
        };
        Ok(boosted(q, boost_of(m, "multi_match")?))
    }

    /// `["title^2", "body"]` → fields with boosts; absent → every text field.
    fn field_list(
        &self,
        v: Option<&Value>,
        what: &str,
    ) -> Result<Vec<(String, Option<f32>)>, ApiError> {
        let names: Vec<String> = match v {
            None => self
                .schema()
                .text_fields()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .map(|f| {
                    f.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| parsing(format!("[{what}] fields must be strings")))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(parsing(format!("[{what}] fields must be an array"))),
        };
        if names.is_empty() {
            return Err(parsing(format!("[{what}] needs at least one field")));
        }
        let mut out = Vec::new();
        for n in names {
            if n.contains('*') {
                return Err(ApiError::unsupported(format!("field pattern [{n}]")));
            }
            match n.split_once('^') {
                Some((f, b)) => {
                    let b: f32 = b
                        .parse()
                        .ok()
                        .filter(|b: &f32| b.is_finite() && *b >= 0.0)
                        .ok_or_else(|| parsing(format!("bad boost in field [{n}]")))?;
                    out.push((f.to_string(), Some(b)));
                }
                None => out.push((n, None)),
            }
        }
        Ok(out)
    }

    /// One exact (not analyzed) term; integer fields take integers.
    fn exact_term(&self, field: &str, value: &Value, what: &str) -> Result<Query, ApiError> {
        let text = scalar(value, what)?;
        match self.schema().field_by_name(field) {
            None => Ok(Query::MatchNone),
            Some(f) if f.field_type == FieldType::Integer => {
                Ok(Query::term(field, self.int_term(field, &text)?))
            }
            Some(_) => Ok(Query::term(field, text)),
        }
    }

    fn term(&self, body: &Value) -> Result<Query, ApiError> {
        let (field, m) = self.field_form(body, "term", "value", &["case_insensitive"])?;
        if m.get("case_insensitive") == Some(&Value::Bool(true)) {
            return Err(ApiError::unsupported("[term] case_insensitive"));
        }
        let q = self.exact_term(field, &m["value"], "term")?;
        Ok(boosted(q, boost_of(&m, "term")?))
    }

    fn terms(&self, body: &Value) -> Result<Query, ApiError> {
        let m = obj(body, "terms")?;
        let boost = boost_of(m, "terms")?;
        let mut fields = m
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "boost" | "_name"));
        let (field, values) = match (fields.next(), fields.next()) {
            (Some(kv), None) => kv,
            _ => return Err(parsing("[terms] query needs exactly one field")),
        };
        let values = values
            .as_array()
            .ok_or_else(|| parsing(format!("[terms] values of [{field}] must be an array")))?;
        let q = self.term_set(field, values, "terms")?;
        Ok(boosted(q, boost))
    }

    fn term_set(&self, field: &str, values: &[Value], what: &str) -> Result<Query, ApiError> {
        if values.len() > MAX_CLAUSES {
            return Err(too_many(field));
        }
        let clauses = values
            .iter()
            .map(|v| Ok(Clause::new(Occur::Should, self.exact_term(field, v, what)?)))
            .collect::<Result<Vec<_>, ApiError>>()?;
        // Elasticsearch scores `terms` and `ids` as a constant 1 (times the boost).
        Ok(match clauses.len() {
            0 => Query::MatchNone,
            _ => Query::ConstantScore {
                query: Box::new(Query::boolean(clauses)),
            },
        })
    }

    fn ids(&self, body: &Value) -> Result<Query, ApiError> {
        let m = obj(body, "ids")?;
        check_keys(m, &["values", "boost", "_name"], "ids")?;
        let values = m
            .get("values")
            .and_then(Value::as_array)
            .ok_or_else(|| parsing("[ids] needs an array [values]"))?;
        let q = self.term_set(ID_FIELD, values, "ids")?;
        Ok(boosted(q, boost_of(m, "ids")?))
    }

    fn exists(&self, body: &Value) -> Result<Query, ApiError> {
        let m = obj(body, "exists")?;
        check_keys(m, &["field", "boost", "_name"], "exists")?;
        let field = m
            .get("field")
            .and_then(Value::as_str)
            .ok_or_else(|| parsing("[exists] needs a string [field]"))?;
        if self.schema().field_id(field).is_none() {
            return Ok(Query::MatchNone);
        }
        // Every indexed value of a field is a term, so "some term with the empty prefix" is
        // "the field has a value"; prefix queries score a constant 1 like Elasticsearch's.
        let q = Query::Prefix {
            field: field.to_string(),
            prefix: String::new(),
        };
        Ok(boosted(q, boost_of(m, "exists")?))
    }

    /// `{"field": {"gte": .., "lt": .., "format": .., "time_zone": ..}}` (also the older
    /// `from`/`to`/`include_lower`/`include_upper`). Bounds are checked against the field's
    /// type now, so a bad bound is a 400 naming it.
    fn range(&self, body: &Value) -> Result<Query, ApiError> {
        let (field, spec) = single(body, "range")?;
        let m = obj(spec, "range")?;
        check_keys(
            m,
            &[
                "gt",
                "gte",
                "lt",
                "lte",
                "from",
                "to",
                "include_lower",
                "include_upper",
                "format",
                "time_zone",
                "relation",
                "boost",
                "_name",
            ],
            "range",
        )?;
        if let Some(r) = m.get("relation") {
            if r != "INTERSECTS" && r != "intersects" {
                return Err(ApiError::unsupported(format!(
                    "[range] relation {r} (quarry's fields hold values, not ranges: only INTERSECTS)"
                )));
            }
        }
        let text = |k: &str| -> Result<Option<String>, ApiError> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => scalar(v, &format!("range.{field}.{k}")).map(Some),
            }
        };
        let flag = |k: &str| -> Result<bool, ApiError> {
            match m.get(k) {
                None => Ok(true),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(parsing(format!("[range] {k} must be true or false"))),
            }
        };
        let mut lower = text("from")?.map(|t| (t, flag("include_lower")));
        let mut upper = text("to")?.map(|t| (t, flag("include_upper")));
        if let Some(t) = text("gte")? {
            lower = Some((t, Ok(true)));
        }
        if let Some(t) = text("gt")? {
            lower = Some((t, Ok(false)));
        }
        if let Some(t) = text("lte")? {
            upper = Some((t, Ok(true)));
        }
        if let Some(t) = text("lt")? {
            upper = Some((t, Ok(false)));
        }
        let lower = lower.map(|(t, i)| i.map(|i| (t, i))).transpose()?;
        let upper = upper.map(|(t, i)| i.map(|i| (t, i))).transpose()?;
        let format = text("format")?;
        let time_zone = text("time_zone")?;
        let Some(id) = self.schema().field_id(field) else {
            return Ok(Query::MatchNone);
        };
        let ft = self.schema().field(id).field_type;
        if (format.is_some() || time_zone.is_some()) && ft != FieldType::Date {
            return Err(parsing(format!(
                "[range] format and time_zone apply to date fields; [{field}] is a {ft} field"
            )));
        }
        let q = Query::Range {
            field: field.clone(),
            lower: lower.as_ref().map(|(t, _)| t.clone()),
            upper: upper.as_ref().map(|(t, _)| t.clone()),
            include_lower: lower.as_ref().is_none_or(|(_, i)| *i),
            include_upper: upper.as_ref().is_none_or(|(_, i)| *i),
            format,
            time_zone,
        };
        // Resolved once here so that a bound the field cannot read is a 400 naming it.
        self.searcher
            .check_query(&q)
            .map_err(|e| parsing(e.to_string()))?;
        Ok(boosted(q, boost_of(m, "range")?))
    }

    fn prefix(&self, body: &Value) -> Result<Query, ApiError> {
        let (field, m) = self.field_form(body, "prefix", "value", &["rewrite"])?;
        let value = scalar(&m["value"], "prefix")?;
        let q = if self.schema().field_id(field).is_none() {
            Query::MatchNone
        } else {
            Query::Prefix {
                field: field.to_string(),
                prefix: value,
            }
        };
        Ok(boosted(q, boost_of(&m, "prefix")?))
    }

    /// `{"field": {"value": "pat*"}}`: Lucene's `WildcardQuery`, constant score. The pattern
    /// is matched against the terms as indexed (not analyzed).
    fn wildcard(&self, body: &Value) -> Result<Query, ApiError> {
        let body = alias_main(body, "wildcard", "wildcard", "value");
        let (field, m) =
            self.field_form(&body, "wildcard", "value", &["rewrite", "case_insensitive"])?;
        no_case_insensitive(&m, "wildcard")?;
        constant_rewrite(&m, "wildcard")?;
        let pattern = scalar(&m["value"], "wildcard")?;
        quarry::search::automaton::wildcard(&pattern)
            .map_err(|e| parsing(format!("[wildcard] value [{pattern}]: {e}")))?;
        let q = self.if_mapped(field, "wildcard", || Query::Wildcard {
            field: field.to_string(),
            pattern,
        })?;
        Ok(boosted(q, boost_of(&m, "wildcard")?))
    }

    /// `{"field": {"value": "joh?n(ath[oa]n)"}}`: Lucene's `RegexpQuery` (its default flags,
    /// `ALL`), constant score.
    fn regexp(&self, body: &Value) -> Result<Query, ApiError> {
        let (field, m) = self.field_form(
            body,
            "regexp",
            "value",
            &[
                "flags",
                "max_determinized_states",
                "rewrite",
                "case_insensitive",
            ],
        )?;
        no_case_insensitive(&m, "regexp")?;
        constant_rewrite(&m, "regexp")?;
        if let Some(flags) = m.get("flags") {
            let flags = scalar(flags, "regexp.flags")?;
            if !flags.eq_ignore_ascii_case("ALL") {
                return Err(ApiError::unsupported(format!(
                    "[regexp] flags [{flags}] (only ALL, the default)"
                )));
            }
        }
        uint_option(&m, "max_determinized_states", "regexp", 10_000)?;
        let pattern = scalar(&m["value"], "regexp")?;
        quarry::search::automaton::regexp::compile(&pattern)
            .map_err(|e| parsing(format!("[regexp] value [{pattern}]: {e}")))?;
        let q = self.if_mapped(field, "regexp", || Query::Regexp {
            field: field.to_string(),
            pattern,
        })?;
        Ok(boosted(q, boost_of(&m, "regexp")?))
    }

    /// `{"field": {"value": "roam", "fuzziness": "AUTO"}}`: Lucene's `FuzzyQuery` with the
    /// top-terms blended scoring rewrite.
    fn fuzzy(&self, body: &Value) -> Result<Query, ApiError> {
        let (field, m) = self.field_form(
            body,
            "fuzzy",
            "value",
            &[
                "fuzziness",
                "prefix_length",
                "max_expansions",
                "transpositions",
                "rewrite",
            ],
        )?;
        if let Some(r) = m.get("rewrite") {
            let r = scalar(r, "fuzzy.rewrite")?;
            if !r.starts_with("top_terms_blended_freqs_") {
                return Err(ApiError::unsupported(format!("[fuzzy] rewrite [{r}]")));
            }
        }
        let value = scalar(&m["value"], "fuzzy")?;
        let opts = FuzzyOptions {
            fuzziness: match m.get("fuzziness") {
                Some(f) => scalar(f, "fuzzy.fuzziness")?,
                None => "AUTO".into(),
            },
            prefix_length: uint_option(&m, "prefix_length", "fuzzy", 0)?,
            max_expansions: uint_option(&m, "max_expansions", "fuzzy", FUZZY_MAX_EXPANSIONS)?,
            transpositions: bool_option(&m, "transpositions", "fuzzy", true)?,
        };
        let q = match self.if_mapped(field, "fuzzy", || Query::term(field, value))? {
            Query::MatchNone => Query::MatchNone,
            q => fuzzify(q, &opts)?,
        };
        Ok(boosted(q, boost_of(&m, "fuzzy")?))
    }

    /// `make()` on a text or keyword field, nothing on an unmapped one (as Elasticsearch), a
    /// 400 on a field of another type.
    fn if_mapped(
        &self,
        field: &str,
        kind: &str,
        make: impl FnOnce() -> Query,
    ) -> Result<Query, ApiError> {
        match self.schema().field_by_name(field) {
            None => Ok(Query::MatchNone),
            Some(f) if matches!(f.field_type, FieldType::Text | FieldType::Keyword) => Ok(make()),
            Some(f) => Err(parsing(format!(
                "[{kind}] query on field [{field}]: only text and keyword fields support it, and [{field}] is of type [{}]",
                f.field_type.name()
            ))),
        }
    }

    /// `{"filter": query, "boost": b}`: the filter's matches, each scored `b` (default 1).
    fn constant_score(&self, body: &Value, depth: usize) -> Result<Query, ApiError> {
        let m = obj(body, "constant_score")?;
        check_keys(m, &["filter", "boost", "_name"], "constant_score")?;
        let filter = m
            .get("filter")
            .ok_or_else(|| parsing("[constant_score] needs [filter]"))?;
        let q = Query::ConstantScore {
            query: Box::new(self.query(filter, depth + 1)?),
        };
        Ok(boosted(q, boost_of(m, "constant_score")?))
    }

    /// `{"queries": [...], "tie_breaker": t}`: Lucene's `DisjunctionMaxQuery`.
    fn dis_max(&self, body: &Value, depth: usize) -> Result<Query, ApiError> {
        let m = obj(body, "dis_max")?;
        check_keys(m, &["queries", "tie_breaker", "boost", "_name"], "dis_max")?;
        let items = m
            .get("queries")
            .and_then(Value::as_array)
            .ok_or_else(|| parsing("[dis_max] needs an array [queries]"))?;
        if items.is_empty() {
            return Err(parsing("[dis_max] [queries] is empty"));
        }
        if items.len() > MAX_CLAUSES {
            return Err(parsing(format!(
                "[dis_max] has more than {MAX_CLAUSES} queries"
            )));
        }
        let queries = items
            .iter()
            .map(|q| self.query(q, depth + 1))
            .collect::<Result<Vec<_>, _>>()?;
        let q = Query::DisMax {
            queries,
            tie_breaker: tie_breaker(m, "dis_max")?,
        };
        Ok(boosted(q, boost_of(m, "dis_max")?))
    }

    /// `{"positive": q, "negative": q, "negative_boost": f}`: `positive`, its scores times
    /// `negative_boost` where `negative` also matches.
    fn boosting(&self, body: &Value, depth: usize) -> Result<Query, ApiError> {
        let m = obj(body, "boosting")?;
        check_keys(
            m,
            &["positive", "negative", "negative_boost", "boost", "_name"],
            "boosting",
        )?;
        let need = |k: &str| {
            m.get(k)
                .ok_or_else(|| parsing(format!("[boosting] needs [{k}]")))
        };
        let negative_boost = need("negative_boost")?
            .as_f64()
            .filter(|b| b.is_finite() && *b >= 0.0 && *b <= f32::MAX as f64)
            .ok_or_else(|| parsing("[boosting] negative_boost must be a finite number >= 0"))?
            as f32;
        let q = Query::Boosting {
            positive: Box::new(self.query(need("positive")?, depth + 1)?),
            negative: Box::new(self.query(need("negative")?, depth + 1)?),
            negative_boost,
        };
        Ok(boosted(q, boost_of(m, "boosting")?))
    }

    fn bool_query(&self, body: &Value, depth: usize) -> Result<Query, ApiError> {
        let m = obj(body, "bool")?;
        check_keys(
            m,
            &[
                "must",
                "should",
                "must_not",
                "filter",
                "minimum_should_match",
                "boost",
                "_name",
            ],
            "bool",
        )?;
        let mut clauses = Vec::new();
        let mut counts = [0usize; 4];
        for (i, (key, occur)) in [
            ("must", Occur::Must),
            ("filter", Occur::Filter),
            ("should", Occur::Should),
            ("must_not", Occur::MustNot),
        ]
        .into_iter()
        .enumerate()
        {
            let items: Vec<&Value> = match m.get(key) {
                None => vec![],
                Some(Value::Array(a)) => a.iter().collect(),
                Some(v @ Value::Object(_)) => vec![v],
                Some(_) => {
                    return Err(parsing(format!(
                        "[bool] [{key}] must be a query object or an array of them"
                    )))
                }
            };
            counts[i] = items.len();
            for item in items {
                clauses.push(Clause::new(occur, self.query(item, depth + 1)?));
            }
        }
        if clauses.len() > MAX_CLAUSES {
            return Err(parsing(format!(
                "[bool] has more than {MAX_CLAUSES} clauses"
            )));
        }
        let [must, filter, should, must_not] = counts;
        let minimum_should_match = match m.get("minimum_should_match") {
            Some(v) => min_should_match(v, should)?,
            None => 0,
        };
        let q = if clauses.is_empty() {
            Query::MatchAll
        } else {
            if must + filter + should == 0 && must_not > 0 {
                // Elasticsearch: a purely negative bool matches everything else, unscored.
                clauses.push(Clause::new(Occur::Filter, Query::MatchAll));
            }
            Query::Boolean {
                clauses,
                minimum_should_match,
            }
        };
        Ok(boosted(q, boost_of(m, "bool")?))
    }

    fn query_string(&self, body: &Value) -> Result<Query, ApiError> {
        let m = obj(body, "query_string")?;
        check_keys(
            m,
            &[
                "query",
                "default_field",
                "fields",
                "default_operator",
                "boost",
                "_name",
            ],
            "query_string",
        )?;
        let text = m
            .get("query")
            .and_then(Value::as_str)
            .ok_or_else(|| parsing("[query_string] needs a string [query]"))?;
        let mut fields: Vec<(String, Option<f32>)> = match (m.get("fields"), m.get("default_field"))
        {
            (Some(f), _) => self.field_list(Some(f), "query_string")?,
            (None, Some(Value::String(f))) if f != "*" => vec![(f.clone(), None)],
            _ => vec![],
        };
        for (f, _) in &fields {
            if self.schema().field_id(f).is_none() {
                return Err(ApiError::illegal(format!(
                    "[query_string] field [{f}] is not mapped"
                )));
            }
        }
        let op = parse_operator(m.get("default_operator"))?;
        let q = lucene_syntax(self.searcher, text, &mut fields, op)?;
        Ok(boosted(q, boost_of(m, "query_string")?))
    }
}

impl Translator<'_> {
    /// `simple_query_string`: the library's `SimpleQueryParser` (never a syntax error, as in
    /// Elasticsearch), its fuzzy terms given the `fuzzy_*` options.
    fn simple_query_string(&self, body: &Value) -> Result<Query, ApiError> {
        let what = "simple_query_string";
        let m = obj(body, what)?;
        check_keys(
            m,
            &[
                "query",
                "fields",
                "default_operator",
                "flags",
                "analyze_wildcard",
                "fuzzy_max_expansions",
                "fuzzy_prefix_length",
                "fuzzy_transpositions",
                "boost",
                "_name",
            ],
            what,
        )?;
        let text = m
            .get("query")
            .and_then(Value::as_str)
            .ok_or_else(|| parsing("[simple_query_string] needs a string [query]"))?;
        let fields = self.field_list(m.get("fields"), what)?;
        for (f, _) in &fields {
            if self.schema().field_id(f).is_none() {
                return Err(ApiError::illegal(format!(
                    "[{what}] field [{f}] is not mapped"
                )));
            }
        }
        let flags = match m.get("flags") {
            None => SimpleFlags::ALL,
            Some(Value::String(s)) => SimpleFlags::parse(s).map_err(parsing)?,
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(|n| SimpleFlags::from_bits(n as u32))
                .ok_or_else(|| parsing(format!("[{what}] [flags] {n} is not a 32-bit integer")))?,
            Some(_) => return Err(parsing(format!("[{what}] [flags] must be a string"))),
        };
        let named: Vec<(&str, f32)> = fields
            .iter()
            .map(|(f, b)| (f.as_str(), b.unwrap_or(1.0)))
            .collect();
        let q = self
            .searcher
            .simple_query_parser(&named)?
            .with_default_operator(parse_operator(m.get("default_operator"))?)
            .with_flags(flags)
            .with_analyze_wildcard(bool_option(m, "analyze_wildcard", what, false)?)
            .with_fuzzy_options(
                uint_option(m, "fuzzy_prefix_length", what, 0)?,
                uint_option(m, "fuzzy_max_expansions", what, FUZZY_MAX_EXPANSIONS)?,
                bool_option(m, "fuzzy_transpositions", what, true)?,
            )
            .parse(text);
        Ok(boosted(q, boost_of(m, what)?))
    }
}

/// A fuzzy query's options as Elasticsearch spells them.
struct FuzzyOptions {
    fuzziness: String,
    prefix_length: u32,
    max_expansions: u32,
    transpositions: bool,
}

/// `q` with every term query made fuzzy (`match` with `fuzziness`; the `fuzzy` query), the
/// edits of `AUTO` chosen per term.
fn fuzzify(q: Query, opts: &FuzzyOptions) -> Result<Query, ApiError> {
    Ok(match q {
        Query::Term { field, term } => {
            let max_edits = quarry::search::multiterm::fuzziness_edits(&opts.fuzziness, &term)
                .map_err(|e| parsing(format!("[fuzziness] {e}")))?;
            Query::Fuzzy {
                field,
                term,
                max_edits,
                prefix_length: opts.prefix_length,
                max_expansions: opts.max_expansions,
                transpositions: opts.transpositions,
            }
        }
        Query::Boolean {
            clauses,
            minimum_should_match,
        } => Query::Boolean {
            clauses: clauses
                .into_iter()
                .map(|c| Ok(Clause::new(c.occur, fuzzify(c.query, opts)?)))
                .collect::<Result<_, ApiError>>()?,
            minimum_should_match,
        },
        other => other,
    })
}

/// A non-negative integer option, `default` when absent.
fn uint_option(
    m: &Map<String, Value>,
    key: &str,
    what: &str,
    default: u32,
) -> Result<u32, ApiError> {
    match m.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .filter(|n| *n <= u64::from(u32::MAX))
            .map(|n| n as u32)
            .ok_or_else(|| parsing(format!("[{what}] [{key}] must be a non-negative integer"))),
    }
}

fn bool_option(
    m: &Map<String, Value>,
    key: &str,
    what: &str,
    default: bool,
) -> Result<bool, ApiError> {
    match m.get(key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
        Some(_) => Err(parsing(format!("[{what}] [{key}] must be true or false"))),
    }
}

/// `tie_breaker` in `[0, 1]` (default 0).
fn tie_breaker(m: &Map<String, Value>, what: &str) -> Result<f32, ApiError> {
    match m.get("tie_breaker") {
        None => Ok(0.0),
        Some(v) => v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .filter(|t| (0.0..=1.0).contains(t))
            .map(|t| t as f32)
            .ok_or_else(|| {
                parsing(format!(
                    "[{what}] [tie_breaker] must be a number between 0 and 1"
                ))
            }),
    }
}

fn no_case_insensitive(m: &Map<String, Value>, what: &str) -> Result<(), ApiError> {
    if m.get("case_insensitive") == Some(&Value::Bool(true)) {
        return Err(ApiError::unsupported(format!("[{what}] case_insensitive")));
    }
    Ok(())
}

/// Wildcard and regexp score a constant, as Lucene's and Elasticsearch's default rewrite does;
/// other rewrites are refused.
fn constant_rewrite(m: &Map<String, Value>, what: &str) -> Result<(), ApiError> {
    if let Some(r) = m.get("rewrite") {
        let r = scalar(r, "rewrite")?;
        if !matches!(r.as_str(), "constant_score" | "constant_score_blended") {
            return Err(ApiError::unsupported(format!("[{what}] rewrite [{r}]")));
        }
    }
    Ok(())
}

/// `{"f": {"wildcard": "x"}}` accepted as `{"f": {"value": "x"}}` (Elasticsearch's alias).
fn alias_main(body: &Value, kind: &str, alias: &str, main: &str) -> Value {
    let _ = kind;
    let mut body = body.clone();
    if let Some(Value::Object(spec)) = body.as_object_mut().and_then(|o| o.values_mut().next()) {
        if !spec.contains_key(main) {
            if let Some(v) = spec.remove(alias) {
                spec.insert(main.to_string(), v);
            }
        }
    }
    body
}

/// Parses `default_operator` (`AND`/`OR`, any case; absent = OR).
pub fn parse_operator(v: Option<&Value>) -> Result<Operator, ApiError> {
    match v.map(|o| scalar(o, "default_operator")).transpose()? {
        None => Ok(Operator::Or),
        Some(o) => match o.to_ascii_lowercase().as_str() {
            "or" => Ok(Operator::Or),
            "and" => Ok(Operator::And),
            other => Err(parsing(format!(
                "default_operator [{other}] is not one of AND, OR"
            ))),
        },
    }
}

/// Lucene syntax through the library's parser (fields with boosts; none = every text field).
pub fn lucene_syntax(
    searcher: &Searcher,
    text: &str,
    fields: &mut [(String, Option<f32>)],
    op: Operator,
) -> Result<Query, ApiError> {
    let names: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
    let mut parser = searcher.query_parser(&names)?.with_default_operator(op);
    for (f, b) in fields.iter() {
        if let Some(b) = b {
            parser = parser.with_field_boost(f.clone(), *b);
        }
    }
    parser.parse(text).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "query_shard_exception",
            format!("Failed to parse query [{text}]: {e}"),
        )
    })
}

fn too_many(field: &str) -> ApiError {
    parsing(format!(
        "query on [{field}] has more than {MAX_CLAUSES} terms"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn searcher() -> Searcher {
        let schema = Schema::builder()
            .keyword("_id")
            .text("title", true)
            .text("body", true)
            .keyword("tag")
            .integer("year")
            .build();
        Searcher::new(schema, Arc::new(Vec::new()))
    }

    fn tr(v: Value) -> Result<Query, ApiError> {
        translate(&v, &searcher())
    }

    #[test]
    fn match_is_what_lucene_syntax_gives() {
        let q = tr(json!({"match": {"body": "Oil Prices"}})).unwrap();
        assert_eq!(q.to_string(), "body:oil body:prices");
        let q = tr(json!({"match": {"body": {"query": "oil prices", "operator": "and"}}})).unwrap();
        assert_eq!(q.to_string(), "+body:oil +body:prices");
        let q = tr(json!({"match": {"body": "oil"}})).unwrap();
        assert_eq!(q, Query::term("body", "oil"));
    }

    #[test]
    fn phrases_terms_ids_exists_prefix() {
        let q = tr(json!({"match_phrase": {"body": {"query": "crude oil", "slop": 2}}})).unwrap();
        assert_eq!(q.to_string(), "body:\"crude oil\"~2");
        let q = tr(json!({"term": {"year": 1987}})).unwrap();
        assert_eq!(q, Query::term("year", "1987"));
        let q = tr(json!({"term": {"tag": {"value": "Grain", "boost": 2.0}}})).unwrap();
        assert_eq!(q, Query::boosted(Query::term("tag", "Grain"), 2.0));
        let q = tr(json!({"terms": {"tag": ["a", "b"]}})).unwrap();
        assert_eq!(q.to_string(), "ConstantScore(tag:a tag:b)");
        let q = tr(json!({"ids": {"values": ["1", "2"]}})).unwrap();
        assert_eq!(q.to_string(), "ConstantScore(_id:1 _id:2)");
        let q = tr(json!({"exists": {"field": "tag"}})).unwrap();
        assert!(matches!(q, Query::Prefix { ref prefix, .. } if prefix.is_empty()));
        assert_eq!(
            tr(json!({"exists": {"field": "nope"}})).unwrap(),
            Query::MatchNone
        );
        let q = tr(json!({"prefix": {"title": "oi"}})).unwrap();
        assert_eq!(q.to_string(), "title:oi*");
    }

    #[test]
    fn match_phrase_prefix_forms_and_options() {
        let q = tr(json!({"match_phrase_prefix": {"body": "Quick Brown f"}})).unwrap();
        assert_eq!(
            q,
            Query::PhrasePrefix {
                field: "body".into(),
                terms: vec![
                    (0, vec!["quick".into()]),
                    (1, vec!["brown".into()]),
                    (2, vec!["f".into()])
                ],
                slop: 0,
                max_expansions: 50,
            }
        );
        assert_eq!(q.to_string(), "body:\"quick brown f*\"");
        let q = tr(json!({"match_phrase_prefix": {"title": {
            "query": "oil pr", "slop": 2, "max_expansions": 10, "boost": 3, "analyzer": "standard"
        }}}))
        .unwrap();
        assert_eq!(q.to_string(), "(title:\"oil pr*\"~2)^3.0");
        let Query::Boost { query, .. } = q else {
            panic!("boosted")
        };
        assert!(matches!(
            *query,
            Query::PhrasePrefix {
                max_expansions: 10,
                ..
            }
        ));
        let q = tr(
            json!({"multi_match": {"query": "oil pr", "fields": ["title^2", "body"],
            "type": "phrase_prefix", "max_expansions": 3, "slop": 1}}),
        )
        .unwrap();
        assert_eq!(
            q.to_string(),
            "((title:\"oil pr*\"~1)^2.0 | body:\"oil pr*\"~1)"
        );
        let q = tr(json!({"match_phrase_prefix": {"body": "oil"}})).unwrap();
        assert_eq!(q.to_string(), "body:\"oil*\"");
        // No token: zero_terms_query.
        let q = tr(json!({"match_phrase_prefix": {"body": "..."}})).unwrap();
        assert_eq!(q, Query::MatchNone);
        let q =
            tr(json!({"match_phrase_prefix": {"body": {"query": "!", "zero_terms_query": "all"}}}));
        assert_eq!(q.unwrap(), Query::MatchAll);
        assert_eq!(
            tr(json!({"match_phrase_prefix": {"nope": "a b"}})).unwrap(),
            Query::MatchNone
        );
        for (v, needle) in [
            (
                json!({"match_phrase_prefix": {"body": {"query": "a", "fuzziness": 1}}}),
                "[fuzziness]",
            ),
            (
                json!({"match_phrase_prefix": {"body": {"slop": 1}}}),
                "needs [query]",
            ),
            (
                json!({"match_phrase_prefix": {"body": {"query": "a", "slop": -1}}}),
                "slop",
            ),
            (
                json!({"match_phrase_prefix": {"body": {"query": "a", "max_expansions": 5000}}}),
                "at most 1024",
            ),
            (
                json!({"match_phrase_prefix": {"body": {"query": "a", "zero_terms_query": "x"}}}),
                "zero_terms_query",
            ),
        ] {
            let e = tr(v.clone()).unwrap_err();
            assert!(e.status.is_client_error(), "{v}");
            assert!(e.reason.contains(needle), "{v}: {}", e.reason);
        }
    }

    #[test]
    fn bool_and_min_should_match() {
        let q = tr(json!({"bool": {
            "must": {"match": {"body": "oil"}},
            "should": [{"term": {"tag": "x"}}, {"term": {"tag": "y"}}],
            "must_not": [{"term": {"year": "1990"}}],
            "filter": [{"match_all": {}}],
            "minimum_should_match": "50%"
        }}))
        .unwrap();
        match q {
            Query::Boolean {
                clauses,
                minimum_should_match,
            } => {
                assert_eq!(clauses.len(), 5);
                assert_eq!(minimum_should_match, 1);
            }
            other => panic!("{other:?}"),
        }
        let q = tr(json!({"bool": {"must_not": {"term": {"tag": "x"}}}})).unwrap();
        assert_eq!(q.to_string(), "-tag:x #*:*");
        assert_eq!(tr(json!({"bool": {}})).unwrap(), Query::MatchAll);
        assert_eq!(min_should_match(&json!(-1), 4).unwrap(), 3);
        assert_eq!(min_should_match(&json!("-25%"), 4).unwrap(), 3);
        assert!(min_should_match(&json!("3<90%"), 4).is_err());
    }

    #[test]
    fn multi_match_and_query_string() {
        let q = tr(json!({"multi_match": {"query": "oil", "fields": ["title^2", "body"], "type": "most_fields"}})).unwrap();
        assert_eq!(q.to_string(), "(title:oil)^2.0 body:oil");
        let q = tr(json!({"multi_match": {"query": "oil", "fields": ["title", "body"]}})).unwrap();
        assert_eq!(q.to_string(), "(title:oil | body:oil)");
        let q = tr(json!({"multi_match": {"query": "oil gas", "fields": ["title", "body"], "tie_breaker": 0.3}})).unwrap();
        assert_eq!(
            q.to_string(),
            "((title:oil title:gas) | (body:oil body:gas))~0.3"
        );
        let q =
            tr(json!({"query_string": {"query": "oil AND title:gas", "default_field": "body"}}))
                .unwrap();
        assert_eq!(q.to_string(), "+body:oil +title:gas");
        let e = tr(json!({"query_string": {"query": "oil AND (", "default_field": "body"}}))
            .unwrap_err();
        assert_eq!(e.status, 400);
    }

    #[test]
    fn simple_query_string_is_lucenes_simple_query_parser() {
        let s = |v: Value| tr(v).unwrap().to_string();
        assert_eq!(
            s(json!({"simple_query_string": {"query": "oil + (gas | -coal)", "fields": ["body"]}})),
            "+body:oil +(body:gas (-body:coal *:*))"
        );
        assert_eq!(
            s(
                json!({"simple_query_string": {"query": "oil \"crude prices\"~2", "fields": ["title^2", "body"], "default_operator": "AND"}})
            ),
            "+((title:oil)^2.0 body:oil) +((title:\"crude prices\"~2)^2.0 body:\"crude prices\"~2)"
        );
        // Every text field by default; flags turn operators off; never a syntax error.
        assert_eq!(
            s(json!({"simple_query_string": {"query": "oil*"}})),
            "title:oil* body:oil*"
        );
        assert_eq!(
            s(
                json!({"simple_query_string": {"query": "oil* -gas", "fields": ["body"], "flags": "OR|AND"}})
            ),
            "body:oil body:gas"
        );
        assert_eq!(
            s(json!({"simple_query_string": {"query": "(\"oil", "fields": ["body"], "flags": 0}})),
            "body:oil"
        );
        assert_eq!(
            s(
                json!({"simple_query_string": {"query": "Oil-Pri*", "fields": ["body"], "analyze_wildcard": true, "boost": 2}})
            ),
            "(body:oil body:pri*)^2.0"
        );
        let q = tr(
            json!({"simple_query_string": {"query": "oli~1", "fields": ["body"],
            "fuzzy_prefix_length": 2, "fuzzy_max_expansions": 7, "fuzzy_transpositions": false}}),
        )
        .unwrap();
        assert_eq!(
            q,
            Query::Fuzzy {
                field: "body".into(),
                term: "oli".into(),
                max_edits: 1,
                prefix_length: 2,
                max_expansions: 7,
                transpositions: false
            }
        );
        for (v, needle) in [
            (
                json!({"simple_query_string": {"query": "x", "flags": "OR|BOGUS"}}),
                "[BOGUS]",
            ),
            (
                json!({"simple_query_string": {"query": "x", "fields": ["nope"]}}),
                "[nope]",
            ),
            (
                json!({"simple_query_string": {"query": "x", "lenient": true}}),
                "lenient",
            ),
            (
                json!({"simple_query_string": {"fields": ["body"]}}),
                "[query]",
            ),
            (
                json!({"simple_query_string": {"query": "x", "default_operator": "xor"}}),
                "xor",
            ),
        ] {
            let e = tr(v.clone()).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{v}");
            assert!(e.reason.contains(needle), "{v}: {}", e.reason);
        }
    }

    #[test]
    fn multi_term_and_compound_queries() {
        let s = |v: Value| tr(v).unwrap().to_string();
        assert_eq!(s(json!({"wildcard": {"body": "pr?ce*"}})), "body:pr?ce*");
        assert_eq!(
            s(json!({"wildcard": {"tag": {"wildcard": "A*", "boost": 2}}})),
            "(tag:A*)^2.0"
        );
        assert_eq!(
            s(json!({"regexp": {"body": {"value": "joh?n(ath[oa]n)", "flags": "ALL"}}})),
            "body:/joh?n(ath[oa]n)/"
        );
        assert_eq!(s(json!({"fuzzy": {"body": "roam"}})), "body:roam~1");
        assert_eq!(s(json!({"fuzzy": {"body": "ro"}})), "body:ro~0");
        assert_eq!(s(json!({"fuzzy": {"body": "roaming"}})), "body:roaming~2");
        let q = tr(json!({"fuzzy": {"body": {"value": "roam", "fuzziness": "2", "prefix_length": 1, "max_expansions": 7, "transpositions": false}}})).unwrap();
        assert_eq!(
            q,
            Query::Fuzzy {
                field: "body".into(),
                term: "roam".into(),
                max_edits: 2,
                prefix_length: 1,
                max_expansions: 7,
                transpositions: false,
            }
        );
        assert_eq!(
            s(json!({"match": {"body": {"query": "Oil pirces", "fuzziness": "AUTO"}}})),
            "body:oil~1 body:pirces~2"
        );
        assert_eq!(s(json!({"fuzzy": {"nope": "x"}})), "MatchNoDocsQuery(\"\")");
        assert_eq!(
            s(json!({"constant_score": {"filter": {"term": {"tag": "x"}}, "boost": 3}})),
            "(ConstantScore(tag:x))^3.0"
        );
        assert_eq!(
            s(
                json!({"dis_max": {"queries": [{"term": {"tag": "x"}}, {"match": {"body": "a b"}}], "tie_breaker": 0.5}})
            ),
            "(tag:x | (body:a body:b))~0.5"
        );
        assert_eq!(
            s(
                json!({"boosting": {"positive": {"term": {"tag": "x"}}, "negative": {"term": {"tag": "y"}}, "negative_boost": 0.2}})
            ),
            "FunctionScoreQuery(tag:x, scored by boost(queryboost(score(tag:y))^0.2))"
        );
    }

    #[test]
    fn bad_queries_are_client_errors_naming_the_problem() {
        for (v, needle) in [
            (json!({"range": {"body": {"gte": 1, "bogus": 2}}}), "bogus"),
            (json!({"fuzy": {"body": "x"}}), "unknown query [fuzy]"),
            (
                json!({"fuzzy": {"body": {"value": "x", "fuzzyness": 1}}}),
                "[fuzzy] query does not support [fuzzyness]",
            ),
            (
                json!({"fuzzy": {"body": {"value": "x", "fuzziness": 3}}}),
                "invalid fuzziness",
            ),
            (
                json!({"regexp": {"body": "a(b"}}),
                "expected ')' at position 3",
            ),
            (
                json!({"regexp": {"body": {"value": "a", "flags": "NONE"}}}),
                "flags",
            ),
            (json!({"wildcard": {"year": "1*"}}), "only text and keyword"),
            (json!({"dis_max": {"queries": []}}), "empty"),
            (
                json!({"dis_max": {"queries": [{"match_all": {}}], "tie_breaker": 2}}),
                "tie_breaker",
            ),
            (
                json!({"constant_score": {"query": {"match_all": {}}}}),
                "[query]",
            ),
            (
                json!({"boosting": {"positive": {"match_all": {}}, "negative": {"match_all": {}}}}),
                "negative_boost",
            ),
            (
                json!({"match": {"body": "x"}, "term": {"tag": "y"}}),
                "more than one",
            ),
            (json!({"match": 3}), "must be an object"),
            (json!({"term": {"year": "abc"}}), "not an integer"),
            (json!({"match": {"body": {"qurey": "x"}}}), "qurey"),
            (json!([]), "must be an object"),
        ] {
            let e = tr(v.clone()).unwrap_err();
            assert!(e.status.is_client_error());
            assert!(e.reason.contains(needle), "{v}: {}", e.reason);
        }
        let mut deep = json!({"match_all": {}});
        for _ in 0..40 {
            deep = json!({"bool": {"must": [deep]}});
        }
        assert!(tr(deep).unwrap_err().reason.contains("nested"));
    }
}
