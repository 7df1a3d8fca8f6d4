//! How fast do quarry's integer codecs decode, next to how fast this machine can stream memory?
//!
//! `quarry-bench codecs` (and every `run`, whose report gets the figures) measures, on one core,
//! through the public API of `quarry-codecs` (so faster kernels added there show up here):
//! - bit-packed blocks of 128 (`BlockCodec::unpack`, frequency blocks) for every width 0..=32,
//!   once per unpack kernel this CPU can run (`quarry_codecs::Kernel`: scalar, sse, avx2;
//!   the report names the one the engine uses);
//! - delta-coded sorted blocks (`BlockCodec::unpack_sorted`, doc-id blocks) for every width that
//!   a sorted block of u32 can have, per kernel as well;
//! - dense doc-id blocks (format v5 bitsets, `quarry_codecs::dense`) of 2..=16 64-bit words, i.e.
//!   128 ids in a range of 128..=1024, with the scalar decoder and, where the CPU has it, the
//!   AVX-512 one;
//! - LEB128 varints (`varint::read_u32`) by encoded length 1..=5 bytes;
//! - the postings tail (the last block of a list, fewer than 128 documents): per document one
//!   u64 varint `delta << 1 | (freq == 1)` and, when freq > 1, a u32 varint, decoded with
//!   `varint::read_u64` / `read_u32` the way the postings reader does;
//! - per-document columns (`quarry_codecs::column`, what range filters, sorts and aggregations
//!   read) in each of their encodings (`bitpacked`, `table`, `blocks`, `linear`; 64 Ki rows),
//!   read row by row (`Column::get`, a sort's access) and a block of 1,024 rows at a time
//!   (`Column::get_range`, an aggregation's and a range filter's);
//! - the streaming read bandwidth of main memory (a buffer four times the last-level cache, summed
//!   as u64 words), and from it each width's memory-bound decode rate: bandwidth / (width / 8)
//!   integers per second, the most a decoder could deliver if its input came from RAM.
//!
//! Inputs are a few hundred blocks that stay in the L2 cache, so the decode figures are compute
//! bound; each figure is the best of several timed passes of at least `millis` milliseconds.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use quarry_codecs::{varint, BlockCodec, Kernel, BLOCK_LEN};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Args)]
pub struct CodecArgs {
    /// Minimum duration of one timed pass, milliseconds (each figure is the best of 3 passes).
    #[arg(long, default_value_t = 40)]
    pub millis: u64,
    /// Streaming buffer for the bandwidth figure, MiB (default: 4x the last-level cache, at
    /// least 256 MiB, at most 2048 MiB).
    #[arg(long)]
    pub buffer_mb: Option<usize>,
    /// Print the JSON record instead of the Markdown table.
    #[arg(long)]
    pub json: bool,
}

/// One decode figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecodeFigure {
    /// `bitpacked`, `bitpacked_sorted`, `dense`, `varint_u32`, `tail`, or `column_<encoding>`.
    pub codec: String,
    /// Bits per value (bit-packed), 64-bit words per block (dense), bytes per value (varint), or
    /// 0 (tail).
    pub width: u32,
    /// The unpack kernel of bit-packed figures (`scalar`, `sse`, `avx2`), the access of column
    /// figures (`get`, `get_range`); empty for the varint codecs (and in reports written before
    /// kernels were measured).
    #[serde(default)]
    pub kernel: String,
    /// Integers decoded per second on one core.
    pub ints_per_sec: f64,
    /// Encoded input consumed per second, bytes.
    pub input_bytes_per_sec: f64,
    /// Encoded bytes per integer.
    pub bytes_per_int: f64,
    /// Integers per second the measured memory bandwidth could feed at this density (none for
    /// width 0, which reads no input).
    pub memory_bound_ints_per_sec: Option<f64>,
}

/// The whole micro-benchmark.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CodecReport {
    /// Streaming read bandwidth of main memory on one core, bytes per second.
    pub memory_read_bytes_per_sec: f64,
    pub memory_buffer_bytes: u64,
    pub millis_per_pass: u64,
    /// The kernel the engine unpacks with in this process (`QUARRY_SIMD` or the best available).
    #[serde(default)]
    pub default_kernel: String,
    pub figures: Vec<DecodeFigure>,
    pub notes: String,
}

/// A deterministic xorshift generator (no dependency, same inputs every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in 0..=max.
    fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.next()
        } else {
            self.next() % (max + 1)
        }
    }
}

const BLOCKS: usize = 256;
const PASSES: usize = 3;

/// Runs `pass` (which returns the integers it decoded) repeatedly for at least `min` per timed
/// pass; returns the best rate in integers per second.
fn best_rate(min: Duration, mut pass: impl FnMut() -> u64) -> f64 {
    black_box(pass());
    let mut best = 0.0f64;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut ints = 0u64;
        while start.elapsed() < min {
            ints += pass();
        }
        best = best.max(ints as f64 / start.elapsed().as_secs_f64());
    }
    best
}

/// Blocks of values of exactly `bits` bits (one value per block reaches the top bit).
fn bitpacked_inputs(codec: &BlockCodec, bits: u32, rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let max = if bits == 0 { 0 } else { (1u64 << bits) - 1 };
    let mut bytes = Vec::new();
    let mut widths = Vec::new();
    for _ in 0..BLOCKS {
        let mut block = [0u32; BLOCK_LEN];
        for v in block.iter_mut() {
            *v = rng.upto(max) as u32;
        }
        block[rng.upto(BLOCK_LEN as u64 - 1) as usize] = max as u32;
        widths.push(codec.pack(&block, &mut bytes));
    }
    (bytes, widths)
}

/// Strictly increasing blocks whose gaps (to the previous value; the first to the block's base)
/// need exactly `bits` bits; `None` when 128 such gaps do not fit in u32 (or `bits` is 0,
/// which a strictly increasing block cannot have).
fn sorted_inputs(
    codec: &BlockCodec,
    bits: u32,
    rng: &mut Rng,
) -> Option<(Vec<u8>, Vec<u8>, Vec<u32>)> {
    if bits == 0 {
        return None;
    }
    let max = (1u64 << bits) - 1;
    let span = max * BLOCK_LEN as u64;
    if span > u64::from(u32::MAX) {
        return None;
    }
    let mut bytes = Vec::new();
    let mut widths = Vec::new();
    let mut bases = Vec::new();
    let mut base = 0u64;
    for _ in 0..BLOCKS {
        if base + span > u64::from(u32::MAX) {
            base = 0;
        }
        let top = rng.upto(BLOCK_LEN as u64 - 1) as usize;
        let mut block = [0u32; BLOCK_LEN];
        let mut v = base;
        for (i, x) in block.iter_mut().enumerate() {
            v += if i == top { max } else { 1 + rng.upto(max - 1) };
            *x = v as u32;
        }
        bases.push(base as u32);
        widths.push(codec.pack_sorted(base as u32, &block, &mut bytes));
        base = v;
    }
    Some((bytes, widths, bases))
}

/// [`BLOCKS`] dense blocks of `words` words each: 128 distinct ids in `0..64 * words`, the last
/// word never empty.
fn dense_inputs(words: usize, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = Vec::new();
    let range = 64 * words as u64;
    for _ in 0..BLOCKS {
        let mut set = std::collections::BTreeSet::new();
        set.insert(range as u32 - 1);
        while set.len() < BLOCK_LEN {
            set.insert(rng.upto(range - 1) as u32);
        }
        let docs: Vec<u32> = set.into_iter().collect();
        quarry_codecs::dense::encode(0, &docs, &mut bytes);
    }
    bytes
}

fn decode_dense(d: quarry_codecs::dense::Decoder, bytes: &[u8], words: usize) -> u64 {
    let mut out = [0u32; BLOCK_LEN];
    let mut sum = 0u32;
    for (i, block) in bytes.chunks_exact(words * 8).enumerate() {
        sum = sum.wrapping_add(d(i as u32, block, &mut out) as u32);
        sum = sum.wrapping_add(out[BLOCK_LEN - 1]);
    }
    black_box(sum);
    (bytes.len() / (words * 8) * BLOCK_LEN) as u64
}

fn decode_packed(codec: &BlockCodec, bytes: &[u8], widths: &[u8]) -> u64 {
    let mut out = [0u32; BLOCK_LEN];
    let mut off = 0;
    let mut sum = 0u32;
    for &w in widths {
        off += codec
            .unpack(&bytes[off..], w, &mut out)
            .expect("valid block");
        sum = sum.wrapping_add(out[BLOCK_LEN - 1]);
    }
    black_box(sum);
    (widths.len() * BLOCK_LEN) as u64
}

fn decode_sorted(codec: &BlockCodec, bytes: &[u8], widths: &[u8], bases: &[u32]) -> u64 {
    let mut out = [0u32; BLOCK_LEN];
    let mut off = 0;
    let mut sum = 0u32;
    for (&w, &base) in widths.iter().zip(bases) {
        off += codec
            .unpack_sorted(base, &bytes[off..], w, &mut out)
            .expect("valid block");
        sum = sum.wrapping_add(out[BLOCK_LEN - 1]);
    }
    black_box(sum);
    (widths.len() * BLOCK_LEN) as u64
}

/// Streaming read bandwidth: sum a large buffer of u64 words, best of 3 passes.
pub(crate) fn memory_bandwidth(buffer_bytes: usize) -> f64 {
    let words = buffer_bytes / 8;
    // Written with non-zero data so every page is really backed by memory.
    let buf: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let mut best = 0.0f64;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut acc = [0u64; 8];
        for chunk in buf.chunks_exact(8) {
            for (a, &w) in acc.iter_mut().zip(chunk) {
                *a = a.wrapping_add(w);
            }
        }
        black_box(acc);
        best = best.max((words * 8) as f64 / start.elapsed().as_secs_f64());
    }
    best
}

/// Size of the last-level cache from sysfs, bytes.
pub(crate) fn last_level_cache_bytes() -> Option<usize> {
    let mut best = None;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(size) = std::fs::read_to_string(format!("{dir}/size")) else {
            break;
        };
        let size = size.trim();
        let (num, mult) = match size.strip_suffix('K') {
            Some(n) => (n, 1024),
            None => match size.strip_suffix('M') {
                Some(n) => (n, 1024 * 1024),
                None => (size, 1),
            },
        };
        if let Ok(n) = num.parse::<usize>() {
            best = Some(best.unwrap_or(0).max(n * mult));
        }
    }
    best
}

pub fn measure(args: &CodecArgs) -> CodecReport {
    let min = Duration::from_millis(args.millis.max(1));
    let buffer = args.buffer_mb.map(|m| m << 20).unwrap_or_else(|| {
        (last_level_cache_bytes().unwrap_or(64 << 20) * 4).clamp(256 << 20, 2048 << 20)
    });
    let bandwidth = memory_bandwidth(buffer);
    let codec = BlockCodec::new();
    let mut rng = Rng(0x5EED_C0DE_CAFE_F00D);
    let mut figures = Vec::new();
    let mut push = |codec: &str, kernel: &str, width: u32, rate: f64, bytes_per_int: f64| {
        figures.push(DecodeFigure {
            codec: codec.into(),
            width,
            kernel: kernel.into(),
            ints_per_sec: rate,
            input_bytes_per_sec: rate * bytes_per_int,
            bytes_per_int,
            memory_bound_ints_per_sec: (bytes_per_int > 0.0).then(|| bandwidth / bytes_per_int),
        });
    };
    let kernels = Kernel::available_kernels();
    for bits in 0..=32u32 {
        let (bytes, widths) = bitpacked_inputs(&codec, bits, &mut rng);
        for &k in &kernels {
            let kc = BlockCodec::with_kernel(k);
            let rate = best_rate(min, || decode_packed(&kc, &bytes, &widths));
            push("bitpacked", k.name(), bits, rate, f64::from(bits) / 8.0);
        }
    }
    for bits in 0..=32u32 {
        let Some((bytes, widths, bases)) = sorted_inputs(&codec, bits, &mut rng) else {
            continue;
        };
        for &k in &kernels {
            let kc = BlockCodec::with_kernel(k);
            let rate = best_rate(min, || decode_sorted(&kc, &bytes, &widths, &bases));
            push(
                "bitpacked_sorted",
                k.name(),
                bits,
                rate,
                f64::from(bits) / 8.0,
            );
        }
    }
    for words in [2usize, 3, 4, 6, 8, 16] {
        let bytes = dense_inputs(words, &mut rng);
        let mut decoders: Vec<(&str, quarry_codecs::dense::Decoder)> =
            vec![("scalar", quarry_codecs::dense::decode_scalar)];
        if let Some(d) = quarry_codecs::dense::avx512_decoder() {
            decoders.push(("avx512", d));
        }
        for (name, d) in decoders {
            let rate = best_rate(min, || decode_dense(d, &bytes, words));
            push(
                "dense",
                name,
                words as u32,
                rate,
                (words * 8) as f64 / BLOCK_LEN as f64,
            );
        }
    }
    for len in 1..=5u32 {
        let lo = if len == 1 { 0 } else { 1u64 << (7 * (len - 1)) };
        let hi = ((1u64 << (7 * len).min(32)) - 1).min(u64::from(u32::MAX));
        let mut bytes = Vec::new();
        let n = BLOCKS * BLOCK_LEN;
        for _ in 0..n {
            varint::write_u32(&mut bytes, (lo + rng.upto(hi - lo)) as u32);
        }
        let rate = best_rate(min, || {
            let mut pos = 0;
            let mut sum = 0u32;
            while pos < bytes.len() {
                sum = sum.wrapping_add(varint::read_u32(&bytes, &mut pos).expect("valid varint"));
            }
            black_box(sum);
            n as u64
        });
        push("varint_u32", "", len, rate, bytes.len() as f64 / n as f64);
    }
    // Tail blocks: 127 postings each, gaps 1..=64, 70% of the frequencies are 1.
    let mut bytes = Vec::new();
    let postings = BLOCKS * 127;
    for _ in 0..postings {
        let delta = 1 + rng.upto(63);
        if rng.upto(9) < 7 {
            varint::write_u64(&mut bytes, delta << 1 | 1);
        } else {
            varint::write_u64(&mut bytes, delta << 1);
            varint::write_u32(&mut bytes, 2 + rng.upto(6) as u32);
        }
    }
    let rate = best_rate(min, || {
        let mut pos = 0;
        let (mut doc, mut fsum) = (0u32, 0u32);
        while pos < bytes.len() {
            let v = varint::read_u64(&bytes, &mut pos).expect("valid tail");
            doc = doc.wrapping_add((v >> 1) as u32);
            fsum = fsum.wrapping_add(if v & 1 == 1 {
                1
            } else {
                varint::read_u32(&bytes, &mut pos).expect("valid tail")
            });
        }
        black_box((doc, fsum));
        2 * postings as u64
    });
    push(
        "tail",
        "",
        0,
        rate,
        bytes.len() as f64 / (2 * postings) as f64,
    );
    for (name, values) in column_inputs(&mut rng) {
        let bytes = quarry_codecs::column::encode(&values);
        let col = quarry_codecs::column::Column::open(&bytes).expect("a column just encoded");
        assert_eq!(col.encoding().name(), name, "the input meant for {name}");
        let codec = format!("column_{name}");
        let per_int = bytes.len() as f64 / values.len() as f64;
        let width = (per_int * 8.0).round() as u32;
        let rate = best_rate(min, || {
            let mut sum = 0u64;
            for r in 0..col.len() {
                sum = sum.wrapping_add(col.get(r));
            }
            black_box(sum);
            col.len() as u64
        });
        push(&codec, "get", width, rate, per_int);
        let rate = best_rate(min, || {
            let mut buf = [0u64; quarry_codecs::column::BLOCK];
            let mut sum = 0u64;
            for start in (0..col.len()).step_by(buf.len()) {
                let n = buf.len().min(col.len() - start);
                col.get_range(start, &mut buf[..n]);
                sum = buf[..n].iter().fold(sum, |s, &v| s.wrapping_add(v));
            }
            black_box(sum);
            col.len() as u64
        });
        push(&codec, "get_range", width, rate, per_int);
    }
    CodecReport {
        memory_read_bytes_per_sec: bandwidth,
        memory_buffer_bytes: buffer as u64,
        millis_per_pass: args.millis,
        default_kernel: Kernel::default_kernel().name().into(),
        figures,
        notes: "one core; inputs of 256 blocks stay in L2, so decode figures are compute bound; \
                memory-bound rate = streaming read bandwidth / encoded bytes per integer; tail \
                integers = doc id + frequency per posting"
            .into(),
    }
}

/// Column inputs of 64 Ki rows that the writer encodes as named: random 10-bit values
/// (`bitpacked`), 16 distinct values (`table`), a level per block with noise (`blocks`), ids in
/// insertion order with gaps (`linear`).
fn column_inputs(rng: &mut Rng) -> Vec<(&'static str, Vec<u64>)> {
    const ROWS: u64 = 1 << 16;
    let packed = (0..ROWS).map(|_| 5_000 + rng.upto(1023)).collect();
    // Cubes: no common step, so only a table packs them in 4 bits.
    let table = (0..ROWS)
        .map(|_| {
            let k = rng.upto(15);
            k * k * k * 1_000_003 + k
        })
        .collect();
    let blocks = (0..ROWS)
        .map(|i| (i / 1024) * 1_000_000_000 + rng.upto(999))
        .collect();
    let mut id = 0;
    let linear = (0..ROWS)
        .map(|_| {
            id += 1 + rng.upto(2);
            id
        })
        .collect();
    vec![
        ("bitpacked", packed),
        ("table", table),
        ("blocks", blocks),
        ("linear", linear),
    ]
}

fn rate(v: f64) -> String {
    format!("{:.2} G", v / 1e9)
}

/// The Markdown table of a codec report.
pub fn markdown(r: &CodecReport) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Memory: streaming read of a {} MiB buffer on one core: **{:.1} GB/s**. Decode figures are \
         integers per second on one core ({}); *memory-bound* is what that bandwidth could feed at \
         the codec's density, *decode / memory-bound* above 1 means decoding outruns RAM. \
         Bit-packed blocks are measured with every unpack kernel this CPU runs; the engine uses \
         `{}`.\n",
        r.memory_buffer_bytes >> 20,
        r.memory_read_bytes_per_sec / 1e9,
        r.notes,
        if r.default_kernel.is_empty() { "?" } else { &r.default_kernel },
    );
    let _ = writeln!(
        md,
        "| codec | kernel | width | bytes/int | decode ints/s | input GB/s | memory-bound ints/s | decode / memory-bound |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
    for f in &r.figures {
        let width = match f.codec.as_str() {
            "varint_u32" => format!("{} B", f.width),
            "dense" => format!("{} words", f.width),
            "tail" => "–".into(),
            c if c.starts_with("column_") => format!("≈{} bits", f.width),
            _ => format!("{} bits", f.width),
        };
        let ratio = match f.memory_bound_ints_per_sec {
            Some(m) => format!("{:.2}", f.ints_per_sec / m),
            None => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {width} | {:.3} | {} | {:.2} | {} | {ratio} |",
            f.codec,
            if f.kernel.is_empty() {
                "–"
            } else {
                &f.kernel
            },
            f.bytes_per_int,
            rate(f.ints_per_sec),
            f.input_bytes_per_sec / 1e9,
            f.memory_bound_ints_per_sec.map(rate).unwrap_or("–".into()),
        );
    }
    md
}

/// `quarry-bench codecs`.
pub fn run(args: CodecArgs) -> Result<()> {
    let report = measure(&args);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", markdown(&report));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_have_the_requested_widths_and_decode() {
        let codec = BlockCodec::new();
        let mut rng = Rng(7);
        for bits in [0, 1, 7, 13, 32] {
            let (bytes, widths) = bitpacked_inputs(&codec, bits, &mut rng);
            assert!(widths.iter().all(|&w| u32::from(w) == bits), "{bits}");
            assert_eq!(bytes.len(), BLOCKS * 16 * bits as usize);
            assert_eq!(
                decode_packed(&codec, &bytes, &widths),
                (BLOCKS * BLOCK_LEN) as u64
            );
        }
        for bits in [1, 5, 12, 20] {
            let (bytes, widths, bases) = sorted_inputs(&codec, bits, &mut rng).expect("reachable");
            assert!(widths.iter().all(|&w| u32::from(w) == bits), "{bits}");
            assert_eq!(
                decode_sorted(&codec, &bytes, &widths, &bases),
                (BLOCKS * BLOCK_LEN) as u64
            );
        }
    }

    #[test]
    fn report_covers_every_codec() {
        let r = measure(&CodecArgs {
            millis: 1,
            buffer_mb: Some(8),
            json: false,
        });
        assert!(r.memory_read_bytes_per_sec > 0.0);
        let count = |c: &str| r.figures.iter().filter(|f| f.codec == c).count();
        let kernels = Kernel::available_kernels();
        assert_eq!(count("bitpacked"), 33 * kernels.len());
        assert_eq!(count("bitpacked_sorted"), 25 * kernels.len());
        let dense_decoders = 1 + usize::from(quarry_codecs::dense::avx512_decoder().is_some());
        assert_eq!(count("dense"), 6 * dense_decoders);
        for k in &kernels {
            let of = |c: &str| {
                r.figures
                    .iter()
                    .filter(|f| f.codec == c && f.kernel == k.name())
                    .count()
            };
            assert_eq!((of("bitpacked"), of("bitpacked_sorted")), (33, 25), "{k}");
        }
        assert_eq!(count("varint_u32"), 5);
        assert_eq!(count("tail"), 1);
        for enc in ["bitpacked", "table", "blocks", "linear"] {
            assert_eq!(count(&format!("column_{enc}")), 2, "{enc}");
        }
        assert!(r.figures.iter().all(|f| f.ints_per_sec > 0.0));
        let back: CodecReport =
            serde_json::from_value(serde_json::to_value(&r).unwrap()).expect("JSON round trip");
        assert_eq!(back.figures.len(), r.figures.len());
        let md = markdown(&back);
        assert!(
            md.contains("| bitpacked | scalar | 32 bits | 4.000 |"),
            "{md}"
        );
        assert!(md.contains("| varint_u32 | – | 1 B | 1.000 |"), "{md}");
    }
}
