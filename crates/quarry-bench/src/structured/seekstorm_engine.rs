//! How is SeekStorm (crate `seekstorm` 4.x, feature `seekstorm-driver`) driven in the structured
//! benchmark: every long and date field is an `I64` / `Timestamp` facet field, every keyword a
//! `String16` (or, multi-valued, `StringSet16`) facet field, the text an indexed `Text` field;
//! one shard (`force_shard_number = 1`, as the other engines get one segment), BM25 on the one
//! text field.
//!
//! SeekStorm's facets are its structured-data feature: a fixed-width value per document read in
//! place, range filters (`FacetFilter`), sorting by facet values (`ResultSort`), and counts per
//! value or per range (`QueryFacet`). The classes map onto them as follows:
//! - range counts and range + text top-10: `FacetFilter::I64` / `Timestamp` (half-open ranges:
//!   an inclusive upper bound `v` is `..v + 1`), `ResultType::Count` / `TopkCount`;
//! - sorts: `ResultSort` on the field, then on `id` ascending; deep pages by `offset` (SeekStorm
//!   has no search_after);
//! - terms: `QueryFacet::String16` / `StringSet16` (top values by count);
//! - date histograms: `QueryFacet::Timestamp` with one range per calendar month or UTC day
//!   between the field's smallest and largest value;
//! - cardinality: the same value counts with no length cap, the values with a count;
//! - stats: not supported (SeekStorm computes no metric over the matches; its facets count).
//!
//! SeekStorm has no "missing value": a document without a facet field reads 0 (a number) or
//! the first value the shard saw (a keyword). So the driver writes an explicit placeholder for a
//! missing value — `i64::MIN` for numbers and dates, `MISSING` for keywords — and keeps it out
//! of every answer: ranges start above `i64::MIN`, an ascending sort on a field with missing
//! values filters them out (missing values sort last, so they cannot be in a page that has
//! enough documents with values; the answer check would catch it otherwise), the histogram has
//! a first range for the placeholder that is dropped, and the placeholder keyword is dropped
//! from value counts. Which fields have missing values, and each numeric field's extent, are
//! recorded at indexing time in `quarry-bench.json` next to the index.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{bail, Context, Result};
use seekstorm::commit::Commit;
use seekstorm::index::{
    create_index, open_index, Document, FieldType, IndexArc, IndexDocument, IndexMetaObject,
    SchemaField,
};
use seekstorm::search::{
    FacetFilter, FacetValue, QueryFacet, QueryRewriting, QueryType, RangeType, ResultObject,
    ResultSort, ResultType, Search, SearchMode, SortOrder,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::data::{civil_month, days_from_civil, DAY_MS};
use super::driver::Engine;
use super::spec::{Answer, FieldDef, Filter, Interval, Kind, Op, QuerySpec};

/// The keyword written for a document without a value (see the module docs).
const MISSING: &str = "\u{1}missing";

/// What the driver learns while indexing (SeekStorm does not keep it).
#[derive(Default, Serialize, Deserialize)]
struct Sidecar {
    /// Fields some document lacks.
    missing: HashSet<String>,
    /// Smallest and largest value of each long and date field.
    extent: HashMap<String, (i64, i64)>,
}

pub struct SeekStormEngine {
    rt: tokio::runtime::Runtime,
    index: IndexArc,
    fields: Vec<FieldDef>,
    sidecar: Sidecar,
}

/// What the timed call does with its result.
pub enum Shape {
    Count,
    Top,
    /// A field sort; the total is counted separately (not timed), as for Tantivy.
    Sort,
    Terms {
        field: String,
        size: usize,
    },
    /// Range labels are the bucket keys; the first range holds the missing values.
    Histogram {
        field: String,
    },
    Cardinality {
        field: String,
    },
}

pub struct Prepared {
    query: String,
    result_type: ResultType,
    offset: usize,
    length: usize,
    facets: Vec<QueryFacet>,
    filters: Vec<FacetFilter>,
    sort: Vec<ResultSort>,
    shape: Shape,
    /// The filters of the query without the ascending sort's exclusion of missing values (for
    /// the untimed total of a sort).
    count_filters: Vec<FacetFilter>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn schema(fields: &[FieldDef]) -> Vec<SchemaField> {
    fields
        .iter()
        .map(|f| {
            let (ty, facet, lexical) = match f.kind {
                Kind::Long => (FieldType::I64, true, false),
                Kind::Date => (FieldType::Timestamp, true, false),
                Kind::Keyword if f.multi => (FieldType::StringSet16, true, false),
                Kind::Keyword => (FieldType::String16, true, false),
                Kind::Text => (FieldType::Text, false, true),
            };
            SchemaField::new(
                f.name.clone(),
                false,
                lexical,
                false,
                ty,
                facet,
                false,
                1.0,
                false,
                false,
            )
        })
        .collect()
}

/// SeekStorm's defaults with the choices of the text suite's driver (`drivers/seekstorm.rs`):
/// tokenizer UnicodeAlphanumeric, plain BM25 (`Bm25f` on one field), mmap.
fn meta() -> Result<IndexMetaObject> {
    crate::drivers::seekstorm::meta_named("quarry-bench-structured")
}

const SIDECAR: &str = "quarry-bench.json";

/// Month starts (epoch ms) from the month of `lo` through the month of `hi`, or day starts.
fn bucket_starts(lo: i64, hi: i64, interval: Interval) -> Vec<i64> {
    let mut out = vec![];
    match interval {
        Interval::Day => {
            let mut d = lo.div_euclid(DAY_MS);
            while d * DAY_MS <= hi {
                out.push(d * DAY_MS);
                d += 1;
            }
        }
        Interval::Month => {
            let (mut y, mut m) = civil_month(lo.div_euclid(DAY_MS));
            loop {
                let start = days_from_civil(y, m, 1) * DAY_MS;
                if start > hi {
                    break;
                }
                out.push(start);
                (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            }
        }
    }
    out
}

impl SeekStormEngine {
    fn def(&self, name: &str) -> std::result::Result<&FieldDef, String> {
        self.fields
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| format!("no field {name}"))
    }

    fn range_filter(
        &self,
        field: &str,
        gte: Option<i64>,
        lte: Option<i64>,
    ) -> std::result::Result<FacetFilter, String> {
        let def = self.def(field)?;
        // Above the placeholder of missing values; an inclusive upper bound is the half-open
        // range's end minus one (i64::MAX itself is no value of these datasets).
        let lo = gte.unwrap_or(i64::MIN + 1).max(i64::MIN + 1);
        let hi = lte.map_or(i64::MAX, |v| v.saturating_add(1));
        Ok(match def.kind {
            Kind::Long => FacetFilter::I64 {
                field: field.into(),
                filter: lo..hi,
            },
            Kind::Date => FacetFilter::Timestamp {
                field: field.into(),
                filter: lo..hi,
            },
            _ => return Err(format!("a range on {field}, not a number or date")),
        })
    }

    fn filters(&self, spec: &QuerySpec) -> std::result::Result<Vec<FacetFilter>, String> {
        spec.filters
            .iter()
            .map(|f| match f {
                Filter::Range { field, gte, lte } => self.range_filter(field, *gte, *lte),
                Filter::Term { field, value } => {
                    let def = self.def(field)?;
                    Ok(if def.multi {
                        FacetFilter::StringSet16 {
                            field: field.clone(),
                            filter: vec![value.clone()],
                        }
                    } else {
                        FacetFilter::String16 {
                            field: field.clone(),
                            filter: vec![value.clone()],
                        }
                    })
                }
            })
            .collect()
    }

    fn keyword_facet(&self, field: &str, length: u16) -> std::result::Result<QueryFacet, String> {
        let def = self.def(field)?;
        if def.kind != Kind::Keyword {
            return Err(format!("value counts of {field}, not a keyword"));
        }
        Ok(if def.multi {
            QueryFacet::StringSet16 {
                field: field.into(),
                prefix: String::new(),
                length,
            }
        } else {
            QueryFacet::String16 {
                field: field.into(),
                prefix: String::new(),
                length,
            }
        })
    }

    async fn search(
        &self,
        p: &Prepared,
        filters: Vec<FacetFilter>,
        rt: ResultType,
    ) -> ResultObject {
        self.index
            .search(
                p.query.clone(),
                None,
                QueryType::Union,
                SearchMode::Lexical,
                true,
                p.offset,
                p.length,
                rt,
                false,
                if p.query.is_empty() {
                    vec![]
                } else {
                    vec!["text".to_string()]
                },
                p.facets.clone(),
                filters,
                p.sort.clone(),
                QueryRewriting::SearchOnly,
            )
            .await
    }

    fn ids(&self, out: &ResultObject) -> Result<Vec<i64>> {
        self.rt.block_on(async {
            let index = self.index.read().await;
            let mut ids = Vec::with_capacity(out.results.len());
            for r in &out.results {
                match index.get_facet_value("id", r.doc_id).await {
                    FacetValue::I64(v) => ids.push(v),
                    other => bail!("document {}: id facet {other:?}", r.doc_id),
                }
            }
            Ok(ids)
        })
    }
}

impl Engine for SeekStormEngine {
    const NAME: &'static str = "seekstorm";
    type Prepared = Prepared;
    type Out = ResultObject;

    fn version() -> String {
        format!(
            "SeekStorm {} (crate seekstorm, one shard)",
            seekstorm::index::version()
        )
    }

    fn index(dir: &Path, fields: &[FieldDef], docs: Vec<Map<String, Value>>) -> Result<String> {
        let mut sidecar = Sidecar::default();
        let rt = runtime()?;
        rt.block_on(async {
            let index = create_index(dir, meta()?, &schema(fields), &Vec::new(), true, Some(1))
                .await
                .map_err(|e| anyhow::anyhow!("creating SeekStorm index {}: {e}", dir.display()))?;
            for d in docs {
                let mut doc = Document::new();
                for f in fields {
                    let v = d.get(&f.name).filter(|v| !v.is_null());
                    let v = match (f.kind, v) {
                        (Kind::Long | Kind::Date, Some(v)) => {
                            let x = v
                                .as_i64()
                                .with_context(|| format!("{}: not an integer: {v}", f.name))?;
                            let e = sidecar.extent.entry(f.name.clone()).or_insert((x, x));
                            *e = (e.0.min(x), e.1.max(x));
                            Value::from(x)
                        }
                        (Kind::Long | Kind::Date, None) => {
                            sidecar.missing.insert(f.name.clone());
                            Value::from(i64::MIN)
                        }
                        (Kind::Keyword, Some(Value::Array(a))) if f.multi && !a.is_empty() => {
                            Value::Array(a.clone())
                        }
                        (Kind::Keyword, _) if f.multi => {
                            sidecar.missing.insert(f.name.clone());
                            Value::Array(vec![Value::from(MISSING)])
                        }
                        (Kind::Keyword, Some(v @ Value::String(_))) => v.clone(),
                        (Kind::Keyword, _) => {
                            sidecar.missing.insert(f.name.clone());
                            Value::from(MISSING)
                        }
                        (Kind::Text, Some(v)) => v.clone(),
                        (Kind::Text, None) => continue,
                    };
                    doc.insert(f.name.clone(), v);
                }
                index
                    .index_document(doc, seekstorm::index::FileType::None)
                    .await;
            }
            index.commit().await;
            seekstorm::index::Close::close(&index).await;
            anyhow::Ok(())
        })?;
        std::fs::write(dir.join(SIDECAR), serde_json::to_vec(&sidecar)?)?;
        Ok(
            "create_index with force_shard_number = 1, one index_document per row, one commit; \
             long/date fields I64/Timestamp facets, keywords String16 (multi-valued: \
             StringSet16) facets, text an indexed Text field (UnicodeAlphanumeric, BM25); \
             missing values written as a placeholder (i64::MIN, or a MISSING keyword) and kept \
             out of the answers"
                .into(),
        )
    }

    fn open(dir: &Path, fields: &[FieldDef]) -> Result<Self> {
        let rt = runtime()?;
        let index = rt
            .block_on(open_index(dir))
            .map_err(|e| anyhow::anyhow!("opening SeekStorm index {}: {e}", dir.display()))?;
        let sidecar: Sidecar = serde_json::from_slice(
            &std::fs::read(dir.join(SIDECAR))
                .with_context(|| format!("reading {}", dir.join(SIDECAR).display()))?,
        )?;
        Ok(SeekStormEngine {
            rt,
            index,
            fields: fields.to_vec(),
            sidecar,
        })
    }

    fn prepare(&self, spec: &QuerySpec) -> std::result::Result<Prepared, String> {
        let filters = self.filters(spec)?;
        let mut p = Prepared {
            query: spec.text.join(" "),
            result_type: ResultType::Count,
            offset: 0,
            length: 10,
            facets: vec![],
            count_filters: filters.clone(),
            filters,
            sort: vec![],
            shape: Shape::Count,
        };
        match &spec.op {
            Op::Count => {}
            Op::TopScore { k } => {
                p.result_type = ResultType::TopkCount;
                p.length = *k;
                p.shape = Shape::Top;
            }
            Op::Sort {
                field,
                desc,
                k,
                offset,
                ..
            } => {
                let def = self.def(field)?;
                if !matches!(def.kind, Kind::Long | Kind::Date) {
                    return Err(format!("sort by {field}, not a number or date"));
                }
                if !desc && self.sidecar.missing.contains(field) {
                    // Missing values (the placeholder, the smallest i64) sort last.
                    p.filters.push(self.range_filter(field, None, None)?);
                }
                let order = |desc| {
                    if desc {
                        SortOrder::Descending
                    } else {
                        SortOrder::Ascending
                    }
                };
                p.sort = vec![
                    ResultSort {
                        field: field.clone(),
                        order: order(*desc),
                        base: FacetValue::None,
                    },
                    ResultSort {
                        field: "id".into(),
                        order: SortOrder::Ascending,
                        base: FacetValue::None,
                    },
                ];
                p.result_type = ResultType::Topk;
                p.offset = *offset;
                p.length = *k;
                p.shape = Shape::Sort;
            }
            Op::Terms { field, size } => {
                // One more than asked: the placeholder may be among the top values.
                let n = u16::try_from(size + 1).map_err(|_| format!("terms size {size}"))?;
                p.facets = vec![self.keyword_facet(field, n)?];
                p.shape = Shape::Terms {
                    field: field.clone(),
                    size: *size,
                };
            }
            Op::Cardinality { field } => {
                p.facets = vec![self.keyword_facet(field, u16::MAX)?];
                p.shape = Shape::Cardinality {
                    field: field.clone(),
                };
            }
            Op::DateHistogram { field, interval } => {
                let def = self.def(field)?;
                if def.kind != Kind::Date {
                    return Err(format!("a date histogram of {field}, not a date"));
                }
                let Some(&(lo, hi)) = self.sidecar.extent.get(field) else {
                    return Err(format!("{field} has no values"));
                };
                let starts = bucket_starts(lo, hi, *interval);
                if starts.len() >= u16::MAX as usize {
                    return Err(format!(
                        "{} buckets: more than SeekStorm's 65,535 ranges",
                        starts.len()
                    ));
                }
                let mut ranges = vec![(MISSING.to_string(), i64::MIN)];
                ranges.extend(starts.iter().map(|s| (s.to_string(), *s)));
                p.facets = vec![QueryFacet::Timestamp {
                    field: field.clone(),
                    range_type: RangeType::CountWithinRange,
                    ranges,
                }];
                p.shape = Shape::Histogram {
                    field: field.clone(),
                };
            }
            Op::Stats { .. } => {
                return Err(
                    "SeekStorm computes no metrics (min, max, sum, average) over the \
                            matches: its facets count values and ranges"
                        .into(),
                )
            }
        }
        Ok(p)
    }

    fn run(&self, p: &Prepared) -> Result<ResultObject> {
        Ok(self
            .rt
            .block_on(self.search(p, p.filters.clone(), p.result_type.clone())))
    }

    fn answer(&self, _spec: &QuerySpec, p: &Prepared, out: ResultObject) -> Result<Answer> {
        let facet = |field: &str| -> Vec<(String, usize)> {
            out.facets.get(field).cloned().unwrap_or_default()
        };
        Ok(match &p.shape {
            Shape::Count => Answer::Count {
                count: out.result_count_total as u64,
            },
            Shape::Top => Answer::Hits {
                total: out.result_count_total as u64,
                ids: self.ids(&out)?,
                scores: out.results.iter().map(|r| f64::from(r.score)).collect(),
            },
            Shape::Sort => {
                let counted =
                    self.rt
                        .block_on(self.search(p, p.count_filters.clone(), ResultType::Count));
                Answer::Hits {
                    total: counted.result_count_total as u64,
                    ids: self.ids(&out)?,
                    scores: vec![],
                }
            }
            Shape::Terms { field, size } => {
                let mut buckets: Vec<(String, u64)> = facet(field)
                    .into_iter()
                    .filter(|(k, n)| k != MISSING && *n > 0)
                    .map(|(k, n)| (k, n as u64))
                    .collect();
                buckets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                buckets.truncate(*size);
                Answer::Buckets { buckets }
            }
            Shape::Cardinality { field } => Answer::Cardinality {
                value: facet(field)
                    .iter()
                    .filter(|(k, n)| k != MISSING && *n > 0)
                    .count() as u64,
            },
            Shape::Histogram { field } => {
                let mut buckets: Vec<(i64, u64)> = facet(field)
                    .into_iter()
                    .filter(|(k, n)| k != MISSING && *n > 0)
                    .map(|(k, n)| Ok((k.parse::<i64>()?, n as u64)))
                    .collect::<Result<_>>()?;
                buckets.sort_unstable();
                Answer::Buckets {
                    buckets: buckets
                        .into_iter()
                        .map(|(k, n)| (k.to_string(), n))
                        .collect(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured::data::epoch_ms;

    #[test]
    fn bucket_starts_cover_the_extent() {
        let lo = epoch_ms(2013, 1, 31, 23, 0, 0, 0);
        let hi = epoch_ms(2013, 3, 1, 0, 0, 0, 0);
        assert_eq!(
            bucket_starts(lo, hi, Interval::Month),
            vec![
                epoch_ms(2013, 1, 1, 0, 0, 0, 0),
                epoch_ms(2013, 2, 1, 0, 0, 0, 0),
                epoch_ms(2013, 3, 1, 0, 0, 0, 0)
            ]
        );
        let days = bucket_starts(lo, hi, Interval::Day);
        assert_eq!(days.first(), Some(&epoch_ms(2013, 1, 31, 0, 0, 0, 0)));
        assert_eq!(days.last(), Some(&epoch_ms(2013, 3, 1, 0, 0, 0, 0)));
        assert_eq!(days.len(), 30);
    }
}
