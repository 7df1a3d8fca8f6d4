//! What did the W2 I/O study find: its Markdown sections, charts and the targets of issue 11.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::charts::{self, Series};
use crate::io_w2::{Limited, Outcome, Probe, W2Settings, W2Study, WARM_SKIP};
use crate::measure::{self, Summary};
use crate::workload;

const MIB: f64 = 1048576.0;

/// Per class: the pooled samples (µs) of every query of the class, rounds `skip..` only.
fn class_samples(p: &Probe, skip: usize) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for q in p.queries.iter().filter(|q| q.error.is_none()) {
        out.entry(q.class.clone())
            .or_default()
            .extend(q.samples.iter().skip(skip));
    }
    out
}

/// Per class summary of pooled samples.
pub fn class_stats(p: &Probe, skip: usize) -> BTreeMap<String, Summary> {
    class_samples(p, skip)
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(c, mut v)| (c, measure::summarize(&mut v)))
        .collect()
}

/// The evicted runs (one process per query) as one probe: the first search of each.
fn evicted_as_probe(o: &Outcome) -> Probe {
    Probe {
        queries: o
            .evicted
            .iter()
            .flat_map(|p| p.queries.iter().cloned())
            .collect(),
        end: serde_json::Value::Null,
        spawn_to_output_us: f64::NAN,
    }
}

fn ms(us: f64) -> String {
    let v = us / 1000.0;
    if !v.is_finite() {
        "–".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn classes(st: &W2Study) -> Vec<String> {
    workload::CLASSES
        .iter()
        .filter(|c| st.sample_per_class.iter().any(|(k, _)| k == *c))
        .map(|c| c.to_string())
        .collect()
}

/// One condition: a table (rows classes, columns configurations, "p50 / p99 / mean" ms), a chart
/// of the p50s, and the per-class stats for the conclusion.
fn condition(
    md: &mut String,
    st: &W2Study,
    title: &str,
    probes: &[(&str, Probe)],
    skip: usize,
    chart: &Path,
) -> Result<BTreeMap<String, BTreeMap<String, Summary>>> {
    let classes = classes(st);
    let stats: BTreeMap<String, BTreeMap<String, Summary>> = probes
        .iter()
        .map(|(l, p)| (l.to_string(), class_stats(p, skip)))
        .collect();
    let _ = write!(md, "| class |");
    for (l, _) in probes {
        let _ = write!(md, " {l} |");
    }
    let _ = writeln!(md, "\n|---|{}", "---:|".repeat(probes.len()));
    for c in &classes {
        let _ = write!(md, "| {c} |");
        for (l, _) in probes {
            match stats[*l].get(c) {
                Some(s) => {
                    let _ = write!(md, " {} / {} / {} |", ms(s.p50), ms(s.p99), ms(s.mean));
                }
                None => md.push_str(" – |"),
            }
        }
        md.push('\n');
    }
    md.push('\n');
    let series: Vec<Series> = probes
        .iter()
        .map(|(l, _)| Series {
            name: l.to_string(),
            values: classes
                .iter()
                .map(|c| stats[*l].get(c).map(|s| s.p50 / 1000.0))
                .collect(),
        })
        .collect();
    match charts::grouped_bars(chart, title, "p50 ms (log)", &classes, &series, true) {
        Ok(()) => {
            let name = chart.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let _ = writeln!(md, "![{title}]({name})\n");
        }
        Err(e) => eprintln!("io: chart {}: {e:#}", chart.display()),
    }
    Ok(stats)
}

fn median_of(v: impl Iterator<Item = f64>) -> f64 {
    measure::median(&v.collect::<Vec<_>>())
}

/// Cold start of one configuration from its evicted runs: (open ms, open -> first result ms).
fn cold_start(o: &Outcome) -> (f64, f64) {
    let open = median_of(
        o.evicted
            .iter()
            .map(|p| p.end["open_us"].as_f64().unwrap_or(f64::NAN)),
    );
    let first = median_of(o.evicted.iter().map(|p| {
        p.end["open_us"].as_f64().unwrap_or(f64::NAN)
            + p.queries
                .first()
                .and_then(|q| q.samples.first().copied())
                .unwrap_or(f64::NAN)
    }));
    (open, first)
}

/// Documents ranked per second over all timed samples (hits of a query times its samples over
/// their total time), and the number of samples that hit the deadline.
fn ranked_per_second(p: &Probe, skip: usize) -> (f64, u64, usize) {
    let (mut docs, mut us, mut n) = (0.0, 0.0, 0);
    let mut late = 0;
    for q in p.queries.iter().filter(|q| q.error.is_none()) {
        let s: Vec<f64> = q.samples.iter().skip(skip).copied().collect();
        docs += q.hits as f64 * s.len() as f64;
        us += s.iter().sum::<f64>();
        n += s.len();
        late += q.timed_out;
    }
    (docs / (us / 1e6), late, n)
}

/// Renders the W2 sections; charts go next to the report as `<stem>-*.png`.
pub fn render(st: &W2Study, s: &W2Settings, out_dir: &Path, stem: &str) -> Result<String> {
    let mut md = String::new();
    setup_section(&mut md, st, s);
    let chart = |n: &str| out_dir.join(format!("{stem}-{n}.png"));
    let (warm_stats, ev_stats, lim_stats) = latency_sections(&mut md, st, &chart)?;
    let cold = cold_start_section(&mut md, st, &chart("coldstart"), stem);
    if st.outcomes.iter().any(|o| o.limited.is_some()) {
        limited_runs_section(&mut md, st);
    }
    marginalia_section(&mut md, st, s);
    md += &conclusion(st, &warm_stats, &ev_stats, &lim_stats, &cold);
    Ok(md)
}

/// Section 4's introduction: the queries, the processes and conditions, the configurations'
/// index sizes and memory limits, and the configurations skipped.
fn setup_section(md: &mut String, st: &W2Study, s: &W2Settings) {
    let sample: Vec<String> = st
        .sample_per_class
        .iter()
        .map(|(c, n)| format!("{n} {c}"))
        .collect();
    let _ = writeln!(
        md,
        "## 4. W2: directory modes and engines\n\n{}.\n\n\
         **Queries.** A deterministic subsample, so the study fits its time budget: per class, \
         queries spread evenly over the class in file order ({}); the evicted runs use {} of \
         those per class (one process each). Lookup: {} `intersection` queries; execution: {} \
         `phrase` queries. Latency per class: percentiles and mean of all timed samples of the \
         class's queries pooled, in ms, shown as `p50 / p99 / mean`. Timed per search: mode \
         `top10` = the search and reading the stored ids of its hits; `count` and `top10_count` \
         = the search alone. One thread, one query at a time.\n\n\
         **Processes.** Every figure comes from a driver process running the `probe` command \
         (round-robin rounds over the queries): quarry with `QUARRY_DIRECTORY` = each mode, \
         Tantivy with its default mmap directory, Lucene with `MMapDirectory` and \
         `NIOFSDirectory` (`--directory mmap|niofs`, query cache off). Indexes: each engine's \
         1-thread index of W2 with default settings (below). *Warm*: every index file read \
         just before; {WARM_SKIP} untimed rounds, then {} timed rounds. *Evicted*: before each \
         process, every index file fsynced and dropped (`POSIX_FADV_DONTNEED`); the process \
         opens the index and runs one query. *Memory-limited*: the index evicted, then the \
         driver runs inside a new cgroup v1 memory group (joined between fork and exec) whose \
         `memory.limit_in_bytes` is the process's own baseline (its `VmHWM` after opening the \
         index, no query) plus {:.0}% of its index size; one untimed round, then {} timed \
         rounds. Page cache is charged to the group, so the index cannot stay cached: the \
         group's files, read after each run, show it (table 4.5).\n",
        st.prepared_description,
        sample.join(", "),
        st.evicted_per_class,
        st.lookup_queries,
        st.exec_queries,
        s.warm_rounds,
        s.cache_fraction * 100.0,
        s.limited_rounds,
    );
    let _ = writeln!(
        md,
        "| configuration | index MB | baseline VmHWM MiB | memory limit MiB |\n|---|---:|---:|---:|"
    );
    for o in &st.outcomes {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {} |",
            o.label,
            o.index_bytes as f64 / 1e6,
            o.baseline_rss as f64 / MIB,
            if o.limited.is_some() {
                format!("{:.1}", o.limit as f64 / MIB)
            } else {
                "–".into()
            }
        );
    }
    md.push('\n');
    for (label, why) in &st.skipped {
        let _ = writeln!(md, "- **{label} skipped**: {why}");
    }
    if let Some(n) = &st.cgroup_note {
        let _ = writeln!(md, "- **No memory-limited runs**: {n}");
    }
    md.push('\n');
}

/// Sections 4.1 to 4.3: per-class latency warm, evicted and memory-limited (when any run was);
/// returns each condition's statistics per configuration.
fn latency_sections(
    md: &mut String,
    st: &W2Study,
    chart: &dyn Fn(&str) -> std::path::PathBuf,
) -> Result<(Stats, Stats, Stats)> {
    *md += "### 4.1 Warm cache: per-class latency, ms (p50 / p99 / mean)\n\n";
    let warm: Vec<(&str, Probe)> = st
        .outcomes
        .iter()
        .map(|o| (o.label.as_str(), o.warm.clone()))
        .collect();
    let warm_stats = condition(
        md,
        st,
        "W2 warm cache: p50 per class",
        &warm,
        WARM_SKIP as usize,
        &chart("warm"),
    )?;
    *md += "### 4.2 Evicted before every query: latency of the first search after open, ms (p50 / p99 / mean)\n\n";
    let ev: Vec<(&str, Probe)> = st
        .outcomes
        .iter()
        .map(|o| (o.label.as_str(), evicted_as_probe(o)))
        .collect();
    let ev_stats = condition(
        md,
        st,
        "W2 evicted: first search p50 per class",
        &ev,
        0,
        &chart("evicted"),
    )?;
    let lim: Vec<(&str, Probe)> = st
        .outcomes
        .iter()
        .filter_map(|o| Some((o.label.as_str(), o.limited.as_ref()?.probe.clone())))
        .collect();
    let lim_stats = if lim.is_empty() {
        BTreeMap::new()
    } else {
        *md += "### 4.3 Memory-limited (cgroup): per-class latency, ms (p50 / p99 / mean)\n\n";
        condition(
            md,
            st,
            "W2 memory-limited: p50 per class",
            &lim,
            1,
            &chart("limited"),
        )?
    };
    Ok((warm_stats, ev_stats, lim_stats))
}

/// Section 4.4: cold start, memory and disk per configuration, with its chart at `chart_path`;
/// returns each configuration's median open → first result, µs.
fn cold_start_section(
    md: &mut String,
    st: &W2Study,
    chart_path: &Path,
    stem: &str,
) -> BTreeMap<String, f64> {
    *md += "### 4.4 Cold start (evicted), memory and disk\n\n\
            Medians over the evicted processes (one per sampled query): open time, open → first \
            result (open + the first search, stored ids included), spawn → exit of the process \
            (JVM start included for Lucene), the driver's own peak RSS (`VmHWM`, the largest), \
            major faults and bytes read from storage (`/proc/self/io` `read_bytes`). Warm columns: \
            the warm run's open time and `VmHWM` after all its rounds.\n\n\
            | configuration | open ms | open → first result ms | spawn → exit ms | peak RSS MiB | major faults | disk MB read | warm: open ms | warm: peak RSS MiB |\n\
            |---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let mut cold: BTreeMap<String, f64> = BTreeMap::new();
    for o in &st.outcomes {
        let (open, first) = cold_start(o);
        cold.insert(o.label.clone(), first);
        let e = |k: &str| {
            median_of(
                o.evicted
                    .iter()
                    .map(|p| p.end[k].as_f64().unwrap_or(f64::NAN)),
            )
        };
        let rss = o
            .evicted
            .iter()
            .filter_map(|p| p.end["peak_rss_bytes"].as_f64())
            .fold(0.0, f64::max);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.0} | {:.1} | {} | {:.1} |",
            o.label,
            ms(open),
            ms(first),
            ms(median_of(o.evicted.iter().map(|p| p.spawn_to_output_us))),
            rss / MIB,
            e("major_faults"),
            e("read_bytes") / 1e6,
            ms(o.warm.end["open_us"].as_f64().unwrap_or(f64::NAN)),
            o.warm.end["peak_rss_bytes"].as_f64().unwrap_or(f64::NAN) / MIB,
        );
    }
    md.push('\n');
    let groups = vec!["open → first result, evicted".to_string()];
    let series: Vec<Series> = st
        .outcomes
        .iter()
        .map(|o| Series {
            name: o.label.clone(),
            values: vec![cold.get(&o.label).map(|v| v / 1000.0)],
        })
        .collect();
    if charts::grouped_bars(
        chart_path,
        "W2 cold start (evicted)",
        "ms (log)",
        &groups,
        &series,
        true,
    )
    .is_ok()
    {
        let _ = writeln!(md, "![cold start]({stem}-coldstart.png)\n");
    }
    cold
}

/// Section 4.5: what the memory groups of the memory-limited runs saw.
fn limited_runs_section(md: &mut String, st: &W2Study) {
    *md += "### 4.5 Memory-limited runs: what the cgroup saw\n\n\
            Read from the group after the driver exited (the page cache it charged stays \
            charged until the group is removed): the limit, the peak usage \
            (`memory.max_usage_in_bytes`), how often the usage hit the limit \
            (`memory.failcnt`), the page cache still charged (`memory.stat` `cache`) and the \
            pages the group read in (`pgpgin`, 4 KiB each); the driver's own `VmHWM` and \
            disk bytes. A peak usage at the limit with a fail count above zero means the \
            kernel reclaimed the group's own pages to make room: the index did not fit.\n\n\
            | configuration | run | limit MiB | peak usage MiB | failcnt | cache MiB | pgpgin MiB | driver VmHWM MiB | disk MB read |\n\
            |---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for o in &st.outcomes {
        for (run, l) in [
            ("top10", &o.limited),
            ("lookup", &o.lookup_limited),
            ("execution", &o.exec_limited),
        ] {
            let Some(Limited { probe, mem }) = l else {
                continue;
            };
            let stat = |k: &str| mem.stat.get(k).copied().unwrap_or(0) as f64;
            let _ = writeln!(
                md,
                "| {} | {run} | {:.1} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                o.label,
                mem.limit_bytes as f64 / MIB,
                mem.max_usage_bytes as f64 / MIB,
                mem.failcnt,
                stat("cache") / MIB,
                stat("pgpgin") * 4096.0 / MIB,
                probe.end["peak_rss_bytes"].as_f64().unwrap_or(f64::NAN) / MIB,
                probe.end["read_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6,
            );
        }
    }
    md.push('\n');
}

/// Section 4.6: the Marginalia benchmarks (lookup and execution).
fn marginalia_section(md: &mut String, st: &W2Study, s: &W2Settings) {
    let _ = writeln!(
        md,
        "### 4.6 The Marginalia benchmarks\n\n\
         *Lookup* (\"to be or not to be\", first benchmark): the time to find every document \
         that contains all terms of a query, exhaustively, unranked: the `count` mode of the \
         {} `intersection` queries (`+a +b`), for every engine its exact count of the AND query. \
         *Execution* (second benchmark): documents ranked per second within a {} ms budget, \
         positions included: mode `top10_count` (score every match, keep the best 10, exact \
         count) of the {} `phrase` queries; quarry stops at the deadline \
         (`SearchOptions::deadline`), Lucene too (`IndexSearcher::setTimeout` with a \
         `QueryTimeoutImpl` per search); Tantivy has no deadline and runs every search to the \
         end. Documents ranked per second = (hits × timed runs) / their total time; `late` = \
         runs stopped by the deadline (their hit count is a lower bound). Warm: {} timed \
         rounds; memory-limited: {} timed rounds after one untimed.\n\n\
         | configuration | lookup warm: p50 / mean ms | lookup limited: p50 / mean ms | execution warm: docs/s (late) | execution limited: docs/s (late) |\n\
         |---|---:|---:|---:|---:|",
        st.lookup_queries, s.deadline_ms, st.exec_queries, s.warm_rounds, s.limited_rounds
    );
    let pooled = |p: &Probe, skip: usize| -> Summary {
        let mut v: Vec<f64> = class_samples(p, skip).into_values().flatten().collect();
        measure::summarize(&mut v)
    };
    for o in &st.outcomes {
        let lw = pooled(&o.lookup_warm, WARM_SKIP as usize);
        let ew = ranked_per_second(&o.exec_warm, WARM_SKIP as usize);
        let (ll, el) = match (&o.lookup_limited, &o.exec_limited) {
            (Some(l), Some(e)) => {
                let s = pooled(&l.probe, 1);
                let r = ranked_per_second(&e.probe, 1);
                (
                    format!("{} / {}", ms(s.p50), ms(s.mean)),
                    format!("{:.0} ({})", r.0, r.1),
                )
            }
            _ => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} / {} | {ll} | {:.0} ({}) | {el} |",
            o.label,
            ms(lw.p50),
            ms(lw.mean),
            ew.0,
            ew.1
        );
    }
    md.push('\n');
}

type Stats = BTreeMap<String, BTreeMap<String, Summary>>;

/// Per class: the fastest configuration by p50 and its lead over the runner-up.
fn winners(stats: &Stats) -> Vec<(String, String, f64, String)> {
    let mut classes: Vec<&String> = stats.values().flat_map(|m| m.keys()).collect();
    classes.sort();
    classes.dedup();
    let order: Vec<&str> = workload::CLASSES.to_vec();
    classes.sort_by_key(|c| order.iter().position(|o| o == c).unwrap_or(99));
    classes
        .into_iter()
        .filter_map(|c| {
            let mut v: Vec<(&String, f64)> = stats
                .iter()
                .filter_map(|(l, m)| Some((l, m.get(c)?.p50)))
                .collect();
            v.sort_by(|a, b| a.1.total_cmp(&b.1));
            let best = v.first()?;
            let (second, lead) = v.get(1).map_or(("–".to_string(), f64::NAN), |s| {
                (s.0.clone(), s.1 / best.1)
            });
            Some((c.clone(), best.0.clone(), lead, second))
        })
        .collect()
}

/// The best quarry configuration's p50 over Tantivy's, per class.
fn quarry_vs_tantivy(stats: &Stats) -> Vec<(String, String, f64)> {
    let Some(t) = stats.get("tantivy-mmap") else {
        return Vec::new();
    };
    t.iter()
        .filter_map(|(c, ts)| {
            let best = stats
                .iter()
                .filter(|(l, _)| l.starts_with("quarry-"))
                .filter_map(|(l, m)| Some((l.clone(), m.get(c)?.p50)))
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((c.clone(), best.0, best.1 / ts.p50))
        })
        .collect()
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**not met**"
    }
}

/// The conclusion section: winners per condition, then the three targets of issue 11.
fn conclusion(
    st: &W2Study,
    warm: &Stats,
    evicted: &Stats,
    limited: &Stats,
    cold: &BTreeMap<String, f64>,
) -> String {
    let mut md = String::from(
        "### 4.7 Conclusion (computed from the tables above)\n\n\
         Fastest configuration per class and condition by p50, and its lead (runner-up p50 / \
         winner p50):\n\n| condition | class | fastest | lead | runner-up |\n|---|---|---|---:|---|\n",
    );
    for (name, stats) in [
        ("warm", warm),
        ("evicted", evicted),
        ("memory-limited", limited),
    ] {
        for (c, best, lead, second) in winners(stats) {
            let _ = writeln!(md, "| {name} | {c} | {best} | {lead:.2}x | {second} |");
        }
    }
    md += "\n**Targets (issue 11).**\n\n";
    let lim = quarry_vs_tantivy(limited);
    if lim.is_empty() {
        md +=
            "- Memory-limited, quarry's best mode <= 0.5x Tantivy per class: not measured here.\n";
    } else {
        let all = lim.iter().all(|(_, _, r)| *r <= 0.5);
        let cells: Vec<String> = lim
            .iter()
            .map(|(c, l, r)| format!("{c} {r:.3}x ({l})"))
            .collect();
        let _ = writeln!(
            md,
            "- Memory-limited, quarry's best mode <= 0.5x Tantivy's p50 per class: {} — {}.",
            verdict(all),
            cells.join(", ")
        );
    }
    let best_cold = cold
        .iter()
        .filter(|(l, _)| l.starts_with("quarry-"))
        .min_by(|a, b| a.1.total_cmp(b.1));
    match (best_cold, cold.get("tantivy-mmap")) {
        (Some((l, q)), Some(t)) => {
            let _ = writeln!(
                md,
                "- Evicted cold start (open → first result) <= 0.5x Tantivy's: {} — {l} {} ms \
                 against {} ms, {:.2}x.",
                verdict(q / t <= 0.5),
                ms(*q),
                ms(*t),
                q / t
            );
        }
        _ => md += "- Evicted cold start <= 0.5x Tantivy's: not measured here.\n",
    }
    match (warm.get("quarry-adaptive"), warm.get("quarry-mmap")) {
        (Some(a), Some(m)) => {
            let cells: Vec<(String, f64)> = a
                .iter()
                .filter_map(|(c, s)| Some((c.clone(), s.p50 / m.get(c)?.p50)))
                .collect();
            let all = cells.iter().all(|(_, r)| *r <= 1.05);
            let text: Vec<String> = cells.iter().map(|(c, r)| format!("{c} {r:.2}x")).collect();
            let _ = writeln!(
                md,
                "- Warm, adaptive within 5% of mmap (p50 ratio per class): {} — {}.",
                verdict(all),
                text.join(", ")
            );
        }
        _ => md += "- Warm, adaptive within 5% of mmap: not measured here.\n",
    }
    let _ = writeln!(md, "\nThe W2 part took {:.0} s.\n", st.seconds);
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(p50: f64) -> Summary {
        Summary {
            p50,
            p90: p50,
            p99: p50,
            mean: p50,
            min: p50,
        }
    }

    fn stats(rows: &[(&str, &[(&str, f64)])]) -> Stats {
        rows.iter()
            .map(|(l, cs)| {
                (
                    l.to_string(),
                    cs.iter().map(|(c, v)| (c.to_string(), s(*v))).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn winners_and_tantivy_ratio() {
        let st = stats(&[
            ("quarry-mmap", &[("term", 4.0), ("phrase", 10.0)]),
            ("quarry-direct", &[("term", 2.0), ("phrase", 30.0)]),
            ("tantivy-mmap", &[("term", 8.0), ("phrase", 12.0)]),
        ]);
        let w = winners(&st);
        assert_eq!(w[0].0, "term");
        assert_eq!(w[0].1, "quarry-direct");
        assert!((w[0].2 - 2.0).abs() < 1e-9);
        assert_eq!(w[1].1, "quarry-mmap");
        let r = quarry_vs_tantivy(&st);
        let term = r.iter().find(|x| x.0 == "term").unwrap();
        assert_eq!(term.1, "quarry-direct");
        assert!((term.2 - 0.25).abs() < 1e-9);
        let phrase = r.iter().find(|x| x.0 == "phrase").unwrap();
        assert!((phrase.2 - 10.0 / 12.0).abs() < 1e-9);
    }

    #[test]
    fn class_stats_pool_rounds_after_skip() {
        let p = Probe {
            queries: vec![
                crate::io_w2::ProbeQuery {
                    class: "term".into(),
                    samples: vec![1000.0, 1.0, 3.0],
                    ..Default::default()
                },
                crate::io_w2::ProbeQuery {
                    class: "term".into(),
                    samples: vec![1000.0, 2.0, 4.0],
                    ..Default::default()
                },
            ],
            end: serde_json::Value::Null,
            spawn_to_output_us: 0.0,
        };
        let st = class_stats(&p, 1);
        assert_eq!(st["term"].p50, 2.0);
        assert_eq!(st["term"].mean, 2.5);
        let (rate, late, n) = ranked_per_second(&p, 1);
        assert_eq!((late, n), (0, 4));
        assert_eq!(rate, 0.0);
    }
}
