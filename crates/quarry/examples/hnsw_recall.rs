//! Recall@10 of one HNSW graph over the embedding fixture (500 Reuters bodies, 131 W1
//! queries, all-MiniLM-L6-v2), at several beams and seeds: the figure to compare with hnswlib
//! on the same vectors (`scripts/hnsw-recall-peers.py`).
//!
//! Each recall is by id, then (in parentheses) counting a hit that ties the 10th exact score.
//!
//! `cargo run --release -p quarry --example hnsw_recall [M] [EF_CONSTRUCTION]`
use quarry::vector::hnsw::{HnswBuilder, HnswParams};
use quarry::vector::{FlatVectors, Similarity};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let m = args.first().copied().unwrap_or(16);
    let ef_construction = args.get(1).copied().unwrap_or(100);
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/embeddings");
    let header: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("minilm-reuters500.json")).expect("fixture header"),
    )
    .expect("fixture JSON");
    let dims = header["dims"].as_u64().expect("dims") as usize;
    let docs = header["docs"].as_array().expect("docs").len();
    let bytes = std::fs::read(root.join("minilm-reuters500.f32")).expect("fixture vectors");
    let mut all: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    for v in all.chunks_exact_mut(dims) {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
    }
    let (doc_values, query_values) = all.split_at(docs * dims);
    let source = FlatVectors::new(doc_values, dims).expect("vectors");
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    // Per query: the exact top 10 by id, and the 10th best score (a hit scoring as high is as
    // good: the bodies hold a group of 27 identical vectors, whose order is arbitrary).
    let truth: Vec<(Vec<u32>, f32)> = query_values
        .chunks_exact(dims)
        .map(|q| {
            let mut s: Vec<(f32, u32)> = doc_values
                .chunks_exact(dims)
                .enumerate()
                .map(|(i, d)| (dot(q, d), i as u32))
                .collect();
            s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            (s.iter().take(10).map(|x| x.1).collect(), s[9].0)
        })
        .collect();
    for seed in [42u64, 1, 2, 3] {
        let params = HnswParams {
            m,
            ef_construction,
            seed,
        };
        let graph = HnswBuilder::new(&source, Similarity::DotProduct, params).build();
        let mut line = format!("quarry seed {seed} (levels {}):", graph.num_levels());
        for ef in [10, 20, 40, 80] {
            let (mut by_id, mut tied) = (0.0, 0.0);
            for (q, (want, tenth)) in query_values.chunks_exact(dims).zip(&truth) {
                let out =
                    graph.search(&source, Similarity::DotProduct, q, 10, ef, None, usize::MAX);
                by_id += out.hits.iter().filter(|h| want.contains(&h.ord)).count() as f64 / 10.0;
                let d = |h: &&quarry::vector::hnsw::Scored| {
                    dot(q, source_vector(doc_values, dims, h.ord)) >= tenth - 1e-6
                };
                tied += out.hits.iter().filter(d).count() as f64 / 10.0;
            }
            let n = truth.len() as f64;
            line += &format!(" ef {ef}: {:.3} ({:.3})", by_id / n, tied / n);
        }
        let degrees: Vec<usize> = (0..docs as u32)
            .map(|n| graph.neighbors(0, n).len())
            .collect();
        let mut indeg = vec![0usize; docs];
        for n in 0..docs as u32 {
            for &t in graph.neighbors(0, n) {
                indeg[t as usize] += 1;
            }
        }
        // Nodes no level-0 link reaches, and how many of them have an identical twin.
        let orphans: Vec<usize> = (0..docs).filter(|&n| indeg[n] == 0).collect();
        let twins = orphans
            .iter()
            .filter(|&&n| {
                let v = source_vector(doc_values, dims, n as u32);
                (0..docs)
                    .any(|o| o != n && dot(v, source_vector(doc_values, dims, o as u32)) > 0.9999)
            })
            .count();
        line += &format!(
            " | level-0 out-degree mean {:.1}, nodes with in-degree 0: {} ({} with a twin)",
            degrees.iter().sum::<usize>() as f64 / docs as f64,
            orphans.len(),
            twins
        );
        println!("{line}");
    }
}

fn source_vector(values: &[f32], dims: usize, ord: u32) -> &[f32] {
    &values[ord as usize * dims..(ord as usize + 1) * dims]
}
