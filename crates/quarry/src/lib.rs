#![forbid(unsafe_code)]
//! quarry: a full-text search engine library that ranks exactly like Apache Lucene.
//!
//! The same tokens as Lucene's `StandardAnalyzer`, the same BM25 with the same one-byte length
//! norms and the same classic query syntax, so the top hits and their scores match Lucene's
//! (tested on every query of the bundled Reuters oracle). Indexes are directories of immutable
//! segments plus a commit point; readers use the files in place (memory-mapped by default), so
//! opening an index reads only headers and small metadata.
//!
//! The command-line tool (`quarry`), the Elasticsearch-compatible server (`quarry serve`), the
//! Python package and the benchmark suite are built on this crate; the repository's `docs/`
//! has a guide for each, and `docs/format/` specifies every file byte by byte.
//!
//! # A tour
//!
//! Every example below runs as a doc test (`cargo test -p quarry --doc`) and checks its results.
//!
//! ## Schema, IndexWriter, Index, Searcher
//!
//! A [`Schema`] declares the fields: `text` (analyzed, with frequencies, positions and norms;
//! stored if asked), `keyword` (one exact term, stored), `integer`, `boolean` and `float`
//! (stored, indexed as one exact term). An [`IndexWriter`] adds [`Document`]s and
//! [`commit`](IndexWriter::commit)s them atomically and durably; [`Index::open`] opens the newest
//! commit and hands out a [`Searcher`].
//!
//! ```
//! use quarry::{Document, Index, IndexWriter, Schema, SearchMode, WriterOptions};
//!
//! # fn main() -> quarry::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path();
//! let schema = Schema::builder()
//!     .integer("id")
//!     .text("title", true)   // stored: comes back with hits
//!     .text("body", false)   // searchable only
//!     .keyword("topic")
//!     .build();
//! let mut writer = IndexWriter::create(path, schema.clone(), WriterOptions::default())?;
//! for line in [
//!     r#"{"id": 1, "title": "Oil prices rise", "body": "crude oil prices rose", "topic": "crude"}"#,
//!     r#"{"id": 2, "title": "Gas", "body": "natural gas prices fell", "topic": "gas"}"#,
//!     r#"{"id": 3, "title": "Grain", "body": "wheat and oil seeds", "topic": "grain"}"#,
//! ] {
//!     writer.add_document(Document::from_json(&schema, line)?)?;
//! }
//! let stats = writer.commit()?;              // atomic and durable
//! assert_eq!(stats.docs, 3);
//!
//! let index = Index::open(path)?;            // headers and metadata only
//! assert_eq!(index.live_doc_count(), 3);
//! let searcher = index.searcher();
//! let query = searcher.parse_query("oil AND prices", &["body"])?;
//! let result = searcher.search(&query, 10, SearchMode::TopCount)?;
//! assert_eq!((result.total_hits, result.hits_exact), (1, true));
//! let doc = searcher.stored_fields(result.top[0].doc)?;
//! assert_eq!(doc["title"], "Oil prices rise");
//! assert_eq!(doc["id"], 1);
//! assert!(!doc.contains_key("body"));        // not stored
//!
//! // OR is the default operator; the better match ranks first.
//! let query = searcher.parse_query("oil prices", &["body"])?;
//! let result = searcher.search(&query, 10, SearchMode::TopCount)?;
//! assert_eq!(result.total_hits, 3);
//! assert_eq!(searcher.stored_fields(result.top[0].doc)?["id"], 1);
//! assert!(result.top[0].score > result.top[1].score);
//! # Ok(()) }
//! ```
//!
//! [`SearchMode`] is what a search computes: `Top` (top k, the count may be a lower bound:
//! `hits_exact` then says so), `TopCount` (top k and the exact count) or `Count` (the exact
//! count only, nothing scored).
//!
//! ## Parsing queries
//!
//! [`Searcher::parse_query`] takes Lucene's classic syntax (`title:oil`, `+a -b`, `"a b"~2`,
//! `pri*`, `a^2`, `*:*`) and analyzes terms with the field's analyzer. A mistake is a typed
//! error: [`Error::Parse`] keeps the position (byte offset and 1-based column).
//!
//! ```
//! # use quarry::{Document, IndexWriter, Schema, WriterOptions};
//! use quarry::{Error, SearchMode};
//! # fn main() -> quarry::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let schema = Schema::builder().integer("id").text("title", true).text("body", false).build();
//! # let mut writer = IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default())?;
//! # writer.add_document(Document::from_json(&schema, r#"{"id": 1, "title": "Oil prices rise", "body": "crude oil prices rose"}"#)?)?;
//! # writer.add_document(Document::from_json(&schema, r#"{"id": 2, "title": "Gas", "body": "natural gas prices fell"}"#)?)?;
//! # writer.commit()?;
//! # let searcher = quarry::Index::open(dir.path())?.searcher();
//! let count = |q: &str| -> quarry::Result<u64> {
//!     let query = searcher.parse_query(q, &["title", "body"])?;
//!     Ok(searcher.search(&query, 0, SearchMode::Count)?.total_hits)
//! };
//! assert_eq!(count("prices -gas")?, 1);
//! assert_eq!(count(r#"body:"oil prices""#)?, 1);
//! assert_eq!(count("pri*")?, 2);
//! assert_eq!(count("*:*")?, 2);
//!
//! match searcher.parse_query("oil AND (prices", &["body"]) {
//!     Err(Error::Parse(e)) => assert_eq!(e.column, 16),
//!     other => panic!("expected a syntax error, got {other:?}"),
//! }
//! # Ok(()) }
//! ```
//!
//! ## Deletes, updates and near-real-time search
//!
//! One [`IndexWriter`] per index (it holds `write.lock`; a second one gets [`Error::Locked`]).
//! [`IndexWriter::delete_term`] and [`IndexWriter::update_document`] (delete by key and add,
//! atomically) act on everything added before them. [`IndexWriter::reader`] gives an
//! [`IndexReader`] that follows the writer: [`IndexWriter::refresh`] makes the changes
//! searchable through it without a commit.
//!
//! ```
//! use quarry::{Document, Error, FieldValue, IndexWriter, Schema, SearchMode, WriterOptions};
//!
//! # fn main() -> quarry::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let schema = Schema::builder().integer("id").text("title", true).build();
//! let mut writer = IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default())?;
//! let doc = |json: &str| Document::from_json(&schema, json);
//! writer.add_document(doc(r#"{"id": 1, "title": "oil prices rise"}"#)?)?;
//! writer.add_document(doc(r#"{"id": 2, "title": "gas prices fall"}"#)?)?;
//!
//! let reader = writer.reader()?;             // sees everything added so far, no commit needed
//! let count = |q: &str| -> quarry::Result<u64> {
//!     let searcher = reader.searcher();      // a point-in-time view, cheap to take
//!     let query = searcher.parse_query(q, &["title"])?;
//!     Ok(searcher.search(&query, 0, SearchMode::Count)?.total_hits)
//! };
//! assert_eq!(count("prices")?, 2);
//!
//! writer.update_document("id", &FieldValue::Int(1), doc(r#"{"id": 1, "title": "oil prices fall"}"#)?)?;
//! writer.delete_term("id", &FieldValue::Int(2))?;
//! assert_eq!(count("fall")?, 1);             // not visible yet: gas, before the delete
//! writer.refresh()?;                         // now visible through `reader`
//! assert_eq!(count("fall")?, 1);             // the updated id 1
//! assert_eq!(count("rise")?, 0);
//! assert_eq!(count("gas")?, 0);
//!
//! // One writer at a time.
//! assert!(matches!(
//!     IndexWriter::open(dir.path(), WriterOptions::default()),
//!     Err(Error::Locked { .. })
//! ));
//! writer.commit()?;                          // durable
//! # Ok(()) }
//! ```
//!
//! Deleted documents stay in their segment (and in the BM25 statistics, as in Lucene) until a
//! merge drops them; [`IndexWriter::force_merge`] merges on demand.
//!
//! ## Readers that follow commits, and I/O modes
//!
//! [`IndexReader::open`] follows new commits of another writer (or process) in the background
//! ([`ReloadPolicy::OnCommitWithDelay`]); with [`ReloadPolicy::Manual`] it moves only on
//! [`IndexReader::reload`]. [`DirectoryKind`] chooses how files are read: `Mmap` (default),
//! `Pread`, `Direct` (`O_DIRECT` with a buffer pool) or `Adaptive`; every kind gives the same
//! answers.
//!
//! ```
//! use quarry::{Document, DirectoryKind, Index, IndexReader, IndexWriter, ReloadPolicy, Schema,
//!              SearchMode, WriterOptions};
//!
//! # fn main() -> quarry::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let schema = Schema::builder().text("title", true).build();
//! let mut writer = IndexWriter::create(dir.path(), schema.clone(), WriterOptions::default())?;
//! writer.add_document(Document::from_json(&schema, r#"{"title": "oil"}"#)?)?;
//! writer.commit()?;
//!
//! let reader = IndexReader::open_with(dir.path(), DirectoryKind::Pread, ReloadPolicy::Manual)?;
//! writer.add_document(Document::from_json(&schema, r#"{"title": "more oil"}"#)?)?;
//! writer.commit()?;
//! assert_eq!(reader.searcher().live_doc_count(), 1);   // still the first commit
//! assert!(reader.reload()?);                           // true: it moved
//! assert_eq!(reader.searcher().live_doc_count(), 2);
//!
//! for kind in DirectoryKind::ALL {
//!     let searcher = Index::open_with(dir.path(), kind)?.searcher();
//!     let query = searcher.parse_query("oil", &["title"])?;
//!     assert_eq!(searcher.search(&query, 10, SearchMode::TopCount)?.total_hits, 2);
//! }
//! # Ok(()) }
//! ```
//!
//! ## Errors
//!
//! Every fallible call returns [`Result`] with a typed [`Error`]: `Parse` and `UnknownField` for
//! queries, `Document` and `Schema` for input, `Locked`, `Corrupt` / `TooOld` / `TooNew` (naming
//! the file) for index files, `Store` for I/O, `MergeFailed` when a merge fails after a durable
//! commit. [`Error::is_client_error`] tells a caller's mistake from a fault of the index or the
//! machine.
//!
//! The longer guide, with the same examples, is `docs/library.md` in the repository; its Rust
//! blocks run as doc tests too (through a hidden item of this crate).

/// The Rust examples of `docs/library.md`, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;

/// The Rust example of `docs/vectors.md`, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/vectors.md")]
pub struct VectorsGuide;

/// The Rust example of `docs/embeddings.md`, compiled as a doc test (it needs a model to run).
#[cfg(all(doctest, feature = "embed"))]
#[doc = include_str!("../../../docs/embeddings.md")]
pub struct EmbeddingsGuide;

/// The Rust example of `README.md`, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct Readme;

pub mod aggregation;
pub mod analysis;
pub mod codec;
pub mod date;
pub mod document;
#[cfg(feature = "embed")]
pub mod embed;
pub mod error;
mod failpoint;
pub mod fusion;
pub mod highlight;
pub mod index;
pub mod index_sort;
pub mod indexer;
pub mod pairs;
pub mod query;
pub mod reader;
pub mod schema;
pub mod search;
pub mod vector;

pub use document::{Document, FieldValue};
pub use error::{Error, Result};
pub use index::{check_index, CheckReport, Index};
pub use index_sort::{IndexSort, IndexSortField};
pub use indexer::{BpOptions, CommitStats, IndexWriter, MergeInfo, MergePolicy, WriterOptions};
pub use quarry_store::DirectoryKind;
pub use query::ParseError;
pub use reader::{IndexReader, ReloadPolicy};
pub use schema::{FieldEntry, FieldType, Schema};
pub use search::sort::{SortField, SortKey, SortValue, SortedHit, SortedResult};
pub use search::{
    Bm25, CollectionStats, DocAddress, Explanation, Hit, SearchMode, SearchOptions, SearchResult,
    Searcher, TermStats,
};
