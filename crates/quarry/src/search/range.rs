//! Range queries: bounds read by the field's type, then the matching documents of a segment
//! from its column (blocks whose minimum and maximum miss the range are skipped unread) or,
//! for text fields and segments written before columns, from the term dictionary.
//!
//! Bounds follow Elasticsearch's `range` query: on an integer field `gte: 1.5` means `>= 2`; a
//! date bound is date math (`now-1d/d`) rounded down for `gte`/`lt` and up for `lte`/`gt`
//! (`lte: "2020-01"` includes all of January); floats compare as numbers (`-0.0 == 0.0`);
//! keywords and text compare their bytes (text bounds are normalized by the query parser).
use fst::{IntoStreamer, Streamer};
use jiff::tz::TimeZone;

use super::scorer_corruption;
use crate::codec::columns::{from_f64, from_i64};
use crate::codec::postings::TERMINATED;
use crate::date::{eval_math, DateFormat, Rounding};
use crate::index::SegmentReader;
use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

/// How date bounds are read: a `format` other than the field's, a time zone for texts without
/// an offset (and for rounding), and the request's `now`.
#[derive(Clone, Debug)]
pub struct RangeOptions {
    pub format: Option<DateFormat>,
    pub time_zone: TimeZone,
    pub now_millis: i64,
}

impl Default for RangeOptions {
    fn default() -> Self {
        Self {
            format: None,
            time_zone: TimeZone::UTC,
            now_millis: jiff::Timestamp::now().as_millisecond(),
        }
    }
}

/// A range resolved for its field's type.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeSpec {
    /// Inclusive bounds on the sortable `u64`s of a column (integers, dates, floats, booleans).
    Values { lo: u64, hi: u64 },
    /// Byte bounds on terms (keywords and text); `None` is open.
    Terms {
        lower: Option<(Vec<u8>, bool)>,
        upper: Option<(Vec<u8>, bool)>,
    },
    /// Nothing can match (`[5 TO 3]`, `{1 TO 2}` on integers).
    Empty,
}

/// Reads the bounds of a range on `field` (`None`: open; `bool`: inclusive).
pub fn resolve(
    schema: &Schema,
    field: u32,
    lower: Option<(&str, bool)>,
    upper: Option<(&str, bool)>,
    opts: &RangeOptions,
) -> Result<RangeSpec> {
    let entry = schema.field(field);
    let bad = |text: &str, what: &str| {
        Error::Query(format!(
            "range on field {:?}: bound {text:?} is not {what}",
            entry.name
        ))
    };
    let spec = match entry.field_type {
        FieldType::Integer => {
            let bound = |b: Option<(&str, bool)>, lower: bool, open: i64| match b {
                None => Ok(Some(open)),
                Some((t, incl)) => integer_bound(t, incl, lower).map_err(|_| bad(t, "a number")),
            };
            match (
                bound(lower, true, i64::MIN)?,
                bound(upper, false, i64::MAX)?,
            ) {
                (Some(lo), Some(hi)) => values(from_i64(lo), from_i64(hi)),
                _ => RangeSpec::Empty,
            }
        }
        FieldType::Float => {
            let lo = match lower {
                None => 0,
                Some((t, incl)) => {
                    let x = parse_number(t).ok_or_else(|| bad(t, "a number"))?;
                    let s = from_f64(x);
                    if incl {
                        s
                    } else {
                        match s.checked_add(1) {
                            Some(v) => v,
                            None => return Ok(RangeSpec::Empty),
                        }
                    }
                }
            };
            let hi = match upper {
                None => u64::MAX,
                Some((t, incl)) => {
                    let x = parse_number(t).ok_or_else(|| bad(t, "a number"))?;
                    let s = from_f64(x);
                    if incl {
                        s
                    } else {
                        match s.checked_sub(1) {
                            Some(v) => v,
                            None => return Ok(RangeSpec::Empty),
                        }
                    }
                }
            };
            values(lo, hi)
        }
        FieldType::Date => {
            let format = opts
                .format
                .as_ref()
                .or(schema.date_format(field))
                .expect("date fields have a format");
            let date = |t: &str, rounding| {
                eval_math(t, format, &opts.time_zone, opts.now_millis, rounding)
                    .map_err(|e| Error::Query(format!("range on field {:?}: {e}", entry.name)))
            };
            // `gte`/`lt` round down, `lte`/`gt` up; `gt` then excludes the rounded value.
            let lo = match lower {
                None => i64::MIN,
                Some((t, true)) => date(t, Rounding::Down)?,
                Some((t, false)) => match date(t, Rounding::Up)?.checked_add(1) {
                    Some(v) => v,
                    None => return Ok(RangeSpec::Empty),
                },
            };
            let hi = match upper {
                None => i64::MAX,
                Some((t, true)) => date(t, Rounding::Up)?,
                Some((t, false)) => match date(t, Rounding::Down)?.checked_sub(1) {
                    Some(v) => v,
                    None => return Ok(RangeSpec::Empty),
                },
            };
            values(from_i64(lo), from_i64(hi))
        }
        FieldType::Boolean => {
            let b = |t: &str| match t {
                "true" => Ok(1u64),
                "false" => Ok(0u64),
                _ => Err(bad(t, "true or false")),
            };
            let lo = match lower {
                None => 0,
                Some((t, incl)) => b(t)? + u64::from(!incl),
            };
            let hi = match upper {
                None => 1,
                Some((t, incl)) => match b(t)?.checked_sub(u64::from(!incl)) {
                    Some(v) => v,
                    None => return Ok(RangeSpec::Empty),
                },
            };
            values(lo, hi)
        }
        FieldType::Keyword | FieldType::Text => RangeSpec::Terms {
            lower: lower.map(|(t, i)| (t.as_bytes().to_vec(), i)),
            upper: upper.map(|(t, i)| (t.as_bytes().to_vec(), i)),
        },
        FieldType::Vector => {
            return Err(Error::Query(format!(
                "range on field {:?}: a vector field has no order; search it with a kNN query",
                entry.name
            )))
        }
    };
    Ok(spec)
}

fn values(lo: u64, hi: u64) -> RangeSpec {
    if lo > hi {
        RangeSpec::Empty
    } else {
        RangeSpec::Values { lo, hi }
    }
}

/// A number as a bound: a finite float.
fn parse_number(t: &str) -> Option<f64> {
    t.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// An integer field's inclusive bound of `t`: exact for an integer, else rounded inward
/// (`gte: 1.5` is `>= 2`); None if no integer satisfies it; Err(()) if `t` is not a number.
fn integer_bound(t: &str, inclusive: bool, lower: bool) -> std::result::Result<Option<i64>, ()> {
    if let Ok(i) = t.trim().parse::<i64>() {
        return Ok(match (lower, inclusive) {
            (_, true) => Some(i),
            (true, false) => i.checked_add(1),
            (false, false) => i.checked_sub(1),
        });
    }
    let x = parse_number(t).ok_or(())?;
    Ok(int_bound(x, inclusive, lower))
}

/// The inclusive integer bound of a number bound: the least integer `>=` (`>`) `x` for a
/// lower bound, the greatest `<=` (`<`) for an upper; None if no integer is that far.
fn int_bound(x: f64, inclusive: bool, lower: bool) -> Option<i64> {
    let v = match (lower, inclusive) {
        (true, true) => x.ceil(),
        (true, false) => x.floor() + 1.0,
        (false, true) => x.floor(),
        (false, false) => x.ceil() - 1.0,
    };
    if v < -9.223_372_036_854_776e18 {
        return if lower { Some(i64::MIN) } else { None };
    }
    if v >= 9.223_372_036_854_776e18 {
        return if lower { None } else { Some(i64::MAX) };
    }
    Some(v as i64)
}

/// The number of documents of `seg` (deletions not counted) whose `field` has a value in the
/// range, when the column's points give it by two binary searches (a numeric field where no
/// document has two values); None when only reading the documents tells.
pub fn range_count(seg: &SegmentReader, field: u32, spec: &RangeSpec) -> Result<Option<u64>> {
    Ok(match spec {
        RangeSpec::Empty => Some(0),
        RangeSpec::Values { lo, hi } => seg
            .column_view(field)?
            .and_then(|v| v.count_in_range(*lo, *hi)),
        RangeSpec::Terms { .. } => None,
    })
}

/// The documents of `seg` whose `field` has a value in the range, in order.
pub fn range_docs(seg: &SegmentReader, field: u32, spec: &RangeSpec) -> Result<Vec<u32>> {
    let n = seg.doc_count();
    let mut out = Vec::new();
    match spec {
        RangeSpec::Empty => {}
        RangeSpec::Values { lo, hi } => match seg.column_view(field)? {
            Some(view) => view.docs_in_range(*lo, *hi, n, &mut out),
            None => {
                let ft = seg.schema().field(field).field_type;
                out = term_docs(seg, field, None, None, |term| {
                    term_value(ft, term).is_some_and(|v| *lo <= v && v <= *hi)
                })?;
            }
        },
        RangeSpec::Terms { lower, upper } => {
            let keyword = seg.schema().field(field).field_type == FieldType::Keyword;
            match seg.column_view(field)?.filter(|_| keyword) {
                Some(view) => {
                    let dict = view.dict().expect("keyword columns have terms");
                    let lo = match lower {
                        None => 0,
                        Some((t, true)) => dict.lower_bound(t),
                        Some((t, false)) => {
                            let o = dict.lower_bound(t);
                            o + u64::from(o < dict.len() && dict.term(o) == &t[..])
                        }
                    };
                    let end = match upper {
                        None => dict.len(),
                        Some((t, incl)) => {
                            let o = dict.lower_bound(t);
                            o + u64::from(*incl && o < dict.len() && dict.term(o) == &t[..])
                        }
                    };
                    if lo < end {
                        view.docs_in_range(lo, end - 1, n, &mut out);
                    }
                }
                None => {
                    out = term_docs(seg, field, lower.as_ref(), upper.as_ref(), |_| true)?;
                }
            }
        }
    }
    Ok(out)
}

/// The sortable value of a term of a field written before columns (the exact term of an
/// integer, float, boolean or date value).
fn term_value(ft: FieldType, term: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(term).ok()?;
    match ft {
        FieldType::Integer | FieldType::Date => t.parse::<i64>().ok().map(from_i64),
        FieldType::Float => t.parse::<f64>().ok().map(from_f64),
        FieldType::Boolean => match t {
            "true" => Some(1),
            "false" => Some(0),
            _ => None,
        },
        _ => None,
    }
}

/// All documents of `seg` holding a term of `field` within the byte bounds that `keep`
/// accepts, sorted.
fn term_docs(
    seg: &SegmentReader,
    field: u32,
    lower: Option<&(Vec<u8>, bool)>,
    upper: Option<&(Vec<u8>, bool)>,
    keep: impl Fn(&[u8]) -> bool,
) -> Result<Vec<u32>> {
    let Some(dict) = seg.terms(field)? else {
        return Ok(Vec::new());
    };
    let mut range = dict.map().range();
    range = match lower {
        Some((t, true)) => range.ge(t),
        Some((t, false)) => range.gt(t),
        None => range,
    };
    range = match upper {
        Some((t, true)) => range.le(t),
        Some((t, false)) => range.lt(t),
        None => range,
    };
    let mut stream = range.into_stream();
    let mut docs = DocUnion::new(seg);
    while let Some((key, offset)) = stream.next() {
        if keep(key) {
            docs.add_term(field, offset)?;
        }
    }
    Ok(docs.finish())
}

/// The union of several terms' documents in one segment, as a bitset.
pub(crate) struct DocUnion<'a> {
    seg: &'a SegmentReader,
    bits: Vec<u64>,
}

impl<'a> DocUnion<'a> {
    pub(crate) fn new(seg: &'a SegmentReader) -> Self {
        Self {
            seg,
            bits: vec![0u64; (seg.doc_count() as usize).div_ceil(64)],
        }
    }

    /// Adds the documents of the term whose entry is at `offset` of `field`'s postings.
    pub(crate) fn add_term(&mut self, field: u32, offset: u64) -> Result<()> {
        let seg = self.seg;
        let (info, bytes) = seg.term_info_at(field, offset)?;
        let mut c = seg.postings(field, &info, &bytes, false)?;
        while c.doc() != TERMINATED {
            let d = c.doc() as usize;
            if let Some(w) = self.bits.get_mut(d / 64) {
                *w |= 1 << (d % 64);
            }
            c.next();
        }
        match c.corruption() {
            Some(why) => Err(scorer_corruption(seg, why)),
            None => Ok(()),
        }
    }

    /// The documents, in order.
    pub(crate) fn finish(self) -> Vec<u32> {
        bits_to_docs(&self.bits)
    }
}

/// The set bits of a bitset, in order.
pub(crate) fn bits_to_docs(bits: &[u64]) -> Vec<u32> {
    let mut docs = Vec::new();
    for (i, &w) in bits.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            docs.push(i as u32 * 64 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_bounds_round_like_elasticsearch() {
        assert_eq!(int_bound(1.5, true, true), Some(2));
        assert_eq!(int_bound(1.5, false, true), Some(2));
        assert_eq!(int_bound(2.0, false, true), Some(3));
        assert_eq!(int_bound(1.5, true, false), Some(1));
        assert_eq!(int_bound(2.0, false, false), Some(1));
        assert_eq!(int_bound(1e30, true, true), None);
        assert_eq!(int_bound(-1e30, true, false), None);
    }
}
