//! The engine's error type: every variant names what failed and, for files, which file.
use thiserror::Error;

pub use quarry_store::StoreError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A damaged file; `offset` is the byte offset of the damaged chunk when a chunk checksum
    /// (format v3) or a range check located it.
    #[error("corrupt index file {file}{}: {reason}; run `quarry check` and restore the index from a backup or re-index", at_offset(*.offset))]
    Corrupt {
        file: String,
        offset: Option<u64>,
        reason: String,
    },
    #[error("index file {file} has format version {found}, older than the oldest this build reads ({min}); re-index with this version")]
    TooOld { file: String, found: u32, min: u32 },
    #[error("index file {file} has format version {found}, newer than this build reads ({max}); upgrade quarry")]
    TooNew { file: String, found: u32, max: u32 },
    #[error("no index in {path}: no commit point found (create one with `quarry index`)")]
    NoIndex { path: String },
    #[error("schema error: {0}")]
    Schema(String),
    #[error("document error in field {field:?}: {reason}")]
    Document { field: String, reason: String },
    /// `column` is 1-based; 0 when the error has no position.
    #[error("malformed JSON{}: {reason}", at_column(*.column))]
    Json { column: usize, reason: String },
    /// A query string that does not parse; keeps the kind and position.
    #[error("{0}")]
    Parse(#[from] crate::query::ParseError),
    /// A field name the schema does not have.
    #[error("unknown field {field:?}; the schema has {}", known.join(", "))]
    UnknownField { field: String, known: Vec<String> },
    /// Another writer (in this or another process) holds the index's `write.lock`.
    #[error("index {path} is locked by another writer (its write.lock is held); wait for it to finish or stop it")]
    Locked { path: String },
    #[error("{0}")]
    Query(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An embedding model that cannot be loaded or run (`model` is its directory).
    #[error("embedding model {model}: {reason}")]
    Model { model: String, reason: String },
    /// An index sort ([`crate::index_sort::IndexSort`]) that cannot be used: a field the schema
    /// lacks or one without a column, a field named twice, no field at all, or a sort that
    /// differs from the one the index was created with.
    #[error("index sort on {field:?}: {reason}")]
    IndexSort { field: String, reason: String },
    /// An earlier write of this writer failed (the message says which and why); the writer
    /// refuses further changes and must be reopened. The last commit is intact.
    #[error("{0}")]
    WriterPoisoned(String),
    /// A read from disk was not issued because the search's deadline had passed (pread and
    /// direct modes). `Searcher::search_with` turns it into a partial result (`timed_out`); it
    /// reaches callers only from reads run under [`crate::index::IoDeadline`] elsewhere.
    #[error("deadline passed before reading {file}")]
    DeadlineExceeded { file: String },
    /// A commit succeeded (its documents are durable) but a merge after it failed.
    #[error("commit generation {generation} is durable, but a merge after it failed: {source}")]
    MergeFailed {
        generation: u64,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// True when the caller's input is at fault (a server answers 4xx): a query that does not
    /// parse, an unknown field, a bad document or argument. False for I/O, corruption, locks.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            Error::Parse(_)
                | Error::UnknownField { .. }
                | Error::Schema(_)
                | Error::Document { .. }
                | Error::Json { .. }
                | Error::Query(_)
                | Error::InvalidArgument(_)
                | Error::Model { .. }
                | Error::IndexSort { .. }
        )
    }

    /// True when the failure is a full disk (ENOSPC) somewhere in the chain.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Error::Store(StoreError::Io { source, .. }) => source.raw_os_error() == Some(28),
            Error::WriterPoisoned(m) => m.contains("No space left on device"),
            Error::MergeFailed { source, .. } => source.is_disk_full(),
            _ => false,
        }
    }

    /// True when a file of the index vanished (a concurrent writer removed it).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Store(StoreError::NotFound { .. }))
    }

    pub(crate) fn unknown_field(schema: &crate::schema::Schema, field: &str) -> Self {
        Error::UnknownField {
            field: field.to_string(),
            known: schema.fields().iter().map(|f| f.name.clone()).collect(),
        }
    }

    pub(crate) fn corrupt(file: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset: None,
            reason: reason.to_string(),
        }
    }

    /// `Corrupt` at byte `offset` of `file`.
    pub(crate) fn corrupt_at(
        file: impl Into<String>,
        offset: u64,
        reason: impl std::fmt::Display,
    ) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset: Some(offset),
            reason: reason.to_string(),
        }
    }

    /// Maps a codec error met while decoding `file` to `Corrupt`/`TooOld`/`TooNew`.
    pub(crate) fn codec(file: &str, e: quarry_codecs::CodecError) -> Self {
        use quarry_codecs::CodecError as C;
        match e {
            C::TooOld { found, min } => Error::TooOld {
                file: file.to_string(),
                found,
                min,
            },
            C::TooNew { found, max } => Error::TooNew {
                file: file.to_string(),
                found,
                max,
            },
            other => Error::corrupt(file, other),
        }
    }
}

fn at_offset(offset: Option<u64>) -> String {
    offset.map(|o| format!(" at byte {o}")).unwrap_or_default()
}

fn at_column(column: usize) -> String {
    if column == 0 {
        String::new()
    } else {
        format!(" at column {column}")
    }
}

/// Adds the file name to codec errors.
pub(crate) trait InFile<T> {
    fn in_file(self, file: &str) -> Result<T>;
}

impl<T> InFile<T> for std::result::Result<T, quarry_codecs::CodecError> {
    fn in_file(self, file: &str) -> Result<T> {
        self.map_err(|e| Error::codec(file, e))
    }
}
