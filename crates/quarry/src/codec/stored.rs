//! Stored fields: documents' original values, in zstd-compressed blocks of about 8 KiB (LZ4
//! before format v4, 16 KiB before v7).
//!
//! File `<segment>.store`: header; blocks; a block index of `(first_doc u32, offset u64)` per
//! block; footer. The index's offset and block count are in the segment meta. A block
//! decompresses to `vu32 n`, `n` × `vu32 doc_len`, then the documents' bytes. A document is
//! `vu32 count` entries of `vu32 field_id, u8 tag, payload` (tag 0: `vu64 len` + UTF-8, tag 1:
//! i64 LE; since format v2 also tag 2: an array, `vu32 n` then `n` × (`u8 tag`, payload) of
//! scalar tags; tag 3: null, no payload; tag 4: boolean, one byte 0/1; tag 5: f64 LE). Spec:
//! `docs/format/stored.md`.
use quarry_codecs::reader::PutLe;
use quarry_codecs::{varint, ByteReader, CodecError};
use serde_json::{Map, Value};

use crate::document::{Document, FieldValue, Shape};
use crate::error::InFile;
use crate::schema::Schema;
use crate::Result;

/// Uncompressed bytes per block before it is cut: a hit decompresses its whole block, so the
/// block size is a fresh process's fetch time (16 KiB before format v7).
const BLOCK_TARGET: usize = 8 * 1024;
/// From this format version on, blocks are compressed with zstd (before: LZ4).
pub const ZSTD_SINCE: u32 = 4;
/// The zstd level of stored blocks: the fastest of the standard levels; on Wikipedia text its
/// 16 KiB blocks are about 30 % smaller than LZ4's.
const ZSTD_LEVEL: i32 = 1;
const INDEX_ENTRY: usize = 12;

const TAG_STR: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_ARRAY: u8 = 2;
const TAG_NULL: u8 = 3;
const TAG_BOOL: u8 = 4;
const TAG_FLOAT: u8 = 5;
/// A vector (format v9): `vu32 n`, then `n` f32 LE.
const TAG_VECTOR: u8 = 6;

/// Encodes a document's stored values (fields whose schema says `stored`). Values a JSON array
/// gave are one array entry; a `null` is a null entry; other values are one entry each.
pub fn encode_doc(schema: &Schema, doc: &Document, out: &mut Vec<u8>) {
    out.clear();
    let stored = |f: u32| schema.field(f).stored;
    if doc.shapes.is_empty() {
        let n = doc.values.iter().filter(|(f, _)| stored(*f)).count();
        varint::write_u32(out, n as u32);
        for (f, v) in doc.values.iter().filter(|(f, _)| stored(*f)) {
            varint::write_u32(out, *f);
            put_scalar(out, v);
        }
        return;
    }
    let mut body = Vec::with_capacity(64);
    let mut count = 0u32;
    let (values, shapes) = (&doc.values, &doc.shapes);
    let (mut i, mut si) = (0usize, 0usize);
    loop {
        let at = shapes.get(si).map(|s| match *s {
            Shape::Array { start, .. } => start as usize,
            Shape::Null { at, .. } => at as usize,
        });
        if let Some(at) = at.filter(|&at| at <= i) {
            match shapes[si] {
                Shape::Null { field, .. } => {
                    if stored(field) {
                        varint::write_u32(&mut body, field);
                        body.push(TAG_NULL);
                        count += 1;
                    }
                }
                Shape::Array { field, len, .. } => {
                    let end = (at + len as usize).min(values.len());
                    if stored(field) {
                        varint::write_u32(&mut body, field);
                        body.push(TAG_ARRAY);
                        varint::write_u32(&mut body, (end - at) as u32);
                        for (_, v) in &values[at..end] {
                            put_scalar(&mut body, v);
                        }
                        count += 1;
                    }
                    i = i.max(end);
                }
            }
            si += 1;
            continue;
        }
        let Some((f, v)) = values.get(i) else { break };
        if stored(*f) {
            varint::write_u32(&mut body, *f);
            put_scalar(&mut body, v);
            count += 1;
        }
        i += 1;
    }
    varint::write_u32(out, count);
    out.extend_from_slice(&body);
}

/// One scalar value: its tag, then its payload.
fn put_scalar(out: &mut Vec<u8>, v: &FieldValue) {
    match v {
        FieldValue::Str(s) => {
            out.push(TAG_STR);
            out.put_len_prefixed(s.as_bytes());
        }
        FieldValue::Int(i) => {
            out.push(TAG_INT);
            out.put_u64(*i as u64);
        }
        FieldValue::Bool(b) => {
            out.push(TAG_BOOL);
            out.push(u8::from(*b));
        }
        FieldValue::Float(x) => {
            out.push(TAG_FLOAT);
            out.put_u64(x.to_bits());
        }
        FieldValue::Vector(v) => {
            out.push(TAG_VECTOR);
            varint::write_u32(out, v.len() as u32);
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

/// Reads one scalar value of tag `tag`.
fn get_scalar(r: &mut ByteReader<'_>, tag: u8) -> Result<Value, CodecError> {
    Ok(match tag {
        TAG_STR => Value::String(String::from_utf8(r.len_prefixed()?.to_vec()).map_err(|_| {
            CodecError::Invalid {
                what: "stored string is not UTF-8".into(),
            }
        })?),
        TAG_INT => Value::from(r.u64()? as i64),
        TAG_BOOL => match r.u8()? {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => {
                return Err(CodecError::Invalid {
                    what: format!("stored boolean byte {b}"),
                })
            }
        },
        TAG_FLOAT => {
            let x = f64::from_bits(r.u64()?);
            serde_json::Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| CodecError::Invalid {
                    what: format!("stored float {x} is not finite"),
                })?
        }
        TAG_VECTOR => {
            let n = r.vu32()? as usize;
            if n > r.remaining() / 4 {
                return Err(CodecError::Invalid {
                    what: format!("stored vector claims {n} values"),
                });
            }
            let bytes = r.bytes(n * 4)?;
            Value::Array(
                bytes
                    .chunks_exact(4)
                    .map(|c| {
                        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        // The shortest decimal that reads back as this f32 (0.1, not
                        // 0.10000000149011612).
                        let shortest: f64 = x.to_string().parse().unwrap_or(f64::from(x));
                        serde_json::Number::from_f64(shortest)
                            .map(Value::Number)
                            .unwrap_or(Value::Null)
                    })
                    .collect(),
            )
        }
        t => {
            return Err(CodecError::Invalid {
                what: format!("stored value tag {t}"),
            })
        }
    })
}

/// Decodes a document into a JSON object: an array entry becomes a JSON array (also with one
/// or no element), a null entry `null`; a field with several entries becomes an array of their
/// values in order (array entries contribute their elements), a field with one scalar entry a
/// plain value.
pub fn decode_doc(schema: &Schema, bytes: &[u8]) -> Result<Map<String, Value>, CodecError> {
    let mut r = ByteReader::new(bytes);
    let n = r.vu32()?;
    let mut out = Map::new();
    // Fields whose current value is an array made by joining several entries, or given as one.
    let mut arrays: Vec<u32> = Vec::new();
    for _ in 0..n {
        let f = r.vu32()?;
        let entry = schema
            .fields()
            .get(f as usize)
            .ok_or_else(|| CodecError::Invalid {
                what: format!("stored field id {f} not in schema"),
            })?;
        let (v, is_array) = match r.u8()? {
            TAG_ARRAY => {
                let len = r.vu32()? as usize;
                if len > r.remaining() / 2 {
                    return Err(CodecError::Invalid {
                        what: format!("stored array claims {len} values"),
                    });
                }
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    let tag = r.u8()?;
                    items.push(get_scalar(&mut r, tag)?);
                }
                (Value::Array(items), true)
            }
            TAG_NULL => (Value::Null, false),
            tag => (get_scalar(&mut r, tag)?, false),
        };
        match out.get_mut(&entry.name) {
            None => {
                out.insert(entry.name.clone(), v);
                if is_array {
                    arrays.push(f);
                }
            }
            Some(prev) => {
                let mut items = match prev.take() {
                    Value::Array(a) if arrays.contains(&f) => a,
                    first => {
                        arrays.push(f);
                        vec![first]
                    }
                };
                match v {
                    Value::Array(more) if is_array => items.extend(more),
                    v => items.push(v),
                }
                *prev = Value::Array(items);
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
    /// Bytes in `parts`.
    parts_bytes: usize,
    /// The file's length so far (parts taken by [`take_parts`](Self::take_parts) included).
    len: u64,
    index: Vec<(u32, u64)>,
    lens: Vec<u32>,
    data: Vec<u8>,
    first_doc: u32,
    docs: u32,
    /// Reused between blocks (created with the first).
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl StoredWriter {
    /// `header` is the file's header, so block offsets are file offsets.
    pub fn new(header: Vec<u8>) -> Self {
        let len = header.len() as u64;
        Self {
            parts: vec![header],
            parts_bytes: len as usize,
            len,
            index: Vec::new(),
            lens: Vec::new(),
            data: Vec::new(),
            first_doc: 0,
            docs: 0,
            zstd: None,
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
        self.parts_bytes + self.data.capacity() + self.lens.capacity() * 4
    }
    /// Bytes of finished blocks not yet taken by [`take_parts`](Self::take_parts).
    pub fn pending_bytes(&self) -> usize {
        self.parts_bytes
    }
    /// Hands over the file's bytes so far (header and finished blocks, in order), so that they
    /// can be written out early; [`finish`](Self::finish) then returns only the rest.
    pub fn take_parts(&mut self) -> Vec<Vec<u8>> {
        self.parts_bytes = 0;
        std::mem::take(&mut self.parts)
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
        let compressed = self.compress(&raw);
        let mut part = Vec::with_capacity(compressed.len() + 10);
        varint::write_u32(&mut part, raw.len() as u32);
        part.put_len_prefixed(&compressed);
        self.len += part.len() as u64;
        self.parts_bytes += part.len();
        self.parts.push(part);
        self.first_doc = self.docs;
        self.lens.clear();
        self.data.clear();
    }
    /// Compresses one block's raw bytes with zstd (format v4).
    fn compress(&mut self, raw: &[u8]) -> Vec<u8> {
        let zstd = match &mut self.zstd {
            Some(z) => Some(z),
            None => zstd::bulk::Compressor::new(ZSTD_LEVEL)
                .ok()
                .map(|z| self.zstd.insert(z)),
        };
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
        match zstd.map(|z| z.compress_to_buffer(raw, &mut out)) {
            Some(Ok(_)) => out,
            // zstd fails only to allocate its context: do as Rust does when memory runs out.
            _ => panic!(
                "zstd could not compress a stored block of {} bytes",
                raw.len()
            ),
        }
    }

    /// Finishes blocks and appends the block index; returns (file parts not yet taken, index
    /// offset, block count).
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

thread_local! {
    /// One zstd decompression context per thread, reused by every block read.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses a zstd block of exactly `raw_len` bytes.
fn zstd_decompress(compressed: &[u8], raw_len: usize) -> Result<Vec<u8>, CodecError> {
    let invalid = |e: std::io::Error| CodecError::Invalid {
        what: format!("stored block: {e}"),
    };
    let mut out = Vec::with_capacity(raw_len);
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        let d = match &mut *d {
            Some(d) => d,
            None => d.insert(zstd::bulk::Decompressor::new().map_err(invalid)?),
        };
        d.decompress_to_buffer(compressed, &mut out)
            .map_err(invalid)
    })?;
    if out.len() != raw_len {
        return Err(CodecError::Invalid {
            what: format!(
                "stored block decompresses to {} bytes, not {raw_len}",
                out.len()
            ),
        });
    }
    Ok(out)
}

/// Decompresses one block (its exact bytes) of a stored fields file of format `version`:
/// per-doc lengths and the documents' bytes.
pub fn decode_block(file: &str, version: u32, block: &[u8]) -> Result<(Vec<u32>, Vec<u8>)> {
    let parse = || -> Result<(Vec<u32>, Vec<u8>), CodecError> {
        let mut r = ByteReader::new(block);
        let raw_len = r.vu32()? as usize;
        let compressed = r.len_prefixed()?;
        // LZ4 expands at most 255 times; zstd far more, but not beyond 64 Ki times plus a block.
        let max_ratio = if version >= ZSTD_SINCE { 1 << 16 } else { 255 };
        if raw_len > max_ratio * compressed.len() + (1 << 16) {
            return Err(CodecError::Invalid {
                what: format!("stored block claims {raw_len} bytes"),
            });
        }
        let raw = if version >= ZSTD_SINCE {
            zstd_decompress(compressed, raw_len)?
        } else {
            lz4_flex::decompress(compressed, raw_len).map_err(|e| CodecError::Invalid {
                what: format!("stored block: {e}"),
            })?
        };
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
    use crate::codec::format;

    #[test]
    fn roundtrip_many_blocks() {
        let schema = Schema::builder()
            .integer("id")
            .text("body", true)
            .text("hidden", false)
            .build();
        let mut w = StoredWriter::new(vec![0; 16]);
        let mut buf = Vec::new();
        // Parts taken early (as the indexer writes them out) plus the rest make the same file.
        let mut taken: Vec<Vec<u8>> = Vec::new();
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
            if i % 700 == 0 {
                assert!(w.mem_bytes() >= w.pending_bytes());
                taken.extend(w.take_parts());
                assert_eq!(w.pending_bytes(), 0);
            }
        }
        let (parts, off, blocks) = w.finish();
        taken.extend(parts);
        let bytes = taken.concat();
        assert_eq!(&bytes[..16], &[0; 16]);
        assert!(blocks > 1);
        let index = &bytes[off as usize..];
        let r = StoredIndex::new("t.store", index, blocks, off, 3000).unwrap();
        for i in [0u32, 1, 777, 2999] {
            let b = r.block_of(i).unwrap();
            let (first, s, e) = r.block_range(b).unwrap();
            let (lens, data) =
                decode_block("t.store", format::VERSION, &bytes[s as usize..e as usize]).unwrap();
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

    fn frame(raw_len: usize, compressed: &[u8]) -> Vec<u8> {
        let mut block = Vec::new();
        varint::write_u32(&mut block, raw_len as u32);
        block.put_len_prefixed(compressed);
        block
    }

    #[test]
    fn v3_lz4_blocks_still_decode_and_v4_blocks_are_zstd() {
        // A raw block: two documents of 3 and 2 bytes.
        let raw = [2u8, 3, 2, b'a', b'b', b'c', b'd', b'e'];
        let lz4 = frame(raw.len(), &lz4_flex::compress(&raw));
        let (lens, data) = decode_block("t.store", 3, &lz4).unwrap();
        assert_eq!((lens, data), (vec![3, 2], b"abcde".to_vec()));
        // The same bytes are no zstd frame: a v4 reader reports them as damaged.
        assert!(decode_block("t.store", 4, &lz4).is_err());
        let z = frame(raw.len(), &zstd::bulk::compress(&raw, 1).unwrap());
        let (lens, data) = decode_block("t.store", 4, &z).unwrap();
        assert_eq!((lens, data), (vec![3, 2], b"abcde".to_vec()));
        // A claimed length the compressed bytes cannot hold is refused before allocating.
        assert!(decode_block("t.store", 4, &frame(1 << 30, b"xx")).is_err());
    }

    #[test]
    fn a_very_compressible_document_round_trips() {
        let schema = Schema::builder().text("body", true).build();
        let mut w = StoredWriter::new(vec![0; 16]);
        let mut d = Document::new();
        d.add(&schema, "body", FieldValue::Str("a".repeat(1 << 20)))
            .unwrap();
        let mut buf = Vec::new();
        encode_doc(&schema, &d, &mut buf);
        w.add(&buf);
        let (parts, off, blocks) = w.finish();
        let bytes = parts.concat();
        assert!(bytes.len() < 1 << 12, "{} bytes", bytes.len());
        let r = StoredIndex::new("t.store", &bytes[off as usize..], blocks, off, 1).unwrap();
        let (_, s, e) = r.block_range(0).unwrap();
        let (lens, data) =
            decode_block("t.store", format::VERSION, &bytes[s as usize..e as usize]).unwrap();
        let m = decode_doc(&schema, doc_in_block("t", &lens, &data, 0).unwrap()).unwrap();
        assert_eq!(m["body"].as_str().unwrap().len(), 1 << 20);
    }

    fn roundtrip(schema: &Schema, json: &str) -> Value {
        let d = Document::from_json(schema, json).unwrap();
        let mut buf = Vec::new();
        encode_doc(schema, &d, &mut buf);
        Value::Object(decode_doc(schema, &buf).unwrap())
    }

    #[test]
    fn json_documents_come_back_as_they_went_in() {
        let schema = Schema::builder()
            .integer("id")
            .text("tags", true)
            .text("body", true)
            .keyword("user.name")
            .boolean("ok")
            .float("price")
            .text("hidden", false)
            .build();
        for json in [
            r#"{"id":1,"tags":["energy"],"body":"x"}"#,
            r#"{"id":2,"tags":[],"body":null}"#,
            r#"{"tags":["a","b","c"],"ok":false,"price":2.5,"id":-7}"#,
            r#"{"price":[1.5,-0.25,1e300],"ok":[true]}"#,
            r#"{"id":3,"body":"é\u0000z","tags":null}"#,
            r#"{}"#,
        ] {
            let want: Value = serde_json::from_str(json).unwrap();
            assert_eq!(roundtrip(&schema, json), want, "{json}");
        }
        // Nested objects come back flattened (dotted names); unstored fields do not come back.
        assert_eq!(
            roundtrip(&schema, r#"{"user":{"name":"n"},"hidden":["s"],"id":4}"#),
            serde_json::json!({"user.name": "n", "id": 4})
        );
        // Integers given to a float field come back as floats.
        assert_eq!(
            roundtrip(&schema, r#"{"price":3}"#),
            serde_json::json!({"price": 3.0})
        );
    }

    #[test]
    fn entries_of_one_field_join_into_one_array() {
        let schema = Schema::builder().integer("a.b").build();
        assert_eq!(
            roundtrip(&schema, r#"{"a":{"b":[1]},"a.b":[2,3]}"#),
            serde_json::json!({"a.b": [1, 2, 3]})
        );
        assert_eq!(
            roundtrip(&schema, r#"{"a":{"b":1},"a.b":2}"#),
            serde_json::json!({"a.b": [1, 2]})
        );
    }

    #[test]
    fn bad_v2_values_are_errors() {
        let schema = Schema::builder().integer("id").build();
        // field 0, array of 1000 values with 2 bytes left.
        let mut b = vec![1, 0, TAG_ARRAY];
        varint::write_u32(&mut b, 1000);
        b.extend_from_slice(&[TAG_INT, 0]);
        assert!(decode_doc(&schema, &b).is_err());
        assert!(decode_doc(&schema, &[1, 0, TAG_BOOL, 2]).is_err());
        let mut nan = vec![1, 0, TAG_FLOAT];
        nan.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
        assert!(decode_doc(&schema, &nan).is_err());
        assert!(decode_doc(&schema, &[1, 0, 6]).is_err());
        // An array may not nest another array or a null.
        assert!(decode_doc(&schema, &[1, 0, TAG_ARRAY, 1, TAG_ARRAY, 0]).is_err());
        assert!(decode_doc(&schema, &[1, 0, TAG_ARRAY, 1, TAG_NULL]).is_err());
    }
}
