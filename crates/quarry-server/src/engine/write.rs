//! What does a write do to one index? The write path: checks, versions, translog, writer.
//!
//! Writes run under the writer lock: each looks up the document's current version (in the
//! writes since the last refresh, else in the searcher), checks the write's conditions
//! ([`Condition`]), takes the next sequence number, appends one translog record and applies it
//! to the writer. The caller then waits for [`IndexHandle::sync`] before acknowledging.
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::record::Record;
use super::versions::{conflict, Condition, DocMeta, META_FIELDS};
use super::{internal, DocState, IndexHandle, WriteState};
use crate::error::ApiError;
use crate::mapping::ID_FIELD;

/// How long a delete's version is remembered (Elasticsearch's `index.gc_deletes`).
pub const GC_DELETES: Duration = Duration::from_secs(60);

/// One write of a bulk request or a document endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// `index` (overwrite allowed) or `create` (fails if the id exists).
    Index {
        id: Option<String>,
        source: Map<String, Value>,
        create: bool,
        cond: Condition,
    },
    /// Partial update with `doc`.
    Update {
        id: String,
        doc: Map<String, Value>,
        cond: Condition,
    },
    /// Delete by id.
    Delete { id: String, cond: Condition },
}

impl WriteOp {
    /// The bulk action name of the operation.
    pub fn action(&self) -> &'static str {
        match self {
            WriteOp::Index { create: true, .. } => "create",
            WriteOp::Index { .. } => "index",
            WriteOp::Update { .. } => "update",
            WriteOp::Delete { .. } => "delete",
        }
    }
}

/// What a successful write did.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOutcome {
    pub id: String,
    /// `created`, `updated`, `deleted`, `not_found`, `noop`.
    pub result: &'static str,
    pub status: StatusCode,
    /// The document's version, sequence number and primary term after the write.
    pub meta: DocMeta,
}

/// The current state of an id: the live document, and also a recent delete's tombstone.
struct Current {
    live: Option<DocMeta>,
    known: Option<DocMeta>,
}

impl IndexHandle {
    /// Applies writes in order; returns one result per op and the translog sequence number the
    /// caller must [`sync`](Self::sync) to before acknowledging (0: nothing to sync).
    pub fn write(&self, ops: Vec<WriteOp>) -> (Vec<Result<WriteOutcome, ApiError>>, u64) {
        let (results, seq, _) = self.write_gen(ops);
        (results, seq)
    }

    /// [`write`](Self::write), also returning the refresh generation read under the writer
    /// lock after the writes (for `refresh=wait_for`).
    pub fn write_gen(&self, ops: Vec<WriteOp>) -> (Vec<Result<WriteOutcome, ApiError>>, u64, u64) {
        let mut ops = ops;
        let mut st = self.state.lock().expect("writer lock");
        let embedded = self.embed_ops(&st, &mut ops);
        let mut results = Vec::with_capacity(ops.len());
        let mut last = 0;
        for (op, embedded) in ops.into_iter().zip(embedded) {
            let r = embedded
                .and_then(|()| self.write_one(&mut st, op))
                .map(|(o, seq)| {
                    last = last.max(seq);
                    o
                });
            results.push(r.map_err(|e| e.in_index(&self.name)));
        }
        let generation = self.refresh_generation();
        drop(st);
        (results, last, generation)
    }

    /// Computes, in one batch, the embedded vector fields ([`crate::inference`]) of the
    /// `index` ops' sources, into the sources themselves: the translog record then holds the
    /// vectors, so a write is embedded once, before it is logged and acknowledged, and a
    /// replay never runs the model. Returns per op `Ok` or the model's error (every `index` op
    /// of the batch fails when the model does; nothing of them is logged).
    fn embed_ops(&self, st: &WriteState, ops: &mut [WriteOp]) -> Vec<Result<(), ApiError>> {
        let mut out = vec![Ok(()); ops.len()];
        let mut at = Vec::new();
        let mut sources = Vec::new();
        for (i, op) in ops.iter_mut().enumerate() {
            if let WriteOp::Index { source, .. } = op {
                if let Err(e) = no_hidden_vectors(source) {
                    out[i] = Err(e);
                    continue;
                }
                at.push(i);
                sources.push(source);
            }
        }
        if let Err(e) = self.embed_sources(st, &mut sources) {
            for i in at {
                out[i] = Err(e.clone());
            }
        }
        out
    }

    /// Adds to each source the vectors of the embedded fields it does not give, computed by
    /// the writer's models in one batch per field. A source that is not a valid document is
    /// left alone (the write's own checks name its problem).
    fn embed_sources(
        &self,
        st: &WriteState,
        sources: &mut [&mut Map<String, Value>],
    ) -> Result<(), ApiError> {
        let fields: Vec<(u32, &quarry::FieldEntry)> = (0..self.schema.fields().len() as u32)
            .map(|i| (i, self.schema.field(i)))
            .filter(|(_, f)| f.embed.is_some())
            .collect();
        if fields.is_empty() || sources.is_empty() {
            return Ok(());
        }
        let mut which = Vec::new();
        let mut docs = Vec::new();
        for (i, src) in sources.iter().enumerate() {
            if fields.iter().all(|(_, f)| src.contains_key(&f.name)) {
                continue;
            }
            if let Ok(d) = quarry::Document::from_map(&self.schema, src) {
                which.push(i);
                docs.push(d);
            }
        }
        if docs.is_empty() {
            return Ok(());
        }
        st.writer.embed_documents(&mut docs).map_err(|e| {
            let model = fields[0].1.embed.as_ref().map_or("", |e| e.model.as_str());
            crate::inference::model_error(model, e)
        })?;
        for (i, doc) in which.into_iter().zip(docs) {
            for (id, f) in &fields {
                if sources[i].contains_key(&f.name) {
                    continue;
                }
                let v = doc.values().iter().find_map(|(fid, v)| match v {
                    quarry::FieldValue::Vector(v) if fid == id => Some(v),
                    _ => None,
                });
                if let Some(v) = v {
                    sources[i].insert(f.name.clone(), serde_json::json!(v));
                } else if let Some(ps) = doc.passages(&self.schema, &f.name) {
                    // A long text's passages (format v10), in the document JSON form the
                    // library reads back, so that applying or replaying the record does not
                    // run the model again.
                    let list: Vec<Value> = ps
                        .iter()
                        .map(|(p, v)| serde_json::json!({"start": p.start, "end": p.end, "vector": v}))
                        .collect();
                    sources[i].insert(f.name.clone(), serde_json::json!({ "passages": list }));
                }
            }
        }
        Ok(())
    }

    fn write_one(&self, st: &mut WriteState, op: WriteOp) -> Result<(WriteOutcome, u64), ApiError> {
        match op {
            WriteOp::Index {
                id,
                source,
                create,
                cond,
            } => self.index_doc(st, id, source, create, cond),
            WriteOp::Update { id, doc, cond } => self.update_doc(st, id, doc, cond),
            WriteOp::Delete { id, cond } => self.delete_doc(st, id, cond),
        }
    }

    /// The sequence number and metadata the next applied write takes.
    fn next_meta(&self, version: u64) -> (u64, DocMeta) {
        let seq = self.translog.last_seq() + 1;
        let meta = DocMeta {
            version,
            seq_no: seq - 1,
            primary_term: self.primary_term,
        };
        (seq, meta)
    }

    /// Logs `rec` to the translog, then applies it to the writer. Returns its sequence number.
    fn log_and_apply(&self, st: &mut WriteState, rec: Record) -> Result<u64, ApiError> {
        let seq = self.translog.append(&[rec.encode()]).map_err(internal)?;
        rec.apply(&self.schema, &mut st.writer)?;
        st.dirty = true;
        st.uncommitted = true;
        Ok(seq)
    }

    fn remember(&self, st: &mut WriteState, id: &str, meta: DocMeta, live: bool) {
        st.docs.insert(
            id.to_string(),
            DocState {
                meta,
                live,
                at: Instant::now(),
            },
        );
    }

    fn index_doc(
        &self,
        st: &mut WriteState,
        id: Option<String>,
        source: Map<String, Value>,
        create: bool,
        cond: Condition,
    ) -> Result<(WriteOutcome, u64), ApiError> {
        let id = match id {
            Some(id) => id,
            None if cond.is_set() => {
                return Err(ApiError::illegal(
                    "an id must be provided if version type or value are set",
                ))
            }
            None => self.new_id(),
        };
        check_id(&id)?;
        let cur = self.current(st, &id)?;
        if let (true, Some(m)) = (create, cur.live) {
            return Err(conflict(format!(
                "[{id}]: version conflict, document already exists (current version [{}])",
                m.version
            )));
        }
        cond.check(&id, cur.live, cur.known)?;
        let mut src = self.checked_source(&id, source)?;
        let (seq, meta) = self.next_meta(cond.next_version(cur.known));
        self.store_meta(&meta, &mut src);
        let got = self.log_and_apply(st, Record::Index(src))?;
        debug_assert_eq!(got, seq);
        self.remember(st, &id, meta, true);
        Ok((outcome(id, cur.live.is_some(), "updated", meta), seq))
    }

    fn update_doc(
        &self,
        st: &mut WriteState,
        id: String,
        doc: Map<String, Value>,
        cond: Condition,
    ) -> Result<(WriteOutcome, u64), ApiError> {
        check_id(&id)?;
        let Some((old, cur)) = self.current_source(st, &id)? else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "document_missing_exception",
                format!("[{id}]: document missing"),
            ));
        };
        cond.check(&id, Some(cur), Some(cur))?;
        no_hidden_vectors(&doc)?;
        let mut src = old.clone();
        for (k, v) in doc {
            src.insert(k, v);
        }
        if src == old {
            // Elasticsearch's detect_noop: nothing changes, no sequence number is used.
            let o = WriteOutcome {
                id,
                result: "noop",
                status: StatusCode::OK,
                meta: cur,
            };
            return Ok((o, 0));
        }
        let mut src = self.checked_source(&id, src)?;
        self.embed_sources(st, &mut [&mut src])?;
        let (seq, meta) = self.next_meta(cur.version + 1);
        self.store_meta(&meta, &mut src);
        self.log_and_apply(st, Record::Index(src))?;
        self.remember(st, &id, meta, true);
        Ok((outcome(id, true, "updated", meta), seq))
    }

    fn delete_doc(
        &self,
        st: &mut WriteState,
        id: String,
        cond: Condition,
    ) -> Result<(WriteOutcome, u64), ApiError> {
        check_id(&id)?;
        let cur = self.current(st, &id)?;
        cond.check(&id, cur.live, cur.known)?;
        let (seq, meta) = self.next_meta(cond.next_version(cur.known));
        self.log_and_apply(st, Record::Delete(id.clone()))?;
        self.remember(st, &id, meta, false);
        let mut o = outcome(id, true, "deleted", meta);
        if cur.live.is_none() {
            o.result = "not_found";
            o.status = StatusCode::NOT_FOUND;
        }
        Ok((o, seq))
    }

    /// Stores the hidden version fields (indexes created before they existed have none).
    fn store_meta(&self, meta: &DocMeta, src: &mut Map<String, Value>) {
        if self.schema.field_by_name(META_FIELDS[0]).is_some() {
            meta.store_in(src);
        }
    }

    /// The live document's metadata and a recent tombstone's, without reading the source.
    fn current(&self, st: &mut WriteState, id: &str) -> Result<Current, ApiError> {
        if let Some(d) = st.docs.get(id) {
            if !d.live && d.at.elapsed() >= GC_DELETES {
                st.docs.remove(id);
            } else {
                return Ok(Current {
                    live: d.live.then_some(d.meta),
                    known: Some(d.meta),
                });
            }
        }
        let live = self.lookup(&self.reader.searcher(), id)?.map(|(_, m)| m);
        Ok(Current { live, known: live })
    }

    /// Checks a source against the schema; returns it with `_id` added.
    fn checked_source(
        &self,
        id: &str,
        mut source: Map<String, Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        if let Some(k) = source
            .keys()
            .find(|k| *k == ID_FIELD || META_FIELDS.contains(&k.as_str()))
        {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "document_parsing_exception",
                format!("[{id}]: Field [{k}] is a metadata field and cannot be added inside a document. Use the index API request parameters."),
            ));
        }
        source.insert(ID_FIELD.to_string(), Value::String(id.to_string()));
        quarry::Document::from_map(&self.schema, &source).map_err(|e| match e {
            quarry::Error::Document { field, reason } if reason.starts_with("unknown field") => {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "strict_dynamic_mapping_exception",
                    format!("[{id}]: mapping is strict, dynamic introduction of [{field}] within [_doc] is not allowed"),
                )
            }
            other => ApiError::from(other),
        })?;
        Ok(source)
    }
}

/// Refuses a source that names the hidden vector field of a `semantic_text` field: those
/// vectors are always the field's model's.
fn no_hidden_vectors(src: &Map<String, Value>) -> Result<(), ApiError> {
    let hidden = crate::mapping::SEMANTIC_PREFIX.trim_end_matches('.');
    match src
        .keys()
        .find(|k| *k == hidden || k.starts_with(crate::mapping::SEMANTIC_PREFIX))
    {
        Some(k) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "document_parsing_exception",
            format!("Field [{k}] holds the embeddings of semantic_text fields and cannot be given in a document"),
        )),
        None => Ok(()),
    }
}

fn outcome(id: String, existed: bool, updated: &'static str, meta: DocMeta) -> WriteOutcome {
    WriteOutcome {
        id,
        result: if existed { updated } else { "created" },
        status: if existed {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        },
        meta,
    }
}

fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 512 {
        return Err(ApiError::illegal(format!(
            "id [{}] must be 1 to 512 bytes long",
            id.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
}
