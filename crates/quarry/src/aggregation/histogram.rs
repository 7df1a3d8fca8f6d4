//! `histogram` and `date_histogram`: buckets of values rounded down to an interval, in key
//! order, with the empty buckets between the first and last (and out to `extended_bounds`)
//! filled in when `min_doc_count` is 0, as Elasticsearch's reduce phase does.
//!
//! Numeric keys are Elasticsearch's `floor((value - offset) / interval) * interval + offset`
//! in doubles. Date keys are the start of the value's calendar unit in the time zone
//! (`calendar_interval`), or of its fixed interval counted in local time (`fixed_interval`);
//! in each segment the bucket starts between the column's smallest and largest value are
//! computed once and values are placed by search (or by arithmetic for fixed intervals in a
//! zone of fixed offset), not by calendar arithmetic per value.
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;
use quarry_codecs::column::{sortable_to_i64, BLOCK};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use super::exec::{
    dense_values, gather_dense, AggState, Budget, SegCollector, SegCtx, SubCollectors, Subs, EMPTY,
};
use super::format::{java_double, json_f64};
use super::request::{to_f64, BucketOrder, DateHistogramReq, HistogramReq, Interval};
use crate::codec::columns::ColumnView;
use crate::date;
use crate::schema::FieldType;
use crate::{Error, Result};

/// The largest span of segment-local bucket slots kept in a table.
const MAX_LOCAL: i64 = 1 << 20;
/// The most bucket starts precomputed per segment for calendar intervals.
const MAX_BOUNDS: usize = 1 << 16;

/// Every (parent bucket, key) bucket met so far.
#[derive(Default)]
struct KeyBuckets {
    keys: Vec<i64>,
    parents: Vec<u32>,
    counts: Vec<u64>,
    index: FxHashMap<(u32, i64), u32>,
    /// Per parent, its buckets in key order (after `prepare`).
    by_parent: FxHashMap<u32, Vec<u32>>,
}

impl KeyBuckets {
    #[inline]
    fn get_or_add(&mut self, parent: u32, key: i64) -> u32 {
        *self.index.entry((parent, key)).or_insert_with(|| {
            self.keys.push(key);
            self.parents.push(parent);
            self.counts.push(0);
            self.keys.len() as u32 - 1
        })
    }

    fn prepare(&mut self) {
        self.by_parent.clear();
        for (b, &p) in self.parents.iter().enumerate() {
            self.by_parent.entry(p).or_default().push(b as u32);
        }
        for list in self.by_parent.values_mut() {
            list.sort_unstable_by_key(|&b| self.keys[b as usize]);
        }
    }

    /// The (key, count, bucket) of `parent`'s buckets with at least `min` documents, by key.
    fn of(&self, parent: u32, min: u64) -> Vec<(i64, u64, u32)> {
        match self.by_parent.get(&parent) {
            Some(list) if parent != EMPTY => list
                .iter()
                .map(|&b| (self.keys[b as usize], self.counts[b as usize], b))
                .filter(|c| c.1 >= min)
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Segment-local bucket slots: a table from slot to bucket for parent 0.
struct LocalCache {
    slots: Vec<u32>,
}

impl LocalCache {
    fn new(span: i64) -> Self {
        LocalCache {
            slots: if (1..=MAX_LOCAL).contains(&span) {
                vec![EMPTY; span as usize]
            } else {
                Vec::new()
            },
        }
    }
}

/// Places `(doc, key)` in its bucket: the local table for parent 0, the global map otherwise.
#[inline]
fn hit(
    buckets: &mut KeyBuckets,
    cache: &mut LocalCache,
    subs: &mut SubCollectors<'_>,
    doc: u32,
    parent: u32,
    key: i64,
    local: Option<usize>,
) {
    let b = match local {
        Some(i) if parent == 0 && i < cache.slots.len() => {
            let s = &mut cache.slots[i];
            if *s == EMPTY {
                *s = buckets.get_or_add(0, key);
            }
            *s
        }
        _ => buckets.get_or_add(parent, key),
    };
    buckets.counts[b as usize] += 1;
    subs.collect(doc, b);
}

/// Buckets the documents `docs` of a dense column value by value.
#[allow(clippy::too_many_arguments)]
fn read_dense(
    v: &ColumnView<'_>,
    docs: std::ops::Range<u32>,
    rounding: &DateRounding,
    locator: &mut Locator,
    buckets: &mut KeyBuckets,
    cache: &mut LocalCache,
    subs: &mut SubCollectors<'_>,
    error: &mut Option<Error>,
) {
    dense_values(v, docs, |d, x| {
        place(d, x, rounding, locator, buckets, cache, subs, error)
    });
}

/// Buckets document `d` of parent 0 by its column value `x`; an error is kept for `finish`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn place(
    d: u32,
    x: u64,
    rounding: &DateRounding,
    locator: &mut Locator,
    buckets: &mut KeyBuckets,
    cache: &mut LocalCache,
    subs: &mut SubCollectors<'_>,
    error: &mut Option<Error>,
) {
    match locator.locate(rounding, sortable_to_i64(x)) {
        Ok((key, local)) => hit(buckets, cache, subs, d, 0, key, local),
        Err(e) => {
            error.get_or_insert(e);
        }
    }
}

/// Adds `n` documents of parent 0 to the bucket of `key` (no sub-aggregations).
fn add_to_bucket(
    buckets: &mut KeyBuckets,
    cache: &mut LocalCache,
    key: i64,
    local: Option<usize>,
    n: u64,
) {
    let b = match local {
        Some(i) if i < cache.slots.len() => {
            let s = &mut cache.slots[i];
            if *s == EMPTY {
                *s = buckets.get_or_add(0, key);
            }
            *s
        }
        _ => buckets.get_or_add(0, key),
    };
    buckets.counts[b as usize] += n;
}

/// The smallest and largest value of a column (from its block statistics).
fn column_bounds(v: &ColumnView<'_>) -> Option<(u64, u64)> {
    let col = v.values();
    if col.is_empty() {
        return None;
    }
    let (mut lo, mut hi) = (u64::MAX, 0);
    for b in 0..col.num_blocks() {
        let (a, z) = col.block_bounds(b);
        lo = lo.min(a);
        hi = hi.max(z);
    }
    Some((lo, hi))
}

fn sort_by_order<T>(list: &mut [T], order: BucketOrder, key: impl Fn(&T) -> (u64, f64)) {
    match order {
        BucketOrder::KeyAsc => {}
        BucketOrder::KeyDesc => list.reverse(),
        BucketOrder::CountAsc => list.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        }),
        BucketOrder::CountDesc => list.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            kb.0.cmp(&ka.0).then(ka.1.total_cmp(&kb.1))
        }),
    }
}

/// `histogram` over a numeric field.
pub(crate) struct HistogramState {
    req: HistogramReq,
    subs: Subs,
    buckets: KeyBuckets,
}

impl HistogramState {
    pub fn new(req: HistogramReq, subs: Subs) -> Self {
        HistogramState {
            req,
            subs,
            buckets: KeyBuckets::default(),
        }
    }

    fn round(&self, x: f64) -> f64 {
        ((x - self.req.offset) / self.req.interval).floor() * self.req.interval + self.req.offset
    }

    fn next_key(&self, key: f64) -> f64 {
        self.round(key + self.req.interval + self.req.interval / 2.0)
    }
}

struct HistogramSeg<'a> {
    ftype: FieldType,
    view: Option<ColumnView<'a>>,
    interval: f64,
    offset: f64,
    missing: Option<i64>,
    kmin: i64,
    cache: LocalCache,
    buckets: &'a mut KeyBuckets,
    subs: SubCollectors<'a>,
}

impl HistogramSeg<'_> {
    #[inline]
    fn key(&self, x: f64) -> i64 {
        ((x - self.offset) / self.interval).floor() as i64
    }
}

impl AggState for HistogramState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let view = ctx.column(&self.req.field)?;
        let ftype = self.req.field.ftype;
        let (interval, offset) = (self.req.interval, self.req.offset);
        let key = |x: f64| ((x - offset) / interval).floor() as i64;
        let (kmin, span) = match view.as_ref().and_then(column_bounds) {
            Some((lo, hi)) => {
                let (a, z) = (key(to_f64(ftype, lo)), key(to_f64(ftype, hi)));
                (a, z.saturating_sub(a).saturating_add(1))
            }
            None => (0, 0),
        };
        Ok(Box::new(HistogramSeg {
            ftype,
            view,
            interval,
            offset,
            missing: self.req.missing.map(key),
            kmin,
            cache: LocalCache::new(span),
            buckets: &mut self.buckets,
            subs: self.subs.segment(ctx)?,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        self.buckets.prepare();
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let req = &self.req;
        let (i, o) = (req.interval, req.offset);
        let data: Vec<(f64, u64, u32)> = self
            .buckets
            .of(parent, req.min_doc_count.max(1))
            .into_iter()
            .map(|(k, c, b)| (k as f64 * i + o, c, b))
            .collect();
        budget.take(data.len())?;
        let mut list: Vec<(f64, u64, u32)> = Vec::with_capacity(data.len());
        if req.min_doc_count == 0 {
            // Elasticsearch's `addEmptyBuckets`.
            let min_bound = req.extended_bounds.0.unwrap_or(f64::INFINITY);
            let max_bound = req.extended_bounds.1.unwrap_or(f64::NEG_INFINITY);
            let mut fill = |list: &mut Vec<(f64, u64, u32)>, key: f64| -> Result<()> {
                budget.take(1)?;
                list.push((key, 0, EMPTY));
                Ok(())
            };
            // Steps that stop moving (keys past the doubles' precision) end a run.
            let step = |key: f64| {
                let n = self.next_key(key);
                if n > key {
                    n
                } else {
                    f64::INFINITY
                }
            };
            match (data.first(), data.last()) {
                (None, _) | (_, None) => {
                    let mut key = self.round(min_bound);
                    while key <= max_bound {
                        fill(&mut list, key)?;
                        key = step(key);
                    }
                }
                (Some(first), Some(last)) => {
                    if min_bound.is_finite() {
                        let mut key = self.round(min_bound);
                        while key < first.0 {
                            fill(&mut list, key)?;
                            key = step(key);
                        }
                    }
                    let mut prev: Option<f64> = None;
                    for &d in &data {
                        if let Some(p) = prev {
                            let mut key = step(p);
                            while key < d.0 {
                                fill(&mut list, key)?;
                                key = step(key);
                            }
                        }
                        list.push(d);
                        prev = Some(d.0);
                    }
                    let mut key = step(last.0);
                    while key <= max_bound {
                        fill(&mut list, key)?;
                        key = step(key);
                    }
                }
            }
        } else {
            list = data;
        }
        sort_by_order(&mut list, req.order, |x| (x.1, x.0));
        let f = &req.field.format;
        let mut out = Vec::with_capacity(list.len());
        for (key, count, b) in list {
            let mut m = Map::new();
            let key_string = if f.is_raw() {
                None
            } else {
                Some(f.format_f64(key)?)
            };
            if let Some(s) = &key_string {
                m.insert("key_as_string".into(), Value::String(s.clone()));
            }
            m.insert("key".into(), json_f64(key));
            m.insert("doc_count".into(), Value::from(count));
            self.subs.results_into(b, budget, &mut m)?;
            out.push((key_string.unwrap_or_else(|| java_double(key)), m));
        }
        Ok(buckets_json(out, req.keyed))
    }
}

/// `{"buckets": [...]}`, or keyed by each bucket's key string.
fn buckets_json(list: Vec<(String, Map<String, Value>)>, keyed: bool) -> Map<String, Value> {
    let buckets = if keyed {
        Value::Object(
            list.into_iter()
                .map(|(k, m)| (k, Value::Object(m)))
                .collect(),
        )
    } else {
        Value::Array(list.into_iter().map(|(_, m)| Value::Object(m)).collect())
    };
    let mut out = Map::new();
    out.insert("buckets".into(), buckets);
    out
}

impl SegCollector for HistogramSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        if rows.is_empty() {
            if let Some(k) = self.missing {
                let local = usize::try_from(k.wrapping_sub(self.kmin)).ok();
                hit(
                    self.buckets,
                    &mut self.cache,
                    &mut self.subs,
                    doc,
                    parent,
                    k,
                    local,
                );
            }
            return;
        }
        let view = self.view.as_ref().expect("rows come from a view");
        let mut prev = None;
        for r in rows {
            let k = self.key(to_f64(self.ftype, view.value(r)));
            if prev == Some(k) {
                continue;
            }
            prev = Some(k);
            let local = usize::try_from(k.wrapping_sub(self.kmin)).ok();
            hit(
                self.buckets,
                &mut self.cache,
                &mut self.subs,
                doc,
                parent,
                k,
                local,
            );
        }
    }

    fn collect_range(&mut self, docs: std::ops::Range<u32>) {
        match self.view {
            Some(v) if v.is_dense() => {
                let (ftype, offset, interval, kmin) =
                    (self.ftype, self.offset, self.interval, self.kmin);
                let (buckets, cache, subs) = (&mut *self.buckets, &mut self.cache, &mut self.subs);
                dense_values(&v, docs, |d, x| {
                    let k = ((to_f64(ftype, x) - offset) / interval).floor() as i64;
                    let local = usize::try_from(k.wrapping_sub(kmin)).ok();
                    hit(buckets, cache, subs, d, 0, k, local);
                });
            }
            _ => {
                for d in docs {
                    self.collect(d, 0);
                }
            }
        }
    }

    fn finish(&mut self) -> Result<()> {
        self.subs.finish()
    }
}

/// A date histogram's rounding: interval, time zone and offset.
#[derive(Clone, Debug)]
pub(crate) struct DateRounding {
    interval: Interval,
    tz: TimeZone,
    /// The zone's offset in milliseconds when it never changes.
    fixed: Option<i64>,
    offset: i64,
}

fn date_err(e: date::DateError) -> Error {
    Error::Query(format!("date_histogram: {e}"))
}

fn ts(ms: i64) -> Result<Timestamp> {
    Timestamp::from_millisecond(ms)
        .map_err(|_| Error::Query(format!("date_histogram: date {ms} is out of range")))
}

impl DateRounding {
    pub fn new(interval: Interval, tz: TimeZone, offset: i64) -> Self {
        let fixed = tz
            .to_fixed_offset()
            .ok()
            .map(|o| i64::from(o.seconds()) * 1000);
        DateRounding {
            interval,
            tz,
            fixed,
            offset,
        }
    }

    /// For a fixed interval, or a calendar unit of at most a week, in a zone of fixed offset:
    /// keys are `k * interval + shift`. (Without transitions a day is always 86,400 s, and
    /// weeks start on the Monday before 1970-01-01, a Thursday, three days earlier.)
    fn arith_shift(&self) -> Option<(i64, i64)> {
        const DAY: i64 = 86_400_000;
        let tzo = self.fixed?;
        let (interval, align) = match self.interval {
            Interval::Fixed(i) => (i, 0),
            Interval::Calendar(date::Unit::Second) => (1_000, 0),
            Interval::Calendar(date::Unit::Minute) => (60_000, 0),
            Interval::Calendar(date::Unit::Hour) => (3_600_000, 0),
            Interval::Calendar(date::Unit::Day) => (DAY, 0),
            Interval::Calendar(date::Unit::Week) => (7 * DAY, -3 * DAY),
            Interval::Calendar(_) => return None,
        };
        Some((interval, self.offset - tzo + align))
    }

    /// The start of `v`'s bucket, without the offset.
    fn inner_round(&self, v: i64) -> Result<i64> {
        match (self.interval, self.fixed) {
            (Interval::Calendar(u), _) => date::round_down(v, u, &self.tz).map_err(date_err),
            (Interval::Fixed(i), Some(o)) => Ok(v
                .saturating_add(o)
                .div_euclid(i)
                .saturating_mul(i)
                .saturating_sub(o)),
            (Interval::Fixed(i), None) => {
                // Elasticsearch's rounding of a fixed interval in a zone with transitions: the
                // local time rounded down, read back in the zone.
                let off = i64::from(self.tz.to_offset(ts(v)?).seconds()) * 1000;
                let local = v + off;
                let rl = local.div_euclid(i) * i;
                let civil = Offset::UTC.to_datetime(ts(rl)?);
                let ms = |o: Offset| rl - i64::from(o.seconds()) * 1000;
                Ok(match self.tz.to_ambiguous_timestamp(civil).offset() {
                    AmbiguousOffset::Unambiguous { offset } => ms(offset),
                    AmbiguousOffset::Gap { before, .. } => {
                        // The transition the local time falls after.
                        let probe = ts(ms(before) + 1)?;
                        self.tz
                            .preceding(probe)
                            .next()
                            .map_or(ms(before), |t| t.timestamp().as_millisecond())
                    }
                    AmbiguousOffset::Fold { before, after } => {
                        let (early, late) = (ms(before), ms(after));
                        if late <= v {
                            late
                        } else {
                            early
                        }
                    }
                })
            }
        }
    }

    /// The start of the bucket after the one starting at `key`, without the offset.
    fn inner_next(&self, key: i64) -> Result<i64> {
        match (self.interval, self.fixed) {
            (Interval::Calendar(u), _) => {
                for n in 1..4 {
                    let next =
                        self.inner_round(date::add(key, u, n, &self.tz).map_err(date_err)?)?;
                    if next > key {
                        return Ok(next);
                    }
                }
                Err(Error::Query(format!(
                    "date_histogram: no bucket after {key}"
                )))
            }
            (Interval::Fixed(i), Some(_)) => Ok(key.saturating_add(i)),
            (Interval::Fixed(i), None) => {
                let mut probe = key.saturating_add(i);
                for _ in 0..4 {
                    let next = self.inner_round(probe)?;
                    if next > key {
                        return Ok(next);
                    }
                    probe = probe.saturating_add(i);
                }
                Err(Error::Query(format!(
                    "date_histogram: no bucket after {key}"
                )))
            }
        }
    }

    /// The key of `v`'s bucket.
    pub fn round(&self, v: i64) -> Result<i64> {
        Ok(self
            .inner_round(v.saturating_sub(self.offset))?
            .saturating_add(self.offset))
    }

    /// The key of the bucket after the one of key `key`.
    pub fn next(&self, key: i64) -> Result<i64> {
        Ok(self
            .inner_next(key.saturating_sub(self.offset))?
            .saturating_add(self.offset))
    }
}

/// `date_histogram`.
pub(crate) struct DateHistogramState {
    req: DateHistogramReq,
    rounding: DateRounding,
    subs: Subs,
    buckets: KeyBuckets,
}

impl DateHistogramState {
    pub fn new(req: DateHistogramReq, subs: Subs) -> Result<Self> {
        let rounding = DateRounding::new(req.interval, req.time_zone.clone(), req.offset);
        Ok(DateHistogramState {
            req,
            rounding,
            subs,
            buckets: KeyBuckets::default(),
        })
    }
}

/// Where a segment's values fall.
enum Locator {
    /// Fixed intervals in a zone of fixed offset: `k = (v - shift) / interval`.
    Arith {
        interval: i64,
        shift: i64,
        kmin: i64,
        /// The last bucket met: its key (where it starts) and slot.
        last: Option<(i64, Option<usize>)>,
    },
    /// The bucket starts from the segment's smallest to its largest value, `end` the start
    /// after the last; `last`: the slot found last (sorted values fall in it or the next).
    Table {
        starts: Vec<i64>,
        end: i64,
        last: usize,
    },
    /// Rounding per value, the last bucket's bounds kept.
    Direct { lo: i64, hi: i64, key: i64 },
}

struct DateHistogramSeg<'a> {
    view: Option<ColumnView<'a>>,
    rounding: &'a DateRounding,
    locator: Locator,
    missing: Option<i64>,
    cache: LocalCache,
    buckets: &'a mut KeyBuckets,
    subs: SubCollectors<'a>,
    error: Option<Error>,
    vals: Vec<i64>,
}

impl Locator {
    /// `v`'s key and its segment-local slot.
    #[inline]
    fn locate(&mut self, rounding: &DateRounding, v: i64) -> Result<(i64, Option<usize>)> {
        match self {
            Locator::Arith {
                interval,
                shift,
                kmin,
                last,
            } => {
                // The last bucket's bounds first: a division costs tens of cycles, and values
                // in index order (times of events) mostly fall in the bucket of the one before.
                if let Some((key, slot)) = *last {
                    if key <= v && v - key < *interval {
                        return Ok((key, slot));
                    }
                }
                let k = v.saturating_sub(*shift).div_euclid(*interval);
                let key = k.saturating_mul(*interval).saturating_add(*shift);
                let slot = usize::try_from(k.wrapping_sub(*kmin)).ok();
                if key <= v && v.checked_sub(key).is_some_and(|d| d < *interval) {
                    *last = Some((key, slot));
                }
                Ok((key, slot))
            }
            Locator::Table { starts, end, last } => {
                if v < starts[0] || v >= *end {
                    // Outside the segment's values: the missing value.
                    return Ok((rounding.round(v)?, None));
                }
                let l = *last;
                let upper = |i: usize| starts.get(i + 1).copied().unwrap_or(*end);
                let i = if starts[l] <= v && v < upper(l) {
                    l
                } else if l + 1 < starts.len() && starts[l + 1] <= v && v < upper(l + 1) {
                    l + 1
                } else {
                    starts.partition_point(|&s| s <= v) - 1
                };
                *last = i;
                Ok((starts[i], Some(i)))
            }
            Locator::Direct { lo, hi, key } => {
                if !(*lo <= v && v < *hi) {
                    *key = rounding.round(v)?;
                    *lo = (*key).min(v);
                    *hi = rounding.next(*key)?;
                }
                Ok((*key, None))
            }
        }
    }
}

impl DateHistogramSeg<'_> {
    fn value(&mut self, doc: u32, parent: u32, v: i64, prev: &mut Option<i64>) {
        match self.locator.locate(self.rounding, v) {
            Ok((key, local)) => {
                if *prev != Some(key) {
                    *prev = Some(key);
                    hit(
                        self.buckets,
                        &mut self.cache,
                        &mut self.subs,
                        doc,
                        parent,
                        key,
                        local,
                    );
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
}

impl AggState for DateHistogramState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let view = ctx.column(&self.req.field)?;
        let r = &self.rounding;
        let bounds = view
            .as_ref()
            .and_then(column_bounds)
            .map(|(lo, hi)| (sortable_to_i64(lo), sortable_to_i64(hi)));
        // Calendar keys computed by arithmetic must stay within the dates a calendar knows.
        let arith = r
            .arith_shift()
            .filter(|_| bounds.is_some_and(|(lo, hi)| ts(lo).is_ok() && ts(hi).is_ok()));
        let (locator, span) = match (bounds, arith) {
            (Some((lo, hi)), Some((interval, shift))) => {
                let kmin = lo.saturating_sub(shift).div_euclid(interval);
                let kmax = hi.saturating_sub(shift).div_euclid(interval);
                (
                    Locator::Arith {
                        interval,
                        shift,
                        kmin,
                        last: None,
                    },
                    kmax.saturating_sub(kmin).saturating_add(1),
                )
            }
            (Some((lo, hi)), None) => {
                let mut starts = vec![r.round(lo)?];
                loop {
                    let next = r.next(*starts.last().expect("one start"))?;
                    if next > hi {
                        break;
                    }
                    starts.push(next);
                    if starts.len() > MAX_BOUNDS {
                        break;
                    }
                }
                if starts.len() > MAX_BOUNDS {
                    (
                        Locator::Direct {
                            lo: 1,
                            hi: 0,
                            key: 0,
                        },
                        0,
                    )
                } else {
                    let n = starts.len() as i64;
                    let end = r.next(*starts.last().expect("one start"))?;
                    (
                        Locator::Table {
                            starts,
                            end,
                            last: 0,
                        },
                        n,
                    )
                }
            }
            (None, _) => (
                Locator::Direct {
                    lo: 1,
                    hi: 0,
                    key: 0,
                },
                0,
            ),
        };
        Ok(Box::new(DateHistogramSeg {
            view,
            rounding: &self.rounding,
            locator,
            missing: self.req.missing,
            cache: LocalCache::new(span),
            buckets: &mut self.buckets,
            subs: self.subs.segment(ctx)?,
            error: None,
            vals: Vec::new(),
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        self.buckets.prepare();
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let req = &self.req;
        let r = &self.rounding;
        let data = self.buckets.of(parent, req.min_doc_count.max(1));
        budget.take(data.len())?;
        let mut list: Vec<(i64, u64, u32)>;
        if req.min_doc_count == 0 {
            // Elasticsearch's `iterateEmptyBuckets`: bounds rounded without the offset, then
            // shifted by it.
            list = Vec::with_capacity(data.len());
            let bounds = match req.extended_bounds {
                None => None,
                Some((lo, hi)) => Some((
                    lo.map(|x| r.inner_round(x)).transpose()?,
                    hi.map(|x| r.inner_round(x)).transpose()?,
                )),
            };
            let offset = req.offset;
            let mut fill = |list: &mut Vec<(i64, u64, u32)>, key: i64| -> Result<()> {
                budget.take(1)?;
                list.push((key, 0, EMPTY));
                Ok(())
            };
            if let Some((lo, hi)) = bounds {
                match (data.first(), lo, hi) {
                    (None, Some(lo), Some(hi)) => {
                        let (mut key, max) = (lo.saturating_add(offset), hi.saturating_add(offset));
                        while key <= max {
                            fill(&mut list, key)?;
                            key = r.next(key)?;
                        }
                    }
                    (Some(first), Some(lo), _) => {
                        let mut key = lo.saturating_add(offset);
                        while key < first.0 {
                            fill(&mut list, key)?;
                            key = r.next(key)?;
                        }
                    }
                    _ => {}
                }
            }
            let mut prev: Option<i64> = None;
            for &d in &data {
                if let Some(p) = prev {
                    let mut key = r.next(p)?;
                    while key < d.0 {
                        fill(&mut list, key)?;
                        key = r.next(key)?;
                    }
                }
                list.push(d);
                prev = Some(d.0);
            }
            if let (Some((_, Some(hi))), Some(last)) = (bounds, prev) {
                let max = hi.saturating_add(offset);
                if max > last {
                    let mut key = r.next(last)?;
                    while key <= max {
                        fill(&mut list, key)?;
                        key = r.next(key)?;
                    }
                }
            }
        } else {
            list = data;
        }
        sort_by_order(&mut list, req.order, |x| (x.1, x.0 as f64));
        let f = &req.field.format;
        let mut out = Vec::with_capacity(list.len());
        for (key, count, b) in list {
            let mut m = Map::new();
            let s = f.format_i64(key)?;
            m.insert("key_as_string".into(), Value::String(s.clone()));
            m.insert("key".into(), Value::from(key));
            m.insert("doc_count".into(), Value::from(count));
            self.subs.results_into(b, budget, &mut m)?;
            out.push((s, m));
        }
        Ok(buckets_json(out, req.keyed))
    }
}

impl SegCollector for DateHistogramSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        let rows = self.view.as_ref().map_or(0..0, |v| v.rows(doc));
        let mut prev = None;
        if rows.is_empty() {
            if let Some(m) = self.missing {
                self.value(doc, parent, m, &mut prev);
            }
            return;
        }
        // The values first (the view is borrowed, not copied, per document).
        let view = self.view.as_ref().expect("rows come from a view");
        self.vals.clear();
        self.vals
            .extend(rows.map(|r| sortable_to_i64(view.value(r))));
        for i in 0..self.vals.len() {
            let v = self.vals[i];
            self.value(doc, parent, v, &mut prev);
        }
    }

    fn collect_block(&mut self, docs: &[u32]) {
        let view = match self.view {
            Some(v) if v.is_dense() => v,
            _ => {
                for &d in docs {
                    self.collect(d, 0);
                }
                return;
            }
        };
        let Self {
            rounding,
            locator,
            cache,
            buckets,
            subs,
            error,
            ..
        } = self;
        let mut span = [0u64; BLOCK];
        let mut vals = [0u64; BLOCK];
        for chunk in docs.chunks(BLOCK) {
            gather_dense(view.values(), chunk, &mut span, &mut vals);
            for (&d, &x) in chunk.iter().zip(&vals) {
                place(d, x, rounding, locator, buckets, cache, subs, error);
            }
        }
    }

    fn collect_range(&mut self, docs: std::ops::Range<u32>) {
        match self.view {
            Some(v) if v.is_dense() => {
                let Self {
                    rounding,
                    locator,
                    cache,
                    buckets,
                    subs,
                    error,
                    ..
                } = self;
                let mut docs = docs;
                if subs.is_empty() {
                    // Whole blocks whose minimum and maximum share a bucket are counted from
                    // their statistics, unread (values in time order fill whole blocks of a
                    // day or a month).
                    let col = v.values();
                    let block = BLOCK as u32;
                    let mut at = docs.start.div_ceil(block) * block;
                    // Documents still to read value by value.
                    let mut pending = docs.start..at.min(docs.end);
                    while at < docs.end {
                        let end = (at + block).min(col.len() as u32);
                        if end > docs.end {
                            break;
                        }
                        let (lo, hi) = col.block_bounds(at as usize / BLOCK);
                        match (
                            locator.locate(rounding, sortable_to_i64(lo)),
                            locator.locate(rounding, sortable_to_i64(hi)),
                        ) {
                            (Ok((ka, local)), Ok((kb, _))) if ka == kb => {
                                let r = std::mem::replace(&mut pending, end..end);
                                read_dense(&v, r, rounding, locator, buckets, cache, subs, error);
                                add_to_bucket(buckets, cache, ka, local, u64::from(end - at));
                            }
                            _ => pending.end = end,
                        }
                        at = end;
                    }
                    pending.end = docs.end;
                    docs = pending;
                }
                read_dense(&v, docs, rounding, locator, buckets, cache, subs, error);
            }
            _ => {
                for d in docs {
                    self.collect(d, 0);
                }
            }
        }
    }

    fn finish(&mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.subs.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::date::Unit;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn fixed_intervals_round_in_local_time() {
        let paris = date::time_zone("Europe/Paris").unwrap();
        let r = DateRounding::new(Interval::Fixed(86_400_000), paris, 0);
        // Winter: local midnight is 23:00 UTC the day before.
        assert_eq!(
            r.round(ms("2021-01-10T12:00:00Z")).unwrap(),
            ms("2021-01-09T23:00:00Z")
        );
        // Summer: 22:00 UTC.
        assert_eq!(
            r.round(ms("2021-07-10T12:00:00Z")).unwrap(),
            ms("2021-07-09T22:00:00Z")
        );
        // The 23-hour day of the move to summer time, and the next.
        let k = r.round(ms("2021-03-28T12:00:00Z")).unwrap();
        assert_eq!(k, ms("2021-03-27T23:00:00Z"));
        assert_eq!(r.next(k).unwrap(), ms("2021-03-28T22:00:00Z"));
        // A 2-hour interval over the gap (02:00-03:00 local does not exist).
        let r2 = DateRounding::new(
            Interval::Fixed(7_200_000),
            date::time_zone("Europe/Paris").unwrap(),
            0,
        );
        // 03:30 local (+02:00) = 01:30 UTC rounds to local 02:00, in the gap: the transition.
        assert_eq!(
            r2.round(ms("2021-03-28T01:30:00Z")).unwrap(),
            ms("2021-03-28T01:00:00Z")
        );
        let utc = DateRounding::new(Interval::Fixed(5_400_000), TimeZone::UTC, 0);
        assert_eq!(
            utc.round(ms("2021-01-01T02:00:00Z")).unwrap(),
            ms("2021-01-01T01:30:00Z")
        );
        let off = DateRounding::new(
            Interval::Fixed(86_400_000),
            date::time_zone("+05:30").unwrap(),
            3_600_000,
        );
        assert_eq!(
            off.round(ms("2021-01-01T00:00:00Z")).unwrap(),
            ms("2020-12-31T19:30:00Z")
        );
    }

    #[test]
    fn calendar_intervals_step_by_unit() {
        let r = DateRounding::new(Interval::Calendar(Unit::Month), TimeZone::UTC, 0);
        let k = r.round(ms("2021-01-31T12:00:00Z")).unwrap();
        assert_eq!(k, ms("2021-01-01T00:00:00Z"));
        assert_eq!(r.next(k).unwrap(), ms("2021-02-01T00:00:00Z"));
        let q = DateRounding::new(Interval::Calendar(Unit::Quarter), TimeZone::UTC, 86_400_000);
        assert_eq!(
            q.round(ms("2021-04-01T12:00:00Z")).unwrap(),
            ms("2021-01-02T00:00:00Z")
        );
        assert_eq!(
            q.round(ms("2021-04-02T12:00:00Z")).unwrap(),
            ms("2021-04-02T00:00:00Z")
        );
    }

    proptest::proptest! {
        /// The arithmetic keys of calendar units up to a week (zones of fixed offset) are the
        /// calendar's own.
        #[test]
        fn arithmetic_calendar_keys_are_the_calendars(
            v in -62_000_000_000_000i64..250_000_000_000_000,
            unit in 0usize..5,
            zone in 0usize..4,
            offset in -100_000_000i64..100_000_000,
        ) {
            let unit = [Unit::Second, Unit::Minute, Unit::Hour, Unit::Day, Unit::Week][unit];
            let tz = date::time_zone(["UTC", "+05:30", "-08:00", "+14:00"][zone]).unwrap();
            let r = DateRounding::new(Interval::Calendar(unit), tz, offset);
            let (interval, shift) = r.arith_shift().expect("fixed zone");
            let key = v.saturating_sub(shift).div_euclid(interval) * interval + shift;
            proptest::prop_assert_eq!(key, r.round(v).unwrap());
        }
    }
}
