//! How is SeekStorm driven: schema, index settings, query translation and result types per mode.
//!
//! Built only with the feature `seekstorm-driver` (crate `seekstorm` 4.x, default features off).
//! SeekStorm's API is async; the driver owns a current-thread Tokio runtime and blocks on each
//! call. SeekStorm itself runs an internal multi-threaded runtime (`INDEX_RUNTIME`, one worker
//! per CPU) on which it indexes shards and searches them, so neither indexing nor a single query
//! can be pinned to one thread: the thread count given to `index` is recorded but SeekStorm uses
//! all cores, and its query latencies may use more than one core (the report says so).
//!
//! Schema: `id` U64 stored, `title` and `body` Text stored and indexed; queries search `body`
//! only (`field_filter`). Index settings: SeekStorm's own defaults (`IndexMetaObject` serde
//! defaults: frequent words English, n-gram indexing FF|FFF, Snappy document compression,
//! automatic shard count = physical cores, mmap access) except two choices that keep the
//! comparison with the other engines fair: `TokenizerType::UnicodeAlphanumeric` (its default,
//! `AsciiAlphabetic`, drops digits and non-ASCII letters, which the other three index) and
//! `LexicalSimilarity::Bm25f` (plain BM25 on one field, as the others rank; its default adds a
//! proximity boost). Queries: Lucene classic syntax translated to SeekStorm's `+ - ""` syntax
//! by [`translate`]; anything else (parentheses, fields, wildcards, boosts) is an error record.
//! The merged shape: SeekStorm has no merge operation, so `force_merge` rebuilds the index into
//! one shard from its own document store (`force_shard_number = 1`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use seekstorm::commit::Commit;
use seekstorm::index::{
    create_index, open_index, AccessType, Close, Document, FieldType, IndexArc, IndexDocument,
    IndexMetaObject, LexicalSimilarity, SchemaField, TokenizerType,
};
use seekstorm::iterator::GetIterator;
use seekstorm::search::{QueryRewriting, QueryType, ResultObject, ResultType, Search, SearchMode};
use serde_json::Value;

use super::{IndexConfig, SearchEngine};
use crate::protocol::{Mode, SourceDoc, TopHit};

pub struct SeekStorm {
    rt: tokio::runtime::Runtime,
    index: IndexArc,
}

/// A translated query string.
pub struct Query(String);

/// A search result and the mode that produced it.
pub struct Outcome {
    result: ResultObject,
    mode: Mode,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn schema() -> Vec<SchemaField> {
    let text = |name: &str| {
        SchemaField::new(
            name.into(),
            true,
            true,
            false,
            FieldType::Text,
            false,
            false,
            1.0,
            false,
            false,
        )
    };
    vec![
        SchemaField::new(
            "id".into(),
            true,
            false,
            false,
            FieldType::U64,
            false,
            false,
            1.0,
            false,
            false,
        ),
        text("title"),
        text("body"),
    ]
}

/// SeekStorm's defaults (serde defaults of `IndexMetaObject`) with the two choices explained in
/// the module docs (the structured benchmark's driver uses them too).
pub(crate) fn meta_named(name: &str) -> Result<IndexMetaObject> {
    let mut meta: IndexMetaObject = serde_json::from_value(serde_json::json!({
        "id": 0,
        "name": name,
        "lexical_similarity": "Bm25f",
        "tokenizer": "UnicodeAlphanumeric",
        "stemmer": "None",
        "access_type": "Mmap",
    }))
    .context("building SeekStorm's IndexMetaObject from its defaults")?;
    meta.lexical_similarity = LexicalSimilarity::Bm25f;
    meta.tokenizer = TokenizerType::UnicodeAlphanumeric;
    meta.access_type = AccessType::Mmap;
    Ok(meta)
}

fn meta() -> Result<IndexMetaObject> {
    meta_named("quarry-bench")
}

fn to_document(src: SourceDoc) -> Document {
    let mut doc = Document::new();
    doc.insert("id".into(), Value::from(src.id));
    doc.insert("title".into(), Value::String(src.title));
    doc.insert("body".into(), Value::String(src.body));
    doc
}

/// Lucene classic syntax (flat: terms, `"phrases"`, `+`/`-` prefixes, `AND`, `OR`, `NOT`) to
/// SeekStorm's syntax (`+required`, `-prohibited`, plain optional clauses, `"phrases"`).
/// A clause next to `AND` is required, one after `NOT` prohibited, as Lucene's parser reads them.
pub fn translate(q: &str) -> Result<String> {
    // SeekStorm's query language has no fuzzy, prefix or wildcard terms; its parser would
    // search the characters as written.
    if q.contains(['~', '*', '?']) {
        anyhow::bail!("not supported: SeekStorm has no fuzzy, prefix or wildcard queries ({q:?})");
    }
    #[derive(PartialEq, Clone, Copy)]
    enum Occur {
        Should,
        Must,
        MustNot,
    }
    enum Tok {
        And,
        Or,
        Not,
        Clause(Occur, String),
    }
    let mut toks = Vec::new();
    let chars: Vec<char> = q.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let mut occur = Occur::Should;
        if c == '+' || c == '-' {
            occur = if c == '+' {
                Occur::Must
            } else {
                Occur::MustNot
            };
            i += 1;
        }
        let body: String = if chars.get(i) == Some(&'"') {
            let close = chars[i + 1..]
                .iter()
                .position(|&c| c == '"')
                .with_context(|| format!("unbalanced quote at character {i} of {q:?}"))?;
            let s: String = chars[i..i + close + 2].iter().collect();
            i += close + 2;
            s
        } else {
            let from = i;
            while i < chars.len() && !chars[i].is_whitespace() {
                i += 1;
            }
            chars[from..i].iter().collect()
        };
        if body.is_empty() || body == "\"\"" {
            bail!("empty clause at character {start} of {q:?}");
        }
        if !body.starts_with('"') {
            if let Some(bad) = body.chars().find(|c| {
                matches!(
                    c,
                    '(' | ')' | ':' | '*' | '?' | '~' | '^' | '[' | ']' | '{' | '}'
                )
            }) {
                bail!(
                    "{q:?}: {bad:?} at character {start} has no equivalent in SeekStorm's query \
                     syntax (only terms, \"phrases\", +, -, AND, OR, NOT are translated)"
                );
            }
        }
        toks.push(match (occur, body.as_str()) {
            (Occur::Should, "AND") | (Occur::Should, "&&") => Tok::And,
            (Occur::Should, "OR") | (Occur::Should, "||") => Tok::Or,
            (Occur::Should, "NOT") => Tok::Not,
            _ => Tok::Clause(occur, body),
        });
    }
    let mut clauses: Vec<(Occur, String)> = Vec::new();
    let mut pending_not = false;
    let mut pending_and = false;
    for t in toks {
        match t {
            Tok::And => {
                let last = clauses
                    .last_mut()
                    .with_context(|| format!("{q:?}: AND without a clause before it"))?;
                if last.0 == Occur::Should {
                    last.0 = Occur::Must;
                }
                pending_and = true;
            }
            Tok::Or => pending_and = false,
            Tok::Not => pending_not = true,
            Tok::Clause(mut occur, body) => {
                if pending_not {
                    occur = Occur::MustNot;
                } else if pending_and && occur == Occur::Should {
                    occur = Occur::Must;
                }
                pending_not = false;
                pending_and = false;
                clauses.push((occur, body));
            }
        }
    }
    if pending_not || pending_and || clauses.is_empty() {
        bail!("{q:?}: the query ends with an operator or has no clause");
    }
    // SeekStorm's parser turns the query type of the whole query into an intersection as soon as
    // one clause carries `+`, and into a phrase as soon as one clause is quoted (tokenizer.rs,
    // `query_type = QueryType::Intersection` / `Phrase`): optional clauses next to a required
    // clause or a phrase would silently become required. Such a query is refused rather than
    // timed as an easier one.
    let shoulds = clauses.iter().filter(|(o, _)| *o == Occur::Should).count();
    let musts = clauses.iter().filter(|(o, _)| *o == Occur::Must).count();
    let phrase = clauses
        .iter()
        .any(|(o, b)| *o != Occur::MustNot && b.starts_with('"'));
    if shoulds > 0 && (musts > 0 || (phrase && shoulds + musts > 1)) {
        bail!(
            "{q:?}: SeekStorm's query syntax cannot express optional clauses next to a required \
             clause or a phrase (a `+` or a quoted phrase makes every clause of the query \
             required), so it would answer a different query"
        );
    }
    Ok(clauses
        .into_iter()
        .map(|(o, b)| match o {
            Occur::Should => b,
            Occur::Must => format!("+{b}"),
            Occur::MustNot => format!("-{b}"),
        })
        .collect::<Vec<_>>()
        .join(" "))
}

async fn search(index: &IndexArc, q: &str, result_type: ResultType) -> ResultObject {
    index
        .search(
            q.to_string(),
            None,
            QueryType::Union,
            SearchMode::Lexical,
            false,
            0,
            10,
            result_type,
            false,
            vec!["body".to_string()],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            QueryRewriting::SearchOnly,
        )
        .await
}

async fn shard_count(dir: &Path) -> Result<u64> {
    let index = open_index(dir)
        .await
        .map_err(|e| anyhow::anyhow!("opening SeekStorm index {}: {e}", dir.display()))?;
    let n = index.read().await.shard_count().await as u64;
    index.close().await;
    Ok(n)
}

/// Reads every stored document of `from` and indexes it into a new one-shard index at `to`.
async fn rebuild_one_shard(from: &Path, to: &Path) -> Result<u64> {
    let old = open_index(from)
        .await
        .map_err(|e| anyhow::anyhow!("opening SeekStorm index {}: {e}", from.display()))?;
    let new = create_index(to, meta()?, &schema(), &Vec::new(), true, Some(1))
        .await
        .map_err(|e| anyhow::anyhow!("creating SeekStorm index {}: {e}", to.display()))?;
    const PAGE: isize = 1024;
    let (mut next, mut skip, mut n) = (None, 0, 0u64);
    loop {
        let page = old
            .get_iterator(next, skip, PAGE, false, true, Vec::new())
            .await;
        for item in &page.results {
            let doc = item
                .doc
                .clone()
                .with_context(|| format!("document {} has no stored fields", item.doc_id))?;
            new.index_document(doc, seekstorm::index::FileType::None)
                .await;
            n += 1;
        }
        match page.results.last() {
            Some(last) if page.results.len() as isize == PAGE => {
                next = Some(last.doc_id);
                skip = 1;
            }
            _ => break,
        }
    }
    new.commit().await;
    new.close().await;
    old.close().await;
    Ok(n)
}

impl SearchEngine for SeekStorm {
    const NAME: &'static str = "seekstorm";
    type Query = Query;
    type Outcome = Outcome;

    fn version() -> String {
        format!(
            "SeekStorm {} (crate seekstorm)",
            seekstorm::index::version()
        )
    }

    fn index(
        dir: &Path,
        docs: Vec<SourceDoc>,
        threads: usize,
        _memory_mb: usize,
    ) -> Result<IndexConfig> {
        let rt = runtime()?;
        let (shards, levels) = rt.block_on(async {
            let index = create_index(dir, meta()?, &schema(), &Vec::new(), true, None)
                .await
                .map_err(|e| anyhow::anyhow!("creating SeekStorm index {}: {e}", dir.display()))?;
            for src in docs {
                index
                    .index_document(to_document(src), seekstorm::index::FileType::None)
                    .await;
            }
            index.commit().await;
            let (shards, levels) = {
                let r = index.read().await;
                (r.shard_count().await, r.level_count().await)
            };
            index.close().await;
            anyhow::Ok((shards, levels))
        })?;
        Ok(IndexConfig {
            description: format!(
                "SeekStorm defaults (automatic shard count: {shards} shard(s), {levels} level(s) of 64K docs per \
                 shard; frequent words English, n-grams FF|FFF, Snappy, mmap) with tokenizer UnicodeAlphanumeric \
                 and BM25F; --threads {threads} cannot be applied: SeekStorm indexes on its own runtime with one \
                 worker per CPU; no memory budget setting; one commit and close at the end"
            ),
        })
    }

    fn segments(dir: &Path) -> Result<u64> {
        runtime()?.block_on(shard_count(dir))
    }

    fn force_merge(dir: &Path, max_segments: u64) -> Result<String> {
        anyhow::ensure!(
            max_segments == 1,
            "the SeekStorm driver rebuilds into exactly one shard (got --max-segments {max_segments})"
        );
        let mut tmp = dir.as_os_str().to_os_string();
        tmp.push(".one-shard");
        let tmp = PathBuf::from(tmp);
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        let n = runtime()?.block_on(rebuild_one_shard(dir, &tmp))?;
        std::fs::remove_dir_all(dir)?;
        std::fs::rename(&tmp, dir)?;
        Ok(format!(
            "no merge operation in SeekStorm: all {n} stored documents read back with get_iterator and \
             indexed into a new index with force_shard_number = 1 (same settings), commit + close"
        ))
    }

    fn open(dir: &Path) -> Result<Self> {
        let rt = runtime()?;
        let index = rt
            .block_on(open_index(dir))
            .map_err(|e| anyhow::anyhow!("opening SeekStorm index {}: {e}", dir.display()))?;
        Ok(SeekStorm { rt, index })
    }

    fn parse(&self, query: &str) -> Result<Query> {
        Ok(Query(translate(query)?))
    }

    fn search(&self, query: &Query, mode: Mode) -> Result<Outcome> {
        let rt = match mode {
            Mode::Top10 | Mode::Top10Highlight => ResultType::Topk,
            Mode::Top10Count => ResultType::TopkCount,
            Mode::Count => ResultType::Count,
        };
        Ok(Outcome {
            result: self.rt.block_on(search(&self.index, &query.0, rt)),
            mode,
        })
    }

    fn hits(outcome: &Outcome) -> (u64, bool) {
        match outcome.mode {
            // Topk does not count (result_count_total is only exact for TopkCount and Count):
            // the number of returned hits is a lower bound, as for Tantivy.
            Mode::Top10 | Mode::Top10Highlight => {
                let n = outcome.result.result_count as u64;
                (n, n < 10)
            }
            _ => (outcome.result.result_count_total as u64, true),
        }
    }

    fn top(&self, outcome: &Outcome) -> Result<Vec<TopHit>> {
        let outcome = &outcome.result;
        let fields: HashSet<String> = ["id".to_string()].into();
        self.rt.block_on(async {
            let index = self.index.read().await;
            let mut out = Vec::with_capacity(outcome.results.len());
            for r in &outcome.results {
                let doc = index
                    .get_document(r.doc_id, false, &None, &fields, &[])
                    .await
                    .map_err(|e| anyhow::anyhow!("reading stored document {}: {e}", r.doc_id))?;
                let id = doc.get("id").cloned().context("stored id missing")?;
                out.push(TopHit {
                    id,
                    score: r.score as f64,
                });
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn lucene_syntax_becomes_seekstorm_syntax() {
        assert_eq!(translate("oil").unwrap(), "oil");
        assert_eq!(translate("oil AND price").unwrap(), "+oil +price");
        assert_eq!(translate("trade OR export").unwrap(), "trade export");
        assert_eq!(
            translate("to AND be AND or AND not").unwrap(),
            "+to +be +or +not"
        );
        assert_eq!(translate("+at -happening").unwrap(), "+at -happening");
        assert_eq!(
            translate("at anxious -happening").unwrap(),
            "at anxious -happening"
        );
        assert_eq!(translate("\"the who\"").unwrap(), "\"the who\"");
        assert_eq!(
            translate("\"oil prices\" NOT opec").unwrap(),
            "\"oil prices\" -opec"
        );
        assert_eq!(translate("+\"the who\" +uk").unwrap(), "+\"the who\" +uk");
        assert_eq!(
            translate("+python -snake -monty").unwrap(),
            "+python -snake -monty"
        );
    }

    #[test]
    fn optional_clauses_next_to_required_ones_or_phrases_are_refused() {
        // SeekStorm would make `policy`, `anxious`, `c`, `uk` required.
        for q in [
            "+climate policy",
            "wildfire +risk maps",
            "+at anxious -happening",
            "a OR b AND c",
            "\"the who\" uk",
        ] {
            let e = translate(q).unwrap_err().to_string();
            assert!(e.contains("optional clauses"), "{q}: {e}");
        }
    }

    #[test]
    fn untranslatable_queries_are_errors() {
        for q in [
            "(a OR b) AND c",
            "title:oil",
            "oil*",
            "\"open",
            "AND oil",
            "oil AND",
            "",
        ] {
            assert!(translate(q).is_err(), "{q}");
        }
    }
}
