//! What can go wrong when decoding bytes.
use thiserror::Error;

/// A decoding failure. Positions are byte offsets inside the slice being decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    #[error("truncated: needed {needed} bytes at offset {offset}, only {available} available")]
    Truncated {
        offset: usize,
        needed: usize,
        available: usize,
    },
    #[error("varint at offset {offset} is longer than {max_bytes} bytes")]
    VarintOverflow { offset: usize, max_bytes: usize },
    #[error("bad magic: expected {expected:#010x}, found {found:#010x}")]
    BadMagic { expected: u32, found: u32 },
    #[error("wrong file kind: expected {expected}, found {found}")]
    WrongKind { expected: String, found: String },
    #[error("format version {found} is older than the oldest supported ({min}); re-index with a newer quarry")]
    TooOld { found: u32, min: u32 },
    #[error("format version {found} is newer than this build supports ({max}); upgrade quarry")]
    TooNew { found: u32, max: u32 },
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("invalid value: {what}")]
    Invalid { what: String },
}
