//! Which words of a hit matched, in context? Highlighting with the semantics of Lucene's unified
//! highlighter as Elasticsearch configures it: the stored text is re-analyzed with the field's
//! analyzer (Lucene's `ANALYSIS` offset source), the query's terms, phrases (only the occurrences
//! that match, with their slop), prefixes and text ranges are marked, and the passages around
//! the matches (sentences bounded by `fragment_size`) are scored by Lucene's `PassageScorer`;
//! the best `number_of_fragments` come back in text order.
//!
//! ```
//! use quarry::highlight::{HighlightOptions, Highlighter};
//! use quarry::Schema;
//!
//! let schema = Schema::builder().text("body", true).build();
//! let query = quarry::query::Query::term("body", "oil");
//! let h = Highlighter::new(&query, &schema);
//! let doc = serde_json::json!({"body": "Gas fell. Oil rose, and oil stocks too."});
//! let frags = h.highlight_field("body", &doc["body"], &HighlightOptions::default());
//! assert_eq!(frags, ["<em>Oil</em> rose, and <em>oil</em> stocks too."]);
//! ```

mod matcher;
mod passage;
mod sentences;
mod words;

use serde_json::{Map, Value};

use crate::query::Query;
use crate::schema::{FieldType, Schema};
use crate::search::{DocAddress, Searcher};
use crate::Result;
use matcher::{find_matches, Match, QueryTerms, Tokenizer};
use passage::{best_passages, PassageOptions};

/// Joins the values of a multi-valued field: a paragraph separator, which always ends a
/// sentence, so no passage spans two values (Elasticsearch joins them likewise).
const VALUE_SEPARATOR: char = '\u{2029}';

/// How highlighted text is escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoder {
    /// The stored text as is (Elasticsearch's `default`).
    #[default]
    Default,
    /// HTML-escaped, as Lucene's `SimpleHTMLEncoder` (Elasticsearch's `html`): `& < > " ' /`
    /// and every non-ASCII character as a character reference.
    Html,
}

impl Encoder {
    fn push(self, out: &mut String, text: &str) {
        match self {
            Encoder::Default => out.push_str(text),
            Encoder::Html => {
                for c in text.chars() {
                    match c {
                        '"' => out.push_str("&quot;"),
                        '&' => out.push_str("&amp;"),
                        '<' => out.push_str("&lt;"),
                        '>' => out.push_str("&gt;"),
                        '\'' => out.push_str("&#x27;"),
                        '/' => out.push_str("&#x2F;"),
                        c if c.is_ascii() => out.push(c),
                        c => {
                            out.push_str("&#");
                            out.push_str(&u32::from(c).to_string());
                            out.push(';');
                        }
                    }
                }
            }
        }
    }
}

/// What a highlighted field looks like; the defaults are Elasticsearch's.
#[derive(Debug, Clone, PartialEq)]
pub struct HighlightOptions {
    /// Written before each highlighted stretch (`<em>`).
    pub pre_tag: String,
    /// Written after each highlighted stretch (`</em>`).
    pub post_tag: String,
    /// A fragment's target length in characters (UTF-16 units, as in Java; 100): whole
    /// sentences while they fit, a longer sentence cut at word breaks.
    pub fragment_size: usize,
    /// At most this many fragments (5); 0 returns the whole field, highlighted.
    pub number_of_fragments: usize,
    /// Only the query's terms on this field highlight it (true); false: terms on any field.
    pub require_field_match: bool,
    /// How the text is escaped.
    pub encoder: Encoder,
    /// Fragments best first (Elasticsearch's `order: score`) instead of in text order.
    pub order_by_score: bool,
}

impl Default for HighlightOptions {
    fn default() -> Self {
        HighlightOptions {
            pre_tag: "<em>".into(),
            post_tag: "</em>".into(),
            fragment_size: 100,
            number_of_fragments: 5,
            require_field_match: true,
            encoder: Encoder::Default,
            order_by_score: false,
        }
    }
}

/// Highlights hits of one query: built once per query, used for every hit and field.
#[derive(Debug, Clone)]
pub struct Highlighter {
    terms: QueryTerms,
    schema: Schema,
}

impl Highlighter {
    /// A highlighter for `query` over fields of `schema`.
    pub fn new(query: &Query, schema: &Schema) -> Self {
        Highlighter {
            terms: QueryTerms::of(query),
            schema: schema.clone(),
        }
    }

    /// The fields a name or pattern (`*` matches any run of characters) stands for: stored text
    /// and keyword fields, in schema order. Other fields are never highlighted.
    pub fn fields_matching(&self, pattern: &str) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .filter(|f| f.stored && matches!(f.field_type, FieldType::Text | FieldType::Keyword))
            .filter(|f| wildcard_match(pattern, &f.name))
            .map(|f| f.name.clone())
            .collect()
    }

    /// The fragments of `field`'s stored value (a string or an array of strings), best first
    /// or in text order as `opts` says; empty when nothing in it matches.
    pub fn highlight_field(
        &self,
        field: &str,
        value: &Value,
        opts: &HighlightOptions,
    ) -> Vec<String> {
        self.highlight_field_scored(field, value, opts)
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    }

    /// [`Highlighter::highlight_field`] with each fragment's passage score (0 for a whole
    /// field).
    pub fn highlight_field_scored(
        &self,
        field: &str,
        value: &Value,
        opts: &HighlightOptions,
    ) -> Vec<(String, f32)> {
        let Some(fq) = self.terms.for_field(field, opts.require_field_match) else {
            return Vec::new();
        };
        let Some(entry) = self.schema.field_by_name(field) else {
            return Vec::new();
        };
        let tokenizer = match entry.field_type {
            FieldType::Text => match self
                .schema
                .field_id(field)
                .and_then(|id| self.schema.analyzer(id))
            {
                Some(a) => Tokenizer::Analyzed(a.as_ref()),
                None => return Vec::new(),
            },
            FieldType::Keyword => Tokenizer::Whole,
            _ => return Vec::new(),
        };
        let values: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        // Weight matches (a phrase as one stretch) as Elasticsearch uses them: only when field
        // matches are required.
        let phrase_as_one = opts.require_field_match;
        let passage_opts = PassageOptions {
            fragment_size: opts.fragment_size,
            number_of_fragments: opts.number_of_fragments,
            pre_tag: &opts.pre_tag,
            post_tag: &opts.post_tag,
            encoder: opts.encoder,
            by_score: opts.order_by_score,
        };
        let mut matches: Vec<Match> = Vec::new();
        if opts.number_of_fragments == 0 {
            // The whole field: each value with a match is one fragment.
            let mut out = Vec::new();
            for v in values {
                matches.clear();
                find_matches(fq, v, 0, tokenizer, phrase_as_one, &mut matches);
                out.extend(best_passages(v, &[(0, v.len())], &matches, &passage_opts));
            }
            return out;
        }
        if let [one] = values.as_slice() {
            find_matches(fq, one, 0, tokenizer, phrase_as_one, &mut matches);
            return best_passages(one, &[(0, one.len())], &matches, &passage_opts);
        }
        let mut content = String::new();
        let mut ranges = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                content.push(VALUE_SEPARATOR);
            }
            let base = content.len();
            content.push_str(v);
            ranges.push((base, content.len()));
            find_matches(fq, v, base, tokenizer, phrase_as_one, &mut matches);
        }
        best_passages(&content, &ranges, &matches, &passage_opts)
    }

    /// The highlighted fields of one stored document: for each requested field (names or
    /// patterns, each with its options), the fields it stands for that have fragments, in
    /// request order, each field once.
    pub fn highlight_doc(
        &self,
        doc: &Map<String, Value>,
        fields: &[(String, HighlightOptions)],
    ) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (pattern, opts) in fields {
            for name in self.fields_matching(pattern) {
                if out.iter().any(|(n, _)| *n == name) {
                    continue;
                }
                let Some(v) = doc.get(&name) else { continue };
                let frags = self.highlight_field(&name, v, opts);
                if !frags.is_empty() {
                    out.push((name, frags));
                }
            }
        }
        out
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(mut tail) = name.strip_prefix(head) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('*').collect();
    let (last, middle) = parts.split_last().expect("split gives one part at least");
    for part in middle {
        match tail.find(part) {
            Some(i) => tail = &tail[i + part.len()..],
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

impl Searcher {
    /// The highlighted `fields` (names or `*` patterns) of a hit of `query`, from its stored
    /// fields: `(field, fragments)` for each field with a match, in the order asked.
    pub fn highlight(
        &self,
        query: &Query,
        hit: DocAddress,
        fields: &[&str],
        opts: &HighlightOptions,
    ) -> Result<Vec<(String, Vec<String>)>> {
        let doc = self.stored_fields(hit)?;
        let h = Highlighter::new(query, self.schema());
        let fields: Vec<(String, HighlightOptions)> = fields
            .iter()
            .map(|f| (f.to_string(), opts.clone()))
            .collect();
        Ok(h.highlight_doc(&doc, &fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Clause, Occur};
    use serde_json::json;

    fn schema() -> Schema {
        Schema::builder()
            .text("title", true)
            .text("body", true)
            .text("notes", false)
            .keyword("tag")
            .integer("n")
            .build()
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", "body"));
        assert!(wildcard_match("b*", "body"));
        assert!(wildcard_match("*dy", "body"));
        assert!(wildcard_match("b*d*", "body"));
        assert!(wildcard_match("b*o*y", "body"));
        assert!(!wildcard_match("b*x", "body"));
        assert!(!wildcard_match("bo*dy*y", "body"));
        assert!(!wildcard_match("title", "body"));
        let h = Highlighter::new(&Query::MatchAll, &schema());
        assert_eq!(h.fields_matching("*"), ["title", "body", "tag"]);
        assert_eq!(h.fields_matching("t*"), ["title", "tag"]);
        assert!(h.fields_matching("n").is_empty());
    }

    #[test]
    fn fields_and_require_field_match() {
        let q = Query::boolean(vec![
            Clause::new(Occur::Should, Query::term("title", "oil")),
            Clause::new(Occur::Should, Query::term("tag", "crude oil")),
        ]);
        let h = Highlighter::new(&q, &schema());
        let doc = json!({"title": "Oil up", "body": "oil down", "tag": "crude oil", "n": 3});
        let doc = doc.as_object().unwrap();
        let all = vec![("*".to_string(), HighlightOptions::default())];
        assert_eq!(
            h.highlight_doc(doc, &all),
            [
                ("title".to_string(), vec!["<em>Oil</em> up".to_string()]),
                ("tag".to_string(), vec!["<em>crude oil</em>".to_string()]),
            ]
        );
        let loose = HighlightOptions {
            require_field_match: false,
            pre_tag: "[".into(),
            post_tag: "]".into(),
            ..Default::default()
        };
        let both = vec![
            ("body".to_string(), loose),
            ("title".to_string(), HighlightOptions::default()),
        ];
        assert_eq!(
            h.highlight_doc(doc, &both),
            [
                ("body".to_string(), vec!["[oil] down".to_string()]),
                ("title".to_string(), vec!["<em>Oil</em> up".to_string()]),
            ]
        );
    }

    #[test]
    fn multi_term_and_compound_queries_mark_the_words_they_accept() {
        let text = json!("Crude oil and olive oils; the roam of Rome, a rome roamer.");
        let o = HighlightOptions::default();
        let mark = |q: Query| Highlighter::new(&q, &schema()).highlight_field("body", &text, &o);
        let wildcard = Query::Wildcard {
            field: "body".into(),
            pattern: "o?l*".into(),
        };
        assert_eq!(
            mark(wildcard.clone()),
            ["Crude <em>oil</em> and olive <em>oils</em>; the roam of Rome, a rome roamer."]
        );
        let regexp = Query::Regexp {
            field: "body".into(),
            pattern: "ro[am]+e?".into(),
        };
        assert_eq!(
            mark(regexp),
            ["Crude oil and olive oils; the <em>roam</em> of <em>Rome</em>, a <em>rome</em> roamer."]
        );
        let fuzzy = Query::fuzzy("body", "roam", 1);
        assert_eq!(
            mark(fuzzy),
            ["Crude oil and olive oils; the <em>roam</em> of Rome, a rome roamer."]
        );
        let compound = Query::DisMax {
            queries: vec![
                Query::ConstantScore {
                    query: Box::new(Query::term("body", "crude")),
                },
                Query::Boosting {
                    positive: Box::new(wildcard),
                    negative: Box::new(Query::term("body", "rome")),
                    negative_boost: 0.5,
                },
            ],
            tie_breaker: 0.0,
        };
        assert_eq!(
            mark(compound),
            ["<em>Crude</em> <em>oil</em> and olive <em>oils</em>; the roam of Rome, a rome roamer."]
        );
    }

    #[test]
    fn multi_valued_fields_never_mix_values() {
        let h = Highlighter::new(&Query::term("body", "oil"), &schema());
        let v = json!(["no match here", "oil one", "two", "and oil"]);
        let o = HighlightOptions::default();
        assert_eq!(
            h.highlight_field("body", &v, &o),
            ["<em>oil</em> one", "and <em>oil</em>"]
        );
        let whole = HighlightOptions {
            number_of_fragments: 0,
            ..Default::default()
        };
        assert_eq!(
            h.highlight_field("body", &v, &whole),
            ["<em>oil</em> one", "and <em>oil</em>"]
        );
        // A phrase does not join the end of one value to the start of the next.
        let p = Query::Phrase {
            field: "body".into(),
            terms: vec![(0, "one".into()), (1, "two".into())],
            slop: 0,
        };
        let h = Highlighter::new(&p, &schema());
        assert!(h.highlight_field("body", &v, &o).is_empty());
    }

    #[test]
    fn searcher_highlights_a_hit() -> Result<()> {
        use crate::{Document, Index, IndexWriter, SearchMode, WriterOptions};
        let dir = tempfile::tempdir().unwrap();
        let schema = schema();
        let mut w = IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default())?;
        w.add_document(Document::from_json(
            &schema,
            r#"{"title": "Oil prices", "body": "Crude oil prices rose. Oil fell later; prices of oil."}"#,
        )?)?;
        w.commit()?;
        let s = Index::open(dir.path())?.searcher();
        let q = s.parse_query("\"oil prices\" pri*", &["body"])?;
        let top = s.search(&q, 10, SearchMode::Top)?.top;
        let h = s.highlight(
            &q,
            top[0].doc,
            &["body", "title"],
            &HighlightOptions::default(),
        )?;
        assert_eq!(
            h,
            [(
                "body".to_string(),
                vec![
                    "Crude <em>oil prices</em> rose. Oil fell later; <em>prices</em> of oil."
                        .to_string()
                ]
            )]
        );
        Ok(())
    }
}
