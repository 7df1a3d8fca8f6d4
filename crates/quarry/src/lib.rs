#![forbid(unsafe_code)]
//! quarry: a full-text search engine library.
//!
//! ```no_run
//! use quarry::{Document, Index, IndexWriter, Schema, SearchMode, WriterOptions};
//! # fn main() -> quarry::Result<()> {
//! let schema = Schema::builder().integer("id").text("title", true).text("body", true).build();
//! let path = std::path::Path::new("/tmp/idx");
//! let mut writer = IndexWriter::create(path, schema.clone(), WriterOptions::default())?;
//! writer.add_document(Document::from_json(&schema, r#"{"id": 1, "title": "Oil", "body": "oil prices rose"}"#)?)?;
//! writer.commit()?;
//! let index = Index::open(path)?;
//! let searcher = index.searcher();
//! let query = searcher.parse_query("oil AND prices", &["body"])?;
//! let result = searcher.search(&query, 10, SearchMode::TopCount)?;
//! for hit in &result.top {
//!     println!("{} {:?}", hit.score, searcher.stored_fields(hit.doc)?);
//! }
//! # Ok(()) }
//! ```
pub mod analysis;
pub mod codec;
pub mod document;
pub mod error;
mod failpoint;
pub mod index;
pub mod indexer;
pub mod pairs;
pub mod query;
pub mod reader;
pub mod schema;
pub mod search;

pub use document::{Document, FieldValue};
pub use error::{Error, Result};
pub use index::{check_index, CheckReport, Index};
pub use indexer::{CommitStats, IndexWriter, MergeInfo, MergePolicy, WriterOptions};
pub use quarry_store::DirectoryKind;
pub use query::ParseError;
pub use reader::{IndexReader, ReloadPolicy};
pub use schema::{FieldEntry, FieldType, Schema};
pub use search::{
    Bm25, CollectionStats, DocAddress, Hit, SearchMode, SearchOptions, SearchResult, Searcher,
    TermStats,
};
