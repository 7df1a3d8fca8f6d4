//! Format constants (v10): file kinds, versions and extensions. Spec: `docs/format/README.md`.
use quarry_codecs::framing::{self, FileKind};
use quarry_codecs::Header;

use crate::error::InFile;
use crate::Result;

/// The format version this build writes.
pub const VERSION: u32 = 10;
/// The oldest version this build reads.
pub const MIN_VERSION: u32 = 1;

pub const KIND_COMMIT: FileKind = FileKind(*b"CMIT");
pub const KIND_META: FileKind = FileKind(*b"SEGM");
pub const KIND_TERMS: FileKind = FileKind(*b"TERM");
pub const KIND_POSTINGS: FileKind = FileKind(*b"POST");
pub const KIND_POSITIONS: FileKind = FileKind(*b"POSI");
pub const KIND_NORMS: FileKind = FileKind(*b"NORM");
pub const KIND_STORED: FileKind = FileKind(*b"STOR");
/// A segment's deleted documents (format v2).
pub const KIND_DELETES: FileKind = FileKind(*b"DELS");
/// A segment's columns (doc values, format v8).
pub const KIND_COLUMNS: FileKind = FileKind(*b"COLS");

/// A segment's vectors, quantized copies and graphs (format v9).
pub const KIND_VECTORS: FileKind = FileKind(*b"VECS");

/// The first version whose segments have a `.cols` file.
pub const COLUMNS_SINCE: u32 = 8;

/// The first version whose segments may have a `.vec` file (when the schema has a vector
/// field).
pub const VECTORS_SINCE: u32 = 9;

/// The first version whose `.vec` may hold several vectors per document: the passages of a
/// long text ([`crate::codec::vectors`]).
pub const PASSAGES_SINCE: u32 = 10;

/// The files of one segment: (extension, kind). Segments older than [`COLUMNS_SINCE`] have no
/// `cols`; only segments of a schema with a vector field (v9 on) have a `vec`.
pub const SEGMENT_FILES: [(&str, FileKind); 8] = [
    ("meta", KIND_META),
    ("terms", KIND_TERMS),
    ("post", KIND_POSTINGS),
    ("pos", KIND_POSITIONS),
    ("norms", KIND_NORMS),
    ("store", KIND_STORED),
    ("cols", KIND_COLUMNS),
    ("vec", KIND_VECTORS),
];

/// Starts a file: its 16-byte header.
pub fn begin(kind: FileKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 << 12);
    Header {
        kind,
        version: VERSION,
    }
    .write(&mut v);
    v
}

/// Ends a file: its footer with the CRC32C of everything before.
pub fn finish(mut bytes: Vec<u8>) -> Vec<u8> {
    framing::write_footer(&mut bytes);
    bytes
}

/// Checks header, version range and footer magic of `file` named `name`.
pub fn check(name: &str, file: &[u8], kind: FileKind) -> Result<()> {
    framing::check_frame(file, kind, MIN_VERSION, VERSION).in_file(name)?;
    Ok(())
}

/// Checks the whole-file CRC (reads every byte: used for small files at open and by `check`).
pub fn check_crc(name: &str, file: &[u8]) -> Result<()> {
    framing::check_crc(file).in_file(name)
}
