//! What do drivers and the orchestrator say to each other: the JSON-lines records.
//!
//! Every driver (quarry and Tantivy in this binary, Lucene in `bench/lucene/`) prints exactly these
//! records, one JSON object per line on stdout; anything else goes to stderr. The orchestrator
//! parses them leniently (unknown fields are kept in the raw JSON, missing optional ones default).
//! The full description, including what is timed, is in `bench/README.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Search modes, as spelled on the command line and in records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Top 10 by score; the engine may skip non-competitive documents, so the count may be a lower
    /// bound (`hits_relation = "gte"`).
    Top10,
    /// Top 10 by score and the exact number of matching documents.
    Top10Count,
    /// The exact number of matching documents only.
    Count,
    /// Top 10 by score as in `Top10`, then the `body` field of the 10 hits read from the stored
    /// fields and highlighted by the engine's highlighter (the `highlight` benchmark class).
    Top10Highlight,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Top10 => "top10",
            Mode::Top10Count => "top10_count",
            Mode::Count => "count",
            Mode::Top10Highlight => "top10_highlight",
        }
    }

    pub fn parse(s: &str) -> anyhow::Result<Mode> {
        match s.trim() {
            "top10" | "TOP_10" => Ok(Mode::Top10),
            "top10_count" | "TOP_10_COUNT" => Ok(Mode::Top10Count),
            "count" | "COUNT" => Ok(Mode::Count),
            "top10_highlight" | "TOP_10_HIGHLIGHT" => Ok(Mode::Top10Highlight),
            other => anyhow::bail!(
                "unknown mode {other:?}: expected top10, top10_count, count or top10_highlight"
            ),
        }
    }

    pub fn parse_list(s: &str) -> anyhow::Result<Vec<Mode>> {
        s.split(',')
            .filter(|m| !m.trim().is_empty())
            .map(Mode::parse)
            .collect()
    }
}

/// One line of a queries file given to `driver ... query --queries Q.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuerySpec {
    /// Lucene classic query syntax; default field `body`, default operator OR.
    pub query: String,
    /// term | intersection | union | phrase | mixed
    pub class: String,
    /// Optional label (e.g. the original tag of the query set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When set, the query runs only in these of the run's modes (the `fuzzy_wildcard` class is
    /// not highlighted: Tantivy's snippet generator marks no terms of automaton queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
}

impl QuerySpec {
    /// Whether this query runs in `mode`.
    pub fn runs_in(&self, mode: Mode) -> bool {
        self.modes
            .as_ref()
            .is_none_or(|ms| ms.iter().any(|m| m == mode.as_str()))
    }
}

/// One document of a corpus file given to `driver ... index --input DOCS.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceDoc {
    pub id: u64,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: String,
}

/// Output of `index`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexRecord {
    pub engine: String,
    pub op: String,
    pub threads: usize,
    pub docs: u64,
    pub seconds: f64,
    pub docs_per_sec: f64,
    pub index_bytes: u64,
    pub segments: u64,
    pub peak_rss_bytes: u64,
    /// Human-readable: what the timer covered.
    pub timed: String,
    /// RSS after the corpus was loaded, before the timer started (Rust drivers report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_before_timing_bytes: Option<u64>,
    /// Engine configuration (memory budget, merge policy, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Output of `merge`: the index at `--index` force-merged in place to at most `max_segments`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergeRecord {
    pub engine: String,
    pub op: String,
    pub max_segments: u64,
    pub segments_before: u64,
    pub segments_after: u64,
    /// Wall time of the merge call(s), including the commit.
    pub seconds: f64,
    /// Size of the index directory afterwards.
    pub index_bytes: u64,
    /// Human-readable: which API call did it.
    pub how: String,
}

/// One of the top hits of a query record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopHit {
    /// The stored `id` field (a number for our corpora; other drivers may print a string).
    pub id: Value,
    pub score: f64,
}

/// Output of `query`, one per (query, mode).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryRecord {
    pub engine: String,
    pub op: String,
    pub query: String,
    pub class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub mode: String,
    #[serde(default)]
    pub hits: u64,
    /// "eq" when `hits` is exact, "gte" when it is a lower bound.
    #[serde(default)]
    pub hits_relation: String,
    #[serde(default)]
    pub p50_us: f64,
    #[serde(default)]
    pub p90_us: f64,
    #[serde(default)]
    pub p99_us: f64,
    #[serde(default)]
    pub mean_us: f64,
    #[serde(default)]
    pub min_us: f64,
    #[serde(default)]
    pub iters: u64,
    #[serde(default)]
    pub warmup: u64,
    #[serde(default)]
    pub top: Vec<TopHit>,
    /// Set when the engine could not parse or run the query; the latency fields are then 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Output of `coldstart`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColdstartRecord {
    pub engine: String,
    pub op: String,
    pub open_to_first_result_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start_to_first_result_us: Option<f64>,
    #[serde(default)]
    pub peak_rss_bytes: u64,
    #[serde(default)]
    pub major_faults: u64,
    #[serde(default)]
    pub hits: u64,
    /// Where the open -> first result time went (Rust drivers): opening the index, parsing the
    /// query, the top-10 search, fetching the hits' stored ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_us: Option<ColdstartPhases>,
}

/// The parts of a cold start's open -> first result span, in µs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ColdstartPhases {
    pub open: f64,
    pub parse: f64,
    pub search: f64,
    pub fetch: f64,
}

/// Prints one record as a JSON line on stdout and flushes it (the orchestrator times the line).
pub fn emit<T: Serialize>(record: &T) -> anyhow::Result<()> {
    use std::io::Write;
    let line = serde_json::to_string(record)?;
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    writeln!(lock, "{line}")?;
    lock.flush()?;
    Ok(())
}
