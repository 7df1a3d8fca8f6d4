//! I/O errors that say which file and which operation failed.
use std::path::PathBuf;
use thiserror::Error;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("file not found: {path}")]
    NotFound { path: PathBuf },
    #[error("read of {path} at [{start}, {end}) is past its end ({len} bytes)")]
    OutOfBounds {
        path: PathBuf,
        start: u64,
        end: u64,
        len: u64,
    },
    #[error("invalid directory option for {path}: {what}")]
    BadOption { path: PathBuf, what: String },
    #[error("invalid file name {name:?}: names are plain file names inside the index directory")]
    BadName { name: String },
    /// A [`crate::LoadCheck`] rejected bytes read from the disk.
    #[error("{path} at byte {offset}: {why}")]
    Rejected {
        path: PathBuf,
        offset: u64,
        why: String,
    },
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            StoreError::NotFound { path }
        } else {
            StoreError::Io { op, path, source }
        }
    }
}
