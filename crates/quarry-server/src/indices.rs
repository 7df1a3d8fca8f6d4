//! Which indexes does the server hold? The registry of open indexes under the data directory.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use axum::http::StatusCode;
use serde_json::Value;

use crate::aliases::{Aliases, ALIASES_FILE};
use crate::engine::{IndexHandle, IndexSettings};
use crate::error::ApiError;
use crate::mapping::{check_index_name, schema_from_mappings_with};
use crate::metrics::Metrics;

/// The open indexes, by name; each lives in `DIR/<name>/`.
pub struct Indices {
    data: PathBuf,
    map: RwLock<BTreeMap<String, Arc<IndexHandle>>>,
    metrics: Arc<Metrics>,
    /// The aliases (see [`crate::aliases`]).
    aliases: Aliases,
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
            if name == ALIASES_FILE || name == crate::inference::REGISTRY_DIR {
                continue;
            }
            if check_index_name(&name).is_err() || !entry.path().join("index").is_dir() {
                tracing::warn!(path = %entry.path().display(), "skipping: not an index directory");
                continue;
            }
            let handle = IndexHandle::open(&name, &entry.path(), metrics.clone())?;
            tracing::info!(index = %name, "opened");
            map.insert(name, Arc::new(handle));
        }
        let aliases = Aliases::open(data)?;
        Ok(Indices {
            data: data.to_path_buf(),
            map: RwLock::new(map),
            metrics,
            aliases,
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

    /// The index called `name`, or the write index of the alias `name` (see
    /// [`crate::aliases`]), or 404.
    pub fn get(&self, name: &str) -> Result<Arc<IndexHandle>, ApiError> {
        if let Some(h) = self.get_exact(name) {
            return Ok(h);
        }
        match self.aliases.write_index(name) {
            Some(target) => self
                .get_exact(&target?)
                .ok_or_else(|| ApiError::no_index(name)),
            None => Err(ApiError::no_index(name)),
        }
    }

    /// The index called `name` (not an alias).
    pub fn get_exact(&self, name: &str) -> Option<Arc<IndexHandle>> {
        self.map.read().expect("indices lock").get(name).cloned()
    }

    /// The alias table.
    pub fn aliases(&self) -> &Aliases {
        &self.aliases
    }

    /// The data directory.
    pub fn data(&self) -> &Path {
        &self.data
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
        let data = self.data.clone();
        let schema = schema_from_mappings_with(body.get("mappings"), &|id| {
            crate::inference::dims(&data, id)
        })?;
        let (settings, index_sort) = parse_settings(body.get("settings"))?;
        if let Some(sort) = &index_sort {
            sort.validate(&schema).map_err(|e| match e {
                quarry::Error::IndexSort { field, reason } => {
                    ApiError::illegal(format!("invalid index sort field:[{field}]: {reason}"))
                }
                other => other.into(),
            })?;
        }
        if self.aliases.contains(name) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_index_name_exception",
                format!("Invalid index name [{name}], already exists as alias"),
            )
            .in_index(name));
        }
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
        // The index's own copy of its models, before anything can be written to it.
        let engine_dir = dir.join("index");
        if let Err(e) = crate::inference::install(&self.data, &engine_dir, &schema) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.in_index(name));
        }
        let handle = Arc::new(IndexHandle::create(
            name,
            &dir,
            schema,
            settings,
            index_sort,
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
        self.aliases.remove_index(name)?;
        std::fs::remove_dir_all(self.data.join(name))
            .map_err(|e| ApiError::internal(format!("deleting index [{name}]: {e}")))?;
        tracing::info!(index = %name, "deleted");
        Ok(())
    }
}

/// `settings` of a create request: `refresh_interval` (`"1s"`, `"500ms"`, `"-1"`),
/// `number_of_shards` (must be 1), `number_of_replicas` (recorded; replicas are never
/// assigned on one node, so the index reports `yellow` as in Elasticsearch) and the index
/// sort `sort.field`, `sort.order`, `sort.missing`, `sort.mode` (flat, `index.`-prefixed or
/// nested as `{"sort": {"field": ...}}`; see [`parse_index_sort`]).
fn parse_settings(
    v: Option<&Value>,
) -> Result<(IndexSettings, Option<quarry::IndexSort>), ApiError> {
    let mut s = IndexSettings::default();
    let Some(v) = v else { return Ok((s, None)) };
    let m = v
        .as_object()
        .ok_or_else(|| ApiError::parsing("settings must be an object"))?;
    let mut flat: Vec<(String, &Value)> = Vec::new();
    for (k, v) in m {
        match (k.as_str(), v) {
            ("index", Value::Object(inner)) => {
                flat.extend(inner.iter().map(|(k2, v2)| (k2.clone(), v2)))
            }
            _ => flat.push((k.strip_prefix("index.").unwrap_or(k).to_string(), v)),
        }
    }
    // `{"sort": {"field": ...}}` is `sort.field`.
    let mut sort_keys: Vec<(String, &Value)> = Vec::new();
    let mut rest = Vec::new();
    for (k, v) in flat {
        match (k.as_str(), v) {
            ("sort", Value::Object(inner)) => {
                sort_keys.extend(inner.iter().map(|(k2, v2)| (format!("sort.{k2}"), v2)))
            }
            (k, _) if k.starts_with("sort.") => sort_keys.push((k.to_string(), v)),
            _ => rest.push((k, v)),
        }
    }
    let index_sort = parse_index_sort(&sort_keys)?;
    for (k, v) in rest {
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
                    "setting [index.{other}] is not supported (supported: refresh_interval, number_of_replicas, sort.field, sort.order, sort.missing, sort.mode; number_of_shards 1)"
                )))
            }
        }
    }
    Ok((s, index_sort))
}

/// The index sort of `index.sort.*` settings, as Elasticsearch reads them: `sort.field` one
/// field or a list; `sort.order` (`asc`/`desc`, default `asc`), `sort.missing` (`_last`, the
/// default, or `_first`) and `sort.mode` each absent or one entry per field. `sort.mode` may
/// only be what quarry sorts multi-valued fields by (`min` ascending, `max` descending), as
/// every sorted search does. The fields are checked against the mappings by the caller.
fn parse_index_sort(keys: &[(String, &Value)]) -> Result<Option<quarry::IndexSort>, ApiError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let list = |name: &str| -> Result<Option<Vec<String>>, ApiError> {
        let Some((_, v)) = keys.iter().find(|(k, _)| k == name) else {
            return Ok(None);
        };
        let bad = || {
            ApiError::illegal(format!(
                "setting [index.{name}] must be a string or a list of strings"
            ))
        };
        match v {
            Value::String(s) => Ok(Some(vec![s.clone()])),
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            _ => Err(bad()),
        }
    };
    for (k, _) in keys {
        if !matches!(
            k.as_str(),
            "sort.field" | "sort.order" | "sort.missing" | "sort.mode"
        ) {
            return Err(ApiError::illegal(format!(
                "setting [index.{k}] is not supported (supported: sort.field, sort.order, sort.missing, sort.mode)"
            )));
        }
    }
    let fields = list("sort.field")?
        .ok_or_else(|| ApiError::illegal("index sort settings need [index.sort.field]"))?;
    if fields.is_empty() {
        return Err(ApiError::illegal(
            "[index.sort.field] needs at least one field",
        ));
    }
    let per_field = |name: &str| -> Result<Option<Vec<String>>, ApiError> {
        let v = list(name)?;
        if let Some(v) = &v {
            if v.len() != fields.len() {
                return Err(ApiError::illegal(format!(
                    "index.sort.field:{fields:?} index.{name}:{v:?}, size mismatch"
                )));
            }
        }
        Ok(v)
    };
    let (order, missing, mode) = (
        per_field("sort.order")?,
        per_field("sort.missing")?,
        per_field("sort.mode")?,
    );
    let mut out = Vec::with_capacity(fields.len());
    for (i, field) in fields.iter().enumerate() {
        let descending = match order.as_ref().map(|o| o[i].as_str()) {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(o) => {
                return Err(ApiError::illegal(format!(
                    "Illegal sort order:{o} (index.sort.order takes asc or desc)"
                )))
            }
        };
        let missing_first = match missing.as_ref().map(|o| o[i].as_str()) {
            None | Some("_last") => false,
            Some("_first") => true,
            Some(m) => {
                return Err(ApiError::illegal(format!(
                    "Illegal missing value:[{m}], must be one of [_last, _first]"
                )))
            }
        };
        let natural = if descending { "max" } else { "min" };
        if let Some(m) = mode.as_ref().map(|o| o[i].as_str()) {
            if m != natural {
                return Err(ApiError::illegal(format!(
                    "index.sort.mode [{m}] for field [{field}] is not supported: quarry sorts a multi-valued field by its {natural} value in {} order",
                    if descending { "desc" } else { "asc" }
                )));
            }
        }
        out.push(quarry::IndexSortField {
            field: field.clone(),
            descending,
            missing_first,
        });
    }
    Ok(Some(quarry::IndexSort::new(out)))
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
        let (s, _) = parse_settings(Some(&json!({"index": {"refresh_interval": "-1"}}))).unwrap();
        assert_eq!(s.refresh_interval_ms, None);
        let (s, _) = parse_settings(Some(
            &json!({"refresh_interval": "250ms", "number_of_shards": 1}),
        ))
        .unwrap();
        assert_eq!(s.refresh_interval_ms, Some(250));
        assert!(parse_settings(Some(&json!({"number_of_shards": 3}))).is_err());
    }

    #[test]
    fn index_sort_settings_in_every_form() {
        let sort = |v: Value| parse_settings(Some(&v)).map(|(_, s)| s.map(|s| s.to_string()));
        let want = Some("date:desc, n:asc".to_string());
        for v in [
            json!({"index": {"sort.field": ["date", "n"], "sort.order": ["desc", "asc"]}}),
            json!({"index": {"sort": {"field": ["date", "n"], "order": ["desc", "asc"]}}}),
            json!({"index.sort.field": ["date", "n"], "index.sort.order": ["desc", "asc"]}),
            json!({"sort.field": ["date", "n"], "sort.order": ["desc", "asc"],
                   "sort.mode": ["max", "min"], "sort.missing": ["_last", "_last"]}),
        ] {
            assert_eq!(sort(v.clone()).unwrap(), want, "{v}");
        }
        assert_eq!(
            sort(json!({"index": {"sort.field": "n"}})).unwrap(),
            Some("n:asc".to_string())
        );
        assert_eq!(
            sort(json!({"index": {"sort.field": "n", "sort.missing": "_first"}})).unwrap(),
            Some("n:asc (missing first)".to_string())
        );
        assert_eq!(
            sort(json!({"index": {"refresh_interval": "1s"}})).unwrap(),
            None
        );
        for bad in [
            json!({"index": {"sort.field": ["a", "b"], "sort.order": ["desc"]}}),
            json!({"index": {"sort.field": "a", "sort.order": "down"}}),
            json!({"index": {"sort.field": "a", "sort.missing": "first"}}),
            json!({"index": {"sort.field": "a", "sort.mode": "max"}}),
            json!({"index": {"sort.order": "desc"}}),
            json!({"index": {"sort.field": []}}),
            json!({"index": {"sort.field": 3}}),
            json!({"index": {"sort": {"fields": "a"}}}),
        ] {
            let e = sort(bad.clone()).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    }
}
