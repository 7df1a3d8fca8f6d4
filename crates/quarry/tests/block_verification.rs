//! Does a postings cursor over a memory-mapped segment verify its term's entry a block at a
//! time? Opening a cursor checks the entry's header, skip table and first block only; the
//! chunks of later blocks and of their positions are checked when the cursor reaches them, and
//! a damaged late block is reported by the cursor that reaches it, not before.
mod common;

use quarry::codec::postings::TERMINATED;
use quarry::index::SegmentReader;
use quarry::{DirectoryKind, Index};

const CHUNK: u64 = 4096;

fn chunks_of(seg: &SegmentReader, ext: &str) -> u64 {
    seg.verified_chunks()
        .into_iter()
        .find(|(name, _, _)| name.ends_with(ext))
        .map(|(_, v, _)| v)
        .unwrap()
}

#[test]
fn a_cursor_verifies_the_blocks_and_positions_it_reaches() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 1, DirectoryKind::Mmap);
    let s = Index::open_with(tmp.path(), DirectoryKind::Mmap)
        .unwrap()
        .searcher();
    let body = s.schema().field_id("body").unwrap();
    let seg = &s.segments()[0];
    let (info, bytes) = seg.term_info(body, b"the").unwrap().unwrap();
    let entry_chunks = (info.end() as u64).div_ceil(CHUNK) - info.blocks_start() as u64 / CHUNK;
    let pos_chunks = (info.pos_start + info.pos_len).div_ceil(CHUNK) - info.pos_start / CHUNK;
    assert!(
        entry_chunks >= 4 && pos_chunks >= 20,
        "the test needs a long entry: {entry_chunks} and {pos_chunks} chunks"
    );
    let mut c = seg.postings(body, &info, &bytes, true).unwrap();
    let mut pos = Vec::new();
    c.positions(&mut pos);
    assert!(!pos.is_empty());
    let (post_1, pos_1) = (chunks_of(seg, ".post"), chunks_of(seg, ".pos"));
    assert!(pos_1 <= 2, "{pos_1} of {pos_chunks} position chunks");
    let mut docs = 1;
    while c.next() != TERMINATED {
        c.positions(&mut pos);
        docs += 1;
    }
    assert!(c.is_corrupt().is_none());
    assert_eq!(docs, info.doc_freq);
    // The blocks after the first were verified by the walk, not when the cursor was opened.
    let walked = chunks_of(seg, ".post") - post_1;
    assert!(
        walked >= entry_chunks - 2,
        "the walk verified {walked} of {entry_chunks} block chunks"
    );
    assert!(chunks_of(seg, ".pos") >= pos_chunks);
}

#[test]
fn a_damaged_late_block_is_found_by_the_cursor_that_reaches_it() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 1, DirectoryKind::Mmap);
    let (right, flip_at, post_name) = {
        let s = Index::open_with(tmp.path(), DirectoryKind::Mmap)
            .unwrap()
            .searcher();
        let body = s.schema().field_id("body").unwrap();
        let seg = &s.segments()[0];
        let (info, bytes) = seg.term_info(body, b"the").unwrap().unwrap();
        let mut c = seg.postings(body, &info, &bytes, false).unwrap();
        let mut docs = vec![c.doc()];
        while c.next() != TERMINATED {
            docs.push(c.doc());
        }
        let flip_at = info.end() as u64 - 5;
        assert!(
            flip_at / CHUNK > info.blocks_start() as u64 / CHUNK + 1,
            "the last block must lie in a later chunk than the first"
        );
        (docs, flip_at, format!("{}.post", seg.name()))
    };
    let path = tmp.path().join(&post_name);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[flip_at as usize] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();

    let s = Index::open_with(tmp.path(), DirectoryKind::Mmap)
        .unwrap()
        .searcher();
    let body = s.schema().field_id("body").unwrap();
    let seg = &s.segments()[0];
    let (info, bytes) = seg.term_info(body, b"the").unwrap().unwrap();
    let mut c = seg
        .postings(body, &info, &bytes, false)
        .expect("the damage is in a block the cursor has not reached");
    let mut docs = vec![c.doc()];
    while c.next() != TERMINATED {
        docs.push(c.doc());
    }
    let why = c.is_corrupt().expect("the damaged block is reported");
    assert!(
        docs.len() < right.len() && right.starts_with(&docs),
        "the blocks before the damage read as before ({why})"
    );
}
