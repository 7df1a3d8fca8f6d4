//! One value per row, read by row number in place: the compressed integer column that
//! per-document values (Lucene's doc values, Tantivy's fast fields) are built from.
//!
//! Values are `u64`s; signed integers, floats and dates map onto them so that the unsigned order
//! is the natural order ([`i64_to_sortable`], [`f64_to_sortable`]). The writer measures four
//! encodings and keeps the smallest (the simpler one on a tie), as Lucene's
//! `Lucene90DocValuesConsumer` and Tantivy's `columnar` do:
//! - `constant`: every value the same; nothing per row;
//! - `bitpacked`: `(v - min) / gcd` in a fixed number of bits (timestamps in whole seconds stored
//!   as milliseconds have a gcd of 1,000);
//! - `table`: at most 256 distinct values, each row an index into a sorted table (a carrier
//!   code, a rating);
//! - `blocks`: a `bitpacked` layout per block of [`BLOCK`] rows, each block with its own base
//!   and width (values that trend, such as times in arrival order);
//! - `linear`: per block, a line through its first and last value (slope in 32.32 fixed point)
//!   and each row's distance above the line, bit-packed (what Lucene's `DirectMonotonicWriter`
//!   and Tantivy's blockwise-linear codec do for monotonic values: ids in insertion order, the
//!   sort field of a sorted index, timestamps of a log); a block whose fit does not pay keeps
//!   slope 0.
//!
//! Every encoding keeps, per block of [`BLOCK`] rows, the block's minimum and maximum: a range
//! filter or a top-k by value skips the blocks that cannot match without reading their rows.
//!
//! Reading never panics on corrupt bytes: [`Column::open`] checks every length and offset, and
//! the table is padded to `2^width` entries so that any packed index is in range. (The bytes are
//! covered by the checksum of the file that holds them.)
//!
//! Layout, little-endian: a 32-byte header (`encoding: u8`, `width: u8`, `table_len: u16`,
//! `len: u32`, `base: u64`, `gcd: u64`, `blocks: u32`, 4 zero bytes), then the table
//! (`table_len` × u64), then per block its statistics (`min: u64`, `max: u64`) and, for the
//! `blocks` encoding, its packing (`base: u64`, `bit offset: u32`, `width: u8`, 3 zero bytes),
//! for `linear` (`base: u64`, `slope: i64`, `bit offset: u32`, `width: u8`, 3 zero bytes), then
//! the packed bits, least significant first, followed by 16 zero bytes.
use crate::error::CodecError;

/// Rows per block (statistics, and the `blocks` encoding's unit).
pub const BLOCK: usize = 1024;

const HEADER: usize = 32;
const PAD: usize = 16;
const STATS_ENTRY: usize = 16;
const PACK_ENTRY: usize = 16;
const LINEAR_ENTRY: usize = 24;
const MAX_TABLE: usize = 256;

/// How a column's rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Constant,
    Bitpacked,
    Table,
    Blocks,
    Linear,
}

impl Encoding {
    fn code(self) -> u8 {
        match self {
            Encoding::Constant => 0,
            Encoding::Bitpacked => 1,
            Encoding::Table => 2,
            Encoding::Blocks => 3,
            Encoding::Linear => 4,
        }
    }

    fn from_code(c: u8) -> Option<Encoding> {
        [
            Encoding::Constant,
            Encoding::Bitpacked,
            Encoding::Table,
            Encoding::Blocks,
            Encoding::Linear,
        ]
        .into_iter()
        .find(|e| e.code() == c)
    }

    /// The name `inspect` shows.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Constant => "constant",
            Encoding::Bitpacked => "bitpacked",
            Encoding::Table => "table",
            Encoding::Blocks => "blocks",
            Encoding::Linear => "linear",
        }
    }
}

/// `v` mapped so that unsigned order is signed order.
#[inline]
pub fn i64_to_sortable(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// The inverse of [`i64_to_sortable`].
#[inline]
pub fn sortable_to_i64(v: u64) -> i64 {
    (v ^ (1 << 63)) as i64
}

/// `v` mapped so that unsigned order is the IEEE total order (`-0.0` before `0.0`, NaNs at the
/// ends).
#[inline]
pub fn f64_to_sortable(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`f64_to_sortable`].
#[inline]
pub fn sortable_to_f64(v: u64) -> f64 {
    if v >> 63 == 1 {
        f64::from_bits(v & !(1 << 63))
    } else {
        f64::from_bits(!v)
    }
}

/// Bits needed for values up to `max`.
fn bits(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn packed_bytes(rows: usize, width: u8) -> usize {
    (rows * width as usize).div_ceil(8)
}

/// The line's value at row `i` of its block: `slope` is in 32.32 fixed point, rounded down.
#[inline]
fn line(slope: i64, i: usize) -> u64 {
    ((i128::from(slope) * i as i128) >> 32) as i64 as u64
}

/// One block of the `linear` encoding: the line's base and slope and the width of the rows'
/// distances above it.
#[derive(Clone, Copy)]
struct LinearBlock {
    base: u64,
    slope: i64,
    width: u8,
}

/// The `linear` packing of one block: the line through its first and last value when its
/// distances take fewer bits than those above the block's minimum, else slope 0.
fn fit_line(c: &[u64], lo: u64, hi: u64) -> LinearBlock {
    let flat = LinearBlock {
        base: lo,
        slope: 0,
        width: bits(hi - lo),
    };
    let n = c.len();
    if n < 3 {
        return flat;
    }
    let rise = i128::from(c[n - 1]) - i128::from(c[0]);
    let Ok(slope) = i64::try_from((rise << 32) / (n as i128 - 1)) else {
        return flat;
    };
    // Distances to the line, signed: the base is the lowest, so that every row is above it.
    let (mut dlo, mut dhi) = (i128::MAX, i128::MIN);
    for (i, &v) in c.iter().enumerate() {
        let d = i128::from(v) - i128::from(line(slope, i) as i64);
        dlo = dlo.min(d);
        dhi = dhi.max(d);
    }
    match u64::try_from(dhi - dlo) {
        Ok(span) if bits(span) < flat.width => LinearBlock {
            base: dlo as u64,
            slope,
            width: bits(span),
        },
        _ => flat,
    }
}

/// Appends `width`-bit values to a bit stream.
struct BitWriter {
    bytes: Vec<u8>,
    acc: u128,
    filled: u32,
}

impl BitWriter {
    fn new() -> BitWriter {
        BitWriter {
            bytes: Vec::new(),
            acc: 0,
            filled: 0,
        }
    }

    fn bit_len(&self) -> usize {
        self.bytes.len() * 8 + self.filled as usize
    }

    fn put(&mut self, v: u64, width: u8) {
        if width == 0 {
            return;
        }
        self.acc |= u128::from(v) << self.filled;
        self.filled += u32::from(width);
        while self.filled >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.filled -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.filled > 0 {
            self.bytes.push(self.acc as u8);
        }
        self.bytes.extend_from_slice(&[0; PAD]);
        self.bytes
    }
}

/// Encodes `values` into the smallest of the four encodings (see the module documentation).
pub fn encode(values: &[u64]) -> Vec<u8> {
    let len = values.len();
    let (min, max) = values
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let min = if len == 0 { 0 } else { min };
    let g = values.iter().fold(0, |g, &v| gcd(g, v - min)).max(1);
    let mut distinct: Vec<u64> = Vec::new();
    for &v in values {
        if let Err(at) = distinct.binary_search(&v) {
            if distinct.len() == MAX_TABLE {
                distinct.clear();
                break;
            }
            distinct.insert(at, v);
        }
    }
    let blocks = len.div_ceil(BLOCK);
    let packed_width = bits((max - min) / g);
    // Each block's (min, max): its statistics, and its base and width in the `blocks` encoding.
    let block_bounds: Vec<(u64, u64)> = values
        .chunks(BLOCK)
        .map(|c| {
            c.iter()
                .fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)))
        })
        .collect();
    let block_widths: Vec<(u64, u8)> = block_bounds
        .iter()
        .map(|&(lo, hi)| (lo, bits((hi - lo) / g)))
        .collect();
    let mut choice = (Encoding::Bitpacked, packed_bytes(len, packed_width));
    if !distinct.is_empty() {
        let w = bits(distinct.len() as u64 - 1);
        let size = 8 * (1 << w) + packed_bytes(len, w);
        if size < choice.1 {
            choice = (Encoding::Table, size);
        }
    }
    let blocks_size = block_widths
        .iter()
        .map(|&(_, w)| PACK_ENTRY + packed_bytes(BLOCK, w))
        .sum::<usize>();
    if blocks_size < choice.1 {
        choice = (Encoding::Blocks, blocks_size);
    }
    let lines: Vec<LinearBlock> = values
        .chunks(BLOCK)
        .zip(&block_bounds)
        .map(|(c, &(lo, hi))| fit_line(c, lo, hi))
        .collect();
    let linear_size = lines
        .iter()
        .map(|l| LINEAR_ENTRY + packed_bytes(BLOCK, l.width))
        .sum::<usize>();
    if linear_size < choice.1 {
        choice = (Encoding::Linear, linear_size);
    }
    if len > 0 && min == max {
        choice = (Encoding::Constant, 0);
    }

    let (width, table_len, base, step) = match choice.0 {
        Encoding::Constant => (0u8, 0usize, min, 1u64),
        Encoding::Bitpacked => (packed_width, 0, min, g),
        Encoding::Table => {
            let w = bits(distinct.len() as u64 - 1);
            (w, 1usize << w, 0, 1)
        }
        Encoding::Blocks => (0, 0, 0, g),
        Encoding::Linear => (0, 0, 0, 1),
    };
    let mut out = Vec::with_capacity(HEADER + 8 * table_len + 32 * blocks + choice.1 + PAD);
    out.push(choice.0.code());
    out.push(width);
    out.extend_from_slice(&(table_len as u16).to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&base.to_le_bytes());
    out.extend_from_slice(&step.to_le_bytes());
    out.extend_from_slice(&(blocks as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    if choice.0 == Encoding::Table {
        for i in 0..table_len {
            // Padded with the largest value so that every `width`-bit index is in range.
            let v = distinct[i.min(distinct.len() - 1)];
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    for &(lo, hi) in &block_bounds {
        out.extend_from_slice(&lo.to_le_bytes());
        out.extend_from_slice(&hi.to_le_bytes());
    }
    let mut w = BitWriter::new();
    match choice.0 {
        Encoding::Constant => {}
        Encoding::Bitpacked => values.iter().for_each(|&v| w.put((v - min) / g, width)),
        Encoding::Table => values.iter().for_each(|&v| {
            let idx = distinct.binary_search(&v).unwrap_or(0) as u64;
            w.put(idx, width)
        }),
        Encoding::Blocks => {
            let mut entries = Vec::with_capacity(blocks * PACK_ENTRY);
            for (c, &(lo, bw)) in values.chunks(BLOCK).zip(&block_widths) {
                entries.extend_from_slice(&lo.to_le_bytes());
                entries.extend_from_slice(&(w.bit_len() as u32).to_le_bytes());
                entries.push(bw);
                entries.extend_from_slice(&[0; 3]);
                c.iter().for_each(|&v| w.put((v - lo) / g, bw));
            }
            out.extend_from_slice(&entries);
        }
        Encoding::Linear => {
            let mut entries = Vec::with_capacity(blocks * LINEAR_ENTRY);
            for (c, l) in values.chunks(BLOCK).zip(&lines) {
                entries.extend_from_slice(&l.base.to_le_bytes());
                entries.extend_from_slice(&l.slope.to_le_bytes());
                entries.extend_from_slice(&(w.bit_len() as u32).to_le_bytes());
                entries.push(l.width);
                entries.extend_from_slice(&[0; 3]);
                for (i, &v) in c.iter().enumerate() {
                    w.put(
                        v.wrapping_sub(l.base).wrapping_sub(line(l.slope, i)),
                        l.width,
                    );
                }
            }
            out.extend_from_slice(&entries);
        }
    }
    out.extend_from_slice(&w.finish());
    out
}

/// A column read in place from its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    encoding: Encoding,
    width: u8,
    len: usize,
    base: u64,
    step: u64,
    table: &'a [u8],
    stats: &'a [u8],
    packing: &'a [u8],
    data: &'a [u8],
}

fn invalid(what: impl Into<String>) -> CodecError {
    CodecError::Invalid { what: what.into() }
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Block `b`'s bit offset and width in a packing of `entry_len`-byte entries (`blocks`: base,
/// offset, width; `linear`: base, slope, offset, width).
#[inline]
fn block_packing(packing: &[u8], entry_len: usize, b: usize) -> (usize, u8) {
    let at = b * entry_len + entry_len - 8;
    let offset = u32::from_le_bytes(packing[at..at + 4].try_into().expect("4 bytes")) as usize;
    (offset, packing[at + 4])
}

impl<'a> Column<'a> {
    /// Checks the layout of `bytes` (every length and offset) and returns the column; reads
    /// after this cannot go out of bounds.
    pub fn open(bytes: &'a [u8]) -> Result<Column<'a>, CodecError> {
        let need = |offset: usize, needed: usize| {
            if offset
                .checked_add(needed)
                .is_none_or(|end| end > bytes.len())
            {
                Err(CodecError::Truncated {
                    offset,
                    needed,
                    available: bytes.len().saturating_sub(offset),
                })
            } else {
                Ok(())
            }
        };
        need(0, HEADER)?;
        let encoding = Encoding::from_code(bytes[0])
            .ok_or_else(|| invalid(format!("unknown column encoding {}", bytes[0])))?;
        let width = bytes[1];
        let table_len = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
        let len = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
        let base = le64(bytes, 8);
        let step = le64(bytes, 16);
        let blocks = u32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes")) as usize;
        if width > 64 || step == 0 || blocks != len.div_ceil(BLOCK) {
            return Err(invalid(format!(
                "column header: width {width}, gcd {step}, {blocks} blocks for {len} rows"
            )));
        }
        let expected_table = match encoding {
            Encoding::Table => 1usize << width.min(8),
            _ => 0,
        };
        if table_len != expected_table || (encoding == Encoding::Table && width > 8) {
            return Err(invalid(format!(
                "column table of {table_len} entries for width {width}"
            )));
        }
        let mut at = HEADER;
        need(at, 8 * table_len)?;
        let table = &bytes[at..at + 8 * table_len];
        at += table.len();
        need(at, STATS_ENTRY * blocks)?;
        let stats = &bytes[at..at + STATS_ENTRY * blocks];
        at += stats.len();
        let entry_len = match encoding {
            Encoding::Blocks => PACK_ENTRY,
            Encoding::Linear => LINEAR_ENTRY,
            _ => 0,
        };
        let packing_len = entry_len * blocks;
        need(at, packing_len)?;
        let packing = &bytes[at..at + packing_len];
        at += packing_len;
        let data_bits = match encoding {
            Encoding::Constant => 0,
            Encoding::Bitpacked | Encoding::Table => len * width as usize,
            Encoding::Blocks | Encoding::Linear => {
                let mut end = 0usize;
                for b in 0..blocks {
                    let (offset, w) = block_packing(packing, entry_len, b);
                    let rows = BLOCK.min(len - b * BLOCK);
                    if w > 64 || offset != end {
                        return Err(invalid(format!(
                            "column block {b}: width {w} at bit {offset}, expected bit {end}"
                        )));
                    }
                    end = offset + rows * w as usize;
                }
                end
            }
        };
        need(at, data_bits.div_ceil(8) + PAD)?;
        let data = &bytes[at..];
        Ok(Column {
            encoding,
            width,
            len,
            base,
            step,
            table,
            stats,
            packing,
            data,
        })
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column has no row.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The encoding the writer chose.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The number of blocks of [`BLOCK`] rows (the last may be shorter).
    pub fn num_blocks(&self) -> usize {
        self.stats.len() / STATS_ENTRY
    }

    /// The smallest and largest value of block `b`.
    #[inline]
    pub fn block_bounds(&self, b: usize) -> (u64, u64) {
        (
            le64(self.stats, b * STATS_ENTRY),
            le64(self.stats, b * STATS_ENTRY + 8),
        )
    }

    /// The `width`-bit value starting at bit `pos` of the data.
    #[inline]
    fn bits_at(&self, pos: usize, width: u8) -> u64 {
        if width == 0 {
            return 0;
        }
        let byte = pos / 8;
        let shift = (pos % 8) as u32;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        if width <= 56 {
            (le64(self.data, byte) >> shift) & mask
        } else {
            let w = u128::from_le_bytes(self.data[byte..byte + 16].try_into().expect("16 bytes"));
            ((w >> shift) as u64) & mask
        }
    }

    /// The value of row `row`.
    ///
    /// # Panics
    /// When `row >= len()`.
    #[inline]
    pub fn get(&self, row: usize) -> u64 {
        assert!(row < self.len, "row {row} of a column of {} rows", self.len);
        match self.encoding {
            Encoding::Constant => self.base,
            Encoding::Bitpacked => self.base.wrapping_add(
                self.step
                    .wrapping_mul(self.bits_at(row * self.width as usize, self.width)),
            ),
            Encoding::Table => {
                let i = self.bits_at(row * self.width as usize, self.width) as usize;
                le64(self.table, 8 * i)
            }
            Encoding::Blocks => {
                let (offset, w) = block_packing(self.packing, PACK_ENTRY, row / BLOCK);
                let base = le64(self.packing, (row / BLOCK) * PACK_ENTRY);
                base.wrapping_add(
                    self.step
                        .wrapping_mul(self.bits_at(offset + (row % BLOCK) * w as usize, w)),
                )
            }
            Encoding::Linear => {
                let b = row / BLOCK;
                let (offset, w) = block_packing(self.packing, LINEAR_ENTRY, b);
                let base = le64(self.packing, b * LINEAR_ENTRY);
                let slope = le64(self.packing, b * LINEAR_ENTRY + 8) as i64;
                let i = row % BLOCK;
                base.wrapping_add(line(slope, i))
                    .wrapping_add(self.bits_at(offset + i * w as usize, w))
            }
        }
    }

    /// The values of rows `start..start + out.len()` into `out`: [`Column::get`] of each row,
    /// decoded a run at a time (the aggregations' and range filters' bulk read).
    ///
    /// # Panics
    /// When the rows run past `len()`.
    pub fn get_range(&self, start: usize, out: &mut [u64]) {
        let end = start + out.len();
        assert!(
            end <= self.len,
            "rows {start}..{end} of a column of {} rows",
            self.len
        );
        match self.encoding {
            Encoding::Constant => out.fill(self.base),
            Encoding::Bitpacked => {
                let (base, step) = (self.base, self.step);
                let pos = start * self.width as usize;
                if step == 1 {
                    self.unpack(pos, self.width, out, |_, v| base.wrapping_add(v));
                } else {
                    self.unpack(pos, self.width, out, |_, v| {
                        base.wrapping_add(step.wrapping_mul(v))
                    });
                }
            }
            Encoding::Table => {
                // Indexes are below 2^width and the table holds 2^width entries (`open`).
                let table = self.table;
                self.unpack(start * self.width as usize, self.width, out, |_, i| {
                    le64(table, 8 * i as usize)
                });
            }
            Encoding::Blocks | Encoding::Linear => {
                let mut row = start;
                let mut done = 0;
                while row < end {
                    let b = row / BLOCK;
                    let i = row % BLOCK;
                    let n = (BLOCK - i).min(end - row);
                    let piece = &mut out[done..done + n];
                    if self.encoding == Encoding::Blocks {
                        let (offset, w) = block_packing(self.packing, PACK_ENTRY, b);
                        let base = le64(self.packing, b * PACK_ENTRY);
                        let step = self.step;
                        self.unpack(offset + i * w as usize, w, piece, |_, v| {
                            base.wrapping_add(step.wrapping_mul(v))
                        });
                    } else {
                        let (offset, w) = block_packing(self.packing, LINEAR_ENTRY, b);
                        let base = le64(self.packing, b * LINEAR_ENTRY);
                        let slope = le64(self.packing, b * LINEAR_ENTRY + 8) as i64;
                        self.unpack(offset + i * w as usize, w, piece, |k, v| {
                            base.wrapping_add(line(slope, i + k)).wrapping_add(v)
                        });
                    }
                    row += n;
                    done += n;
                }
            }
        }
    }

    /// The `width`-bit values starting at bit `pos`, one after another, each mapped by
    /// `f(index, bits)` into `out`.
    #[inline(always)]
    fn unpack(&self, pos: usize, width: u8, out: &mut [u64], f: impl Fn(usize, u64) -> u64) {
        if width == 0 {
            for (k, v) in out.iter_mut().enumerate() {
                *v = f(k, 0);
            }
        } else if width <= 56 {
            let mask = (1u64 << width) - 1;
            let w = width as usize;
            if let Some(last) = out.len().checked_sub(1) {
                // `open` checked that the data holds every row's bits and 16 bytes more: the
                // last value's word is inside.
                assert!((pos + last * w) / 8 + 8 <= self.data.len());
            }
            let data = self.data.as_ptr();
            for (k, v) in out.iter_mut().enumerate() {
                let p = pos + k * w;
                // SAFETY: p / 8 + 8 <= (pos + last * w) / 8 + 8 <= data.len(), asserted above.
                let word = unsafe { data.add(p / 8).cast::<u64>().read_unaligned() };
                *v = f(k, (u64::from_le(word) >> (p % 8)) & mask);
            }
        } else {
            for (k, v) in out.iter_mut().enumerate() {
                *v = f(k, self.bits_at(pos + k * width as usize, width));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(values: &[u64]) -> Encoding {
        let bytes = encode(values);
        let c = Column::open(&bytes).unwrap();
        assert_eq!(c.len(), values.len());
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(c.get(i), v, "row {i} ({:?})", c.encoding());
        }
        // Bulk reads from every offset class: block starts, within blocks, across them.
        for start in [0, 1, 1000, 1023, 1024, 2047, 2500] {
            if start < values.len() {
                let mut got = vec![0; (values.len() - start).min(2100)];
                c.get_range(start, &mut got);
                assert_eq!(&got[..], &values[start..start + got.len()], "from {start}");
            }
        }
        for (b, chunk) in values.chunks(BLOCK).enumerate() {
            let want = (*chunk.iter().min().unwrap(), *chunk.iter().max().unwrap());
            assert_eq!(c.block_bounds(b), want);
        }
        c.encoding()
    }

    #[test]
    fn each_encoding_is_chosen_where_it_is_smallest() {
        assert_eq!(round_trip(&[7; 3000]), Encoding::Constant);
        let seconds: Vec<u64> = (0..5000)
            .map(|i| 1_600_000_000_000 + (i * 7919 % 5000) * 1000)
            .collect();
        assert_eq!(round_trip(&seconds), Encoding::Bitpacked);
        let carriers: Vec<u64> = (0..5000)
            .map(|i| [3, 1 << 40, 99, u64::MAX][i % 4])
            .collect();
        assert_eq!(round_trip(&carriers), Encoding::Table);
        // A level per block, noise within: a line through a block does not help.
        let steps: Vec<u64> = (0..10_000)
            .map(|i| (i / 1024) * 1_000_000_000 + (i * 7919 % 1000))
            .collect();
        assert_eq!(round_trip(&steps), Encoding::Blocks);
        // Ids in insertion order with gaps, a falling trend: each block is near a line.
        let ids: Vec<u64> = (0..10_000).map(|i| 1000 + 3 * i + (i % 2)).collect();
        assert_eq!(round_trip(&ids), Encoding::Linear);
        let bytes = encode(&ids);
        assert!(
            bytes.len() < 10_000 / 4 + 24 * 10 + 16 * 10 + 64,
            "{}",
            bytes.len()
        );
        let falling: Vec<u64> = (0..5000u64)
            .map(|i| u64::MAX - 1_000_003 * i - (i * 31 % 17))
            .collect();
        assert_eq!(round_trip(&falling), Encoding::Linear);
        let trend: Vec<u64> = (0..10_000).map(|i| 1_000_000 * i + (i * 31 % 17)).collect();
        assert_eq!(round_trip(&trend), Encoding::Linear);
        // A jump within blocks, extreme values: slopes past 32.32 fall back to slope 0.
        let extreme: Vec<u64> = (0..3000u64)
            .map(|i| if i % 1024 < 512 { i } else { u64::MAX - i })
            .collect();
        round_trip(&extreme);
        round_trip(&[0, u64::MAX, 0]);
        round_trip(&[]);
        round_trip(&[0, u64::MAX]);
        round_trip(&[u64::MAX; 2]);
    }

    #[test]
    fn sortable_mappings_keep_order_and_invert() {
        let ints = [i64::MIN, -5, -1, 0, 1, 42, i64::MAX];
        for w in ints.windows(2) {
            assert!(i64_to_sortable(w[0]) < i64_to_sortable(w[1]));
        }
        for v in ints {
            assert_eq!(sortable_to_i64(i64_to_sortable(v)), v);
        }
        let floats = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            2.5,
            f64::INFINITY,
        ];
        for w in floats.windows(2) {
            assert!(
                f64_to_sortable(w[0]) < f64_to_sortable(w[1]),
                "{} {}",
                w[0],
                w[1]
            );
        }
        for v in floats {
            assert_eq!(sortable_to_f64(f64_to_sortable(v)).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn corrupt_columns_are_refused_not_panicked_on() {
        let values: Vec<u64> = (0..3000).map(|i| i * i).collect();
        let bytes = encode(&values);
        for cut in [0, 5, HEADER, bytes.len() / 2, bytes.len() - 1] {
            assert!(Column::open(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // Flipping any byte either is refused or reads without panicking.
        for i in 0..bytes.len().min(400) {
            let mut b = bytes.clone();
            b[i] ^= 0xA5;
            if let Ok(c) = Column::open(&b) {
                for r in (0..c.len()).step_by(97) {
                    let _ = c.get(r);
                }
                for bl in 0..c.num_blocks() {
                    let _ = c.block_bounds(bl);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn every_column_round_trips(
            base in any::<u64>(),
            spread in 0u32..64,
            mult in 1u64..2000,
            n in 0usize..4000,
            few in any::<bool>(),
            sorted in any::<bool>(),
            seed in any::<u64>(),
            start in 0usize..4000,
        ) {
            let mut x = seed | 1;
            let values: Vec<u64> = (0..n).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let r = if few { x % 5 } else if spread == 0 { 0 } else { x >> (64 - spread) };
                base.wrapping_add(r.wrapping_mul(mult))
            }).collect();
            let mut values = values;
            if sorted {
                values.sort_unstable();
            }
            let bytes = encode(&values);
            let c = Column::open(&bytes).unwrap();
            prop_assert_eq!(c.len(), n);
            let mut all = vec![0; n];
            c.get_range(0, &mut all);
            prop_assert_eq!(&all, &values);
            for (i, &v) in values.iter().enumerate().step_by(7) {
                prop_assert_eq!(c.get(i), v);
            }
            let start = start.min(n);
            let mut tail = vec![0; n - start];
            c.get_range(start, &mut tail);
            prop_assert_eq!(&tail[..], &values[start..]);
        }
    }
}
