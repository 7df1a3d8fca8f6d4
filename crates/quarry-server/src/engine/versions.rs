//! Which version, sequence number and primary term does a document carry, and does a
//! conditional write match them? Elasticsearch's optimistic concurrency control on one shard.
//!
//! # Design (how the figures survive restarts)
//! - **`_seq_no`** is per index and counts every applied operation (index, update, delete,
//!   including a delete of a missing id), starting at 0, exactly as one Elasticsearch shard.
//!   It is the translog sequence number minus one: each applied write appends one translog
//!   record under the writer lock. Failed or no-op writes append nothing. The commit user data
//!   (`quarry.translog_seq`) holds the highest sequence number the commit contains and the
//!   translog holds the later ones, so the counter continues after a restart (see
//!   [`crate::translog`]).
//! - **`_version`** is per document: 1 on create, +1 on every update and delete, or the
//!   caller's version with `version_type=external|external_gte`.
//! - Both are stored with the document in hidden stored fields ([`VERSION_FIELD`],
//!   [`SEQ_NO_FIELD`], [`PRIMARY_TERM_FIELD`]) that are written into the translog record too,
//!   so a replay stores the same values. They never appear in `_source` or the mappings.
//! - A deleted document leaves an in-memory tombstone for 60 s (Elasticsearch's
//!   `index.gc_deletes` default), so re-creating it soon after a delete continues its version;
//!   tombstones are not persisted (nor are Elasticsearch's after `gc_deletes`).
//! - **`_primary_term`** starts at 1 when an index is created and grows by one every time the
//!   server opens the index, as Elasticsearch increments it whenever a primary is (re)assigned,
//!   which on a single node is every restart. It is kept in the file [`PRIMARY_TERM_FILE`],
//!   rewritten (fsynced, renamed) before the index accepts a write.
//! - Indexes created before these fields existed report `_version` 1, `_seq_no` 0 and
//!   `_primary_term` 1 for documents that have none stored.
use std::path::Path;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::internal;
use crate::error::ApiError;

/// Hidden stored field: the document's `_version`.
pub const VERSION_FIELD: &str = "_version";
/// Hidden stored field: the `_seq_no` of the write that stored the document.
pub const SEQ_NO_FIELD: &str = "_seq_no";
/// Hidden stored field: the `_primary_term` of that write.
pub const PRIMARY_TERM_FIELD: &str = "_primary_term";
/// The metadata fields a document source may not hold (besides `_id`).
pub const META_FIELDS: [&str; 3] = [VERSION_FIELD, SEQ_NO_FIELD, PRIMARY_TERM_FIELD];
/// The file beside the engine directory holding the index's primary term.
pub const PRIMARY_TERM_FILE: &str = "primary_term";

/// A document's version, sequence number and primary term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocMeta {
    pub version: u64,
    pub seq_no: u64,
    pub primary_term: u64,
}

impl DocMeta {
    /// The values stored with a document (defaults for documents written before they existed).
    pub fn of_stored(stored: &Map<String, Value>) -> DocMeta {
        let get = |k: &str, d: u64| stored.get(k).and_then(Value::as_u64).unwrap_or(d);
        DocMeta {
            version: get(VERSION_FIELD, 1),
            seq_no: get(SEQ_NO_FIELD, 0),
            primary_term: get(PRIMARY_TERM_FIELD, 1),
        }
    }

    /// Adds the values to a source about to be stored.
    pub fn store_in(&self, source: &mut Map<String, Value>) {
        source.insert(VERSION_FIELD.into(), self.version.into());
        source.insert(SEQ_NO_FIELD.into(), self.seq_no.into());
        source.insert(PRIMARY_TERM_FIELD.into(), self.primary_term.into());
    }
}

/// `version_type` of a write that gives its own `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionType {
    /// Succeeds when the given version is greater than the current one.
    External,
    /// Succeeds when the given version is greater than or equal to the current one.
    ExternalGte,
}

/// The conditions of a write: `if_seq_no` + `if_primary_term`, or `version` + `version_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Condition {
    /// `(if_seq_no, if_primary_term)`.
    pub if_seq: Option<(u64, u64)>,
    /// `(version, version_type)`.
    pub version: Option<(u64, VersionType)>,
}

/// Largest version Elasticsearch accepts (`Long.MAX_VALUE`).
const MAX_VERSION: u64 = i64::MAX as u64;

impl Condition {
    /// Reads the conditions from request parameters (URL or bulk metadata, already strings).
    /// `update` refuses `version` (as Elasticsearch's update API does).
    pub fn parse(get: impl Fn(&str) -> Option<String>, update: bool) -> Result<Self, ApiError> {
        let num = |k: &str| -> Result<Option<u64>, ApiError> {
            get(k)
                .map(|s| {
                    s.trim().parse::<u64>().map_err(|_| {
                        ApiError::illegal(format!(
                            "[{k}] must be a non-negative integer, not [{s}]"
                        ))
                    })
                })
                .transpose()
        };
        let if_seq = match (num("if_seq_no")?, num("if_primary_term")?) {
            (Some(s), Some(t)) if t > 0 => Some((s, t)),
            (Some(_), _) => {
                return Err(validation("ifSeqNo is set, but primary term is [0]"));
            }
            (None, Some(_)) => {
                return Err(validation("ifSeqNo is unassigned, but primary term is set"));
            }
            (None, None) => None,
        };
        let vtype = get("version_type");
        let version = match (num("version")?, vtype.as_deref()) {
            (None, None) => None,
            (None, Some(t)) => {
                return Err(validation(&format!(
                    "[version_type] [{t}] needs a [version]"
                )))
            }
            (Some(_), None | Some("internal")) => {
                return Err(validation(
                    "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead",
                ))
            }
            (Some(v), Some(t)) => {
                let ty = match t {
                    "external" => VersionType::External,
                    "external_gte" => VersionType::ExternalGte,
                    other => {
                        return Err(ApiError::illegal(format!(
                            "[version_type] must be external or external_gte, not [{other}]"
                        )))
                    }
                };
                if v > MAX_VERSION {
                    return Err(validation(&format!("illegal version value [{v}] for version type")));
                }
                Some((v, ty))
            }
        };
        if update && version.is_some() {
            return Err(validation(
                "version type [external] is not supported by the update API",
            ));
        }
        if if_seq.is_some() && version.is_some() {
            return Err(validation(
                "compare and write operations can not use versioning",
            ));
        }
        Ok(Condition { if_seq, version })
    }

    /// Whether any condition is set.
    pub fn is_set(&self) -> bool {
        self.if_seq.is_some() || self.version.is_some()
    }

    /// Checks the condition against the document's current state: `live` is the live
    /// document, `known` also the tombstone of a recent delete. 409 when it does not hold.
    pub fn check(
        &self,
        id: &str,
        live: Option<DocMeta>,
        known: Option<DocMeta>,
    ) -> Result<(), ApiError> {
        if let Some((seq, term)) = self.if_seq {
            match live {
                None => {
                    return Err(conflict(format!(
                        "[{id}]: version conflict, required seqNo [{seq}], primary term [{term}]. but no document was found"
                    )))
                }
                Some(m) if m.seq_no != seq || m.primary_term != term => {
                    return Err(conflict(format!(
                        "[{id}]: version conflict, required seqNo [{seq}], primary term [{term}]. current document has seqNo [{}] and primary term [{}]",
                        m.seq_no, m.primary_term
                    )))
                }
                Some(_) => {}
            }
        }
        if let (Some((v, ty)), Some(cur)) = (self.version, known) {
            let cv = cur.version;
            match ty {
                VersionType::External if cv >= v => {
                    return Err(conflict(format!(
                        "[{id}]: version conflict, current version [{cv}] is higher or equal to the one provided [{v}]"
                    )))
                }
                VersionType::ExternalGte if cv > v => {
                    return Err(conflict(format!(
                        "[{id}]: version conflict, current version [{cv}] is higher than the one provided [{v}]"
                    )))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The version the written document takes: the caller's, or the known one plus one.
    pub fn next_version(&self, known: Option<DocMeta>) -> u64 {
        match self.version {
            Some((v, _)) => v,
            None => known.map_or(1, |m| m.version + 1),
        }
    }
}

/// 409 `version_conflict_engine_exception`.
pub fn conflict(reason: String) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "version_conflict_engine_exception",
        reason,
    )
}

/// 400 `action_request_validation_exception` in Elasticsearch's wording.
fn validation(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "action_request_validation_exception",
        format!("Validation Failed: 1: {what};"),
    )
}

/// Reads the index's previous primary term, stores the next one durably and returns it.
pub fn next_primary_term(dir: &Path) -> Result<u64, ApiError> {
    let path = dir.join(PRIMARY_TERM_FILE);
    let previous = match std::fs::read_to_string(&path) {
        Ok(t) => t
            .trim()
            .parse::<u64>()
            .map_err(|e| internal(format!("{}: {e}", path.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(internal(format!("{}: {e}", path.display()))),
    };
    let term = previous + 1;
    let tmp = dir.join(format!("{PRIMARY_TERM_FILE}.tmp"));
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(term.to_string().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| internal(format!("{}: {e}", path.display())))?;
    Ok(term)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params<'a>(kv: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| kv.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
    }

    #[test]
    fn conditions_parse_and_check_as_elasticsearch() {
        let m = |version, seq_no| DocMeta {
            version,
            seq_no,
            primary_term: 1,
        };
        let c = Condition::parse(
            params(&[("if_seq_no", "3"), ("if_primary_term", "1")]),
            false,
        )
        .unwrap();
        assert!(c.check("a", Some(m(2, 3)), Some(m(2, 3))).is_ok());
        let e = c.check("a", Some(m(2, 4)), Some(m(2, 4))).unwrap_err();
        assert_eq!(e.status, 409);
        assert!(
            e.reason.contains("current document has seqNo [4]"),
            "{}",
            e.reason
        );
        assert!(c
            .check("a", None, None)
            .unwrap_err()
            .reason
            .contains("no document"));
        let c = Condition::parse(
            params(&[("version", "5"), ("version_type", "external")]),
            false,
        )
        .unwrap();
        assert!(c.check("a", Some(m(4, 0)), Some(m(4, 0))).is_ok());
        assert_eq!(
            c.check("a", Some(m(5, 0)), Some(m(5, 0)))
                .unwrap_err()
                .status,
            409
        );
        assert_eq!(c.next_version(Some(m(4, 0))), 5);
        let c = Condition::parse(
            params(&[("version", "5"), ("version_type", "external_gte")]),
            false,
        )
        .unwrap();
        assert!(c.check("a", Some(m(5, 0)), Some(m(5, 0))).is_ok());
        for bad in [
            &[("version", "5")][..],
            &[("if_seq_no", "1")],
            &[("if_primary_term", "1")],
            &[("version", "x"), ("version_type", "external")],
            &[("version", "1"), ("version_type", "force")],
        ] {
            assert_eq!(
                Condition::parse(params(bad), false).unwrap_err().status,
                400
            );
        }
        let ext = [("version", "5"), ("version_type", "external")];
        assert_eq!(
            Condition::parse(params(&ext), true).unwrap_err().status,
            400
        );
    }
}
