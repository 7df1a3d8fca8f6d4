//! Segment metadata and the commit point: small JSON documents inside framed, checksummed files,
//! fully verified when opened. Spec: `docs/format/meta.md` and `docs/format/commit.md`.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::format::{self, KIND_COMMIT, KIND_META};
use crate::{Error, Result};

/// Statistics and layout of one field inside a segment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldMeta {
    /// Documents with at least one term in the field.
    pub doc_count: u32,
    /// Number of tokens over all documents.
    pub sum_total_term_freq: u64,
    /// Sum over terms of their document frequency.
    pub sum_doc_freq: u64,
    pub unique_terms: u64,
    /// The field's FST in the terms file.
    pub fst_offset: u64,
    pub fst_len: u64,
    /// CRC32C of the FST bytes, verified the first time the dictionary is used: the `fst` crate
    /// trusts its input, so bytes are checked before it sees them.
    pub fst_crc: u32,
    /// The field's norms in the norms file (text fields only).
    pub norms_offset: Option<u64>,
}

/// Length and CRC32C of a segment file, checked when the segment is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    pub len: u64,
    pub crc: u32,
}

/// The `<segment>.meta` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentMeta {
    pub name: String,
    pub doc_count: u32,
    /// Runs `(first local doc, first sequence number)`: document `d` of the run starting at
    /// local doc `l` with sequence `s` was the `(s + d - l)`-th document added to the index.
    /// Ties in ranking are broken by this sequence ("index order"), whatever the threads.
    pub seq_runs: Vec<(u32, u64)>,
    /// Per schema field, by field id.
    pub fields: Vec<FieldMeta>,
    pub stored_index_offset: u64,
    pub stored_blocks: u32,
    /// Every other file of the segment by extension.
    pub files: BTreeMap<String, FileMeta>,
    /// The pair dictionaries of frequent words (format v6; absent before, or when no field
    /// indexes pairs). See [`crate::pairs`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<PairsMeta>,
    /// Per schema field, by field id: its column in `.cols` (format v8; empty before, and None
    /// for a field without a column).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Option<super::columns::ColumnMeta>>,
    /// The order of the segment's documents when the index has an index sort (format v8;
    /// absent: in the order they were added). See [`crate::index_sort`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_sort: Option<crate::index_sort::IndexSort>,
    /// Where `seq_runs` lie in `.cols` when there are many (format v8; a sorted segment has
    /// about one run per document): the JSON then lists none, and opening the segment reads
    /// them from there (`SegmentReader::open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_runs_at: Option<SeqRunsAt>,
    /// Per schema field, by field id: its vectors in `.vec` (format v9; empty when the schema
    /// has no vector field, and None for a field without vectors in this segment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vectors: Vec<Option<super::vectors::VectorMeta>>,
}

/// Runs of at least this many are written to `.cols` rather than into the meta's JSON.
pub const SEQ_RUNS_INLINE: usize = 64;

/// `seq_runs` kept in `.cols`: two columns of `runs` rows, the runs' first local documents and
/// their first sequence numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqRunsAt {
    pub runs: u32,
    pub docs_at: super::columns::Span,
    pub seqs_at: super::columns::Span,
}

/// The pairs of frequent words a segment indexes (format v6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairsMeta {
    /// The frequent words, sorted: a pair term is two of them with a space between.
    pub words: Vec<String>,
    /// Per schema field, by field id: the field's pair dictionary (its FST in the terms file,
    /// postings and positions as any term's; `norms_offset` is None: pairs are scored with the
    /// field's norms), or None if the field indexes no pairs.
    pub fields: Vec<Option<FieldMeta>>,
}

impl SegmentMeta {
    pub fn file_name(name: &str, ext: &str) -> String {
        format!("{name}.{ext}")
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = format::begin(KIND_META);
        let json = if self.seq_runs_at.is_some() {
            // The runs are in `.cols`.
            let mut m = self.clone();
            m.seq_runs = Vec::new();
            serde_json::to_vec(&m)
        } else {
            serde_json::to_vec(self)
        };
        out.extend_from_slice(&json.expect("meta serializes"));
        format::finish(out)
    }

    pub fn decode(file: &str, bytes: &[u8]) -> Result<Self> {
        format::check(file, bytes, KIND_META)?;
        format::check_crc(file, bytes)?;
        let body = quarry_codecs::framing::body(bytes);
        let meta: SegmentMeta = serde_json::from_slice(body)
            .map_err(|e| Error::corrupt(file, format!("segment metadata: {e}")))?;
        if let Some(p) = &meta.pairs {
            if p.fields.len() != meta.fields.len() {
                return Err(Error::corrupt(
                    file,
                    "pair dictionaries are not listed per field",
                ));
            }
            let bad = |w: &String| w.is_empty() || w.as_bytes().contains(&crate::pairs::SEPARATOR);
            if p.words.iter().any(bad) || p.words.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::corrupt(
                    file,
                    "the frequent words of the pair dictionaries are not sorted, unique words",
                ));
            }
        }
        if !meta.columns.is_empty() && meta.columns.len() != meta.fields.len() {
            return Err(Error::corrupt(file, "columns are not listed per field"));
        }
        if meta.columns.iter().any(|c| c.is_some()) && !meta.files.contains_key("cols") {
            return Err(Error::corrupt(file, "columns listed without a .cols file"));
        }
        if !meta.vectors.is_empty() && meta.vectors.len() != meta.fields.len() {
            return Err(Error::corrupt(file, "vectors are not listed per field"));
        }
        if meta.vectors.iter().any(|v| v.is_some()) && !meta.files.contains_key("vec") {
            return Err(Error::corrupt(file, "vectors listed without a .vec file"));
        }
        if meta.seq_runs_at.is_some() {
            if !meta.seq_runs.is_empty() || !meta.files.contains_key("cols") {
                return Err(Error::corrupt(
                    file,
                    "sequence runs both listed and in .cols, or without a .cols file",
                ));
            }
            // Checked by `check_seq_runs` once read from `.cols`.
            return Ok(meta);
        }
        meta.check_seq_runs(file)?;
        Ok(meta)
    }

    /// The sequence runs start at document 0 and increase within the segment.
    pub fn check_seq_runs(&self, file: &str) -> Result<()> {
        let meta = self;
        let mut prev: Option<(u32, u64)> = None;
        for &(l, s) in &meta.seq_runs {
            if l >= meta.doc_count.max(1) || prev.is_some_and(|(pl, _)| pl >= l) {
                return Err(Error::corrupt(
                    file,
                    "sequence runs are not increasing within the segment",
                ));
            }
            prev = Some((l, s));
        }
        if meta.doc_count > 0 && meta.seq_runs.first().map(|r| r.0) != Some(0) {
            return Err(Error::corrupt(
                file,
                "sequence runs do not start at document 0",
            ));
        }
        Ok(())
    }

    /// The smallest sequence number of each run and of every run after it (a suffix minimum
    /// of the runs' first sequence numbers): what [`first_doc_after_seq`](Self::first_doc_after_seq)
    /// searches. Runs are in no particular sequence order after merges of thread-interleaved
    /// segments, so it is computed, not read off the runs.
    pub fn seq_floors(&self) -> Vec<u64> {
        let mut floors: Vec<u64> = self.seq_runs.iter().map(|&(_, s)| s).collect();
        for i in (0..floors.len().saturating_sub(1)).rev() {
            floors[i] = floors[i].min(floors[i + 1]);
        }
        floors
    }

    /// The first local document from which on every document's sequence number is above
    /// `seq` (`doc_count` if the last one's is not): those lose a score tie against a kept hit
    /// of sequence `seq`, so a pruned walk can ask them to beat its score, not just reach it.
    /// `floors` is [`seq_floors`](Self::seq_floors); a binary search over it, as segments
    /// built by several threads hold thousands of runs.
    pub fn first_doc_after_seq(&self, floors: &[u64], seq: u64) -> u32 {
        // The last run starting at or below `seq` is the last whose floor is at most `seq`
        // (floors do not decrease); every document after it is above `seq`.
        let Some(r) = floors.partition_point(|&m| m <= seq).checked_sub(1) else {
            return 0;
        };
        let (l, s) = self.seq_runs[r];
        let end = self.seq_runs.get(r + 1).map_or(self.doc_count, |n| n.0);
        // Documents `l ..= l + (seq - s)` of this run have a sequence at most `seq`.
        let after = u64::from(l).saturating_add(seq - s).saturating_add(1);
        after.min(u64::from(end)) as u32
    }

    /// The sequence number (global index order) of local document `doc`.
    pub fn seq(&self, doc: u32) -> u64 {
        let i = self.seq_runs.partition_point(|&(l, _)| l <= doc);
        match i.checked_sub(1).and_then(|i| self.seq_runs.get(i)) {
            Some(&(l, s)) => s + u64::from(doc - l),
            None => u64::from(doc),
        }
    }
}

/// One segment as listed by a commit point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentRef {
    pub name: String,
    pub doc_count: u32,
    /// Generation of the segment's deleted-documents file `<name>_<del_gen>.del`; 0 = no
    /// deletions (format v1 never writes deletions).
    #[serde(default)]
    pub del_gen: u64,
    /// Deleted documents in that file (format v2; 0 when `del_gen` is 0).
    #[serde(default)]
    pub del_count: u32,
}

impl SegmentRef {
    /// The files this segment reference needs: the segment's own and its deletions file.
    pub fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = format::SEGMENT_FILES
            .iter()
            .map(|(ext, _)| SegmentMeta::file_name(&self.name, ext))
            .collect();
        if self.del_gen > 0 {
            v.push(super::livedocs::LiveDocs::file_name(
                &self.name,
                self.del_gen,
            ));
        }
        v
    }
}

/// The `commit_<generation>` file: the schema and the live segments of one commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitPoint {
    pub generation: u64,
    pub format_version: u32,
    pub schema: serde_json::Value,
    pub segments: Vec<SegmentRef>,
    /// The next document sequence number (documents ever added, including merged ones).
    pub next_seq: u64,
    /// The next segment number to use for a new segment's name.
    pub next_segment: u64,
    /// Free-form data of the application (e.g. the source file), kept across commits.
    #[serde(default)]
    pub user_data: BTreeMap<String, String>,
    /// The index sort fixed when the index was created (format v8; absent: none). Every
    /// segment written since holds its documents in this order. See [`crate::index_sort`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_sort: Option<crate::index_sort::IndexSort>,
}

pub const COMMIT_PREFIX: &str = "commit_";

impl CommitPoint {
    pub fn file_name(generation: u64) -> String {
        format!("{COMMIT_PREFIX}{generation:010}")
    }

    /// The generation of a commit file name, if it is one.
    pub fn parse_name(name: &str) -> Option<u64> {
        let g = name.strip_prefix(COMMIT_PREFIX)?;
        if g.len() == 10 && g.bytes().all(|b| b.is_ascii_digit()) {
            g.parse().ok()
        } else {
            None
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = format::begin(KIND_COMMIT);
        out.extend_from_slice(&serde_json::to_vec_pretty(self).expect("commit serializes"));
        format::finish(out)
    }

    pub fn decode(file: &str, bytes: &[u8]) -> Result<Self> {
        format::check(file, bytes, KIND_COMMIT)?;
        format::check_crc(file, bytes)?;
        let body = quarry_codecs::framing::body(bytes);
        let c: CommitPoint = serde_json::from_slice(body)
            .map_err(|e| Error::corrupt(file, format!("commit point: {e}")))?;
        if !(format::MIN_VERSION..=format::VERSION).contains(&c.format_version) {
            return Err(if c.format_version < format::MIN_VERSION {
                Error::TooOld {
                    file: file.into(),
                    found: c.format_version,
                    min: format::MIN_VERSION,
                }
            } else {
                Error::TooNew {
                    file: file.into(),
                    found: c.format_version,
                    max: format::VERSION,
                }
            });
        }
        Ok(c)
    }

    /// Documents in the segments, deleted ones included (Lucene's `maxDoc`).
    pub fn doc_count(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.doc_count)).sum()
    }

    /// Live documents (not deleted).
    pub fn live_doc_count(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| u64::from(s.doc_count - s.del_count.min(s.doc_count)))
            .sum()
    }

    /// Every file this commit needs, its own file included.
    pub fn files(&self) -> Vec<String> {
        let mut v = vec![Self::file_name(self.generation)];
        for s in &self.segments {
            v.extend(s.files());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `first_doc_after_seq` is the first document from which on every sequence number
        /// is above the given one, over runs in any order.
        #[test]
        fn first_doc_after_seq_matches_brute_force(
            lens in proptest::collection::vec(1u32..40, 1..6),
            starts in proptest::collection::vec(0u64..200, 6),
            probe in 0u64..260,
        ) {
            let mut runs = Vec::new();
            let mut l = 0u32;
            for (i, &n) in lens.iter().enumerate() {
                runs.push((l, starts[i]));
                l += n;
            }
            let meta = SegmentMeta {
                name: "s".into(),
                doc_count: l,
                seq_runs: runs,
                fields: Vec::new(),
                stored_index_offset: 0,
                stored_blocks: 0,
                files: BTreeMap::new(),
                pairs: None,
                columns: Vec::new(),
                vectors: Vec::new(),
                index_sort: None,
                seq_runs_at: None,
            };
            let want = (0..=l)
                .find(|&d| (d..l).all(|x| meta.seq(x) > probe))
                .unwrap();
            proptest::prop_assert_eq!(meta.first_doc_after_seq(&meta.seq_floors(), probe), want);
        }
    }
}
