//! The engine's error type: every variant names what failed and, for files, which file.
use thiserror::Error;

pub use quarry_store::StoreError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("corrupt index file {file}: {reason}; run `quarry check` and restore the index from a backup or re-index")]
    Corrupt { file: String, reason: String },
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
    #[error("{0}")]
    Query(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("index writer failed earlier and must be reopened: {0}")]
    WriterPoisoned(String),
}

impl Error {
    pub(crate) fn corrupt(file: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Error::Corrupt {
            file: file.into(),
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
