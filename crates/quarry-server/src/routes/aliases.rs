//! What do the alias endpoints answer? `POST /_aliases` (actions `add`, `remove`,
//! `remove_index`), `PUT|POST|DELETE /{index}/_alias/{name}`, `GET /_alias`,
//! `GET /{index}/_alias[/{name}]`, `GET|HEAD /_alias/{name}`. The table and its semantics live
//! in [`crate::aliases`].
use std::collections::{BTreeMap, BTreeSet};

use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{json, Map, Value};

use super::{blocking, check_params, head, json_body, not_an_endpoint, ok, ApiResult, Params};
use crate::aliases::{aliases_missing, check_alias, AliasEntry, AliasMap};
use crate::error::ApiError;
use crate::indices::Indices;
use crate::resolve::{wildcard_match, IndicesOptions};
use crate::AppState;

/// One parsed alias action.
#[derive(Debug, Clone, PartialEq)]
enum Action {
    Add {
        indices: Vec<String>,
        aliases: Vec<String>,
        is_write_index: Option<bool>,
    },
    Remove {
        indices: Vec<String>,
        aliases: Vec<String>,
        must_exist: Option<bool>,
    },
    RemoveIndex {
        indices: Vec<String>,
    },
}

/// `"a"`, `"a,b"` or `["a", "b"]` as names.
fn names(v: &Value, what: &str) -> Result<Vec<String>, ApiError> {
    let bad = || ApiError::parsing(format!("[{what}] must be a string or a list of strings"));
    let out: Vec<String> = match v {
        Value::String(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        _ => return Err(bad()),
    };
    if out.is_empty() || out.iter().any(String::is_empty) {
        return Err(ApiError::parsing(format!("[{what}] has an empty name")));
    }
    Ok(out)
}

fn parse_action(v: &Value) -> Result<Action, ApiError> {
    let m = v.as_object().filter(|m| m.len() == 1).ok_or_else(|| {
        ApiError::parsing(
            "each alias action is an object with one key: add, remove or remove_index",
        )
    })?;
    let (kind, body) = m.iter().next().expect("one key");
    let body = body
        .as_object()
        .ok_or_else(|| ApiError::parsing(format!("[{kind}] must be an object")))?;
    let allowed: &[&str] = match kind.as_str() {
        "add" => &["index", "indices", "alias", "aliases", "is_write_index"],
        "remove" => &["index", "indices", "alias", "aliases", "must_exist"],
        "remove_index" => &["index", "indices"],
        other => {
            return Err(ApiError::parsing(format!(
                "Unknown alias action [{other}] (quarry supports add, remove, remove_index)"
            )))
        }
    };
    for k in body.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::illegal(format!(
                "[{k}] in the alias action [{kind}] is not supported by quarry (supported: {})",
                allowed.join(", ")
            )));
        }
    }
    let pair = |a: &str, b: &str| -> Result<Vec<String>, ApiError> {
        match (body.get(a), body.get(b)) {
            (Some(_), Some(_)) => Err(ApiError::parsing(format!(
                "[{kind}] takes [{a}] or [{b}], not both"
            ))),
            (Some(v), None) => names(v, a),
            (None, Some(v)) => names(v, b),
            (None, None) => Err(ApiError::illegal(format!(
                "Validation Failed: 1: One of [{a}] or [{b}] is required in [{kind}];"
            ))),
        }
    };
    let flag = |k: &str| -> Result<Option<bool>, ApiError> {
        match body.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(o) => Err(ApiError::parsing(format!(
                "[{k}] must be true or false, not {o}"
            ))),
        }
    };
    let indices = pair("index", "indices")?;
    Ok(match kind.as_str() {
        "add" => Action::Add {
            indices,
            aliases: pair("alias", "aliases")?,
            is_write_index: flag("is_write_index")?,
        },
        "remove" => Action::Remove {
            indices,
            aliases: pair("alias", "aliases")?,
            must_exist: flag("must_exist")?,
        },
        _ => Action::RemoveIndex { indices },
    })
}

/// The concrete indexes `names` name (patterns allowed; aliases are not indexes here).
fn concrete(indices: &Indices, names: &[String]) -> Result<Vec<String>, ApiError> {
    let all: Vec<String> = indices.all().iter().map(|h| h.name().to_string()).collect();
    let mut out = BTreeSet::new();
    for n in names {
        if n.contains('*') || n == "_all" {
            let pat = if n == "_all" { "*" } else { n.as_str() };
            out.extend(all.iter().filter(|i| wildcard_match(pat, i)).cloned());
        } else if all.contains(n) {
            out.insert(n.clone());
        } else if indices.aliases().contains(n) {
            return Err(ApiError::illegal(format!(
                "The provided expression [{n}] matches an alias, specify the corresponding concrete indices instead."
            )));
        } else {
            return Err(ApiError::no_index(n));
        }
    }
    Ok(out.into_iter().collect())
}

/// Applies `actions` to the table as one change (all or nothing), then deletes the indexes of
/// `remove_index` actions.
fn apply(indices: &Indices, actions: &[Action]) -> Result<(), ApiError> {
    let mut resolved = Vec::with_capacity(actions.len());
    let mut removed = Vec::new();
    for a in actions {
        let list = match a {
            Action::Add { indices: i, .. }
            | Action::Remove { indices: i, .. }
            | Action::RemoveIndex { indices: i } => concrete(indices, i)?,
        };
        if matches!(a, Action::RemoveIndex { .. }) {
            removed.extend(list.iter().cloned());
        }
        resolved.push(list);
    }
    let exists = |n: &str| indices.get_exact(n).is_some();
    indices.aliases().update(|m: &mut AliasMap| {
        for (a, targets) in actions.iter().zip(&resolved) {
            match a {
                Action::Add {
                    aliases,
                    is_write_index,
                    ..
                } => {
                    for alias in aliases {
                        for index in targets {
                            let entry = AliasEntry {
                                is_write_index: *is_write_index,
                            };
                            m.entry(alias.clone())
                                .or_default()
                                .insert(index.clone(), entry);
                        }
                        check_alias(m, alias, exists(alias))?;
                    }
                }
                Action::Remove {
                    aliases,
                    must_exist,
                    ..
                } => {
                    let mut missing = Vec::new();
                    for alias in aliases {
                        let mut hit = false;
                        for (name, members) in m.iter_mut() {
                            if wildcard_match(alias, name) || (alias == "_all") {
                                for index in targets {
                                    hit |= members.remove(index).is_some();
                                }
                            }
                        }
                        if !hit {
                            missing.push(alias.clone());
                        }
                    }
                    if !missing.is_empty() && *must_exist != Some(false) {
                        return Err(aliases_missing(&missing));
                    }
                }
                Action::RemoveIndex { .. } => {
                    for members in m.values_mut() {
                        for index in targets {
                            members.remove(index);
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    for index in removed {
        indices.delete(&index)?;
    }
    Ok(())
}

/// `POST /_aliases`.
pub async fn update_aliases(
    State(state): State<AppState>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    check_params(&p, "/_aliases", &["timeout", "master_timeout"])?;
    let body = json_body(&body)?;
    let Some(Value::Array(list)) = body.get("actions") else {
        return Err(ApiError::parsing(
            "the request body must be {\"actions\": [...]}",
        ));
    };
    if let Some(k) = body
        .as_object()
        .and_then(|m| m.keys().find(|k| *k != "actions"))
    {
        return Err(ApiError::parsing(format!(
            "Unknown key [{k}] in the aliases request (only [actions])"
        )));
    }
    if list.is_empty() {
        return Err(ApiError::illegal(
            "Validation Failed: 1: no alias actions specified;",
        ));
    }
    let actions = list
        .iter()
        .map(parse_action)
        .collect::<Result<Vec<_>, _>>()?;
    let indices = state.indices.clone();
    blocking(&state, move || apply(&indices, &actions)).await?;
    ok(json!({"acknowledged": true, "errors": false}))
}

/// `PUT|POST /{index}/_alias/{name}`: body `{}` or `{"is_write_index": bool}`.
pub async fn put_alias(
    method: Method,
    State(state): State<AppState>,
    Path((index, name)): Path<(String, String)>,
    UrlQuery(p): Params,
    body: Bytes,
) -> ApiResult {
    let path = format!("/{index}/_alias/{name}");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, &["timeout", "master_timeout"])?;
    let body = json_body(&body)?;
    let mut action = Map::new();
    action.insert("index".into(), Value::String(index));
    action.insert("alias".into(), Value::String(name));
    match body {
        Value::Null => {}
        Value::Object(m) => {
            for (k, v) in m {
                if k == "index" || k == "alias" {
                    return Err(ApiError::parsing(format!(
                        "[{k}] is given by the path of {path}"
                    )));
                }
                action.insert(k, v);
            }
        }
        _ => return Err(ApiError::parsing("the request body must be an object")),
    }
    let action = parse_action(&json!({ "add": action }))?;
    let indices = state.indices.clone();
    blocking(&state, move || apply(&indices, &[action])).await?;
    ok(json!({"acknowledged": true}))
}

/// `DELETE /{index}/_alias/{name}`.
pub async fn delete_alias(
    method: Method,
    State(state): State<AppState>,
    Path((index, name)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    let path = format!("/{index}/_alias/{name}");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, &["timeout", "master_timeout"])?;
    let action = parse_action(&json!({"remove": {"index": index, "alias": name}}))?;
    let indices = state.indices.clone();
    blocking(&state, move || apply(&indices, &[action])).await?;
    ok(json!({"acknowledged": true}))
}

/// The `GET` answer: per index of `index_expr` (all when `None`), its aliases matching
/// `names` (all when `None`); with names, indexes without a match are left out, and a
/// concrete name that matched nothing makes it a 404 as in Elasticsearch.
fn get_aliases(
    state: &AppState,
    index_expr: Option<&str>,
    names: Option<&str>,
    p: &std::collections::HashMap<String, String>,
) -> ApiResult {
    let opts = IndicesOptions::parse(p)?;
    let handles = state.indices.resolve(index_expr.unwrap_or(""), opts)?;
    let table = state.indices.aliases().snapshot();
    let patterns: Option<Vec<String>> =
        names.map(|n| n.split(',').map(|x| x.trim().to_string()).collect());
    let matches = |alias: &str| match &patterns {
        None => true,
        Some(ps) => ps.iter().any(|p| p == "_all" || wildcard_match(p, alias)),
    };
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for h in &handles {
        let mut mine = Map::new();
        for (alias, members) in &table {
            if let (Some(e), true) = (members.get(h.name()), matches(alias)) {
                mine.insert(alias.clone(), serde_json::to_value(e).expect("entry"));
                seen.insert(alias.clone());
            }
        }
        if patterns.is_none() || !mine.is_empty() {
            out.insert(h.name().to_string(), json!({ "aliases": mine }));
        }
    }
    let missing: Vec<String> = patterns
        .iter()
        .flatten()
        .filter(|p| !p.contains('*') && *p != "_all" && !seen.contains(*p))
        .cloned()
        .collect();
    let mut body = serde_json::to_value(out).expect("object");
    if !missing.is_empty() {
        let what = if missing.len() == 1 {
            format!("alias [{}] missing", missing[0])
        } else {
            format!("aliases [{}] missing", missing.join(","))
        };
        body["error"] = json!(what);
        body["status"] = json!(404);
        return Ok((StatusCode::NOT_FOUND, axum::Json(body)).into_response());
    }
    ok(body)
}

const GET_PARAMS: &[&str] = &["ignore_unavailable", "allow_no_indices", "local"];

/// `GET /_alias`.
pub async fn get_all_aliases(State(state): State<AppState>, UrlQuery(p): Params) -> ApiResult {
    check_params(&p, "/_alias", GET_PARAMS)?;
    get_aliases(&state, None, None, &p)
}

/// `GET /_alias/{name}`.
pub async fn get_alias_named(
    State(state): State<AppState>,
    Path(name): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/_alias/{name}"), GET_PARAMS)?;
    get_aliases(&state, None, Some(&name), &p)
}

/// `HEAD /_alias/{name}`.
pub async fn head_alias_named(
    State(state): State<AppState>,
    Path(name): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    check_params(&p, &format!("/_alias/{name}"), GET_PARAMS)?;
    let found = get_aliases(&state, None, Some(&name), &p)?.status() == StatusCode::OK;
    head(found)
}

/// `GET /{index}/_alias`.
pub async fn get_index_aliases(
    method: Method,
    State(state): State<AppState>,
    Path(index): Path<String>,
    UrlQuery(p): Params,
) -> ApiResult {
    let path = format!("/{index}/_alias");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, GET_PARAMS)?;
    get_aliases(&state, Some(&index), None, &p)
}

/// `GET /{index}/_alias/{name}`.
pub async fn get_index_alias_named(
    method: Method,
    State(state): State<AppState>,
    Path((index, name)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    let path = format!("/{index}/_alias/{name}");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, GET_PARAMS)?;
    get_aliases(&state, Some(&index), Some(&name), &p)
}

/// `HEAD /{index}/_alias/{name}`.
pub async fn head_index_alias_named(
    method: Method,
    State(state): State<AppState>,
    Path((index, name)): Path<(String, String)>,
    UrlQuery(p): Params,
) -> ApiResult {
    let path = format!("/{index}/_alias/{name}");
    if index != "_all" {
        not_an_endpoint(&method, &index, &path)?;
    }
    check_params(&p, &path, GET_PARAMS)?;
    let found = match get_aliases(&state, Some(&index), Some(&name), &p) {
        Ok(r) => r.status() == StatusCode::OK,
        Err(e) if e.status == StatusCode::NOT_FOUND => false,
        Err(e) => return Err(e),
    };
    head(found)
}
