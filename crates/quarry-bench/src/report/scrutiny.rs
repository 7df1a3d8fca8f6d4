//! The questions a skeptical reader asks of the verdict table, answered from the same records:
//! how quarry does against the fastest peer *on each query* (not the best peer per class), how
//! many queries it loses and which; the phrase cells without the queries that can use quarry's
//! pair index; and `top10_count` against the peers' best two-call alternative.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{json, Value};

use super::queries::{verdicts, Cells, Verdict};
use super::{f, num, MODES};
use crate::measure::geomean;
use crate::workload::CLASSES;

/// One query against the peer that was fastest on it.
struct Loss {
    query: String,
    ratio: f64,
    peer: String,
    quarry_p50: f64,
    peer_p50: f64,
}

/// Per (mode, class): quarry's p50 over the fastest peer's p50 on each query of `shape` that
/// quarry and at least one peer ran.
fn per_query_ratios(
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
    shape: &str,
) -> BTreeMap<(usize, usize), (String, Vec<Loss>)> {
    let mut out: BTreeMap<(usize, usize), (String, Vec<Loss>)> = BTreeMap::new();
    for ((sh, mode, q), by) in cells {
        let Some(quarry) = by.get("quarry") else {
            continue;
        };
        if sh != shape {
            continue;
        }
        let fastest = by
            .iter()
            .filter(|(e, _)| *e != "quarry" && engines.contains(e))
            .map(|(e, r)| (e, f(&r["p50_us"])))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let (Some((peer, peer_p50)), Some(mi)) = (fastest, MODES.iter().position(|m| m == mode))
        else {
            continue;
        };
        let class = class_of.get(q.as_str()).copied().unwrap_or("mixed");
        let ci = CLASSES
            .iter()
            .position(|c| *c == class)
            .unwrap_or(CLASSES.len());
        let quarry_p50 = f(&quarry["p50_us"]);
        out.entry((mi, ci))
            .or_insert_with(|| (class.to_string(), Vec::new()))
            .1
            .push(Loss {
                query: q.clone(),
                ratio: quarry_p50 / peer_p50,
                peer: peer.clone(),
                quarry_p50,
                peer_p50,
            });
    }
    out
}

/// Whether quarry may answer `query` from its pair index: some quoted phrase holds two adjacent
/// words that are both on [`quarry::pairs::WORDS`] (the words split as the benchmark's
/// analyzers split ASCII text; the W1/W2 queries are ASCII).
pub fn can_use_pairs(query: &str) -> bool {
    query.split('"').skip(1).step_by(2).any(|phrase| {
        let words: Vec<String> = phrase
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        words
            .windows(2)
            .any(|w| quarry::pairs::is_frequent(&w[0]) && quarry::pairs::is_frequent(&w[1]))
    })
}

/// The cells of `shape` whose query `keep` accepts.
fn filtered<'a>(cells: &Cells<'a>, shape: &str, keep: impl Fn(&str) -> bool) -> Cells<'a> {
    cells
        .iter()
        .filter(|((sh, _, q), _)| sh == shape && keep(q))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn ratios(v: &Verdict) -> String {
    format!(
        "{:.2} / {:.2}",
        v.quarry_geo / v.peer_geo.1,
        v.quarry_mean / v.peer_mean.1
    )
}

/// Per peer and query of `shape`: a `top10_count` record whose p50 and mean are the peer's
/// `top10` plus its `count` of the same query, when that sum is below its one-pass figure.
fn two_call_records(cells: &Cells, shape: &str) -> Vec<((String, String, String), String, Value)> {
    let mut out = Vec::new();
    for ((sh, mode, q), by) in cells {
        if sh != shape || mode != "top10_count" {
            continue;
        }
        let part = |m: &str, e: &str| {
            cells
                .get(&(sh.clone(), m.to_string(), q.clone()))
                .and_then(|b| b.get(e))
        };
        for (e, one_pass) in by {
            if e == "quarry" {
                continue;
            }
            let (Some(t), Some(c)) = (part("top10", e), part("count", e)) else {
                continue;
            };
            let p50 = f(&t["p50_us"]) + f(&c["p50_us"]);
            if p50 < f(&one_pass["p50_us"]) {
                let mut r = (*one_pass).clone();
                r["p50_us"] = json!(p50);
                r["mean_us"] = json!(f(&t["mean_us"]) + f(&c["mean_us"]));
                out.push(((sh.clone(), mode.clone(), q.clone()), e.clone(), r));
            }
        }
    }
    out
}

/// Writes the three second looks for one shape, under its verdict table.
pub fn section(
    md: &mut String,
    cells: &Cells,
    class_of: &HashMap<&str, &str>,
    engines: &[String],
    shape: &str,
) -> Result<()> {
    let per_query = per_query_ratios(cells, class_of, engines, shape);
    if per_query.is_empty() {
        return Ok(());
    }
    writeln!(
        md,
        "**Against the fastest peer on each query.** The table above compares quarry with one peer \
         per cell. Here each query is compared with whichever peer was fastest on *that* query (among \
         the peers that ran it): the geometric mean of those per-query p50 ratios, the number of \
         queries on which quarry is slower than that peer, and the five worst (ratio, query, the \
         peer and its p50 against quarry's, µs).\n"
    )?;
    writeln!(
        md,
        "| mode | class | n | geomean of per-query ratios | queries quarry loses | worst five |"
    )?;
    writeln!(md, "|---|---|---:|---:|---:|---|")?;
    for ((mi, _), (class, list)) in &per_query {
        let rs: Vec<f64> = list.iter().map(|l| l.ratio).collect();
        let mut worst: Vec<&Loss> = list.iter().filter(|l| l.ratio > 1.0).collect();
        let lost = worst.len();
        worst.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        let five = worst
            .iter()
            .take(5)
            .map(|l| {
                format!(
                    "{:.2} `{}` ({} {} vs {})",
                    l.ratio,
                    l.query.replace('|', "\\|"),
                    l.peer,
                    num(l.peer_p50),
                    num(l.quarry_p50)
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        writeln!(
            md,
            "| {} | {class} | {} | {:.2} | {lost} | {} |",
            MODES[*mi],
            list.len(),
            geomean(&rs),
            if five.is_empty() { "–" } else { &five }
        )?;
    }
    writeln!(md)?;

    // Phrases without the pair index.
    let is_phrase = |q: &str| class_of.get(q).copied() == Some("phrase");
    let phrases: Vec<&str> = class_of
        .iter()
        .filter(|(q, c)| **c == "phrase" && cells.keys().any(|k| k.0 == shape && k.2 == **q))
        .map(|(q, _)| *q)
        .collect();
    let paired = phrases.iter().filter(|q| can_use_pairs(q)).count();
    if !phrases.is_empty() {
        let without = filtered(cells, shape, |q| is_phrase(q) && !can_use_pairs(q));
        let v_all = verdicts(cells, class_of, engines, shape);
        let v_without = verdicts(&without, class_of, engines, shape);
        writeln!(
            md,
            "**Phrases and quarry's pair index.** quarry also indexes each two adjacent words that are \
             both on a list of {} very frequent words (`of the`, `to be`) as one term, so a phrase of \
             such words reads short pair postings (Lucene's CommonGrams filter does the same; the \
             peers here run without it). {paired} of the {} phrase queries have such a pair. The \
             phrase cells (p50 ratio / mean ratio against the best peer, as above), with and without \
             those queries:\n",
            quarry::pairs::WORDS.len(),
            phrases.len()
        )?;
        writeln!(
            md,
            "| mode | all phrase queries | without the pair-using queries |"
        )?;
        writeln!(md, "|---|---:|---:|")?;
        for mode in MODES {
            let find = |v: &[(String, String, Verdict)]| {
                v.iter()
                    .find(|(m, c, _)| m == mode && c == "phrase")
                    .map(|(_, _, x)| format!("{} (n {})", ratios(x), x.n))
                    .unwrap_or_else(|| "–".into())
            };
            let (a, b) = (find(&v_all), find(&v_without));
            if a != "–" {
                writeln!(md, "| {mode} | {a} | {b} |")?;
            }
        }
        writeln!(md)?;
    }

    // top10_count: one exhaustive pass against two calls.
    let replaced = two_call_records(cells, shape);
    if cells.keys().any(|k| k.0 == shape && k.1 == "top10_count") {
        let mut alt: Cells = filtered(cells, shape, |_| true);
        for (key, engine, r) in &replaced {
            if let Some(by) = alt.get_mut(key) {
                by.insert(engine.clone(), r);
            }
        }
        let (v_one, v_two) = (
            verdicts(cells, class_of, engines, shape),
            verdicts(&alt, class_of, engines, shape),
        );
        writeln!(
            md,
            "**`top10_count`: one pass or two calls.** In `top10_count` every engine is asked for the \
             10 best hits and the exact count in one exhaustive pass (Lucene: a collector that counts \
             every hit; Tantivy: `(TopDocs, Count)`). A peer's application could instead make two \
             calls, `top10` (which may skip documents) and then `count`. Below, each peer's figure per \
             query is the lower of its one-pass time and the sum of its own `top10` and `count` times \
             of that query in this run (the two calls were not timed as one sequence); this replaced \
             {} of the peers' query records. p50 ratio / mean ratio against the best peer:\n",
            replaced.len()
        )?;
        writeln!(
            md,
            "| class | one pass | peers' best of one pass and two calls |"
        )?;
        writeln!(md, "|---|---:|---:|")?;
        for (m, class, one) in v_one.iter().filter(|(m, _, _)| m == "top10_count") {
            let two = v_two
                .iter()
                .find(|(m2, c2, _)| m2 == m && c2 == class)
                .map(|(_, _, x)| ratios(x))
                .unwrap_or_else(|| "–".into());
            writeln!(md, "| {class} | {} | {two} |", ratios(one))?;
        }
        writeln!(md)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(engine: &str, p50: f64, mean: f64) -> Value {
        json!({"engine": engine, "p50_us": p50, "mean_us": mean})
    }

    /// Two queries, quarry and two peers: per query the fastest peer differs; one loss is
    /// listed; Lucene's two calls beat its one pass on `b` and replace it.
    #[test]
    fn fastest_peer_per_query_and_two_calls() {
        let records: Vec<(&str, &str, Value)> = vec![
            // top10_count: on a quarry 10, tantivy 20, lucene 40; on b quarry 30, tantivy 60, lucene 25.
            ("top10_count", "a", rec("quarry", 10.0, 10.0)),
            ("top10_count", "a", rec("tantivy", 20.0, 20.0)),
            ("top10_count", "a", rec("lucene", 40.0, 40.0)),
            ("top10_count", "b", rec("quarry", 30.0, 30.0)),
            ("top10_count", "b", rec("tantivy", 60.0, 60.0)),
            ("top10_count", "b", rec("lucene", 25.0, 25.0)),
            // Lucene's two calls on b: 5 + 10 = 15 < 25; on a: 30 + 30 > 40, not replaced.
            ("top10", "b", rec("lucene", 5.0, 5.0)),
            ("count", "b", rec("lucene", 10.0, 10.0)),
            ("top10", "a", rec("lucene", 30.0, 30.0)),
            ("count", "a", rec("lucene", 30.0, 30.0)),
        ];
        let mut cells: Cells = BTreeMap::new();
        for (mode, q, r) in &records {
            cells
                .entry(("default".into(), mode.to_string(), q.to_string()))
                .or_default()
                .insert(r["engine"].as_str().unwrap().to_string(), r);
        }
        let class_of: HashMap<&str, &str> = [("a", "union"), ("b", "union")].into();
        let engines: Vec<String> = ["quarry", "tantivy", "lucene"].map(String::from).into();
        let per_query = per_query_ratios(&cells, &class_of, &engines, "default");
        let mi = MODES.iter().position(|m| *m == "top10_count").unwrap();
        let ci = CLASSES.iter().position(|c| *c == "union").unwrap();
        let list = &per_query[&(mi, ci)].1;
        let b = list.iter().find(|l| l.query == "b").unwrap();
        assert_eq!((b.peer.as_str(), b.ratio), ("lucene", 30.0 / 25.0));
        let a = list.iter().find(|l| l.query == "a").unwrap();
        assert_eq!((a.peer.as_str(), a.ratio), ("tantivy", 0.5));

        let two = two_call_records(&cells, "default");
        assert_eq!(two.len(), 1);
        assert_eq!((two[0].0 .2.as_str(), two[0].1.as_str()), ("b", "lucene"));
        assert_eq!(f(&two[0].2["p50_us"]), 15.0);

        let mut md = String::new();
        section(&mut md, &cells, &class_of, &engines, "default").unwrap();
        assert!(
            md.contains("| top10_count | union | 2 | 0.77 | 1 | 1.20 `b` (lucene 25.0 vs 30.0) |"),
            "{md}"
        );
        assert!(
            md.contains("this replaced 1 of the peers' query records"),
            "{md}"
        );
    }

    #[test]
    fn pair_using_queries_are_the_phrases_with_two_adjacent_frequent_words() {
        assert!(can_use_pairs("\"to be or not to be\""));
        assert!(can_use_pairs("+x \"the preakness\" \"of the\""));
        assert!(!can_use_pairs("\"the preakness\""));
        assert!(
            !can_use_pairs("the of"),
            "words outside quotes are no phrase"
        );
        assert!(!can_use_pairs("\"st petersburg high school\""));
        assert!(
            can_use_pairs("\"Of The year\""),
            "lower-cased as the analyzers do"
        );
    }
}
