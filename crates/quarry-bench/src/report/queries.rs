//! What do the query figures say, per index shape: latency tables and charts per mode and class,
//! quarry against the best peer per (mode, class) cell, hit agreement, and every query.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use super::{arr, f, num, pairs, s, MODES};
use crate::charts::{self, Series};
use crate::measure::{geomean, mean};
use crate::orchestrator::SHAPES;
use crate::workload::CLASSES;

/// quarry's target per cell: geomean p50 at most this times the best peer's ...
pub const P50_TARGET: f64 = 0.8;
/// ... and mean at most this times the best peer's mean.
pub const MEAN_TARGET: f64 = 1.0;

/// The index shape of a query record (`default` for records written before shapes existed).
pub fn shape_of(r: &Value) -> String {
    match r["shape"].as_str() {
        Some(sh) if !sh.is_empty() => sh.to_string(),
        _ => "default".into(),
    }
}

/// (shape, mode, query) -> engine -> record, for records without error.
pub type Cells<'a> = BTreeMap<(String, String, String), HashMap<String, &'a Value>>;

/// The cells, and (query, class) in first-seen order.
pub fn cells(results: &Value) -> (Cells<'_>, Vec<(String, String)>) {
    let mut cells: Cells = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in arr(results, "query") {
        let q = s(&r["query"]);
        if seen.insert(q.clone()) {
            order.push((q.clone(), s(&r["class"])));
        }
        if r.get("error").is_some_and(|e| !e.is_null()) {
            continue;
        }
        cells
            .entry((shape_of(r), s(&r["mode"]), q))
            .or_default()
            .insert(s(&r["engine"]), r);
    }
    (cells, order)
}

/// Shapes with query records, in report order.
pub fn shapes_present(results: &Value) -> Vec<String> {
    let present: Vec<String> = arr(results, "query").iter().map(shape_of).collect();
    SHAPES
        .iter()
        .filter(|sh| present.iter().any(|p| p == *sh))
        .map(|sh| sh.to_string())
        .collect()
}

/// Engines (in `engines` order) with query records in `shape`.
fn engines_in(results: &Value, engines: &[String], shape: &str) -> Vec<String> {
    engines
        .iter()
        .filter(|e| {
            arr(results, "query")
                .iter()
                .any(|r| s(&r["engine"]) == **e && shape_of(r) == shape)
        })
        .cloned()
        .collect()
}

/// Per class (in report order): class name and each engine's p50 and mean per query, over the
/// queries that every engine of `engines` ran without error in this shape and mode.
type ClassLatencies = BTreeMap<usize, (String, HashMap<String, (Vec<f64>, Vec<f64>)>)>;

fn per_class(
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
    shape: &str,
    mode: &str,
) -> ClassLatencies {
    let mut out: ClassLatencies = BTreeMap::new();
    for ((sh, m, q), by_engine) in cells {
        if sh != shape || m != mode || engines.iter().any(|e| !by_engine.contains_key(e)) {
            continue;
        }
        let class = class_of.get(q.as_str()).copied().unwrap_or("mixed");
        let ci = CLASSES
            .iter()
            .position(|c| *c == class)
            .unwrap_or(CLASSES.len());
        let entry = out
            .entry(ci)
            .or_insert_with(|| (class.to_string(), HashMap::new()));
        for e in engines {
            let v = entry.1.entry(e.clone()).or_default();
            v.0.push(f(&by_engine[e]["p50_us"]));
            v.1.push(f(&by_engine[e]["mean_us"]));
        }
    }
    out
}

/// Ratio pairs shown in the tables: quarry against each other engine when quarry ran, else
/// every pair.
fn ratio_pairs(engines: &[String]) -> Vec<(String, String)> {
    if engines.iter().any(|e| e == "quarry") {
        engines
            .iter()
            .filter(|e| *e != "quarry")
            .map(|e| ("quarry".to_string(), e.clone()))
            .collect()
    } else {
        pairs(engines)
    }
}

pub fn query_section(
    md: &mut String,
    results: &Value,
    engines: &[String],
    out_dir: &Path,
    stem: &str,
) -> Result<()> {
    if arr(results, "query").is_empty() {
        return Ok(());
    }
    let (cells, order) = cells(results);
    let class_of: HashMap<&str, &str> = order
        .iter()
        .map(|(q, c)| (q.as_str(), c.as_str()))
        .collect();
    let shapes = shapes_present(results);
    verdict_section(md, results, &cells, &class_of, engines, &shapes)?;
    for shape in &shapes {
        let engines = engines_in(results, engines, shape);
        writeln!(md, "## Queries, index shape `{shape}`\n")?;
        writeln!(md, "{}\n", shape_line(results, &engines, shape))?;
        writeln!(md, "Per class: number of queries, the mean and geometric mean over queries of each engine's p50 latency (µs), and ratios. \
                      *mean ratio* = mean(A) / mean(B); *geo ratio* = geometric mean over queries of p50(A) / p50(B). Below 1 means A is faster.\n")?;
        let mut fastest_lines = Vec::new();
        for mode in MODES {
            let classes = per_class(&cells, &class_of, &engines, shape, mode);
            if classes.is_empty() {
                continue;
            }
            writeln!(md, "### Mode `{mode}` (shape `{shape}`)\n")?;
            let mut header = "| class | n |".to_string();
            let mut sep = "|---|---:|".to_string();
            for e in &engines {
                write!(header, " {e} mean µs | {e} geomean µs |")?;
                sep.push_str("---:|---:|");
            }
            for (a, b) in ratio_pairs(&engines) {
                write!(header, " {a}/{b} mean ratio | {a}/{b} geo ratio |")?;
                sep.push_str("---:|---:|");
            }
            writeln!(md, "{header}\n{sep}")?;
            let mut chart_groups = Vec::new();
            let mut chart_vals: HashMap<String, Vec<Option<f64>>> = HashMap::new();
            for (class, lat) in classes.values() {
                let p50 = |e: &String| &lat[e].0;
                let n = lat.values().next().map(|v| v.0.len()).unwrap_or(0);
                let mut row = format!("| {class} | {n} |");
                for e in &engines {
                    write!(row, " {} | {} |", num(mean(p50(e))), num(geomean(p50(e))))?;
                }
                for (a, b) in ratio_pairs(&engines) {
                    let ratios: Vec<f64> =
                        p50(&a).iter().zip(p50(&b)).map(|(x, y)| x / y).collect();
                    write!(
                        row,
                        " {:.2} | {:.2} |",
                        mean(p50(&a)) / mean(p50(&b)),
                        geomean(&ratios)
                    )?;
                }
                writeln!(md, "{row}")?;
                chart_groups.push(class.clone());
                for e in &engines {
                    chart_vals
                        .entry(e.clone())
                        .or_default()
                        .push(Some(geomean(p50(e))));
                }
                if engines.len() > 1 {
                    let mut ranked: Vec<(f64, &String)> =
                        engines.iter().map(|e| (geomean(p50(e)), e)).collect();
                    ranked
                        .sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
                    let others = ranked[1..]
                        .iter()
                        .map(|(g, e)| format!("{:.2}× faster than {e}", g / ranked[0].0))
                        .collect::<Vec<_>>()
                        .join(", ");
                    fastest_lines.push(format!(
                        "- `{mode}` / {class} ({n} queries): **{}** is fastest, {others} (geomean p50).",
                        ranked[0].1
                    ));
                }
            }
            writeln!(md)?;
            let series: Vec<Series> = engines
                .iter()
                .map(|e| Series {
                    name: e.clone(),
                    values: chart_vals.remove(e).unwrap_or_default(),
                })
                .collect();
            let suffix = if shape == "default" {
                String::new()
            } else {
                format!("-{shape}")
            };
            let png = format!("{stem}-latency-{mode}{suffix}.png");
            let title = format!(
                "Query latency, mode {mode}, index shape {shape}: geometric mean of p50 per class (µs, log scale, lower is better)"
            );
            match charts::grouped_bars(
                &out_dir.join(&png),
                &title,
                "µs",
                &chart_groups,
                &series,
                true,
            ) {
                Ok(()) => writeln!(md, "![latency {mode} {shape}]({png})\n")?,
                Err(e) => writeln!(md, "(chart not drawn: {e:#})\n")?,
            }
        }
        if !fastest_lines.is_empty() {
            writeln!(md, "### Fastest engine per class (shape `{shape}`)\n")?;
            for l in fastest_lines {
                writeln!(md, "{l}")?;
            }
            writeln!(md)?;
        }
        if shape == "default" {
            agreement_section(md, &cells, &class_of, &engines)?;
        }
    }
    Ok(())
}

/// "quarry 6 segments, tantivy 2, ..." for one shape, from the index and merge records.
pub fn shape_line(results: &Value, engines: &[String], shape: &str) -> String {
    let segs: Vec<String> = engines
        .iter()
        .map(|e| {
            format!(
                "{e} {}",
                segments_of(results, e, shape).unwrap_or_else(|| "?".into())
            )
        })
        .collect();
    let what = if shape == "default" {
        "each engine's index as its defaults leave it (the last 1-thread indexing run)"
    } else {
        "a copy of that index force-merged to one segment (SeekStorm: rebuilt into one shard)"
    };
    format!(
        "Index shape `{shape}`: {what}. Segments: {}.",
        segs.join(", ")
    )
}

/// Segment count of `engine`'s queried index in `shape`.
pub fn segments_of(results: &Value, engine: &str, shape: &str) -> Option<String> {
    if shape == "default" {
        arr(results, "index")
            .iter()
            .rfind(|r| s(&r["engine"]) == engine && r["threads"] == 1)
            .map(|r| s(&r["segments"]))
    } else {
        arr(results, "merge")
            .iter()
            .rfind(|r| s(&r["engine"]) == engine)
            .map(|r| s(&r["segments_after"]))
    }
}

/// One (mode, class) cell of the verdict table. Each peer is compared with quarry over the
/// queries both ran; the cell shows the peer quarry compares worst with, separately for p50 and
/// for the mean (each with quarry's figure over that peer's common queries).
pub(super) struct Verdict {
    pub(super) n: usize,
    pub(super) quarry_geo: f64,
    pub(super) peer_geo: (String, f64),
    n_mean: usize,
    pub(super) quarry_mean: f64,
    pub(super) peer_mean: (String, f64),
    /// Per peer: queries of the class quarry ran that the peer did not (an error record).
    not_run: Vec<(String, usize)>,
}

/// One peer against quarry over their common queries of a class: (peer, n, quarry geomean p50,
/// peer geomean p50, quarry mean, peer mean).
type PeerRow = (String, usize, f64, f64, f64, f64);

pub(super) fn verdicts(
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
    shape: &str,
) -> Vec<(String, String, Verdict)> {
    let peers: Vec<&String> = engines.iter().filter(|e| *e != "quarry").collect();
    let quarry = ["quarry".to_string()];
    let mut out = Vec::new();
    for mode in MODES {
        let all = per_class(cells, class_of, &quarry, shape, mode);
        let by_peer: Vec<(&String, ClassLatencies)> = peers
            .iter()
            .map(|p| {
                let pair = ["quarry".to_string(), (*p).clone()];
                (*p, per_class(cells, class_of, &pair, shape, mode))
            })
            .collect();
        for (ci, (class, q_all)) in &all {
            let n_all = q_all["quarry"].0.len();
            let rows: Vec<PeerRow> = by_peer
                .iter()
                .filter_map(|(p, lat)| {
                    let (_, l) = lat.get(ci)?;
                    let (q, e) = (&l["quarry"], &l[*p]);
                    Some((
                        (*p).clone(),
                        q.0.len(),
                        geomean(&q.0),
                        geomean(&e.0),
                        mean(&q.1),
                        mean(&e.1),
                    ))
                })
                .collect();
            let worst = |key: fn(&PeerRow) -> f64| {
                rows.iter()
                    .max_by(|a, b| {
                        key(a)
                            .partial_cmp(&key(b))
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .cloned()
            };
            let (Some(g), Some(m)) = (worst(|r| r.2 / r.3), worst(|r| r.4 / r.5)) else {
                continue;
            };
            let not_run = peers
                .iter()
                .map(|p| {
                    let n = rows.iter().find(|r| &r.0 == *p).map_or(0, |r| r.1);
                    ((*p).clone(), n_all - n)
                })
                .filter(|(_, k)| *k > 0)
                .collect();
            out.push((
                mode.to_string(),
                class.clone(),
                Verdict {
                    n: g.1,
                    quarry_geo: g.2,
                    peer_geo: (g.0, g.3),
                    n_mean: m.1,
                    quarry_mean: m.4,
                    peer_mean: (m.0, m.5),
                    not_run,
                },
            ));
        }
    }
    out
}

fn mark(ratio: f64, target: f64) -> String {
    if ratio <= target {
        format!("**{ratio:.2}** ✓")
    } else {
        format!("{ratio:.2}")
    }
}

/// quarry / best peer per (mode, class) cell and shape; targets marked.
fn verdict_section(
    md: &mut String,
    results: &Value,
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
    shapes: &[String],
) -> Result<()> {
    if !engines.iter().any(|e| e == "quarry") || engines.len() < 2 {
        return Ok(());
    }
    writeln!(md, "## quarry against the best peer\n")?;
    writeln!(
        md,
        "Per (mode, class) cell and index shape, quarry is compared with each peer over the queries of the \
         class that both ran without error: the p50 ratio is quarry's geometric mean of p50 divided by the \
         peer's, the mean ratio quarry's mean latency (mean over queries of each query's mean) divided by the \
         peer's. The cell shows the *best peer*: the one with the highest ratio (the hardest comparison for \
         quarry), chosen separately for p50 and for the mean; `n` is the number of queries of that comparison. \
         A peer that refused a query (an error record, e.g. SeekStorm on a query its syntax cannot express: \
         see the list under each shape) is compared on the others only. Targets (issue 7): p50 ratio ≤ \
         {P50_TARGET} and mean ratio ≤ {MEAN_TARGET}; cells that meet them are bold with ✓. Longer-term \
         target: 0.5.\n"
    )?;
    for shape in shapes {
        let engines = engines_in(results, engines, shape);
        if !engines.iter().any(|e| e == "quarry") || engines.len() < 2 {
            continue;
        }
        let v = verdicts(cells, class_of, &engines, shape);
        if v.is_empty() {
            continue;
        }
        writeln!(md, "### Shape `{shape}`\n")?;
        writeln!(md, "{}\n", shape_line(results, &engines, shape))?;
        // Compact matrix: p50 ratio / mean ratio.
        let classes: Vec<&str> = CLASSES
            .iter()
            .copied()
            .filter(|c| v.iter().any(|(_, vc, _)| vc == c))
            .collect();
        writeln!(md, "p50 ratio / mean ratio:\n")?;
        writeln!(md, "| mode | {} |", classes.join(" | "))?;
        writeln!(md, "|---|{}", "---:|".repeat(classes.len()))?;
        let (mut p50_ok, mut mean_ok) = (0, 0);
        for mode in MODES {
            if !v.iter().any(|(m, _, _)| m == mode) {
                continue;
            }
            let mut row = format!("| {mode} |");
            for c in &classes {
                match v.iter().find(|(m, vc, _)| m == mode && vc == c) {
                    Some((_, _, x)) => {
                        let (rp, rm) = (x.quarry_geo / x.peer_geo.1, x.quarry_mean / x.peer_mean.1);
                        p50_ok += usize::from(rp <= P50_TARGET);
                        mean_ok += usize::from(rm <= MEAN_TARGET);
                        write!(
                            row,
                            " {} / {} |",
                            mark(rp, P50_TARGET),
                            mark(rm, MEAN_TARGET)
                        )?
                    }
                    None => row.push_str(" – |"),
                }
            }
            writeln!(md, "{row}")?;
        }
        writeln!(
            md,
            "\nCells meeting the p50 target: {p50_ok} of {}; meeting the mean target: {mean_ok} of {}.\n",
            v.len(),
            v.len()
        )?;
        writeln!(md, "| mode | class | n | quarry geomean p50 µs | best peer: geomean p50 µs | p50 ratio | n | quarry mean µs | best peer: mean µs | mean ratio |")?;
        writeln!(md, "|---|---|---:|---:|---|---:|---:|---:|---|---:|")?;
        for (mode, class, x) in &v {
            writeln!(
                md,
                "| {mode} | {class} | {} | {} | {} {} | {} | {} | {} | {} {} | {} |",
                x.n,
                num(x.quarry_geo),
                x.peer_geo.0,
                num(x.peer_geo.1),
                mark(x.quarry_geo / x.peer_geo.1, P50_TARGET),
                x.n_mean,
                num(x.quarry_mean),
                x.peer_mean.0,
                num(x.peer_mean.1),
                mark(x.quarry_mean / x.peer_mean.1, MEAN_TARGET),
            )?;
        }
        let refused: Vec<String> = v
            .iter()
            .flat_map(|(mode, class, x)| {
                x.not_run
                    .iter()
                    .map(move |(p, k)| format!("{p}: {k} {class} queries in {mode}"))
            })
            .collect();
        if !refused.is_empty() {
            writeln!(
                md,
                "\nQueries quarry ran that a peer did not (error records, listed in the JSON): {}.",
                refused.join("; ")
            )?;
        }
        writeln!(md)?;
        super::scrutiny::section(md, cells, class_of, &engines, shape)?;
    }
    Ok(())
}

fn agreement_section(
    md: &mut String,
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
) -> Result<()> {
    if engines.len() < 2 {
        return Ok(());
    }
    writeln!(md, "### Do the engines agree?\n")?;
    writeln!(md, "Exact hit counts (mode `count`) and overlap of the top-10 ids (mode `top10_count`) between engines, over queries both ran (index shape `default`).\n")?;
    writeln!(md, "| pair | queries | same count | mean top-10 overlap |")?;
    writeln!(md, "|---|---:|---:|---:|")?;
    let mut mismatches = Vec::new();
    for (a, b) in pairs(engines) {
        let (mut n, mut same) = (0, 0);
        let mut overlaps = Vec::new();
        for ((sh, m, q), by) in cells {
            if sh != "default" {
                continue;
            }
            let (Some(x), Some(y)) = (by.get(&a), by.get(&b)) else {
                continue;
            };
            if m == "count" {
                n += 1;
                if x["hits"] == y["hits"] {
                    same += 1;
                } else if mismatches.len() < 15 {
                    mismatches.push(format!(
                        "- `{q}`: {a} {}, {b} {}",
                        s(&x["hits"]),
                        s(&y["hits"])
                    ));
                }
            } else if m == "top10_count" {
                let ids = |r: &Value| -> Vec<String> {
                    r["top"]
                        .as_array()
                        .map(|t| t.iter().map(|h| s(&h["id"])).collect())
                        .unwrap_or_default()
                };
                let (ix, iy) = (ids(x), ids(y));
                if ix.is_empty() && iy.is_empty() {
                    continue;
                }
                let common = ix.iter().filter(|i| iy.contains(i)).count();
                overlaps.push(common as f64 / ix.len().max(iy.len()) as f64);
            }
        }
        writeln!(
            md,
            "| {a} vs {b} | {n} | {same} | {:.1}% |",
            100.0 * mean(&overlaps)
        )?;
    }
    writeln!(md)?;
    if !mismatches.is_empty() {
        writeln!(md, "<details><summary>First count mismatches</summary>\n")?;
        for m in mismatches {
            writeln!(md, "{m}")?;
        }
        writeln!(md, "\n</details>\n")?;
    }
    seekstorm_counts(md, cells, class_of, engines)
}

/// Where SeekStorm's exact counts differ from Lucene's, per class (it has its own tokenizer and
/// query semantics; a reader should know what its `count` figures count).
fn seekstorm_counts(
    md: &mut String,
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
) -> Result<()> {
    let (a, b) = ("seekstorm", "lucene");
    if !engines.iter().any(|e| e == a) || !engines.iter().any(|e| e == b) {
        return Ok(());
    }
    // class -> (queries compared, differing, examples)
    let mut by_class: BTreeMap<usize, (String, usize, Vec<String>)> = BTreeMap::new();
    for ((sh, m, q), by) in cells {
        let (Some(x), Some(y)) = (by.get(a), by.get(b)) else {
            continue;
        };
        if sh != "default" || m != "count" {
            continue;
        }
        let class = class_of.get(q.as_str()).copied().unwrap_or("mixed");
        let ci = CLASSES
            .iter()
            .position(|c| *c == class)
            .unwrap_or(CLASSES.len());
        let e = by_class
            .entry(ci)
            .or_insert_with(|| (class.to_string(), 0, Vec::new()));
        e.1 += 1;
        if x["hits"] != y["hits"] {
            e.2.push(format!(
                "`{}` {} vs {}",
                q.replace('|', "\\|"),
                s(&x["hits"]),
                s(&y["hits"])
            ));
        }
    }
    if by_class.is_empty() {
        return Ok(());
    }
    writeln!(md, "**SeekStorm's counts against Lucene's** (mode `count`, shape `default`): per class, the queries whose exact hit count differs, and the first three (SeekStorm vs Lucene).\n")?;
    writeln!(md, "| class | queries | different count | examples |")?;
    writeln!(md, "|---|---:|---:|---|")?;
    for (class, n, diffs) in by_class.values() {
        let ex: Vec<&str> = diffs.iter().take(3).map(String::as_str).collect();
        writeln!(
            md,
            "| {class} | {n} | {} | {} |",
            diffs.len(),
            if ex.is_empty() {
                "–".to_string()
            } else {
                ex.join("; ")
            }
        )?;
    }
    writeln!(md)?;
    Ok(())
}

pub fn detail_section(md: &mut String, results: &Value, engines: &[String]) -> Result<()> {
    let (cells, order) = cells(results);
    if order.is_empty() {
        return Ok(());
    }
    let shapes = shapes_present(results);
    writeln!(md, "## Every query\n")?;
    writeln!(
        md,
        "<details><summary>p50 / p90 / p99 / mean µs and hits per engine, every query, mode and index shape ({} queries)</summary>\n",
        order.len()
    )?;
    let mut header = "| query | class | shape | mode |".to_string();
    let mut sep = "|---|---|---|---|".to_string();
    for e in engines {
        write!(
            header,
            " {e} p50 | {e} p90 | {e} p99 | {e} mean | {e} hits |"
        )?;
        sep.push_str("---:|---:|---:|---:|---:|");
    }
    writeln!(md, "{header}\n{sep}")?;
    for (q, class) in &order {
        for shape in &shapes {
            for mode in MODES {
                let Some(by) = cells.get(&(shape.clone(), mode.to_string(), q.clone())) else {
                    continue;
                };
                let mut row = format!(
                    "| `{}` | {class} | {shape} | {mode} |",
                    q.replace('|', "\\|")
                );
                for e in engines {
                    match by.get(e) {
                        Some(r) => {
                            let rel = if s(&r["hits_relation"]) == "gte" {
                                "≥"
                            } else {
                                ""
                            };
                            write!(
                                row,
                                " {} | {} | {} | {} | {rel}{} |",
                                num(f(&r["p50_us"])),
                                num(f(&r["p90_us"])),
                                num(f(&r["p99_us"])),
                                num(f(&r["mean_us"])),
                                s(&r["hits"])
                            )?
                        }
                        None => row.push_str(" – | – | – | – | – |"),
                    }
                }
                writeln!(md, "{row}")?;
            }
        }
    }
    writeln!(md, "\n</details>\n")?;
    let errors: Vec<&Value> = arr(results, "query")
        .iter()
        .filter(|r| r.get("error").is_some_and(|e| !e.is_null()))
        .collect();
    if !errors.is_empty() {
        writeln!(md, "Queries an engine could not run ({}):\n", errors.len())?;
        for r in errors.iter().take(30) {
            writeln!(
                md,
                "- {} `{}` ({}, shape {}): {}",
                s(&r["engine"]),
                s(&r["query"]),
                s(&r["mode"]),
                shape_of(r),
                s(&r["error"]).replace('\n', " ")
            )?;
        }
        writeln!(md)?;
    }
    Ok(())
}
