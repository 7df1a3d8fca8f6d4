//! Stored fields: documents' original values, in LZ4-compressed blocks of about 16 KiB.
//!
//! File `<segment>.store`: header; blocks; a block index of `(first_doc u32, offset u64)` per
//! block; footer. The index's offset and block count are in the segment meta. A block
//! decompresses to `vu32 n`, `n` × `vu32 doc_len`, then the documents' bytes. A document is
//! `vu32 count` values of `vu32 field_id, u8 tag, payload` (tag 0: `vu64 len` + UTF-8, tag 1:
//! i64 LE). Spec: `docs/format/stored.md`.
use quarry_codecs::reader::PutLe;
use quarry_codecs::{varint, ByteReader, CodecError};
use serde_json::{Map, Value};

use crate::document::{Document, FieldValue};
use crate::error::InFile;
use crate::schema::Schema;
use crate::Result;

/// Uncompressed bytes per block before it is cut.
const BLOCK_TARGET: usize = 16 * 1024;
const INDEX_ENTRY: usize = 12;

/// Encodes a document's stored values (fields whose schema says `stored`).
pub fn encode_doc(schema: &Schema, doc: &Document, out: &mut Vec<u8>) {
    out.clear();
    let stored: Vec<&(u32, FieldValue)> = doc
        .values
        .iter()
        .filter(|(f, _)| schema.field(*f).stored)
        .collect();
    varint::write_u32(out, stored.len() as u32);
    for (f, v) in stored {
        varint::write_u32(out, *f);
        match v {
            FieldValue::Str(s) => {
                out.push(0);
                out.put_len_prefixed(s.as_bytes());
            }
            FieldValue::Int(i) => {
                out.push(1);
                out.put_u64(*i as u64);
            }
        }
    }
}

/// Decodes a document into a JSON object (multi-valued fields become arrays).
pub fn decode_doc(schema: &Schema, bytes: &[u8]) -> Result<Map<String, Value>, CodecError> {
    let mut r = ByteReader::new(bytes);
    let n = r.vu32()?;
    let mut out = Map::new();
    for _ in 0..n {
        let f = r.vu32()?;
        let entry = schema
            .fields()
            .get(f as usize)
            .ok_or_else(|| CodecError::Invalid {
                what: format!("stored field id {f} not in schema"),
            })?;
        let v = match r.u8()? {
            0 => Value::String(String::from_utf8(r.len_prefixed()?.to_vec()).map_err(|_| {
                CodecError::Invalid {
                    what: "stored string is not UTF-8".into(),
                }
            })?),
            1 => Value::from(r.u64()? as i64),
            t => {
                return Err(CodecError::Invalid {
                    what: format!("stored value tag {t}"),
                })
            }
        };
        match out.get_mut(&entry.name) {
            None => {
                out.insert(entry.name.clone(), v);
            }
            Some(Value::Array(a)) => a.push(v),
            Some(prev) => {
                let first = prev.take();
                *prev = Value::Array(vec![first, v]);
            }
        }
    }
    Ok(out)
}

/// Accumulates encoded documents into compressed blocks, each kept in its own buffer so that a
/// large segment never regrows (and copies) one big buffer.
pub struct StoredWriter {
    /// The file so far, as parts: the header, then one part per block.
    parts: Vec<Vec<u8>>,
    len: u64,
    index: Vec<(u32, u64)>,
    lens: Vec<u32>,
    data: Vec<u8>,
    first_doc: u32,
    docs: u32,
}

impl StoredWriter {
    /// `header` is the file's header, so block offsets are file offsets.
    pub fn new(header: Vec<u8>) -> Self {
        let len = header.len() as u64;
        Self {
            parts: vec![header],
            len,
            index: Vec::new(),
            lens: Vec::new(),
            data: Vec::new(),
            first_doc: 0,
            docs: 0,
        }
    }
    pub fn add(&mut self, encoded: &[u8]) {
        self.lens.push(encoded.len() as u32);
        self.data.extend_from_slice(encoded);
        self.docs += 1;
        if self.data.len() >= BLOCK_TARGET {
            self.cut();
        }
    }
    pub fn doc_count(&self) -> u32 {
        self.docs
    }
    /// Bytes held (for the RAM budget).
    pub fn mem_bytes(&self) -> usize {
        self.len as usize + self.data.capacity() + self.lens.capacity() * 4
    }
    fn cut(&mut self) {
        if self.lens.is_empty() {
            return;
        }
        let mut raw = Vec::with_capacity(self.data.len() + self.lens.len() * 2 + 5);
        varint::write_u32(&mut raw, self.lens.len() as u32);
        for &l in &self.lens {
            varint::write_u32(&mut raw, l);
        }
        raw.extend_from_slice(&self.data);
        self.index.push((self.first_doc, self.len));
        let compressed = lz4_flex::compress(&raw);
        let mut part = Vec::with_capacity(compressed.len() + 10);
        varint::write_u32(&mut part, raw.len() as u32);
        part.put_len_prefixed(&compressed);
        self.len += part.len() as u64;
        self.parts.push(part);
        self.first_doc = self.docs;
        self.lens.clear();
        self.data.clear();
    }
    /// Finishes blocks and appends the block index; returns (file parts, index offset, block
    /// count).
    pub fn finish(mut self) -> (Vec<Vec<u8>>, u64, u32) {
        self.cut();
        let index_offset = self.len;
        let mut index = Vec::with_capacity(self.index.len() * INDEX_ENTRY);
        for &(d, o) in &self.index {
            index.put_u32(d);
            index.put_u64(o);
        }
        self.parts.push(index);
        (self.parts, index_offset, self.index.len() as u32)
    }
}

/// Locates and decodes stored blocks. The block index is read in place; a lookup reads one block.
pub struct StoredIndex<'a> {
    file: &'a str,
    index: &'a [u8],
    data_end: u64,
    doc_count: u32,
}

impl<'a> StoredIndex<'a> {
    /// `index` is the block index (`blocks` entries); blocks end where the index starts.
    pub fn new(
        file: &'a str,
        index: &'a [u8],
        blocks: u32,
        data_end: u64,
        doc_count: u32,
    ) -> Result<Self> {
        if index.len() != blocks as usize * INDEX_ENTRY {
            return Err(crate::Error::corrupt(
                file,
                "stored-fields block index has the wrong size",
            ));
        }
        Ok(Self {
            file,
            index,
            data_end,
            doc_count,
        })
    }

    pub fn blocks(&self) -> u32 {
        (self.index.len() / INDEX_ENTRY) as u32
    }

    fn entry(&self, i: u32) -> (u32, u64) {
        let o = i as usize * INDEX_ENTRY;
        let e = &self.index[o..o + INDEX_ENTRY];
        (
            u32::from_le_bytes(e[0..4].try_into().expect("4")),
            u64::from_le_bytes(e[4..12].try_into().expect("8")),
        )
    }

    /// Block `i`'s first doc and byte range in the file.
    pub fn block_range(&self, i: u32) -> Result<(u32, u64, u64)> {
        let (first, start) = self.entry(i);
        let end = if i + 1 < self.blocks() {
            self.entry(i + 1).1
        } else {
            self.data_end
        };
        if start > end || end > self.data_end {
            return Err(crate::Error::corrupt(
                self.file,
                format!("stored block {i} has a bad offset"),
            ));
        }
        Ok((first, start, end))
    }

    /// The block holding `doc`.
    pub fn block_of(&self, doc: u32) -> Result<u32> {
        if doc >= self.doc_count || self.blocks() == 0 {
            return Err(crate::Error::InvalidArgument(format!(
                "doc {doc} out of range ({} docs)",
                self.doc_count
            )));
        }
        let (mut lo, mut hi) = (0u32, self.blocks());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.entry(mid).0 <= doc {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

/// Decompresses one block (its exact bytes): per-doc lengths and the documents' bytes.
pub fn decode_block(file: &str, block: &[u8]) -> Result<(Vec<u32>, Vec<u8>)> {
    let parse = || -> Result<(Vec<u32>, Vec<u8>), CodecError> {
        let mut r = ByteReader::new(block);
        let raw_len = r.vu32()? as usize;
        let compressed = r.len_prefixed()?;
        if raw_len > 255 * compressed.len() + 1024 {
            return Err(CodecError::Invalid {
                what: format!("stored block claims {raw_len} bytes"),
            });
        }
        let raw = lz4_flex::decompress(compressed, raw_len).map_err(|e| CodecError::Invalid {
            what: format!("stored block: {e}"),
        })?;
        let mut rr = ByteReader::new(&raw);
        let n = rr.vu32()?;
        if n as usize > raw.len() {
            return Err(CodecError::Invalid {
                what: format!("stored block claims {n} docs"),
            });
        }
        let mut lens = Vec::with_capacity(n as usize);
        for _ in 0..n {
            lens.push(rr.vu32()?);
        }
        let data = raw[rr.position()..].to_vec();
        if lens.iter().map(|&l| l as usize).sum::<usize>() != data.len() {
            return Err(CodecError::Invalid {
                what: "stored block: lengths do not add up".into(),
            });
        }
        Ok((lens, data))
    };
    parse().in_file(file)
}

/// The bytes of document `k` of a decoded block.
pub fn doc_in_block<'b>(file: &str, lens: &[u32], data: &'b [u8], k: usize) -> Result<&'b [u8]> {
    if k >= lens.len() {
        return Err(crate::Error::corrupt(
            file,
            format!("stored block has {} docs, wanted #{k}", lens.len()),
        ));
    }
    let start: usize = lens[..k].iter().map(|&l| l as usize).sum();
    Ok(&data[start..start + lens[k] as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_many_blocks() {
        let schema = Schema::builder()
            .integer("id")
            .text("body", true)
            .text("hidden", false)
            .build();
        let mut w = StoredWriter::new(vec![0; 16]);
        let mut buf = Vec::new();
        for i in 0..3000i64 {
            let mut d = Document::new();
            d.add(&schema, "id", FieldValue::Int(i - 5)).unwrap();
            d.add(
                &schema,
                "body",
                FieldValue::Str(format!("doc {i} ").repeat((i % 13) as usize)),
            )
            .unwrap();
            d.add(&schema, "body", FieldValue::Str("x".into())).unwrap();
            d.add(&schema, "hidden", FieldValue::Str("secret".into()))
                .unwrap();
            encode_doc(&schema, &d, &mut buf);
            w.add(&buf);
        }
        let (parts, off, blocks) = w.finish();
        let bytes = parts.concat();
        assert!(blocks > 1);
        let index = &bytes[off as usize..];
        let r = StoredIndex::new("t.store", index, blocks, off, 3000).unwrap();
        for i in [0u32, 1, 777, 2999] {
            let b = r.block_of(i).unwrap();
            let (first, s, e) = r.block_range(b).unwrap();
            let (lens, data) = decode_block("t.store", &bytes[s as usize..e as usize]).unwrap();
            let m = decode_doc(
                &schema,
                doc_in_block("t", &lens, &data, (i - first) as usize).unwrap(),
            )
            .unwrap();
            assert_eq!(m["id"], Value::from(i as i64 - 5));
            assert_eq!(m["body"].as_array().unwrap().len(), 2);
            assert!(m.get("hidden").is_none());
        }
        assert!(r.block_of(3000).is_err());
    }
}
