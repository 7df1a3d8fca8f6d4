//! Dense doc-id blocks as bitsets: when a block's 128 documents lie close together, one bit per
//! doc id in the block's range is no bigger than its bit-packed deltas, and a counting loop can
//! OR the words into its window instead of decoding 128 ids (as Lucene 10.1's postings do).
//!
//! Layout: `n_words` little-endian u64 words; bit `i` (bit `i % 64` of word `i / 64`) set means
//! doc `origin + i` is in the block, where `origin` is the first doc id the block may hold (one
//! past the previous block's last doc, or 0 for a term's first block). A valid block has exactly
//! [`BLOCK_LEN`] bits set and a non-zero last word.
use crate::{CodecError, BLOCK_LEN};

/// Largest number of words of a dense block: 4096 doc ids, the range at which a bitset is as
/// big as 32-bit packed deltas (the writer never needs more).
pub const MAX_WORDS: usize = 64;

/// `OFFSETS[b]` lists the set bits of byte `b` in increasing order (unused slots 0).
static OFFSETS: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut n = 0;
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 == 1 {
                t[b][n] = i as u8;
                n += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// Words needed for docs `origin..=last` (`last >= origin`).
#[inline]
pub fn words_for(origin: u32, last: u32) -> usize {
    ((last - origin) >> 6) as usize + 1
}

/// Appends the bitset of `docs` (strictly increasing, all `>= origin`) relative to `origin`, in
/// [`words_for`]`(origin, last)` words, and returns that number of words.
pub fn encode(origin: u32, docs: &[u32], out: &mut Vec<u8>) -> usize {
    let Some(&last) = docs.last() else {
        return 0;
    };
    let n = words_for(origin, last);
    let mut words = [0u64; MAX_WORDS];
    let words = if n <= MAX_WORDS {
        &mut words[..n]
    } else {
        // Not produced by the postings writer; kept correct for any input.
        return encode_vec(origin, docs, n, out);
    };
    for &d in docs {
        let o = d - origin;
        words[(o >> 6) as usize] |= 1 << (o & 63);
    }
    for w in words.iter() {
        out.extend_from_slice(&w.to_le_bytes());
    }
    n
}

fn encode_vec(origin: u32, docs: &[u32], n: usize, out: &mut Vec<u8>) -> usize {
    let mut words = vec![0u64; n];
    for &d in docs {
        let o = d - origin;
        words[(o >> 6) as usize] |= 1 << (o & 63);
    }
    for w in &words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    n
}

/// Checks a block of `n_words` words at the start of `bytes`: enough bytes, `1..=MAX_WORDS`
/// words, a non-zero last word, exactly [`BLOCK_LEN`] bits set, and no doc id past `u32::MAX`.
/// Returns the block's byte length and its last doc.
pub fn check(origin: u32, bytes: &[u8], n_words: usize) -> Result<(usize, u32), CodecError> {
    if n_words == 0 || n_words > MAX_WORDS {
        return Err(CodecError::Invalid {
            what: format!("dense block of {n_words} words (1..={MAX_WORDS})"),
        });
    }
    let len = n_words * 8;
    let b = bytes.get(..len).ok_or(CodecError::Truncated {
        offset: 0,
        needed: len,
        available: bytes.len(),
    })?;
    let mut ones = 0u32;
    let mut last_word = 0u64;
    for c in b.chunks_exact(8) {
        last_word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        ones += last_word.count_ones();
    }
    if last_word == 0 || ones as usize != BLOCK_LEN {
        return Err(CodecError::Invalid {
            what: format!("dense block with {ones} docs (want {BLOCK_LEN}) or an empty last word"),
        });
    }
    let last_bit = (n_words as u64 - 1) * 64 + 63 - u64::from(last_word.leading_zeros());
    let last = u64::from(origin) + last_bit;
    let last = u32::try_from(last).map_err(|_| CodecError::Invalid {
        what: "dense block past the largest doc id".into(),
    })?;
    Ok((len, last))
}

/// Decodes a block written by [`encode`] into its [`BLOCK_LEN`] doc ids; returns its byte length.
/// Uses the AVX-512 kernel where the CPU has it (and `QUARRY_SIMD` does not ask for `scalar`).
pub fn decode(
    origin: u32,
    bytes: &[u8],
    n_words: usize,
    out: &mut [u32; BLOCK_LEN],
) -> Result<usize, CodecError> {
    // The cheap checks first; the bit count comes from the decoder, which never writes past
    // `out` whatever the bits.
    let len = n_words * 8;
    let words = match bytes.get(..len) {
        Some(w) if (1..=MAX_WORDS).contains(&n_words) => w,
        _ => return check(origin, bytes, n_words).map(|(len, _)| len),
    };
    let last_word = u64::from_le_bytes(words[len - 8..].try_into().expect("8 bytes"));
    let ones = (decoder())(origin, words, out);
    if ones != BLOCK_LEN || last_word == 0 || u64::from(origin) + len as u64 * 8 > 1 << 32 {
        // Let `check` say exactly what is wrong.
        return check(origin, bytes, n_words).and(Err(CodecError::Invalid {
            what: "dense block past the largest doc id".into(),
        }));
    }
    Ok(len)
}

/// A dense-block decoder: writes the ids of the set bits of `words` (relative to the origin)
/// into `out`, at most [`BLOCK_LEN`] of them, and returns the number of set bits.
pub type Decoder = fn(u32, &[u8], &mut [u32; BLOCK_LEN]) -> usize;

/// The process-wide dense decoder, chosen once.
pub fn decoder() -> Decoder {
    static CHOICE: std::sync::OnceLock<Decoder> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| crate::Kernel::pick(avx512_decoder(), decode_scalar))
}

/// `popcount` of each byte (the original x86-64 target has no `popcnt` instruction).
static COUNTS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u32).count_ones() as u8;
        b += 1;
    }
    t
};

/// The portable decoder (the reference): a byte at a time through the table of bit offsets.
pub fn decode_scalar(origin: u32, words: &[u8], out: &mut [u32; BLOCK_LEN]) -> usize {
    let mut n = 0usize;
    let mut total = 0usize;
    for (i, &byte) in words.iter().enumerate() {
        let at = origin.wrapping_add(i as u32 * 8);
        let c = usize::from(COUNTS[byte as usize]);
        let offs = &OFFSETS[byte as usize];
        if n + 8 <= BLOCK_LEN {
            // Eight stores whatever the count: a fixed-width loop the compiler vectorizes; the
            // slots past `c` are overwritten by the next byte's.
            let dst: &mut [u32; 8] = (&mut out[n..n + 8]).try_into().expect("8 slots");
            for k in 0..8 {
                dst[k] = at.wrapping_add(u32::from(offs[k]));
            }
        } else {
            for k in 0..c.min(BLOCK_LEN - n) {
                out[n + k] = at.wrapping_add(u32::from(offs[k]));
            }
        }
        total += c;
        n = total.min(BLOCK_LEN);
    }
    total
}

/// The AVX-512 decoder if the CPU has AVX-512F (and `popcnt`, which every such CPU has).
pub fn avx512_decoder() -> Option<Decoder> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_all(&[crate::cpu::Feature::Avx512f, crate::cpu::Feature::Popcnt]) {
        return Some(|origin, words, out| {
            // SAFETY: AVX-512F and popcnt (the kernel's target features) were detected just
            // above.
            unsafe { decode_avx512(origin, words, out) }
        });
    }
    None
}

/// Sixteen bits at a time: the ids `at..at+16` compressed by the bits (`vpcompressd`) and
/// stored with a mask of the count.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
unsafe fn decode_avx512(origin: u32, words: &[u8], out: &mut [u32; BLOCK_LEN]) -> usize {
    use std::arch::x86_64::*;
    let iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut n = 0usize;
    let mut total = 0usize;
    for (i, c) in words.chunks_exact(2).enumerate() {
        let m = u16::from_le_bytes([c[0], c[1]]);
        if m == 0 {
            continue;
        }
        let c = m.count_ones() as usize;
        total += c;
        let k = c.min(BLOCK_LEN - n);
        if k == 0 {
            continue;
        }
        let at = origin.wrapping_add(i as u32 * 16);
        let ids = _mm512_add_epi32(iota, _mm512_set1_epi32(at as i32));
        let packed = _mm512_maskz_compress_epi32(m, ids);
        let mask = ((1u32 << k) - 1) as u16;
        // SAFETY: `k <= BLOCK_LEN - n`, so the masked store writes only `out[n..n + k]`.
        unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().add(n).cast::<i32>(), mask, packed) };
        n += k;
    }
    total
}

/// ORs a checked block (`n_words` words at the start of `bytes`, relative to `origin`) into
/// `bits`, whose bit 0 is doc `window`: doc `d` sets bit `d - window`. Bits that would fall
/// outside `bits` are dropped; the caller passes blocks that lie inside it.
#[inline]
pub fn or_into(origin: u32, bytes: &[u8], n_words: usize, window: u32, bits: &mut [u64]) {
    let shift = i64::from(origin) - i64::from(window);
    for (w, c) in bytes[..n_words * 8].chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        if v == 0 {
            continue;
        }
        let p = shift + 64 * w as i64;
        if p < 0 {
            if p > -64 {
                if let Some(x) = bits.get_mut(0) {
                    *x |= v >> (-p) as u32;
                }
            }
            continue;
        }
        let (t, s) = ((p >> 6) as usize, (p & 63) as u32);
        if let Some(x) = bits.get_mut(t) {
            *x |= v << s;
        }
        if s > 0 {
            if let Some(x) = bits.get_mut(t + 1) {
                *x |= v >> (64 - s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn block_strategy() -> impl Strategy<Value = (u32, Vec<u32>)> {
        // An origin and 128 distinct offsets in a range of at most 4096.
        (
            0u32..u32::MAX - 5000,
            proptest::collection::btree_set(0u32..4096, BLOCK_LEN),
        )
            .prop_map(|(origin, offs)| {
                let docs: Vec<u32> = offs.iter().map(|&o| origin + o).collect();
                (origin, docs)
            })
            .prop_filter("fits 64 words", |(b, d)| {
                words_for(*b, *d.last().unwrap()) <= 64
            })
    }

    proptest! {
        #[test]
        fn decode_inverts_encode((base, docs) in block_strategy()) {
            let mut bytes = Vec::new();
            let n = encode(base, &docs, &mut bytes);
            prop_assert_eq!(bytes.len(), n * 8);
            let (len, last) = check(base, &bytes, n).unwrap();
            prop_assert_eq!(len, n * 8);
            prop_assert_eq!(last, *docs.last().unwrap());
            let mut out = [0u32; BLOCK_LEN];
            prop_assert_eq!(decode(base, &bytes, n, &mut out).unwrap(), n * 8);
            prop_assert_eq!(&out[..], &docs[..]);
        }

        #[test]
        fn or_into_sets_the_docs_bits((base, docs) in block_strategy(), back in 0u32..200) {
            let mut bytes = Vec::new();
            let n = encode(base, &docs, &mut bytes);
            // A window starting at or before the first doc, long enough for the block.
            let origin = docs[0].saturating_sub(back);
            let span = (docs[BLOCK_LEN - 1] - origin) as usize + 1;
            let mut bits = vec![0u64; span.div_ceil(64) + 1];
            or_into(base, &bytes, n, origin, &mut bits);
            let mut want = vec![0u64; bits.len()];
            for &d in &docs {
                let o = (d - origin) as usize;
                want[o / 64] |= 1 << (o % 64);
            }
            prop_assert_eq!(bits, want);
        }

        #[test]
        fn damaged_blocks_are_refused(
            (base, docs) in block_strategy(),
            flip in 0usize..4096,
            n_delta in prop_oneof![Just(-1i32), Just(1)],
        ) {
            let mut bytes = Vec::new();
            let n = encode(base, &docs, &mut bytes);
            let mut out = [0u32; BLOCK_LEN];
            // A wrong word count loses the last word or runs past the bytes.
            let n2 = (n as i32 + n_delta) as usize;
            prop_assert!(decode(base, &bytes, n2, &mut out).is_err());
            // A flipped bit changes the number of docs.
            let bit = flip % (bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode(base, &bytes, n, &mut out).is_err());
        }
    }

    /// Whether the AVX-512 kernel ran in this process's tests (printed per run, `--nocapture`).
    #[test]
    fn dense_kernel_avx512_runs_here_or_says_not() {
        match avx512_decoder() {
            Some(_) => eprintln!("dense kernel avx512: ran (avx512_decoder_equals_scalar)"),
            None => eprintln!("dense kernel avx512: NOT RUN, this CPU lacks AVX-512F"),
        }
    }

    proptest! {
        #[test]
        fn avx512_decoder_equals_scalar((base, docs) in block_strategy()) {
            let Some(fast) = avx512_decoder() else { return Ok(()); };
            let mut bytes = Vec::new();
            encode(base, &docs, &mut bytes);
            let (mut a, mut b) = ([0u32; BLOCK_LEN], [0u32; BLOCK_LEN]);
            prop_assert_eq!(decode_scalar(base, &bytes, &mut a), BLOCK_LEN);
            prop_assert_eq!(fast(base, &bytes, &mut b), BLOCK_LEN);
            prop_assert_eq!(a, b);
            prop_assert_eq!(&a[..], &docs[..]);
        }
    }

    #[test]
    fn a_full_range_block_and_the_first_doc_at_the_base() {
        let docs: Vec<u32> = (0..128).collect();
        let mut bytes = Vec::new();
        assert_eq!(encode(0, &docs, &mut bytes), 2);
        assert_eq!(bytes, [0xFF; 16]);
        let mut out = [0u32; BLOCK_LEN];
        decode(0, &bytes, 2, &mut out).unwrap();
        assert_eq!(out.to_vec(), docs);
        assert!(check(0, &bytes, 3).is_err(), "truncated");
        assert!(check(0, &bytes, 0).is_err());
        assert!(check(u32::MAX - 10, &bytes, 2).is_err(), "past u32::MAX");
    }
}
