//! Round-trip and skipping tests of the postings writer and reader.
use proptest::prelude::*;
use quarry_store::Bytes;

use super::*;

fn build(docs: &[u32], freqs: &[u32], positions: &[u32]) -> (Bytes, Bytes, TermInfo) {
    let mut w = PostingsWriter::new(vec![0u8; 16], vec![0u8; 16]);
    // A decoy term first so offsets are non-trivial.
    w.write_term(&[1], &[1], Some(&[0]), &|_| 5, 10.0);
    let off = w.write_term(docs, freqs, Some(positions), &|d| (d % 200) as u8, 40.0);
    let post = Bytes::from_vec(w.post.clone());
    let info = TermInfo::parse(&post, off, true).unwrap();
    let ps = info.pos_start as usize;
    let pos = Bytes::from_vec(w.pos[ps..ps + info.pos_len as usize].to_vec());
    (post, pos, info)
}

/// Gaps between documents: sparse (uniform up to `max`), dense (mostly 1 and 2, so blocks become
/// bitsets) or mixed, the first gap possibly 0 (doc 0 in the first block).
fn gaps(max: u32, n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u32>> {
    let n2 = n.clone();
    let n3 = n.clone();
    prop_oneof![
        proptest::collection::vec(1u32..max, n),
        proptest::collection::vec(1u32..4, n2),
        proptest::collection::vec(prop_oneof![9 => 1u32..3, 1 => 1u32..max.max(2)], n3),
    ]
    .prop_flat_map(|g| (Just(g), any::<bool>()))
    .prop_map(|(mut g, zero)| {
        if zero {
            g[0] = 0;
        }
        g
    })
}

fn sample(gaps: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut docs = Vec::new();
    let mut freqs = Vec::new();
    let mut positions = Vec::new();
    let mut d = 0u32;
    for (i, g) in gaps.iter().enumerate() {
        d += g;
        docs.push(d);
        let f = (i as u32 * 7 + d) % 5 + 1;
        freqs.push(f);
        for k in 0..f {
            positions.push(k * 3 + d % 4);
        }
    }
    (docs, freqs, positions)
}

proptest! {
    #[test]
    fn roundtrip_next_and_positions(gaps in gaps(300, 1..700)) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, pos, info) = build(&docs, &freqs, &positions);
        prop_assert_eq!(info.doc_freq as usize, docs.len());
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), docs[docs.len() - 1] + 1);
        let mut p = Vec::new();
        let mut pi = 0;
        for i in 0..docs.len() {
            prop_assert_eq!(c.doc(), docs[i]);
            prop_assert_eq!(c.freq(), freqs[i]);
            // Read positions of every other doc so skipping over unread docs is exercised.
            if i % 2 == 0 {
                c.positions(&mut p);
                prop_assert_eq!(&p[..], &positions[pi..pi + freqs[i] as usize]);
            }
            pi += freqs[i] as usize;
            c.next();
        }
        prop_assert_eq!(c.doc(), TERMINATED);
        prop_assert!(c.is_corrupt().is_none());
    }

    #[test]
    fn seek_matches_linear(gaps in gaps(50, 1..1000), targets in proptest::collection::vec(0u32..60_000, 1..40)) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut targets = targets;
        targets.sort();
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), 100_000);
        let mut p = Vec::new();
        for t in targets {
            let expect = docs.iter().position(|&d| d >= t.max(c.doc().min(u32::MAX - 1)));
            let got = c.seek(t);
            match expect {
                Some(i) if docs[i] >= t => {
                    prop_assert_eq!(got, docs[i]);
                    prop_assert_eq!(c.freq(), freqs[i]);
                    let start: usize = freqs[..i].iter().map(|&f| f as usize).sum();
                    c.positions(&mut p);
                    prop_assert_eq!(&p[..], &positions[start..start + freqs[i] as usize]);
                }
                _ => { prop_assert!(got >= t); }
            }
            if got == TERMINATED { break; }
        }
    }
}

#[test]
fn block_impacts_bound_every_doc() {
    let gaps: Vec<u32> = (0..1000).map(|i| 1 + i % 3).collect();
    let (docs, freqs, positions) = sample(&gaps);
    let (post, pos, info) = build(&docs, &freqs, &positions);
    let mut c = PostingsCursor::new(&info, &post, Some(&pos), 10_000);
    while c.doc() != TERMINATED {
        let d = c.doc();
        let (last, imp) = c.shallow_block(d).unwrap();
        assert!(last >= d);
        assert!(imp.covers(c.freq(), (d % 200) as u8));
        assert!(!imp.pairs().is_empty() && imp.pairs().len() <= MAX_IMPACTS);
        for p in imp.pairs() {
            assert!(info.impact.max_freq >= p.max_freq && info.impact.min_norm <= p.min_norm);
        }
        c.next();
    }
    assert!(c.shallow_block(docs[docs.len() - 1] + 1).is_none());
}

/// Flips every byte of a term's postings entry in turn. Each flip must either be refused by
/// `TermInfo::parse`, or give a cursor that stops by itself (never loops or panics), yields only
/// doc ids below the segment size in non-decreasing order and at most `doc_freq` of them, and
/// either reports `is_corrupt` or returns what it decoded consistently. Both refusals and
/// successful parses must occur, so the test cannot pass by skipping every case.
#[test]
fn corrupt_blocks_stop_without_panic() {
    let gaps: Vec<u32> = (0..600).map(|i| 1 + i % 7).collect();
    let (docs, freqs, positions) = sample(&gaps);
    let mut w = PostingsWriter::new(vec![0u8; 16], vec![0u8; 16]);
    w.write_term(&[1], &[1], Some(&[0]), &|_| 5, 10.0);
    let off = w.write_term(&docs, &freqs, Some(&positions), &|d| (d % 200) as u8, 40.0);
    let raw = w.post.clone();
    let info = TermInfo::parse(&raw, off, true).unwrap();
    let ps = info.pos_start as usize;
    let pos = Bytes::from_vec(w.pos[ps..ps + info.pos_len as usize].to_vec());
    let doc_count = 5_000;
    let (mut refused, mut detected, mut parsed) = (0, 0, 0);
    for i in off as usize..info.end() {
        let mut bad = raw.clone();
        bad[i] ^= 0x5a;
        let bad = Bytes::from_vec(bad);
        let Ok(info2) = TermInfo::parse(&bad, off, true) else {
            refused += 1;
            continue;
        };
        parsed += 1;
        let mut c = PostingsCursor::new(&info2, &bad, Some(&pos), doc_count);
        let mut p = Vec::new();
        let (mut n, mut prev) = (0u64, 0u32);
        while c.doc() != TERMINATED {
            let d = c.doc();
            assert!(d < doc_count, "byte {i}: doc {d} past the segment");
            assert!(d >= prev, "byte {i}: doc {d} after {prev}");
            prev = d;
            c.positions(&mut p);
            c.next();
            n += 1;
            assert!(
                n <= u64::from(info2.doc_freq),
                "byte {i}: more docs than doc_freq {}",
                info2.doc_freq
            );
        }
        if c.is_corrupt().is_some() {
            detected += 1;
        }
    }
    assert!(refused > 0, "no flip was refused by TermInfo::parse");
    assert!(parsed > 0, "no flip parsed: the cursor was never exercised");
    assert!(
        detected > 0,
        "no cursor reported corruption ({parsed} parsed)"
    );
}

proptest! {
    #[test]
    fn impacts_cover_every_doc_and_roundtrip(docs in proptest::collection::vec((1u32..70_000, any::<u8>()), 1..128)) {
        let imp = Impacts::of(docs.iter().copied(), 25.0);
        prop_assert!(!imp.pairs().is_empty() && imp.pairs().len() <= MAX_IMPACTS);
        let mut buf = Vec::new();
        imp.encode(&mut buf);
        prop_assert_eq!(buf.len(), IMPACTS_LEN);
        let back = Impacts::decode(&buf).unwrap();
        for &(f, n) in &docs {
            prop_assert!(imp.covers(f, n));
            prop_assert!(back.covers(f, n), "decoded impacts lost ({}, {})", f, n);
        }
    }
}

proptest! {
    /// Docs-only cursors visit the same documents, by `next` and by `seek`.
    #[test]
    fn docs_only_visits_the_same_docs(gaps in gaps(300, 1..900), targets in proptest::collection::vec(0u32..200_000, 0..30)) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut full = PostingsCursor::new(&info, &post, Some(&pos), u32::MAX - 1);
        let mut lean = PostingsCursor::new(&info, &post, None, u32::MAX - 1);
        lean.set_docs_only();
        while full.doc() != TERMINATED {
            prop_assert_eq!(lean.doc(), full.doc());
            full.next();
            lean.next();
        }
        prop_assert_eq!(lean.doc(), TERMINATED);
        let mut targets = targets;
        targets.sort();
        let mut full = PostingsCursor::new(&info, &post, None, u32::MAX - 1);
        let mut lean = PostingsCursor::new(&info, &post, None, u32::MAX - 1);
        lean.set_docs_only();
        for t in targets {
            prop_assert_eq!(lean.seek(t), full.seek(t));
        }
        prop_assert!(lean.is_corrupt().is_none());
    }

    /// `shallow_factor` / `block_factor` give the best `freq * factor` of the block's impacts.
    #[test]
    fn block_factor_is_the_best_impact(gaps in gaps(40, 1..1500), seed in 1u32..1000) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut factors = [0f32; 256];
        for (i, f) in factors.iter_mut().enumerate() {
            *f = 1.0 / (1.0 + ((i as u32 * seed) % 97) as f32);
        }
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), u32::MAX - 1);
        let mut probe = PostingsCursor::new(&info, &post, Some(&pos), u32::MAX - 1);
        let mut all = Vec::new();
        for with_norms in [true, false] {
            c.block_factors(&factors, with_norms, &mut all);
            prop_assert_eq!(all.len(), c.block_count());
            if c.block_count() > 1 {
                for (b, &m) in all.iter().enumerate() {
                    prop_assert_eq!(m, c.block_factor(b, &factors, with_norms));
                }
            }
        }
        for b in 0..c.block_count() {
            let target = if b == 0 { 0 } else { c.block_last_doc(b - 1) + 1 };
            let (last, imp) = c.shallow_block(target).unwrap();
            for with_norms in [true, false] {
                let want = imp
                    .pairs()
                    .iter()
                    .map(|p| {
                        let n = if with_norms { p.min_norm } else { 1 };
                        p.max_freq as f32 * factors[n as usize]
                    })
                    .fold(0f32, f32::max);
                let (last2, got) = probe.shallow_factor(target, &factors, with_norms).unwrap();
                prop_assert_eq!(last2, last);
                prop_assert_eq!(got, want);
                if c.block_count() > 1 {
                    prop_assert_eq!(c.block_last_doc(b), last);
                    prop_assert_eq!(c.block_factor(b, &factors, with_norms), want);
                }
            }
        }
    }
}

proptest! {
    /// `mark_until` over consecutive windows sets exactly the bits of the term's documents.
    #[test]
    fn mark_until_sets_exactly_the_docs(gaps in gaps(90, 1..1200), window in prop_oneof![Just(64u32), Just(200), Just(2048), Just(1 << 15)]) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, _pos, info) = build(&docs, &freqs, &positions);
        let mut c = PostingsCursor::new(&info, &post, None, u32::MAX - 1);
        c.set_docs_only();
        let mut seen = Vec::new();
        let mut bits = vec![0u64; window.div_ceil(64) as usize];
        let mut base = 0u32;
        while c.doc() != TERMINATED {
            c.mark_until(base, base + window, &mut bits);
            prop_assert!(c.doc() >= base + window);
            for (w, word) in bits.iter_mut().enumerate() {
                let mut x = *word;
                while x != 0 {
                    seen.push(base + w as u32 * 64 + x.trailing_zeros());
                    x &= x - 1;
                }
                *word = 0;
            }
            base += window;
        }
        prop_assert_eq!(seen, docs);
    }

    /// `TermScorer::score_until` over consecutive windows adds, per document, bit for bit the
    /// score `Scorer::score` gives it one document at a time, and marks exactly its documents.
    #[test]
    fn score_until_equals_per_document_scores(gaps in gaps(90, 1..1200), window in prop_oneof![Just(64u32), Just(200), Just(2048), Just(1 << 15)], k in 0.1f32..4.0) {
        use crate::search::bm25::SimScorer;
        use crate::search::scorer::{Scorer, TermScorer};
        let (docs, freqs, positions) = sample(&gaps);
        let (post, _pos, info) = build(&docs, &freqs, &positions);
        let cache: [f32; 256] = std::array::from_fn(|i| k / (1.0 + i as f32 * 0.37));
        let sim = SimScorer::with_cache(1.3, 2.7, std::sync::Arc::new(cache));
        let norms = Bytes::from_vec((0..=*docs.last().unwrap()).map(|d| (d * 31 % 251) as u8).collect());
        let mut one = TermScorer::new(PostingsCursor::new(&info, &post, None, u32::MAX - 1), sim.clone(), Some(norms.clone()));
        let mut expected = Vec::new();
        while one.doc() != TERMINATED {
            expected.push((one.doc(), f64::from(one.score())));
            one.next();
        }
        let mut t = TermScorer::new(PostingsCursor::new(&info, &post, None, u32::MAX - 1), sim, Some(norms));
        let mut got = Vec::new();
        let mut bits = vec![0u64; window.div_ceil(64) as usize];
        let mut sums = vec![0f64; window as usize];
        let mut scratch = [0f32; BLOCK];
        let mut base = 0u32;
        while t.doc() != TERMINATED {
            t.score_until(base, base + window, &mut bits, &mut sums, &mut scratch);
            prop_assert!(t.doc() >= base + window);
            for (w, word) in bits.iter_mut().enumerate() {
                let mut x = *word;
                while x != 0 {
                    let o = w * 64 + x.trailing_zeros() as usize;
                    got.push((base + o as u32, sums[o]));
                    sums[o] = 0.0;
                    x &= x - 1;
                }
                *word = 0;
            }
            prop_assert!(sums.iter().all(|&s| s == 0.0));
            base += window;
        }
        prop_assert_eq!(got, expected);
    }

    /// `positions_upto` returns exactly the positions up to the limit, and a later full read of
    /// the same document (or of later ones) is unaffected by having been cut short.
    #[test]
    fn positions_upto_is_a_prefix(gaps in gaps(40, 1..500), limits in proptest::collection::vec(0u32..400, 1..50)) {
        let (docs, freqs, positions) = sample(&gaps);
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), docs[docs.len() - 1] + 1);
        let mut p = Vec::new();
        let mut start = 0usize;
        for i in 0..docs.len() {
            let all = &positions[start..start + freqs[i] as usize];
            let limit = limits[i % limits.len()];
            c.positions_upto(&mut p, limit);
            let want: Vec<u32> = all.iter().copied().filter(|&x| x <= limit).collect();
            prop_assert_eq!(&p, &want);
            if i % 3 == 0 {
                c.positions(&mut p);
                prop_assert_eq!(&p[..], all);
            }
            start += freqs[i] as usize;
            c.next();
        }
        prop_assert!(c.is_corrupt().is_none());
    }

    /// Positions read after skipping many documents (multi-byte deltas included) are right.
    #[test]
    fn positions_after_long_skips(gaps in gaps(40, 1..600), every in 1usize..20, big in 1u32..5000) {
        let (docs, freqs, _) = sample(&gaps);
        let mut positions = Vec::new();
        for (i, &f) in freqs.iter().enumerate() {
            let mut p = 0u32;
            for k in 0..f {
                p += 1 + (i as u32 * 31 + k * big) % big;
                positions.push(p);
            }
        }
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), docs[docs.len() - 1] + 1);
        let mut p = Vec::new();
        let mut start = 0usize;
        for i in 0..docs.len() {
            if i % every == every - 1 {
                c.positions(&mut p);
                prop_assert_eq!(&p[..], &positions[start..start + freqs[i] as usize]);
            }
            start += freqs[i] as usize;
            c.next();
        }
        prop_assert!(c.is_corrupt().is_none());
    }
}

proptest! {
    /// Long position lists, where runs of eight one-byte deltas are decoded at once, mixed with
    /// multi-byte deltas: `positions_upto` is exactly the prefix up to the limit, and full reads
    /// after it (or after skipped documents) are unaffected.
    #[test]
    fn long_position_runs_with_limits(
        gaps in gaps(60, 1..400),
        freqs in proptest::collection::vec(1u32..40, 400),
        deltas in proptest::collection::vec(prop_oneof![4 => 1u32..128, 1 => 128u32..5000], 1..64),
        limits in proptest::collection::vec(0u32..20_000, 1..30),
    ) {
        let mut docs = Vec::new();
        let mut d = 0u32;
        for g in &gaps {
            d += g;
            docs.push(d);
        }
        let freqs = &freqs[..docs.len()];
        let mut positions = Vec::new();
        let mut lists = Vec::new();
        for (i, &f) in freqs.iter().enumerate() {
            let mut p = 0u32;
            let start = positions.len();
            for k in 0..f as usize {
                p += deltas[(i * 7 + k) % deltas.len()];
                positions.push(p);
            }
            lists.push(start..positions.len());
        }
        let (post, pos, info) = build(&docs, freqs, &positions);
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), docs[docs.len() - 1] + 1);
        let mut p = Vec::new();
        for i in 0..docs.len() {
            let all = &positions[lists[i].clone()];
            if i % 4 != 3 {
                let limit = limits[i % limits.len()];
                c.positions_upto(&mut p, limit);
                let want: Vec<u32> = all.iter().copied().filter(|&x| x <= limit).collect();
                prop_assert_eq!(&p, &want);
            }
            if i % 2 == 0 {
                c.positions(&mut p);
                prop_assert_eq!(&p[..], all);
            }
            c.next();
        }
        prop_assert!(c.is_corrupt().is_none());
    }
}

/// Damaged positions (any byte of a term's positions flipped) never panic: the cursor
/// reports corruption or returns positions; some damage must be detected.
#[test]
fn corrupt_positions_stop_without_panic() {
    let gaps: Vec<u32> = (0..600).map(|i| 1 + i % 7).collect();
    let (docs, freqs, positions) = sample(&gaps);
    let (post, pos, info) = build(&docs, &freqs, &positions);
    let raw = pos.to_vec();
    let mut detected = 0;
    for i in 0..raw.len() {
        let mut bad = raw.clone();
        bad[i] ^= 0xa5;
        let bad = Bytes::from_vec(bad);
        let mut c = PostingsCursor::new(&info, &post, Some(&bad), docs[docs.len() - 1] + 1);
        let mut p = Vec::new();
        while c.doc() != TERMINATED {
            c.positions(&mut p);
            assert!(
                p.len() <= c.freq() as usize,
                "byte {i}: more positions than freq"
            );
            c.next();
        }
        detected += usize::from(c.is_corrupt().is_some());
    }
    assert!(detected > 0, "no flipped positions byte was detected");
}

/// Dense blocks are written as bitsets, read back by every path, and a damaged one is reported
/// whether the cursor decodes it or counts it as it lies.
#[test]
fn dense_blocks_are_bitsets_and_damage_is_caught() {
    let docs: Vec<u32> = (0..1000u32).map(|i| i * 3 / 2).collect();
    let freqs = vec![1u32; docs.len()];
    let positions = vec![0u32; docs.len()];
    let (post, _pos, info) = build(&docs, &freqs, &positions);
    let blocks = info.blocks_start();
    assert_eq!(post[blocks], DENSE, "the first block is dense");
    let mut c = PostingsCursor::new(&info, &post, None, 10_000);
    let mut seen = Vec::new();
    while c.doc() != TERMINATED {
        seen.push(c.doc());
        c.next();
    }
    assert_eq!(seen, docs);
    let count = |post: &Bytes| {
        let mut c = PostingsCursor::new(&info, post, None, 10_000);
        c.set_docs_only();
        let mut bits = vec![0u64; 4096 / 64];
        c.mark_until(0, 4096, &mut bits);
        (
            bits.iter().map(|w| w.count_ones()).sum::<u32>(),
            c.is_corrupt().map(str::to_owned),
        )
    };
    assert_eq!(count(&post), (1000, None));
    // Flip a bit inside the third block's bitset (the cursor starts on block 0, so blocks 1..
    // go through the counting fast path).
    let mut b = post.to_vec();
    let mut off = blocks;
    for _ in 0..2 {
        assert_eq!(b[off], DENSE);
        off += 3 + 8 * usize::from(b[off + 2]);
    }
    assert_eq!(b[off], DENSE);
    b[off + 3 + 5] ^= 0x10;
    let (_, corrupt) = count(&Bytes::from_vec(b));
    assert!(corrupt.is_some(), "a damaged dense block is reported");
}

#[derive(Debug, Clone)]
enum Op {
    Next,
    Seek(u32),
    Runs(u32),
    Mark(u32),
    Goto(usize),
    Positions,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    /// Any sequence of cursor operations agrees with a plain vector of postings: dense blocks
    /// read in place by `seek` and expanded by whatever comes next, packed and tail blocks alike.
    #[test]
    fn cursor_ops_agree_with_a_model(
        gaps in gaps(40, 1..1500),
        ops in proptest::collection::vec(prop_oneof![
            3 => Just(Op::Next),
            4 => (1u32..400).prop_map(Op::Seek),
            1 => (1u32..3000).prop_map(Op::Runs),
            1 => (1u32..5000).prop_map(Op::Mark),
            1 => (0usize..16).prop_map(Op::Goto),
            2 => Just(Op::Positions),
        ], 1..60),
        lean in any::<bool>(),
    ) {
        let (docs, freqs, positions) = sample(&gaps);
        let starts: Vec<usize> = freqs
            .iter()
            .scan(0usize, |acc, &f| { let s = *acc; *acc += f as usize; Some(s) })
            .collect();
        let (post, pos, info) = build(&docs, &freqs, &positions);
        let mut c = PostingsCursor::new(&info, &post, Some(&pos), u32::MAX - 1);
        if lean {
            // Doc ids only: freqs and positions are not read.
            c.set_docs_only();
        }
        let mut i = 0usize;
        let at = |i: usize| docs.get(i).copied().unwrap_or(TERMINATED);
        let mut p = Vec::new();
        for op in ops {
            if i >= docs.len() {
                break;
            }
            match op {
                Op::Next => {
                    i += 1;
                    prop_assert_eq!(c.next(), at(i));
                }
                Op::Seek(d) => {
                    let t = docs[i].saturating_add(d);
                    while i < docs.len() && docs[i] < t {
                        i += 1;
                    }
                    prop_assert_eq!(c.seek(t), at(i));
                }
                Op::Runs(len) => {
                    let end = docs[i].saturating_add(len);
                    let (mut ds, mut fs) = (Vec::new(), Vec::new());
                    c.runs_until(end, |d, f| { ds.extend_from_slice(d); fs.extend_from_slice(f); });
                    let j = i + docs[i..].iter().take_while(|&&d| d < end).count();
                    prop_assert_eq!(&ds[..], &docs[i..j]);
                    if !lean {
                        prop_assert_eq!(&fs[..], &freqs[i..j]);
                    }
                    i = j;
                    prop_assert_eq!(c.doc(), at(i));
                }
                Op::Mark(len) => {
                    let base = docs[i] / 64 * 64;
                    let end = base + len;
                    let mut bits = vec![0u64; (len as usize).div_ceil(64)];
                    c.mark_until(base, end, &mut bits);
                    let j = i + docs[i..].iter().take_while(|&&d| d < end).count();
                    let mut want = vec![0u64; bits.len()];
                    for &d in &docs[i..j] {
                        let o = (d - base) as usize;
                        want[o / 64] |= 1 << (o % 64);
                    }
                    prop_assert_eq!(bits, want);
                    i = j;
                    prop_assert_eq!(c.doc(), at(i));
                }
                Op::Goto(b) => {
                    if b < c.block_count() {
                        i = b * BLOCK;
                        prop_assert_eq!(c.goto_block(b), at(i));
                        let (ds, fs) = c.block_docs_freqs();
                        let j = (i + BLOCK).min(docs.len());
                        prop_assert_eq!(ds, &docs[i..j]);
                        if !lean {
                            prop_assert_eq!(fs, &freqs[i..j]);
                        }
                    }
                }
                Op::Positions if lean => {}
                Op::Positions => {
                    prop_assert_eq!(c.freq(), freqs[i]);
                    c.positions(&mut p);
                    prop_assert_eq!(&p[..], &positions[starts[i]..starts[i] + freqs[i] as usize]);
                }
            }
            prop_assert!(c.is_corrupt().is_none());
        }
    }
}
