//! Do quarry and Lucene give the same answers in a run? Exact hit counts (modes `count` and
//! `top10_count`) and the top-10 ids in order (modes `top10` and `top10_count`), query by query.
//! The smoke run (`run --quick --check-parity`) fails on any difference.
use serde_json::Value;

/// The outcome of comparing two engines' query records.
#[derive(Debug, PartialEq)]
pub enum Parity {
    /// Every (query, mode) both engines ran agrees; the number compared.
    Same(usize),
    /// The comparison could not be made (an engine was not run here), and why.
    Skipped(String),
    /// What differs, one line each (the number compared first).
    Differs(usize, Vec<String>),
}

fn status<'a>(results: &'a Value, engine: &str) -> Option<&'a str> {
    results["meta"]["engines"][engine]["status"].as_str()
}

fn ids(r: &Value) -> Vec<String> {
    r["top"]
        .as_array()
        .map(|t| t.iter().map(|h| h["id"].to_string()).collect())
        .unwrap_or_default()
}

/// Compares engine `a` with engine `b` (quarry with lucene) in one workload's results.
pub fn compare(results: &Value, a: &str, b: &str) -> Parity {
    for e in [a, b] {
        match status(results, e) {
            Some("ran") => {}
            _ => {
                let reason = results["meta"]["engines"][e]["reason"]
                    .as_str()
                    .unwrap_or("not requested");
                return Parity::Skipped(format!("{e} was not run: {reason}"));
            }
        }
    }
    let mut diffs = Vec::new();
    for err in results["errors"].as_array().into_iter().flatten() {
        if err["engine"] == a || err["engine"] == b {
            diffs.push(format!("{} failed: {}", err["engine"], err["error"]));
        }
    }
    let records: Vec<&Value> = results["query"].as_array().into_iter().flatten().collect();
    let find = |engine: &str, query: &Value, mode: &Value| {
        records
            .iter()
            .find(|r| r["engine"] == engine && r["query"] == *query && r["mode"] == *mode)
            .copied()
    };
    let mut compared = 0;
    for x in records.iter().filter(|r| r["engine"] == a) {
        let (query, mode) = (&x["query"], &x["mode"]);
        let Some(y) = find(b, query, mode) else {
            diffs.push(format!("{mode} {query}: {b} has no record"));
            continue;
        };
        compared += 1;
        let (ex, ey) = (x["error"].as_str(), y["error"].as_str());
        if ex.is_some() || ey.is_some() {
            // Both failing is not agreement: neither answered, so nothing was compared.
            diffs.push(format!(
                "{mode} {query}: {a} error {:?}, {b} error {:?}",
                ex.unwrap_or("none"),
                ey.unwrap_or("none")
            ));
            continue;
        }
        let m = mode.as_str().unwrap_or("");
        // top10 counts are lower bounds (engines may skip documents), so only ids compare.
        if !matches!(m, "top10" | "top10_highlight") && x["hits"] != y["hits"] {
            diffs.push(format!(
                "{mode} {query}: {a} {} hits, {b} {} hits",
                x["hits"], y["hits"]
            ));
        }
        if m != "count" && ids(x) != ids(y) {
            diffs.push(format!(
                "{mode} {query}: top ids differ: {a} [{}], {b} [{}]",
                ids(x).join(", "),
                ids(y).join(", ")
            ));
        }
    }
    if records.iter().all(|r| r["engine"] != a) {
        diffs.push(format!("{a} has no query records"));
    }
    if compared == 0 && diffs.is_empty() {
        diffs.push(format!(
            "no query answered by both {a} and {b}: nothing was compared"
        ));
    }
    if diffs.is_empty() {
        Parity::Same(compared)
    } else {
        Parity::Differs(compared, diffs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(engine: &str, q: &str, mode: &str, hits: u64, top: &[u64]) -> Value {
        let top: Vec<Value> = top.iter().map(|i| json!({"id": i, "score": 1.0})).collect();
        json!({"engine": engine, "query": q, "mode": mode, "hits": hits, "top": top})
    }

    fn results(records: Vec<Value>, lucene: &str) -> Value {
        json!({
            "meta": {"engines": {"quarry": {"status": "ran"}, "lucene": {"status": lucene, "reason": "no java"}}},
            "query": records, "errors": [],
        })
    }

    #[test]
    fn same_answers_pass() {
        let r = results(
            vec![
                rec("quarry", "oil", "count", 5, &[]),
                rec("lucene", "oil", "count", 5, &[]),
                rec("quarry", "oil", "top10_count", 5, &[3, 1]),
                rec("lucene", "oil", "top10_count", 5, &[3, 1]),
                // top10 counts are lower bounds and may differ.
                rec("quarry", "oil", "top10", 2, &[3, 1]),
                rec("lucene", "oil", "top10", 5, &[3, 1]),
                rec("quarry", "oil", "top10_highlight", 2, &[3, 1]),
                rec("lucene", "oil", "top10_highlight", 5, &[3, 1]),
            ],
            "ran",
        );
        assert_eq!(compare(&r, "quarry", "lucene"), Parity::Same(4));
    }

    #[test]
    fn differences_fail() {
        let r = results(
            vec![
                rec("quarry", "oil", "count", 5, &[]),
                rec("lucene", "oil", "count", 6, &[]),
                rec("quarry", "oil", "top10", 5, &[1, 3]),
                rec("lucene", "oil", "top10", 5, &[3, 1]),
                rec("quarry", "gas", "count", 1, &[]),
            ],
            "ran",
        );
        match compare(&r, "quarry", "lucene") {
            Parity::Differs(2, d) => {
                assert_eq!(d.len(), 3, "{d:?}");
                assert!(d[0].contains("5 hits") && d[0].contains("6 hits"));
                assert!(d[1].contains("top ids differ"));
                assert!(d[2].contains("no record"));
            }
            other => panic!("{other:?}"),
        }
        let mut r = results(vec![rec("quarry", "oil", "count", 5, &[])], "ran");
        r["query"]
            .as_array_mut()
            .unwrap()
            .push(json!({"engine": "lucene", "query": "oil", "mode": "count", "error": "boom"}));
        assert!(matches!(
            compare(&r, "quarry", "lucene"),
            Parity::Differs(1, _)
        ));
    }

    #[test]
    fn both_engines_failing_is_not_agreement() {
        let r = results(
            vec![
                json!({"engine": "quarry", "query": "oil", "mode": "count", "error": "boom"}),
                json!({"engine": "lucene", "query": "oil", "mode": "count", "error": "bang"}),
            ],
            "ran",
        );
        match compare(&r, "quarry", "lucene") {
            Parity::Differs(1, d) => {
                assert_eq!(d.len(), 1, "{d:?}");
                assert!(d[0].contains("boom") && d[0].contains("bang"), "{d:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_engine_not_run_skips() {
        let r = results(vec![rec("quarry", "oil", "count", 5, &[])], "skipped");
        match compare(&r, "quarry", "lucene") {
            Parity::Skipped(why) => assert!(why.contains("no java"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
