//! Which indexes does an alias name, and which of them takes writes? The alias table, kept in
//! the data directory.
//!
//! An alias names one or more indexes. Searches, counts, gets and `_mget`/`_msearch` through an
//! alias read all of them ([`crate::resolve`]); a write or single-document read through it goes
//! to its write index: the index marked `is_write_index: true`, or its only index when none is
//! marked (and that one is not marked `false`), as in Elasticsearch. Otherwise the request is a
//! 400 naming the alias.
//!
//! The table is the file `_aliases.json` beside the index directories (a name starting with `_`
//! is never an index), rewritten atomically after every change: written to a temporary file,
//! fsynced, renamed over the old one and the directory fsynced, so a crash leaves the old table
//! or the new one, never a mix. A change is acknowledged only once it is durable.
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The alias table's file in the data directory.
pub const ALIASES_FILE: &str = "_aliases.json";

/// One index's membership in an alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AliasEntry {
    /// `is_write_index` as given (`None`: not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_write_index: Option<bool>,
}

/// Alias name → index name → its entry.
pub type AliasMap = BTreeMap<String, BTreeMap<String, AliasEntry>>;

/// The alias table and its file.
pub struct Aliases {
    file: PathBuf,
    map: Mutex<AliasMap>,
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("{}: {e}", path.display()))
}

impl Aliases {
    /// Reads the table of the data directory `data` (empty when it has none).
    pub fn open(data: &Path) -> Result<Self, ApiError> {
        let file = data.join(ALIASES_FILE);
        let map = match std::fs::read(&file) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| io_error(&file, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => AliasMap::new(),
            Err(e) => return Err(io_error(&file, e)),
        };
        Ok(Aliases {
            file,
            map: Mutex::new(map),
        })
    }

    /// A copy of the table.
    pub fn snapshot(&self) -> AliasMap {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, AliasMap> {
        self.map.lock().expect("aliases lock")
    }

    /// Whether `name` is an alias.
    pub fn contains(&self, name: &str) -> bool {
        self.lock().contains_key(name)
    }

    /// Changes the table with `f` (which sees a copy and may refuse), writes it durably, then
    /// makes it current. Nothing changes when `f` or the write fails.
    pub fn update<T>(
        &self,
        f: impl FnOnce(&mut AliasMap) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut cur = self.lock();
        let mut next = cur.clone();
        let out = f(&mut next)?;
        next.retain(|_, targets| !targets.is_empty());
        if next != *cur {
            self.persist(&next)?;
            *cur = next;
        }
        Ok(out)
    }

    /// Drops `index` from every alias (the index was deleted).
    pub fn remove_index(&self, index: &str) -> Result<(), ApiError> {
        self.update(|m| {
            for targets in m.values_mut() {
                targets.remove(index);
            }
            Ok(())
        })
    }

    /// The index a write (or a single-document read) through `alias` goes to; `None` when
    /// `alias` is not an alias.
    pub fn write_index(&self, alias: &str) -> Option<Result<String, ApiError>> {
        let map = self.lock();
        let targets = map.get(alias)?;
        let marked: Vec<&String> = targets
            .iter()
            .filter(|(_, e)| e.is_write_index == Some(true))
            .map(|(i, _)| i)
            .collect();
        let found = match (marked.as_slice(), targets.len()) {
            ([one], _) => Some((*one).clone()),
            ([], 1) => targets
                .iter()
                .find(|(_, e)| e.is_write_index != Some(false))
                .map(|(i, _)| i.clone()),
            _ => None,
        };
        Some(found.ok_or_else(|| {
            ApiError::illegal(format!(
                "no write index is defined for alias [{alias}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index (indices: [{}])",
                targets.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        }))
    }

    fn persist(&self, map: &AliasMap) -> Result<(), ApiError> {
        let tmp = self.file.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(map).map_err(|e| io_error(&tmp, e))?;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
        f.write_all(&text).map_err(|e| io_error(&tmp, e))?;
        f.sync_all().map_err(|e| io_error(&tmp, e))?;
        drop(f);
        std::fs::rename(&tmp, &self.file).map_err(|e| io_error(&self.file, e))?;
        if let Some(dir) = self.file.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error(dir, e))?;
        }
        Ok(())
    }
}

/// Checks that an index may take `alias`: the name is valid and no index carries it, and an
/// alias keeps at most one write index.
pub fn check_alias(map: &AliasMap, alias: &str, index_exists: bool) -> Result<(), ApiError> {
    crate::mapping::check_index_name(alias).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_alias_name_exception",
            format!("Invalid alias name [{alias}]: {}", e.reason),
        )
    })?;
    if index_exists {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_alias_name_exception",
            format!(
                "Invalid alias name [{alias}]: an index or data stream exists with the same name as the alias"
            ),
        ));
    }
    if let Some(targets) = map.get(alias) {
        let writers: Vec<&str> = targets
            .iter()
            .filter(|(_, e)| e.is_write_index == Some(true))
            .map(|(i, _)| i.as_str())
            .collect();
        if writers.len() > 1 {
            return Err(ApiError::illegal(format!(
                "alias [{alias}] has more than one write index [{}]",
                writers.join(",")
            )));
        }
    }
    Ok(())
}

/// 404 `aliases_not_found_exception` for aliases that do not exist.
pub fn aliases_missing(names: &[String]) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "aliases_not_found_exception",
        format!("aliases [{}] missing", names.join(",")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_survives_reopen_and_write_index_follows_es() {
        let dir = tempfile::tempdir().unwrap();
        let a = Aliases::open(dir.path()).unwrap();
        assert!(a.write_index("x").is_none());
        a.update(|m| {
            m.entry("x".into())
                .or_default()
                .insert("a".into(), AliasEntry::default());
            Ok(())
        })
        .unwrap();
        assert_eq!(a.write_index("x").unwrap().unwrap(), "a");
        a.update(|m| {
            m.get_mut("x")
                .unwrap()
                .insert("b".into(), AliasEntry::default());
            Ok(())
        })
        .unwrap();
        let e = a.write_index("x").unwrap().unwrap_err();
        assert!(e.reason.contains("no write index is defined for alias [x]"));
        // A refused change leaves the table as it was.
        let r: Result<(), ApiError> = a.update(|m| {
            m.clear();
            Err(ApiError::illegal("no"))
        });
        assert!(r.is_err());
        assert!(a.contains("x"));
        a.update(|m| {
            m.get_mut("x").unwrap().get_mut("b").unwrap().is_write_index = Some(true);
            Ok(())
        })
        .unwrap();
        drop(a);
        let a = Aliases::open(dir.path()).unwrap();
        assert_eq!(a.write_index("x").unwrap().unwrap(), "b");
        a.remove_index("a").unwrap();
        a.remove_index("b").unwrap();
        assert!(!a.contains("x"), "an alias without indexes is gone");
        assert!(Aliases::open(dir.path()).unwrap().snapshot().is_empty());
    }
}
