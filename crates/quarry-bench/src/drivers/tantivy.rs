//! How is Tantivy driven: schema, writer settings, query parser and collectors for each mode.
//!
//! Schema: `id` u64 STORED, `title` and `body` TEXT | STORED with Tantivy's `default` tokenizer
//! (split on non-alphanumeric characters, drop tokens longer than 40 bytes, lowercase; no stop
//! words, no stemming). Queries: `QueryParser::for_index(&index, vec![body])`, default OR.
//! Modes: top10 = `TopDocs::with_limit(10).order_by_score()` (Block-WAND: the number of matches
//! is not computed, so `hits` is the number of returned docs, relation "gte" when it is 10);
//! top10_count = `(TopDocs, Count)` (exhaustive); count = `Count`; top10_highlight = top10, then
//! each hit's stored document (`Searcher::doc`) and a `SnippetGenerator` (made once per query,
//! 100 characters, one fragment: its API gives one) rendered with `to_html`.
//!
//! Tantivy's query parser has no fuzzy or wildcard terms, so a one-word query of the
//! `fuzzy_wildcard` class is built here: `word~N` (`~` alone = 2 edits, Lucene's default) as
//! `FuzzyTermQuery::new(term, N, transpositions)`, which matches every term within N edits
//! (no 50-term cap, constant scores: not Lucene's top-terms blended scoring); `pre*`, `te?m`
//! and `t*m` as `RegexQuery` (`pre.*`, `te.m`, `t.*m`), constant scores as in Lucene.

use std::path::Path;

use anyhow::{Context, Result};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{FuzzyTermQuery, Query, QueryParser, RegexQuery};
use tantivy::schema::{Field, Schema, Value, STORED, TEXT};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, Index, IndexReader, ReloadPolicy, Score, TantivyDocument, Term};

use super::{IndexConfig, SearchEngine};
use crate::protocol::{Mode, SourceDoc, TopHit};

pub struct Tantivy {
    index: Index,
    reader: IndexReader,
    parser: QueryParser,
    id: Field,
    body: Field,
}

pub struct Outcome {
    top: Vec<(Score, DocAddress)>,
    hits: u64,
    exact: bool,
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let id = b.add_u64_field("id", STORED);
    let title = b.add_text_field("title", TEXT | STORED);
    let body = b.add_text_field("body", TEXT | STORED);
    (b.build(), id, title, body)
}

/// The version of the `tantivy` crate we were built with (from Cargo.lock via the crate itself).
const TANTIVY_VERSION: &str = "0.27";

impl SearchEngine for Tantivy {
    const NAME: &'static str = "tantivy";
    type Query = Box<dyn Query>;
    type Outcome = Outcome;

    fn version() -> String {
        format!("{} (crate {TANTIVY_VERSION})", tantivy::version_string())
    }

    fn index(
        dir: &Path,
        docs: Vec<SourceDoc>,
        threads: usize,
        memory_mb: usize,
    ) -> Result<IndexConfig> {
        let (schema, id, title, body) = schema();
        let index = Index::create_in_dir(dir, schema)?;
        let budget = memory_mb * threads * 1024 * 1024;
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(threads, budget)?;
        for src in docs {
            let mut doc = TantivyDocument::new();
            doc.add_u64(id, src.id);
            doc.add_text(title, &src.title);
            doc.add_text(body, &src.body);
            writer.add_document(doc)?;
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        Ok(IndexConfig {
            description: format!(
                "{threads} indexing thread(s), memory budget {memory_mb} MiB per thread, default LogMergePolicy, \
                 one commit at the end, then wait_merging_threads"
            ),
        })
    }

    fn segments(dir: &Path) -> Result<u64> {
        let index = Index::open_in_dir(dir)?;
        Ok(index.searchable_segment_ids()?.len() as u64)
    }

    fn force_merge(dir: &Path, max_segments: u64) -> Result<String> {
        anyhow::ensure!(
            max_segments == 1,
            "the Tantivy driver merges to exactly one segment (got --max-segments {max_segments})"
        );
        let index = Index::open_in_dir(dir)?;
        // One thread and Tantivy's minimum budget: the merge itself does not use the budget.
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 15_000_000)?;
        let ids = index.searchable_segment_ids()?;
        if ids.len() > 1 {
            writer.merge(&ids).wait()?;
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        Ok("IndexWriter::merge(all searchable segment ids) + commit + wait_merging_threads".into())
    }

    fn open(dir: &Path) -> Result<Self> {
        let index = Index::open_in_dir(dir)
            .with_context(|| format!("opening tantivy index {}", dir.display()))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let schema = index.schema();
        let body = schema.get_field("body")?;
        let id = schema.get_field("id")?;
        let parser = QueryParser::for_index(&index, vec![body]);
        Ok(Tantivy {
            index,
            reader,
            parser,
            id,
            body,
        })
    }

    fn parse(&self, query: &str) -> Result<Box<dyn Query>> {
        let _ = &self.index;
        match multi_term(query) {
            Some(MultiTerm::Fuzzy(word, edits)) => Ok(Box::new(FuzzyTermQuery::new(
                Term::from_field_text(self.body, &word),
                edits,
                true,
            ))),
            Some(MultiTerm::Regex(pattern)) => Ok(Box::new(
                RegexQuery::from_pattern(&pattern, self.body)
                    .with_context(|| format!("regex {pattern:?} of query {query:?}"))?,
            )),
            None => Ok(self.parser.parse_query(query)?),
        }
    }

    fn search(&self, query: &Box<dyn Query>, mode: Mode) -> Result<Outcome> {
        let searcher = self.reader.searcher();
        Ok(match mode {
            Mode::Top10 | Mode::Top10Highlight => {
                let top = searcher.search(query, &TopDocs::with_limit(10).order_by_score())?;
                let n = top.len() as u64;
                Outcome {
                    top,
                    hits: n,
                    exact: n < 10,
                }
            }
            Mode::Top10Count => {
                let (top, count) =
                    searcher.search(query, &(TopDocs::with_limit(10).order_by_score(), Count))?;
                Outcome {
                    top,
                    hits: count as u64,
                    exact: true,
                }
            }
            Mode::Count => {
                let count = searcher.search(query, &Count)?;
                Outcome {
                    top: Vec::new(),
                    hits: count as u64,
                    exact: true,
                }
            }
        })
    }

    fn highlight(&self, query: &Box<dyn Query>, outcome: &Outcome) -> Result<usize> {
        let searcher = self.reader.searcher();
        let mut generator = SnippetGenerator::create(&searcher, query.as_ref(), self.body)?;
        generator.set_max_num_chars(100);
        let mut bytes = 0;
        for &(_, addr) in &outcome.top {
            let doc: TantivyDocument = searcher.doc(addr)?;
            bytes += generator.snippet_from_doc(&doc).to_html().len();
        }
        Ok(bytes)
    }

    fn hits(outcome: &Outcome) -> (u64, bool) {
        (outcome.hits, outcome.exact)
    }

    fn top(&self, outcome: &Outcome) -> Result<Vec<TopHit>> {
        let searcher = self.reader.searcher();
        outcome
            .top
            .iter()
            .map(|&(score, addr)| {
                let doc: TantivyDocument = searcher.doc(addr)?;
                let id = doc
                    .get_first(self.id)
                    .and_then(|v| v.as_u64())
                    .context("stored id missing")?;
                Ok(TopHit {
                    id: id.into(),
                    score: score as f64,
                })
            })
            .collect()
    }
}

/// A one-word fuzzy, prefix or wildcard query in Lucene's classic syntax, as Tantivy builds it.
#[derive(Debug, PartialEq)]
enum MultiTerm {
    /// The word (lowercased) and its edit distance.
    Fuzzy(String, u8),
    /// A regular expression over whole terms.
    Regex(String),
}

/// `word~`, `word~N` (N = 0, 1, 2), or a word with `*` / `?` not in first place; `None` for
/// anything else (left to Tantivy's parser).
fn multi_term(q: &str) -> Option<MultiTerm> {
    let q = q.trim();
    if q.is_empty() || q.contains(char::is_whitespace) || q.contains(['"', ':', '\\']) {
        return None;
    }
    if let Some((word, edits)) = q.split_once('~') {
        let edits = match edits {
            "" => 2,
            "0" | "1" | "2" => edits.parse().ok()?,
            _ => return None,
        };
        if word.is_empty() || word.contains(['*', '?', '~']) {
            return None;
        }
        return Some(MultiTerm::Fuzzy(word.to_lowercase(), edits));
    }
    if !q.contains(['*', '?']) || q.starts_with(['*', '?']) {
        return None;
    }
    let mut pattern = String::new();
    for c in q.to_lowercase().chars() {
        match c {
            '*' => pattern.push_str(".*"),
            '?' => pattern.push('.'),
            c if "\\.+()|[]{}^$#&-~".contains(c) => {
                pattern.push('\\');
                pattern.push(c);
            }
            c => pattern.push(c),
        }
    }
    Some(MultiTerm::Regex(pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_and_wildcard_words_become_tantivy_queries() {
        let fuzzy = |w: &str, n| Some(MultiTerm::Fuzzy(w.into(), n));
        let regex = |p: &str| Some(MultiTerm::Regex(p.into()));
        assert_eq!(multi_term("Obama~"), fuzzy("obama", 2));
        assert_eq!(multi_term("obmaa~1"), fuzzy("obmaa", 1));
        assert_eq!(multi_term("pres*"), regex("pres.*"));
        assert_eq!(multi_term("wo?ld"), regex("wo.ld"));
        assert_eq!(multi_term("w*d"), regex("w.*d"));
        assert_eq!(multi_term("a.b*"), regex("a\\.b.*"));
        for plain in [
            "obama",
            "+a +b",
            "\"a b\"~2",
            "*x",
            "a~3",
            "a~0.5",
            "~",
            "title:x*",
        ] {
            assert_eq!(multi_term(plain), None, "{plain}");
        }
    }
}
