//! The vector benchmark's code path on synthetic data (no downloads, no peers): quarry's three
//! indexes, the sweep, filters, hybrid, the JSON-directory load, and the report.

use super::*;

#[test]
fn quick_synthetic_run_writes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let args = VectorsArgs {
        data: "synthetic".into(),
        quick: true,
        engines: None,
        out: Some(dir.path().join("out")),
        cache: Some(dir.path().join("cache")),
        docs: Some(1_500),
        partial: false,
        dims: 384,
        queries: Some(20),
        k: 10,
        m: 16,
        ef_construction: 100,
        ef: "10,40,160".into(),
        filter_candidates: 100,
        python: None,
        lucene_jar: None,
        nvs: None,
        repo: None,
    };
    let repo = crate::orchestrator::find_repo(None).unwrap();
    let cache = dir.path().join("cache");
    let r = measure(&args, &repo, &cache).unwrap();
    let results = r["results"].as_array().unwrap();
    let get = |engine: &str, op: &str| {
        results
            .iter()
            .filter(|v| v["engine"] == engine && v["op"] == op)
            .cloned()
            .collect::<Vec<_>>()
    };
    // The exact scan finds the exact answers (row numbers map back through `seq`).
    let exact = get("quarry-flat", "exact");
    assert!(exact[0]["recall"].as_f64().unwrap() > 0.999, "{exact:?}");
    // The widest beam finds nearly all of them, float and int8 (re-scored).
    for e in ["quarry-hnsw", "quarry-hnsw-int8"] {
        let sweep = get(e, "sweep");
        assert_eq!(sweep.len(), 3);
        assert!(sweep[2]["recall"].as_f64().unwrap() > 0.9, "{e}: {sweep:?}");
        assert_eq!(get(e, "filtered").len(), 3);
        for v in get(e, "filtered") {
            assert!(v["recall"].as_f64().unwrap() > 0.8, "{e}: {v}");
        }
    }
    assert_eq!(get("quarry-flat", "hybrid").len(), 1);
    let load = get("quarry-flat", "load");
    assert_eq!(load[0]["docs"], 1_500);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let md = report::write(&r, &out, "t").unwrap();
    let text = std::fs::read_to_string(md).unwrap();
    assert!(
        text.contains("## Recall@10 vs queries per second"),
        "{text}"
    );
    assert!(out.join("t-recall-qps.png").exists());
}

#[test]
fn exact_top_k_keeps_the_best_in_order() {
    let docs = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8, 0.8, 0.6];
    let got = exact_top_k(&docs, 2, &[1.0, 0.0], 3, &|_| true);
    assert_eq!(got, vec![0, 3, 2]);
    let got = exact_top_k(&docs, 2, &[1.0, 0.0], 2, &|r| r != 0);
    assert_eq!(got, vec![3, 2]);
    assert_eq!(recall(&[vec![0, 3]], &[vec![0, 2]], 2), 0.5);
}
