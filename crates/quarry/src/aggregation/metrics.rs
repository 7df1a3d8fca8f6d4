//! Metrics: `min`, `max`, `avg`, `sum`, `value_count`, `stats` (one accumulator per bucket,
//! sums compensated as Elasticsearch's `CompensatedSum`), `cardinality` (a
//! [`Cardinality`] per bucket) and `percentiles` (every value kept: exact).
//!
//! Every value of a multi-valued field counts (`value_count` of a keyword counts its distinct
//! values per document, as its column keeps them); a document without a value counts the
//! `missing` value once when one is given.
use std::ops::Range;

use quarry_codecs::column::{self, Column};
use serde_json::{Map, Value};

use super::cardinality::{hash_bytes, hash_u64, Cardinality};
use super::exec::{dense_values, gather_values, AggState, Budget, SegCollector, SegCtx};
use super::format::{java_double, json_f64};
use super::request::{to_f64, CardinalityReq, MetricKind, MetricReq, Missing, PercentilesReq};
use crate::codec::columns::{ColumnKind, ColumnView};
use crate::schema::FieldType;
use crate::Result;

/// A running count, compensated sum, minimum and maximum.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acc {
    pub count: u64,
    pub sum: f64,
    comp: f64,
    pub min: f64,
    pub max: f64,
}

impl Acc {
    pub const EMPTY: Acc = Acc {
        count: 0,
        sum: 0.0,
        comp: 0.0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
    };

    /// Adds a value: Kahan summation exactly as Elasticsearch's `CompensatedSum.add`.
    #[inline]
    pub fn add(&mut self, v: f64) {
        self.count += 1;
        self.add_to_sum(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    #[inline]
    fn add_to_sum(&mut self, v: f64) {
        if !v.is_finite() {
            self.sum += v;
        }
        if self.sum.is_finite() {
            let corrected = v + self.comp;
            let updated = self.sum + corrected;
            self.comp = corrected - (updated - self.sum);
            self.sum = updated;
        }
    }

    /// Adds `count` values whose exact sum (rounded once) is `sum`, smallest `min` and largest
    /// `max`.
    pub fn add_exact(&mut self, count: u64, sum: f64, min: f64, max: f64) {
        self.count += count;
        self.add_to_sum(sum);
        self.min = self.min.min(min);
        self.max = self.max.max(max);
    }
}

fn grow<T: Clone>(v: &mut Vec<T>, at: u32, empty: T) -> &mut T {
    let i = at as usize;
    if v.len() <= i {
        v.resize(i + 1, empty);
    }
    &mut v[i]
}

/// `min`, `max`, `avg`, `sum`, `value_count`, `stats`.
pub(crate) struct MetricState {
    req: MetricReq,
    accs: Vec<Acc>,
}

impl MetricState {
    pub fn new(req: MetricReq) -> Self {
        MetricState {
            req,
            accs: Vec::new(),
        }
    }
}

struct MetricSeg<'a> {
    kind: MetricKind,
    ftype: FieldType,
    view: Option<ColumnView<'a>>,
    missing: Option<f64>,
    accs: &'a mut Vec<Acc>,
}

impl AggState for MetricState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let ftype = self.req.field.ftype;
        Ok(Box::new(MetricSeg {
            kind: self.req.kind,
            ftype,
            view: ctx.column(&self.req.field)?,
            missing: self.req.missing.as_ref().map(|m| match m {
                Missing::Num(x) => to_f64(ftype, *x),
                Missing::Bytes(_) => 0.0,
            }),
            accs: &mut self.accs,
        }))
    }

    fn result(&self, bucket: u32, _: &mut Budget) -> Result<Map<String, Value>> {
        let a = self
            .accs
            .get(bucket as usize)
            .copied()
            .unwrap_or(Acc::EMPTY);
        let f = &self.req.field.format;
        let mut m = Map::new();
        let value = |m: &mut Map<String, Value>, v: Option<f64>| -> Result<()> {
            m.insert("value".into(), v.map_or(Value::Null, json_f64));
            if let (Some(v), false) = (v, f.is_raw()) {
                m.insert("value_as_string".into(), Value::String(f.format_f64(v)?));
            }
            Ok(())
        };
        let has = a.count > 0;
        match self.req.kind {
            MetricKind::Min => value(&mut m, has.then_some(a.min))?,
            MetricKind::Max => value(&mut m, has.then_some(a.max))?,
            MetricKind::Avg => value(&mut m, has.then(|| a.sum / a.count as f64))?,
            MetricKind::Sum => value(&mut m, Some(a.sum))?,
            MetricKind::ValueCount => {
                m.insert("value".into(), Value::from(a.count));
            }
            MetricKind::Stats => {
                m.insert("count".into(), Value::from(a.count));
                if has {
                    let avg = a.sum / a.count as f64;
                    m.insert("min".into(), json_f64(a.min));
                    m.insert("max".into(), json_f64(a.max));
                    m.insert("avg".into(), json_f64(avg));
                    m.insert("sum".into(), json_f64(a.sum));
                    if !f.is_raw() {
                        m.insert("min_as_string".into(), f.format_f64(a.min)?.into());
                        m.insert("max_as_string".into(), f.format_f64(a.max)?.into());
                        m.insert("avg_as_string".into(), f.format_f64(avg)?.into());
                        m.insert("sum_as_string".into(), f.format_f64(a.sum)?.into());
                    }
                } else {
                    m.insert("min".into(), Value::Null);
                    m.insert("max".into(), Value::Null);
                    m.insert("avg".into(), Value::Null);
                    m.insert("sum".into(), json_f64(0.0));
                }
            }
        }
        Ok(m)
    }
}

/// Adds the values of `rows` of `col` to `acc`, a block at a time.
fn add_rows(acc: &mut Acc, col: &Column<'_>, rows: Range<usize>, ftype: FieldType) {
    let mut buf = [0u64; column::BLOCK];
    let mut at = rows.start;
    let mut ints = IntSum::default();
    while at < rows.end {
        let n = column::BLOCK.min(rows.end - at);
        let vals = &mut buf[..n];
        col.get_range(at, vals);
        let b = at / column::BLOCK;
        if ftype != FieldType::Float
            && at.is_multiple_of(column::BLOCK)
            && at + n == col.len().min((b + 1) * column::BLOCK)
        {
            // A whole block: its extremes are in its statistics.
            ints.add_bounded(vals, ftype, col.block_bounds(b));
        } else {
            add_values(acc, &mut ints, vals, ftype);
        }
        at += n;
    }
    ints.flush(acc, ftype);
}

/// Integer values (integers, dates, booleans) summed exactly: an `i128` total and the
/// extremes in the column's order, added to an [`Acc`] once at the end. A compensated sum of
/// integers is exact while the partial sums stay below 2^53, so this gives Elasticsearch's
/// answer there and the exactly rounded one beyond; it costs about a cycle per value instead
/// of the compensated sum's dependent chain of four additions.
#[derive(Default)]
struct IntSum {
    count: u64,
    sum: i128,
    /// The smallest and largest column value (order-preserving encoding), when `count > 0`.
    min: u64,
    max: u64,
}

impl IntSum {
    #[inline]
    fn add(&mut self, vals: &[u64], ftype: FieldType) {
        if vals.is_empty() {
            return;
        }
        let bounds = vals
            .iter()
            .fold((u64::MAX, 0u64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        self.add_bounded(vals, ftype, bounds);
    }

    /// [`add`](Self::add) of values whose smallest and largest are known.
    #[inline]
    fn add_bounded(&mut self, vals: &[u64], ftype: FieldType, (lo, hi): (u64, u64)) {
        if vals.is_empty() {
            return;
        }
        // Values below 2^52 in magnitude: a block's sum fits an i64, whose additions vectorize.
        const SMALL: i64 = 1 << 52;
        let small = |v: u64| (-SMALL..SMALL).contains(&column::sortable_to_i64(v));
        let sum: i128 = if ftype == FieldType::Boolean {
            vals.iter().map(|&v| v as i64).sum::<i64>() as i128
        } else if small(lo) && small(hi) && vals.len() <= 1 << 10 {
            vals.iter()
                .map(|&v| column::sortable_to_i64(v))
                .sum::<i64>() as i128
        } else {
            vals.iter()
                .map(|&v| column::sortable_to_i64(v) as i128)
                .sum()
        };
        if self.count == 0 {
            (self.min, self.max) = (lo, hi);
        } else {
            self.min = self.min.min(lo);
            self.max = self.max.max(hi);
        }
        self.count += vals.len() as u64;
        self.sum += sum;
    }

    fn flush(&mut self, acc: &mut Acc, ftype: FieldType) {
        if self.count == 0 {
            return;
        }
        acc.add_exact(
            self.count,
            self.sum as f64,
            to_f64(ftype, self.min),
            to_f64(ftype, self.max),
        );
        *self = IntSum::default();
    }
}

/// Adds column values: floats one by one (compensated, in document order, as Elasticsearch),
/// integers into `ints`.
#[inline]
fn add_values(acc: &mut Acc, ints: &mut IntSum, vals: &[u64], ftype: FieldType) {
    match ftype {
        FieldType::Float => vals
            .iter()
            .for_each(|&v| acc.add(quarry_codecs::column::sortable_to_f64(v))),
        _ => ints.add(vals, ftype),
    }
}

/// The smallest or largest value of `rows`, whole blocks from their statistics.
fn extreme(col: &Column<'_>, rows: Range<usize>, want_max: bool) -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut keep = |v: u64| {
        best = Some(match best {
            None => v,
            Some(b) if want_max => b.max(v),
            Some(b) => b.min(v),
        })
    };
    let mut at = rows.start;
    while at < rows.end {
        let b = at / column::BLOCK;
        let block_end = ((b + 1) * column::BLOCK).min(col.len());
        if at == b * column::BLOCK && block_end <= rows.end {
            let (lo, hi) = col.block_bounds(b);
            keep(if want_max { hi } else { lo });
            at = block_end;
        } else {
            let end = block_end.min(rows.end);
            for r in at..end {
                keep(col.get(r));
            }
            at = end;
        }
    }
    best
}

impl SegCollector for MetricSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, bucket: u32) {
        let acc = grow(self.accs, bucket, Acc::EMPTY);
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        if rows.is_empty() {
            if let Some(m) = self.missing {
                acc.add(m);
            }
            return;
        }
        let v = self.view.as_ref().expect("rows come from a view");
        if self.kind == MetricKind::ValueCount {
            acc.count += rows.len() as u64;
            return;
        }
        for r in rows {
            acc.add(to_f64(self.ftype, v.value(r)));
        }
    }

    fn collect_block(&mut self, docs: &[u32]) {
        let view = match self.view {
            Some(v) if self.kind != MetricKind::ValueCount => v,
            _ => {
                for &d in docs {
                    self.collect(d, 0);
                }
                return;
            }
        };
        let ftype = self.ftype;
        let mut ints = IntSum::default();
        let mut vals = Vec::with_capacity(docs.len());
        for chunk in docs.chunks(column::BLOCK) {
            vals.clear();
            // Values in document order, rows in order: the order of the compensated float sum.
            let missing = gather_values(&view, chunk, &mut vals);
            if missing > 0 && self.missing.is_some() {
                // Documents without a value count the missing value in their place.
                ints.flush(grow(self.accs, 0, Acc::EMPTY), ftype);
                for &d in chunk {
                    self.collect(d, 0);
                }
                continue;
            }
            add_values(grow(self.accs, 0, Acc::EMPTY), &mut ints, &vals, ftype);
        }
        ints.flush(grow(self.accs, 0, Acc::EMPTY), ftype);
    }

    fn collect_range(&mut self, docs: Range<u32>) {
        let Some(v) = self.view else {
            for d in docs {
                self.collect(d, 0);
            }
            return;
        };
        if docs.is_empty() {
            return;
        }
        // The rows of a run of documents are one run of rows.
        let rows = v.rows(docs.start).start..v.rows(docs.end - 1).end;
        if self.missing.is_some() && !v.is_dense() {
            // Documents without a value count the missing value: per document.
            for d in docs {
                self.collect(d, 0);
            }
            return;
        }
        let acc = grow(self.accs, 0, Acc::EMPTY);
        match self.kind {
            MetricKind::ValueCount => acc.count += rows.len() as u64,
            MetricKind::Min | MetricKind::Max if v.kind != ColumnKind::Ord => {
                let want_max = self.kind == MetricKind::Max;
                if let Some(x) = extreme(v.values(), rows.clone(), want_max) {
                    let x = to_f64(self.ftype, x);
                    // Only the extreme matters; the rows are counted, not read.
                    acc.count += rows.len() as u64;
                    acc.min = acc.min.min(x);
                    acc.max = acc.max.max(x);
                }
            }
            _ => add_rows(acc, v.values(), rows, self.ftype),
        }
    }
}

/// `cardinality`: one distinct count per bucket.
pub(crate) struct CardinalityState {
    req: CardinalityReq,
    counts: Vec<Option<Cardinality>>,
}

impl CardinalityState {
    pub fn new(req: CardinalityReq) -> Self {
        CardinalityState {
            req,
            counts: Vec::new(),
        }
    }
}

struct CardinalitySeg<'a> {
    threshold: usize,
    view: Option<ColumnView<'a>>,
    missing: Option<u64>,
    /// Keywords: each ordinal's hash, computed once (`seen` marks the computed ones).
    hashes: Vec<u64>,
    seen: Vec<bool>,
    /// Keywords at the top level: the ordinals met (a bitset), hashed once at the end.
    seen0: Vec<u64>,
    counts: &'a mut Vec<Option<Cardinality>>,
}

impl CardinalitySeg<'_> {
    fn count0(&mut self) -> &mut Cardinality {
        let threshold = self.threshold;
        grow(self.counts, 0, None).get_or_insert_with(|| Cardinality::new(threshold))
    }
}

/// The hash of column value `v` (keywords: of the term, computed once per ordinal).
#[inline]
fn hash_of(view: &ColumnView<'_>, hashes: &mut [u64], seen: &mut [bool], v: u64) -> u64 {
    match view.dict() {
        None => hash_u64(v),
        Some(dict) => {
            let i = v as usize;
            if i >= seen.len() {
                return hash_bytes(dict.term(v));
            }
            if !seen[i] {
                seen[i] = true;
                hashes[i] = hash_bytes(dict.term(v));
            }
            hashes[i]
        }
    }
}

impl AggState for CardinalityState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let view = ctx.column(&self.req.field)?;
        let terms = view.as_ref().map_or(0, |v| v.terms()) as usize;
        Ok(Box::new(CardinalitySeg {
            threshold: self.req.threshold,
            view,
            missing: self.req.missing.as_ref().map(|m| match m {
                Missing::Num(x) => hash_u64(*x),
                Missing::Bytes(b) => hash_bytes(b),
            }),
            hashes: vec![0; terms],
            seen: vec![false; terms],
            seen0: vec![0; terms.div_ceil(64)],
            counts: &mut self.counts,
        }))
    }

    fn result(&self, bucket: u32, _: &mut Budget) -> Result<Map<String, Value>> {
        let v = self
            .counts
            .get(bucket as usize)
            .and_then(|c| c.as_ref())
            .map_or(0, |c| c.value());
        let mut m = Map::new();
        m.insert("value".into(), Value::from(v));
        Ok(m)
    }
}

impl SegCollector for CardinalitySeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, bucket: u32) {
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        let threshold = self.threshold;
        if rows.is_empty() {
            if let Some(h) = self.missing {
                grow(self.counts, bucket, None)
                    .get_or_insert_with(|| Cardinality::new(threshold))
                    .add_hash(h);
            }
            return;
        }
        let view = self.view.as_ref().expect("rows come from a view");
        if bucket == 0 && view.dict().is_some() {
            for r in rows {
                let o = view.value(r) as usize;
                if let Some(w) = self.seen0.get_mut(o / 64) {
                    *w |= 1 << (o % 64);
                }
            }
            return;
        }
        for r in rows {
            let h = hash_of(view, &mut self.hashes, &mut self.seen, view.value(r));
            grow(self.counts, bucket, None)
                .get_or_insert_with(|| Cardinality::new(threshold))
                .add_hash(h);
        }
    }

    fn collect_range(&mut self, docs: Range<u32>) {
        // Without a missing value to add, the distinct values of a run of documents are those
        // of its run of rows, document boundaries aside.
        let Some(v) = self
            .view
            .filter(|v| !docs.is_empty() && (self.missing.is_none() || v.is_dense()))
        else {
            for d in docs {
                self.collect(d, 0);
            }
            return;
        };
        let rows = v.rows(docs.start).start..v.rows(docs.end - 1).end;
        let col = v.values();
        let mut buf = [0u64; column::BLOCK];
        let keyword = v.dict().is_some();
        let mut at = rows.start;
        let mut prev = None;
        while at < rows.end {
            let n = buf.len().min(rows.end - at);
            col.get_range(at, &mut buf[..n]);
            if keyword {
                for &o in &buf[..n] {
                    if let Some(w) = self.seen0.get_mut(o as usize / 64) {
                        *w |= 1 << (o % 64);
                    }
                }
            } else {
                let c = self.count0();
                for &x in &buf[..n] {
                    // Runs of one value (sorted or clustered data) are hashed once.
                    if prev != Some(x) {
                        prev = Some(x);
                        c.add_hash(hash_u64(x));
                    }
                }
            }
            at += n;
        }
    }

    fn finish(&mut self) -> Result<()> {
        let Some(dict) = self.view.as_ref().and_then(|v| v.dict().copied()) else {
            return Ok(());
        };
        if self.seen0.iter().all(|&w| w == 0) {
            return Ok(());
        }
        let seen0 = std::mem::take(&mut self.seen0);
        let c = self.count0();
        for (i, &w) in seen0.iter().enumerate() {
            let mut bits = w;
            while bits != 0 {
                let o = i as u64 * 64 + u64::from(bits.trailing_zeros());
                bits &= bits - 1;
                c.add_hash(hash_bytes(dict.term(o)));
            }
        }
        Ok(())
    }
}

/// `percentiles`: every value kept per bucket, read exactly as Elasticsearch's
/// `SortingDigest` does (linear interpolation between the closest ranks), which its default
/// (hybrid) digest uses below 2,000 values.
pub(crate) struct PercentilesState {
    req: PercentilesReq,
    values: Vec<Vec<f64>>,
}

impl PercentilesState {
    pub fn new(req: PercentilesReq) -> Self {
        PercentilesState {
            req,
            values: Vec::new(),
        }
    }
}

struct PercentilesSeg<'a> {
    ftype: FieldType,
    view: Option<ColumnView<'a>>,
    missing: Option<f64>,
    values: &'a mut Vec<Vec<f64>>,
}

impl AggState for PercentilesState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        Ok(Box::new(PercentilesSeg {
            ftype: self.req.field.ftype,
            view: ctx.column(&self.req.field)?,
            missing: self.req.missing,
            values: &mut self.values,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        for v in &mut self.values {
            v.sort_unstable_by(f64::total_cmp);
        }
        Ok(())
    }

    fn result(&self, bucket: u32, _: &mut Budget) -> Result<Map<String, Value>> {
        let vals = self
            .values
            .get(bucket as usize)
            .map_or(&[][..], Vec::as_slice);
        let f = &self.req.field.format;
        let mut m = Map::new();
        let entries = self
            .req
            .percents
            .iter()
            .map(|&p| Ok((p, quantile(p / 100.0, vals))))
            .collect::<Result<Vec<_>>>()?;
        let as_string = |v: Option<f64>| -> Result<Option<String>> {
            match (v, f) {
                (Some(v), f) if !f.is_raw() => f.format_f64(v).map(Some),
                _ => Ok(None),
            }
        };
        if self.req.keyed {
            let mut o = Map::new();
            for (p, v) in entries {
                let key = java_double(p);
                o.insert(key.clone(), v.map_or(Value::Null, json_f64));
                if let Some(s) = as_string(v)? {
                    o.insert(format!("{key}_as_string"), Value::String(s));
                }
            }
            m.insert("values".into(), Value::Object(o));
        } else {
            let mut a = Vec::new();
            for (p, v) in entries {
                let mut o = Map::new();
                o.insert("key".into(), json_f64(p));
                o.insert("value".into(), v.map_or(Value::Null, json_f64));
                if let Some(s) = as_string(v)? {
                    o.insert("value_as_string".into(), Value::String(s));
                }
                a.push(Value::Object(o));
            }
            m.insert("values".into(), Value::Array(a));
        }
        Ok(m)
    }
}

/// Elasticsearch's `Dist.quantile` over sorted values: linear interpolation at rank
/// `q * (n - 1)`; `None` without values.
pub(crate) fn quantile(q: f64, sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let index = q * (n - 1) as f64;
    let mut low = index.floor() as usize;
    let mut high = low + 1;
    let mut weight = index - low as f64;
    if index <= 0.0 {
        low = 0;
        high = 0;
        weight = 0.0;
    }
    if index >= (n - 1) as f64 {
        low = n - 1;
        high = n - 1;
        weight = 0.0;
    }
    let (a, b) = (sorted[low], sorted[high]);
    Some(a + weight * (b - a))
}

impl SegCollector for PercentilesSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, bucket: u32) {
        let out = grow(self.values, bucket, Vec::new());
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        if rows.is_empty() {
            if let Some(m) = self.missing {
                out.push(m);
            }
            return;
        }
        let v = self.view.as_ref().expect("a view");
        out.extend(rows.map(|r| to_f64(self.ftype, v.value(r))));
    }

    fn collect_range(&mut self, docs: Range<u32>) {
        match self.view {
            Some(v) if v.is_dense() => {
                let ftype = self.ftype;
                let out = grow(self.values, 0, Vec::new());
                out.reserve(docs.len());
                dense_values(&v, docs, |_, x| out.push(to_f64(ftype, x)));
            }
            _ => {
                for d in docs {
                    self.collect(d, 0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(0.0, &v), Some(1.0));
        assert_eq!(quantile(1.0, &v), Some(4.0));
        assert_eq!(quantile(0.5, &v), Some(2.5));
        assert_eq!(quantile(0.25, &v), Some(1.75));
        assert_eq!(quantile(0.5, &[7.0]), Some(7.0));
        assert_eq!(quantile(0.5, &[]), None);
    }

    #[test]
    fn compensated_sums_as_elasticsearch() {
        let mut a = Acc::EMPTY;
        for _ in 0..10 {
            a.add(0.1);
        }
        assert_eq!(a.sum, 1.0);
        assert_eq!((a.count, a.min, a.max), (10, 0.1, 0.1));
        a.add(f64::INFINITY);
        assert_eq!(a.sum, f64::INFINITY);
    }
}
