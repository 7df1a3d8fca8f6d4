//! What does each workload index and ask: corpus preparation and query sets for W1 and W2.
//!
//! Every corpus is turned once into a plain `{"id","title","body",...}` JSON-lines file under
//! `bench/results/tmp/<workload>/`, which all drivers then read, so no engine pays for
//! decompression and all see byte-identical input.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::protocol::QuerySpec;

/// A prepared workload: where the corpus and the queries are.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub name: String,
    pub description: String,
    pub docs_path: PathBuf,
    pub docs: u64,
    pub queries_path: PathBuf,
    pub queries: Vec<QuerySpec>,
    /// The query answered by the cold-start runs.
    pub coldstart_query: String,
}

/// The W1 seed queries (issue 4): (query, class).
pub const W1_SEEDS: &[(&str, &str)] = &[
    ("dollar", "term"),
    ("oil", "term"),
    ("trade", "term"),
    ("oil AND price", "intersection"),
    ("trade OR export", "union"),
    ("oil OR trade OR market OR price OR dollar", "union"),
    (
        "oil OR trade OR market OR price OR dollar OR export OR bank OR government OR company OR president",
        "union",
    ),
    ("\"oil prices\"", "phrase"),
    ("\"interest rates\"", "phrase"),
    ("\"to be or not to be\"", "phrase"),
    ("to AND be AND or AND not", "intersection"),
];

/// Query classes in report order. `fuzzy_wildcard`: one-word fuzzy, prefix and wildcard queries
/// derived from the workload's own query terms ([`crate::fuzzy_queries`]); the `highlight` class
/// is the mode `top10_highlight` over the other classes' queries.
pub const CLASSES: &[&str] = &[
    "term",
    "intersection",
    "union",
    "phrase",
    "mixed",
    "fuzzy_wildcard",
];

/// Where the shared data folder is: `$QUARRY_SHARED_DIR`, else `<repo>/../shared`.
pub fn shared_dir(repo: &Path) -> PathBuf {
    match std::env::var_os("QUARRY_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => repo.join("..").join("shared"),
    }
}

pub fn prepare(workload: &str, repo: &Path, tmp: &Path, quick: bool) -> Result<Prepared> {
    match workload {
        "w1" => prepare_w1(repo, &tmp.join("w1")),
        "w2" => prepare_w2(repo, &tmp.join("w2"), quick),
        other => bail!("unknown workload {other:?}: expected w1, w2 or all"),
    }
}

fn write_queries(path: &Path, queries: &[QuerySpec]) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    for q in queries {
        writeln!(out, "{}", serde_json::to_string(q)?)?;
    }
    out.flush()?;
    Ok(())
}

fn count_lines(path: &Path) -> Result<u64> {
    let f = std::fs::File::open(path)?;
    let mut n = 0;
    for line in std::io::BufReader::with_capacity(1 << 20, f).lines() {
        if !line?.trim().is_empty() {
            n += 1;
        }
    }
    Ok(n)
}

fn prepare_w1(repo: &Path, dir: &Path) -> Result<Prepared> {
    std::fs::create_dir_all(dir)?;
    let src = repo.join("data/reuters21578.jsonl.zst");
    let docs_path = dir.join("docs.jsonl");
    if !docs_path.exists() {
        let input = std::fs::File::open(&src)
            .with_context(|| format!("opening the bundled Reuters corpus {}", src.display()))?;
        let tmp_path = dir.join("docs.jsonl.part");
        let mut out = BufWriter::new(std::fs::File::create(&tmp_path)?);
        std::io::copy(&mut zstd::Decoder::new(input)?, &mut out)?;
        out.flush()?;
        drop(out);
        std::fs::rename(&tmp_path, &docs_path)?;
    }
    let docs = count_lines(&docs_path)?;

    let mut queries: Vec<QuerySpec> = W1_SEEDS
        .iter()
        .map(|(q, c)| QuerySpec {
            query: q.to_string(),
            class: c.to_string(),
            name: Some("seed".into()),
            modes: None,
        })
        .collect();
    let public = repo.join("tests/fixtures/reuters-queries-public.jsonl");
    let text = std::fs::read_to_string(&public)
        .with_context(|| format!("reading {}", public.display()))?;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let kind = v["kind"].as_str().unwrap_or("mixed");
        let class = match kind {
            "term" => "term",
            "and" => "intersection",
            "or" => "union",
            "phrase" => "phrase",
            _ => "mixed",
        };
        let query = v["query"]
            .as_str()
            .context("query field missing")?
            .to_string();
        queries.push(QuerySpec {
            query,
            class: class.into(),
            name: Some(format!("public:{kind}")),
            modes: None,
        });
    }
    let public_count = queries.len() - W1_SEEDS.len();
    let fuzzy = crate::fuzzy_queries::load(repo, "w1", false)?;
    let fuzzy_count = fuzzy.len();
    queries.extend(fuzzy);
    let queries_path = dir.join("queries.jsonl");
    write_queries(&queries_path, &queries)?;
    Ok(Prepared {
        name: "w1".into(),
        description: format!(
            "W1: Reuters-21578 (bundled data/reuters21578.jsonl.zst, {docs} stories); {} seed queries + {public_count} \
             public fixture queries + {fuzzy_count} fuzzy/prefix/wildcard queries (bench/queries/w1-fuzzy-wildcard.jsonl)",
            W1_SEEDS.len(),
        ),
        docs_path,
        docs,
        queries_path,
        queries,
        coldstart_query: "oil OR trade OR market OR price OR dollar".into(),
    })
}

/// Documents kept by `--quick` on W2: the first paragraphs in dump order.
pub const W2_QUICK_DOCS: u64 = 50_000;
/// Queries kept per class by `--quick` on W2: the first ones of each class in file order.
pub const W2_QUICK_QUERIES_PER_CLASS: usize = 10;

fn missing_shared(shared: &Path, what: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "W2 needs the shared benchmark data, and {} is missing.\n\
         The shared folder is looked up at $QUARRY_SHARED_DIR, else at {} (the `shared/` folder next to the \
         repository). It must contain data/enwiki-2015-sample/{{AA,AB,AC,AD}}.zst, data/queries/queries.txt and \
         tools/wiki_to_jsonl.py (see shared/data/README.md: the Wikipedia sample comes from the GitHub repository \
         jason-feng/wikiVisual, commit 1c0fac92f29f17c1603bfffbe864e0dfdff66897, folder text/; the queries from \
         quickwit-oss/search-benchmark-game, queries.txt). W1 needs nothing outside the repository: \
         `--workload w1`.",
        what.display(),
        shared.display()
    )
}

fn prepare_w2(repo: &Path, dir: &Path, quick: bool) -> Result<Prepared> {
    let shared = shared_dir(repo);
    let script = shared.join("tools/wiki_to_jsonl.py");
    let sample = shared.join("data/enwiki-2015-sample/AA.zst");
    let qfile = shared.join("data/queries/queries.txt");
    let term_file = shared.join("data/queries/query_term.txt");
    for p in [&script, &sample, &qfile, &term_file] {
        if !p.exists() {
            return Err(missing_shared(&shared, p));
        }
    }
    std::fs::create_dir_all(dir)?;
    let docs_path = dir.join(if quick {
        "docs-quick.jsonl"
    } else {
        "docs.jsonl"
    });
    let marker = docs_path.with_extension("jsonl.done");
    if !marker.exists() {
        eprintln!(
            "[prepare] w2: converting the Wikipedia sample to paragraphs -> {}",
            docs_path.display()
        );
        let part = docs_path.with_extension("jsonl.part");
        let out = std::fs::File::create(&part)?;
        let mut cmd = Command::new("python3");
        cmd.arg(&script).args(["--unit", "paragraph"]);
        if quick {
            cmd.args(["--limit", &W2_QUICK_DOCS.to_string()]);
        }
        let status = cmd
            .current_dir(shared.join("tools"))
            .stdout(Stdio::from(out))
            .status()
            .context("running python3 (needed to convert the Wikipedia sample; see shared/data/README.md)")?;
        if !status.success() {
            bail!("{} --unit paragraph failed with {status}", script.display());
        }
        std::fs::rename(&part, &docs_path)?;
        let n = count_lines(&docs_path)?;
        std::fs::write(&marker, n.to_string())?;
    }
    let docs: u64 = std::fs::read_to_string(&marker)?
        .trim()
        .parse()
        .unwrap_or(0);

    let (mut queries, added_terms) = w2_queries(&qfile, &term_file, quick)?;
    let fuzzy = crate::fuzzy_queries::load(repo, "w2", quick)?;
    let fuzzy_count = fuzzy.len();
    queries.extend(fuzzy);
    let queries_path = dir.join(if quick {
        "queries-quick.jsonl"
    } else {
        "queries.jsonl"
    });
    write_queries(&queries_path, &queries)?;
    let coldstart_query = queries
        .iter()
        .find(|q| q.class == "union")
        .map(|q| q.query.clone())
        .unwrap_or_else(|| "the".into());
    Ok(Prepared {
        name: "w2".into(),
        description: format!(
            "W2: English Wikipedia 2015 sample split into paragraphs ({docs} docs{}); search-benchmark-game \
             queries.txt plus the {added_terms} single-term queries of query_term.txt not already in it, as class \
             term, and {fuzzy_count} fuzzy/prefix/wildcard queries of bench/queries/w2-fuzzy-wildcard.jsonl ({} queries{}); \
             classes from the first tag (negated, intersection_union and two-phase-critic count as mixed)",
            if quick { format!(", --quick: the first {W2_QUICK_DOCS} paragraphs in dump order") } else { String::new() },
            queries.len(),
            if quick {
                format!(
                    ", --quick: the first {W2_QUICK_QUERIES_PER_CLASS} of each class in file order, {} of each \
                     fuzzy/wildcard kind",
                    crate::fuzzy_queries::QUICK_PER_KIND
                )
            } else {
                String::new()
            },
        ),
        docs_path,
        docs,
        queries_path,
        queries,
        coldstart_query,
    })
}

/// The W2 query set: every line of `queries.txt` (class = first tag), then every line of
/// `query_term.txt` (class `term`) whose query is not already in the set; with `quick`, only
/// the first [`W2_QUICK_QUERIES_PER_CLASS`] of each class. Returns the set and how many
/// queries `query_term.txt` added.
pub fn w2_queries(qfile: &Path, term_file: &Path, quick: bool) -> Result<(Vec<QuerySpec>, usize)> {
    let text =
        std::fs::read_to_string(qfile).with_context(|| format!("reading {}", qfile.display()))?;
    let terms = std::fs::read_to_string(term_file)
        .with_context(|| format!("reading {}", term_file.display()))?;
    let mut queries: Vec<QuerySpec> = Vec::new();
    let mut seen = std::collections::HashSet::<String>::new();
    let mut per_class = std::collections::HashMap::<String, usize>::new();
    let mut added_terms = 0;
    let lines = text
        .lines()
        .enumerate()
        .map(|(n, l)| (qfile, n, l, false))
        .chain(
            terms
                .lines()
                .enumerate()
                .map(|(n, l)| (term_file, n, l, true)),
        );
    for (file, n, line, from_terms) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a {{query, tags}} JSON line",
                file.display(),
                n + 1
            )
        })?;
        let tag = v["tags"]
            .get(0)
            .and_then(|t| t.as_str())
            .unwrap_or("mixed")
            .to_string();
        let class = match tag.as_str() {
            _ if from_terms => "term".to_string(),
            "term" | "intersection" | "union" | "phrase" => tag.clone(),
            _ => "mixed".into(), // negated, intersection_union, two-phase-critic
        };
        let query = v["query"]
            .as_str()
            .with_context(|| format!("{}:{}: query field missing", file.display(), n + 1))?
            .to_string();
        if from_terms && seen.contains(&query) {
            continue;
        }
        let c = per_class.entry(class.clone()).or_default();
        if quick && *c >= W2_QUICK_QUERIES_PER_CLASS {
            continue;
        }
        *c += 1;
        seen.insert(query.clone());
        if from_terms {
            added_terms += 1;
        }
        queries.push(QuerySpec {
            query,
            class,
            name: Some(if from_terms {
                "term (query_term.txt)".into()
            } else {
                tag
            }),
            modes: None,
        });
    }
    Ok((queries, added_terms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_queries() -> Option<(PathBuf, PathBuf)> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let q = shared_dir(&repo).join("data/queries");
        let pair = (q.join("queries.txt"), q.join("query_term.txt"));
        (pair.0.exists() && pair.1.exists()).then_some(pair)
    }

    #[test]
    fn w2_query_set_has_the_term_class() {
        let dir = std::env::temp_dir().join(format!("quarry-bench-w2q-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (qf, tf) = (dir.join("queries.txt"), dir.join("query_term.txt"));
        std::fs::write(
            &qf,
            "{\"query\": \"the\", \"tags\": [\"term\"]}\n\
             {\"query\": \"+a +b\", \"tags\": [\"intersection\", \"global\"]}\n\
             {\"query\": \"x -y\", \"tags\": [\"negated\"]}\n",
        )
        .unwrap();
        std::fs::write(
            &tf,
            "{\"query\": \"the\", \"tags\": [\"term\"]}\n{\"query\": \"world\", \"tags\": [\"term\"]}\n\n\
             {\"query\": \"state\", \"tags\": [\"term\"]}\n",
        )
        .unwrap();
        let (qs, added) = w2_queries(&qf, &tf, false).unwrap();
        let got: Vec<(&str, &str)> = qs
            .iter()
            .map(|q| (q.query.as_str(), q.class.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("the", "term"),
                ("+a +b", "intersection"),
                ("x -y", "mixed"),
                ("world", "term"),
                ("state", "term")
            ]
        );
        assert_eq!(added, 2);
        let (quick, _) = w2_queries(&qf, &tf, true).unwrap();
        assert_eq!(quick.len(), 5);
        std::fs::write(&tf, "not json\n").unwrap();
        let err = w2_queries(&qf, &tf, false).unwrap_err();
        assert!(format!("{err:#}").contains("query_term.txt:1"), "{err:#}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// On the real shared data (skipped when ../shared is absent): 115 term queries in all.
    #[test]
    fn shared_w2_query_set_has_115_term_queries() {
        let Some((qf, tf)) = shared_queries() else {
            eprintln!("shared data not found; skipped");
            return;
        };
        let (qs, added) = w2_queries(&qf, &tf, false).unwrap();
        assert_eq!(qs.iter().filter(|q| q.class == "term").count(), 115);
        assert_eq!(added, 114);
        assert_eq!(qs.len(), 962 + 114);
        let (quick, _) = w2_queries(&qf, &tf, true).unwrap();
        assert_eq!(quick.iter().filter(|q| q.class == "term").count(), 10);
    }
}
