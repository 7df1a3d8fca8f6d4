//! Where does a document go in an index-sorted segment? Each document's key under an
//! [`IndexSort`] read from a segment's columns, the order of two keys, and the check that a
//! segment claiming a sort holds its documents in it (ties by sequence number, index order).
//!
//! Keys compare exactly as [`crate::Searcher::search_sorted`] compares its field keys (smallest
//! value ascending, largest descending, missing values last unless `missing_first`), so a
//! sorted search can trust a segment's order for the keys they share.
use std::cmp::Ordering;

use super::SegmentReader;
use crate::codec::columns::ColumnView;
use crate::codec::meta::SegmentMeta;
use crate::index_sort::{IndexSort, IndexSortField};
use crate::search::sort::{compare_values, field_part};
use crate::{Error, Result};

/// One key of one document: a column value (integers, floats and dates as their sortable
/// `u64`, booleans as 0/1), a keyword's bytes, or no value — a sorted search's key part.
pub(crate) use crate::search::sort::Part as KeyPart;

/// The order of two key parts under `k` (direction and missing placement included).
pub fn compare_part(k: &IndexSortField, a: &KeyPart, b: &KeyPart) -> Ordering {
    compare_values(k.descending, k.missing_first, a, b)
}

/// The order of two documents' keys under `sort` (without the index-order tie-break).
pub fn compare_keys(sort: &IndexSort, a: &[KeyPart], b: &[KeyPart]) -> Ordering {
    for ((k, x), y) in sort.fields.iter().zip(a).zip(b) {
        let o = compare_part(k, x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The columns of a segment that an index sort reads.
pub struct SegmentKeys<'a> {
    sort: &'a IndexSort,
    views: Vec<Option<ColumnView<'a>>>,
}

impl<'a> SegmentKeys<'a> {
    /// The sort's columns in `seg`. A segment without columns (before format v8) cannot be
    /// sorted: that is an error, as an index sort is only set on indexes created with v8.
    pub fn new(seg: &'a SegmentReader, sort: &'a IndexSort) -> Result<Self> {
        if !seg.has_columns() {
            return Err(Error::IndexSort {
                field: sort
                    .fields
                    .first()
                    .map_or(String::new(), |k| k.field.clone()),
                reason: format!(
                    "segment {} was written before format v8 and has no columns to sort by",
                    seg.name()
                ),
            });
        }
        let views = sort
            .field_ids(seg.schema())?
            .into_iter()
            .map(|f| seg.column_view(f))
            .collect::<Result<_>>()?;
        Ok(Self { sort, views })
    }

    /// The key of `doc`, into `out` (cleared first).
    pub fn key(&self, doc: u32, out: &mut Vec<KeyPart>) {
        out.clear();
        for (k, v) in self.sort.fields.iter().zip(&self.views) {
            out.push(field_part(v.as_ref(), doc, k.descending));
        }
    }
}

/// A document found out of order: its id, the key of the document before it, its own key.
pub type OutOfOrder = (u32, Vec<KeyPart>, Vec<KeyPart>);

/// The first document of `seg` that does not sort after the one before it under `sort` (ties
/// by increasing sequence number), with both keys; None when the segment is in that order.
pub fn first_out_of_order(seg: &SegmentReader, sort: &IndexSort) -> Result<Option<OutOfOrder>> {
    let keys = SegmentKeys::new(seg, sort)?;
    let (mut prev, mut cur) = (Vec::new(), Vec::new());
    for d in 0..seg.doc_count() {
        keys.key(d, &mut cur);
        if d > 0 {
            let o = compare_keys(sort, &prev, &cur).then(seg.seq(d - 1).cmp(&seg.seq(d)));
            if o != Ordering::Less {
                return Ok(Some((d, prev, cur)));
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(None)
}

/// Checks that a segment whose meta names an index sort holds its documents in that order,
/// ties in increasing sequence number; an error names the first document out of order.
pub fn check_order(seg: &SegmentReader) -> Result<()> {
    let Some(sort) = &seg.meta().index_sort else {
        return Ok(());
    };
    let meta_name = SegmentMeta::file_name(seg.name(), "meta");
    sort.validate(seg.schema())
        .map_err(|e| Error::corrupt(&meta_name, format!("its index sort is unusable: {e}")))?;
    match first_out_of_order(seg, sort)? {
        None => Ok(()),
        Some((d, prev, cur)) => Err(Error::corrupt(
            &meta_name,
            format!(
                "the segment claims index sort [{sort}] but document {d} ({cur:?}, index order {}) sorts before document {} ({prev:?}, index order {})",
                seg.seq(d),
                d - 1,
                seg.seq(d - 1)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_goes_last_in_both_directions_unless_asked_first() {
        let (asc, desc) = (IndexSortField::asc("f"), IndexSortField::desc("f"));
        let (one, two, none) = (KeyPart::U(1), KeyPart::U(2), KeyPart::Missing);
        assert_eq!(compare_part(&asc, &one, &two), Ordering::Less);
        assert_eq!(compare_part(&desc, &one, &two), Ordering::Greater);
        assert_eq!(compare_part(&asc, &none, &one), Ordering::Greater);
        assert_eq!(compare_part(&desc, &none, &one), Ordering::Greater);
        let first = IndexSortField {
            missing_first: true,
            ..desc
        };
        assert_eq!(compare_part(&first, &none, &one), Ordering::Less);
        assert_eq!(compare_part(&first, &none, &none), Ordering::Equal);
    }
}
