//! Which indexes does an index expression name? `a,b`, `logs-*`, `-logs-old`, `_all` and
//! aliases, with Elasticsearch's `ignore_unavailable` and `allow_no_indices`.
//!
//! An expression is a comma-separated list read left to right: a name adds that index (or the
//! indexes of that alias), a pattern with `*` adds every index and alias it matches, and `-x`
//! (after at least one other entry) removes what `x` names or matches from the set so far.
//! `_all`, `*` and the empty expression name every index. A missing concrete name is a 404
//! (`index_not_found_exception`) unless `ignore_unavailable=true`; an expression that names
//! no index at all is a 404 when `allow_no_indices=false`.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::engine::IndexHandle;
use crate::error::ApiError;
use crate::indices::Indices;

/// How an expression treats missing indexes (`ignore_unavailable`, `allow_no_indices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndicesOptions {
    /// A missing concrete index is skipped rather than a 404 (default false).
    pub ignore_unavailable: bool,
    /// An expression that resolves to no index is an empty search rather than a 404 (default
    /// true).
    pub allow_no_indices: bool,
}

impl Default for IndicesOptions {
    fn default() -> Self {
        IndicesOptions {
            ignore_unavailable: false,
            allow_no_indices: true,
        }
    }
}

/// The URL parameters [`IndicesOptions::parse`] reads.
pub const INDICES_PARAMS: &[&str] = &["ignore_unavailable", "allow_no_indices"];

impl IndicesOptions {
    /// Reads `ignore_unavailable` and `allow_no_indices` (`true`, `false`, or empty for true).
    pub fn parse(p: &HashMap<String, String>) -> Result<Self, ApiError> {
        let flag = |k: &str, d: bool| -> Result<bool, ApiError> {
            match p.get(k).map(String::as_str) {
                None => Ok(d),
                Some("" | "true") => Ok(true),
                Some("false") => Ok(false),
                Some(o) => Err(ApiError::illegal(format!(
                    "[{k}] must be true or false, not [{o}]"
                ))),
            }
        };
        Ok(IndicesOptions {
            ignore_unavailable: flag("ignore_unavailable", false)?,
            allow_no_indices: flag("allow_no_indices", true)?,
        })
    }
}

/// `*` matches any run of characters; everything else literally.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(mut tail) = name.strip_prefix(head) else {
                return false;
            };
            if rest.is_empty() {
                return true;
            }
            loop {
                if wildcard_match(rest, tail) {
                    return true;
                }
                let mut chars = tail.chars();
                if chars.next().is_none() {
                    return false;
                }
                tail = chars.as_str();
            }
        }
    }
}

impl Indices {
    /// The indexes `expr` names, sorted by name, each once.
    pub fn resolve(
        &self,
        expr: &str,
        opts: IndicesOptions,
    ) -> Result<Vec<Arc<IndexHandle>>, ApiError> {
        let all: BTreeMap<String, Arc<IndexHandle>> = self
            .all()
            .into_iter()
            .map(|h| (h.name().to_string(), h))
            .collect();
        let aliases = self.aliases().snapshot();
        let mut out: BTreeMap<String, Arc<IndexHandle>> = BTreeMap::new();
        let parts: Vec<&str> = expr.split(',').map(str::trim).collect();
        let every = parts.iter().all(|p| p.is_empty()) || parts == ["_all"];
        if every {
            out = all.clone();
        }
        for (i, part) in parts.iter().enumerate() {
            if every {
                break;
            }
            let (exclude, name) = match part.strip_prefix('-') {
                Some(rest) if i > 0 => (true, rest),
                _ => (false, *part),
            };
            if name.is_empty() {
                return Err(ApiError::illegal(format!(
                    "index expression [{expr}] has an empty entry"
                )));
            }
            // The indexes this entry names.
            let mut named: Vec<String> = Vec::new();
            if name == "_all" || name.contains('*') {
                let pat = if name == "_all" { "*" } else { name };
                named.extend(all.keys().filter(|n| wildcard_match(pat, n)).cloned());
                for (alias, targets) in &aliases {
                    if wildcard_match(pat, alias) {
                        named.extend(targets.keys().cloned());
                    }
                }
            } else if all.contains_key(name) {
                named.push(name.to_string());
            } else if let Some(targets) = aliases.get(name) {
                named.extend(targets.keys().cloned());
            } else if name.starts_with('_') {
                return Err(ApiError::illegal(format!(
                    "index expression [{name}] is not an index name (names cannot start with '_')"
                )));
            } else if !exclude && !opts.ignore_unavailable {
                return Err(ApiError::no_index(name));
            }
            for n in named {
                if exclude {
                    out.remove(&n);
                } else if let Some(h) = all.get(&n) {
                    out.insert(n, h.clone());
                }
            }
        }
        if out.is_empty() && !opts.allow_no_indices {
            return Err(ApiError::no_index(if expr.is_empty() {
                "_all"
            } else {
                expr
            }));
        }
        Ok(out.into_values().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("logs-*", "logs-2024"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("l*s-*4", "logs-2024"));
        assert!(!wildcard_match("l*s-*4", "logs-2025"));
        assert!(!wildcard_match("logs", "logs-1"));
        assert!(wildcard_match("*é*", "café-1"));
    }
}
