//! The header and footer every quarry file carries (see docs/format/README.md, "Framing").
//!
//! Header (16 bytes): magic `"QRRY"`, a 4-byte ASCII kind tag, the format version (u32 LE) and
//! 4 reserved zero bytes. Footer (8 bytes): magic `"QEND"` and the CRC32C (u32 LE) of every byte
//! of the file before the CRC itself.
use crate::{checksum, CodecError};

pub const HEADER_MAGIC: u32 = u32::from_le_bytes(*b"QRRY");
pub const FOOTER_MAGIC: u32 = u32::from_le_bytes(*b"QEND");
pub const HEADER_LEN: usize = 16;
pub const FOOTER_LEN: usize = 8;

/// The kind tag of a file: four ASCII bytes such as `b"POST"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileKind(pub [u8; 4]);

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: FileKind,
    pub version: u32,
}

impl Header {
    /// Appends the 16-byte header.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&HEADER_MAGIC.to_le_bytes());
        out.extend_from_slice(&self.kind.0);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&[0u8; 4]);
    }
}

/// Appends the footer over everything already in `out` (which must start with a header).
pub fn write_footer(out: &mut Vec<u8>) {
    out.extend_from_slice(&FOOTER_MAGIC.to_le_bytes());
    let crc = checksum::crc32c(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Checks magic, kind and version range of a file's first bytes, and that the file is long
/// enough for a footer and ends with the footer magic. Does not read the body (cheap at open).
pub fn check_frame(file: &[u8], kind: FileKind, min: u32, max: u32) -> Result<Header, CodecError> {
    if file.len() < HEADER_LEN + FOOTER_LEN {
        return Err(CodecError::Truncated {
            offset: 0,
            needed: HEADER_LEN + FOOTER_LEN,
            available: file.len(),
        });
    }
    let magic = u32::from_le_bytes(file[0..4].try_into().expect("4 bytes"));
    if magic != HEADER_MAGIC {
        return Err(CodecError::BadMagic {
            expected: HEADER_MAGIC,
            found: magic,
        });
    }
    let found_kind = FileKind(file[4..8].try_into().expect("4 bytes"));
    if found_kind != kind {
        return Err(CodecError::WrongKind {
            expected: kind.to_string(),
            found: found_kind.to_string(),
        });
    }
    let version = u32::from_le_bytes(file[8..12].try_into().expect("4 bytes"));
    if version < min {
        return Err(CodecError::TooOld {
            found: version,
            min,
        });
    }
    if version > max {
        return Err(CodecError::TooNew {
            found: version,
            max,
        });
    }
    let fpos = file.len() - FOOTER_LEN;
    let fmagic = u32::from_le_bytes(file[fpos..fpos + 4].try_into().expect("4 bytes"));
    if fmagic != FOOTER_MAGIC {
        return Err(CodecError::BadMagic {
            expected: FOOTER_MAGIC,
            found: fmagic,
        });
    }
    Ok(Header { kind, version })
}

/// Verifies the footer CRC over the whole file.
pub fn check_crc(file: &[u8]) -> Result<(), CodecError> {
    if file.len() < FOOTER_LEN {
        return Err(CodecError::Truncated {
            offset: 0,
            needed: FOOTER_LEN,
            available: file.len(),
        });
    }
    let split = file.len() - 4;
    let stored = u32::from_le_bytes(file[split..].try_into().expect("4 bytes"));
    let computed = checksum::crc32c(&file[..split]);
    if stored != computed {
        return Err(CodecError::Checksum { stored, computed });
    }
    Ok(())
}

/// The body between header and footer (call after [`check_frame`]).
pub fn body(file: &[u8]) -> &[u8] {
    &file[HEADER_LEN..file.len() - FOOTER_LEN]
}

/// Format v3: the size of a checksummed chunk. Chunks are aligned to absolute file offsets
/// (chunk `i` is `[i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE)`), so they coincide with OS pages and
/// with `O_DIRECT` pages of the buffer pool.
pub const CHUNK_SIZE: usize = 4096;
/// Magic of the chunk-table trailer (`"QCHK"`).
pub const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"QCHK");
/// Length of the chunk-table trailer: covered length (u64), chunk size (u32), magic.
pub const CHUNK_TRAILER_LEN: usize = 16;

/// The number of chunks of a file whose header and body are `covered` bytes long.
pub fn chunk_count(covered: u64) -> u64 {
    covered.div_ceil(CHUNK_SIZE as u64)
}

/// Computes the per-chunk CRC32C table of a file (format v3) while its header and body are
/// written, in pieces of any size.
#[derive(Debug, Default, Clone)]
pub struct ChunkSums {
    crcs: Vec<u32>,
    current: u32,
    fill: usize,
    covered: u64,
}

impl ChunkSums {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next bytes of the file (header first, then body).
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.covered += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = (CHUNK_SIZE - self.fill).min(bytes.len());
            self.current = checksum::crc32c_append(self.current, &bytes[..take]);
            self.fill += take;
            bytes = &bytes[take..];
            if self.fill == CHUNK_SIZE {
                self.crcs.push(self.current);
                self.current = 0;
                self.fill = 0;
            }
        }
    }

    /// The chunk table and its trailer, to be written after the body and before the footer:
    /// one CRC32C (u32 LE) per chunk, then covered length (u64 LE), chunk size (u32 LE) and
    /// `"QCHK"`.
    pub fn finish(mut self) -> Vec<u8> {
        if self.fill > 0 {
            self.crcs.push(self.current);
        }
        let mut out = Vec::with_capacity(self.crcs.len() * 4 + CHUNK_TRAILER_LEN);
        for c in &self.crcs {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&self.covered.to_le_bytes());
        out.extend_from_slice(&(CHUNK_SIZE as u32).to_le_bytes());
        out.extend_from_slice(&CHUNK_MAGIC.to_le_bytes());
        out
    }
}

/// Validates the chunk-table trailer (the `CHUNK_TRAILER_LEN` bytes before the footer) of a
/// file of `file_len` bytes; returns the covered length (where the table starts).
pub fn parse_chunk_trailer(file_len: u64, trailer: &[u8]) -> Result<u64, CodecError> {
    if trailer.len() != CHUNK_TRAILER_LEN {
        return Err(CodecError::Truncated {
            offset: 0,
            needed: CHUNK_TRAILER_LEN,
            available: trailer.len(),
        });
    }
    let magic = u32::from_le_bytes(trailer[12..16].try_into().expect("4 bytes"));
    if magic != CHUNK_MAGIC {
        return Err(CodecError::BadMagic {
            expected: CHUNK_MAGIC,
            found: magic,
        });
    }
    let size = u32::from_le_bytes(trailer[8..12].try_into().expect("4 bytes"));
    if size as usize != CHUNK_SIZE {
        return Err(CodecError::Invalid {
            what: format!("chunk size {size}, expected {CHUNK_SIZE}"),
        });
    }
    let covered = u64::from_le_bytes(trailer[0..8].try_into().expect("8 bytes"));
    let expected = (covered as u128)
        + 4 * u128::from(chunk_count(covered))
        + (CHUNK_TRAILER_LEN + FOOTER_LEN) as u128;
    if covered < HEADER_LEN as u64 || expected != u128::from(file_len) {
        return Err(CodecError::Invalid {
            what: format!(
                "chunk table of {covered} covered bytes does not fit a file of {file_len} bytes"
            ),
        });
    }
    Ok(covered)
}

#[cfg(test)]
mod tests {
    use super::*;
    const K: FileKind = FileKind(*b"TEST");

    fn sample() -> Vec<u8> {
        let mut f = Vec::new();
        Header {
            kind: K,
            version: 3,
        }
        .write(&mut f);
        f.extend_from_slice(b"payload");
        write_footer(&mut f);
        f
    }

    #[test]
    fn roundtrip_and_every_flip_detected() {
        let f = sample();
        assert_eq!(check_frame(&f, K, 1, 3).unwrap().version, 3);
        check_crc(&f).unwrap();
        assert_eq!(body(&f), b"payload");
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            let framed = check_frame(&g, K, 1, 3).is_ok();
            assert!(!(framed && check_crc(&g).is_ok()), "flip at {i} undetected");
        }
    }

    #[test]
    fn chunk_sums_match_chunks_whatever_the_pieces() {
        let data: Vec<u8> = (0..3 * CHUNK_SIZE + 100)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut whole = ChunkSums::new();
        whole.update(&data);
        let mut pieces = ChunkSums::new();
        for p in data.chunks(1000) {
            pieces.update(p);
        }
        let table = whole.finish();
        assert_eq!(table, pieces.finish());
        assert_eq!(table.len(), 4 * 4 + CHUNK_TRAILER_LEN);
        for (i, c) in data.chunks(CHUNK_SIZE).enumerate() {
            let stored = u32::from_le_bytes(table[i * 4..i * 4 + 4].try_into().unwrap());
            assert_eq!(stored, checksum::crc32c(c));
        }
        let file_len = (data.len() + table.len() + FOOTER_LEN) as u64;
        let trailer = &table[table.len() - CHUNK_TRAILER_LEN..];
        assert_eq!(
            parse_chunk_trailer(file_len, trailer).unwrap(),
            data.len() as u64
        );
        assert!(parse_chunk_trailer(file_len + 1, trailer).is_err());
        for i in 0..CHUNK_TRAILER_LEN {
            let mut bad = trailer.to_vec();
            bad[i] ^= 0x04;
            assert!(parse_chunk_trailer(file_len, &bad).is_err(), "flip {i}");
        }
    }

    #[test]
    fn version_range_and_truncation() {
        let f = sample();
        assert!(matches!(
            check_frame(&f, K, 4, 5),
            Err(CodecError::TooOld { .. })
        ));
        assert!(matches!(
            check_frame(&f, K, 1, 2),
            Err(CodecError::TooNew { .. })
        ));
        assert!(matches!(
            check_frame(&f, FileKind(*b"XXXX"), 1, 3),
            Err(CodecError::WrongKind { .. })
        ));
        for n in 0..f.len() {
            let t = &f[..n];
            assert!(check_frame(t, K, 1, 3).is_err() || check_crc(t).is_err());
        }
    }
}
