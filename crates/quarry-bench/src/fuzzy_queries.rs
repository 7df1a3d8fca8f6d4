//! Which fuzzy, prefix and wildcard queries does the `fuzzy_wildcard` class ask: user-style
//! misspellings and partial words derived from a workload's own query terms with a fixed seed,
//! generated once into a committed file (`bench/queries/<workload>-fuzzy-wildcard.jsonl`) by
//! `quarry-bench gen-fuzzy-queries --workload <w>`, so that every run and every engine asks the
//! same queries.
//!
//! Four kinds, in turn: `typo~` (a word with one or two random edits: substitution, deletion,
//! insertion or transposition of neighbours, searched as Lucene's default `FuzzyQuery`: 2 edits,
//! prefix length 0, 50 expansions, transpositions), `pre*` (the first 3 to len - 1 characters),
//! `wo?d` (one character after the first replaced by `?`) and `w*d` (one or two characters kept
//! at each end, at least one left out).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::protocol::QuerySpec;

/// The class name of these queries in records and reports.
pub const CLASS: &str = "fuzzy_wildcard";
/// The modes these queries run in: not `top10_highlight` (Tantivy's snippet generator marks no
/// term of an automaton query, so the engines would not do the same work).
pub const MODES: &[&str] = &["top10", "top10_count", "count"];
/// Queries of each kind in a generated file (four kinds).
pub const PER_KIND: usize = 30;
/// Queries of each kind kept by `--quick`: the first ones in file order.
pub const QUICK_PER_KIND: usize = 8;
/// The kinds, in the order the file cycles through them (the `name` of each query).
pub const KINDS: [&str; 4] = ["fuzzy", "prefix", "wildcard ?", "wildcard *"];

#[derive(Debug, Args)]
pub struct GenArgs {
    /// w1 (from the Reuters queries) or w2 (from the search-benchmark-game queries).
    #[arg(long)]
    pub workload: String,
    /// The random seed (the committed files use the default).
    #[arg(long, default_value_t = 31)]
    pub seed: u64,
    /// Where to write (default: `<repo>/bench/queries/<workload>-fuzzy-wildcard.jsonl`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// The committed query file of `workload`.
pub fn path(repo: &Path, workload: &str) -> PathBuf {
    repo.join("bench/queries")
        .join(format!("{workload}-fuzzy-wildcard.jsonl"))
}

/// `quarry-bench gen-fuzzy-queries`: derives the queries from the workload's query set and
/// writes them.
pub fn run(args: GenArgs) -> Result<()> {
    let repo = crate::orchestrator::find_repo(args.repo)?;
    let source = source_queries(&repo, &args.workload)?;
    let specs = generate(&source, args.seed, PER_KIND)?;
    let out = args.out.unwrap_or_else(|| path(&repo, &args.workload));
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for s in &specs {
        text.push_str(&serde_json::to_string(s)?);
        text.push('\n');
    }
    std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "{} queries from {} source queries (seed {}) -> {}",
        specs.len(),
        source.len(),
        args.seed,
        out.display()
    );
    Ok(())
}

/// The query texts the words are taken from.
fn source_queries(repo: &Path, workload: &str) -> Result<Vec<String>> {
    match workload {
        "w1" => {
            let public = repo.join("tests/fixtures/reuters-queries-public.jsonl");
            let text = std::fs::read_to_string(&public)
                .with_context(|| format!("reading {}", public.display()))?;
            let mut out: Vec<String> = crate::workload::W1_SEEDS
                .iter()
                .map(|(q, _)| q.to_string())
                .collect();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let v: serde_json::Value = serde_json::from_str(line)?;
                out.extend(v["query"].as_str().map(str::to_string));
            }
            Ok(out)
        }
        "w2" => {
            let q = crate::workload::shared_dir(repo).join("data/queries");
            let (specs, _) = crate::workload::w2_queries(
                &q.join("queries.txt"),
                &q.join("query_term.txt"),
                false,
            )?;
            Ok(specs.into_iter().map(|s| s.query).collect())
        }
        other => bail!("unknown workload {other:?}: expected w1 or w2"),
    }
}

/// The distinct lowercase ASCII words of at least 4 letters in `queries` (operators and
/// punctuation dropped), sorted.
pub fn words(queries: &[String]) -> Vec<String> {
    let mut out = BTreeSet::new();
    for q in queries {
        for w in q.split(|c: char| !c.is_ascii_alphabetic()) {
            if w.len() >= 4 && !matches!(w, "AND" | "NOT") {
                out.insert(w.to_ascii_lowercase());
            }
        }
    }
    out.into_iter().collect()
}

/// `per_kind` queries of each kind, cycling through the kinds, each from a different word.
pub fn generate(queries: &[String], seed: u64, per_kind: usize) -> Result<Vec<QuerySpec>> {
    let vocab = words(queries);
    let needed = per_kind * KINDS.len();
    if vocab.len() < needed {
        bail!(
            "only {} distinct words of 4+ letters in the source queries; {needed} needed",
            vocab.len()
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let chosen: Vec<&String> = vocab.choose_multiple(&mut rng, needed).collect();
    let mut out = Vec::with_capacity(needed);
    for (i, word) in chosen.into_iter().enumerate() {
        let w: Vec<char> = word.chars().collect();
        let kind = KINDS[i % KINDS.len()];
        let query = match kind {
            "fuzzy" => format!("{}~", typo(&w, &mut rng)),
            "prefix" => {
                let keep = rng.random_range(3..w.len());
                format!("{}*", w[..keep].iter().collect::<String>())
            }
            "wildcard ?" => {
                let at = rng.random_range(1..w.len());
                w.iter()
                    .enumerate()
                    .map(|(j, &c)| if j == at { '?' } else { c })
                    .collect()
            }
            _ => {
                // Keep 1-2 characters at each end and leave out at least one in between.
                let head = rng.random_range(1..=2.min(w.len() - 2));
                let tail = rng.random_range(1..=2.min(w.len() - head - 1));
                let h: String = w[..head].iter().collect();
                let t: String = w[w.len() - tail..].iter().collect();
                format!("{h}*{t}")
            }
        };
        out.push(QuerySpec {
            query,
            class: CLASS.into(),
            name: Some(format!("{kind} (from {word:?})")),
            modes: Some(MODES.iter().map(|m| m.to_string()).collect()),
        });
    }
    Ok(out)
}

/// `w` with one or two random edits (never `w` itself; letters a-z).
fn typo(w: &[char], rng: &mut ChaCha8Rng) -> String {
    loop {
        let mut t = w.to_vec();
        for _ in 0..rng.random_range(1..=2) {
            let letter = char::from(b'a' + rng.random_range(0..26u8));
            match rng.random_range(0..4) {
                0 => {
                    let at = rng.random_range(0..t.len());
                    t[at] = letter;
                }
                1 if t.len() > 3 => {
                    t.remove(rng.random_range(0..t.len()));
                }
                2 => t.insert(rng.random_range(0..=t.len()), letter),
                _ => {
                    let at = rng.random_range(0..t.len() - 1);
                    t.swap(at, at + 1);
                }
            }
        }
        if t != w {
            return t.into_iter().collect();
        }
    }
}

/// The class's queries of `workload` from its committed file; with `quick`, the first
/// [`QUICK_PER_KIND`] of each kind.
pub fn load(repo: &Path, workload: &str, quick: bool) -> Result<Vec<QuerySpec>> {
    let p = path(repo, workload);
    let all = crate::drivers::load_queries(&p).with_context(|| {
        format!("the {CLASS} queries (regenerate with `quarry-bench gen-fuzzy-queries --workload {workload}`)")
    })?;
    Ok(if quick {
        all.into_iter().take(QUICK_PER_KIND * KINDS.len()).collect()
    } else {
        all
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Vec<String> {
        let words = "barack obama president united states wikipedia encyclopedia history \
                     science physics chemistry biology mathematics computer network library \
                     railway station airport harbour mountain river valley forest desert";
        words
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(|w| format!("+{w} \"the {w}\" AND OR NOT"))
            .collect()
    }

    #[test]
    fn words_drop_operators_and_short_words() {
        let w = words(&["+Obama -the \"new york\" AND x OR city's".to_string()]);
        assert_eq!(w, ["city", "obama", "york"]);
    }

    #[test]
    fn queries_are_seeded_and_of_every_kind() {
        let a = generate(&source(), 7, 5).unwrap();
        assert_eq!(a.len(), 20);
        let b = generate(&source(), 7, 5).unwrap();
        let c = generate(&source(), 8, 5).unwrap();
        let text = |v: &[QuerySpec]| v.iter().map(|s| s.query.clone()).collect::<Vec<_>>();
        assert_eq!(text(&a), text(&b));
        assert_ne!(text(&a), text(&c));
        for (i, s) in a.iter().enumerate() {
            let q = &s.query;
            let word = s.name.as_deref().unwrap().split('"').nth(1).unwrap();
            assert_eq!(s.class, CLASS);
            assert!(!q.starts_with(['*', '?']), "{q}");
            match i % 4 {
                0 => {
                    let t = q.strip_suffix('~').unwrap();
                    assert_ne!(t, word);
                    assert!(t.len().abs_diff(word.len()) <= 2, "{t} {word}");
                }
                1 => {
                    let p = q.strip_suffix('*').unwrap();
                    assert!(word.starts_with(p) && p.len() >= 3 && p.len() < word.len());
                }
                2 => {
                    assert_eq!(q.len(), word.len());
                    assert_eq!(q.matches('?').count(), 1);
                }
                _ => {
                    let (h, t) = q.split_once('*').unwrap();
                    assert!(word.starts_with(h) && word.ends_with(t));
                    assert!(h.len() + t.len() < word.len());
                }
            }
        }
        assert!(generate(&source()[..3], 7, 5).is_err());
    }

    /// The committed files parse, are all of the class and skip the highlight mode.
    #[test]
    fn committed_files_load() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for w in ["w1", "w2"] {
            let all = load(&repo, w, false).unwrap();
            assert_eq!(all.len(), PER_KIND * KINDS.len(), "{w}");
            assert_eq!(load(&repo, w, true).unwrap().len(), QUICK_PER_KIND * 4);
            assert!(all.iter().all(|s| s.class == CLASS
                && !s.runs_in(crate::protocol::Mode::Top10Highlight)
                && s.runs_in(crate::protocol::Mode::Count)));
        }
    }
}
