//! How does text become terms? Analyzers turn a field's text into the sequence of terms that is
//! indexed (and that queries are parsed into); token i has position i.
//!
//! The one analyzer today is `standard`, token-for-token identical to Apache Lucene 10's
//! `StandardAnalyzer()` (see [`StandardAnalyzer`]), so that quarry's index statistics and BM25 scores can
//! match Lucene's.

mod standard;
mod tables;
mod uax29;

use std::sync::Arc;

pub use standard::{
    java_lower, StandardAnalyzer, DEFAULT_MAX_TOKEN_LENGTH, MAX_TOKEN_LENGTH_LIMIT,
};

/// Turns text into terms.
///
/// Contract: `for_each_token` calls `sink` once per token, in text order, with the final
/// (normalized) term; positions are implicit (the n-th call is position n, starting at 0), and the
/// same text always gives the same tokens. `normalize` maps a query fragment that is not tokenized
/// (a prefix or wildcard term) the way indexed terms were normalized. Implementations never panic
/// on any `&str` input.
pub trait Analyzer: Send + Sync + std::fmt::Debug {
    /// Calls `sink` with each token (already lowercased) in order; token i has position i.
    fn for_each_token(&self, text: &str, sink: &mut dyn FnMut(&str));
    /// [`Analyzer::for_each_token`] with each token's byte range in `text` (start, end): the
    /// same tokens in the same order. Highlighting re-analyzes stored text with it (Lucene's
    /// `ANALYSIS` offset source).
    fn for_each_token_with_offsets(&self, text: &str, sink: &mut dyn FnMut(&str, usize, usize));
    /// The tokens of `text` equal to one of `terms`, each as `sink(index in terms, start, end)`
    /// in no particular order, found without analyzing the whole text when the analyzer knows
    /// how (a highlighter's term-only query: most tokens match nothing). Exactly the tokens
    /// [`Analyzer::for_each_token_with_offsets`] reports with such a term. Returns false, having
    /// called nothing, when it does not know how for this text: the caller tokenizes.
    fn find_terms(
        &self,
        text: &str,
        terms: &[&str],
        sink: &mut dyn FnMut(usize, usize, usize),
    ) -> bool {
        let _ = (text, terms, sink);
        false
    }
    /// Lucene's Analyzer.normalize: what a prefix/wildcard term becomes (for standard: lowercase
    /// only).
    fn normalize(&self, text: &str) -> String;
    /// The name a schema file uses for this analyzer.
    fn name(&self) -> &'static str;
}

/// Looks up an analyzer by name as written in a schema file ("standard"); None if unknown.
pub fn analyzer_by_name(name: &str) -> Option<Arc<dyn Analyzer>> {
    match name {
        "standard" => Some(Arc::new(StandardAnalyzer::new())),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
