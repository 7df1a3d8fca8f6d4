//! Text turned into vectors by quarry itself, offline, from local model files.
//!
//! A vector field whose schema entry says `"embed": {"from": "body", "model": "minilm"}` gets
//! its vectors computed from the text of `body` when documents are indexed (in batches, on
//! every core), and a text query on it is embedded the same way at search time
//! ([`Index::embed_query`]). Models are registered with an index directory
//! ([`registry::add_model`], `quarry models add NAME PATH`): copied under `models/NAME/` with
//! checksums that loading verifies.
//!
//! - [`model`]: a sentence-transformers model directory (BERT family) run with candle on the
//!   CPU: tokenizer, encoder, pooling and normalization as the model's settings say.
//! - [`registry`]: the registered models of an index directory, and the loaded ones this
//!   process shares.
//!
//! The guide is `docs/embeddings.md` in the repository; the layout of `models/`,
//! `docs/format/models.md`.
mod bert;
mod kernels;
pub mod model;
pub mod registry;

use std::path::Path;
use std::sync::Arc;

pub use model::{Pooling, SentenceModel};
pub use registry::{add_model, list_models, load_model, ModelManifest};

use crate::schema::Schema;
use crate::vector::Passage;
use crate::{Document, Error, FieldValue, Index, Result};

/// The fields of `schema` that embed text: (vector field id, source field id, model name).
pub(crate) fn embed_fields(schema: &Schema) -> Vec<(u32, u32, String)> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let e = f.embed.as_ref()?;
            let from = schema.field_id(&e.from)?;
            Some((i as u32, from, e.model.clone()))
        })
        .collect()
}

/// Loads model `name` of `index_dir` for vector field `field` and checks that its vectors fit.
fn model_for(
    index_dir: &Path,
    schema: &Schema,
    field: u32,
    name: &str,
) -> Result<Arc<SentenceModel>> {
    let model = load_model(index_dir, name)?;
    let f = schema.field(field);
    let dims = f.dims.unwrap_or(0) as usize;
    if model.dims() != dims {
        return Err(Error::Schema(format!(
            "field {:?} has {dims} dims but model {name:?} makes vectors of {}",
            f.name,
            model.dims()
        )));
    }
    Ok(model)
}

/// The text a document gives an embedded field: the values of its source field, joined by a
/// newline (None when it has none).
fn source_text(doc: &Document, from: u32) -> Option<String> {
    let parts: Vec<&str> = doc
        .values
        .iter()
        .filter(|(f, _)| *f == from)
        .filter_map(|(_, v)| match v {
            FieldValue::Str(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// Where the passages of a text of `len` bytes, whose word pieces lie at `spans` (byte spans,
/// in order), begin and end: `(first piece, end piece, start byte, end byte)` each. With
/// `w = window − 2` word pieces per passage (the model adds its two special tokens) and
/// `step = w − overlap`, passage `j` holds pieces `j·step .. j·step + w` (the last one up to the
/// last piece), so consecutive passages share `overlap` pieces; a text of at most `w` pieces is
/// one passage. The byte spans cover the whole text: the first starts at 0, the last ends at
/// `len`, the others run from their first piece's start to their last piece's end.
/// `window − 2 > overlap` ([`crate::schema::PassageOptions::resolve`] checked it).
pub fn passage_spans(
    spans: &[(usize, usize)],
    len: usize,
    window: usize,
    overlap: usize,
) -> Vec<(usize, usize, usize, usize)> {
    let w = window.saturating_sub(2).max(1);
    let step = w.saturating_sub(overlap).max(1);
    let n = spans.len();
    if n <= w {
        return vec![(0, n, 0, len)];
    }
    let mut out = Vec::with_capacity((n - w).div_ceil(step) + 1);
    let mut first = 0;
    loop {
        let end = (first + w).min(n);
        let last = end == n;
        out.push((
            first,
            end,
            if first == 0 { 0 } else { spans[first].0 },
            if last { len } else { spans[end - 1].1 },
        ));
        if last {
            return out;
        }
        first += step;
    }
}

/// `x`, or the start of the character it falls in (at most `text.len()`).
fn char_floor(text: &str, x: usize) -> usize {
    let mut x = x.min(text.len());
    while !text.is_char_boundary(x) {
        x -= 1;
    }
    x
}

/// Computes the vectors of every embedded field that a document of `docs` does not give
/// itself, from its source text, one batch per field. A document without the source text gets
/// no vector. A field with passages (the default) gets one vector per passage of the text
/// ([`passage_spans`], [`Document::add_passages`]); one without, the text's vector, cut at the
/// model's window.
pub(crate) fn embed_documents(
    index_dir: &Path,
    schema: &Schema,
    docs: &mut [Document],
) -> Result<()> {
    for (field, from, name) in embed_fields(schema) {
        let todo: Vec<(usize, String)> = docs
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                !d.values.iter().any(|(f, _)| *f == field)
                    && !d.passages.iter().any(|(f, _)| *f == field)
            })
            .filter_map(|(i, d)| source_text(d, from).map(|t| (i, t)))
            .collect();
        if todo.is_empty() {
            continue;
        }
        let model = model_for(index_dir, schema, field, &name)?;
        let entry = schema.field(field);
        let fname = entry.name.clone();
        let Some(passages) = entry.embed.as_ref().and_then(|e| e.passages) else {
            let texts: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = model.embed(&texts)?;
            for ((i, _), v) in todo.iter().zip(vectors) {
                docs[*i].add(schema, &fname, FieldValue::Vector(v))?;
            }
            continue;
        };
        let (window, overlap) = passages.resolve(&fname, model.max_tokens())?;
        // Every passage of every text, embedded in one batch.
        let mut parts: Vec<(usize, Passage)> = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        let all: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
        let pieces = model.word_piece_spans(&all)?;
        for (t, ((_, text), spans)) in todo.iter().zip(pieces).enumerate() {
            for (j, (_, _, start, end)) in passage_spans(&spans, text.len(), window, overlap)
                .into_iter()
                .enumerate()
            {
                // Offsets are the tokenizer's; a slice must not split a character.
                let (start, end) = (char_floor(text, start), char_floor(text, end));
                let span = |x: usize| {
                    u32::try_from(x).map_err(|_| Error::Document {
                        field: fname.clone(),
                        reason: format!(
                            "a text of {} bytes is too long to embed in passages (at most 4 GiB)",
                            text.len()
                        ),
                    })
                };
                parts.push((
                    t,
                    Passage {
                        index: j as u32,
                        start: span(start)?,
                        end: span(end)?,
                    },
                ));
                texts.push(&text[start..end]);
            }
        }
        let vectors = model.embed(&texts)?;
        let mut per_doc: Vec<Vec<(Passage, Vec<f32>)>> = vec![Vec::new(); todo.len()];
        for ((t, p), v) in parts.into_iter().zip(vectors) {
            per_doc[t].push((p, v));
        }
        for ((i, _), ps) in todo.iter().zip(per_doc) {
            docs[*i].add_passages(schema, &fname, ps)?;
        }
    }
    Ok(())
}

impl Index {
    /// The vector of `text` for the embedded vector field `field`, from the field's model: the
    /// query vector of a semantic search. An error when the field does not exist or has no
    /// `embed` option, or the model is missing or damaged.
    pub fn embed_query(&self, field: &str, text: &str) -> Result<Vec<f32>> {
        let schema = self.schema();
        let id = schema
            .field_id(field)
            .ok_or_else(|| Error::unknown_field(schema, field))?;
        let Some(e) = schema.field(id).embed.as_ref() else {
            return Err(Error::InvalidArgument(format!(
                "field {field:?} has no embedding model (give it \"embed\": {{\"from\": FIELD, \"model\": NAME}} in the schema)"
            )));
        };
        let model = model_for(self.directory().path(), schema, id, &e.model)?;
        Ok(model.embed(&[text])?.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Word pieces of a text of words separated by spaces: one piece per 1..=4 bytes.
    fn pieces(words: &[u8]) -> (String, Vec<(usize, usize)>) {
        let mut text = String::new();
        let mut spans = Vec::new();
        for &w in words {
            let start = text.len();
            text.push_str(&"x".repeat(usize::from(w % 4) + 1));
            spans.push((start, text.len()));
            text.push(' ');
        }
        (text, spans)
    }

    #[test]
    fn a_short_text_is_one_passage_of_all_of_it() {
        let (text, spans) = pieces(&[1, 2, 3]);
        assert_eq!(
            passage_spans(&spans, text.len(), 8, 2),
            [(0, 3, 0, text.len())]
        );
        assert_eq!(passage_spans(&[], 5, 8, 2), [(0, 0, 0, 5)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Passages cover the text from byte 0 to its end; each holds `window − 2` pieces but
        /// the last; consecutive passages share exactly `overlap` pieces, and their byte spans
        /// overlap by those pieces' bytes.
        #[test]
        fn passages_cover_the_text_with_the_overlap(
            words in proptest::collection::vec(any::<u8>(), 0..400),
            window in 8usize..64,
            overlap_frac in 0.0f64..1.0,
        ) {
            let w = window - 2;
            let overlap = ((w - 1) as f64 * overlap_frac) as usize;
            let (text, spans) = pieces(&words);
            let ps = passage_spans(&spans, text.len(), window, overlap);
            let n = spans.len();
            prop_assert_eq!(ps[0].0, 0);
            prop_assert_eq!(ps[0].2, 0);
            prop_assert_eq!(ps.last().unwrap().1, n);
            prop_assert_eq!(ps.last().unwrap().3, text.len());
            if n <= w {
                prop_assert_eq!(ps.len(), 1);
            }
            for (i, p) in ps.iter().enumerate() {
                prop_assert!(p.1 - p.0 <= w && p.2 <= p.3 && p.3 <= text.len());
                if i + 1 < ps.len() {
                    prop_assert_eq!(p.1 - p.0, w);
                    let q = ps[i + 1];
                    // Shared pieces: exactly `overlap`, and the next passage is not inside
                    // this one (the last may share more when it is short: never here).
                    prop_assert_eq!(p.1 - q.0, overlap);
                    prop_assert!(q.1 > p.1);
                    // Byte spans: the next starts at its first piece, inside this one's text
                    // when they share a piece, right after it otherwise.
                    prop_assert_eq!(q.2, spans[q.0].0);
                    prop_assert_eq!(p.3, spans[p.1 - 1].1);
                    if overlap > 0 {
                        prop_assert!(q.2 < p.3);
                    } else {
                        prop_assert!(q.2 > p.3);
                    }
                }
            }
        }
    }
}
