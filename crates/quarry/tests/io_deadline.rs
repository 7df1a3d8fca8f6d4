//! I/O-level deadlines and batched stored-field reads: over a directory whose every read sleeps
//! (a slow disk), a search with a deadline stops issuing reads once it has passed and returns a
//! partial result flagged `timed_out`; without one it returns the full, right answer. And
//! `Searcher::docs` (one batched read per segment) returns what one-by-one reads return, in every
//! directory mode.
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use quarry::search::DocAddress;
use quarry::{DirectoryKind, Index, SearchMode, SearchOptions};
use quarry_store::{open_directory, FaultyDirectory};

const QUERY: &str = "oil OR trade OR market OR price OR dollar OR bank OR wheat";

#[test]
fn a_deadline_stops_reads_and_flags_the_result_partial() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 2, DirectoryKind::Mmap);
    let right = {
        let s = Index::open(tmp.path()).unwrap().searcher();
        let q = s.parse_query(QUERY, &["body"]).unwrap();
        s.search(&q, 10, SearchMode::TopCount).unwrap()
    };
    assert!(right.total_hits > 1000 && !right.timed_out);

    for kind in [DirectoryKind::Pread, DirectoryKind::Direct] {
        let delay = Duration::from_millis(10);
        let faulty = FaultyDirectory::new(open_directory(tmp.path(), kind).unwrap());
        faulty.read_delay(Some(delay));
        let open = || {
            Index::open_dir(Arc::new(faulty.clone()))
                .unwrap()
                .searcher()
        };

        // No deadline: the slow disk changes nothing but the time.
        let s = open();
        let q = s.parse_query(QUERY, &["body"]).unwrap();
        faulty.take_read_starts();
        let full = s.search(&q, 10, SearchMode::TopCount).unwrap();
        assert_eq!(full, right, "{kind}: no deadline gives the full answer");
        let reads = faulty.take_read_starts().len();
        assert!(
            reads > 6,
            "{kind}: {reads} reads, the test needs more than the deadline allows"
        );

        // A 20 ms deadline on a fresh searcher (nothing read yet): every read costs 10 ms, so
        // the search runs out; reads stop at the deadline, at most the one in flight started
        // after it.
        let s = open();
        let q = s.parse_query(QUERY, &["body"]).unwrap();
        faulty.take_read_starts();
        let deadline = Instant::now() + Duration::from_millis(20);
        let opts = SearchOptions {
            deadline: Some(deadline),
        };
        let got = s.search_with(&q, 10, SearchMode::TopCount, &opts).unwrap();
        let starts = faulty.take_read_starts();
        assert!(got.timed_out, "{kind}: flagged partial");
        assert!(!got.hits_exact);
        assert!(got.total_hits <= right.total_hits);
        let late = starts.iter().filter(|t| **t >= deadline).count();
        assert!(
            late <= 1,
            "{kind}: {late} reads started after the deadline ({} reads in all)",
            starts.len()
        );
        assert!(
            starts.len() < reads,
            "{kind}: the search stopped reading early"
        );
    }
}

#[test]
fn batched_stored_fields_equal_one_by_one_reads_in_every_mode() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 2, DirectoryKind::Mmap);
    for kind in DirectoryKind::ALL {
        let s = Index::open_with(tmp.path(), kind).unwrap().searcher();
        assert!(s.segments().len() > 1, "needs several segments");
        let q = s.parse_query(QUERY, &["body"]).unwrap();
        let mut addrs: Vec<DocAddress> = s
            .search(&q, 50, SearchMode::Top)
            .unwrap()
            .top
            .iter()
            .map(|h| h.doc)
            .collect();
        // Repeats, neighbours in one block, and the last document of every segment.
        addrs.push(addrs[3]);
        addrs.push(DocAddress {
            segment: addrs[0].segment,
            doc: addrs[0].doc ^ 1,
        });
        for (i, seg) in s.segments().iter().enumerate() {
            addrs.push(DocAddress {
                segment: i as u32,
                doc: seg.doc_count() - 1,
            });
        }
        let one: Vec<_> = addrs.iter().map(|a| s.stored_fields(*a).unwrap()).collect();
        assert_eq!(s.docs(&addrs).unwrap(), one, "{kind}");
        let bad = DocAddress {
            segment: 0,
            doc: s.segments()[0].doc_count(),
        };
        assert!(
            s.docs(&[addrs[0], bad]).is_err(),
            "{kind}: a doc past the end"
        );
        assert!(s.docs(&[]).unwrap().is_empty());
    }
}

/// With mmap, an exact term lookup verifies only the term dictionary chunks on the term's path
/// (not the whole FST), finds what a fully verified dictionary finds for every term, and a walk
/// over the dictionary (`terms`) verifies all of it first.
#[test]
fn a_term_lookup_verifies_only_the_chunks_on_its_path() {
    use fst::Streamer;
    let tmp = tempfile::tempdir().unwrap();
    common::build_reuters(tmp.path(), &common::reuters_lines(), 1, DirectoryKind::Mmap);
    let lazy = Index::open(tmp.path()).unwrap().searcher();
    let whole = Index::open(tmp.path()).unwrap().searcher();
    let body = lazy.schema().field_id("body").unwrap();
    let (seg, full) = (&lazy.segments()[0], &whole.segments()[0]);
    let terms_chunks = |s: &quarry::index::SegmentReader| {
        let v = s.verified_chunks();
        let t = v
            .iter()
            .find(|(name, _, _)| name.ends_with(".terms"))
            .unwrap();
        (t.1, t.2)
    };
    assert!(seg.term_info(body, b"oil").unwrap().is_some());
    let (verified, total) = terms_chunks(seg);
    assert!(
        total > 20,
        "{total} chunks: the test needs a bigger dictionary"
    );
    assert!(
        verified * 4 < total,
        "{verified} of {total} chunks verified by one lookup"
    );

    let dict = full.terms(body).unwrap().unwrap();
    let (verified, _) = terms_chunks(full);
    let fst_chunks = full.meta().fields[body as usize].fst_len / 4096;
    assert!(
        verified >= fst_chunks,
        "terms() verified {verified} chunks, the FST has {fst_chunks}+"
    );
    let mut stream = dict.map().stream();
    let mut n = 0;
    while let Some((term, _)) = stream.next() {
        let a = seg.term_info(body, term).unwrap().unwrap().0;
        let b = full.term_info(body, term).unwrap().unwrap().0;
        assert_eq!(
            (a.doc_freq, a.pos_start, a.pos_len),
            (b.doc_freq, b.pos_start, b.pos_len)
        );
        n += 1;
    }
    assert!(n > 10_000);
    for probe in [&b"zzzzzzzzzz"[..], b"", b"oi", b"oilx", &[0xff, 0xfe]] {
        let a = seg.term_info(body, probe).unwrap().map(|t| t.0.doc_freq);
        let b = full.term_info(body, probe).unwrap().map(|t| t.0.doc_freq);
        assert_eq!(a, b, "{probe:?}");
    }
}
