//! What has the server been doing? Counters and latency histograms in Prometheus text format.
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A cumulative histogram of durations.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        for (c, b) in self.counts.iter_mut().zip(BUCKETS) {
            if s <= b {
                *c += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (c, b) in self.counts.iter().zip(BUCKETS) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {c}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

/// Per-index figures sampled when `/_metrics` is read.
#[derive(Clone, Debug, Default)]
pub struct IndexGauges {
    /// Searchable (live) documents.
    pub docs: u64,
    /// Deleted documents whose space merges have not reclaimed yet.
    pub deleted_docs: u64,
    /// Bytes of the index's files (engine, translog, settings).
    pub store_bytes: u64,
    pub segments: u64,
    pub translog_bytes: u64,
    pub merges: u64,
}

/// The server's metrics registry.
#[derive(Default)]
pub struct Metrics {
    /// (method, endpoint, status) → latency histogram.
    requests: Mutex<BTreeMap<(String, String, u16), Histogram>>,
    /// (operation, index) → duration histogram (`refresh`, `commit`, `translog_sync`).
    operations: Mutex<BTreeMap<(&'static str, String), Histogram>>,
}

impl Metrics {
    /// Records a finished request.
    pub fn request(&self, method: &str, endpoint: &str, status: u16, took: Duration) {
        self.requests
            .lock()
            .expect("metrics lock")
            .entry((method.to_string(), endpoint.to_string(), status))
            .or_default()
            .observe(took);
    }

    /// Records an engine operation's duration.
    pub fn operation(&self, op: &'static str, index: &str, took: Duration) {
        self.operations
            .lock()
            .expect("metrics lock")
            .entry((op, index.to_string()))
            .or_default()
            .observe(took);
    }

    /// The Prometheus text exposition, with the per-index gauges given.
    pub fn render(&self, gauges: &[(String, IndexGauges)]) -> String {
        let mut out = String::new();
        out.push_str("# HELP quarry_http_requests_seconds HTTP request latency by method, endpoint and status.\n# TYPE quarry_http_requests_seconds histogram\n");
        for ((m, e, s), h) in self.requests.lock().expect("metrics lock").iter() {
            let labels = format!("method=\"{m}\",endpoint=\"{}\",status=\"{s}\"", escape(e));
            h.render(&mut out, "quarry_http_requests_seconds", &labels);
        }
        let ops = self.operations.lock().expect("metrics lock");
        for op in ["refresh", "commit", "translog_sync"] {
            let name = format!("quarry_{op}_seconds");
            let _ = writeln!(
                out,
                "# HELP {name} Duration of {op} operations by index.\n# TYPE {name} histogram"
            );
            for ((o, index), h) in ops.iter() {
                if *o == op {
                    h.render(&mut out, &name, &format!("index=\"{}\"", escape(index)));
                }
            }
        }
        type Get = fn(&IndexGauges) -> u64;
        let gauge_defs: [(&str, &str, Get); 6] = [
            ("quarry_index_docs", "Searchable documents.", |g| g.docs),
            (
                "quarry_index_deleted_docs",
                "Deleted documents merges have not reclaimed yet.",
                |g| g.deleted_docs,
            ),
            (
                "quarry_index_store_bytes",
                "Bytes of the index's files.",
                |g| g.store_bytes,
            ),
            (
                "quarry_index_segments",
                "Segments in the searchable view.",
                |g| g.segments,
            ),
            (
                "quarry_translog_bytes",
                "Bytes in the translog (writes not yet committed).",
                |g| g.translog_bytes,
            ),
            (
                "quarry_merges_total",
                "Background segment merges installed since the indexes were opened.",
                |g| g.merges,
            ),
        ];
        for (name, help, get) in gauge_defs {
            let kind = if name.ends_with("_total") {
                "counter"
            } else {
                "gauge"
            };
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (index, g) in gauges {
                let _ = writeln!(out, "{name}{{index=\"{}\"}} {}", escape(index), get(g));
            }
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_cumulative_buckets_and_gauges() {
        let m = Metrics::default();
        m.request("GET", "/{index}/_search", 200, Duration::from_millis(3));
        m.request("GET", "/{index}/_search", 200, Duration::from_millis(30));
        m.operation("refresh", "books", Duration::from_millis(2));
        let g = IndexGauges {
            docs: 7,
            segments: 2,
            translog_bytes: 10,
            merges: 1,
            ..IndexGauges::default()
        };
        let text = m.render(&[("books".into(), g)]);
        assert!(text.contains(
            "quarry_http_requests_seconds_bucket{method=\"GET\",endpoint=\"/{index}/_search\",status=\"200\",le=\"0.005\"} 1"
        ), "{text}");
        assert!(text.contains("quarry_http_requests_seconds_count{method=\"GET\",endpoint=\"/{index}/_search\",status=\"200\"} 2"));
        assert!(text.contains("quarry_refresh_seconds_count{index=\"books\"} 1"));
        assert!(text.contains("quarry_index_docs{index=\"books\"} 7"));
        assert!(text.contains("# TYPE quarry_merges_total counter"));
    }
}
