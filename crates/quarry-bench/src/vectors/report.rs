//! The vector benchmark's report: Markdown tables (build, exact scan vs the bandwidth limit,
//! recall@k vs queries per second per engine, the operating point at recall ≥ 0.95, filtered,
//! hybrid, loading, the targets checked against the figures) and two PNG charts
//! (recall vs QPS curves, build time).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use serde_json::{json, Value};

use crate::charts::{self, Series};

/// The recall the operating points and targets are read at.
pub const TARGET_RECALL: f64 = 0.95;

/// Sequential read bandwidth on one core: of a buffer the size of the scanned vectors (what an
/// exact scan streams, cache effects included) and of main memory (the codec micro-benchmark's
/// buffer, 4x the last-level cache), bytes/s.
pub fn bandwidth(vector_bytes: usize) -> Value {
    let llc = crate::codecs::last_level_cache_bytes();
    let main = (llc.unwrap_or(64 << 20) * 4).clamp(256 << 20, 2048 << 20);
    let same = crate::codecs::memory_bandwidth(vector_bytes.max(1 << 20));
    let memory = crate::codecs::memory_bandwidth(main);
    json!({
        "vector_bytes": vector_bytes,
        "same_size_bytes_per_sec": same,
        "main_memory_bytes_per_sec": memory,
        "main_memory_buffer_bytes": main,
        "last_level_cache_bytes": llc,
        "limit_us_same_size": vector_bytes as f64 / same * 1e6,
        "limit_us_main_memory": vector_bytes as f64 / memory * 1e6,
    })
}

pub fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    })
}

fn recs<'a>(r: &'a Value, op: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    r["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |v| v["op"] == op)
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

fn us(v: &Value) -> String {
    match f(v) {
        Some(x) if x >= 10_000.0 => format!("{:.1} ms", x / 1000.0),
        Some(x) if x >= 1000.0 => format!("{:.2} ms", x / 1000.0),
        Some(x) => format!("{x:.0} µs"),
        None => "—".into(),
    }
}

fn mb(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1} MB", x / 1e6),
        None => "—".into(),
    }
}

fn num(v: &Value, digits: usize) -> String {
    match f(v) {
        Some(x) => format!("{x:.digits$}"),
        None => "—".into(),
    }
}

/// Queries per second from the median latency (1 / p50): on a machine shared with other jobs
/// the mean is dragged by preemptions, the median much less.
pub fn median_qps(v: &Value) -> Option<f64> {
    f(&v["p50_us"]).filter(|p| *p > 0.0).map(|p| 1e6 / p)
}

/// One engine's sweep: its name and points (ef, recall, QPS from the median, p50).
pub type Curve = (String, Vec<(f64, f64, f64, f64)>);

/// Engine → its sweep points (ef, recall, QPS from the median, p50), in ef order.
pub fn curves(r: &Value) -> Vec<Curve> {
    let mut out: Vec<Curve> = Vec::new();
    for v in recs(r, "sweep") {
        let e = v["engine"].as_str().unwrap_or("?").to_string();
        let p = (
            f(&v["ef"]).unwrap_or(0.0),
            f(&v["recall"]).unwrap_or(0.0),
            median_qps(v).unwrap_or(0.0),
            f(&v["p50_us"]).unwrap_or(0.0),
        );
        match out.iter_mut().find(|(n, _)| *n == e) {
            Some((_, pts)) => pts.push(p),
            None => out.push((e, vec![p])),
        }
    }
    out
}

/// The fastest sweep point at recall ≥ [`TARGET_RECALL`]: (ef, recall, qps).
pub fn operating_point(points: &[(f64, f64, f64, f64)]) -> Option<(f64, f64, f64)> {
    points
        .iter()
        .filter(|p| p.1 >= TARGET_RECALL)
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|p| (p.0, p.1, p.2))
}

fn engine_qps_at_target(r: &Value, engine: &str) -> Option<f64> {
    curves(r)
        .into_iter()
        .find(|(e, _)| e == engine)
        .and_then(|(_, p)| operating_point(&p))
        .map(|p| p.2)
}

fn build_seconds(r: &Value, engine: &str) -> Option<f64> {
    recs(r, "build")
        .find(|v| v["engine"] == engine)
        .and_then(|v| f(&v["seconds"]))
}

fn exact_p50(r: &Value, engine: &str) -> Option<f64> {
    recs(r, "exact")
        .find(|v| v["engine"] == engine)
        .and_then(|v| f(&v["p50_us"]))
}

/// The targets, each checked against this run's figures: (target, figures, met).
pub fn targets(r: &Value) -> Vec<(String, String, Option<bool>)> {
    let mut t = Vec::new();
    let bw = &r["bandwidth"];
    let q_exact = exact_p50(r, "quarry-flat");
    let limit = f(&bw["limit_us_main_memory"]);
    let limit_same = f(&bw["limit_us_same_size"]);
    t.push((
        "exact kNN within 80 % of the bandwidth limit on one thread (limit / p50 ≥ 0.8)".into(),
        format!(
            "p50 {}; limit {} (main memory), {} (a read of the same bytes)",
            us(&json!(q_exact)),
            us(&json!(limit)),
            us(&json!(limit_same))
        ),
        q_exact.zip(limit).map(|(q, l)| l / q >= 0.8),
    ));
    let faiss = exact_p50(r, "faiss-flat");
    t.push((
        "exact kNN no slower than FAISS flat (p50)".into(),
        format!(
            "quarry {} vs FAISS {}",
            us(&json!(q_exact)),
            us(&json!(faiss))
        ),
        q_exact.zip(faiss).map(|(q, f)| q <= f),
    ));
    let nvs = exact_p50(r, "nvs");
    t.push((
        "exact kNN faster than native-vector-store (p50, one thread each)".into(),
        format!("quarry {} vs nvs {}", us(&json!(q_exact)), us(&json!(nvs))),
        q_exact.zip(nvs).map(|(q, n)| q < n),
    ));
    let qh = engine_qps_at_target(r, "quarry-hnsw");
    let lucene = engine_qps_at_target(r, "lucene-hnsw");
    t.push((
        format!("HNSW at recall@10 ≥ {TARGET_RECALL}: ≥ 1.5x Lucene's QPS"),
        format!(
            "quarry {} QPS vs Lucene {} QPS ({}x)",
            num(&json!(qh), 0),
            num(&json!(lucene), 0),
            num(&json!(qh.zip(lucene).map(|(a, b)| a / b)), 2)
        ),
        qh.zip(lucene).map(|(a, b)| a >= 1.5 * b),
    ));
    for peer in ["hnswlib", "faiss-hnsw", "usearch"] {
        let p = engine_qps_at_target(r, peer);
        t.push((
            format!("HNSW at recall@10 ≥ {TARGET_RECALL}: ahead of {peer}"),
            format!(
                "quarry {} QPS vs {peer} {} QPS",
                num(&json!(qh), 0),
                num(&json!(p), 0)
            ),
            qh.zip(p).map(|(a, b)| a > b),
        ));
    }
    let qb = build_seconds(r, "quarry-hnsw");
    let lb = build_seconds(r, "lucene-hnsw");
    t.push((
        "graph build no slower than Lucene's (float32, one thread)".into(),
        format!(
            "quarry {} s vs Lucene {} s",
            num(&json!(qb), 1),
            num(&json!(lb), 1)
        ),
        qb.zip(lb).map(|(q, l)| q <= l),
    ));
    let q8 = engine_qps_at_target(r, "quarry-hnsw-int8");
    t.push((
        format!(
            "int8 reaches recall@10 ≥ {TARGET_RECALL} (re-scored) at ≥ 1.5x the float graph's QPS"
        ),
        format!(
            "int8 {} QPS vs float {} QPS ({}x)",
            num(&json!(q8), 0),
            num(&json!(qh), 0),
            num(&json!(q8.zip(qh).map(|(a, b)| a / b)), 2)
        ),
        match (q8, qh) {
            (Some(a), Some(b)) => Some(a >= 1.5 * b),
            (None, Some(_)) => Some(false),
            _ => None,
        },
    ));
    t
}

/// Writes `<stem>.md` and the charts into `out`; returns the Markdown path.
pub fn write(r: &Value, out: &Path, stem: &str) -> Result<PathBuf> {
    let mut md = String::new();
    let d = &r["data"];
    let p = &r["params"];
    writeln!(
        md,
        "# Vector search: {} ({})\n",
        d["name"].as_str().unwrap_or("?"),
        r["date"].as_str().unwrap_or("")
    )?;
    writeln!(
        md,
        "- Commit `{}`; command `{}`",
        r["commit"].as_str().unwrap_or("?"),
        r["command"].as_str().unwrap_or("?")
    )?;
    writeln!(md, "- Machine: {} ({} cores, shared with other jobs: compare engines within this run, not across runs)", r["machine"]["cpu"].as_str().unwrap_or("?"), r["machine"]["cores"])?;
    writeln!(md, "- Data: {}", d["description"].as_str().unwrap_or("?"))?;
    writeln!(
        md,
        "- {} documents, {} queries, {} dims; vectors {}",
        d["docs"],
        d["queries"],
        d["dims"],
        mb(&d["vector_bytes"])
    )?;
    if let Some(t) = f(&d["embedding"]["docs"]["texts_per_second"]) {
        writeln!(
            md,
            "- Embedding (scripts/vectors-embed.py, CPU): {t:.0} documents/s, {} torch threads",
            d["embedding"]["docs"]["threads"]
        )?;
    }
    writeln!(md, "- HNSW m = {}, ef_construction = {} for every engine; k = {}; sweep of num_candidates / ef: {}; filtered searches: num_candidates {}", p["m"], p["ef_construction"], p["k"], p["ef"], p["filter_candidates"])?;
    writeln!(md, "- Every engine answers the same query vectors one at a time on one thread (FAISS: `omp_set_num_threads(1)`, OMP_NUM_THREADS=1; hnswlib/usearch: threads=1; Lucene: one searcher thread, no executor; quarry: one thread); only the search calls are timed, after a warm-up. QPS = 1 / median latency (the mean-based figure is `qps` in the JSON). Recall@{} is against the exact top-{} by brute force.", p["k"], p["k"])?;
    writeln!(
        md,
        "- Truth computed in {:.1} s.\n",
        f(&r["truth_seconds"]).unwrap_or(0.0)
    )?;

    writeln!(
        md,
        "## Targets (issue 29 item 5), checked against this run\n"
    )?;
    writeln!(md, "| target | figures | met |\n|---|---|---|")?;
    for (t, figs, met) in targets(r) {
        let m = match met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "not measured",
        };
        writeln!(md, "| {t} | {figs} | {m} |")?;
    }

    writeln!(md, "\n## Build\n")?;
    writeln!(md, "| engine | build s | index bytes | vector file bytes | RSS delta | note |\n|---|---:|---:|---:|---:|---|")?;
    for v in recs(r, "build") {
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            num(&v["seconds"], 2),
            mb(&v["index_bytes"]),
            mb(&v["vector_file_bytes"]),
            mb(&v["rss_delta_bytes"]),
            v["note"].as_str().unwrap_or("")
        )?;
    }
    writeln!(md, "\nRSS delta: the process's resident set after building (quarry: after building, opening and running every search of that index) minus before; for quarry it includes the memory-mapped index pages touched.")?;

    writeln!(
        md,
        "\n## Exact kNN vs the memory-bandwidth limit (one thread)\n"
    )?;
    let bw = &r["bandwidth"];
    writeln!(md, "Scanned bytes: {} of float32 vectors. Sequential read on one core: {:.1} GB/s from main memory (codec micro-benchmark's method: sum of u64 words, best of 3, buffer {}), {:.1} GB/s over a buffer of the scan's size. Limit = bytes / bandwidth: **{}** (main memory), {} (same-size buffer).\n",
        mb(&bw["vector_bytes"]), f(&bw["main_memory_bytes_per_sec"]).unwrap_or(0.0) / 1e9, mb(&bw["main_memory_buffer_bytes"]), f(&bw["same_size_bytes_per_sec"]).unwrap_or(0.0) / 1e9, us(&bw["limit_us_main_memory"]), us(&bw["limit_us_same_size"]))?;
    writeln!(md, "| engine | p50 | p99 | QPS | recall@k | limit / p50 | threads |\n|---|---:|---:|---:|---:|---:|---|")?;
    for v in recs(r, "exact") {
        let ratio = f(&bw["limit_us_main_memory"])
            .zip(f(&v["p50_us"]))
            .map(|(l, p)| l / p);
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            us(&v["p50_us"]),
            us(&v["p99_us"]),
            num(&json!(median_qps(v)), 0),
            num(&v["recall"], 4),
            num(&json!(ratio), 2),
            v["threads"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| "1".into())
        )?;
    }

    writeln!(md, "\n## Recall@{} vs queries per second\n", p["k"])?;
    writeln!(md, "![recall vs QPS]({stem}-recall-qps.png)\n")?;
    writeln!(md, "QPS = 1 / median latency (one thread); the mean-based figure (queries / summed latency) is in the JSON record as `qps`.\n")?;
    writeln!(md, "| engine | ef / num_candidates | recall@k | QPS | p50 | p99 |\n|---|---:|---:|---:|---:|---:|")?;
    for v in recs(r, "sweep") {
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            v["ef"],
            num(&v["recall"], 4),
            num(&json!(median_qps(v)), 0),
            us(&v["p50_us"]),
            us(&v["p99_us"])
        )?;
    }
    writeln!(
        md,
        "\n### Operating point: the fastest setting at recall@k ≥ {TARGET_RECALL}\n"
    )?;
    writeln!(
        md,
        "| engine | ef | recall@k | QPS | vs quarry-hnsw |\n|---|---:|---:|---:|---:|"
    )?;
    let cs = curves(r);
    let qh = engine_qps_at_target(r, "quarry-hnsw");
    for (e, pts) in &cs {
        match operating_point(pts) {
            Some((ef, rc, qps)) => writeln!(
                md,
                "| {e} | {ef} | {rc:.4} | {qps:.0} | {} |",
                num(&json!(qh.map(|q| qps / q)), 2)
            )?,
            None => writeln!(
                md,
                "| {e} | — | best {:.4} | — | — |",
                pts.iter().map(|p| p.1).fold(0.0, f64::max)
            )?,
        }
    }

    writeln!(md, "\n## Filtered kNN\n")?;
    writeln!(md, "A keyword filter matching 1 %, 10 % or 50 % of the documents (a fixed hash of the row), num_candidates {}; recall against the exact top-k among the matching documents.\n", p["filter_candidates"])?;
    writeln!(
        md,
        "| engine | selectivity | recall@k | p50 | p99 | QPS |\n|---|---:|---:|---:|---:|---:|"
    )?;
    for v in recs(r, "filtered") {
        writeln!(
            md,
            "| {} | {} % | {} | {} | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            v["selectivity"],
            num(&v["recall"], 4),
            us(&v["p50_us"]),
            us(&v["p99_us"]),
            num(&json!(median_qps(v)), 0)
        )?;
    }

    writeln!(md, "\n## Hybrid (BM25 + kNN)\n")?;
    writeln!(
        md,
        "| engine | fusion | queries | p50 | p99 | QPS |\n|---|---|---:|---:|---:|---:|"
    )?;
    for v in recs(r, "hybrid") {
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            v["fusion"].as_str().unwrap_or(""),
            v["queries"],
            us(&v["p50_us"]),
            us(&v["p99_us"]),
            num(&json!(median_qps(v)), 0)
        )?;
    }

    writeln!(
        md,
        "\n## From a directory of native-vector-store JSON files to the first answer\n"
    )?;
    writeln!(md, "| engine | docs | files | to loaded/committed | to first answer | threads | how |\n|---|---:|---:|---:|---:|---|---|")?;
    for v in recs(r, "load") {
        writeln!(
            md,
            "| {} | {} | {} | {} s | {} s | {} | {} |",
            v["engine"].as_str().unwrap_or("?"),
            v["docs"],
            v["files"],
            num(&v["seconds_to_commit"], 2),
            num(&v["seconds_to_first_answer"], 2),
            v["threads"],
            v["note"].as_str().unwrap_or("")
        )?;
    }

    let skipped = r["skipped"].as_array().cloned().unwrap_or_default();
    if !skipped.is_empty() {
        writeln!(md, "\n## Not run\n")?;
        for s in skipped {
            writeln!(
                md,
                "- {}: {}",
                s["engine"].as_str().unwrap_or("?"),
                s["reason"].as_str().unwrap_or("").replace('\n', " ")
            )?;
        }
    }
    let versions: Vec<String> = recs(r, "build")
        .filter_map(|v| {
            Some(format!(
                "{} {}",
                v["engine"].as_str()?,
                v["version"].as_str()?
            ))
        })
        .collect();
    if !versions.is_empty() {
        writeln!(md, "\nVersions: {}.", versions.join(", "))?;
    }

    if let Err(e) = recall_chart(
        &out.join(format!("{stem}-recall-qps.png")),
        &cs,
        r["params"]["k"].as_u64().unwrap_or(10),
    ) {
        eprintln!("[vectors] no recall chart: {e:#}");
    }
    let builds: Vec<(String, f64)> = recs(r, "build")
        .filter_map(|v| Some((v["engine"].as_str()?.to_string(), f(&v["seconds"])?)))
        .collect();
    if !builds.is_empty() {
        let path = out.join(format!("{stem}-build.png"));
        let series: Vec<Series> = builds
            .iter()
            .map(|(e, s)| Series {
                name: e.clone(),
                values: vec![Some(*s)],
            })
            .collect();
        match charts::grouped_bars(
            &path,
            "Index build time (one thread)",
            "seconds",
            &["build".into()],
            &series,
            false,
        ) {
            Ok(()) => writeln!(md, "\n![build time]({stem}-build.png)")?,
            Err(e) => eprintln!("[vectors] no build chart: {e:#}"),
        }
    }
    let path = out.join(format!("{stem}.md"));
    std::fs::write(&path, md)?;
    Ok(path)
}

fn color(i: usize, engine: &str) -> RGBColor {
    if engine.starts_with("quarry") {
        return if engine.ends_with("int8") {
            RGBColor(170, 70, 0)
        } else {
            RGBColor(230, 120, 20)
        };
    }
    if engine.starts_with("lucene") {
        return if engine.contains("int") {
            RGBColor(140, 200, 120)
        } else {
            RGBColor(60, 160, 70)
        };
    }
    const OTHERS: [RGBColor; 5] = [
        RGBColor(40, 110, 200),
        RGBColor(150, 60, 170),
        RGBColor(200, 40, 40),
        RGBColor(20, 160, 160),
        RGBColor(120, 120, 120),
    ];
    OTHERS[i % OTHERS.len()]
}

/// Recall@k (x) vs queries per second (y, log), one line per engine.
pub fn recall_chart(path: &Path, curves: &[Curve], k: u64) -> Result<()> {
    charts::register_font();
    let pts: Vec<(f64, f64)> = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| (p.1, p.2)))
        .filter(|p| p.1 > 0.0)
        .collect();
    if pts.is_empty() {
        return Err(anyhow!("no sweep points"));
    }
    let xmin = pts.iter().map(|p| p.0).fold(1.0, f64::min).min(0.9) - 0.01;
    let ymin = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min) / 1.5;
    let ymax = pts.iter().map(|p| p.1).fold(0.0, f64::max) * 3.0;
    let root = BitMapBackend::new(path, (1000, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Recall@{k} vs queries per second (one thread; up and right is better)"),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(xmin..1.001, (ymin..ymax).log_scale())
        .map_err(|e| anyhow!("{e:?}"))?;
    chart
        .configure_mesh()
        .x_desc(format!("recall@{k}"))
        .y_desc("queries per second")
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    for (i, (e, p)) in curves.iter().enumerate() {
        let c = color(i, e);
        let line: Vec<(f64, f64)> = p.iter().map(|p| (p.1, p.2)).filter(|p| p.1 > 0.0).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
            .map_err(|e| anyhow!("{e:?}"))?
            .label(e.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        chart
            .draw_series(
                line.iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, c.filled())),
            )
            .map_err(|e| anyhow!("{e:?}"))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    root.present()
        .map_err(|e| anyhow!("writing {}: {e:?}", path.display()))?;
    Ok(())
}
