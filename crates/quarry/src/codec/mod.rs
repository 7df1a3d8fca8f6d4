//! The persistent structures of a segment: each has a writer (builds bytes), a reader (uses them
//! in place, zero-decode at open) and a page in `docs/format/`.
pub mod columns;
pub mod format;
pub mod livedocs;
pub mod meta;
pub mod norms;
pub mod postings;
pub mod stored;
pub mod terms;
pub mod vectors;
