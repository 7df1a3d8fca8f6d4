//! Which indexes does the server hold? The registry of open indexes under the data directory.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use axum::http::StatusCode;
use serde_json::Value;

use crate::engine::{IndexHandle, IndexSettings};
use crate::error::ApiError;
use crate::mapping::{check_index_name, schema_from_mappings};
use crate::metrics::Metrics;

/// The open indexes, by name; each lives in `DIR/<name>/`.
pub struct Indices {
    data: PathBuf,
    map: RwLock<BTreeMap<String, Arc<IndexHandle>>>,
    metrics: Arc<Metrics>,
    /// Bumped after every create and delete, for requests that wait for the set of indexes to
    /// change (`_cluster/health` on a missing index, or with `wait_for_status`).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Indices {
    /// Opens every index under `data` (creating `data` if needed), replaying translogs.
    pub fn open(data: &Path, metrics: Arc<Metrics>) -> Result<Self, ApiError> {
        std::fs::create_dir_all(data)
            .map_err(|e| ApiError::internal(format!("{}: {e}", data.display())))?;
        let mut map = BTreeMap::new();
        let entries = std::fs::read_dir(data)
            .map_err(|e| ApiError::internal(format!("{}: {e}", data.display())))?;
        for entry in entries {
            let entry = entry.map_err(|e| ApiError::internal(e.to_string()))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if check_index_name(&name).is_err() || !entry.path().join("index").is_dir() {
                tracing::warn!(path = %entry.path().display(), "skipping: not an index directory");
                continue;
            }
            let handle = IndexHandle::open(&name, &entry.path(), metrics.clone())?;
            tracing::info!(index = %name, "opened");
            map.insert(name, Arc::new(handle));
        }
        Ok(Indices {
            data: data.to_path_buf(),
            map: RwLock::new(map),
            metrics,
            changes: tokio::sync::watch::Sender::new(0),
        })
    }

    /// A receiver that sees every create and delete from now on (`changed()` resolves).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// The index called `name`, or 404.
    pub fn get(&self, name: &str) -> Result<Arc<IndexHandle>, ApiError> {
        self.map
            .read()
            .expect("indices lock")
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::no_index(name))
    }

    /// All open indexes.
    pub fn all(&self) -> Vec<Arc<IndexHandle>> {
        self.map
            .read()
            .expect("indices lock")
            .values()
            .cloned()
            .collect()
    }

    /// Creates an index from a `PUT /{index}` body (`mappings`, `settings`).
    pub fn create(&self, name: &str, body: &Value) -> Result<Arc<IndexHandle>, ApiError> {
        check_index_name(name)?;
        let body = match body {
            Value::Null => &Value::Object(Default::default()),
            b @ Value::Object(_) => b,
            _ => return Err(ApiError::parsing("the index body must be an object")),
        };
        for k in body.as_object().into_iter().flat_map(|m| m.keys()) {
            if !matches!(k.as_str(), "mappings" | "settings" | "aliases") {
                return Err(ApiError::parsing(format!(
                    "unknown key [{k}] for create index"
                )));
            }
        }
        if body
            .get("aliases")
            .is_some_and(|a| !matches!(a, Value::Object(m) if m.is_empty()))
        {
            return Err(ApiError::unsupported("[aliases]"));
        }
        let schema = schema_from_mappings(body.get("mappings"))?;
        let settings = parse_settings(body.get("settings"))?;
        let mut map = self.map.write().expect("indices lock");
        if map.contains_key(name) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "resource_already_exists_exception",
                format!("index [{name}] already exists"),
            )
            .in_index(name));
        }
        let dir = self.data.join(name);
        if dir.exists() {
            // Left over from an interrupted create or delete: nothing was acknowledged in it.
            std::fs::remove_dir_all(&dir).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        let handle = Arc::new(IndexHandle::create(
            name,
            &dir,
            schema,
            settings,
            self.metrics.clone(),
        )?);
        map.insert(name.to_string(), handle.clone());
        drop(map);
        self.changed();
        tracing::info!(index = %name, "created");
        Ok(handle)
    }

    /// Deletes an index and its files.
    pub fn delete(&self, name: &str) -> Result<(), ApiError> {
        let handle = self
            .map
            .write()
            .expect("indices lock")
            .remove(name)
            .ok_or_else(|| ApiError::no_index(name))?;
        drop(handle);
        self.changed();
        std::fs::remove_dir_all(self.data.join(name))
            .map_err(|e| ApiError::internal(format!("deleting index [{name}]: {e}")))?;
        tracing::info!(index = %name, "deleted");
        Ok(())
    }
}

/// `settings` of a create request: `refresh_interval` (`"1s"`, `"500ms"`, `"-1"`),
/// `number_of_shards` (must be 1) and `number_of_replicas` (recorded; replicas are never
/// assigned on one node, so the index reports `yellow` as in Elasticsearch).
fn parse_settings(v: Option<&Value>) -> Result<IndexSettings, ApiError> {
    let mut s = IndexSettings::default();
    let Some(v) = v else { return Ok(s) };
    let m = v
        .as_object()
        .ok_or_else(|| ApiError::parsing("settings must be an object"))?;
    let flat: Vec<(String, &Value)> = m
        .iter()
        .flat_map(|(k, v)| match (k.as_str(), v) {
            ("index", Value::Object(inner)) => inner
                .iter()
                .map(|(k2, v2)| (k2.clone(), v2))
                .collect::<Vec<_>>(),
            _ => vec![(k.strip_prefix("index.").unwrap_or(k).to_string(), v)],
        })
        .collect();
    for (k, v) in flat {
        let text = match v {
            Value::String(t) => t.clone(),
            Value::Number(n) => n.to_string(),
            _ => {
                return Err(ApiError::illegal(format!(
                    "setting [{k}] must be a string or number"
                )))
            }
        };
        match k.as_str() {
            "refresh_interval" => {
                s.refresh_interval_ms = if text == "-1" {
                    None
                } else {
                    Some(parse_duration_ms(&text).ok_or_else(|| {
                        ApiError::illegal(format!("failed to parse setting [refresh_interval] with value [{text}]"))
                    })?)
                }
            }
            "number_of_shards" if text == "1" => {}
            "number_of_replicas" => {
                s.number_of_replicas = text.parse().map_err(|_| {
                    ApiError::illegal(format!(
                        "failed to parse setting [index.number_of_replicas] with value [{text}]: a non-negative integer"
                    ))
                })?
            }
            other => {
                return Err(ApiError::illegal(format!(
                    "setting [index.{other}] is not supported (supported: refresh_interval; number_of_shards 1)"
                )))
            }
        }
    }
    Ok(s)
}

/// `"250ms"`, `"1s"`, `"2m"` (and a bare number of milliseconds) as milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let factor = match unit {
        "" | "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_and_settings() {
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("2s"), Some(2000));
        assert_eq!(parse_duration_ms("1.5s"), None);
        assert_eq!(parse_duration_ms("s"), None);
        let s = parse_settings(Some(&json!({"index": {"refresh_interval": "-1"}}))).unwrap();
        assert_eq!(s.refresh_interval_ms, None);
        let s = parse_settings(Some(
            &json!({"refresh_interval": "250ms", "number_of_shards": 1}),
        ))
        .unwrap();
        assert_eq!(s.refresh_interval_ms, Some(250));
        assert!(parse_settings(Some(&json!({"number_of_shards": 3}))).is_err());
    }
}
