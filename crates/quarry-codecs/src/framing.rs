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
