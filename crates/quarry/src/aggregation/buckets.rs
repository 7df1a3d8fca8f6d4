//! Bucket aggregations with a fixed set of buckets: `range` / `date_range` (one bucket per
//! range, a document counted once per range one of its values falls in) and `filter` /
//! `filters` (one bucket per query). Bucket `i` under parent bucket `p` is `p × n + i`.
use serde_json::{Map, Value};

use super::exec::{AggState, Budget, DocMatcher, SegCollector, SegCtx, SubCollectors, Subs, EMPTY};
use super::format::json_f64;
use super::request::{to_f64, FiltersReq, RangeReq};
use crate::codec::columns::ColumnView;
use crate::search::weight::Weight;
use crate::{Error, Result};

/// Bucket `i` of `n` under `parent`.
#[inline]
fn child(parent: u32, n: usize, i: usize) -> u32 {
    if parent == EMPTY {
        return EMPTY;
    }
    (parent as u64 * n as u64 + i as u64)
        .try_into()
        .ok()
        .filter(|&b| b != EMPTY)
        .unwrap_or(EMPTY)
}

fn add(counts: &mut Vec<u64>, b: u32) {
    let i = b as usize;
    if counts.len() <= i {
        counts.resize(i + 1, 0);
    }
    counts[i] += 1;
}

fn too_many(what: &str) -> Error {
    Error::Query(format!(
        "too many buckets under a [{what}] aggregation: reduce the parent's buckets"
    ))
}

/// `range` and `date_range`.
pub(crate) struct RangeState {
    req: RangeReq,
    subs: Subs,
    counts: Vec<u64>,
    overflow: bool,
}

impl RangeState {
    pub fn new(req: RangeReq, subs: Subs) -> Self {
        RangeState {
            req,
            subs,
            counts: Vec::new(),
            overflow: false,
        }
    }
}

struct RangeSeg<'a> {
    req: &'a RangeReq,
    view: Option<ColumnView<'a>>,
    values: Vec<f64>,
    counts: &'a mut Vec<u64>,
    subs: SubCollectors<'a>,
    overflow: &'a mut bool,
}

impl AggState for RangeState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        Ok(Box::new(RangeSeg {
            req: &self.req,
            view: ctx.column(&self.req.field)?,
            values: Vec::new(),
            counts: &mut self.counts,
            subs: self.subs.segment(ctx)?,
            overflow: &mut self.overflow,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        if self.overflow {
            return Err(too_many("range"));
        }
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let n = self.req.ranges.len();
        budget.take(n)?;
        let f = &self.req.field.format;
        let mut list = Vec::with_capacity(n);
        for (i, r) in self.req.ranges.iter().enumerate() {
            let b = child(parent, n, i);
            let count = self.counts.get(b as usize).copied().unwrap_or(0);
            let bound = |x: f64| -> Result<String> {
                if x.is_infinite() {
                    Ok("*".into())
                } else {
                    f.format_f64(x)
                }
            };
            let key = match &r.key {
                Some(k) => k.clone(),
                None => format!("{}-{}", bound(r.from)?, bound(r.to)?),
            };
            let mut m = Map::new();
            if !self.req.keyed {
                m.insert("key".into(), Value::String(key.clone()));
            }
            if r.from.is_finite() {
                m.insert("from".into(), json_f64(r.from));
                if !f.is_raw() {
                    m.insert("from_as_string".into(), f.format_f64(r.from)?.into());
                }
            }
            if r.to.is_finite() {
                m.insert("to".into(), json_f64(r.to));
                if !f.is_raw() {
                    m.insert("to_as_string".into(), f.format_f64(r.to)?.into());
                }
            }
            m.insert("doc_count".into(), Value::from(count));
            self.subs.results_into(b, budget, &mut m)?;
            list.push((key, m));
        }
        let buckets = if self.req.keyed {
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
        Ok(out)
    }
}

impl RangeSeg<'_> {
    /// Counts `doc` in every range one of its `values` (ascending) falls in.
    #[inline]
    fn place(&mut self, doc: u32, parent: u32, values: &[f64]) {
        let n = self.req.ranges.len();
        for (i, r) in self.req.ranges.iter().enumerate() {
            // Values are in ascending order: the first at or above `from` decides.
            let hit = values
                .iter()
                .find(|&&x| x >= r.from)
                .is_some_and(|&x| x < r.to);
            if hit {
                let b = child(parent, n, i);
                if b == EMPTY {
                    *self.overflow = true;
                    return;
                }
                add(self.counts, b);
                self.subs.collect(doc, b);
            }
        }
    }
}

impl SegCollector for RangeSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        let ftype = self.req.field.ftype;
        let values = match self.view.as_ref() {
            Some(v) if v.is_dense() => {
                let x = to_f64(ftype, v.value(doc as usize));
                return self.place(doc, parent, &[x]);
            }
            Some(v) if !v.rows(doc).is_empty() => {
                let mut values = std::mem::take(&mut self.values);
                values.clear();
                values.extend(v.rows(doc).map(|r| to_f64(ftype, v.value(r))));
                values
            }
            _ => match self.req.missing {
                Some(m) => return self.place(doc, parent, &[m]),
                None => return,
            },
        };
        self.place(doc, parent, &values);
        self.values = values;
    }

    fn finish(&mut self) -> Result<()> {
        self.subs.finish()
    }
}

/// `filter`: one bucket of the documents matching a query.
pub(crate) struct FilterState {
    weight: Weight,
    subs: Subs,
    counts: Vec<u64>,
}

impl FilterState {
    pub fn new(weight: Weight, subs: Subs) -> Self {
        FilterState {
            weight,
            subs,
            counts: Vec::new(),
        }
    }
}

struct FilterSeg<'a> {
    matcher: DocMatcher<'a>,
    counts: &'a mut Vec<u64>,
    subs: SubCollectors<'a>,
}

impl AggState for FilterState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        Ok(Box::new(FilterSeg {
            matcher: DocMatcher::new(&self.weight, ctx)?,
            counts: &mut self.counts,
            subs: self.subs.segment(ctx)?,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        let count = self.counts.get(parent as usize).copied().unwrap_or(0);
        m.insert("doc_count".into(), Value::from(count));
        self.subs.results_into(parent, budget, &mut m)?;
        Ok(m)
    }
}

impl SegCollector for FilterSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        if self.matcher.matches(doc) {
            add(self.counts, parent);
            self.subs.collect(doc, parent);
        }
    }

    fn finish(&mut self) -> Result<()> {
        self.matcher.check()?;
        self.subs.finish()
    }
}

/// `filters`: one bucket per query, and optionally one of the documents matching none.
pub(crate) struct FiltersState {
    req: FiltersReq,
    weights: Vec<Weight>,
    subs: Subs,
    counts: Vec<u64>,
    overflow: bool,
}

impl FiltersState {
    pub fn new(req: FiltersReq, weights: Vec<Weight>, subs: Subs) -> Self {
        FiltersState {
            req,
            weights,
            subs,
            counts: Vec::new(),
            overflow: false,
        }
    }

    fn n(&self) -> usize {
        self.weights.len() + usize::from(self.req.other.is_some())
    }
}

struct FiltersSeg<'a> {
    matchers: Vec<DocMatcher<'a>>,
    other: bool,
    counts: &'a mut Vec<u64>,
    subs: SubCollectors<'a>,
    overflow: &'a mut bool,
}

impl AggState for FiltersState {
    fn segment<'a>(&'a mut self, ctx: SegCtx<'a>) -> Result<Box<dyn SegCollector + 'a>> {
        let matchers = self
            .weights
            .iter()
            .map(|w| DocMatcher::new(w, ctx))
            .collect::<Result<_>>()?;
        Ok(Box::new(FiltersSeg {
            matchers,
            other: self.req.other.is_some(),
            counts: &mut self.counts,
            subs: self.subs.segment(ctx)?,
            overflow: &mut self.overflow,
        }))
    }

    fn prepare(&mut self) -> Result<()> {
        if self.overflow {
            return Err(too_many("filters"));
        }
        self.subs.prepare()
    }

    fn result(&self, parent: u32, budget: &mut Budget) -> Result<Map<String, Value>> {
        let n = self.n();
        budget.take(n)?;
        let names = self
            .req
            .filters
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(self.req.other.as_deref());
        let mut list = Vec::with_capacity(n);
        for (i, name) in names.enumerate() {
            let b = child(parent, n, i);
            let mut m = Map::new();
            if !self.req.keyed && self.req.named {
                m.insert("key".into(), Value::String(name.to_string()));
            }
            let count = self.counts.get(b as usize).copied().unwrap_or(0);
            m.insert("doc_count".into(), Value::from(count));
            self.subs.results_into(b, budget, &mut m)?;
            list.push((name.to_string(), m));
        }
        let buckets = if self.req.keyed {
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
        Ok(out)
    }
}

impl SegCollector for FiltersSeg<'_> {
    #[inline]
    fn collect(&mut self, doc: u32, parent: u32) {
        let n = self.matchers.len() + usize::from(self.other);
        let mut any = false;
        for i in 0..self.matchers.len() {
            if self.matchers[i].matches(doc) {
                any = true;
                let b = child(parent, n, i);
                if b == EMPTY {
                    *self.overflow = true;
                    return;
                }
                add(self.counts, b);
                self.subs.collect(doc, b);
            }
        }
        if self.other && !any {
            let b = child(parent, n, n - 1);
            if b == EMPTY {
                *self.overflow = true;
                return;
            }
            add(self.counts, b);
            self.subs.collect(doc, b);
        }
    }

    fn finish(&mut self) -> Result<()> {
        for m in &self.matchers {
            m.check()?;
        }
        self.subs.finish()
    }
}
