//! Parsing an `aggs` object (Elasticsearch's request syntax) into a tree of checked requests:
//! every field resolved against the schema, every parameter read and type-checked, unknown
//! parameters and aggregation types refused with the aggregation's name.
use std::collections::HashSet;

use jiff::tz::TimeZone;
use quarry_codecs::column::sortable_to_i64;
use serde_json::{Map, Value};

use super::format::ValueFormat;
use crate::codec::columns::{from_f64, from_i64};
use crate::date::{self, DateFormat, Rounding, Unit};
use crate::query::Query;
use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

/// One aggregation of a request, with its sub-aggregations.
#[derive(Debug, Clone)]
pub(crate) struct AggNode {
    pub name: String,
    pub kind: AggKind,
    pub subs: Vec<AggNode>,
    /// Elasticsearch's `meta`: returned as given next to the result.
    pub meta: Option<Value>,
}

#[derive(Debug, Clone)]
pub(crate) enum AggKind {
    Terms(TermsReq),
    Histogram(HistogramReq),
    DateHistogram(DateHistogramReq),
    Range(RangeReq),
    Metric(MetricReq),
    Cardinality(CardinalityReq),
    Percentiles(PercentilesReq),
    Filter(Query),
    Filters(FiltersReq),
}

impl AggKind {
    /// Whether this aggregation (not counting its sub-aggregations) reads a column.
    pub fn field(&self) -> Option<&FieldRef> {
        match self {
            AggKind::Terms(r) => Some(&r.field),
            AggKind::Histogram(r) => Some(&r.field),
            AggKind::DateHistogram(r) => Some(&r.field),
            AggKind::Range(r) => Some(&r.field),
            AggKind::Metric(r) => Some(&r.field),
            AggKind::Cardinality(r) => Some(&r.field),
            AggKind::Percentiles(r) => Some(&r.field),
            AggKind::Filter(_) | AggKind::Filters(_) => None,
        }
    }
}

/// A field an aggregation reads.
#[derive(Debug, Clone)]
pub(crate) struct FieldRef {
    pub name: String,
    /// `None`: the schema has no such field; as Elasticsearch's unmapped fields, it has no
    /// values (only `missing` counts).
    pub id: Option<u32>,
    pub ftype: FieldType,
    /// How values are written as strings (`key_as_string`, `value_as_string`).
    pub format: ValueFormat,
}

impl FieldRef {
    /// A column value as a double (integers and dates as their number, booleans 0 and 1).
    #[inline]
    pub fn to_f64(&self, v: u64) -> f64 {
        to_f64(self.ftype, v)
    }
}

/// A column value of a field of type `t` as a double.
#[inline]
pub(crate) fn to_f64(t: FieldType, v: u64) -> f64 {
    match t {
        FieldType::Float => quarry_codecs::column::sortable_to_f64(v),
        FieldType::Boolean => v as f64,
        _ => sortable_to_i64(v) as f64,
    }
}

/// The value that stands for a document without one (`missing`), as a column value of the
/// field's type, or a keyword's bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Missing {
    Num(u64),
    Bytes(Vec<u8>),
}

/// How the buckets of `terms` and histograms are ordered; ties are broken by key ascending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BucketOrder {
    CountDesc,
    CountAsc,
    KeyAsc,
    KeyDesc,
}

#[derive(Debug, Clone)]
pub(crate) struct TermsReq {
    pub field: FieldRef,
    pub size: usize,
    pub shard_size: usize,
    pub min_doc_count: u64,
    pub shard_min_doc_count: u64,
    pub order: BucketOrder,
    pub missing: Option<Missing>,
}

#[derive(Debug, Clone)]
pub(crate) struct HistogramReq {
    pub field: FieldRef,
    pub interval: f64,
    pub offset: f64,
    pub min_doc_count: u64,
    pub extended_bounds: (Option<f64>, Option<f64>),
    pub keyed: bool,
    pub order: BucketOrder,
    pub missing: Option<f64>,
}

/// A date histogram's interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Interval {
    Calendar(Unit),
    /// Milliseconds.
    Fixed(i64),
}

#[derive(Debug, Clone)]
pub(crate) struct DateHistogramReq {
    pub field: FieldRef,
    pub interval: Interval,
    pub time_zone: TimeZone,
    pub offset: i64,
    pub min_doc_count: u64,
    /// Milliseconds, not yet rounded.
    pub extended_bounds: Option<(Option<i64>, Option<i64>)>,
    pub keyed: bool,
    pub order: BucketOrder,
    pub missing: Option<i64>,
}

#[derive(Debug, Clone)]
pub(crate) struct RangeDef {
    pub key: Option<String>,
    /// `-inf` when open.
    pub from: f64,
    /// `+inf` when open.
    pub to: f64,
}

#[derive(Debug, Clone)]
pub(crate) struct RangeReq {
    pub field: FieldRef,
    /// Sorted by `from`, then `to` (Elasticsearch's order of the buckets).
    pub ranges: Vec<RangeDef>,
    pub keyed: bool,
    pub missing: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricKind {
    Min,
    Max,
    Avg,
    Sum,
    ValueCount,
    Stats,
}

#[derive(Debug, Clone)]
pub(crate) struct MetricReq {
    pub field: FieldRef,
    pub kind: MetricKind,
    pub missing: Option<Missing>,
}

#[derive(Debug, Clone)]
pub(crate) struct CardinalityReq {
    pub field: FieldRef,
    pub threshold: usize,
    pub missing: Option<Missing>,
}

#[derive(Debug, Clone)]
pub(crate) struct PercentilesReq {
    pub field: FieldRef,
    pub percents: Vec<f64>,
    pub keyed: bool,
    pub missing: Option<f64>,
}

#[derive(Debug, Clone)]
pub(crate) struct FiltersReq {
    /// Named filters sorted by name (as Elasticsearch keeps them), or anonymous ones in order
    /// (named "0", "1", ...).
    pub filters: Vec<(String, Query)>,
    /// Whether the filters were given as an object (named) rather than an array.
    pub named: bool,
    pub keyed: bool,
    /// The key of the bucket of documents matching no filter, when asked for.
    pub other: Option<String>,
}

/// Elasticsearch's default percents of `percentiles`.
pub(crate) const DEFAULT_PERCENTS: [f64; 7] = [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0];

/// What parsing needs: the schema, the filter query parser, the request's `now`.
pub(crate) struct Parser<'a> {
    pub schema: &'a Schema,
    pub filter_query: &'a dyn Fn(&Value) -> Result<Query>,
    pub now_millis: i64,
}

/// Reads the parameters of one aggregation and refuses the ones it does not know.
struct Params<'a> {
    name: &'a str,
    typ: &'static str,
    obj: &'a Map<String, Value>,
    used: HashSet<&'a str>,
}

fn err(name: &str, msg: impl std::fmt::Display) -> Error {
    Error::Query(format!("aggregation [{name}]: {msg}"))
}

impl<'a> Params<'a> {
    fn new(name: &'a str, typ: &'static str, v: &'a Value) -> Result<Self> {
        let obj = v.as_object().ok_or_else(|| {
            err(
                name,
                format!("the body of [{typ}] must be an object, found {v}"),
            )
        })?;
        Ok(Params {
            name,
            typ,
            obj,
            used: HashSet::new(),
        })
    }

    fn err(&self, msg: impl std::fmt::Display) -> Error {
        err(self.name, format!("[{}] {msg}", self.typ))
    }

    fn get(&mut self, key: &'a str) -> Option<&'a Value> {
        self.used.insert(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn string(&mut self, key: &'a str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(format!("parameter [{key}] must be a string, found {v}"))),
        }
    }

    fn f64(&mut self, key: &'a str) -> Result<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => number(v)
                .map(Some)
                .ok_or_else(|| self.err(format!("parameter [{key}] must be a number, found {v}"))),
        }
    }

    fn u64(&mut self, key: &'a str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match number(v) {
                Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 2f64.powi(63) => Ok(Some(x as u64)),
                _ => Err(self.err(format!(
                    "parameter [{key}] must be a non-negative integer, found {v}"
                ))),
            },
        }
    }

    fn bool(&mut self, key: &'a str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(v) => Err(self.err(format!("parameter [{key}] must be a boolean, found {v}"))),
        }
    }

    /// Refuses any parameter not read.
    fn finish(self) -> Result<()> {
        for k in self.obj.keys() {
            if !self.used.contains(k.as_str()) {
                return Err(self.err(format!("unknown parameter [{k}]")));
            }
        }
        Ok(())
    }
}

/// A JSON number, or a string holding one (Elasticsearch takes both).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| !x.is_nan()),
        _ => None,
    }
}

/// The field types each aggregation reads.
const NUMERIC: &[FieldType] = &[
    FieldType::Integer,
    FieldType::Float,
    FieldType::Date,
    FieldType::Boolean,
];
const ANY: &[FieldType] = &[
    FieldType::Integer,
    FieldType::Float,
    FieldType::Date,
    FieldType::Boolean,
    FieldType::Keyword,
];

impl Parser<'_> {
    /// Parses an `aggs` object: name -> aggregation.
    pub fn aggs(&self, v: &Value) -> Result<Vec<AggNode>> {
        let obj = v.as_object().ok_or_else(|| {
            Error::Query(format!(
                "aggregations must be an object of name -> aggregation, found {v}"
            ))
        })?;
        obj.iter()
            .map(|(name, body)| self.node(name, body))
            .collect()
    }

    fn node(&self, name: &str, body: &Value) -> Result<AggNode> {
        if name.is_empty() || name.contains(['[', ']', '>']) {
            return Err(Error::Query(format!(
                "invalid aggregation name [{name}]: names must be non-empty and hold none of '[', ']', '>'"
            )));
        }
        let obj = body
            .as_object()
            .ok_or_else(|| err(name, format!("must be an object, found {body}")))?;
        let mut kind = None;
        let mut subs = Vec::new();
        let mut meta = None;
        for (k, v) in obj {
            match k.as_str() {
                "aggs" | "aggregations" => {
                    if !subs.is_empty() {
                        return Err(err(
                            name,
                            "found two sub-aggregation definitions ([aggs] and [aggregations])",
                        ));
                    }
                    subs = self.aggs(v).map_err(|e| match e {
                        Error::Query(m) if !m.starts_with("aggregation [") => err(name, m),
                        e => e,
                    })?;
                }
                "meta" => {
                    if !v.is_object() {
                        return Err(err(name, "[meta] must be an object"));
                    }
                    meta = Some(v.clone());
                }
                typ => {
                    if kind.is_some() {
                        return Err(err(
                            name,
                            format!(
                                "found two aggregation types in one aggregation ([{typ}] and another); use sub-aggregations"
                            ),
                        ));
                    }
                    kind = Some(self.kind(name, typ, v)?);
                }
            }
        }
        let kind = kind.ok_or_else(|| err(name, "missing the aggregation type"))?;
        let is_bucket = matches!(
            kind,
            AggKind::Terms(_)
                | AggKind::Histogram(_)
                | AggKind::DateHistogram(_)
                | AggKind::Range(_)
                | AggKind::Filter(_)
                | AggKind::Filters(_)
        );
        if !is_bucket && !subs.is_empty() {
            return Err(err(
                name,
                "a metrics aggregation cannot hold sub-aggregations",
            ));
        }
        Ok(AggNode {
            name: name.to_string(),
            kind,
            subs,
            meta,
        })
    }

    fn kind(&self, name: &str, typ: &str, v: &Value) -> Result<AggKind> {
        Ok(match typ {
            "terms" => AggKind::Terms(self.terms(name, v)?),
            "histogram" => AggKind::Histogram(self.histogram(name, v)?),
            "date_histogram" => AggKind::DateHistogram(self.date_histogram(name, v)?),
            "range" => AggKind::Range(self.range(name, "range", v)?),
            "date_range" => AggKind::Range(self.range(name, "date_range", v)?),
            "min" => self.metric(name, "min", MetricKind::Min, v)?,
            "max" => self.metric(name, "max", MetricKind::Max, v)?,
            "avg" => self.metric(name, "avg", MetricKind::Avg, v)?,
            "sum" => self.metric(name, "sum", MetricKind::Sum, v)?,
            "value_count" => self.metric(name, "value_count", MetricKind::ValueCount, v)?,
            "stats" => self.metric(name, "stats", MetricKind::Stats, v)?,
            "cardinality" => AggKind::Cardinality(self.cardinality(name, v)?),
            "percentiles" => AggKind::Percentiles(self.percentiles(name, v)?),
            "filter" => AggKind::Filter(
                (self.filter_query)(v).map_err(|e| err(name, format!("[filter] {e}")))?,
            ),
            "filters" => AggKind::Filters(self.filters(name, v)?),
            other => {
                return Err(err(
                    name,
                    format!(
                        "unknown aggregation type [{other}] (supported: terms, histogram, date_histogram, range, date_range, min, max, avg, sum, value_count, stats, cardinality, percentiles, filter, filters)"
                    ),
                ))
            }
        })
    }

    /// Resolves the `field` parameter; `types`: the field types the aggregation reads.
    fn field(
        &self,
        p: &mut Params<'_>,
        types: &[FieldType],
        unmapped: FieldType,
    ) -> Result<FieldRef> {
        if p.obj.contains_key("script") {
            return Err(p.err("scripts are not supported; aggregate on a field"));
        }
        let name = p
            .string("field")?
            .ok_or_else(|| p.err("requires a [field]"))?;
        let Some(id) = self.schema.field_id(name) else {
            return Ok(FieldRef {
                name: name.to_string(),
                id: None,
                ftype: unmapped,
                format: ValueFormat::Raw,
            });
        };
        let entry = self.schema.field(id);
        if entry.field_type == FieldType::Text {
            return Err(err(
                p.name,
                format!("field [{name}] is a text field; aggregate on a keyword field"),
            ));
        }
        if !types.contains(&entry.field_type) {
            return Err(p.err(format!(
                "field [{name}] of type [{}] is not supported by a [{}] aggregation",
                entry.field_type, p.typ
            )));
        }
        if !entry.has_column() {
            return Err(err(
                p.name,
                format!(
                    "field [{name}] keeps no column (\"doc_values\": false); aggregations need one"
                ),
            ));
        }
        let format = match entry.field_type {
            FieldType::Date => ValueFormat::Date(
                self.schema
                    .date_format(id)
                    .cloned()
                    .unwrap_or_else(DateFormat::default_format),
                TimeZone::UTC,
            ),
            FieldType::Boolean => ValueFormat::Bool,
            _ => ValueFormat::Raw,
        };
        Ok(FieldRef {
            name: name.to_string(),
            id: Some(id),
            ftype: entry.field_type,
            format,
        })
    }

    /// Reads `format` (date fields: replaces the field's output format) and `time_zone`.
    fn date_format(
        &self,
        p: &mut Params<'_>,
        field: &mut FieldRef,
        with_time_zone: bool,
    ) -> Result<TimeZone> {
        let tz = if with_time_zone {
            match p.string("time_zone")? {
                None => TimeZone::UTC,
                Some(t) => date::time_zone(t).map_err(|e| p.err(e))?,
            }
        } else {
            TimeZone::UTC
        };
        let spec = p.string("format")?;
        if field.ftype == FieldType::Date || (field.id.is_none() && spec.is_some()) {
            let f = match spec {
                Some(s) => DateFormat::new(s).map_err(|e| p.err(e))?,
                None => match &field.format {
                    ValueFormat::Date(f, _) => f.clone(),
                    _ => DateFormat::default_format(),
                },
            };
            field.format = ValueFormat::Date(f, tz.clone());
        }
        Ok(tz)
    }

    /// A date (text in `format`, date math, or epoch milliseconds) in `tz`.
    fn date(&self, p: &Params<'_>, v: &Value, format: &ValueFormat, tz: &TimeZone) -> Result<i64> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|x| x.is_finite()).map(|x| x as i64))
                .ok_or_else(|| p.err(format!("invalid date {v}"))),
            Value::String(s) => {
                let f = match format {
                    ValueFormat::Date(f, _) => f.clone(),
                    _ => DateFormat::default_format(),
                };
                date::eval_math(s, &f, tz, self.now_millis, Rounding::Down).map_err(|e| p.err(e))
            }
            _ => Err(p.err(format!("invalid date {v}"))),
        }
    }

    /// Reads `missing` as a value of the field's type.
    fn missing(&self, p: &mut Params<'_>, field: &mut FieldRef) -> Result<Option<Missing>> {
        let Some(v) = p.get("missing") else {
            return Ok(None);
        };
        if field.id.is_none() {
            // An unmapped field takes the missing value's type.
            field.ftype = match v {
                Value::String(_) => FieldType::Keyword,
                Value::Bool(_) => FieldType::Boolean,
                Value::Number(n) if n.is_i64() || n.is_u64() => FieldType::Integer,
                _ => FieldType::Float,
            };
            if field.ftype == FieldType::Boolean {
                field.format = ValueFormat::Bool;
            }
        }
        let bad = |p: &Params<'_>| {
            p.err(format!(
                "[missing] value {v} does not fit field [{}] of type [{}]",
                field.name, field.ftype
            ))
        };
        Ok(Some(match field.ftype {
            FieldType::Keyword => Missing::Bytes(match v {
                Value::String(s) => s.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            }),
            FieldType::Integer => match v {
                Value::Number(n) if n.is_i64() => Missing::Num(from_i64(n.as_i64().unwrap_or(0))),
                _ => match number(v) {
                    Some(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => {
                        Missing::Num(from_i64(x as i64))
                    }
                    _ => return Err(bad(p)),
                },
            },
            FieldType::Float => Missing::Num(from_f64(number(v).ok_or_else(|| bad(p))?)),
            FieldType::Boolean => Missing::Num(match v {
                Value::Bool(b) => u64::from(*b),
                Value::String(s) if s == "true" || s == "false" => u64::from(s == "true"),
                _ => return Err(bad(p)),
            }),
            FieldType::Date => {
                let tz = match &field.format {
                    ValueFormat::Date(_, tz) => tz.clone(),
                    _ => TimeZone::UTC,
                };
                Missing::Num(from_i64(self.date(p, v, &field.format, &tz)?))
            }
            FieldType::Text | FieldType::Vector => return Err(bad(p)),
        }))
    }

    fn order(&self, p: &mut Params<'_>, default: BucketOrder) -> Result<BucketOrder> {
        let Some(v) = p.get("order") else {
            return Ok(default);
        };
        let one = |o: &Value| -> Result<BucketOrder> {
            let bad = || {
                p.err(format!(
                    "unsupported [order] {o}: order by {{\"_count\": \"asc\"|\"desc\"}} or {{\"_key\": \"asc\"|\"desc\"}}"
                ))
            };
            let m = o.as_object().filter(|m| m.len() == 1).ok_or_else(bad)?;
            let (k, dir) = m.iter().next().expect("one entry");
            let desc = match dir.as_str() {
                Some("asc") => false,
                Some("desc") => true,
                _ => return Err(bad()),
            };
            Ok(match (k.as_str(), desc) {
                ("_count", true) => BucketOrder::CountDesc,
                ("_count", false) => BucketOrder::CountAsc,
                ("_key", false) => BucketOrder::KeyAsc,
                ("_key", true) => BucketOrder::KeyDesc,
                _ => return Err(bad()),
            })
        };
        match v {
            Value::Array(items) => match items.as_slice() {
                [o] => one(o),
                // A count order with the key ascending as tie-break: the default tie-break.
                [o, t] if one(t)? == BucketOrder::KeyAsc => one(o),
                _ => Err(p.err(format!(
                    "unsupported [order] {v}: one order, optionally followed by {{\"_key\": \"asc\"}}"
                ))),
            },
            o => one(o),
        }
    }

    fn terms(&self, name: &str, v: &Value) -> Result<TermsReq> {
        let mut p = Params::new(name, "terms", v)?;
        let mut field = self.field(&mut p, ANY, FieldType::Keyword)?;
        self.date_format(&mut p, &mut field, false)?;
        let size = p.u64("size")?.unwrap_or(10);
        if size == 0 {
            return Err(p.err("[size] must be greater than 0"));
        }
        let size = size.min(1 << 31) as usize;
        let shard_size = match p.u64("shard_size")? {
            // Elasticsearch's default: 1.5 x size + 10.
            None => (size as f64 * 1.5 + 10.0) as usize,
            Some(0) => return Err(p.err("[shard_size] must be greater than 0")),
            Some(s) => (s.min(1 << 31) as usize).max(size),
        };
        let min_doc_count = p.u64("min_doc_count")?.unwrap_or(1);
        let shard_min_doc_count = p.u64("shard_min_doc_count")?.unwrap_or(0);
        let order = self.order(&mut p, BucketOrder::CountDesc)?;
        let missing = self.missing(&mut p, &mut field)?;
        p.string("execution_hint")?;
        p.string("collect_mode")?;
        p.bool("show_term_doc_count_error").and_then(|b| match b {
            Some(true) => Err(p.err("[show_term_doc_count_error] is not supported")),
            _ => Ok(()),
        })?;
        p.finish()?;
        Ok(TermsReq {
            field,
            size,
            shard_size,
            min_doc_count,
            shard_min_doc_count,
            order,
            missing,
        })
    }

    fn histogram(&self, name: &str, v: &Value) -> Result<HistogramReq> {
        let mut p = Params::new(name, "histogram", v)?;
        let mut field = self.field(&mut p, NUMERIC, FieldType::Float)?;
        self.date_format(&mut p, &mut field, false)?;
        let interval = p
            .f64("interval")?
            .ok_or_else(|| p.err("requires an [interval]"))?;
        if !(interval > 0.0 && interval.is_finite()) {
            return Err(p.err(format!("[interval] must be > 0, found [{interval}]")));
        }
        let offset = p.f64("offset")?.unwrap_or(0.0);
        if !offset.is_finite() {
            return Err(p.err("[offset] must be a finite number"));
        }
        let min_doc_count = p.u64("min_doc_count")?.unwrap_or(0);
        let mut extended_bounds = (None, None);
        if let Some(b) = p.get("extended_bounds") {
            let o = b
                .as_object()
                .ok_or_else(|| p.err("[extended_bounds] must be an object {min, max}"))?;
            for (k, x) in o {
                let val = if x.is_null() {
                    None
                } else {
                    Some(number(x).ok_or_else(|| {
                        p.err(format!("[extended_bounds.{k}] must be a number, found {x}"))
                    })?)
                };
                match k.as_str() {
                    "min" => extended_bounds.0 = val,
                    "max" => extended_bounds.1 = val,
                    _ => return Err(p.err(format!("unknown parameter [extended_bounds.{k}]"))),
                }
            }
            if let (Some(a), Some(b)) = extended_bounds {
                if a > b {
                    return Err(p.err(format!(
                        "[extended_bounds.min][{a}] cannot be greater than [extended_bounds.max][{b}]"
                    )));
                }
            }
        }
        let keyed = p.bool("keyed")?.unwrap_or(false);
        let order = self.order(&mut p, BucketOrder::KeyAsc)?;
        let missing = self
            .missing(&mut p, &mut field)?
            .map(|m| match m {
                Missing::Num(x) => Ok(field.to_f64(x)),
                Missing::Bytes(_) => Err(p.err("[missing] must be a number")),
            })
            .transpose()?;
        p.finish()?;
        Ok(HistogramReq {
            field,
            interval,
            offset,
            min_doc_count,
            extended_bounds,
            keyed,
            order,
            missing,
        })
    }

    fn date_histogram(&self, name: &str, v: &Value) -> Result<DateHistogramReq> {
        let mut p = Params::new(name, "date_histogram", v)?;
        let mut field = self.field(
            &mut p,
            &[FieldType::Date, FieldType::Integer],
            FieldType::Date,
        )?;
        if field.id.is_none() {
            field.format = ValueFormat::Date(DateFormat::default_format(), TimeZone::UTC);
        }
        if field.ftype == FieldType::Integer {
            field.ftype = FieldType::Date;
            field.format = ValueFormat::Date(DateFormat::default_format(), TimeZone::UTC);
        }
        let time_zone = self.date_format(&mut p, &mut field, true)?;
        if p.get("interval").is_some() {
            return Err(p.err(
                "[interval] was removed in Elasticsearch 8; use [calendar_interval] or [fixed_interval]",
            ));
        }
        let interval = match (p.string("calendar_interval")?, p.string("fixed_interval")?) {
            (Some(c), None) => Interval::Calendar(Unit::from_calendar_interval(c).ok_or_else(|| {
                p.err(format!(
                    "the supplied interval [{c}] could not be parsed as a calendar interval (minute, hour, day, week, month, quarter, year or 1m, 1h, 1d, 1w, 1M, 1q, 1y)"
                ))
            })?),
            (None, Some(f)) => Interval::Fixed(match time_value_ms(f) {
                Some(ms) if ms > 0 => ms,
                _ => {
                    return Err(p.err(format!(
                        "the supplied interval [{f}] could not be parsed as a fixed interval (a number and one of ms, s, m, h, d)"
                    )))
                }
            }),
            (Some(_), Some(_)) => {
                return Err(p.err("cannot use [fixed_interval] with [calendar_interval]"))
            }
            (None, None) => {
                return Err(p.err("requires a [calendar_interval] or a [fixed_interval]"))
            }
        };
        let offset = match p.get("offset") {
            None => 0,
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| p.err(format!("invalid [offset] {n}")))?,
            Some(Value::String(s)) => {
                let (neg, rest) = match s.as_bytes().first() {
                    Some(b'-') => (true, &s[1..]),
                    Some(b'+') => (false, &s[1..]),
                    _ => (false, s.as_str()),
                };
                let ms = time_value_ms(rest).ok_or_else(|| {
                    p.err(format!(
                        "invalid [offset] [{s}]: a duration such as +6h or -1d"
                    ))
                })?;
                if neg {
                    -ms
                } else {
                    ms
                }
            }
            Some(o) => return Err(p.err(format!("invalid [offset] {o}"))),
        };
        let min_doc_count = p.u64("min_doc_count")?.unwrap_or(0);
        let mut extended_bounds = None;
        if let Some(b) = p.get("extended_bounds") {
            let o = b
                .as_object()
                .ok_or_else(|| p.err("[extended_bounds] must be an object {min, max}"))?;
            let mut bounds = (None, None);
            for (k, x) in o {
                let val = if x.is_null() {
                    None
                } else {
                    Some(self.date(&p, x, &field.format, &time_zone)?)
                };
                match k.as_str() {
                    "min" => bounds.0 = val,
                    "max" => bounds.1 = val,
                    _ => return Err(p.err(format!("unknown parameter [extended_bounds.{k}]"))),
                }
            }
            if let (Some(a), Some(b)) = bounds {
                if a > b {
                    return Err(p.err(format!(
                        "[extended_bounds.min][{a}] cannot be greater than [extended_bounds.max][{b}]"
                    )));
                }
            }
            extended_bounds = Some(bounds);
        }
        let keyed = p.bool("keyed")?.unwrap_or(false);
        let order = self.order(&mut p, BucketOrder::KeyAsc)?;
        let missing = self
            .missing(&mut p, &mut field)?
            .map(|m| match m {
                Missing::Num(x) => Ok(sortable_to_i64(x)),
                Missing::Bytes(_) => Err(p.err("[missing] must be a date")),
            })
            .transpose()?;
        p.finish()?;
        Ok(DateHistogramReq {
            field,
            interval,
            time_zone,
            offset,
            min_doc_count,
            extended_bounds,
            keyed,
            order,
            missing,
        })
    }

    fn range(&self, name: &str, typ: &'static str, v: &Value) -> Result<RangeReq> {
        let mut p = Params::new(name, typ, v)?;
        let types: &[FieldType] = if typ == "date_range" {
            &[FieldType::Date, FieldType::Integer]
        } else {
            NUMERIC
        };
        let unmapped = if typ == "date_range" {
            FieldType::Date
        } else {
            FieldType::Float
        };
        let mut field = self.field(&mut p, types, unmapped)?;
        if typ == "date_range" && field.ftype != FieldType::Date {
            field.ftype = FieldType::Date;
            field.format = ValueFormat::Date(DateFormat::default_format(), TimeZone::UTC);
        }
        let tz = self.date_format(&mut p, &mut field, typ == "date_range")?;
        let keyed = p.bool("keyed")?.unwrap_or(false);
        let list = p
            .get("ranges")
            .and_then(Value::as_array)
            .ok_or_else(|| p.err("requires [ranges], an array of {from, to, key}"))?;
        if list.is_empty() {
            return Err(p.err("no [ranges] specified"));
        }
        let is_date = field.ftype == FieldType::Date;
        let mut ranges = Vec::with_capacity(list.len());
        for r in list {
            let o = r
                .as_object()
                .ok_or_else(|| p.err(format!("a range must be an object, found {r}")))?;
            let mut def = RangeDef {
                key: None,
                from: f64::NEG_INFINITY,
                to: f64::INFINITY,
            };
            for (k, x) in o {
                let bound = |x: &Value| -> Result<Option<f64>> {
                    if x.is_null() {
                        return Ok(None);
                    }
                    if is_date {
                        if let Value::String(_) = x {
                            return self
                                .date(&p, x, &field.format, &tz)
                                .map(|ms| Some(ms as f64));
                        }
                    }
                    number(x).map(Some).ok_or_else(|| {
                        p.err(format!("range bound [{k}] must be a number, found {x}"))
                    })
                };
                match k.as_str() {
                    "key" => {
                        def.key = Some(match x {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                    }
                    "from" => def.from = bound(x)?.unwrap_or(f64::NEG_INFINITY),
                    "to" => def.to = bound(x)?.unwrap_or(f64::INFINITY),
                    _ => return Err(p.err(format!("unknown parameter [ranges.{k}]"))),
                }
            }
            ranges.push(def);
        }
        // A stable sort by (from, to), as Elasticsearch orders its buckets.
        ranges.sort_by(|a, b| a.from.total_cmp(&b.from).then(a.to.total_cmp(&b.to)));
        let missing = self
            .missing(&mut p, &mut field)?
            .map(|m| match m {
                Missing::Num(x) => Ok(field.to_f64(x)),
                Missing::Bytes(_) => Err(p.err("[missing] must be a number")),
            })
            .transpose()?;
        p.finish()?;
        Ok(RangeReq {
            field,
            ranges,
            keyed,
            missing,
        })
    }

    fn metric(
        &self,
        name: &str,
        typ: &'static str,
        kind: MetricKind,
        v: &Value,
    ) -> Result<AggKind> {
        let mut p = Params::new(name, typ, v)?;
        let types = if kind == MetricKind::ValueCount {
            ANY
        } else {
            NUMERIC
        };
        let mut field = self.field(&mut p, types, FieldType::Float)?;
        self.date_format(&mut p, &mut field, false)?;
        let missing = self.missing(&mut p, &mut field)?;
        p.finish()?;
        Ok(AggKind::Metric(MetricReq {
            field,
            kind,
            missing,
        }))
    }

    fn cardinality(&self, name: &str, v: &Value) -> Result<CardinalityReq> {
        let mut p = Params::new(name, "cardinality", v)?;
        let mut field = self.field(&mut p, ANY, FieldType::Keyword)?;
        let threshold = p
            .u64("precision_threshold")?
            .map_or(super::cardinality::DEFAULT_THRESHOLD, |t| {
                t.min(super::cardinality::MAX_THRESHOLD as u64) as usize
            });
        p.string("execution_hint")?;
        let missing = self.missing(&mut p, &mut field)?;
        p.finish()?;
        Ok(CardinalityReq {
            field,
            threshold,
            missing,
        })
    }

    fn percentiles(&self, name: &str, v: &Value) -> Result<PercentilesReq> {
        let mut p = Params::new(name, "percentiles", v)?;
        let mut field = self.field(&mut p, NUMERIC, FieldType::Float)?;
        self.date_format(&mut p, &mut field, false)?;
        let percents = match p.get("percents") {
            None => DEFAULT_PERCENTS.to_vec(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for x in a {
                    match number(x) {
                        Some(q) if (0.0..=100.0).contains(&q) => out.push(q),
                        _ => {
                            return Err(p.err(format!(
                                "[percents] must hold numbers from 0 to 100, found {x}"
                            )))
                        }
                    }
                }
                if out.is_empty() {
                    return Err(p.err("[percents] must not be empty"));
                }
                // Elasticsearch sorts the percents.
                out.sort_by(f64::total_cmp);
                out
            }
            Some(o) => return Err(p.err(format!("[percents] must be an array, found {o}"))),
        };
        let keyed = p.bool("keyed")?.unwrap_or(true);
        if let Some(t) = p.get("tdigest") {
            // Percentiles are exact here; a compression changes nothing.
            let ok = t.as_object().is_some_and(|o| {
                o.keys()
                    .all(|k| k == "compression" || k == "execution_hint")
            });
            if !ok {
                return Err(p.err(format!("unsupported [tdigest] {t}")));
            }
        }
        if p.get("hdr").is_some() {
            return Err(p.err("[hdr] is not supported (percentiles are exact)"));
        }
        let missing = self
            .missing(&mut p, &mut field)?
            .map(|m| match m {
                Missing::Num(x) => Ok(field.to_f64(x)),
                Missing::Bytes(_) => Err(p.err("[missing] must be a number")),
            })
            .transpose()?;
        p.finish()?;
        Ok(PercentilesReq {
            field,
            percents,
            keyed,
            missing,
        })
    }

    fn filters(&self, name: &str, v: &Value) -> Result<FiltersReq> {
        let mut p = Params::new(name, "filters", v)?;
        let q =
            |p: &Params<'_>, v: &Value| (self.filter_query)(v).map_err(|e| p.err(format!("{e}")));
        let (filters, named) = match p.get("filters") {
            Some(Value::Object(m)) => {
                let mut f = m
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), q(&p, v)?)))
                    .collect::<Result<Vec<_>>>()?;
                f.sort_by(|a, b| a.0.cmp(&b.0));
                (f, true)
            }
            Some(Value::Array(a)) => (
                a.iter()
                    .enumerate()
                    .map(|(i, v)| Ok((i.to_string(), q(&p, v)?)))
                    .collect::<Result<Vec<_>>>()?,
                false,
            ),
            _ => {
                return Err(
                    p.err("requires [filters], an object of name -> query or an array of queries")
                )
            }
        };
        if filters.is_empty() {
            return Err(p.err("[filters] cannot be empty"));
        }
        let keyed = p.bool("keyed")?.unwrap_or(true) && named;
        let key = p.string("other_bucket_key")?.map(str::to_string);
        let other = match p.bool("other_bucket")? {
            Some(true) => Some(key.unwrap_or_else(|| "_other_".into())),
            Some(false) => None,
            None => key,
        };
        p.finish()?;
        Ok(FiltersReq {
            filters,
            named,
            keyed,
            other,
        })
    }
}

/// Milliseconds of a time value (`500ms`, `30s`, `90m`, `2h`, `1d`; Elasticsearch's fixed
/// units, also `micros` and `nanos` when whole milliseconds).
pub(crate) fn time_value_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    for (suffix, num, den) in [
        ("nanos", 1i64, 1_000_000i64),
        ("micros", 1, 1000),
        ("ms", 1, 1),
        ("s", 1000, 1),
        ("m", 60_000, 1),
        ("h", 3_600_000, 1),
        ("d", 86_400_000, 1),
    ] {
        if let Some(n) = s.strip_suffix(suffix) {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let n: i64 = n.parse().ok()?;
            let v = n.checked_mul(num)?;
            return (v % den == 0).then_some(v / den);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_values() {
        assert_eq!(time_value_ms("90m"), Some(5_400_000));
        assert_eq!(time_value_ms("2h"), Some(7_200_000));
        assert_eq!(time_value_ms("1d"), Some(86_400_000));
        assert_eq!(time_value_ms("500ms"), Some(500));
        assert_eq!(time_value_ms("30s"), Some(30_000));
        assert_eq!(time_value_ms("2000000nanos"), Some(2));
        assert_eq!(time_value_ms("1M"), None);
        assert_eq!(time_value_ms("1.5h"), None);
        assert_eq!(time_value_ms("h"), None);
    }
}
