//! What does a `_bulk` body ask for? Parsing NDJSON action/source line pairs into writes.
use serde_json::{Map, Value};

use crate::engine::{Condition, WriteOp};
use crate::error::ApiError;
use crate::routes::documents::check_retry_on_conflict;

/// One parsed bulk action: the target index and the write.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkItem {
    pub index: String,
    pub op: WriteOp,
}

fn malformed(line: usize, why: impl std::fmt::Display) -> ApiError {
    ApiError::illegal(format!("Malformed bulk request at line [{line}]: {why}"))
}

/// Parses a bulk body. `default_index` comes from `/{index}/_bulk`. Any malformed line fails
/// the whole request with a 400 naming the (1-based) line.
pub fn parse(body: &[u8], default_index: Option<&str>) -> Result<Vec<BulkItem>, ApiError> {
    let mut items = Vec::new();
    let mut lines = body
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    while let Some((n, line)) = lines.next() {
        let action: Map<String, Value> =
            serde_json::from_slice(line).map_err(|e| malformed(n, e))?;
        let mut it = action.iter();
        let (kind, meta) = match (it.next(), it.next()) {
            (Some(kv), None) => kv,
            _ => {
                return Err(malformed(
                    n,
                    "an action line must have exactly one key (index, create, update, delete)",
                ))
            }
        };
        let meta = meta
            .as_object()
            .ok_or_else(|| malformed(n, format!("[{kind}] metadata must be an object")))?;
        let cond = check_meta(n, kind, meta)?;
        let index = match (meta.get("_index"), default_index) {
            (Some(Value::String(s)), _) => s.clone(),
            (Some(_), _) => return Err(malformed(n, "[_index] must be a string")),
            (None, Some(d)) => d.to_string(),
            (None, None) => return Err(malformed(n, "no [_index] given and no index in the path")),
        };
        let id = match meta.get("_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(x)) => Some(x.to_string()),
            Some(_) => return Err(malformed(n, "[_id] must be a string")),
        };
        let mut source = |what: &str| -> Result<Map<String, Value>, ApiError> {
            let (m, l) = lines
                .next()
                .ok_or_else(|| malformed(n, format!("[{what}] needs a source line after it")))?;
            serde_json::from_slice::<Map<String, Value>>(l).map_err(|e| malformed(m, e))
        };
        let need_id = |what: &str| {
            id.clone()
                .ok_or_else(|| malformed(n, format!("[{what}] needs an [_id]")))
        };
        let op = match kind.as_str() {
            "index" | "create" => WriteOp::Index {
                id: id.clone(),
                source: source(kind)?,
                create: kind == "create",
                cond,
            },
            "update" => {
                let id = need_id("update")?;
                let mut body = source("update")?;
                for k in body.keys() {
                    if k != "doc" {
                        return Err(malformed(
                            n + 1,
                            format!("update [{k}] is not supported (only [doc])"),
                        ));
                    }
                }
                match body.remove("doc") {
                    Some(Value::Object(doc)) => WriteOp::Update { id, doc, cond },
                    _ => return Err(malformed(n + 1, "update needs an object [doc]")),
                }
            }
            "delete" => WriteOp::Delete {
                id: need_id("delete")?,
                cond,
            },
            other => return Err(malformed(n, format!("unknown action [{other}]"))),
        };
        items.push(BulkItem { index, op });
    }
    Ok(items)
}

/// Checks an action line's metadata and reads its conditions. Keys quarry does not
/// implement (`routing`, `pipeline`, ...) are refused by name; `retry_on_conflict` only on
/// `update`; `require_alias` only when false (quarry has no aliases).
fn check_meta(n: usize, kind: &str, meta: &Map<String, Value>) -> Result<Condition, ApiError> {
    for (k, v) in meta {
        let ok = match k.as_str() {
            "_index" | "_id" | "if_seq_no" | "if_primary_term" | "version" | "version_type" => true,
            "retry_on_conflict" => kind == "update",
            "require_alias" => *v == Value::Bool(false),
            _ => false,
        };
        if !ok {
            return Err(malformed(
                n,
                format!("action [{kind}] does not support [{k}] with value [{v}]"),
            ));
        }
    }
    let text = |k: &str| match meta.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => Some(v.to_string()),
    };
    let cond = Condition::parse(text, kind == "update").map_err(|e| malformed(n, e.reason))?;
    check_retry_on_conflict(text("retry_on_conflict"), &cond)
        .map_err(|e| malformed(n, e.reason))?;
    Ok(cond)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_of_lines_become_writes() {
        let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"t\":\"x\"}\n\
{\"create\":{\"_id\":2}}\r\n{\"t\":\"y\"}\n\n{\"delete\":{\"_index\":\"b\",\"_id\":\"3\"}}\n\
{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{\"t\":\"z\"}}\n";
        let items = parse(body, Some("d")).unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].index, "a");
        assert_eq!(items[1].index, "d");
        assert!(
            matches!(&items[1].op, WriteOp::Index { id: Some(i), create: true, .. } if i == "2")
        );
        assert!(matches!(&items[2].op, WriteOp::Delete { id, .. } if id == "3"));
        assert!(matches!(&items[3].op, WriteOp::Update { id, .. } if id == "1"));
        assert!(parse(b"", None).unwrap().is_empty());
        assert!(parse(b"{\"index\":{}}\n{}\n", None).is_err());
    }

    #[test]
    fn malformed_bodies_name_the_line() {
        for (body, line) in [
            (&b"{\"index\":{}}\n{\"a\":1}\n{oops\n"[..], 3),
            (b"{\"index\":{\"_index\":\"a\"}}\n", 1),
            (
                b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n{\"delete\":{\"_index\":\"a\"}}",
                3,
            ),
            (b"{\"frob\":{\"_index\":\"a\"}}\n{}", 1),
            (b"[1]\n", 1),
            (b"{\"index\":{\"_index\":\"a\"}}\n[]\n", 2),
            (
                b"{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"script\":\"x\"}\n",
                2,
            ),
        ] {
            let e = parse(body, Some("d")).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(
                e.reason.contains(&format!("line [{line}]")),
                "{}: {}",
                String::from_utf8_lossy(body),
                e.reason
            );
        }
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fuzz target's property on a fast budget: any bytes parse or give a 400 naming a
        /// line; lines made of real actions and sources are never dropped.
        #[test]
        fn any_bytes_parse_or_name_a_line(body in proptest::collection::vec(any::<u8>(), 0..400),
                                          lines in proptest::collection::vec(
                                              prop_oneof![
                                                  Just("{\"index\":{\"_id\":\"1\"}}".to_string()),
                                                  Just("{\"delete\":{\"_id\":\"2\"}}".to_string()),
                                                  Just("{\"update\":{\"_id\":\"3\"}}".to_string()),
                                                  Just("{\"doc\":{\"a\":1}}".to_string()),
                                                  Just("{\"a\":[1,{\"b\":null}]}".to_string()),
                                                  Just("{".to_string()),
                                                  Just(String::new()),
                                              ], 0..12)) {
            for input in [body, lines.join("\n").into_bytes()] {
                match parse(&input, Some("d")) {
                    Ok(items) => prop_assert!(items.len() <= input.len()),
                    Err(e) => {
                        prop_assert_eq!(e.status, 400);
                        prop_assert!(e.reason.contains("line ["), "{}", e.reason);
                    }
                }
            }
        }
    }
}
